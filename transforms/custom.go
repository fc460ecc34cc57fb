package transforms

import (
	"reflect"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
)

// Custom derivative rules are primitives whose Impl calls the user's
// function (so every interpreter without a rule simply runs it) and whose
// JVP rule calls the user's rule. The primitives work on flat leaves:
// CustomJVP and CustomVJP flatten the argument tree, bind the primitive
// on its tensor leaves, and give it rules that rebuild the trees (the
// argument's static parts come back from the call's tree definition)
// before they call the user's functions, and flatten what those return.

// jvpRule is a CustomJVP call's rule over leaves: f maps the argument's
// leaves to the result's; jvp maps primal and tangent leaves (every one
// non-nil) to the result's leaves and their tangents (nil exactly for
// the leaves that are not float).
type jvpRule struct {
	f   func(in []*tensor) []*tensor
	jvp func(primals, tangents []*tensor) (outs, touts []*tensor)
	// op names the rule's maker in errors (transforms.CustomJVP, …), top
	// is the highest level among the operands (nil: none), outName names
	// result leaf i.
	op      string
	top     *interp.Level
	outName func(i int) string
}

type customJVPParams struct{ jvpRule }

func (customJVPParams) String() string { return "custom_jvp" }

var customJVPCall = func() *interp.Prim {
	p := interp.NewPrim("custom_jvp_call", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		return outAvals(interp.TraceAvals("custom_jvp", params.(customJVPParams).f, in))
	})
	// Staged as one equation (its shape rule traces f), so that a graph
	// holding the call (Compile, Checkpoint, Cond) keeps the rule for
	// the transforms applied to it later; evaluating it runs f.
	p.Whole = true
	p.Impl = func(params any, args []*tensor) []*tensor {
		cp := params.(customJVPParams)
		return checkRuleSkipped(cp.op, args, cp.f(args), cp.outName)
	}
	p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		cp := params.(customJVPParams)
		ts := make([]*tensor, len(tangents))
		for i, t := range tangents {
			if t == nil {
				t = autodiff.ZerosLike(primals[i])
			}
			ts[i] = t
		}
		outs, touts := cp.jvp(primals, ts)
		checkCaptured(cp.op, "the JVP rule's result", cp.top, outs, cp.outName)
		checkCaptured(cp.op, "the JVP rule's tangent", cp.top, touts, cp.outName)
		return outs, touts
	}
	return p
}()

// vjpRule is a CustomVJP call's rule over leaves: f maps the argument's
// leaves to the result's; fwd maps them to the result's leaves and the
// residuals' leaves; bwd maps the residuals' leaves and one cotangent per
// result leaf (every one non-nil) to one cotangent per argument leaf (nil
// for zero), unchecked.
type vjpRule struct {
	f   func(in []*tensor) []*tensor
	fwd func(in []*tensor) (outs, res []*tensor)
	bwd func(res, cts []*tensor) []*tensor
	// op names the rule's maker in errors (transforms.CustomVJP, …), top
	// is the highest level among the operands (nil: none); argName,
	// outName and resName name argument, result and residual leaf i.
	op                        string
	top                       *interp.Level
	argName, outName, resName func(i int) string
}

type customVJPParams struct{ vjpRule }

func (customVJPParams) String() string { return "custom_vjp" }

// customVJPLinParams are the parameters of custom_vjp_lin, the linear map
// a CustomVJP call contributes to a linearized program: its operands are
// the tangents of the argument leaves listed in diff, its results the
// tangents of the result leaves listed in fout (the float ones). It has
// no forward rule; its transpose calls bwd with the residuals saved by
// fwd.
type customVJPLinParams struct {
	op      string
	bwd     func(res, cts []*tensor) []*tensor
	argName func(i int) string
	res     []*tensor
	in      []interp.Aval // every argument leaf
	out     []interp.Aval // every result leaf
	diff    []int
	fout    []int
}

func (customVJPLinParams) String() string { return "custom_vjp_bwd" }

