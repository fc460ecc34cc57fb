package ddp

import (
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
)

// The communication of a data-parallel step as primitives, so that the
// same code runs eagerly (each equation evaluated as it is bound) and
// under transforms.Compile (recorded, and run by the program in the
// order traced). They are effects (interp.Prim.Effect): no pass folds,
// merges or drops them. They have no derivative or batching rule: they
// act on gradients, after differentiation.

// site is one all-reduce site of a traced step: its communicator and
// reduction, and the requests started there and not yet waited for
// (first in, first out: a program runs its start before its wait, and
// the members of a communicator run steps one at a time).
type site struct {
	comm dist.Communicator
	op   dist.ReduceOp
	// wire, when valid, is the dtype a float operand wider than it is
	// reduced in (CommDType); the result comes back in the operand's.
	wire peel.DType
	mu   sync.Mutex
	reqs []dist.Request
}

func (s *site) String() string {
	if s.wire.IsValid() {
		return "allreduce(" + s.op.String() + ", as " + s.wire.String() + ")"
	}
	return "allreduce(" + s.op.String() + ")"
}

// narrows reports whether the site reduces an operand of dtype dt in
// its wire dtype.
func (s *site) narrows(dt peel.DType) bool {
	return s.wire.IsValid() && dt.IsFloat() && dt.Size() > s.wire.Size()
}

func (s *site) push(r dist.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func (s *site) pop() dist.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		interp.Panicf("ddp: an all-reduce is waited for but was not started (a step's program ran its waits without its starts)")
	}
	r := s.reqs[0]
	s.reqs = s.reqs[1:]
	return r
}

// waitParams are allreduce_wait's: the site, and the result's type.
type waitParams struct {
	site *site
	aval interp.Aval
}

func (p waitParams) String() string { return p.site.String() + " -> " + p.aval.String() }

// startPrim concatenates its operands (a bucket's gradients, flattened)
// into a vector of its own, starts its all-reduce in place
// (Communicator.IAllReduceInPlace) and returns a token, an i64 scalar,
// that its wait takes. It borrows its operands (the concatenation is
// the copy it keeps), so a compiled program does not copy them first.
var startPrim = interp.NewPrim("allreduce_start", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{{DType: peel.Int64}}
})

// waitPrim waits for the all-reduce its token started and returns the
// result.
var waitPrim = interp.NewPrim("allreduce_wait", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{params.(waitParams).aval}
})

func init() {
	startPrim.Effect = true
	startPrim.BorrowsOperands = true
	startPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		s := params.(*site)
		flat := make([]*peel.Tensor, len(args))
		for i, a := range args {
			flat[i] = a.Reshape(-1)
		}
		// The concatenation is this bucket's own, so the engine may
		// reduce in it.
		cat := peel.Concat(flat, 0)
		if s.narrows(cat.DType()) {
			cat = peel.AsType(cat, s.wire)
		}
		s.push(s.comm.IAllReduceInPlace(cat, s.op))
		return []*interp.Tensor{peel.Scalar(int64(0))}
	}
	waitPrim.Effect = true
	waitPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		p := params.(waitParams)
		r := p.site.pop().Wait()
		if r.DType() != p.aval.DType {
			r = peel.AsType(r, p.aval.DType) // back from the wire dtype
		}
		return []*interp.Tensor{r}
	}
}

// started is an all-reduce started at a site: wait gives its result.
type started struct {
	site  *site
	token *peel.Tensor
	aval  interp.Aval
}

// start starts the all-reduce of the concatenation of the flattened xs
// over comm (one dtype); eagerly it is under way when start returns,
// traced it is an equation of the program.
func start(comm dist.Communicator, op dist.ReduceOp, xs ...*peel.Tensor) started {
	return startAs(comm, op, peel.DType(0), xs...)
}

// startAs is start reducing in the wire dtype when it is valid and the
// operands' is a wider float (CommDType).
func startAs(comm dist.Communicator, op dist.ReduceOp, wire peel.DType, xs ...*peel.Tensor) started {
	s := &site{comm: comm, op: op, wire: wire}
	n := 0
	for _, x := range xs {
		n += x.Size()
	}
	return started{s, interp.Bind1(startPrim, s, xs...), interp.Aval{Shape: []int{n}, DType: xs[0].DType()}}
}

// wait returns the all-reduce's result.
func (st started) wait() *peel.Tensor {
	return interp.Bind1(waitPrim, waitParams{st.site, st.aval}, st.token)
}
