package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"time"

	"github.com/peel-ml/peel"
)

// Options control how the harness measures a workload. Reps, MinTime and
// Warmup take their defaults when zero or negative, so the zero Options
// take 10 samples over about a second after a 100ms warm-up.
type Options struct {
	// Reps is the number of timed samples (default 10).
	Reps int
	// MinTime is the total time the timed samples should take together
	// (default 1s); each sample repeats the workload enough times to last
	// MinTime/Reps, and at least once.
	MinTime time.Duration
	// Warmup is how long the workload runs untimed first, which also
	// calibrates the runs per sample (default 100ms; at least 2 runs).
	Warmup time.Duration
	// Threads is recorded in the results; the caller sets GOMAXPROCS and
	// the backend's threads (see cpu.SetThreads).
	Threads int
}

func (o Options) withDefaults() Options {
	if o.Reps <= 0 {
		o.Reps = 10
	}
	if o.MinTime <= 0 {
		o.MinTime = time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 100 * time.Millisecond
	}
	return o
}

// Result is the measurement of one workload.
type Result struct {
	Workload, Impl string
	Threads        int
	// SamplesNs holds each sample's time per run, in nanoseconds, sorted.
	SamplesNs []float64
	// RunsPerSample is how many runs each sample averaged.
	RunsPerSample int
	MedianNs      float64
	MinNs, MaxNs  float64
	Q1Ns, Q3Ns    float64
	// Metric is the workload's derived metric at the median, in Unit.
	Metric float64
	Unit   string
	// Allocs and Bytes are the heap allocations and bytes allocated per
	// run (runtime.MemStats deltas averaged over runs).
	Allocs, Bytes float64
	// PeakHeap is the heap growth during one run with the collector
	// paused: an upper bound on the extra memory one run needs.
	PeakHeap uint64
	// LivePeak is the largest growth of the live heap seen during one
	// run (Workload.LiveHeap; 0 when not measured).
	LivePeak uint64
	// PeakTensors is the growth of the caching allocator's peak of bytes
	// in use over one run (TensorPeak).
	PeakTensors int64
	// GCPercent is the collector's share of the busy CPU time during the
	// timed samples (runtime/metrics: GC CPU over GC and user CPU), in
	// percent; -1 when the runtime did not report it.
	GCPercent float64
}

// Record returns the JSON record of r.
func (r Result) Record() Record {
	return Record{
		Workload: r.Workload, Impl: r.Impl, Threads: r.Threads,
		MedianNs: r.MedianNs, MinNs: r.MinNs, MaxNs: r.MaxNs,
		Q1Ns: r.Q1Ns, Q3Ns: r.Q3Ns,
		Metric: r.Metric, Unit: r.Unit,
		Allocs: r.Allocs, Bytes: r.Bytes, PeakHeap: r.PeakHeap, LivePeak: r.LivePeak, PeakTensors: r.PeakTensors,
		GCPercent: r.GCPercent,
		Reps:      len(r.SamplesNs), RunsPerSample: r.RunsPerSample,
	}
}

// Measure checks w against its reference and then times it, with the
// defaults of Options for opt's unset fields. It returns an error, and
// no timing, when the check fails.
func Measure(w Workload, opt Options) (res Result, err error) {
	opt = opt.withDefaults()
	run, check, err := setup(w)
	if err != nil {
		return Result{}, err
	}
	if err := verify(w.Name, run, check); err != nil {
		return Result{}, err
	}

	// Warm up, doubling the batch until one batch lasts long enough to
	// estimate the time per run.
	k := 1
	var per time.Duration
	for warm := time.Duration(0); ; k *= 2 {
		d := timeRuns(run, k)
		warm += d
		per = d / time.Duration(k)
		if warm >= opt.Warmup && k >= 2 {
			break
		}
	}
	n := 1
	if target := opt.MinTime / time.Duration(opt.Reps); per > 0 && target > per {
		n = int(target / per)
	}

	samples := make([]float64, opt.Reps)
	gc0, user0 := cpuClasses()
	for i := range samples {
		samples[i] = float64(timeRuns(run, n).Nanoseconds()) / float64(n)
	}
	gc1, user1 := cpuClasses()
	slices.Sort(samples)

	res = Result{
		Workload: w.Name, Impl: w.Impl, Threads: opt.Threads,
		SamplesNs: samples, RunsPerSample: n,
		MedianNs: quantile(samples, 0.5),
		MinNs:    samples[0], MaxNs: samples[len(samples)-1],
		Q1Ns: quantile(samples, 0.25), Q3Ns: quantile(samples, 0.75),
		Unit: w.Unit,
	}
	if w.Metric != nil {
		res.Metric = w.Metric(res.MedianNs)
	}
	res.GCPercent = -1
	if busy := (gc1 - gc0) + (user1 - user0); busy > 0 {
		res.GCPercent = 100 * (gc1 - gc0) / busy
	}
	res.Allocs, res.Bytes = allocsPerRun(run, max(1, min(n, 100)))
	res.PeakHeap = peakHeap(run)
	res.PeakTensors = TensorPeak(run)
	if w.LiveHeap {
		res.LivePeak = LivePeak(run)
	}
	// The timed runs must still give the right answer.
	if err := verify(w.Name, run, check); err != nil {
		return Result{}, err
	}
	return res, nil
}

