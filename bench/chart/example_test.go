package chart_test

import (
	"fmt"

	"github.com/peel-ml/peel/bench"
	"github.com/peel-ml/peel/bench/chart"
	"gonum.org/v1/plot/vg"
)

// Records of peel and a peer, paired by workload, make one bar per
// workload: the ratio of the medians. WritePlot saves the same chart to
// a file (chart.WritePlot("bench.png", rows, title)).
func Example() {
	rs := []bench.Record{
		{Workload: "matmul", Impl: "peel", Threads: 1, MedianNs: 2e6},
		{Workload: "matmul", Impl: "torch", Threads: 1, MedianNs: 1e6},
		{Workload: "tiny", Impl: "peel", Threads: 1, MedianNs: 30e3},
		{Workload: "tiny", Impl: "torch", Threads: 1, MedianNs: 120e3},
	}
	rows := bench.Pair(rs, "torch")
	for _, r := range rows {
		v, _ := r.Ratio()
		fmt.Println(r.Workload, bench.FormatRatio(v))
	}
	p, width, err := chart.NewPlot(rows, bench.ChartTitle(rows, bench.Meta{Peer: "torch"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q, %.1f inches wide\n", p.Title.Text, width/vg.Inch)
	// Output:
	// matmul 2.00
	// tiny 0.25
	// "peel vs torch: ratio of medians (below 1: peel is faster)", 6.0 inches wide
}
