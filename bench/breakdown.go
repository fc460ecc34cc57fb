package bench

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Breakdown is where a workload's time goes: its runs, repeated under the
// CPU profiler, and each sample's stack put in one category (Categories)
// by the function it was in and, for the runtime's copies, zeroing and
// allocation, by who called it.
type Breakdown struct {
	// Steps is the number of runs profiled; StepNs their wall time per
	// run, CPUNs the CPU time the profiler saw per run (every goroutine:
	// the kernels' workers and the collector too).
	Steps  int     `json:"steps"`
	StepNs float64 `json:"step_ns"`
	CPUNs  float64 `json:"cpu_ns"`
	// Allocs is heap allocations per run.
	Allocs float64 `json:"allocs"`
	// Share is each category's percentage of the CPU time.
	Share map[string]float64 `json:"share"`
}

// Category is one column of a breakdown.
type Category struct {
	Name, Doc string
}

// Categories are the breakdown's categories, in the order reports list
// them.
var Categories = []Category{
	{"gemm", "matrix products: the GEMM micro-kernels and their drivers (peel's, or the BLAS)"},
	{"pack", "packing of GEMM operands and merging of edge tiles"},
	{"conv", "convolution and pooling kernels: tap kernels, padding, im2col, their transposes"},
	{"elementwise", "elementwise kernels (arithmetic, activations, comparisons, conversions)"},
	{"reduce", "reductions, cumulative and scatter-reduce kernels"},
	{"copy", "strided copies: materialized transposes, broadcasts, slices, concatenations"},
	{"kernels", "other kernels: gather and scatter, sort, random numbers, linear algebra, collectives"},
	{"zeroing", "zeroing fresh buffers (the allocator's and the kernels' own)"},
	{"dispatch", "eager dispatch and shape rules: peel's API, interp, prims, backend glue"},
	{"autodiff", "transform bookkeeping: JVP, linearize, the transpose sweep, vmap, functionalize"},
	{"compiler", "the compiler and its executor"},
	{"model", "the model's and optimizer's own Go code (nn, optim, the workload)"},
	{"alloc", "heap allocation (mallocgc and the slices and maps it makes)"},
	{"gc", "garbage collection: background marking and sweeping, assists"},
	{"sync", "scheduling and synchronization: the kernels' worker pool (hand-offs, waiting for work), parking, futexes"},
	{"other", "everything else"},
}

// ProfileWorkload sets w up, checks one run, then runs it repeatedly for
// at least d (and at least 3 runs) under the CPU profiler and returns the
// breakdown. It fails when the check fails, the profiler cannot start
// (another profile is running) or its output cannot be read.
func ProfileWorkload(w Workload, d time.Duration) (b Breakdown, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panicked: %v", w.Name, r)
		}
	}()
	run, check := w.Setup()
	run()
	if err := check(); err != nil {
		return b, fmt.Errorf("%s: wrong result: %w", w.Name, err)
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return b, err
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	n := 0
	for n < 3 || time.Since(start) < d {
		run()
		n++
	}
	wall := time.Since(start)
	runtime.ReadMemStats(&m1)
	pprof.StopCPUProfile()
	samples, err := readCPUProfile(&buf)
	if err != nil {
		return b, err
	}
	b = breakdownOf(samples)
	b.Steps = n
	b.StepNs = float64(wall.Nanoseconds()) / float64(n)
	b.CPUNs /= float64(n)
	b.Allocs = float64(m1.Mallocs-m0.Mallocs) / float64(n)
	return b, nil
}

// breakdownOf sums samples by category; CPUNs is their total.
func breakdownOf(samples []profSample) Breakdown {
	b := Breakdown{Share: map[string]float64{}}
	var total int64
	for _, s := range samples {
		b.Share[classify(s.Stack)] += float64(s.Nanos)
		total += s.Nanos
	}
	if total > 0 {
		for k, v := range b.Share {
			b.Share[k] = 100 * v / float64(total)
		}
	}
	b.CPUNs = float64(total)
	return b
}

// peelModule is the module path of peel's packages.
const peelModule = "github.com/peel-ml/peel"

