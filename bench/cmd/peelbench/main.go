// Command peelbench measures peel's benchmark workloads (package bench):
// each is checked against a reference, warmed up, then timed in repeated
// samples. It prints a table and can write JSON records (one per line, in
// the format the peer scripts in bench/peers print), a Markdown table and
// a bar chart, and compare the run with an earlier one.
//
//	go run ./bench/cmd/peelbench                       # every workload
//	go run ./bench/cmd/peelbench -run 'chain|copy'     # a subset
//	go run ./bench/cmd/peelbench -threads 1,2 -json out.jsonl
//	go run ./bench/cmd/peelbench -peer torch -threads 1 -md out.md -plot out.png
//	go run ./bench/cmd/peelbench -json new.jsonl -compare old.jsonl -threshold 1.10
//	go run ./bench/cmd/peelbench -dist 2 -peer torch   # MPI: all-reduce, data-parallel step
//
// -threads sets runtime.GOMAXPROCS and the CPU backend's kernel threads
// (cpu.SetThreads) for each listed count in turn.
//
// -peer torch also measures the same workloads with PyTorch's functorch
// (bench/peers/torch_func.py, run with the first python3 that imports
// torch: -python, else /usr/bin/python3, else python3 on PATH). Each
// workload is measured by peel and then by torch, back to back, with one
// torch process per thread count (torch's BLAS fixes its threads when it
// loads), and the table gains torch's median and the ratio peel/torch
// (below 1: peel is faster). Without a python3 that has torch, peelbench
// says how to install it and measures peel alone.
//
// -profile d also runs each of peel's workloads for d under the CPU
// profiler and prints where its time goes, by category (bench.Categories:
// GEMM, packing, convolution, elementwise, reductions, copies, zeroing,
// dispatch, autodiff, allocation, GC, synchronization, …), with its
// allocations per run; -json and -md keep the breakdowns.
//
//	go run ./bench/cmd/peelbench -run transformer_grad_f32 -threads 1,2 -profile 3s
//
// -dist n builds bench/cmd/mpibench with the mpi tag and runs it under
// mpirun at 1 and n ranks (peel's all-reduce beside a direct
// MPI_Allreduce loop, and the data-parallel MLP step of dist/ddp), with
// -peer torch beside torch.distributed over gloo at the same rank counts.
//
// A workload whose result does not match its reference shows MISMATCH
// instead of a time. The exit status is 1 when any workload (peel's or
// the peer's) fails its check, 2 when -compare finds a regression past
// -threshold, and 0 otherwise; a missing peer does not change it.
//
// On a terminal a progress bar on stderr shows the measurement under way
// (one step per workload, thread count and side); otherwise one line per
// measurement goes to stderr.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/bench"
)

type config struct {
	run              string
	reps             int
	minTime, warmup  time.Duration
	threads          string
	jsonOut, mdOut   string
	plotOut, compare string
	from             string
	threshold        float64
	peer, python     string
	list             bool
	dist             int
	profile          time.Duration
}

// Exit statuses besides 0.
const (
	exitFailed    = 1 // a workload failed its check, or peelbench could not run
	exitRegressed = 2 // -compare found a regression
)

