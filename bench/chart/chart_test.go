package chart

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/peel-ml/peel/bench"
)

func rec(name, impl string, threads int, median float64) bench.Record {
	return bench.Record{Workload: name, Impl: impl, Threads: threads, MedianNs: median,
		MinNs: median * 0.9, MaxNs: median * 1.2, Q1Ns: median * 0.95, Q3Ns: median * 1.05,
		Metric: median / 100, Unit: "ns/op", Allocs: 3, PeakHeap: 2048}
}

func failed(name, impl string, threads int, msg string) bench.Record {
	return bench.Record{Workload: name, Impl: impl, Threads: threads, Allocs: -1, Error: msg}
}

func sampleRecords() []bench.Record {
	return []bench.Record{
		rec("tiny", "peel", 1, 30e3), rec("tiny", "torch", 1, 120e3),
		rec("matmul", "peel", 1, 20e6), rec("matmul", "torch", 1, 2.6e6),
		rec("ref", "gonum", 1, 21e6),
		failed("broken", "peel", 1, "element 0 = 1, want 2"), rec("broken", "torch", 1, 5e3),
		rec("tiny", "peel", 2, 28e3), rec("tiny", "torch", 2, 100e3),
	}
}

func TestWritePlot(t *testing.T) {
	dir := t.TempDir()
	peelOnly := []bench.Record{rec("tiny", "peel", 1, 30e3), rec("matmul", "peel", 1, 20e6), failed("broken", "peel", 1, "x")}
	for _, c := range []struct {
		name string
		rs   []bench.Record
	}{{"ratios", sampleRecords()}, {"medians", peelOnly}} {
		path := filepath.Join(dir, c.name+".png")
		if err := WritePlot(path, bench.Pair(c.rs, "torch"), "test "+c.name); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", c.name, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s: image is %v", c.name, b)
		}
	}
	if err := WritePlot(filepath.Join(dir, "none.png"), bench.Pair(peelOnly[2:], "torch"), ""); err == nil {
		t.Error("WritePlot plotted nothing without an error")
	}
}

func TestLogTicks(t *testing.T) {
	var got []float64
	for _, tk := range (logTicks{format: bench.FormatRatio}).Ticks(0.1, 20) {
		got = append(got, tk.Value)
	}
	if want := []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 20}; !reflect.DeepEqual(got, want) {
		t.Errorf("ticks = %v, want %v", got, want)
	}
	if n := len((logTicks{format: bench.FormatNs}).Ticks(1e3, 1e9)); n != 7 {
		t.Errorf("%d ticks over six decades, want 7 (powers of ten)", n)
	}
	for _, c := range [][3]float64{{7.8, 10, 5}, {0.26, 0.5, 0.2}, {1, 1, 1}, {2.1, 5, 2}, {0.013, 0.02, 0.01}} {
		if up, down := niceUp(c[0]), niceDown(c[0]); math.Abs(up-c[1]) > 1e-12 || math.Abs(down-c[2]) > 1e-12 {
			t.Errorf("nice(%v) = %v, %v; want %v, %v", c[0], up, down, c[1], c[2])
		}
	}
}
