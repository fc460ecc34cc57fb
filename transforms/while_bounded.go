package transforms

import (
	"math"
	"slices"

	"github.com/peel-ml/peel"
)

// Bounded while loops (MaxTrips). WhileLoop with MaxTrips(n) adds a trip
// counter to the carry, which the predicate reads (cond(c) and trips <
// n) and the body increments, and marks the while with its bound. Its
// eager, staged, compiled and batched forms are the while's: the loop
// stops when the predicate is false, after n steps at most. Its JVP rule
// differentiates another formulation of the same loop, whose steps are
// known in advance (whileBounded): ⌈n/k⌉ chunks of k = ⌈√n⌉ steps, a
// Scan over the chunks with StepRemat(NothingSaveable) whose step is a
// Scan over a chunk's steps, each chunk and each step under a Cond on
// the predicate, so that once it is false the carry is kept and no body
// runs (unbatched; under Vmap a Cond on a batched predicate runs both
// branches and selects, lane by lane). Reverse mode transposes Scan and
// Cond: the backward pass keeps the ⌈n/k⌉ carries that start the chunks
// (the outer scan saves nothing else of a step), and recomputes each
// chunk, its k steps' residuals, when it reaches it, so a gradient stores
// O(√n) carries, not n, for about one more forward pass of arithmetic.
// (A Checkpoint would not do for the chunk: inside a Scan's step it is
// inlined, its policy the step's.)

// WhileOption configures WhileLoop: MaxTrips.
type WhileOption interface{ applyWhile(*whileConfig) }

type whileConfig struct{ maxTrips int }

type whileOption func(*whileConfig)

func (o whileOption) applyWhile(c *whileConfig) { o(c) }

// MaxTrips bounds a WhileLoop by n steps: the loop stops after n trips
// even if cond still holds (as if cond had turned false, Equinox's
// max_steps), and with the bound known reverse mode differentiates it
// (Grad, VJP, Jacrev, Hessian), storing O(√n) carries by recomputing
// chunks of √n steps in the backward pass: each chunk is run once more
// there, and each step runs under a Cond on the predicate (a gradient of
// n steps took 3.7–3.9 times a Scan's of n steps in docs/performance.md,
// for √n carries stored instead of n). It panics with *peel.Error when
// n < 1.
func MaxTrips(n int) WhileOption {
	if n < 1 {
		treeErrorf("transforms.MaxTrips", "a loop bound must be at least 1 trip, got %d", n)
	}
	return whileOption(func(c *whileConfig) { c.maxTrips = n })
}

// boundedCarry is a bounded loop's carry: the user's, under the user's
// own paths, and the trips made so far.
type boundedCarry[C any] struct {
	C     C            `peeltree:""`
	Trips *peel.Tensor `peeltree:"(trips)"`
}

// boundedWhile is WhileLoop with MaxTrips(n).
func boundedWhile[C any](op string, cond func(C) *peel.Tensor, body func(C) C, init C, n int) C {
	bc := func(s boundedCarry[C]) *peel.Tensor {
		return peel.LogicalAnd(predicate(op, cond(s.C)), peel.Less(s.Trips, int64(n)))
	}
	bb := func(s boundedCarry[C]) boundedCarry[C] {
		return boundedCarry[C]{C: body(s.C), Trips: peel.Add(s.Trips, int64(1))}
	}
	out := whileLoop(op, bc, bb, boundedCarry[C]{C: init, Trips: peel.Scalar(int64(0))}, n)
	return out.C
}

// whileBounded computes w, a loop that stops within w.maxTrips steps, on
// its operands in (carries, then captured tensors) by fixed loops (see
// the top of the file).
func whileBounded(w *whileParams, in []*tensor) []*tensor {
	nC, n := w.nCarry, w.maxTrips
	consts := in[nC:]
	k := int(math.Ceil(math.Sqrt(float64(n))))
	chunks := (n + k - 1) / k
	pred := func(c []*tensor) *tensor { return evalInlined(w.cond, slices.Concat(c, consts), true)[0] }
	step := func(c []*tensor) []*tensor { return evalInlined(w.body, slices.Concat(c, consts), true) }
	keep := func(c []*tensor) []*tensor { return c }
	chunk := func(c []*tensor) []*tensor {
		c, _ = Scan(func(c []*tensor, _ struct{}) ([]*tensor, struct{}) {
			return Cond(pred(c), step, keep, c), struct{}{}
		}, c, struct{}{}, Length(k))
		return c
	}
	out, _ := Scan(func(c []*tensor, _ struct{}) ([]*tensor, struct{}) {
		return Cond(pred(c), chunk, keep, c), struct{}{}
	}, slices.Clone(in[:nC]), struct{}{}, Length(chunks), StepRemat(NothingSaveable))
	return out
}