var customVJPLin = func() *interp.Prim {
	p := interp.NewPrim("custom_vjp_lin", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		lp := params.(customVJPLinParams)
		out := make([]interp.Aval, len(lp.fout))
		for k, i := range lp.fout {
			out[k] = lp.out[i]
		}
		return out
	})
	p.Linear = []bool{true} // in every operand (prims.LinearIn repeats the last entry)
	p.NoEval = "forward-mode differentiation (JVP, Jacfwd, Linearize) of a CustomVJP function is not supported: give it a CustomJVP rule instead"
	p.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		lp := params.(customVJPLinParams)
		res := make([]*tensor, len(args))
		full := make([]*tensor, len(lp.out))
		any := false
		for k, i := range lp.fout {
			full[i] = cts[k]
			any = any || cts[k] != nil
		}
		if !any {
			return res
		}
		for i, c := range full {
			if c == nil {
				full[i] = autodiff.Zeros(lp.out[i])
			}
		}
		got := checkCotangents(lp.op, lp.bwd(lp.res, full), lp.in, lp.argName)
		for k, i := range lp.diff {
			if linear[k] {
				res[k] = got[i]
			}
		}
		return res
	}
	return p
}()

var customVJPCall = func() *interp.Prim {
	p := interp.NewPrim("custom_vjp_call", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		return outAvals(interp.TraceAvals("custom_vjp", params.(customVJPParams).f, in))
	})
	p.Whole = true // as custom_jvp_call
	p.Impl = func(params any, args []*tensor) []*tensor {
		cp := params.(customVJPParams)
		return checkRuleSkipped(cp.op, args, cp.f(args), cp.outName)
	}
	p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		// fwd's output is the primal result: f is not run.
		cp := params.(customVJPParams)
		outs, res := cp.fwd(primals)
		checkCaptured(cp.op, "fwd's result", cp.top, outs, cp.outName)
		checkCaptured(cp.op, "fwd's residual", cp.top, res, cp.resName)
		lp := customVJPLinParams{op: cp.op, bwd: cp.bwd, argName: cp.argName, res: res, in: avalsOf(primals), out: avalsOf(outs)}
		var ts []*tensor
		for i, t := range tangents {
			if t != nil {
				lp.diff = append(lp.diff, i)
				ts = append(ts, t)
			}
		}
		for i, o := range outs {
			if o.DType().IsFloat() {
				lp.fout = append(lp.fout, i)
			}
		}
		touts := make([]*tensor, len(outs))
		if len(ts) == 0 || len(lp.fout) == 0 {
			return outs, touts
		}
		lin := interp.Bind(customVJPLin, lp, ts...)
		for k, i := range lp.fout {
			touts[i] = lin[k]
		}
		return outs, touts
	}
	return p
}()

// topLevel returns the highest live level among the tracers of xs (nil
// for none): the level a primitive bound on xs is processed at.
func topLevel(xs []*tensor) *interp.Level {
	var top *interp.Level
	for _, x := range xs {
		if tr := interp.TracerOf(x); tr != nil {
			if l := tr.Level(); l.Alive() && (top == nil || l.ID() > top.ID()) {
				top = l
			}
		}
	}
	return top
}

// checkCaptured panics with *Error naming op when a value a rule
// computed at level top (the values what names, leaf i named by name)
// belongs to top or a level above it: the rule's primal work runs below
// top, so such a value comes from a tensor of that level that the rule
// captures instead of receiving it in its argument, and its derivative
// would be lost.
func checkCaptured(op, what string, top *interp.Level, xs []*tensor, name func(int) string) {
	if top == nil || !top.Alive() {
		// No level applied the call, or the call was staged (its level
		// has ended) and the rule is applied to the staged equation by a
		// later transform: tensors it could have captured are gone.
		return
	}
	for i, x := range xs {
		if x == nil {
			continue
		}
		if tr := interp.TracerOf(x); tr != nil && tr.Level().Alive() && tr.Level().ID() >= top.ID() {
			treeErrorf(op, "%s at %s belongs to the %s applying the rule: the rule captures a tensor of that %s instead of receiving it in its argument, and its derivative would be lost; pass the tensor in the argument", what, name(i), tr.Level().Name(), tr.Level().Name())
		}
	}
}

