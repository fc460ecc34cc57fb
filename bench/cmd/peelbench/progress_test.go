package main

import (
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel/bench"
)

func TestProgressBar(t *testing.T) {
	var b strings.Builder
	p := &progress{w: &b, tty: true, total: 4, start: time.Now()}
	p.describe("tiny · peel · 1 thread")
	p.done(bench.Record{Workload: "tiny", Impl: "peel", Threads: 1, MedianNs: 1e3}, nil)
	p.logf("a message")
	p.skip()
	p.finish()
	out := b.String()
	for _, want := range []string{"\r[>", "] 0/4", "tiny · peel · 1 thread", "[=======>", "] 1/4", "left", "a message\n", "] 2/4"} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output lacks %q:\n%q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\r") {
		t.Errorf("finish does not clear the bar: %q", out)
	}
	// Not a terminal: one line per measurement, no bar.
	b.Reset()
	p = &progress{w: &b, total: 2, start: time.Now()}
	p.done(bench.Record{Workload: "tiny", Impl: "peel", Threads: 1, MedianNs: 1e3}, nil)
	ours := bench.Record{Workload: "tiny", Impl: "peel", Threads: 1, MedianNs: 1e3}
	p.done(bench.Record{Workload: "tiny", Impl: "torch", Threads: 1, MedianNs: 4e3}, &ours)
	p.finish()
	if out := b.String(); strings.Contains(out, "\r") || strings.Count(out, "\n") != 2 || !strings.Contains(out, "(peel/torch 0.25)") {
		t.Errorf("plain output:\n%s", out)
	}
}