// setup runs w.Setup, turning a panic into an error.
func setup(w Workload) (run func(), check func() error, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: setup panicked: %v", w.Name, r)
		}
	}()
	run, check = w.Setup()
	return run, check, nil
}

// verify runs the workload once and checks its result.
func verify(name string, run func(), check func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panicked: %v", name, r)
		}
	}()
	run()
	if err := check(); err != nil {
		return fmt.Errorf("%s: wrong result: %w", name, err)
	}
	return nil
}

func timeRuns(run func(), n int) time.Duration {
	start := time.Now()
	for range n {
		run()
	}
	return time.Since(start)
}

// quantile interpolates the q-quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}

// allocsPerRun returns the mean number of heap allocations and bytes
// allocated by one run, over n runs.
func allocsPerRun(run func(), n int) (allocs, bytes float64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		run()
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.Mallocs-m0.Mallocs) / float64(n), float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
}

// TensorPeak returns the growth of the caching allocator's peak of bytes
// in use over one run (peel.ResetPeakMemory, then peel.MemoryStats): the
// most memory its results of 4 KiB and more took at once, counting those
// unreachable but not yet collected, as the cache paces its collections
// in any program. A collection first returns the garbage of earlier runs.
func TensorPeak(run func()) int64 {
	runtime.GC()
	runtime.Gosched()
	time.Sleep(time.Millisecond) // the cleanups the collection queued
	peel.ResetPeakMemory()
	base := peel.MemoryStats().Peak // the bytes in use at the reset
	run()
	return max(0, peel.MemoryStats().Peak-base)
}

// peakHeap returns the heap growth of one run with the collector paused.
func peakHeap(run func()) uint64 {
	runtime.GC()
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	run()
	runtime.ReadMemStats(&m1)
	if m1.HeapAlloc < m0.HeapAlloc {
		return 0
	}
	return m1.HeapAlloc - m0.HeapAlloc
}

// LivePeak returns the largest growth of the live heap (the bytes the
// collector found reachable at the end of a cycle) over the start seen
// during one run. The collector runs at GOGC=2 for it, so cycles follow
// each other closely, and a goroutine samples the live heap until the
// run ends; a last cycle after the run counts what the run keeps.
func LivePeak(run func()) uint64 {
	// Memory that is live now but let go by the collections during run
	// would shrink the live heap under its sample: the caching
	// allocator's buffers (those of results already unreachable come
	// back through cleanups that run after a collection, and idle ones
	// are trimmed at each collection) and the contents of sync.Pools
	// (the GEMMs' packing buffers, kernel frames: dropped at the second
	// collection after their last use). Collected, recycled and emptied
	// first, they are neither in the base nor dropped while run runs.
	for range 3 {
		runtime.GC()
		runtime.Gosched()
		time.Sleep(time.Millisecond) // the cleanups the collection queued
		peel.EmptyCache()
	}
	runtime.GC()
	old := debug.SetGCPercent(2)
	defer debug.SetGCPercent(old)
	read := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[0].Value.Uint64()
	}
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	}()
	run()
	close(stop)
	<-done
	runtime.GC()
	if v := read(); v > peak.Load() {
		peak.Store(v)
	}
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// cpuClasses returns the CPU seconds the collector and the program's own
// goroutines have used so far (runtime/metrics estimates, refreshed by
// the runtime at each collection).
func cpuClasses() (gc, user float64) {
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/user:cpu-seconds"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64 || m[1].Value.Kind() != metrics.KindFloat64 {
		return 0, 0
	}
	return m[0].Value.Float64(), m[1].Value.Float64()
}