// checkRuleSkipped returns outs, the results of a custom rule's f run
// as the call's own evaluation on args (no level applied the rule). It
// panics with *Error naming op when a result belongs to, or wraps a
// value of, a live forward-mode level (Grad, VJP, JVP, …) above every
// argument: f captured a tensor of that transform, which differentiates
// f's own operations because it never sees the call, and the rule
// would be skipped without a word. JAX refuses the same program (an
// unexpected tracer).
func checkRuleSkipped(op string, args, outs []*tensor, name func(int) string) []*tensor {
	top := topLevel(args)
	for i, o := range outs {
		if l := forwardLevelAbove(o, top); l != nil {
			treeErrorf(op, "f's result at %s depends on a tensor of the %s that f captures while the argument holds none of that %s: the %s would differentiate f's own operations and skip the rule; pass the tensor in the argument", name(i), l.Name(), l.Name(), l.Name())
		}
	}
	return outs
}

// forwardLevelAbove returns the highest live forward-mode level above
// top (nil: any) among x's level and the levels of the values its
// tracers wrap, or nil when there is none.
func forwardLevelAbove(x *tensor, top *interp.Level) *interp.Level {
	var found *interp.Level
	stack := []*tensor{x}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t == nil || interp.TracerOf(t) == nil {
			continue
		}
		l := interp.TracerOf(t).Level()
		if !l.Alive() || (top != nil && l.ID() <= top.ID()) {
			continue
		}
		if autodiff.IsForwardTracer(interp.TracerOf(t)) && (found == nil || l.ID() > found.ID()) {
			found = l
		}
		if w, is := interp.TracerOf(t).(interp.Wrapper); is {
			stack = w.Wrapped(stack)
		}
	}
	return found
}

// checkCotangents checks bwd's cotangents got (one per argument leaf, of
// types in) and returns them with those of leaves that are not float
// dropped (nil). It panics with *Error naming op and the leaf
// when a float leaf's cotangent has another shape or dtype.
func checkCotangents(op string, got []*tensor, in []interp.Aval, name func(int) string) []*tensor {
	if len(got) != len(in) {
		treeErrorf(op, "bwd returned %d cotangents for %d argument leaves", len(got), len(in))
	}
	out := make([]*tensor, len(in))
	for i, g := range got {
		if g == nil || !in[i].DType.IsFloat() {
			continue
		}
		if !interp.AvalOf(g).Equal(in[i]) {
			treeErrorf(op, "bwd's cotangent for %s is %s, but the argument leaf is %s", name(i), g.TypeString(), in[i])
		}
		out[i] = g
	}
	return out
}

// cotangentLeaves flattens g, bwd's cotangent of the argument, into one
// cotangent per argument leaf (nil: zero). g must have the argument's
// structure, or be its type's zero value (no cotangent); with tuple, the
// argument is a positional tuple and each of its fields may be its zero
// value instead. It panics with *Error naming the first difference in
// structure.
func (c *userCall) cotangentLeaves(g any, tuple bool) []*tensor {
	gv := reflect.ValueOf(g)
	if !gv.IsValid() || gv.IsZero() {
		return make([]*tensor, c.in.NumLeaves())
	}
	var zero []bool
	if tuple {
		// A copy of the tuple whose zero fields are the argument's own
		// (for the structure), their leaves dropped after flattening.
		cp := reflect.New(gv.Type()).Elem()
		cp.Set(gv)
		for k := 0; k < cp.NumField(); k++ {
			z := cp.Field(k).IsZero()
			zero = append(zero, z)
			if z {
				cp.Field(k).Set(c.in.Proto().Field(k))
			}
		}
		g = cp.Interface()
	}
	got, d := treeimpl.ProjectLeaves(c.op, c.in.Proto().Interface(), g)
	if d != "" {
		treeErrorf(c.op, "bwd must return a cotangent of the argument's structure: %s", d)
	}
	if tuple {
		for _, i := range argLeaves(c.in, zero) {
			got[i] = nil
		}
	}
	return got
}

// argName names argument leaf i in errors.
func (c *userCall) argName(i int) string { return c.in.LeafName("the argument", i) }

// outName and resName name result and residual leaf i in errors.
func (c *userCall) outName(i int) string { return "result path " + pathOr(c.out.Paths()[i]) }

func (c *userCall) resName(i int) string { return "residual path " + pathOr(c.res.Paths()[i]) }

