package transforms

import (
	"strconv"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Loops. Scan traces its body once, on the types of the carry leaves and
// of one slice of the xs leaves, into a graph (closure-converted as a
// checkpoint is: the tensors the body captures become trailing inputs),
// and binds one primitive, scan, on the carry leaves, the stacked xs
// leaves and the captured tensors. The body graph's results are the new
// carry leaves, then the leaves of one y. scan is a composite marked
// Whole:
//
//   - eval (Impl) loops in Go over the length, slicing each xs leaf at
//     the step (peel.Index), running the body graph with Graph.Eval and
//     stacking each y leaf along a new axis 0 (peel.Stack);
//   - staging (MakeGraph, Compile) records it as one equation,
//     scan[length n], which a compiled program runs by its Impl: the
//     loop is not unrolled into the program;
//   - its JVP rule differentiates the loop step by step (jvpFlat of the
//     loop): each step's tangent operations are ordinary equations, so
//     forward mode, and reverse mode (Grad, VJP, Jacrev: linearize runs
//     the primals and stages the tangents), work eagerly and under
//     traces. The current state: a derivative unrolls the steps (the
//     linear graph, and a compiled gradient, hold every step's tangent
//     operations). A scan of the body's JVP, with a transposable linear
//     scan for reverse mode (JAX's partial evaluation of scan), is future
//     work;
//   - its batching rule binds scan again with the body vmapped
//     (batchedParams): every carry leaf is batched at 0 (an unbatched
//     initial carry is broadcast first, since the body may make it
//     batched), batched xs leaves have their batch dimension moved to 1
//     so the scanned axis stays 0 (the body sees their slices batched
//     at 0), and the stacked ys come back batched at 1.

// scanParams are the scan primitive's parameters: the body graph (its
// inputs: nCarry carry leaves, nX leaves of one xs slice, then the
// captured tensors; its results: nCarry new carry leaves, then the y
// leaves), the number of steps and the direction.
type scanParams struct {
	body    *interp.Graph
	nCarry  int
	nX      int
	length  int
	reverse bool
	// batched caches the body vmapped by batch layout.
	batched sync.Map // string → *scanParams
}

func (s *scanParams) String() string {
	r := "length " + strconv.Itoa(s.length)
	if s.reverse {
		r += " reverse"
	}
	return r
}

func scanAbstract(params any, in []interp.Aval) []interp.Aval {
	s := params.(*scanParams)
	g := s.body
	if len(in) != len(g.In) {
		panic(interp.Errorf("scan takes %d operands, got %d", len(g.In), len(in)))
	}
	for i, v := range g.In {
		want := v.Aval
		if i >= s.nCarry && i < s.nCarry+s.nX {
			want = stackedAval(s.length, want)
		}
		if !in[i].Equal(want) {
			panic(interp.Errorf("scan's operand %d must be %v, got %v", i, want, in[i]))
		}
	}
	out := outAvals(g)
	for i := s.nCarry; i < len(out); i++ {
		out[i] = stackedAval(s.length, out[i])
	}
	return out
}

// stackedAval is a with a leading axis of size n.
func stackedAval(n int, a interp.Aval) interp.Aval {
	return interp.Aval{Shape: append([]int{n}, a.Shape...), DType: a.DType}
}

// scanRun is the loop: it runs the body length times on args (the carry
// leaves, the stacked xs leaves, the captured tensors) and returns the
// final carry leaves and the stacked ys. It only binds primitives, so it
// runs at any level (eagerly, decomposed by a trace, or under a
// forward-mode level in the JVP rule).
func scanRun(s *scanParams, args []*tensor) []*tensor {
	g := s.body
	nC, nX := s.nCarry, s.nX
	nY := len(g.Out) - nC
	carry := append([]*tensor(nil), args[:nC]...)
	xs := args[nC : nC+nX]
	in := make([]*tensor, len(g.In))
	copy(in[nC+nX:], args[nC+nX:])
	ys := make([][]*tensor, nY)
	for j := range ys {
		ys[j] = make([]*tensor, s.length)
	}
	for k := 0; k < s.length; k++ {
		i := k
		if s.reverse {
			i = s.length - 1 - k
		}
		copy(in, carry)
		for j, x := range xs {
			in[nC+j] = peel.Index(x, i)
		}
		out := g.Eval(in...)
		copy(carry, out[:nC])
		for j := range ys {
			ys[j][i] = out[nC+j]
		}
	}
	res := carry
	for j, y := range ys {
		if s.length == 0 {
			res = append(res, zeros(stackedAval(0, g.Out[nC+j].Aval)))
			continue
		}
		res = append(res, peel.Stack(y, 0))
	}
	return res
}

func scanImpl(params any, args []*tensor) []*tensor {
	defer interp.Decomposing("scan")
	return scanRun(params.(*scanParams), args)
}

// scanPrim is scan.
var scanPrim = func() *interp.Prim {
	p := interp.NewPrim("scan", interp.Pure, scanAbstract)
	p.Whole = true // one equation when staged
	p.Impl = scanImpl
	return p
}()

// scanJVP is scan's forward-mode rule: the loop differentiated step by
// step (see the top of the file).
func scanJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	s := params.(*scanParams)
	return jvpFlat("scan", func(in []*tensor) []*tensor { return scanRun(s, in) }, primals, tangents)
}

