package transforms

import (
	"reflect"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/interp"
)

type tensor = interp.Tensor

// call flattens f: A → B into a function over leaves.
func flatFn[A, B any](op string, f func(A) B, inDef *treeDef, outDef **treeDef) func([]*tensor) []*tensor {
	return func(leaves []*tensor) []*tensor {
		a := inDef.Unflatten(leaves).Interface().(A)
		out, def := flattenResult(op, f(a))
		if outDef != nil {
			*outDef = def
		}
		return out
	}
}

func build[A any](def *treeDef, leaves []*tensor) A {
	return def.Unflatten(leaves).Interface().(A)
}

// checkFloatLeaves panics with *Error naming op if a leaf to be
// differentiated is not a float tensor.
func checkFloatLeaves(op string, leaves []*tensor, name func(i int) string) {
	for i, l := range leaves {
		if !l.DType().IsFloat() {
			treeErrorf(op, "cannot differentiate with respect to %s of dtype %v (%s): only float tensors have derivatives; convert it with peel.AsType or pass it as an argument that is not differentiated", name(i), l.DType(), l.TypeString())
		}
	}
}

func ones(a interp.Aval) *tensor {
	return peel.AsType(peel.Full(peel.Float64, 1, a.Shape...), a.DType)
}

// fillZeros replaces nil (symbolic zero) cotangents with zero tensors.
func fillZeros(cts []*tensor, like []interp.Aval) []*tensor {
	for i, c := range cts {
		if c == nil {
			cts[i] = autodiff.Zeros(like[i])
		}
	}
	return cts
}

// valueAndGrad is the core of Grad and its variants: the scalar output of
// f at leaves (the first result of f) and its gradient with respect to
// every leaf. f's further results (GradAux's aux leaves) are not
// differentiated: they come back as primal values, unwrapped from the
// levels entered here.
func valueAndGrad(op string, f func([]*tensor) []*tensor, leaves []*tensor, name func(i int) string, cfg *gradConfig) (value *tensor, grads, rest []*tensor) {
	policy, plans := cfg.remat, cfg.rematPlans
	if policy == nil {
		policy, plans = compiledRemat(leaves...)
	}
	plain := f
	if policy != nil {
		f = checkpointFlat(plain, *policy, plans)
	}
	scalar := func(in []*tensor) []*tensor {
		// Checked inside the level, so the error names it.
		checkFloatLeaves(op, leaves, name)
		outs := f(in)
		o := outs[0]
		if o == nil {
			treeErrorf(op, "the function returned a nil tensor at result path (the root)")
		}
		if o.Rank() != 0 || !o.DType().IsFloat() {
			treeErrorf(op, "the function must return a scalar float tensor, not %s; for other outputs use VJP or Jacrev", o.TypeString())
		}
		return outs
	}
	lin := autodiff.Linearize("grad", scalar, leaves)
	if policy == nil {
		// A gradient of captured values in a compiled function finds its
		// default policy through the result instead: run again with it.
		if policy, plans = compiledRemat(lin.Outs[0]); policy != nil {
			lin.Release()
			f = checkpointFlat(plain, *policy, plans)
			lin = autodiff.Linearize("grad", scalar, leaves)
		}
	}
	defer lin.Release()
	out := lin.Outs[0]
	cts := make([]*tensor, len(lin.Outs)) // no cotangent for the aux leaves
	cts[0] = ones(interp.AvalOf(out))
	if cfg.compileBackward {
		cts = transposeCompiled(lin, cts)
	} else {
		cts = lin.Transpose(cts)
	}
	return out, fillZeros(cts[:len(leaves)], lin.In), lin.Outs[1:]
}

// valueAndGradAs is ValueAndGrad with errors naming op.
func valueAndGradAs[A any](op string, f func(A) *peel.Tensor, opts []GradOption) func(A) (*peel.Tensor, A) {
	cfg := gradConfigOf(opts)
	return func(x A) (*peel.Tensor, A) {
		leaves, def := flatten(op, x)
		fl := func(in []*tensor) []*tensor { return []*tensor{f(build[A](def, in))} }
		v, g, _ := valueAndGrad(op, fl, leaves, argName(def), cfg)
		runGradHooks(op, cfg, g, leafPath(def))
		return v, build[A](def, g)
	}
}

