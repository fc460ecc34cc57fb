package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend/cpu"
)

func TestRoof(t *testing.T) {
	l := cpu.Limits{Path: "avx2", Threads: 1, PeakF32: 100, PeakF64: 50, Bandwidth: 20, BandwidthMem: 10}
	for _, c := range []struct {
		w    Workload
		ns   float64
		roof string
		pct  float64
	}{
		{Workload{FLOPs: 1e6}, 1e4, "peak f32", 100},           // 100 GFLOPS of 100
		{Workload{FLOPs: 1e6, F64: true}, 1e5, "peak f64", 20}, // 10 of 50
		{Workload{Traffic: 8e6}, 1e6, "bandwidth", 40},         // 8 GB/s of 20
		{Workload{}, 1e6, "", 0},
	} {
		r := Record{MedianNs: c.ns}
		Roof(&r, c.w, l)
		if r.Roof != c.roof || math.Abs(r.PctRoof-c.pct) > 1e-9 {
			t.Errorf("%+v at %v ns: roof %q %v%%, want %q %v%%", c.w, c.ns, r.Roof, r.PctRoof, c.roof, c.pct)
		}
	}
	failed := Record{MedianNs: 1, Error: "wrong"}
	Roof(&failed, Workload{FLOPs: 1}, l)
	if failed.PctRoof != 0 {
		t.Errorf("a failed record got %v%% of its limit", failed.PctRoof)
	}
}

// TestRoofColumns checks that tables and Markdown show the percentage of
// the limit, and the Markdown the limits themselves.
func TestRoofColumns(t *testing.T) {
	rs := []Record{
		{Workload: "matmul", Impl: "peel", Threads: 1, MedianNs: 10, Roof: "peak f32", RoofRate: 100, PctRoof: 87.4},
		{Workload: "matmul", Impl: "torch", Threads: 1, MedianNs: 12, Roof: "peak f32", RoofRate: 100, PctRoof: 72.8},
		{Workload: "copy", Impl: "peel", Threads: 1, MedianNs: 10, Roof: "bandwidth", RoofRate: 20, PctRoof: 64},
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, Pair(rs, "torch"), "torch"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"of limit", "87% peak", "73% peak", "64% bw"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	m := Meta{Peer: "torch 1.13", Limits: []string{LimitsLine(cpu.Limits{Path: "avx2", Threads: 1, PeakF32: 100, PeakF64: 50, Bandwidth: 20, BandwidthMem: 10})}}
	if err := WriteMarkdown(&b, Pair(rs, "torch"), m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FMA peak 100 GFLOPS f32, 50 f64", "| peel of limit | torch of limit |", "| 87% peak | 73% peak |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, b.String())
		}
	}
}