// scanBatch is scan's batching rule (see the top of the file).
func scanBatch(size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
	s := params.(*scanParams)
	nC, nX := s.nCarry, s.nX
	ops := make([]*tensor, len(vals))
	bodyDims := make([]int, len(vals))
	avals := make([]*tensor, len(vals)) // placeholders of the body's physical input types
	for i, v := range vals {
		d := dims[i]
		switch {
		case i < nC:
			// Every carry leaf batched at 0.
			switch d {
			case batching.NotMapped:
				bd := make([]int, v.Rank())
				for k := range bd {
					bd[k] = k + 1
				}
				v = interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: append([]int{size}, v.Shape()...), Dims: bd}, v)
			case 0:
			default:
				v = peel.MoveAxis(v, d, 0)
			}
			ops[i], bodyDims[i] = v, 0
			avals[i] = interp.Placeholder(v.Aval())
		case i < nC+nX:
			// The scanned axis stays 0: a batch dimension goes to 1, and
			// the body sees the slices batched at 0.
			bdim := batching.NotMapped
			if d != batching.NotMapped {
				if d != 1 {
					v = peel.MoveAxis(v, d, 1)
				}
				bdim = 0
			}
			ops[i], bodyDims[i] = v, bdim
			avals[i] = interp.Placeholder(interp.Aval{Shape: v.Shape()[1:], DType: v.DType()})
		default:
			ops[i], bodyDims[i] = v, d
			avals[i] = interp.Placeholder(v.Aval())
		}
	}
	bp := batchedParams(&s.batched, "scan", size, avals, bodyDims, func(xs []*tensor) []*tensor { return s.body.Eval(xs...) },
		func(g *interp.Graph) *scanParams {
			return &scanParams{body: g, nCarry: nC, nX: nX, length: s.length, reverse: s.reverse}
		})
	outs := interp.Bind(scanPrim, bp, ops...)
	odims := make([]int, len(outs))
	for i := nC; i < len(outs); i++ {
		odims[i] = 1
	}
	return outs, odims
}

func init() {
	scanPrim.JVP = scanJVP
	batching.Register(scanPrim, scanBatch)
}

// ScanOption configures Scan.
type ScanOption interface{ applyScan(*scanConfig) }

type scanConfig struct {
	reverse bool
	length  int // -1: from xs
}

type scanOptionFunc func(*scanConfig)

func (f scanOptionFunc) applyScan(c *scanConfig) { f(c) }

// Reverse makes Scan iterate from the last slice of xs to the first. The
// ys are still stacked in the order of xs: ys[i] is the y of the step on
// xs[i].
func Reverse() ScanOption { return scanOptionFunc(func(c *scanConfig) { c.reverse = true }) }

// Length sets the number of steps of Scan. It is required when xs has
// no leaves (each step then gets xs itself); otherwise it must equal
// the leading size of xs's leaves.
func Length(n int) ScanOption { return scanOptionFunc(func(c *scanConfig) { c.length = n }) }