func main() {
	var c config
	flag.StringVar(&c.run, "run", "", "run only workloads whose name matches this regular expression")
	flag.IntVar(&c.reps, "reps", 10, "timed samples per workload")
	flag.DurationVar(&c.minTime, "mintime", time.Second, "total timed duration per workload, split over the samples")
	flag.DurationVar(&c.warmup, "warmup", 100*time.Millisecond, "untimed warm-up per workload")
	flag.StringVar(&c.threads, "threads", "", "comma-separated thread counts (GOMAXPROCS and cpu.SetThreads); default: GOMAXPROCS")
	flag.StringVar(&c.jsonOut, "json", "", "write JSON records (one per line, the peer's too) to this file")
	flag.StringVar(&c.mdOut, "md", "", "write a Markdown table (workload, peel median, peer median, ratio, threads) to this file")
	flag.StringVar(&c.plotOut, "plot", "", "write a bar chart (ratios peel/peer, or peel's medians without a peer; log axis) to this file (.png, .svg, .pdf)")
	flag.StringVar(&c.compare, "compare", "", "compare with an earlier -json file and exit with status 2 when a workload regresses past -threshold")
	flag.Float64Var(&c.threshold, "threshold", 1.10, "with -compare: the largest new/old median that is not a regression")
	flag.StringVar(&c.peer, "peer", "", `also measure the workloads with this peer: "torch" (PyTorch's functorch)`)
	flag.StringVar(&c.python, "python", "", "with -peer torch: the Python interpreter (default: /usr/bin/python3, then python3 on PATH)")
	flag.StringVar(&c.from, "from", "", "measure nothing: report the records of this -json file (with -md, -plot, -compare)")
	flag.BoolVar(&c.list, "list", false, "list the workloads and exit")
	flag.DurationVar(&c.profile, "profile", 0, "also profile each of peel's workloads for this long and print where its time goes, by category")
	flag.IntVar(&c.dist, "dist", 0, "measure the MPI workloads (bench/cmd/mpibench under mpirun) at 1 and this many ranks instead, with -peer torch beside torch.distributed over gloo")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "peelbench: unexpected arguments %q\n", flag.Args())
		os.Exit(exitFailed)
	}
	status, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peelbench:", err)
	}
	os.Exit(status)
}

func run(c config) (int, error) {
	if c.dist > 0 {
		return runDist(c)
	}
	re, err := regexp.Compile(c.run)
	if err != nil {
		return exitFailed, fmt.Errorf("-run: %w", err)
	}
	var ws []bench.Workload
	for _, w := range bench.Workloads() {
		if re.MatchString(w.Name) {
			ws = append(ws, w)
		}
	}
	if c.list {
		for _, w := range ws {
			fmt.Printf("%-28s %-8s %s\n", w.Name, w.Impl, w.Doc)
		}
		return 0, nil
	}
	// Read -compare's records first: a typo should not cost a whole run.
	var old []bench.Record
	if c.compare != "" {
		if !(c.threshold > 0) {
			return exitFailed, fmt.Errorf("-threshold %v is not positive", c.threshold)
		}
		all, err := readRecords(c.compare)
		if err != nil {
			return exitFailed, fmt.Errorf("-compare: %w", err)
		}
		// Only what this run measures can be compared.
		for _, r := range all {
			if re.MatchString(r.Workload) {
				old = append(old, r)
			}
		}
	}
	if c.from != "" {
		all, err := readRecords(c.from)
		if err != nil {
			return exitFailed, fmt.Errorf("-from: %w", err)
		}
		meta := bench.Meta{Machine: "records of " + c.from, Command: commandLine()}
		var recs []bench.Record
		for _, r := range all {
			if re.MatchString(r.Workload) {
				recs = append(recs, r)
				if r.Impl == "torch" {
					meta.Peer = "torch"
				}
			}
		}
		return report(c, recs, old, meta)
	}
	if len(ws) == 0 {
		return exitFailed, fmt.Errorf("no workload matches %q", c.run)
	}
	counts, err := parseThreads(c.threads)
	if err != nil {
		return exitFailed, err
	}
	old = slices.DeleteFunc(old, func(r bench.Record) bool { return !slices.Contains(counts, r.Threads) })
	python, peerVersion := "", ""
	switch c.peer {
	case "":
	case "torch":
		python, peerVersion, err = bench.FindPython(c.python)
		if err != nil {
			fmt.Fprintf(os.Stderr, "peelbench: -peer torch: %v; continuing with peel alone\n", err)
			python = ""
		}
	default:
		return exitFailed, fmt.Errorf(`-peer %q: the only peer is "torch"`, c.peer)
	}

	if python == "" {
		// Without a peer this run has no torch records to compare.
		old = slices.DeleteFunc(old, func(r bench.Record) bool { return r.Impl == "torch" })
	}

	meta := bench.Meta{
		Machine: bench.Machine(), Go: runtime.Version(), BLAS: cpu.BLAS(),
		Command: commandLine(),
	}
	if python != "" {
		meta.Peer = "torch " + peerVersion
	}
	fmt.Printf("peelbench: %s, %s, BLAS %s, %d reps, mintime %v", meta.Machine, meta.Go, meta.BLAS, c.reps, c.minTime)
	if python != "" {
		fmt.Printf(", peer torch %s (%s)", peerVersion, python)
	}
	fmt.Println()

	recs := measureAll(ws, counts, c, python, &meta)
	fmt.Println()
	for _, l := range meta.Limits {
		fmt.Println(l)
	}
	return report(c, recs, old, meta)
}

