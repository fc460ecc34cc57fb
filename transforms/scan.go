package transforms

import (
	"strconv"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/internal/scanopt"
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
//     scan[length n]: the loop is not unrolled into the program. A
//     compiled program runs it by its Impl (EvalImpl), whose steps run
//     the body's own program (optimized and built once, on first use:
//     buildProgram marks the loops of the graphs it compiles), each step
//     donating the carries the step before made (when no other result
//     or operand overlaps their memory); non-contiguous xs and
//     constants are copied once, not at every step;
//   - its JVP rule is JAX's partial evaluation of scan: the body's JVP
//     graph J (every float carry has a tangent, since a step may make a
//     zero one nonzero) is split as a checkpoint saving everything
//     splits it (ckptParams.plan with EverythingSaveable) into its known
//     equations and its linear ones. A forward scan (body: the known
//     equations, returning the new carries, the ys and the step's
//     residuals, stacked as more ys) computes the primals, and scan_lin
//     (body: the linear equations; carries: the carry tangents; xs: the
//     stacked residuals, then the xs tangents present; constants: the
//     captured tensors' tangents present), marked linear, maps the
//     tangents. scan_lin's transpose is a scan in the other direction of
//     the body's transpose (autodiff.TransposeGraph, traced once): its carries
//     are the carry cotangent and running sums of the captured tensors'
//     cotangents, its xs the residuals and the ys' cotangents, its ys
//     the xs tangents' cotangents. So forward mode, reverse mode (Grad,
//     VJP, Jacrev: linearize runs the forward scan eagerly and stages
//     scan_lin) and their compositions stay one equation per loop, also
//     in a compiled gradient. A residual is stacked per step, except
//     when it is an xs leaf as the body reads it (scan_lin then takes
//     the stacked operand itself) or the same at every step, a captured
//     tensor or a constant of J (scan_lin takes it once, as one of its
//     first nInv constants, in which it is not linear; the transposed
//     scan takes it as a constant too). There is no save policy. Should J
//     hold a linear equation with values in its parameters (a
//     CustomVJP's custom_vjp_lin, which no graph can return), the rule
//     differentiates the loop step by step instead (autodiff.JVP of the
//     loop), which unrolls the derivative;
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
// HasEffect reports whether the body acts outside its results
// (interp.Effectful): a scan of prints is kept as they are.
func (s *scanParams) HasEffect() bool { return s.body.HasEffect() }

type scanParams struct {
	body    *interp.Graph
	nCarry  int
	nX      int
	length  int
	reverse bool
	// nRes (scan_lin) is the number of leading xs that are residuals,
	// in which it is not linear; nInv the number of leading constants
	// that are loop-invariant residuals (captured tensors of the primal
	// body), in which it is not linear either.
	nRes, nInv int
	// policy, when set (StepRemat), is what the gradient saves of each
	// step (stepPolicy).
	policy *SavePolicy
	// batched caches the body vmapped by batch layout; jvps the plans by
	// tangent mask; transposed scan_lin's transposed scan.
	batched       lru.Cache[string, *scanParams]
	jvps          lru.Cache[string, *scanPlan]
	transposeOnce sync.Once
	transposed    *scanParams
	// bodyProg is the body's program when a compiled program holds the
	// scan (markCompiledLoops): evaluating it then runs that program at
	// every step.
	bodyProg subProgram
}

// markCompiled marks the scan as held by a compiled program
// (markCompiledLoops).
func (s *scanParams) markCompiled() { s.bodyProg.mark() }

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

// stackedAval is a with a leading axis of size n. It panics with
// *interp.Error when that shape is too large (backend.CheckedSize), as
// every shape rule does.
func stackedAval(n int, a interp.Aval) interp.Aval {
	shape := append([]int{n}, a.Shape...)
	if _, err := backend.CheckedSize(shape); err != nil {
		panic(&interp.Error{Msg: "the stacked ys: " + err.Error()})
	}
	return interp.Aval{Shape: shape, DType: a.DType}
}

// checkStacked panics with *interp.Error, before a loop of s runs, when
// a stacked y it would return exceeds the allocation limit
// (backend.AllocSize, as every buffer peel allocates is checked), rather
// than when the steps' ys are gathered.
func checkStacked(s *scanParams) {
	g := s.body
	for _, v := range g.Out[s.nCarry:] {
		a := stackedAval(s.length, v.Aval)
		if _, err := backend.AllocSize(a.DType, a.Shape); err != nil {
			panic(&interp.Error{Msg: "the stacked ys: " + err.Error()})
		}
	}
}

// scanRun is the loop: it runs the body length times on args (the carry
// leaves, the stacked xs leaves, the captured tensors) and returns the
// final carry leaves and the stacked ys. It only binds primitives, so it
// runs at any level (eagerly, decomposed by a trace, or under a
// forward-mode level in the JVP rule).
func scanRun(s *scanParams, args []*tensor) []*tensor {
	return scanLoop(s, args, func(in []*tensor, _ []bool) []*tensor { return s.body.Eval(in...) }, false)
}

// scanLoop is scanRun with each step's body run by body. With donating
// (concrete operands), body may take over the memory of the operands
// marked in donate: the carries of the step before, when that step made
// them (they alias none of its operands and none of its other results,
// such as a y kept for the stack).
func scanLoop(s *scanParams, args []*tensor, body func(in []*tensor, donate []bool) []*tensor, donating bool) []*tensor {
	return scanSteps(s, args, func(in []*tensor, donate []bool, _ []*tensor) []*tensor { return body(in, donate) }, donating, false)
}

// scanSteps is scanLoop with each step's body given, with into set, the
// slices of the stacked ys its ys go to (allocated once, before the
// loop), which it must fill and return: a compiled body computes them
// there (compiler.Program.RunInto), so ys are neither allocated per step
// nor stacked after.
func scanSteps(s *scanParams, args []*tensor, body func(in []*tensor, donate []bool, dst []*tensor) []*tensor, donating, into bool) []*tensor {
	checkStacked(s)
	g := s.body
	nC, nX := s.nCarry, s.nX
	nY := len(g.Out) - nC
	carry := append([]*tensor(nil), args[:nC]...)
	xs := args[nC : nC+nX]
	in := make([]*tensor, len(g.In))
	copy(in[nC+nX:], args[nC+nX:])
	donate, given := make([]bool, nC), make([]bool, nC)
	ys := make([][]*tensor, nY)
	var stacked, dst []*tensor
	if into && s.length > 0 {
		stacked, dst = make([]*tensor, nY), make([]*tensor, len(g.Out))
		for j := range stacked {
			stacked[j] = autodiff.Zeros(stackedAval(s.length, g.Out[nC+j].Aval))
		}
	} else {
		for j := range ys {
			ys[j] = make([]*tensor, s.length)
		}
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
		for j := range stacked {
			dst[nC+j] = peel.Index(stacked[j], i)
		}
		out := body(in, donate, dst)
		copy(given, donate)
		for c := range carry {
			donate[c] = donating && fresh(out[c], c, in, out, given)
		}
		copy(carry, out[:nC])
		if stacked == nil {
			for j := range ys {
				ys[j][i] = out[nC+j]
			}
		}
	}
	res := carry
	for j, y := range ys {
		switch {
		case stacked != nil:
			res = append(res, stacked[j])
		case s.length == 0:
			res = append(res, autodiff.Zeros(stackedAval(0, g.Out[nC+j].Aval)))
		default:
			res = append(res, peel.Stack(y, 0))
		}
	}
	return res
}

// sharesMemory reports whether two concrete tensors may share memory:
// one storage, or buffers whose memory overlaps (a program may return one
// buffer as two results of distinct storages). It answers true when it
// cannot tell (a backend that is no backend.MemorySharer).
func sharesMemory(a, b *tensor) bool {
	if a == b || interp.SameStorage(a, b) {
		return true
	}
	x, be := interp.ArrayOf(a)
	y, _ := interp.ArrayOf(b)
	if m, ok := be.(backend.MemorySharer); ok {
		return m.SharesMemory(x.Buf, y.Buf)
	}
	return true
}

func scanImpl(params any, args []*tensor) []*tensor {
	defer interp.Decomposing("scan")
	return scanRun(params.(*scanParams), args)
}

// scanEvalImpl is scanImpl on concrete operands: a scan that a compiled
// program holds, or an eager one of more than loopTierSteps steps, runs
// its body's program at every step.
func scanEvalImpl(params any, args []*tensor) []*tensor {
	s := params.(*scanParams)
	be := interp.DefaultBackend()
	if len(args) > 0 {
		_, be = interp.ArrayOf(args[0])
	}
	if s.length > loopTierSteps {
		// An eager scan long enough to win back the build runs its body's
		// program too (subProgram.tier).
		s.bodyProg.mark()
	}
	prog := s.bodyProg.get(s.body, be)
	if prog == nil {
		return scanImpl(params, args)
	}
	defer interp.Decomposing("scan")
	// A program copies an operand that is not contiguous (a broadcast
	// captured tensor, say) on every run: copy the xs and the constants
	// once, before the loop.
	for i := s.nCarry; i < len(args); i++ {
		if a, _ := interp.ArrayOf(args[i]); !a.IsContiguous() {
			args[i] = interp.Contiguous(args[i])
		}
	}
	// The stacked ys are made on the default backend: computed into
	// only when the operands live there too.
	onDefault := true
	for _, a := range args {
		if _, be := interp.ArrayOf(a); be != interp.DefaultBackend() {
			onDefault = false
		}
	}
	if p, ok := prog.(interface {
		RunInto(args []*tensor, donate []bool, dst []*tensor) []*tensor
	}); ok && onDefault {
		return scanSteps(s, args, p.RunInto, true, true)
	}
	return scanLoop(s, args, prog.Run, true)
}

// scanPrim is scan; scanLin is scan on a body linear in every operand
// but the residuals (the first nRes xs; see scanJVP): the same primitive
// for every interpreter, but marked linear, with a transpose rule.
var scanPrim, scanLin = func() (*interp.Prim, *interp.Prim) {
	p := graphio.ParamsWith[*scanParams](interp.NewPrim("scan", interp.Pure, scanAbstract), encodeScan, decodeScan)
	p.Whole = true // one equation when staged
	p.Impl = scanImpl
	p.EvalImpl = scanEvalImpl
	l := graphio.ParamsWith[*scanParams](interp.NewPrim("scan_lin", interp.Pure, scanAbstract), encodeScan, decodeScan)
	l.Whole = true
	l.Impl = scanImpl
	l.EvalImpl = scanEvalImpl
	// Linear in every operand (the residuals, which are xs, are never
	// tangents: the transpose gives them no cotangent).
	l.Linear = []bool{true}
	return p, l
}()

// scanJVP is the forward-mode rule of scan and scan_lin (see the top
// of the file): a forward scan of the known part of the body's JVP,
// which also stacks the residuals, then scan_lin of its linear part on
// the tangents; step by step when the plan is inline.
func scanJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	s := params.(*scanParams)
	g := s.body
	nC := s.nCarry
	has := make([]bool, len(g.In))
	for i, v := range g.In {
		// Every float carry has a tangent: a step may make a zero one
		// nonzero.
		has[i] = v.Aval.DType.IsFloat() && (i < nC || tangents[i] != nil)
	}
	p := s.plan(has)
	if p.fwd == nil {
		return autodiff.JVP("scan", func(in []*tensor) []*tensor { return scanRun(s, in) }, primals, tangents)
	}
	nOut := len(g.Out)
	fwd := interp.Bind(scanPrim, p.fwd, primals...)
	outs := fwd[:nOut:nOut]
	touts := make([]*tensor, nOut)
	if p.lin == nil {
		return outs, touts
	}
	var args []*tensor
	for i := 0; i < nC; i++ {
		if has[i] {
			t := tangents[i]
			if t == nil {
				t = autodiff.ZerosLike(primals[i])
			}
			args = append(args, t)
		}
	}
	k := nOut
	for _, src := range p.res {
		if src < 0 {
			args = append(args, fwd[k])
			k++
			continue
		}
		args = append(args, primals[src])
	}
	nX := nC + s.nX
	for i := nC; i < nX; i++ {
		if has[i] {
			args = append(args, tangents[i])
		}
	}
	for k, src := range p.inv {
		if src < 0 {
			args = append(args, p.invVals[k])
			continue
		}
		args = append(args, primals[src])
	}
	for i := nX; i < len(g.In); i++ {
		if has[i] {
			args = append(args, tangents[i])
		}
	}
	ts := interp.Bind(scanLin, p.lin, args...)
	spreadFloat(touts, outs, ts)
	return outs, touts
}