// Grad returns a function computing the gradient of f, whose result must
// be a scalar float tensor, with respect to its argument: a tree (a
// tensor, or slices, arrays, string-keyed maps, pointers, interfaces and
// structs of exported fields of them) whose tensors are all float. The
// gradient has the argument's structure; the tree's static parts
// (values that hold no tensor, unexported fields among them) are kept.
//
// The function Grad returns panics with *peel.Error when f returns a nil
// tensor or a result that is not a scalar float tensor (use VJP or
// Jacrev), when the argument is not a valid tree (a nil leaf, a tensor in
// an unexported field, a cycle; the error names the path), when a leaf
// of the argument is not a float tensor, or when f misuses a tensor. The
// other transforms taking trees panic the same way for invalid trees.
// Options: CompileBackward, Remat (Argnums is for the GradArgs forms, and an
// *Error here).
func Grad[A any](f func(A) *peel.Tensor, opts ...GradOption) func(A) A {
	needFunc("transforms.Grad", f)
	vg := valueAndGradAs("transforms.Grad", f, opts)
	return func(x A) A {
		_, g := vg(x)
		return g
	}
}

// ValueAndGrad is Grad that also returns f's value.
func ValueAndGrad[A any](f func(A) *peel.Tensor, opts ...GradOption) func(A) (*peel.Tensor, A) {
	needFunc("transforms.ValueAndGrad", f)
	return valueAndGradAs("transforms.ValueAndGrad", f, opts)
}

// GradAux is Grad for a function that also returns auxiliary data (JAX's
// has_aux), which is not differentiated. aux is a tree, returned with
// its static parts kept and each tensor leaf as its value (concrete when
// GradAux is not itself inside a transform, never a tracer of GradAux's
// own levels); nil tensor leaves and a nil aux are kept. It panics as
// Grad does, and also when aux is not a valid tree.
func GradAux[A, X any](f func(A) (*peel.Tensor, X), opts ...GradOption) func(A) (A, X) {
	const op = "transforms.GradAux"
	needFunc(op, f)
	return gradAuxAs(op, f, gradConfigOf(opts))
}

// gradAuxAs is GradAux with errors naming op and its options read.
func gradAuxAs[A, X any](op string, f func(A) (*peel.Tensor, X), cfg *gradConfig) func(A) (A, X) {
	return func(x A) (A, X) {
		leaves, def := flatten(op, x)
		var aux auxResult[X]
		fl := func(in []*tensor) []*tensor {
			v, a := f(build[A](def, in))
			return append([]*tensor{v}, aux.collect(op, a)...)
		}
		_, g, rest := valueAndGrad(op, fl, leaves, argName(def), cfg)
		runGradHooks(op, cfg, g, leafPath(def))
		return build[A](def, g), aux.result(rest)
	}
}

// auxResult carries a function's auxiliary data (has_aux) through a
// transform: collect records it and returns its non-nil leaves (passed
// on as extra, undifferentiated outputs), result rebuilds it from their
// primal values.
type auxResult[X any] struct {
	aux X
	def *treeDef
	in  []*tensor // aux's leaves, nil ones included
}

func (r *auxResult[X]) collect(op string, a X) []*tensor {
	r.aux, r.def, r.in = a, nil, nil
	if !reflect.ValueOf(a).IsValid() {
		return nil
	}
	r.in, r.def = flattenAs(op, a, auxTree)
	var outs []*tensor
	for _, l := range r.in {
		if l != nil {
			outs = append(outs, l)
		}
	}
	return outs
}

func (r *auxResult[X]) result(rest []*tensor) X {
	if r.def == nil {
		return r.aux
	}
	out := make([]*tensor, len(r.in))
	k := 0
	for i, l := range r.in {
		if l != nil {
			out[i] = rest[k]
			k++
		}
	}
	return build[X](r.def, out)
}

// argName names leaf i of a tree in errors.
// leafPath returns the path of leaf i of def, "(root)" for the root.
func leafPath(def *treeDef) func(int) string {
	return func(i int) string { return pathOr(def.Paths()[i]) }
}

func argName(def *treeDef) func(int) string {
	return func(i int) string { return def.LeafName("the argument", i) }
}

// VJP evaluates f at primals and returns its value and the pullback: a
// function mapping a cotangent shaped like f's value to the cotangent of
// primals. Only float leaves are differentiated; the pullback gives zeros
// for the others. The pullback may be called many times.
func VJP[A, B any](f func(A) B, primals A) (B, func(B) A) {
	needFunc("transforms.VJP", f)
	return vjpAs("transforms.VJP", f, primals)
}