// report prints the table of recs, writes the files asked for and
// compares recs with old (-compare); it returns the exit status.
func report(c config, recs, old []bench.Record, meta bench.Meta) (int, error) {
	var err error
	rows := bench.Pair(recs, "torch")
	fmt.Println()
	if bench.HasPeer(rows) {
		err = bench.WriteComparison(os.Stdout, rows, "torch")
	} else {
		err = bench.WriteTable(os.Stdout, recs)
	}
	if err != nil {
		return exitFailed, err
	}
	if hasBreakdown(recs) {
		fmt.Println("\nwhere the time goes (% of the CPU time the profiler saw):")
		if err := bench.WriteBreakdowns(os.Stdout, recs); err != nil {
			return exitFailed, err
		}
	}
	if c.jsonOut != "" {
		if err := writeFile(c.jsonOut, func(f *os.File) error { return bench.WriteRecords(f, recs) }); err != nil {
			return exitFailed, err
		}
	}
	if c.mdOut != "" {
		if err := writeFile(c.mdOut, func(f *os.File) error {
			if err := bench.WriteMarkdown(f, rows, meta); err != nil {
				return err
			}
			if !hasBreakdown(recs) {
				return nil
			}
			if _, err := fmt.Fprintln(f, "\nWhere the time goes (% of the CPU time the profiler saw):"); err != nil {
				return err
			}
			return bench.WriteBreakdownsMarkdown(f, recs)
		}); err != nil {
			return exitFailed, err
		}
	}
	if c.plotOut != "" {
		if err := plot(c.plotOut, recs, bench.ChartTitle(rows, meta)); err != nil {
			return exitFailed, fmt.Errorf("-plot: %w", err)
		}
	}

	status := 0
	var errs []error
	if n := countFailed(recs); n > 0 {
		status = exitFailed
		errs = append(errs, fmt.Errorf("%d measurement(s) failed their check (MISMATCH above)", n))
	}
	if c.compare != "" {
		changes := bench.Compare(old, recs, c.threshold)
		fmt.Printf("\nagainst %s (threshold %.2f):\n", c.compare, c.threshold)
		if err := bench.WriteChanges(os.Stdout, changes); err != nil {
			return exitFailed, err
		}
		if off := bench.Offenders(changes, "torch"); len(off) > 0 {
			if status == 0 {
				status = exitRegressed
			}
			names := make([]string, len(off))
			for i, o := range off {
				names[i] = fmt.Sprintf("%s (%s, %s)", o.Workload, o.Impl, bench.ThreadsPhrase(o.Threads))
			}
			errs = append(errs, fmt.Errorf("%d workload(s) slower than %.2f× their time in %s, or failing their check: %s",
				len(off), c.threshold, c.compare, strings.Join(names, ", ")))
		}
	}
	return status, errors.Join(errs...)
}