// CustomJVP returns f with its own forward-mode derivative rule: under
// every autodiff transform, jvp(primals, tangents) is used instead of
// differentiating f's operations, and gives the result and its tangent.
// Outside autodiff the result is f; under autodiff f is not run.
//
// The argument is a tree (a tensor, or slices, arrays, string-keyed
// maps, pointers and structs of them; see Grad), and so is the result.
// tangents has the argument's structure and static parts; its leaves
// are the tangents of the argument's leaves, zeros (of the leaf's dtype)
// for the leaves that are not float or not differentiated. The static
// parts of the argument (values that hold no tensor) are arguments that
// are not differentiated, passed as they are. jvp returns the result and
// a tangent of the result's structure; tangents of result leaves that
// are not float are ignored (and may be nil).
//
// Tensors the rule is to differentiate must come in the argument: a
// rule may capture values of transforms outside the one applying it
// (they are differentiated through the rule's own operations), but not
// of that one; and f may capture a Vmap's batched value, but not a
// tensor of an autodiff transform (Grad, VJP, JVP, …) that the argument
// holds none of, since that transform would differentiate f's own
// operations and skip the rule (JAX refuses it too).
//
// jvp must be linear in tangents (reverse mode transposes it) and
// written with peel operations, so that it can itself be differentiated
// for higher orders and vmapped (under Vmap the rule is applied to the
// batch, not f's operations).
//
// CustomJVP panics with *peel.Error when f or jvp is nil. The function it
// returns panics with *peel.Error when the argument is not a valid tree,
// when f or jvp returns nil or a tree with a nil tensor, or when jvp's
// tangent differs from the result in structure or has, at a float leaf, a
// nil tensor or one of another shape or dtype than the result leaf, or
// when jvp's result or tangent belongs to the transform applying the
// rule (jvp captured a tensor of it; the error names the leaf's path),
// or when f's result depends on a captured tensor of an autodiff
// transform the argument does not belong to.
func CustomJVP[A, R any](f func(A) R, jvp func(primals, tangents A) (R, R)) func(A) R {
	const op = "transforms.CustomJVP"
	if f == nil || jvp == nil {
		treeErrorf(op, "f and jvp must not be nil (f nil: %v, jvp nil: %v)", f == nil, jvp == nil)
	}
	return customJVP(op, f, jvp)
}

// customJVP is CustomJVP with errors naming op; f and jvp are not nil.
func customJVP[A, R any](op string, f func(A) R, jvp func(primals, tangents A) (R, R)) func(A) R {
	return func(a A) R {
		defer interp.Annotate(op)
		leaves, def := flatten(op, a)
		c := &userCall{op: op, in: def}
		rule := jvpRule{
			op:      op,
			top:     topLevel(leaves),
			outName: c.outName,
			f:       func(in []*tensor) []*tensor { return c.outLeaves("f", f(build[A](def, in))) },
			jvp: func(primals, tangents []*tensor) ([]*tensor, []*tensor) {
				r, tr := jvp(build[A](def, primals), build[A](def, tangents))
				outs := c.outLeaves("the JVP rule", r)
				touts, d := treeimpl.ProjectLeaves(op, r, tr)
				if d != "" {
					treeErrorf(op, "the JVP rule's tangent must have the result's structure: %s", d)
				}
				paths := c.out.Paths()
				for i, o := range outs {
					switch {
					case !o.DType().IsFloat():
						touts[i] = nil
					case touts[i] == nil:
						treeErrorf(op, "the JVP rule returned a nil tangent at result path %s (only leaves that are not float may have nil tangents)", pathOr(paths[i]))
					case !interp.AvalOf(touts[i]).Equal(interp.AvalOf(o)):
						treeErrorf(op, "the JVP rule's tangent at result path %s is %s, but the result leaf is %s", pathOr(paths[i]), touts[i].TypeString(), o.TypeString())
					}
				}
				return outs, touts
			},
		}
		return result[R](c, interp.Bind(customJVPCall, customJVPParams{rule}, leaves...))
	}
}

