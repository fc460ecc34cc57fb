package cpu

import (
	"math"
	"runtime"
	"sync"
	"time"
)

// Limits are what bounds a kernel on this machine, measured by
// MeasureLimits: the peak rate of fused multiply-adds and the memory
// bandwidth, at a number of threads. Benchmarks report their rates as a
// percentage of these, so that a figure means the same on any machine.
type Limits struct {
	// Path is the kernel path the peaks were measured on (Path): the
	// widest vectors the kernels use.
	Path string
	// Threads is the number of threads that ran the loops at once.
	Threads int
	// PeakF32 and PeakF64 are the FMA peaks in GFLOPS (an FMA counts
	// as two operations per lane): each thread runs 12 independent
	// vector FMAs per iteration, on the widest vectors of Path (scalar
	// multiply-adds for purego), and the best of several runs counts.
	PeakF32, PeakF64 float64
	// Bandwidth is the STREAM triad's rate (a = b + s·c; 12 bytes read
	// or written per float32 element, write-allocate not counted) in
	// GB/s over three arrays of 1M float32 (12 MiB: the working set of
	// the memory-bound benchmarks, which caches of 12 MiB or more hold),
	// split across the threads; BandwidthMem over three arrays of 32M
	// (384 MiB: main memory on any machine of today).
	Bandwidth, BandwidthMem float64
}

// Peak returns the FMA peak (GFLOPS) of float64 when f64 is set, of
// float32 otherwise.
func (l Limits) Peak(f64 bool) float64 {
	if f64 {
		return l.PeakF64
	}
	return l.PeakF32
}

var limitsMemo struct {
	sync.Mutex
	m map[int]Limits
}

// MeasureLimits measures the Limits of this machine at the given number
// of threads (each locked to an OS thread while it runs; GOMAXPROCS
// should be at least threads), once per count per process: the first
// call for a count takes about half a second and allocates 384 MiB for
// as long. It panics if threads is below 1.
func MeasureLimits(threads int) Limits {
	if threads < 1 {
		panic("cpu: MeasureLimits: threads below 1")
	}
	limitsMemo.Lock()
	defer limitsMemo.Unlock()
	if l, ok := limitsMemo.m[threads]; ok {
		return l
	}
	l := Limits{Path: Path(), Threads: threads}
	l.PeakF32 = peak(cpuPath, false, threads)
	l.PeakF64 = peak(cpuPath, true, threads)
	l.Bandwidth = bandwidth(1<<20, threads, 20, 7)
	l.BandwidthMem = bandwidth(32<<20, threads, 2, 3)
	if limitsMemo.m == nil {
		limitsMemo.m = map[int]Limits{}
	}
	limitsMemo.m[threads] = l
	return l
}

// together runs body(k) for k < threads on as many locked OS threads,
// started together, and returns the time from the start until the last
// one finished.
func together(threads int, body func(k int)) time.Duration {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(threads)
	done.Add(threads)
	for k := range threads {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer done.Done()
			ready.Done()
			<-start
			body(k)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0)
}

// peak measures the FMA peak of kernel path p in GFLOPS at threads
// threads: the best of seven runs of about 4 ms each.
func peak(p kernelPath, f64 bool, threads int) float64 {
	// Calibrate the iterations of one run on one thread.
	n := 1 << 12
	for {
		t0 := time.Now()
		fmaLoop(p, f64, n)
		if d := time.Since(t0); d > time.Millisecond || n >= 1<<30 {
			n = int(float64(n) * float64(4*time.Millisecond) / float64(max(d, 1)))
			break
		}
		n *= 4
	}
	n = max(n, 1)
	best := 0.0
	for range 7 {
		var flops [64]float64
		d := together(threads, func(k int) { flops[k%64] = fmaLoop(p, f64, n) })
		total := 0.0
		for _, f := range flops[:min(threads, 64)] {
			total += f
		}
		if threads > 64 {
			total = flops[0] * float64(threads)
		}
		best = max(best, total/float64(d.Nanoseconds()))
	}
	return best
}

// bandwidth measures the triad's rate in GB/s over three arrays of n
// float32 split across threads, each run passing over them reps times:
// the best of trials runs.
func bandwidth(n, threads, reps, trials int) float64 {
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range b {
		b[i], c[i] = 1, 2
	}
	chunk := (n/threads + 31) &^ 31
	run := func(k int) {
		lo, hi := min(n, k*chunk), min(n, (k+1)*chunk)
		for range reps {
			triad(a[lo:hi], b[lo:hi], c[lo:hi], 0.5)
		}
	}
	together(threads, run) // first touch, caches warm
	best := 0.0
	for range trials {
		d := together(threads, run)
		best = max(best, 12*float64(n)*float64(reps)/float64(d.Nanoseconds()))
	}
	return best
}

// fmaLoopGo is the portable peak loop: n iterations of 12 independent
// scalar multiply-adds (what the portable kernels do), returning the
// operations done.
func fmaLoopGo(f64 bool, n int) float64 {
	// KeepAlive keeps the loops, whose results nothing reads.
	if f64 {
		runtime.KeepAlive(fmaLoopGo64(n, 0.5, 1))
	} else {
		runtime.KeepAlive(fmaLoopGo32(n, 0.5, 1))
	}
	return float64(n) * 12 * 2
}

// fmaLoopGo32 and fmaLoopGo64 run n iterations of 12 independent
// multiply-adds held in registers.
func fmaLoopGo32(n int, m, s float32) float32 {
	var a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 float32
	for range n {
		a0, a1, a2, a3 = a0*m+s, a1*m+s, a2*m+s, a3*m+s
		a4, a5, a6, a7 = a4*m+s, a5*m+s, a6*m+s, a7*m+s
		a8, a9, a10, a11 = a8*m+s, a9*m+s, a10*m+s, a11*m+s
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11
}

func fmaLoopGo64(n int, m, s float64) float64 {
	var a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 float64
	for range n {
		a0, a1, a2, a3 = math.FMA(a0, m, s), math.FMA(a1, m, s), math.FMA(a2, m, s), math.FMA(a3, m, s)
		a4, a5, a6, a7 = math.FMA(a4, m, s), math.FMA(a5, m, s), math.FMA(a6, m, s), math.FMA(a7, m, s)
		a8, a9, a10, a11 = math.FMA(a8, m, s), math.FMA(a9, m, s), math.FMA(a10, m, s), math.FMA(a11, m, s)
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11
}

// triadGo is the portable triad.
func triadGo(a, b, c []float32, s float32) {
	b, c = b[:len(a)], c[:len(a)]
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
}
