//go:build mpi && cgo

package dist

import (
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// The MPI engine's defenses against faults and bad input: the watchdog
// that aborts the job when a collective does not complete within the
// timeout, the guard that keeps processes whose operands disagree in
// size out of MPI (where a mismatch can write past a buffer), and the
// check mode that names the disagreeing ranks.

// distTimeout is the watchdog's timeout, 0 when it is off.
func distTimeout() time.Duration {
	loadFaultEnv()
	return time.Duration(faultTimeout.Load())
}

// checking reports whether the check mode is on.
func checking() bool {
	loadFaultEnv()
	return faultCheck.Load()
}

// collCode names a collective in a call record.
type collCode int64

const (
	cAllReduce collCode = iota + 1
	cAllGather
	cReduceScatter
	cAllToAll
	cPermute
	cBarrier
	cSplit
	cIAllReduce
	cBroadcast
	cIAllGather
)

var (
	collNames       = [...]string{"?", "AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Permute", "Barrier", "Split", "IAllReduce", "Broadcast", "IAllGather"}
	allReduceNames  = [...]string{"AllReduce(sum)", "AllReduce(max)", "AllReduce(min)"}
	iallReduceNames = [...]string{"IAllReduce(sum)", "IAllReduce(max)", "IAllReduce(min)"}
	waitNames       = [...]string{"IAllReduce(sum) Wait", "IAllReduce(max) Wait", "IAllReduce(min) Wait"}
)

// call describes one collective call of this process: which, its
// reduction, its operand's dtype and shape (none for Barrier and Split),
// the permutation of Permute, and whether it is a Request's Wait.
type call struct {
	c     collCode
	op    ReduceOp
	hasX  bool
	dt    peel.DType
	shape []int
	perm  [][2]int
	wait  bool
}

func callOf(c collCode, op ReduceOp, x *peel.Tensor) call {
	k := call{c: c, op: op}
	if x != nil {
		k.hasX, k.dt, k.shape = true, x.DType(), x.Shape()
	}
	return k
}

// name is the collective as errors and the watchdog name it:
// "AllReduce(sum)", "AllGather".
func (k call) name() string { return codeName(k.c, k.op, k.wait) }

func codeName(c collCode, op ReduceOp, wait bool) string {
	ok := op >= 0 && int(op) < len(allReduceNames)
	switch {
	case c == cAllReduce && ok:
		return allReduceNames[op]
	case c == cIAllReduce && ok && wait:
		return waitNames[op]
	case c == cIAllReduce && ok:
		return iallReduceNames[op]
	case c == cIAllGather && wait:
		return "IAllGather Wait"
	case c > 0 && int(c) < len(collNames):
		return collNames[c]
	}
	return "collective " + strconv.Itoa(int(c))
}

// operand formats the operand's type, "f32[3,4]", or says there is none.
func (k call) operand() string {
	if !k.hasX {
		return "no operand"
	}
	return interp.Aval{Shape: k.shape, DType: k.dt}.String()
}

// The watchdog: a table of the collectives in flight in this process,
// with their start times, scanned by one goroutine. A call costs a
// mutex and a clock read on entry and on exit, no allocation once the
// table has grown to the number of concurrent calls.
var watch watchdog

type watchdog struct {
	mu      sync.Mutex
	calls   []inflight
	free    []int
	started bool
}

type inflight struct {
	call
	m     *mpiComm
	start time.Time
	live  bool
}

// begin records that this process entered the collective k on m and
// returns its slot for end, or -1 when the watchdog is off.
func (w *watchdog) begin(m *mpiComm, k call) int {
	if distTimeout() == 0 {
		return -1
	}
	e := inflight{call: k, m: m, start: time.Now(), live: true}
	w.mu.Lock()
	var i int
	if n := len(w.free); n > 0 {
		i = w.free[n-1]
		w.free = w.free[:n-1]
		w.calls[i] = e
	} else {
		i = len(w.calls)
		w.calls = append(w.calls, e)
	}
	if !w.started {
		w.started = true
		go w.loop()
	}
	w.mu.Unlock()
	return i
}

// end records that the call in slot i (from begin) returned or
// panicked.
func (w *watchdog) end(i int) {
	if i < 0 {
		return
	}
	w.mu.Lock()
	w.calls[i] = inflight{}
	w.free = append(w.free, i)
	w.mu.Unlock()
}

// loop scans the table a few times per timeout (at least every second)
// and aborts the job when a call has waited longer than the timeout: the
// other processes are dead or stuck, and MPI offers no way to cancel a
// collective.
func (w *watchdog) loop() {
	for {
		d := distTimeout()
		time.Sleep(min(max(d/10, 10*time.Millisecond), time.Second))
		if d = distTimeout(); d == 0 {
			continue
		}
		w.mu.Lock()
		var late *inflight
		for i := range w.calls {
			if e := &w.calls[i]; e.live && time.Since(e.start) > d && (late == nil || e.start.Before(late.start)) {
				late = e
			}
		}
		if late == nil {
			w.mu.Unlock()
			continue
		}
		e := *late
		w.mu.Unlock()
		world := World()
		fmt.Fprintf(os.Stderr, "dist: watchdog: rank %d of %d: %s of %s (rank %d of a communicator of %d) has not completed after %v (timeout %v: PEEL_DIST_TIMEOUT or dist.SetTimeout); another process died or stopped calling collectives\n",
			world.Rank(), world.Size(), e.name(), e.operand(), e.m.rank, e.m.size, time.Since(e.start).Round(time.Millisecond), d)
		Abort(1)
	}
}

// agree makes sure every member of m is about to make the same call
// before it reaches MPI, or panics on every member with *peel.Error. In
// check mode the members all-gather records of their calls and the
// error names the disagreeing ranks; otherwise a guard all-reduces (max)
// the call's collective, reduction, dtype and element count with their
// negations, so that a member with an operand of another size, which
// MPI may write past a buffer for, stops with an error on every member.
// A job of one process has nothing to agree on. Reductions deferred on m
// (IAllReduce without a progress goroutine) run first, in start order,
// so that every process makes the same MPI calls in the same order.
func (m *mpiComm) agree(k call) {
	if m.size == 1 {
		return
	}
	m.flush(nil) // the reductions started before this call run first
	m.agreeNow(k)
}

// agreeNow is agree without running the deferred reductions first (a
// deferred reduction's own guard).
func (m *mpiComm) agreeNow(k call) {
	if m.size == 1 {
		return
	}
	if checking() {
		m.checkCall(k)
		return
	}
	var v, out [8]int64
	v[0], v[1] = int64(k.c), int64(k.op)
	if k.hasX {
		v[2], v[3] = int64(k.dt)+1, int64(elements(k.shape))
	}
	for i := range 4 {
		v[4+i] = -v[i]
	}
	m.allReduceMaxInt64(v[:], out[:])
	for i, what := range [...]string{"call different collectives", "pass different reductions", "pass different dtypes", "pass operands of different sizes"} {
		if lo, hi := -out[4+i], out[i]; lo != hi {
			meshErrorf("dist (MPI)", "%s: the processes %s (this process, rank %d of %d, has %s; PEEL_DIST_CHECK=1 names the ranks)", k.name(), what, m.rank, m.size, k.operand())
		}
	}
}

// The check mode's record of a call: fixed size, so one MPI_Allgather
// moves them all.
const (
	recDims = 8               // dimensions recorded one by one
	recLen  = 6 + recDims + 2 // code, op, size, dtype+1, ndim, dims…, hash of further dims, count, permutation hash
)

func (m *mpiComm) record(k call) [recLen]int64 {
	var r [recLen]int64
	r[0], r[1], r[2] = int64(k.c), int64(k.op), int64(m.size)
	if k.hasX {
		r[3], r[4] = int64(k.dt)+1, int64(len(k.shape))
		h := fnv.New64a()
		for i, d := range k.shape {
			if i < recDims {
				r[5+i] = int64(d)
			} else {
				fmt.Fprint(h, d, ",")
			}
		}
		r[5+recDims] = int64(h.Sum64())
		r[6+recDims] = int64(elements(k.shape))
	}
	if k.c == cPermute {
		h := fnv.New64a()
		for _, p := range k.perm {
			fmt.Fprint(h, p[0], ">", p[1], ";")
		}
		r[7+recDims] = int64(h.Sum64())
	}
	return r
}

// recordType formats a record's operand as "f32[3,4]", dimensions past
// recDims elided.
func recordType(r []int64) string {
	if r[3] == 0 {
		return "no operand"
	}
	nd := int(r[4])
	shape := make([]int, min(nd, recDims))
	for i := range shape {
		shape[i] = int(r[5+i])
	}
	s := interp.Aval{Shape: shape, DType: peel.DType(r[3] - 1)}.String()
	if nd > recDims {
		s = strings.TrimSuffix(s, "]") + ",…] (" + strconv.FormatInt(r[6+recDims], 10) + " elements)"
	}
	return s
}

// checkCall all-gathers the members' records of their calls and panics
// on every member with *peel.Error naming rank 0 and the first rank
// whose call differs from it.
func (m *mpiComm) checkCall(k call) {
	mine := m.record(k)
	all := make([]int64, recLen*m.size)
	m.allGatherInt64(mine[:], all)
	r0 := all[:recLen]
	for j := 1; j < m.size; j++ {
		rj := all[j*recLen : (j+1)*recLen]
		n0, nj := codeName(collCode(r0[0]), ReduceOp(r0[1]), false), codeName(collCode(rj[0]), ReduceOp(rj[1]), false)
		switch {
		case r0[0] != rj[0] || r0[1] != rj[1]:
			meshErrorf("dist (MPI)", "rank 0 calls %s but rank %d calls %s (the processes' programs diverge)", n0, j, nj)
		case r0[2] != rj[2]:
			meshErrorf("dist (MPI)", "%s: rank 0 is in a communicator of %d but rank %d in one of %d", n0, r0[2], j, rj[2])
		case !slices.Equal(r0[3:7+recDims], rj[3:7+recDims]):
			meshErrorf("dist (MPI)", "%s: rank 0 has %s but rank %d has %s (the processes' operands must agree in shape and dtype)", n0, recordType(r0), j, recordType(rj))
		case r0[7+recDims] != rj[7+recDims]:
			meshErrorf("dist (MPI)", "%s: rank 0 and rank %d pass different permutations (rank %d passes %v)", n0, j, m.rank, k.perm)
		}
	}
}

// elements is the number of elements of shape.
func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
