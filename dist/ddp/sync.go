package ddp

import (
	"math"
	"sync/atomic"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/tree"
)

// Broadcast returns the parameters p of member root of comm on every
// member (Communicator.Broadcast of each leaf), as torch's
// DistributedDataParallel does with rank 0's at construction: members
// that initialized their parameters differently (another seed) then
// start training in sync. Every member calls it with parameters of the
// same structure, shapes and dtypes. It panics with *peel.Error when
// comm is nil or a collective fails.
func Broadcast[P any](p P, comm dist.Communicator, root int) P {
	defer peel.Annotate("ddp.Broadcast")
	if comm == nil {
		interp.Panicf("ddp.Broadcast: the communicator is nil")
	}
	return tree.Map(func(x *peel.Tensor) *peel.Tensor { return comm.Broadcast(x, root) }, p)
}

// syncCheck makes a data-parallel function check, at its first call on
// concrete parameters, that every member starts from the same ones.
type syncCheck struct{ done atomic.Bool }

// check compares the members' parameters at the first call: each
// member's fingerprint of each leaf (its sum, its sum of squares and a
// position-weighted sum, in float64) is all-gathered, so every member
// sees every other's and all raise the same *peel.Error, naming the
// first leaf and member that differ from member 0's, instead of training
// apart (the gradients are averaged, so members that start apart stay
// apart). A call with traced parameters (under Compile) checks nothing.
func (c *syncCheck) check(op string, comm dist.Communicator, p any) {
	if comm.Size() == 1 || c.done.Load() {
		return
	}
	leaves := tree.Leaves(p)
	for _, l := range leaves {
		if !l.IsConcrete() {
			return
		}
	}
	c.done.Store(true)
	if len(leaves) == 0 {
		return
	}
	fp := make([]*peel.Tensor, len(leaves))
	for i, l := range leaves {
		x := peel.Reshape(peel.AsType(l, peel.Float64), -1)
		w := peel.Arange(peel.Float64, 1, float64(x.Size())+1, 1)
		fp[i] = peel.Stack([]*peel.Tensor{peel.Sum(x), peel.Sum(peel.Mul(x, x)), peel.Sum(peel.Mul(x, w))}, 0)
	}
	all := comm.AllGather(peel.Stack(fp, 0)).Float64s() // [members, leaves, 3]
	per := 3 * len(leaves)
	paths := tree.Paths(p)
	for m := 1; m < comm.Size(); m++ {
		for j := 0; j < per; j++ {
			if a, b := all[j], all[m*per+j]; math.Float64bits(a) != math.Float64bits(b) && !(math.IsNaN(a) && math.IsNaN(b)) {
				e := interp.Errorf("the members' parameters differ at the first step (leaf %s: member %d's differ from member 0's), so they would train apart: start every member from the same parameters, ddp.Broadcast(params, comm, 0), or the same seed", paths[j/3], m)
				e.Ops = []string{op}
				panic(e)
			}
		}
	}
}
