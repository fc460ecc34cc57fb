package dist

import (
	"fmt"
	"slices"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// ReduceOp is the reduction of an AllReduce.
type ReduceOp int

// The reductions.
const (
	Sum ReduceOp = iota
	Max
	Min
)

func (op ReduceOp) String() string { return [...]string{"sum", "max", "min"}[op] }

// Communicator connects the devices along one axis of a mesh: each
// method is a collective, called by every member with its own operand,
// that returns this member's result. Results are deterministic: a
// reduction combines the members' values in rank order. The in-process
// engine (NewMesh) implements it over shared memory; the MPI one (build
// tag mpi) over MPI's communicators, so a ShardMap program runs on
// either unchanged.
//
// A method panics with *peel.Error when the members disagree (shapes,
// dtypes, the collective they call), when another member failed (its
// error is named), or when a member finished without calling it.
type Communicator interface {
	// Rank is this member's index along the axis, Size the number of
	// members.
	Rank() int
	Size() int
	// AllReduce returns the elementwise reduction of x over the members.
	AllReduce(x *peel.Tensor, op ReduceOp) *peel.Tensor
	// AllGather returns the members' x stacked along a new leading axis.
	AllGather(x *peel.Tensor) *peel.Tensor
	// ReduceScatter takes x with a leading axis of Size blocks and
	// returns the sum over the members of block Rank.
	ReduceScatter(x *peel.Tensor) *peel.Tensor
	// AllToAll takes x with a leading axis of Size blocks, sends block j
	// to member j, and returns the blocks received, stacked along a new
	// leading axis in their senders' order.
	AllToAll(x *peel.Tensor) *peel.Tensor
	// Permute sends x to dst for each pair {src, dst} whose src is this
	// member and returns what this member receives, or zeros of x's
	// shape when no pair ends here.
	Permute(x *peel.Tensor, perm [][2]int) *peel.Tensor
	// Barrier returns when every member has called it.
	Barrier()
	// Broadcast returns member root's x to every member (MPI_Bcast):
	// every member passes an x of root's shape and dtype (its values are
	// not read but at root), as torch DDP puts rank 0's parameters on
	// every rank before training.
	Broadcast(x *peel.Tensor, root int) *peel.Tensor
	// IAllReduce starts AllReduce and returns its Request, whose Wait
	// gives the result: the caller computes while the reduction runs
	// (MPI_Iallreduce). Members start their collectives, blocking or not,
	// in the same order. x is read while the reduction runs: it must not
	// be written until Wait returns.
	IAllReduce(x *peel.Tensor, op ReduceOp) Request
	// IAllReduceInPlace is IAllReduce for a tensor the caller gives up:
	// the engine may reduce in x's own memory (the MPI engine does, with
	// MPI_IN_PLACE, when x is a whole tensor and no view; the result is
	// then x itself), which saves allocating the result. x must be the
	// caller's alone, and is not to be used again but through Wait's
	// result.
	IAllReduceInPlace(x *peel.Tensor, op ReduceOp) Request
	// IAllGather starts AllGather and returns its Request
	// (MPI_Iallgather): a fully sharded model gathers the next part's
	// parameters while it computes with this one. x is read while the
	// gather runs: it must not be written until Wait returns.
	IAllGather(x *peel.Tensor) Request
}

// Overlapping reports whether comm's non-blocking collectives
// (IAllReduce, IAllGather) proceed while the caller computes, so that
// one started ahead hides its communication: over MPI with a progress
// goroutine (a core to spare beyond one per local process, or
// PEEL_MPI_PROGRESS=thread). The in-process engine completes them when
// they start, and MPI without a core to spare defers them to their
// Wait: false. A Communicator of another implementation is taken to
// overlap.
func Overlapping(comm Communicator) bool {
	if o, ok := comm.(interface{ overlapping() bool }); ok {
		return o.overlapping()
	}
	return true
}

func (c *inproc) overlapping() bool { return false }

// Request is a started non-blocking collective.
type Request interface {
	// Wait returns the collective's result once it has completed (at
	// once if it has); it may be called more than once. It panics with
	// *peel.Error as the blocking collective does.
	Wait() *peel.Tensor
}

// doneRequest is a Request that completed when it started.
type doneRequest struct{ r *peel.Tensor }

func (d doneRequest) Wait() *peel.Tensor { return d.r }

// group is the shared state of one in-process communicator: the
// members' deposits of the current round. Slots are double-buffered by
// the round's parity, so a member that leaves a round early and deposits
// for the next cannot overwrite a value a slower member still reads (it
// cannot get two rounds ahead: the next round waits for everyone).
type group struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	slots   [2][]deposit
	arrived int
	round   int
	err     error
	done    []bool // members that finished their function
	name    string // the mesh axis, for errors
}

type deposit struct {
	what string // the collective, to detect mismatched calls
	x    *peel.Tensor
}

func newGroup(n int, name string) *group {
	g := &group{n: n, name: name, done: make([]bool, n)}
	g.slots[0], g.slots[1] = make([]deposit, n), make([]deposit, n)
	g.cond = sync.NewCond(&g.mu)
	return g
}

// fail makes every member waiting in g, now or later, fail with err.
func (g *group) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
	g.cond.Broadcast()
}

// finish records that member rank's function returned: a collective it
// did not call can never complete.
func (g *group) finish(rank int) {
	g.mu.Lock()
	g.done[rank] = true
	g.mu.Unlock()
	g.cond.Broadcast()
}