// vjpAs is VJP with errors naming op.
func vjpAs[A, B any](op string, f func(A) B, primals A) (B, func(B) A) {
	leaves, def := flatten(op, primals)
	var outDef *treeDef
	lin := autodiff.Linearize("vjp", flatFn(op, f, def, &outDef), leaves)
	return build[B](outDef, lin.Outs), pullback[A, B](op, lin, def, outDef)
}

// VJPAux is VJP for a function that also returns auxiliary data (JAX's
// vjp(…, has_aux=True), torch.func.vjp's has_aux): it returns f's value,
// the pullback of the value, and aux. aux is not differentiated: it
// comes back as in GradAux, its tensor leaves as their values (never
// tracers of VJPAux's own levels), static parts and nil leaves kept.
// It panics as VJP does, and also when aux is not a valid tree.
func VJPAux[A, B, X any](f func(A) (B, X), primals A) (B, func(B) A, X) {
	needFunc("transforms.VJPAux", f)
	return vjpAuxAs("transforms.VJPAux", f, primals)
}

// vjpAuxAs is VJPAux with errors naming op.
func vjpAuxAs[A, B, X any](op string, f func(A) (B, X), primals A) (B, func(B) A, X) {
	leaves, def := flatten(op, primals)
	var outDef *treeDef
	var aux auxResult[X]
	n := 0
	lin := autodiff.Linearize("vjp", withAux(op, f, def, &outDef, &n, &aux), leaves)
	return build[B](outDef, lin.Outs[:n]), pullback[A, B](op, lin, def, outDef), aux.result(lin.Outs[n:])
}

// withAux flattens f: A → (B, X) into a function over leaves that
// returns B's leaves, then aux's non-nil leaves: extra outputs carried
// through a transform that are never given a tangent's use or a
// cotangent, so they come back as primal values (GradAux's mechanism).
// It records B's definition in *outDef and its number of leaves in *n.
func withAux[A, B, X any](op string, f func(A) (B, X), def *treeDef, outDef **treeDef, n *int, aux *auxResult[X]) func([]*tensor) []*tensor {
	return func(in []*tensor) []*tensor {
		b, x := f(build[A](def, in))
		out, bdef := flattenResult(op, b)
		*outDef, *n = bdef, len(out)
		return append(append([]*tensor(nil), out...), aux.collect(op, x)...)
	}
}

// pullback returns the pullback of lin, the linearization of a function
// of the leaves of def whose first results are the leaves of outDef
// (further results, aux leaves, get no cotangent). The function it
// returns panics with *Error naming op when the cotangent differs from
// the value in structure, shape or dtype.
func pullback[A, B any](op string, lin *autodiff.Linearized, def, outDef *treeDef) func(B) A {
	return func(ct B) A {
		cts, cdef := flatten(op, ct)
		sameStructure(op, outDef.Proto().Interface(), cdef.Proto().Interface())
		full := make([]*tensor, len(lin.Outs))
		for i, c := range cts {
			if !interp.AvalOf(c).Equal(interp.AvalOf(lin.Outs[i])) {
				treeErrorf(op, "cotangent %s is %s, but the output is %s", cdef.LeafName("(the whole cotangent)", i), c.TypeString(), lin.Outs[i].TypeString())
			}
			if c.DType().IsFloat() {
				full[i] = c
			}
		}
		return build[A](def, fillZeros(lin.Transpose(full), lin.In))
	}
}

// JVP evaluates f at primals and returns its value and the directional
// derivative along tangents (forward mode). tangents has primals'
// structure, shapes and dtypes; tangents of non-float leaves are ignored.
// It panics with *peel.Error when the trees differ in structure or a
// tangent's shape or dtype differs from its primal's (the error names
// the leaf's path).
func JVP[A, B any](f func(A) B, primals, tangents A) (B, B) {
	const op = "transforms.JVP"
	needFunc(op, f)
	leaves, def := flatten(op, primals)
	given, tdef := flatten(op, tangents)
	return jvpRun(op, f, leaves, def, func() []*tensor {
		sameStructure(op, def.Proto().Interface(), tdef.Proto().Interface())
		checkTangents(op, given, leaves, func(i int) string { return tdef.LeafName("(the whole tangent)", i) })
		return given
	})
}