// Scan is JAX's lax.scan: it loops f over the leading axis of xs,
// threading a carry,
//
//	carry := init
//	for i := range length {
//		carry, ys[i] = f(carry, xs[i])
//	}
//	return carry, ys
//
// where xs[i] is the tree of the i-th slices (along axis 0) of xs's
// leaves, which must all have the same leading size (the length), and ys
// is the tree of f's y leaves stacked along a new axis 0. With Reverse
// the steps run from i = length-1 down to 0.
//
// f is traced once, on the types of init's leaves and of one slice of
// xs's leaves, and may capture tensors (captured tracers of an enclosing
// transform are differentiated and batched as operands are). It must
// return a carry of init's structure, with leaves of the same shapes
// and dtypes, and a y of the same structure and types at every step (it
// is traced once, so it is). Eagerly the loop runs in Go; under Compile
// and MakeGraph it is one scan equation, not unrolled. Under Vmap the
// body is vmapped once. Derivatives (Grad, JVP, VJP, Jacrev, Jacfwd)
// currently differentiate the loop step by step, so a derivative's
// linear graph (and a compiled gradient) holds every step's tangent
// operations; a staged, transposable scan of the body's derivative is
// future work.
//
// init, xs and the results are trees (see Grad). Scan panics with
// *peel.Error when f is nil, when an xs leaf is a scalar, when the xs
// leaves differ in leading size (naming the leaves) or disagree with
// Length, when xs has no leaves and Length is not given, when Length is
// negative, when f returns nil or a tree with a nil tensor, or when f's
// carry differs from init in structure, shape or dtype (naming the leaf
// path); otherwise it panics as f does.
func Scan[C, X, Y any](f func(carry C, x X) (C, Y), init C, xs X, opts ...ScanOption) (C, Y) {
	const op = "transforms.Scan"
	defer interp.Annotate(op)
	if f == nil {
		treeErrorf(op, "f must not be nil")
	}
	cfg := scanConfig{length: -1}
	for _, o := range opts {
		o.applyScan(&cfg)
	}
	cl, cdef := flatten(op, init)
	xl, xdef := flatten(op, xs)
	length := cfg.length
	if cfg.length < -1 || (cfg.length < 0 && len(xl) == 0) {
		if cfg.length < -1 {
			treeErrorf(op, "Length must not be negative, got %d", cfg.length)
		}
		treeErrorf(op, "xs has no tensor leaves: give the number of steps with Length")
	}
	xsLeaf := func(i int) string {
		if p := xdef.Paths()[i]; p != "" {
			return "xs leaf " + p
		}
		return "xs"
	}
	first := -1
	for i, x := range xl {
		if x.Rank() == 0 {
			treeErrorf(op, "%s is a scalar (%s): xs leaves are scanned along axis 0", xsLeaf(i), x.TypeString())
		}
		n := x.Shape()[0]
		switch {
		case first < 0 && length >= 0 && n != length:
			treeErrorf(op, "%s has leading size %d but Length is %d", xsLeaf(i), n, length)
		case first < 0:
			first, length = i, n
		case n != length:
			treeErrorf(op, "the xs leaves must have one leading size (the scan length): %s has %d but %s has %d", xsLeaf(first), length, xsLeaf(i), n)
		}
	}
	nC, nX := len(cl), len(xl)
	avals := make([]interp.Aval, 0, nC+nX)
	for _, l := range cl {
		avals = append(avals, l.Aval())
	}
	for _, l := range xl {
		avals = append(avals, interp.Aval{Shape: l.Shape()[1:], DType: l.DType()})
	}
	cc := &customCall{op: op, in: cdef}
	cy := &customCall{op: op}
	g := interp.TraceAvals("scan", func(in []*tensor) []*tensor {
		c, y := f(build[C](cdef, in[:nC]), build[X](xdef, in[nC:]))
		return append(cc.outLeaves("f's carry", c), cy.outLeaves("f's y", y)...)
	}, avals)
	if d := treeimpl.StructureDiff(cdef.Proto().Interface(), cc.out.Proto().Interface()); d != "" {
		treeErrorf(op, "f must return a carry of init's structure: %s", d)
	}
	for i := 0; i < nC; i++ {
		if got := g.Out[i].Aval; !got.Equal(avals[i]) {
			treeErrorf(op, "f returns %v at carry path %s but init has %v: the carry must keep its shapes and dtypes", got, pathOr(cc.out.Paths()[i]), avals[i])
		}
	}
	body, captured := closureConvert(g)
	s := &scanParams{body: body, nCarry: nC, nX: nX, length: length, reverse: cfg.reverse}
	args := append(append(append([]*tensor(nil), cl...), xl...), captured...)
	outs := interp.Bind(scanPrim, s, args...)
	return build[C](cc.out, outs[:nC]), build[Y](cy.out, outs[nC:])
}

// ForiLoop is JAX's lax.fori_loop with static bounds: it returns
//
//	carry := init
//	for i := lo; i < hi; i++ {
//		carry = body(i, carry)
//	}
//
// with i passed to body as an int64 scalar tensor (a traced value: body
// is traced once, as Scan's f is, so it cannot branch on i in Go; use
// Cond or Switch). It is a Scan over the indices lo..hi-1, with Scan's
// behavior under the transforms. When hi <= lo it returns init without
// calling body. ForiLoop panics with *peel.Error when body is nil, when
// body returns nil or a tree with a nil tensor, or when its carry
// differs from init in structure, shape or dtype; otherwise it panics as
// body does.
func ForiLoop[C any](lo, hi int, body func(i *peel.Tensor, carry C) C, init C) C {
	const op = "transforms.ForiLoop"
	defer interp.Annotate(op)
	if body == nil {
		treeErrorf(op, "body must not be nil")
	}
	if hi <= lo {
		return init
	}
	idx := peel.Arange(peel.Int64, float64(lo), float64(hi), 1)
	c, _ := Scan(func(c C, i *peel.Tensor) (C, struct{}) { return body(i, c), struct{}{} }, init, idx)
	return c
}
