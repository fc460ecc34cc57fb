// Command peelplot draws peelbench's bar chart from a -json run: the
// ratio of medians peel/torch per workload on a log axis (below 1: peel
// is faster), or peel's medians when the run has no peer.
//
//	go run ./bench/cmd/peelplot -from run.jsonl -o out.png [-title TEXT]
//
// peelbench -plot runs it in a process of its own, so that the plotting
// library (package chart) is not linked into the process that measures.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/peel-ml/peel/bench"
	"github.com/peel-ml/peel/bench/chart"
)

func main() {
	from := flag.String("from", "", "the JSON records (peelbench -json) to plot")
	out := flag.String("o", "", "the chart to write (.png, .svg or .pdf)")
	title := flag.String("title", "", "the chart's title (default: what is plotted)")
	peer := flag.String("peer", "torch", "the implementation peel is compared with")
	flag.Parse()
	if err := run(*from, *out, *title, *peer); err != nil {
		fmt.Fprintln(os.Stderr, "peelplot:", err)
		os.Exit(1)
	}
}

func run(from, out, title, peer string) error {
	if from == "" || out == "" || flag.NArg() > 0 {
		return fmt.Errorf("usage: peelplot -from RUN.jsonl -o OUT.png [-title TEXT]")
	}
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	recs, err := bench.ReadRecords(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	rows := bench.Pair(recs, peer)
	if title == "" {
		title = bench.ChartTitle(rows, bench.Meta{Peer: peer})
	}
	return chart.WritePlot(out, rows, title)
}
