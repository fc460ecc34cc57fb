package transforms

import (
	"reflect"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// call flattens f: A → B into a function over leaves.
func flatFn[A, B any](op string, f func(A) B, inDef *treeDef, outDef **treeDef) func([]*T) []*T {
	return func(leaves []*T) []*T {
		a := inDef.Unflatten(leaves).Interface().(A)
		out, def := flattenResult(op, f(a))
		if outDef != nil {
			*outDef = def
		}
		return out
	}
}

func build[A any](def *treeDef, leaves []*T) A {
	return def.Unflatten(leaves).Interface().(A)
}

// checkFloatLeaves panics with *Error naming op if a leaf to be
// differentiated is not a float tensor.
func checkFloatLeaves(op string, leaves []*T, def *treeDef) {
	for i, l := range leaves {
		if !l.DType().IsFloat() {
			treeErrorf(op, "cannot differentiate with respect to %s of dtype %v (%s): only float tensors have derivatives; convert it with peel.AsType or pass it as an argument that is not differentiated", def.LeafName("the argument", i), l.DType(), l.TypeString())
		}
	}
}

func ones(a interp.Aval) *T {
	return peel.AsType(peel.Full(1, peel.Float64, a.Shape...), a.DType)
}

// fillZeros replaces nil (symbolic zero) cotangents with zero tensors.
func fillZeros(cts []*T, like []interp.Aval) []*T {
	for i, c := range cts {
		if c == nil {
			cts[i] = zeros(like[i])
		}
	}
	return cts
}

// valueAndGrad is the core of Grad and its variants: the scalar output of
// f at leaves (the first result of f) and its gradient with respect to
// every leaf. f's further results (GradAux's aux leaves) are not
// differentiated: they come back as primal values, unwrapped from the
// levels entered here.
func valueAndGrad(op string, f func([]*T) []*T, leaves []*T, def *treeDef) (value *T, grads, rest []*T) {
	scalar := func(in []*T) []*T {
		// Checked inside the level, so the error names it.
		checkFloatLeaves(op, leaves, def)
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
	lin := linearizeFlat("grad", scalar, leaves)
	defer lin.release()
	out := lin.outs[0]
	cts := make([]*T, len(lin.outs)) // no cotangent for the aux leaves
	cts[0] = ones(out.Aval())
	cts = lin.transpose(cts)
	return out, fillZeros(cts[:len(leaves)], lin.in), lin.outs[1:]
}

// valueAndGradAs is ValueAndGrad with errors naming op.
func valueAndGradAs[A any](op string, f func(A) *peel.Tensor) func(A) (*peel.Tensor, A) {
	return func(x A) (*peel.Tensor, A) {
		leaves, def := flatten(op, x)
		fl := func(in []*T) []*T { return []*T{f(build[A](def, in))} }
		v, g, _ := valueAndGrad(op, fl, leaves, def)
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
func Grad[A any](f func(A) *peel.Tensor) func(A) A {
	vg := valueAndGradAs("transforms.Grad", f)
	return func(x A) A {
		_, g := vg(x)
		return g
	}
}

// ValueAndGrad is Grad that also returns f's value.
func ValueAndGrad[A any](f func(A) *peel.Tensor) func(A) (*peel.Tensor, A) {
	return valueAndGradAs("transforms.ValueAndGrad", f)
}

// GradAux is Grad for a function that also returns auxiliary data (JAX's
// has_aux), which is not differentiated. aux is a tree, returned with
// its static parts kept and each tensor leaf as its value (concrete when
// GradAux is not itself inside a transform, never a tracer of GradAux's
// own levels); nil tensor leaves and a nil aux are kept. It panics as
// Grad does, and also when aux is not a valid tree.
func GradAux[A, X any](f func(A) (*peel.Tensor, X)) func(A) (A, X) {
	return func(x A) (A, X) {
		const op = "transforms.GradAux"
		leaves, def := flatten(op, x)
		var (
			aux    X
			auxDef *treeDef
			auxIn  []*T // aux's leaves, nil ones included
		)
		fl := func(in []*T) []*T {
			v, a := f(build[A](def, in))
			aux = a
			outs := []*T{v}
			if reflect.ValueOf(a).IsValid() {
				auxIn, auxDef = flattenAs(op, a, auxTree)
				for _, l := range auxIn {
					if l != nil {
						outs = append(outs, l)
					}
				}
			}
			return outs
		}
		_, g, rest := valueAndGrad(op, fl, leaves, def)
		if auxDef == nil {
			return build[A](def, g), aux
		}
		auxOut := make([]*T, len(auxIn))
		k := 0
		for i, l := range auxIn {
			if l != nil {
				auxOut[i] = rest[k]
				k++
			}
		}
		return build[A](def, g), build[X](auxDef, auxOut)
	}
}

// Grad2 differentiates a function of two arguments with respect to the
// first only (JAX's argnums=0); the second is held constant and may hold
// integer tensors such as labels.
func Grad2[A, B any](f func(A, B) *peel.Tensor) func(A, B) A {
	return func(x A, y B) A {
		_, g := valueAndGradAs("transforms.Grad2", func(x A) *peel.Tensor { return f(x, y) })(x)
		return g
	}
}

// VJP evaluates f at primals and returns its value and the pullback: a
// function mapping a cotangent shaped like f's value to the cotangent of
// primals. Only float leaves are differentiated; the pullback gives zeros
// for the others. The pullback may be called many times.
func VJP[A, B any](f func(A) B, primals A) (B, func(B) A) {
	const op = "transforms.VJP"
	leaves, def := flatten(op, primals)
	var outDef *treeDef
	lin := linearizeFlat("vjp", flatFn(op, f, def, &outDef), leaves)
	out := build[B](outDef, lin.outs)
	pullback := func(ct B) A {
		cts, cdef := flatten(op, ct)
		sameStructure(op, outDef.Proto().Interface(), cdef.Proto().Interface())
		for i, c := range cts {
			if !c.Aval().Equal(lin.outs[i].Aval()) {
				treeErrorf(op, "cotangent %s is %s, but the output is %s", cdef.LeafName("(the whole cotangent)", i), c.TypeString(), lin.outs[i].TypeString())
			}
			if !c.DType().IsFloat() {
				cts[i] = nil
			}
		}
		return build[A](def, fillZeros(lin.transpose(cts), lin.in))
	}
	return out, pullback
}

// JVP evaluates f at primals and returns its value and the directional
// derivative along tangents (forward mode). tangents has primals'
// structure, shapes and dtypes; tangents of non-float leaves are ignored.
// It panics with *peel.Error when the trees differ in structure or a
// tangent's shape or dtype differs from its primal's.
func JVP[A, B any](f func(A) B, primals, tangents A) (B, B) {
	const op = "transforms.JVP"
	leaves, def := flatten(op, primals)
	given, tdef := flatten(op, tangents)
	var outDef *treeDef
	fl := flatFn(op, f, def, &outDef)
	checked := func(in []*T) []*T {
		// Checked inside the level, so the error names it.
		sameStructure(op, def.Proto().Interface(), tdef.Proto().Interface())
		for i, t := range given {
			if !t.Aval().Equal(leaves[i].Aval()) {
				treeErrorf(op, "tangent %s is %s, but its primal is %s", tdef.LeafName("(the whole tangent)", i), t.TypeString(), leaves[i].TypeString())
			}
		}
		return fl(in)
	}
	tl := make([]*T, len(leaves))
	if len(given) == len(leaves) {
		for i, t := range given {
			if t.DType().IsFloat() && t.Aval().Equal(leaves[i].Aval()) {
				tl[i] = t
			}
		}
	}
	outs, touts := jvpFlat("jvp", checked, leaves, tl)
	avals := make([]interp.Aval, len(outs))
	for i, o := range outs {
		avals[i] = o.Aval()
	}
	return build[B](outDef, outs), build[B](outDef, fillZeros(touts, avals))
}

// Linearize evaluates f at primals and returns its value and its
// linearization: a function computing the JVP at primals along any
// tangent without evaluating f again (the tangent computation is a staged
// linear graph).
func Linearize[A, B any](f func(A) B, primals A) (B, func(A) B) {
	const op = "transforms.Linearize"
	leaves, def := flatten(op, primals)
	var outDef *treeDef
	lin := linearizeFlat("linearize", flatFn(op, f, def, &outDef), leaves)
	out := build[B](outDef, lin.outs)
	return out, func(t A) B {
		tl, tdef := flatten(op, t)
		sameStructure(op, def.Proto().Interface(), tdef.Proto().Interface())
		for i, x := range tl {
			if !x.Aval().Equal(lin.in[i]) {
				treeErrorf(op, "tangent %s is %s, but its primal is %s", tdef.LeafName("(the whole tangent)", i), x.TypeString(), lin.in[i])
			}
		}
		return build[B](outDef, lin.apply(tl))
	}
}

// jacobianShape is out.shape + in.shape.
func jacobianShape(out, in []int) []int {
	return append(append([]int{}, out...), in...)
}

// nonNilResult returns y, the result of the user's function, panicking
// with *Error naming op if it is nil.
func nonNilResult(op string, y *T) *T {
	if y == nil {
		treeErrorf(op, "the function returned a nil tensor at result path (the root)")
	}
	return y
}

func checkJacobianTypes(op string, x, y *T) {
	if !x.DType().IsFloat() {
		treeErrorf(op, "the input must be a float tensor, not %s", x.TypeString())
	}
	if !y.DType().IsFloat() {
		treeErrorf(op, "the output must be a float tensor, not %s", y.TypeString())
	}
}

// Jacrev returns a function computing the Jacobian of f in reverse mode,
// of shape f(x).shape + x.shape: f is linearized once and its transpose is
// vmapped over the rows of an identity. ChunkSize among opts bounds the
// rows computed at once; it is the only option a Jacobian takes (the
// function panics with *peel.Error for InAxes, OutAxes or AxisSize).
func Jacrev(f func(*peel.Tensor) *peel.Tensor, opts ...VmapOption) func(*peel.Tensor) *peel.Tensor {
	return func(x *peel.Tensor) *peel.Tensor {
		const op = "transforms.Jacrev"
		cfg := jacobianOptions(op, opts)
		if x == nil {
			treeErrorf(op, "the argument is a nil tensor")
		}
		checkJacobianTypes(op, x, x)
		lin := linearizeFlat("jacrev", func(in []*T) []*T { return []*T{nonNilResult(op, f(in[0]))} }, []*T{x})
		defer lin.release()
		y := lin.outs[0]
		checkJacobianTypes(op, x, y)
		shape := jacobianShape(y.Shape(), x.Shape())
		if y.Size() == 0 || x.Size() == 0 {
			return zeros(interp.Aval{Shape: shape, DType: x.DType()})
		}
		rows := jacobianVmap(func(ct *T) *T {
			return zeroIfNil(lin.transpose([]*T{ct})[0], x.Aval())
		}, y.Size(), y.Aval(), 0, op, cfg)
		return peel.Reshape(rows, shape...)
	}
}

// Jacfwd returns a function computing the Jacobian of f in forward mode,
// of shape f(x).shape + x.shape: f is linearized once and the linear map
// is vmapped over the rows of an identity. ChunkSize among opts bounds
// the columns computed at once; it is the only option a Jacobian takes,
// as for Jacrev.
func Jacfwd(f func(*peel.Tensor) *peel.Tensor, opts ...VmapOption) func(*peel.Tensor) *peel.Tensor {
	return func(x *peel.Tensor) *peel.Tensor {
		const op = "transforms.Jacfwd"
		cfg := jacobianOptions(op, opts)
		if x == nil {
			treeErrorf(op, "the argument is a nil tensor")
		}
		checkJacobianTypes(op, x, x)
		lin := linearizeFlat("jacfwd", func(in []*T) []*T { return []*T{nonNilResult(op, f(in[0]))} }, []*T{x})
		defer lin.release()
		y := lin.outs[0]
		checkJacobianTypes(op, x, y)
		shape := jacobianShape(y.Shape(), x.Shape())
		if y.Size() == 0 || x.Size() == 0 {
			return zeros(interp.Aval{Shape: shape, DType: x.DType()})
		}
		cols := jacobianVmap(func(t *T) *T { return lin.apply([]*T{t})[0] }, x.Size(), x.Aval(), y.Rank(), op, cfg)
		return peel.Reshape(cols, shape...)
	}
}

// Hessian returns a function computing the Hessian of f, Jacfwd of
// Jacrev: of shape x.shape + x.shape for a scalar f, and f(x).shape +
// x.shape + x.shape (one Hessian per output element) for any other.
// ChunkSize among opts bounds the rows or columns computed at once. It
// panics as Jacrev and Jacfwd do.
func Hessian(f func(*peel.Tensor) *peel.Tensor, opts ...VmapOption) func(*peel.Tensor) *peel.Tensor {
	h := Jacfwd(Jacrev(f, opts...), opts...)
	return func(x *peel.Tensor) *peel.Tensor {
		defer interp.Annotate("transforms.Hessian")
		return h(x)
	}
}

// HVP returns the Hessian-vector product of a scalar function f at x
// along v, forward-over-reverse (one JVP of the gradient), without
// forming the Hessian.
func HVP(f func(*peel.Tensor) *peel.Tensor, x, v *peel.Tensor) *peel.Tensor {
	defer interp.Annotate("transforms.HVP")
	_, t := JVP(Grad(f), x, v)
	return t
}

// StopGradient returns x as a constant for differentiation: its value
// flows, its derivative is zero.
func StopGradient(x *peel.Tensor) *peel.Tensor {
	defer interp.Annotate("transforms.StopGradient")
	return interp.Bind1(prims.StopGradient, nil, x)
}

// Graph is a staged program (interp.Graph): Eval runs it (under any
// transform), String prints it like a jaxpr, Compile runs elementwise
// graphs blocked. Its constants are kept by value.
type Graph = interp.Graph

// MakeGraph returns the staged graph of f at arguments shaped like args:
// every primitive f applies to them, transforms included (MakeGraph of
// Grad(g) shows the forward and backward passes), after dead-code
// elimination. The graph's inputs are args' leaves in tree order, and its
// outputs the result's leaves. An op defined with peel.DefineOp is one
// equation (so a compiler can keep its fused kernel) unless opts include
// Decompose.
func MakeGraph[A, B any](f func(A) B, args A, opts ...GraphOption) *Graph {
	const op = "transforms.MakeGraph"
	leaves, def := flatten(op, args)
	var topts []interp.TraceOption
	for _, o := range opts {
		if o.decompose {
			topts = append(topts, interp.Decompose())
		}
	}
	return interp.Trace(flatFn(op, f, def, nil), leaves, topts...)
}

// GraphOption configures MakeGraph.
type GraphOption struct{ decompose bool }

// Decompose makes MakeGraph decompose user-defined ops into the
// primitives of their composites.
func Decompose() GraphOption { return GraphOption{decompose: true} }