// scanPlan is the partial evaluation of a scan's JVP for one tangent
// mask: fwd's body maps the primals to the new carries, the ys and the
// step's residuals (stacked as more ys); lin's body maps the carry
// tangents (carries), the residuals and the tangents of xs present (xs)
// and the loop-invariant residuals and the tangents of the captured
// tensors present (constants) to the float results' tangents, linearly
// in all but the residuals. fwd nil: the body's JVP holds a linear
// equation with values in its parameters (a CustomVJP's), which no graph
// can return: the JVP runs step by step. lin nil: no result has a
// tangent.
//
// A residual that is an xs leaf the body reads as is, is not stacked
// again: lin takes the scan's stacked operand. One that is a captured
// tensor or a constant of the JVP graph is the same at every step: lin
// takes it once, as a constant, instead of a stack of length copies.
type scanPlan struct {
	fwd, lin *scanParams
	// res says where each of lin's stacked residuals comes from: -1, the
	// next of fwd's extra ys; i ≥ 0, the scan's operand i (an xs leaf).
	res []int
	// inv says where each of lin's loop-invariant residuals comes from:
	// i ≥ 0, the scan's operand i (a captured tensor); -1, invVals[k].
	inv     []int
	invVals []*tensor
}

// plan splits the body's JVP graph J as a checkpoint that saves
// everything splits it (ckptParams.plan).
func (s *scanParams) plan(has []bool) *scanPlan {
	key := maskKey(has)
	if p, ok := s.jvps.Load(key); ok {
		return p
	}
	n := len(has)
	cp := splitJVP(s.body, n, s.stepPolicy(), has)
	if cp.inline {
		p, _ := s.jvps.LoadOrStore(key, &scanPlan{})
		return p
	}
	j, nOut := cp.j, cp.nOut
	sp := &scanPlan{}
	argIndex := make(map[*interp.Var]int, n)
	for i, v := range j.In[:n] {
		argIndex[v] = i
	}
	constVal := make(map[*interp.Var]*tensor, len(j.Consts))
	for i, v := range j.Consts {
		constVal[v] = j.ConstVals[i]
	}
	var stacked, hoisted []*interp.Var
	fout := append([]*interp.Var(nil), j.Out[:nOut]...)
	for _, v := range cp.consts {
		i, arg := argIndex[v]
		switch c, isConst := constVal[v]; {
		case arg && i >= s.nCarry+s.nX:
			sp.inv, sp.invVals, hoisted = append(sp.inv, i), append(sp.invVals, nil), append(hoisted, v)
		case isConst && c.IsConcrete():
			sp.inv, sp.invVals, hoisted = append(sp.inv, -1), append(sp.invVals, c), append(hoisted, v)
		case arg && i >= s.nCarry:
			sp.res, stacked = append(sp.res, i), append(stacked, v)
		default:
			sp.res, stacked, fout = append(sp.res, -1), append(stacked, v), append(fout, v)
		}
	}
	f := &interp.Graph{In: j.In[:n], Consts: j.Consts, ConstVals: j.ConstVals, Out: fout}
	for e, eq := range j.Eqns {
		if cp.forward[e] {
			f.Eqns = append(f.Eqns, eq)
		}
	}
	sp.fwd = &scanParams{body: f, nCarry: s.nCarry, nX: s.nX, length: s.length, reverse: s.reverse, policy: s.policy}
	if len(j.Out) > nOut {
		nFC, nTX := 0, 0
		for i, h := range has {
			switch {
			case !h:
			case i < s.nCarry:
				nFC++
			case i < s.nCarry+s.nX:
				nTX++
			}
		}
		tin := j.In[n:]
		l := &interp.Graph{Out: j.Out[nOut:]}
		l.In = append(append([]*interp.Var(nil), tin[:nFC]...), stacked...)
		l.In = append(append(append(l.In, tin[nFC:nFC+nTX]...), hoisted...), tin[nFC+nTX:]...)
		for e, eq := range j.Eqns {
			if cp.recompute[e] || !cp.known[e] {
				l.Eqns = append(l.Eqns, eq)
			}
		}
		sp.lin = &scanParams{body: l, nCarry: nFC, nX: len(stacked) + nTX, nRes: len(stacked), nInv: len(hoisted), length: s.length, reverse: s.reverse}
	}
	p, _ := s.jvps.LoadOrStore(key, sp)
	return p
}