// CustomVJP returns f with its own reverse-mode rule: under reverse-mode
// transforms, fwd(x) computes the result and saves residuals, and
// bwd(residuals, ct) maps the result's cotangent to the argument's.
// fwd's result is the result: under autodiff f is not run (so fwd may
// save what f computes on the way instead of computing it twice).
// Outside autodiff the result is f.
//
// The argument, the result and the residuals are trees (a tensor, or
// slices, arrays, string-keyed maps, pointers and structs of them; see
// Grad). The static parts of the argument (values that hold no tensor)
// are arguments that are not differentiated, passed as they are; the
// residuals may hold static values and tensors of any dtype. ct has the
// result's structure, with zeros for the leaves that have no cotangent
// (and for those that are not float). bwd returns a tree of the
// argument's structure, or A's zero value for no cotangent at all: a nil
// leaf is a zero cotangent, cotangents of leaves that are not float are
// ignored (and may be nil), and static parts are ignored.
//
// Tensors the rule is to differentiate must come in the argument: fwd
// and bwd may capture values of transforms outside the one applying the
// rule (they are differentiated through the rule's own operations), but
// not of that one; and f may capture a Vmap's batched value, but not a
// tensor of an autodiff transform that the argument holds none of (as
// for CustomJVP).
//
// bwd is written with peel operations, so differentiating through it
// (second order, Hessians) uses the rule's own operations, and so is fwd:
// under Vmap the rule is applied to the batch, not f's operations.
// Forward mode of a CustomVJP function (JVP, Jacfwd, Linearize) panics
// with *peel.Error; give the function a CustomJVP rule instead.
//
// CustomVJP panics with *peel.Error when f, fwd or bwd is nil. The
// function it returns panics with *peel.Error when the argument is not a
// valid tree, when f or fwd returns nil or a tree with a nil tensor (in
// the result or the residuals), when bwd's result differs from the
// argument in structure, when its cotangent of a float leaf has another
// shape or dtype than the leaf, or when fwd's result or residuals belong
// to the transform applying the rule (fwd captured a tensor of it; the
// error names the leaf's path), or when f's result depends on a
// captured tensor of an autodiff transform the argument does not belong
// to.
func CustomVJP[A, R, Res any](f func(A) R, fwd func(A) (R, Res), bwd func(res Res, ct R) A) func(A) R {
	const op = "transforms.CustomVJP"
	checkVJPRule(op, f == nil, fwd == nil, bwd == nil)
	return customVJP(op, f, fwd, bwd, false)
}

func checkVJPRule(op string, fNil, fwdNil, bwdNil bool) {
	if fNil || fwdNil || bwdNil {
		treeErrorf(op, "f, fwd and bwd must not be nil (f nil: %v, fwd nil: %v, bwd nil: %v)", fNil, fwdNil, bwdNil)
	}
}

// customVJP is CustomVJP with errors naming op; f, fwd and bwd are not
// nil. With tuple, A is a positional-argument tuple (args2, args3) and a
// field of bwd's result that is its zero value is a zero cotangent for
// that argument.
func customVJP[A, R, Res any](op string, f func(A) R, fwd func(A) (R, Res), bwd func(res Res, ct R) A, tuple bool) func(A) R {
	return func(a A) R {
		defer interp.Annotate(op)
		leaves, def := flatten(op, a)
		c := &userCall{op: op, in: def}
		rule := vjpRule{
			op:      op,
			top:     topLevel(leaves),
			outName: c.outName,
			resName: c.resName,
			f:       func(in []*tensor) []*tensor { return c.outLeaves("f", f(build[A](def, in))) },
			fwd: func(in []*tensor) ([]*tensor, []*tensor) {
				r, res := fwd(build[A](def, in))
				outs := c.outLeaves("fwd", r)
				if !reflect.ValueOf(res).IsValid() {
					c.resNil = true
					return outs, nil
				}
				rl, rdef := flatten(op, res) // a nil tensor is an empty subtree
				c.res = rdef
				return outs, rl
			},
			bwd: func(res, cts []*tensor) []*tensor {
				var rv Res
				if !c.resNil {
					rv = build[Res](c.res, res)
				}
				return c.cotangentLeaves(bwd(rv, result[R](c, cts)), tuple)
			},
			argName: c.argName,
		}
		return result[R](c, interp.Bind(customVJPCall, customVJPParams{rule}, leaves...))
	}
}