// classify puts a sample's stack (leaf first) in a category.
func classify(stack []profFrame) string {
	if len(stack) == 0 {
		return "other"
	}
	for _, f := range stack {
		switch funcBase(f.Name) {
		case "runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge":
			return "gc"
		}
	}
	leaf := stack[0]
	if !isRuntime(leaf.Name) {
		if p := pkgOf(leaf.Name); p == "sync" || p == "sync/atomic" {
			return "sync"
		}
		return classifyFrame(leaf)
	}
	has := func(names ...string) bool {
		for _, f := range stack {
			if slices.Contains(names, funcBase(f.Name)) {
				return true
			}
		}
		return false
	}
	// The first caller outside the runtime: a copy, clear or allocation
	// belongs to what it was for.
	caller := profFrame{}
	for _, f := range stack {
		if !isRuntime(f.Name) {
			caller = f
			break
		}
	}
	leafName := funcBase(leaf.Name)
	switch {
	case has("runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.gcDrainN", "runtime.scanobject", "runtime.markroot"):
		return "gc"
	case strings.HasPrefix(leafName, "runtime.memclrNoHeapPointers"):
		return "zeroing"
	case leafName == "runtime.memmove":
		if caller.Name == "" {
			return "other"
		}
		return classifyFrame(caller)
	case has("runtime.mallocgc", "runtime.growslice", "runtime.makeslice", "runtime.newobject", "runtime.makemap", "runtime.mapassign", "runtime.mapassign_fast64", "runtime.mapassign_faststr"):
		return "alloc"
	case has("runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.gopark", "runtime.mcall",
		"runtime.notesleep", "runtime.semasleep", "runtime.futex", "runtime.usleep", "runtime.osyield", "runtime.procyield",
		"runtime.lock2", "runtime.unlock2", "runtime.ready", "runtime.wakep", "runtime.semacquire1", "runtime.semrelease1",
		"runtime.chanrecv", "runtime.chansend", "runtime.selectgo", "runtime.selectnbrecv", "runtime.selectnbsend"):
		return "sync"
	case caller.Name != "":
		// Anything else the runtime does for a caller (a preemption,
		// a clock read) counts as the caller's.
		return classifyFrame(caller)
	}
	return "other"
}

// classifyFrame puts a function outside the runtime in a category, by
// its package and, in the CPU backend, its source file.
func classifyFrame(f profFrame) string {
	p := pkgOf(f.Name)
	rel, ok := strings.CutPrefix(p, peelModule)
	if !ok {
		if strings.HasPrefix(p, "gonum.org/v1/gonum/blas") || strings.HasPrefix(p, "gonum.org/v1/netlib") {
			return "gemm"
		}
		return "other"
	}
	rel = strings.TrimPrefix(rel, "/")
	switch {
	case rel == "backend/cpu":
		return classifyCPU(funcBase(f.Name), path.Base(f.File))
	case rel == "internal/workers":
		return "sync" // the kernels' worker pool: hand-offs and waiting
	case rel == "" || rel == "interp" || rel == "prims" || rel == "backend" || rel == "tree" || strings.HasPrefix(rel, "internal/"):
		return "dispatch"
	case rel == "autodiff" || rel == "transforms" || rel == "batching" || rel == "functionalize" || rel == "customop":
		return "autodiff"
	case rel == "compiler":
		return "compiler"
	case rel == "dist" || strings.HasPrefix(rel, "dist/"):
		return "kernels"
	}
	return "model" // nn, optim, bench, examples, data, checkpoint
}