// JVPAux is JVP for a function that also returns auxiliary data (JAX's
// jvp(…, has_aux=True), torch.func.jvp's has_aux): it returns f's value,
// its directional derivative along tangents, and aux. aux is not
// differentiated: it comes back as in GradAux, its tensor leaves as
// their values. It panics as JVP does, and also when aux is not a valid
// tree.
func JVPAux[A, B, X any](f func(A) (B, X), primals, tangents A) (B, B, X) {
	needFunc("transforms.JVPAux", f)
	return jvpAuxAs("transforms.JVPAux", f, primals, tangents)
}

// jvpAuxAs is JVPAux with errors naming op.
func jvpAuxAs[A, B, X any](op string, f func(A) (B, X), primals, tangents A) (B, B, X) {
	leaves, def := flatten(op, primals)
	given, tdef := flatten(op, tangents)
	var outDef *treeDef
	var aux auxResult[X]
	n := 0
	outs, touts := jvpRunFlat(withAux(op, f, def, &outDef, &n, &aux), leaves, func() []*tensor {
		sameStructure(op, def.Proto().Interface(), tdef.Proto().Interface())
		checkTangents(op, given, leaves, func(i int) string { return tdef.LeafName("(the whole tangent)", i) })
		return given
	})
	return build[B](outDef, outs[:n]), build[B](outDef, touts[:n]), aux.result(outs[n:])
}

// jvpTuple is JVP of tf at tuple (whose positional arguments are args)
// along one tangent per argument; a zero-valued tangent is zero.
func jvpTuple[P, R any](op string, tf func(P) R, tuple P, args, tangents []any) (R, R) {
	leaves, def := flatten(op, tuple)
	return jvpRun(op, tf, leaves, def, func() []*tensor {
		tl := make([]*tensor, len(leaves))
		for k, t := range tangents {
			idx := argLeaves(def, oneHot(k, len(args)))
			if v := reflect.ValueOf(t); !v.IsValid() || v.IsZero() {
				continue // zero tangent
			}
			given, tdef := flatten(op, t)
			sameStructure(op, reflect.ValueOf(args[k]).Interface(), tdef.Proto().Interface())
			prim := make([]*tensor, len(idx))
			for j, i := range idx {
				prim[j] = leaves[i]
			}
			checkTangents(op, given, prim, func(j int) string { return "leaf " + def.Paths()[idx[j]] })
			for j, i := range idx {
				tl[i] = given[j]
			}
		}
		return tl
	})
}

func oneHot(k, n int) []bool {
	sel := make([]bool, n)
	sel[k] = true
	return sel
}

// checkTangents panics with *Error naming op when a tangent's type
// differs from its primal's.
func checkTangents(op string, given, primals []*tensor, name func(int) string) {
	for i, t := range given {
		if !interp.AvalOf(t).Equal(interp.AvalOf(primals[i])) {
			treeErrorf(op, "tangent %s is %s, but its primal is %s", name(i), t.TypeString(), primals[i].TypeString())
		}
	}
}

// jvpRun is the core of JVP: tangents returns one tangent per leaf
// (nil: zero), panicking with *Error when they do not match; it is
// called again inside the forward-mode level, so that its errors name
// the level.
func jvpRun[A, B any](op string, f func(A) B, leaves []*tensor, def *treeDef, tangents func() []*tensor) (B, B) {
	var outDef *treeDef
	outs, touts := jvpRunFlat(flatFn(op, f, def, &outDef), leaves, tangents)
	return build[B](outDef, outs), build[B](outDef, touts)
}

// jvpRunFlat is jvpRun of a function of leaves: the results and their
// tangents (zeros where symbolic).
func jvpRunFlat(fl func([]*tensor) []*tensor, leaves []*tensor, tangents func() []*tensor) (outs, touts []*tensor) {
	checked := func(in []*tensor) []*tensor {
		tangents()
		return fl(in)
	}
	outs, touts = autodiff.JVP("jvp", checked, leaves, tryTangents(tangents, len(leaves)))
	avals := make([]interp.Aval, len(outs))
	for i, o := range outs {
		avals[i] = interp.AvalOf(o)
	}
	return outs, fillZeros(touts, avals)
}

// tryTangents returns tangents(), with the tangents of non-float leaves
// dropped, or n zero tangents when it panics with *Error (the check
// inside the level reports it).
func tryTangents(tangents func() []*tensor, n int) (tl []*tensor) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*interp.Error); !ok {
				panic(r)
			}
			tl = make([]*tensor, n)
		}
	}()
	tl = append([]*tensor(nil), tangents()...) // a copy: tangents' own slice is checked again
	for i, t := range tl {
		if t != nil && !t.DType().IsFloat() {
			tl[i] = nil
		}
	}
	return tl
}