// Custom rules under vmap: the primitive is bound again below with the
// user's functions vmapped (so the custom rule still applies to the
// batched computation), as JAX batches custom_jvp and custom_vjp.

// laneAval is the type of one lane of physical value x batched at dim.
func laneAval(x *tensor, dim int) interp.Aval {
	if dim == batching.NotMapped {
		return interp.AvalOf(x)
	}
	shape := append(append([]int{}, x.Shape()[:dim]...), x.Shape()[dim+1:]...)
	return interp.Aval{Shape: shape, DType: x.DType()}
}

func init() {
	batching.RegisterNamed(customJVPCall, func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		l := lanes{size, axis}
		cp := params.(customJVPParams)
		n := len(vals)
		// The vmapped rule returns the result leaves and then the
		// tangents of the float ones, listed in fout.
		var fout []int
		jvp := vmapped(l, append(append([]int{}, dims...), dims...), func(xs []*tensor) []*tensor {
			outs, touts := cp.jvp(xs[:n], xs[n:])
			r := append([]*tensor(nil), outs...)
			fout = fout[:0]
			for i, t := range touts {
				if t != nil {
					r = append(r, t)
					fout = append(fout, i)
				}
			}
			return r
		})
		bp := customJVPParams{jvpRule{
			op:      cp.op,
			top:     topLevel(vals),
			outName: cp.outName,
			f:       vmapped(l, dims, cp.f),
			jvp: func(p, t []*tensor) ([]*tensor, []*tensor) {
				r := jvp(append(append([]*tensor{}, p...), t...))
				m := len(r) - len(fout)
				touts := make([]*tensor, m)
				for k, i := range fout {
					touts[i] = r[m+k]
				}
				return r[:m], touts
			},
		}}
		outs := interp.Bind(customJVPCall, bp, vals...)
		return outs, make([]int, len(outs))
	})
	batching.RegisterNamed(customVJPCall, func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		l := lanes{size, axis}
		cp := params.(customVJPParams)
		lane := make([]interp.Aval, len(vals))
		var fin []int // the float argument leaves
		for i, v := range vals {
			lane[i] = laneAval(v, dims[i])
			if v.DType().IsFloat() {
				fin = append(fin, i)
			}
		}
		nOut := 0
		fwd := vmapped(l, dims, func(xs []*tensor) []*tensor {
			outs, res := cp.fwd(xs)
			nOut = len(outs)
			return append(append([]*tensor(nil), outs...), res...)
		})
		bp := customVJPParams{vjpRule{
			op:      cp.op,
			top:     topLevel(vals),
			outName: cp.outName,
			resName: cp.resName,
			f:       vmapped(l, dims, cp.f),
			fwd: func(xs []*tensor) ([]*tensor, []*tensor) {
				r := fwd(xs)
				return r[:nOut], r[nOut:]
			},
			bwd: func(res, cts []*tensor) []*tensor {
				// Residuals and cotangents are batched at 0; the
				// vmapped rule returns the cotangents of the float
				// argument leaves.
				nres := len(res)
				bwd := vmapped(l, make([]int, nres+len(cts)), func(xs []*tensor) []*tensor {
					got := checkCotangents(cp.op, cp.bwd(xs[:nres], xs[nres:]), lane, cp.argName)
					r := make([]*tensor, len(fin))
					for k, i := range fin {
						r[k] = autodiff.ZerosIfNil(got[i], lane[i])
					}
					return r
				})
				r := bwd(append(append([]*tensor{}, res...), cts...))
				full := make([]*tensor, len(vals))
				for k, i := range fin {
					switch d := dims[i]; {
					case d == batching.NotMapped:
						// An operand shared by every lane gets the sum
						// of the lanes' cotangents.
						full[i] = peel.Sum(r[k], 0)
					case d != 0:
						full[i] = batching.MoveDim(r[k], 0, d)
					default:
						full[i] = r[k]
					}
				}
				return full
			},
			argName: cp.argName,
		}}
		outs := interp.Bind(customVJPCall, bp, vals...)
		return outs, make([]int, len(outs))
	})
}