// stepPolicy is what a gradient of the scan saves of each step: the
// StepRemat policy, else every residual. (A Checkpoint inside f is
// traced into the body as its operations, so only StepRemat sets it.)
func (s *scanParams) stepPolicy() SavePolicy {
	if s.policy != nil {
		return *s.policy
	}
	return EverythingSaveable
}

// scanLinTranspose is scan_lin's transpose: a scan in the other
// direction of the body's transpose, whose carries are the carry
// cotangent and the sums of the captured tangents' cotangents, whose xs
// are the residuals and the ys' cotangents, and whose ys are the xs
// tangents' cotangents. Only the linear operands get cotangents.
func scanLinTranspose(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
	defer interp.Decomposing("scan")
	s := params.(*scanParams)
	g := s.body
	nC, nR, nI := s.nCarry, s.nRes, s.nInv
	nTX := s.nX - nR
	nK := len(g.In) - nC - s.nX - nI
	nY := len(g.Out) - nC
	res := make([]*tensor, len(args))
	in := make([]*tensor, 0, nC+nK+nR+nY+nI)
	for i := 0; i < nC; i++ {
		c := cts[i]
		if c == nil {
			c = autodiff.Zeros(g.Out[i].Aval)
		}
		in = append(in, c)
	}
	for i := 0; i < nK; i++ {
		in = append(in, autodiff.Zeros(g.In[nC+s.nX+nI+i].Aval))
	}
	in = append(in, args[nC:nC+nR]...)
	for j := 0; j < nY; j++ {
		c := cts[nC+j]
		if c == nil {
			c = autodiff.Zeros(stackedAval(s.length, g.Out[nC+j].Aval))
		}
		in = append(in, c)
	}
	in = append(in, args[nC+s.nX:nC+s.nX+nI]...)
	outs := interp.Bind(scanPrim, s.transpose(), in...)
	for i := 0; i < nC; i++ {
		if linear[i] {
			res[i] = outs[i]
		}
	}
	for i := 0; i < nTX; i++ {
		if linear[nC+nR+i] {
			res[nC+nR+i] = outs[nC+nK+i]
		}
	}
	for i := 0; i < nK; i++ {
		if linear[nC+s.nX+nI+i] {
			res[nC+s.nX+nI+i] = outs[nC+i]
		}
	}
	return res
}