// classifyCPU puts a function of the CPU backend (name without package)
// in a category by its source file.
func classifyCPU(name, file string) string {
	fn := strings.TrimPrefix(name, peelModule+"/backend/cpu.")
	switch {
	case file == "dot_gemm_amd64.s" || file == "dot_gemm512_amd64.s":
		if strings.Contains(fn, "Taps") {
			return "conv"
		}
		return "gemm"
	case file == "dot_gemm.go" && (strings.HasPrefix(fn, "pack") || strings.HasPrefix(fn, "mergeTile")):
		return "pack"
	case strings.HasPrefix(file, "dot") || strings.HasPrefix(file, "blas"):
		return "gemm"
	case strings.HasPrefix(file, "window"):
		return "conv"
	case strings.HasPrefix(file, "copy") || file == "shape.go":
		return "copy"
	case strings.HasPrefix(file, "elementwise") || strings.HasPrefix(file, "simd") || strings.HasPrefix(file, "fastmath") || file == "special.go":
		return "elementwise"
	case file == "reduce.go" || file == "cumulative.go" || file == "scatter_reduce.go":
		return "reduce"
	case file == "parallel.go":
		return "sync"
	case file == "cache.go" || file == "buffer.go":
		return "alloc"
	case file == "cpu.go":
		switch {
		case fn == "zero" || strings.HasPrefix(fn, "zero["):
			return "zeroing"
		case fn == "makeBuf" || fn == "(*Backend).Alloc":
			return "alloc"
		}
		return "dispatch"
	case strings.HasPrefix(file, "limits") || file == "path.go":
		return "other"
	}
	return "kernels"
}

// funcBase is a function's name without its type arguments
// ("cpu.packB[go.shape.float32]" → "cpu.packB"; closures keep their
// ".funcN").
func funcBase(name string) string {
	var sb strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// pkgOf is the import path of a function's package.
func pkgOf(name string) string {
	name = funcBase(name)
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return name
	}
	return name[:slash+1+dot]
}

// isRuntime reports whether a function belongs to the Go runtime (or its
// internal packages).
func isRuntime(name string) bool {
	p := pkgOf(name)
	return p == "runtime" || strings.HasPrefix(p, "runtime/") || strings.HasPrefix(p, "internal/")
}

// WriteBreakdowns writes the breakdowns of the records that have one as
// a table: a row per workload and thread count, with its time and
// allocations per run and each category's share of the CPU time (the
// categories no record uses left out).
func WriteBreakdowns(w io.Writer, recs []Record) error {
	rows, cats := breakdownRows(recs)
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "workload\tthreads\tms/run\tCPU ms/run\tallocs/run")
	for _, c := range cats {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw, "\t")
	for _, r := range rows {
		b := r.Breakdown
		fmt.Fprintf(tw, "%s\t%d\t%.3g\t%.3g\t%.0f", r.Workload, r.Threads, b.StepNs/1e6, b.CPUNs/1e6, b.Allocs)
		for _, c := range cats {
			fmt.Fprintf(tw, "\t%s", pct(b.Share[c]))
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}

// WriteBreakdownsMarkdown is WriteBreakdowns as a Markdown table, with
// the categories' meanings below it.
func WriteBreakdownsMarkdown(w io.Writer, recs []Record) error {
	rows, cats := breakdownRows(recs)
	if len(rows) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("| workload | threads | ms/run | CPU ms/run | allocs/run |")
	for _, c := range cats {
		sb.WriteString(" " + c + " |")
	}
	sb.WriteString("\n| --- | ---: | ---: | ---: | ---: |")
	for range cats {
		sb.WriteString(" ---: |")
	}
	sb.WriteString("\n")
	for _, r := range rows {
		b := r.Breakdown
		fmt.Fprintf(&sb, "| %s | %d | %.3g | %.3g | %.0f |", r.Workload, r.Threads, b.StepNs/1e6, b.CPUNs/1e6, b.Allocs)
		for _, c := range cats {
			sb.WriteString(" " + pct(b.Share[c]) + " |")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\n")
	for _, c := range Categories {
		if slices.Contains(cats, c.Name) {
			fmt.Fprintf(&sb, "- %s: %s\n", c.Name, c.Doc)
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// breakdownRows returns the peel records with a breakdown and the
// categories any of them uses, in Categories' order.
func breakdownRows(recs []Record) ([]Record, []string) {
	var rows []Record
	used := map[string]bool{}
	for _, r := range recs {
		if r.Breakdown == nil {
			continue
		}
		rows = append(rows, r)
		for c, v := range r.Breakdown.Share {
			if v >= 0.5 {
				used[c] = true
			}
		}
	}
	var cats []string
	for _, c := range Categories {
		if used[c.Name] {
			cats = append(cats, c.Name)
		}
	}
	return rows, cats
}

// pct formats a share: a whole percentage, "–" below one half.
func pct(v float64) string {
	if v < 0.5 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", v)
}
