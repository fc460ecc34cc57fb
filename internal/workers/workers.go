package workers

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// SpinTime is how long an idle worker polls for a new job before it
// blocks. Polling keeps one core busy for that long after the last
// parallel kernel; blocking costs the next job the wake-up of a thread.
const SpinTime = 500 * time.Microsecond

// maxWorkers bounds the pool whatever the callers ask for.
const maxWorkers = 256

// job is one call of Run: parts [0, n) of body, claimed one at a time.
type job struct {
	body     func(k int)
	n        int64
	next     atomic.Int64 // the next part to claim
	left     atomic.Int64 // parts not yet finished
	panicked atomic.Pointer[panicValue]

	mu     sync.Mutex    // guards waiter and done
	waiter chan struct{} // closed when the last part ends, if the caller blocks
	done   bool          // the last part has ended
}

// panicValue holds the first panic of a job's parts.
type panicValue struct{ v any }

var (
	// queue holds posted jobs, one entry per worker asked to help; an
	// entry may outlive its job (every part claimed), and then is dropped.
	queue   = make(chan *job, 4*maxWorkers)
	started atomic.Int64 // workers started
	startMu sync.Mutex   // serializes only the starting of workers
)

// Run calls body(k) once for each k in [0, n), spread over the calling
// goroutine and at most n-1 pool workers, and returns when every call has
// returned. The calls may run in any order and concurrently; body must be
// safe for that. If calls panic, every other call still runs and Run then
// panics in the caller with the first panic's value.
func Run(n int, body func(k int)) {
	if n <= 1 {
		if n == 1 {
			body(0)
		}
		return
	}
	j := &job{body: body, n: int64(n)}
	j.left.Store(int64(n))
	helpers := min(n-1, maxWorkers)
	ensure(helpers)
post:
	for range helpers {
		select {
		case queue <- j:
		default:
			break post // the queue is full: the caller does the rest
		}
	}
	j.help()
	j.wait()
	if p := j.panicked.Load(); p != nil {
		panic(p.v)
	}
}

// wait returns when every part of j has ended. Every part is claimed by
// then, and the ones still running run on workers that are awake, so
// their end is usually near: wait polls for SpinTime before it blocks.
func (j *job) wait() {
	start := time.Now()
	for i := 1; j.left.Load() > 0; i++ {
		if i%32 != 0 {
			continue
		}
		if time.Since(start) > SpinTime {
			j.mu.Lock()
			if j.done {
				j.mu.Unlock()
				return
			}
			j.waiter = make(chan struct{})
			j.mu.Unlock()
			<-j.waiter
			return
		}
		runtime.Gosched()
	}
}

// help claims and runs parts of j until none is left to claim.
func (j *job) help() {
	for {
		k := j.next.Add(1) - 1
		if k >= j.n {
			return
		}
		j.run(int(k))
	}
}

// run runs part k, recording a panic instead of unwinding the worker.
func (j *job) run(k int) {
	defer func() {
		if r := recover(); r != nil {
			j.panicked.CompareAndSwap(nil, &panicValue{r})
		}
		if j.left.Add(-1) == 0 {
			j.mu.Lock()
			j.done = true
			if j.waiter != nil {
				close(j.waiter)
			}
			j.mu.Unlock()
		}
	}()
	j.body(k)
}

// ensure starts workers until at least n run (at most maxWorkers).
func ensure(n int) {
	if started.Load() >= int64(n) {
		return
	}
	startMu.Lock()
	defer startMu.Unlock()
	for started.Load() < int64(n) {
		started.Add(1)
		go work()
	}
}

// work is a worker's loop: run posted jobs; when none is posted, poll for
// SpinTime, yielding the processor between polls, then block.
func work() {
	for {
		next().help()
	}
}

// next returns the next posted job, polling for SpinTime before blocking.
func next() *job {
	start := time.Now()
	for i := 1; ; i++ {
		select {
		case j := <-queue:
			return j
		default:
		}
		if i%32 == 0 {
			if time.Since(start) > SpinTime {
				return <-queue
			}
			runtime.Gosched()
		}
	}
}