// transpose returns (once) the parameters of scan_lin's transposed scan
// (see scanLinTranspose).
func (s *scanParams) transpose() *scanParams {
	s.transposeOnce.Do(func() {
		g := s.body
		nC, nR, nI := s.nCarry, s.nRes, s.nInv
		nTX := s.nX - nR
		nX := nC + s.nX // the end of the xs
		nK := len(g.In) - nX - nI
		nY := len(g.Out) - nC
		var avals []interp.Aval
		for _, v := range g.Out[:nC] {
			avals = append(avals, v.Aval)
		}
		for _, v := range g.In[nX+nI:] {
			avals = append(avals, v.Aval)
		}
		for _, v := range g.In[nC : nC+nR] {
			avals = append(avals, v.Aval)
		}
		for _, v := range g.Out[nC:] {
			avals = append(avals, v.Aval)
		}
		for _, v := range g.In[nX : nX+nI] {
			avals = append(avals, v.Aval)
		}
		t := interp.TraceAvals("scan", func(in []*tensor) []*tensor {
			acc, resid, inv := in[nC:nC+nK], in[nC+nK:nC+nK+nR], in[nC+nK+nR+nY:]
			h := &interp.Graph{Eqns: g.Eqns, Out: g.Out, Consts: append([]*interp.Var(nil), g.Consts...), ConstVals: append([]*tensor(nil), g.ConstVals...)}
			for j, v := range g.In[nC : nC+nR] {
				h.Consts = append(h.Consts, v)
				h.ConstVals = append(h.ConstVals, resid[j])
			}
			for j, v := range g.In[nX : nX+nI] {
				h.Consts = append(h.Consts, v)
				h.ConstVals = append(h.ConstVals, inv[j])
			}
			h.In = append(append(append([]*interp.Var(nil), g.In[:nC]...), g.In[nC+nR:nX]...), g.In[nX+nI:]...)
			full := append(append([]*tensor(nil), in[:nC]...), in[nC+nK+nR:nC+nK+nR+nY]...)
			got := autodiff.TransposeGraph(h, full)
			for j, ct := range got {
				if ct == nil {
					got[j] = autodiff.Zeros(h.In[j].Aval)
				}
			}
			out := append([]*tensor(nil), got[:nC]...)
			for k := 0; k < nK; k++ {
				out = append(out, interp.Bind1(prims.Add, nil, acc[k], got[nC+nTX+k]))
			}
			return append(out, got[nC:nC+nTX]...)
		}, avals)
		for _, v := range t.ConstVals {
			if !v.IsConcrete() {
				panic(interp.Errorf("internal error: scan_lin's transpose captured a traced tensor"))
			}
		}
		s.transposed = &scanParams{body: t, nCarry: nC + nK, nX: nR + len(g.Out) - nC, length: s.length, reverse: !s.reverse}
	})
	return s.transposed
}