// exchange deposits x for the collective what and returns every
// member's deposit once all have made theirs.
func (g *group) exchange(rank int, what string, x *peel.Tensor) []deposit {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		panic(g.err)
	}
	r := g.round
	slots := g.slots[r%2]
	slots[rank] = deposit{what, x}
	g.arrived++
	if g.arrived == g.n {
		g.arrived = 0
		g.round++
		g.cond.Broadcast()
	}
	for g.round == r {
		if g.err != nil {
			panic(g.err)
		}
		for k, d := range g.done {
			if d {
				panic(interp.Errorf("%s over mesh axis %q: device %d (rank %d along the axis) finished without calling it, while rank %d waits (the devices' programs diverge)", what, g.name, k, k, rank))
			}
		}
		g.cond.Wait()
	}
	out := slices.Clone(slots)
	for k, d := range out {
		if d.what != what {
			panic(interp.Errorf("mesh axis %q: rank %d called %s while rank %d called %s (the devices' programs diverge)", g.name, rank, what, k, d.what))
		}
		if d.x != nil && (!slices.Equal(d.x.Shape(), x.Shape()) || d.x.DType() != x.DType()) {
			panic(interp.Errorf("%s over mesh axis %q: rank %d has %s but rank %d has %s (the devices' values must agree in shape and dtype)", what, g.name, rank, x.TypeString(), k, d.x.TypeString()))
		}
	}
	return out
}

// inproc is one member of an in-process group.
type inproc struct {
	g    *group
	rank int
}

func (c *inproc) Rank() int { return c.rank }
func (c *inproc) Size() int { return c.g.n }

func (c *inproc) AllReduce(x *peel.Tensor, op ReduceOp) *peel.Tensor {
	ds := c.g.exchange(c.rank, "AllReduce("+op.String()+")", x)
	r := ds[0].x
	for _, d := range ds[1:] {
		switch op {
		case Sum:
			r = peel.Add(r, d.x)
		case Max:
			r = peel.Maximum(r, d.x)
		case Min:
			r = peel.Minimum(r, d.x)
		}
	}
	if len(ds) == 1 {
		r = peel.Clone(r)
	}
	return r
}

func (c *inproc) AllGather(x *peel.Tensor) *peel.Tensor { return c.allGather("AllGather", x) }

func (c *inproc) allGather(what string, x *peel.Tensor) *peel.Tensor {
	ds := c.g.exchange(c.rank, what, x)
	xs := make([]*peel.Tensor, len(ds))
	for k, d := range ds {
		xs[k] = d.x
	}
	return peel.Stack(xs, 0)
}

func (c *inproc) ReduceScatter(x *peel.Tensor) *peel.Tensor {
	c.checkBlocks("ReduceScatter", x)
	ds := c.g.exchange(c.rank, "ReduceScatter", x)
	r := peel.Select(ds[0].x, 0, c.rank)
	for _, d := range ds[1:] {
		r = peel.Add(r, peel.Select(d.x, 0, c.rank))
	}
	return peel.Clone(r)
}

func (c *inproc) AllToAll(x *peel.Tensor) *peel.Tensor {
	c.checkBlocks("AllToAll", x)
	ds := c.g.exchange(c.rank, "AllToAll", x)
	xs := make([]*peel.Tensor, len(ds))
	for k, d := range ds {
		xs[k] = peel.Select(d.x, 0, c.rank)
	}
	return peel.Stack(xs, 0)
}

func (c *inproc) Permute(x *peel.Tensor, perm [][2]int) *peel.Tensor {
	ds := c.g.exchange(c.rank, fmt.Sprintf("Permute(%v)", perm), x)
	for _, p := range perm {
		if p[1] == c.rank {
			return peel.Clone(ds[p[0]].x)
		}
	}
	return peel.ZerosLike(x)
}

func (c *inproc) Barrier() { c.g.exchange(c.rank, "Barrier", nil) }

func (c *inproc) Broadcast(x *peel.Tensor, root int) *peel.Tensor {
	checkRoot(root, c.g.n)
	ds := c.g.exchange(c.rank, fmt.Sprintf("Broadcast(root %d)", root), x)
	return peel.Clone(ds[root].x)
}

// checkRoot panics when root is not a member of a communicator of n.
func checkRoot(root, n int) {
	if root < 0 || root >= n {
		interp.Panicf("Broadcast from member %d of a communicator of %d", root, n)
	}
}

// IAllReduce of the in-process engine completes at once: the devices
// share memory, so the rendezvous is the whole cost and there is
// nothing to overlap.
func (c *inproc) IAllReduce(x *peel.Tensor, op ReduceOp) Request {
	return doneRequest{c.AllReduce(x, op)}
}

// IAllReduceInPlace of the in-process engine is IAllReduce: the other
// devices read x during the rendezvous.
func (c *inproc) IAllReduceInPlace(x *peel.Tensor, op ReduceOp) Request {
	return c.IAllReduce(x, op)
}

// IAllGather of the in-process engine completes at once, as IAllReduce
// does. It is a collective of its own: a member that calls it while
// another calls AllGather is told that their programs diverge, as over
// MPI.
func (c *inproc) IAllGather(x *peel.Tensor) Request {
	return doneRequest{c.allGather("IAllGather", x)}
}

func (c *inproc) checkBlocks(what string, x *peel.Tensor) {
	if x.Rank() == 0 || x.Shape()[0] != c.g.n {
		interp.Panicf("%s over mesh axis %q: the operand %s needs a leading axis of %d blocks", what, c.g.name, x.TypeString(), c.g.n)
	}
}
