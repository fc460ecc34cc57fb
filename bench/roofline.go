package bench

import (
	"fmt"
	"strings"

	"github.com/peel-ml/peel/backend/cpu"
)

// Roofline: a workload bound by arithmetic (a matrix product, a
// convolution) declares its floating-point operations per run
// (Workload.FLOPs) and one bound by memory (a copy, an elementwise
// chain) its bytes moved per run (Workload.Traffic); Roof then gives its
// rate as a percentage of this machine's limit at the same number of
// threads (cpu.MeasureLimits: the FMA peak of the kernel path in use, or
// the triad bandwidth over a working set the size of the benchmarks'),
// so that a figure means the same on any machine.

// Roof names the limit a record is measured against and sets its
// percentage of it (Record.Roof, RoofRate, PctRoof) from the workload's
// FLOPs or Traffic and the limits l measured at the record's threads.
// Records of workloads with neither, and failed records, are left
// as they are.
func Roof(r *Record, w Workload, l cpu.Limits) {
	if r.Failed() || r.MedianNs <= 0 {
		return
	}
	switch {
	case w.FLOPs > 0:
		r.Roof, r.RoofRate = "peak f32", l.PeakF32
		if w.F64 {
			r.Roof, r.RoofRate = "peak f64", l.PeakF64
		}
		r.PctRoof = 100 * w.FLOPs / r.MedianNs / r.RoofRate
	case w.Traffic > 0:
		r.Roof, r.RoofRate = "bandwidth", l.Bandwidth
		r.PctRoof = 100 * w.Traffic / r.MedianNs / r.RoofRate
	}
}

// LimitsLine describes l in one line, for report headers.
func LimitsLine(l cpu.Limits) string {
	return fmt.Sprintf("limits at %s (%s kernels): FMA peak %.0f GFLOPS f32, %.0f f64; triad %.1f GB/s over 12 MiB, %.1f GB/s over 384 MiB",
		ThreadsPhrase(l.Threads), l.Path, l.PeakF32, l.PeakF64, l.Bandwidth, l.BandwidthMem)
}

// roofCell is a record's percentage of its limit ("87% peak", "64% bw"),
// or "-".
func roofCell(r *Record) string {
	if r == nil || r.Failed() || r.PctRoof <= 0 {
		return "-"
	}
	what := "peak"
	if strings.HasPrefix(r.Roof, "band") {
		what = "bw"
	}
	return fmt.Sprintf("%.0f%% %s", r.PctRoof, what)
}