// scanBatch is the batching rule of scan and scan_lin (see the top of
// the file).
func scanBatch(prim *interp.Prim) batching.NamedRule {
	return func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		return scanBatched(prim, lanes{size, axis}, params, vals, dims)
	}
}

func scanBatched(prim *interp.Prim, l lanes, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
	size := l.size
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
			avals[i] = interp.Placeholder(interp.AvalOf(v))
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
			avals[i] = interp.Placeholder(interp.AvalOf(v))
		}
	}
	bp := batchedParams(&s.batched, "scan", l, avals, bodyDims, func(xs []*tensor) []*tensor { return s.body.Eval(xs...) },
		func(g *interp.Graph) *scanParams {
			return &scanParams{body: g, nCarry: nC, nX: nX, nRes: s.nRes, nInv: s.nInv, length: s.length, reverse: s.reverse, policy: s.policy}
		})
	outs := interp.Bind(prim, bp, ops...)
	odims := make([]int, len(outs))
	for i := nC; i < len(outs); i++ {
		odims[i] = 1
	}
	return outs, odims
}

func init() {
	scanPrim.JVP = scanJVP
	scanLin.JVP = scanJVP
	scanLin.Transpose = scanLinTranspose
	batching.RegisterNamed(scanPrim, scanBatch(scanPrim))
	batching.RegisterNamed(scanLin, scanBatch(scanLin))
}