// measureAll measures each workload at each thread count: peel first,
// then, when python is set, the torch peer (one process per thread
// count), back to back. Failed checks come back as records with Error
// set; a peer that cannot start or stops answering is reported once and
// the run goes on without it.
//
// Before each thread count it measures the machine's limits at that
// count (cpu.MeasureLimits), adds them to meta and measures each
// record against them (bench.Roof).
func measureAll(ws []bench.Workload, counts []int, c config, python string, meta *bench.Meta) []bench.Record {
	sides := 1
	if python != "" {
		sides = 2
	}
	prog := newProgress(len(ws) * len(counts) * sides)
	defer prog.finish()

	var recs []bench.Record
	for _, n := range counts {
		runtime.GOMAXPROCS(n)
		cpu.SetThreads(n)
		opt := bench.Options{Reps: c.reps, MinTime: c.minTime, Warmup: c.warmup, Threads: n}
		prog.describe(fmt.Sprintf("measuring this machine's limits, %s", bench.ThreadsPhrase(n)))
		lim := cpu.MeasureLimits(n)
		meta.Limits = append(meta.Limits, bench.LimitsLine(lim))
		var peer *bench.Peer
		if python != "" {
			prog.describe(fmt.Sprintf("starting torch, %s", bench.ThreadsPhrase(n)))
			p, err := bench.StartTorch(python, n)
			if err != nil {
				prog.logf("peelbench: %v; continuing with peel alone", err)
				python = ""
			}
			peer = p
		}
		for _, w := range ws {
			prog.describe(fmt.Sprintf("%s · peel · %s", w.Name, bench.ThreadsPhrase(n)))
			rec := measurePeel(w, opt)
			bench.Roof(&rec, w, lim)
			if c.profile > 0 && !rec.Failed() {
				prog.describe(fmt.Sprintf("%s · profile · %s", w.Name, bench.ThreadsPhrase(n)))
				if b, err := bench.ProfileWorkload(w, c.profile); err != nil {
					prog.logf("peelbench: -profile: %v", err)
				} else {
					rec.Breakdown = &b
				}
			}
			recs = append(recs, rec)
			prog.done(rec, nil)
			if sides == 1 {
				continue
			}
			if peer == nil || !peer.Has(w.Name) {
				prog.skip()
				continue
			}
			prog.describe(fmt.Sprintf("%s · torch · %s", w.Name, bench.ThreadsPhrase(n)))
			prec, err := peer.Measure(w.Name, opt)
			if err != nil {
				prog.logf("peelbench: %v; continuing with peel alone", err)
				peer.Close()
				peer, python = nil, ""
				prog.skip()
				continue
			}
			bench.Roof(&prec, w, lim)
			recs = append(recs, prec)
			prog.done(prec, &rec)
			// torch's worker threads (libgomp, OpenBLAS) keep spinning
			// on the cores for up to a tenth of a second after its last
			// parallel region, which would take a core from the next
			// peel measurement at two threads. Let them go to sleep.
			time.Sleep(peerSettle)
		}
		if peer != nil {
			peer.Close()
		}
	}
	return recs
}

// peerSettle is the pause after each peer measurement (see above).
const peerSettle = 300 * time.Millisecond

func measurePeel(w bench.Workload, opt bench.Options) bench.Record {
	r, err := bench.Measure(w, opt)
	if err != nil {
		return bench.FailedRecord(w, opt.Threads, err)
	}
	return r.Record()
}

// hasBreakdown reports whether any record carries a breakdown.
func hasBreakdown(rs []bench.Record) bool {
	return slices.ContainsFunc(rs, func(r bench.Record) bool { return r.Breakdown != nil })
}

func countFailed(rs []bench.Record) int {
	n := 0
	for _, r := range rs {
		if r.Failed() {
			n++
		}
	}
	return n
}

// commandLine is the command that is running, as one would type it:
// "go run ./bench/cmd/peelbench" when it is running under go run.
func commandLine() string {
	name := filepath.Base(os.Args[0])
	if strings.Contains(os.Args[0], "go-build") {
		name = "go run ./bench/cmd/peelbench"
	}
	parts := []string{name}
	for _, a := range os.Args[1:] {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func readRecords(path string) ([]bench.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := bench.ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no records", path)
	}
	return rs, nil
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// plot draws the chart of recs with command peelplot, run with `go run`
// in a process of its own: the plotting library (gonum/plot, its fonts)
// would otherwise be linked into this process and make every garbage
// collection of the measured workloads slower.
func plot(path string, recs []bench.Record, title string) error {
	tmp, err := os.CreateTemp("", "peelbench-*.jsonl")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := bench.WriteRecords(tmp, recs); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	args := []string{"run", "github.com/peel-ml/peel/bench/cmd/peelplot", "-from", tmp.Name(), "-o", path, "-title", title}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("drawing the chart needs the go command (go run ./bench/cmd/peelplot): %w; keep the records with -json and run peelplot -from on them", err)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go run ./bench/cmd/peelplot (from within the peel module): %w; keep the records with -json and run peelplot -from on them", err)
	}
	return nil
}
