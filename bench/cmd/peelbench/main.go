// Command peelbench measures peel's benchmark workloads (package bench):
// each is checked against a reference, warmed up, then timed in repeated
// samples. It prints a table and can write JSON records, one per line,
// in the format the peer scripts in bench/peers print.
//
//	go run ./bench/cmd/peelbench                       # every workload
//	go run ./bench/cmd/peelbench -run 'chain|copy'     # a subset
//	go run ./bench/cmd/peelbench -threads 1,2 -json out.jsonl
//
// -threads sets runtime.GOMAXPROCS and the CPU backend's kernel threads
// (cpu.SetThreads) for each listed count in turn.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/bench"
)

func main() {
	var (
		runRE   = flag.String("run", "", "run only workloads whose name matches this regular expression")
		reps    = flag.Int("reps", 10, "timed samples per workload")
		minTime = flag.Duration("mintime", time.Second, "total timed duration per workload, split over the samples")
		warmup  = flag.Duration("warmup", 100*time.Millisecond, "untimed warm-up per workload")
		threads = flag.String("threads", "", "comma-separated thread counts (GOMAXPROCS and cpu.SetThreads); default: GOMAXPROCS")
		jsonOut = flag.String("json", "", "write JSON records (one per line) to this file")
		list    = flag.Bool("list", false, "list the workloads and exit")
	)
	flag.Parse()
	if err := run(*runRE, *reps, *minTime, *warmup, *threads, *jsonOut, *list); err != nil {
		fmt.Fprintln(os.Stderr, "peelbench:", err)
		os.Exit(1)
	}
}

func run(runRE string, reps int, minTime, warmup time.Duration, threadList, jsonOut string, list bool) error {
	re, err := regexp.Compile(runRE)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	var ws []bench.Workload
	for _, w := range bench.Workloads() {
		if re.MatchString(w.Name) {
			ws = append(ws, w)
		}
	}
	if list {
		for _, w := range ws {
			fmt.Printf("%-22s %-8s %s\n", w.Name, w.Impl, w.Doc)
		}
		return nil
	}
	if len(ws) == 0 {
		return fmt.Errorf("no workload matches %q", runRE)
	}
	counts, err := parseThreads(threadList)
	if err != nil {
		return err
	}

	fmt.Printf("peelbench: %s %s/%s, %d CPUs, BLAS %s, %d reps, mintime %v\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu.BLAS(), reps, minTime)
	var recs []bench.Record
	failed := 0
	for _, n := range counts {
		runtime.GOMAXPROCS(n)
		cpu.SetThreads(n)
		for _, w := range ws {
			r, err := bench.Measure(w, bench.Options{Reps: reps, MinTime: minTime, Warmup: warmup, Threads: n})
			if err != nil {
				fmt.Fprintln(os.Stderr, "FAIL", err)
				failed++
				continue
			}
			rec := r.Record()
			recs = append(recs, rec)
			fmt.Fprintf(os.Stderr, "%-22s threads=%d median %s\n", w.Name, n, bench.FormatNs(r.MedianNs))
		}
	}
	fmt.Println()
	if err := bench.WriteTable(os.Stdout, recs); err != nil {
		return err
	}
	if jsonOut != "" {
		f, err := os.Create(jsonOut)
		if err != nil {
			return err
		}
		if err := bench.WriteRecords(f, recs); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d workload(s) failed their check", failed)
	}
	return nil
}

// parseThreads parses "1,2,4"; empty means the current GOMAXPROCS.
func parseThreads(s string) ([]int, error) {
	if s == "" {
		return []int{runtime.GOMAXPROCS(0)}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-threads: %q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