// Scan's options are peel.ScanOption values, the options of the
// cumulative operations (peel.Cumsum, …) too: peel.Reverse() makes Scan
// iterate from the last slice of xs to the first (the ys are still
// stacked in the order of xs: ys[i] is the y of the step on xs[i]);
// Length, Unroll and StepRemat are Scan's own.

type scanConfig struct {
	reverse bool
	length  int // -1: from xs
	unroll  int
	policy  *SavePolicy
}

// scanConfigOf applies opts in order.
func scanConfigOf(opts []peel.ScanOption) scanConfig {
	c := scanopt.New()
	for _, o := range opts {
		o.ApplyScan(&c)
	}
	p, _ := c.Policy.(*SavePolicy)
	return scanConfig{reverse: c.Reverse, length: c.Length, unroll: c.Unroll, policy: p}
}

// scanOnly is an option that only Scan reads, named name.
type scanOnly struct {
	name string
	set  func(*scanopt.Config)
}

// ApplyScan sets the option in c.
func (o scanOnly) ApplyScan(c *scanopt.Config) { o.set(c); c.ScanOnly = o.name }

// Length sets the number of steps of Scan. It is required when xs has
// no leaves (each step then gets xs itself); otherwise it must equal
// the leading size of xs's leaves.
func Length(n int) peel.ScanOption {
	return scanOnly{"transforms.Length", func(c *scanopt.Config) { c.Length = n }}
}

// Unroll makes Scan's loop body run n steps of f per iteration, as JAX's
// scan(unroll=n): the traced body holds n copies of f, and the loop runs
// length/n iterations. When n does not divide the length, the remaining
// length%n steps run after them (before them in xs's order with
// peel.Reverse()) as one more scan of a single iteration whose body holds
// that many copies; n at least the length unrolls the whole loop into
// one body. The steps and their order are those of Unroll(1), the
// default. Scan panics with *peel.Error when n is less than 1.
func Unroll(n int) peel.ScanOption {
	return scanOnly{"transforms.Unroll", func(c *scanopt.Config) { c.Unroll = n }}
}

