// Package bench holds peel's benchmark workloads and the harness that
// measures them.
//
// Each workload is defined once (see Workloads) and runs in two ways:
// under `go test -bench . ./bench/` and through the harness,
// `go run ./bench/cmd/peelbench`, which warms each workload up, times it
// in repeated samples and prints a table of medians, spreads and derived
// metrics (ns per op, ns per element per op, GFLOPS), optionally writing
// JSON records (one object per line, see Record) that the peer scripts in
// bench/peers print too, so results of peel and other libraries line up.
// With -peer torch the harness runs bench/peers/torch_func.py as a Peer
// (one process per thread count, answering one request per workload) and
// measures each workload with peel and with torch back to back; Pair
// lines the two up, and WriteComparison, WriteMarkdown and WritePlot
// report the ratios of their medians. Compare matches a run with an
// earlier one for regression checks.
//
// Correctness comes before speed: a workload's Setup returns, besides the
// function that is timed, a check that compares the result with a
// reference computed another way (a Go loop in float64, a naive matrix
// product), and the harness refuses to time a workload whose check fails:
// its Record carries the error instead, and reports show it as a
// mismatch. The peer scripts check their results the same way.
//
// Workloads named with a _compiled suffix run their eager twin's
// computation through transforms.Compile (compile.go). Their first call,
// which traces and optimizes, happens in the check before the warm-up, so
// times, allocations and peak heap are those of later calls (the check
// fails when one of them traced again); a twin named
// <name>_compile_time times a fresh Compile's first call instead, with
// the part spent tracing and optimizing as its metric. The torch peer
// answers a _compiled workload with torch eager.
//
// Peak heap is the heap growth of one run with the collector paused, an
// upper bound that counts garbage. Workloads about memory (checkpoint
// policies; Workload.LiveHeap) also report the live heap's peak, sampled
// during one run with the collector at GOGC=2.
//
// Workloads whose Impl is not "peel" are references that bound what peel
// can reach: the same matrix product through gonum's BLAS called
// directly, and a plain Go copy of the bytes a cheap elementwise op
// touches.
package bench