// Linearize evaluates f at primals and returns its value and its
// linearization: a function computing the JVP at primals along any
// tangent without evaluating f again (the tangent computation is a staged
// linear graph).
func Linearize[A, B any](f func(A) B, primals A) (B, func(A) B) {
	needFunc("transforms.Linearize", f)
	return linearizeAs("transforms.Linearize", f, primals)
}

// linearizeAs is Linearize with errors naming op.
func linearizeAs[A, B any](op string, f func(A) B, primals A) (B, func(A) B) {
	leaves, def := flatten(op, primals)
	var outDef *treeDef
	lin := autodiff.Linearize("linearize", flatFn(op, f, def, &outDef), leaves)
	return build[B](outDef, lin.Outs), tangentMap[A, B](op, lin, def, outDef)
}

// LinearizeAux is Linearize for a function that also returns auxiliary
// data (JAX's linearize(…, has_aux=True)): it returns f's value, its
// linearization, and aux. aux is not differentiated: it comes back as in
// GradAux, its tensor leaves as their values, and the linearization
// computes no tangent of it. It panics as Linearize does, and also when
// aux is not a valid tree.
func LinearizeAux[A, B, X any](f func(A) (B, X), primals A) (B, func(A) B, X) {
	needFunc("transforms.LinearizeAux", f)
	return linearizeAuxAs("transforms.LinearizeAux", f, primals)
}

// linearizeAuxAs is LinearizeAux with errors naming op.
func linearizeAuxAs[A, B, X any](op string, f func(A) (B, X), primals A) (B, func(A) B, X) {
	leaves, def := flatten(op, primals)
	var outDef *treeDef
	var aux auxResult[X]
	n := 0
	lin := autodiff.Linearize("linearize", withAux(op, f, def, &outDef, &n, &aux), leaves)
	x := aux.result(lin.Outs[n:])
	// The tangent map keeps the value's tangents only.
	g := *lin.Graph
	g.Out = g.Out[:n]
	lin.Graph, lin.Outs = g.DCE(), lin.Outs[:n]
	return build[B](outDef, lin.Outs), tangentMap[A, B](op, lin, def, outDef), x
}

// tangentMap returns lin's tangent map on trees: def is the argument's
// definition, outDef the result's. The function it returns panics with
// *Error naming op when a tangent differs from the argument in
// structure, shape or dtype.
func tangentMap[A, B any](op string, lin *autodiff.Linearized, def, outDef *treeDef) func(A) B {
	return func(t A) B {
		tl, tdef := flatten(op, t)
		sameStructure(op, def.Proto().Interface(), tdef.Proto().Interface())
		for i, x := range tl {
			if !interp.AvalOf(x).Equal(lin.In[i]) {
				treeErrorf(op, "tangent %s is %s, but its primal is %s", tdef.LeafName("(the whole tangent)", i), x.TypeString(), lin.In[i])
			}
		}
		return build[B](outDef, lin.Apply(tl))
	}
}

// Graph is a staged program (interp.Graph): Eval runs it (under any
// transform), String prints it like a jaxpr, Compile runs elementwise
// graphs blocked. Its constants are kept by value.
type Graph = interp.Graph

// MakeGraph returns the staged graph of f at arguments shaped like args:
// every primitive f applies to them, transforms included (MakeGraph of
// Grad(g) shows the forward and backward passes), after dead-code
// elimination. The graph's inputs are args' leaves in tree order, and its
// outputs the result's leaves. An op defined with customop.Define is one
// equation (so a compiler can keep its fused kernel) unless opts include
// Decompose.
func MakeGraph[A, B any](f func(A) B, args A, opts ...GraphOption) *Graph {
	needFunc("transforms.MakeGraph", f)
	return makeGraphAs("transforms.MakeGraph", f, args, opts)
}

// makeGraphAs is MakeGraph with errors naming op.
func makeGraphAs[A, B any](op string, f func(A) B, args A, opts []GraphOption) *Graph {
	leaves, def := flatten(op, args)
	cfg := &graphConfig{}
	for _, o := range opts {
		o.applyGraph(cfg)
	}
	var topts []interp.TraceOption
	if cfg.decompose {
		topts = append(topts, interp.DecomposeOps())
	}
	return interp.Trace(flatFn(op, f, def, nil), leaves, topts...)
}