// StepRemat makes a gradient of Scan save, of each step, only what
// policy allows of the values f computes, and recompute the rest in the
// backward scan's step: the per-step form of Checkpoint (JAX writes it
// as a scan of a checkpointed function). Without it a gradient saves
// every residual that changes from step to step. With Unroll the policy
// applies to each iteration's n steps together.
func StepRemat(policy SavePolicy) peel.ScanOption {
	return scanOnly{"transforms.StepRemat", func(c *scanopt.Config) { p := policy; c.Policy = &p }}
}

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
// is the tree of f's y leaves stacked along a new axis 0. With
// peel.Reverse() the steps run from i = length-1 down to 0.
//
// f is traced once, on the types of init's leaves and of one slice of
// xs's leaves, and may capture tensors (captured tracers of an enclosing
// transform are differentiated and batched as operands are). It must
// return a carry of init's structure, with leaves of the same shapes
// and dtypes, and a y of the same structure and types at every step (it
// is traced once, so it is). Eagerly the loop runs in Go; under Compile
// and MakeGraph it is one scan equation, not unrolled, and a compiled
// program runs the body compiled once, as a program of its own. Under
// Vmap the body is vmapped once. Derivatives (Grad, JVP, VJP, Jacrev,
// Jacfwd) are scans too: a gradient runs a forward scan that stacks the
// step's residuals (those that change from step to step) and a scan of
// the body's transpose in the other direction, without unrolling (a
// CustomVJP inside f makes the derivative unroll the steps instead).
//
// f may write in place into tensors it makes; a write into a tensor
// captured from outside f (whatever the value written) panics with
// *peel.Error naming the write and Scan: f is traced once, so the write
// would happen once, not at every step. Carry such a tensor instead.
//
// Unroll(n) traces f n times into the body instead (n steps per
// iteration, and a scan of the remaining length%n steps), which gives
// the compiler more to fuse per iteration at the price of a larger
// body; every transform sees ordinary scans.
//
// init, xs and the results are trees (see Grad). Scan panics with
// *peel.Error when f is nil, when an xs leaf is a scalar, when the xs
// leaves differ in leading size (naming the leaves) or disagree with
// Length, when xs has no leaves and Length is not given, when Length is
// negative, when Unroll is less than 1, when f returns nil or a tree
// with a nil tensor, when f's carry differs from init in structure,
// shape or dtype (naming the leaf path), or when the stacked ys would be
// too large (their size overflows int or exceeds the allocation limit,
// peel.SetMaxAllocBytes; checked before the first step); otherwise it
// panics as f does.
func Scan[C, X, Y any](f func(carry C, x X) (C, Y), init C, xs X, opts ...peel.ScanOption) (C, Y) {
	const op = "transforms.Scan"
	defer interp.Annotate(op)
	if f == nil {
		treeErrorf(op, "f must not be nil")
	}
	cfg := scanConfigOf(opts)
	if cfg.unroll < 1 {
		treeErrorf(op, "Unroll must be at least 1, got %d", cfg.unroll)
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
	st := &scanStepper[C, X, Y]{op: op, f: f, cdef: cdef, xdef: xdef, cc: &userCall{op: op, in: cdef}, cy: &userCall{op: op}, policy: cfg.policy}
	for _, l := range cl {
		st.cavals = append(st.cavals, interp.AvalOf(l))
	}
	u := min(cfg.unroll, length)
	if u <= 1 {
		c, ys := st.bind(cl, xl, length, 1, cfg.reverse)
		return build[C](st.cc.out, c), build[Y](st.cy.out, ys)
	}
	// length = q·u + r: q iterations of u steps, then (before, in xs's
	// order, with Reverse) one of r.
	q, r := length/u, length%u
	main, rest := 0, q*u // the ranges of xs the q iterations and the rest scan
	if cfg.reverse {
		main, rest = r, 0
	}
	part := func(at, n int) []*tensor {
		out := make([]*tensor, len(xl))
		for i, x := range xl {
			out[i] = peel.Narrow(x, 0, at, n)
		}
		return out
	}
	c, ys := st.bind(cl, part(main, q*u), q, u, cfg.reverse)
	if r > 0 {
		var rys []*tensor
		c, rys = st.bind(c, part(rest, r), 1, r, cfg.reverse)
		for j := range ys {
			pair := []*tensor{ys[j], rys[j]}
			if cfg.reverse {
				pair[0], pair[1] = pair[1], pair[0]
			}
			ys[j] = peel.Concat(pair, 0)
		}
	}
	return build[C](st.cc.out, c), build[Y](st.cy.out, ys)
}

// scanStepper traces Scan's f into loop bodies, checking each step's
// carry against init's structure and types and each step's y against
// the first's.
type scanStepper[C, X, Y any] struct {
	op         string
	f          func(C, X) (C, Y)
	cdef, xdef *treeDef
	cavals     []interp.Aval
	cc, cy     *userCall
	// yavals and ydef are the first step's y types and structure.
	yavals []interp.Aval
	ydef   *treeDef
	policy *SavePolicy // StepRemat
}

// step runs f once on carry and x leaves (tracers of a body trace).
func (st *scanStepper[C, X, Y]) step(carry, x []*tensor) ([]*tensor, []*tensor) {
	op := st.op
	c, y := st.f(build[C](st.cdef, carry), build[X](st.xdef, x))
	cl := st.cc.outLeaves("f's carry", c)
	if d := treeimpl.StructureDiff(st.cdef.Proto().Interface(), st.cc.out.Proto().Interface()); d != "" {
		treeErrorf(op, "f must return a carry of init's structure: %s", d)
	}
	for i, l := range cl {
		if got := interp.AvalOf(l); !got.Equal(st.cavals[i]) {
			treeErrorf(op, "f returns %v at carry path %s but init has %v: the carry must keep its shapes and dtypes", got, pathOr(st.cc.out.Paths()[i]), st.cavals[i])
		}
	}
	yl := st.cy.outLeaves("f's y", y)
	if st.ydef == nil {
		st.ydef = st.cy.out
		for _, l := range yl {
			st.yavals = append(st.yavals, interp.AvalOf(l))
		}
		return cl, yl
	}
	if d := treeimpl.StructureDiff(st.ydef.Proto().Interface(), st.cy.out.Proto().Interface()); d != "" {
		treeErrorf(op, "f must return a y of one structure at every step: %s", d)
	}
	for i, l := range yl {
		if got := interp.AvalOf(l); !got.Equal(st.yavals[i]) {
			treeErrorf(op, "f returns %v at y path %s but %v at an earlier step: the y must keep its shapes and dtypes", got, pathOr(st.cy.out.Paths()[i]), st.yavals[i])
		}
	}
	return cl, yl
}

// bind traces a body of g steps of f and binds a scan of n iterations
// of it on the carry leaves cl and the xs leaves xl (of leading size
// n·g; iteration k takes the slices k·g … k·g+g-1, its steps running
// backwards with reverse). It returns the final carry leaves and the y
// leaves stacked to leading size n·g.
func (st *scanStepper[C, X, Y]) bind(cl, xl []*tensor, n, g int, reverse bool) ([]*tensor, []*tensor) {
	nC, nX := len(cl), len(xl)
	avals := append([]interp.Aval(nil), st.cavals...)
	ops := append([]*tensor(nil), cl...)
	for _, l := range xl {
		inner := l.Shape()[1:]
		if g == 1 {
			avals = append(avals, interp.Aval{Shape: inner, DType: l.DType()})
			ops = append(ops, l)
			continue
		}
		shape := append([]int{n, g}, inner...)
		avals = append(avals, interp.Aval{Shape: shape[1:], DType: l.DType()})
		ops = append(ops, peel.Reshape(l, shape...))
	}
	body := interp.TraceAvals("scan", func(in []*tensor) []*tensor {
		if g == 1 {
			c, y := st.step(in[:nC], in[nC:])
			return append(c, y...)
		}
		c := in[:nC]
		per := make([][]*tensor, g)
		x := make([]*tensor, nX)
		for k := 0; k < g; k++ {
			j := k
			if reverse {
				j = g - 1 - k
			}
			for i, xg := range in[nC:] {
				x[i] = peel.Index(xg, j)
			}
			c, per[j] = st.step(c, x)
		}
		out := append([]*tensor(nil), c...)
		col := make([]*tensor, g)
		for i := range per[0] {
			for j := range per {
				col[j] = per[j][i]
			}
			out = append(out, peel.Stack(col, 0))
		}
		return out
	}, avals, interp.BodyTrace())
	b, captured := closureConvert(body)
	s := &scanParams{body: b, nCarry: nC, nX: nX, length: n, reverse: reverse, policy: st.policy}
	outs := interp.Bind(scanPrim, s, append(ops, captured...)...)
	ys := outs[nC:]
	if g > 1 {
		for i, y := range ys {
			ys[i] = peel.Reshape(y, append([]int{n * g}, y.Shape()[2:]...)...)
		}
	}
	return outs[:nC:nC], ys
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
// body returns nil or a tree with a nil tensor, when its carry differs
// from init in structure, shape or dtype, when body writes in place into
// a tensor captured from outside it (as Scan), or when lo and hi are too
// far apart for the indices to be allocated ("too large"); otherwise it
// panics as body does.
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
