package bench

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/internal/testsize"
)

// TestWorkloadsCorrect runs every workload once and checks its result
// against the reference: a workload that computes the wrong thing is not
// worth timing. A <name>_compile_time twin compiles and checks the same
// function as <name>: it runs only with PEEL_FULL set.
func TestWorkloadsCorrect(t *testing.T) {
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, w := range Workloads() {
		names[w.Name] = true
	}
	for _, w := range Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			if seen[w.Name] {
				t.Fatalf("duplicate workload name %q", w.Name)
			}
			seen[w.Name] = true
			if w.Impl == "" || w.Unit == "" || w.Metric == nil || w.Setup == nil {
				t.Fatalf("workload %q is incomplete", w.Name)
			}
			if strings.ContainsAny(w.Unit, " \t") {
				t.Fatalf("workload %q: unit %q has a space (go test -bench refuses it)", w.Name, w.Unit)
			}
			if base, twin := strings.CutSuffix(w.Name, "_compile_time"); twin && names[base] && !testsize.Full() {
				t.Skipf("compiles and checks what %s does; runs with PEEL_FULL=1", base)
			}
			run, check := w.Setup()
			if err := verify(w.Name, run, check); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMeasure runs the harness on the cheapest workload with a tiny
// budget and checks the shape of the result (never the timing).
func TestMeasure(t *testing.T) {
	var w Workload
	for _, x := range Workloads() {
		if x.Name == "tiny_chain_100" {
			w = x
		}
	}
	r, err := Measure(w, Options{Reps: 3, MinTime: 3 * time.Millisecond, Warmup: time.Millisecond, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.SamplesNs) != 3 || !(r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) || r.MinNs <= 0 {
		t.Errorf("bad samples: %+v", r)
	}
	if r.Metric <= 0 || r.Allocs <= 0 || r.Unit != "ns/op" {
		t.Errorf("bad metric or allocations: %+v", r)
	}
	var b strings.Builder
	rec := r.Record()
	if err := WriteRecords(&b, []Record{rec, rec}); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecords(strings.NewReader("log line\n" + b.String()))
	if err != nil || len(back) != 2 || back[0] != rec {
		t.Errorf("records do not round-trip: %v %+v", err, back)
	}
	b.Reset()
	if err := WriteTable(&b, back); err != nil || !strings.Contains(b.String(), "tiny_chain_100") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// TestMeasureRefusesWrongResult checks that a failing check stops the
// measurement.
func TestMeasureRefusesWrongResult(t *testing.T) {
	w := Workload{
		Name: "broken", Impl: "go", Unit: "ns/op", Metric: perOp(1),
		Setup: func() (func(), func() error) {
			return func() {}, func() error { return errWrong }
		},
	}
	if _, err := Measure(w, Options{Reps: 1, MinTime: time.Millisecond}); err == nil {
		t.Fatal("Measure timed a workload whose check fails")
	}
	w.Setup = func() (func(), func() error) { panic("boom") }
	if _, err := Measure(w, Options{Reps: 1, MinTime: time.Millisecond}); err == nil {
		t.Fatal("Measure did not report a panicking setup")
	}
}

var errWrong = errors.New("wrong")

// BenchmarkWorkloads runs each workload under go test -bench, reporting
// its derived metric next to ns/op and allocations. The result is checked
// once before timing.
func BenchmarkWorkloads(b *testing.B) {
	for _, w := range Workloads() {
		b.Run(w.Name, func(b *testing.B) {
			// The kernels' threads follow -cpu, as GOMAXPROCS does.
			cpu.SetThreads(runtime.GOMAXPROCS(0))
			defer cpu.SetThreads(0)
			run, check := w.Setup()
			if err := verify(w.Name, run, check); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			unit := w.Unit
			if unit == "ns/op" {
				// go test's own ns/op is per run; keep it.
				unit = "ns/tensor-op"
			}
			b.ReportMetric(w.Metric(ns), unit)
			// Against the machine's limit at this many threads.
			r := Record{MedianNs: ns}
			Roof(&r, w, cpu.MeasureLimits(runtime.GOMAXPROCS(0)))
			switch r.Roof {
			case "":
			case "bandwidth":
				b.ReportMetric(r.PctRoof, "%bandwidth")
			default:
				b.ReportMetric(r.PctRoof, "%peak")
			}
		})
	}
}
