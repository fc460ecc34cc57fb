package transforms

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/interp"
)

// LinearTranspose returns the transpose of f, a function linear in its
// argument (JAX's linear_transpose; torch.func has none): a function
// mapping a cotangent shaped like f's value to one shaped like primals,
// such that ⟨ct, f(x)⟩ = ⟨T(ct), x⟩ for every x. Only the structure,
// shapes and dtypes of primals are read: f is traced, never evaluated
// at them, and for a linear f T is VJP's pullback at any point, without
// its forward pass. f may close over tensors (a matrix it multiplies
// by); they are constants of the transpose. T may be called many times,
// under any transform.
//
// It panics with *peel.Error when f is not linear in its argument, saying
// why: a leaf of the argument or of the value is not float; f applies to
// a value that depends on its argument an operation not linear in it
// (tanh, an absolute value, a comparison; the error names the primitive
// and the operand); f multiplies two such values; or f is affine, its
// value at a zero argument not zero (checked once, when f's value at
// zero is concrete: f closes over no tracer). T panics when the
// cotangent differs from f's value in structure, shape or dtype.
func LinearTranspose[A, B any](f func(A) B, primals A) func(B) A {
	needFunc("transforms.LinearTranspose", f)
	return linearTransposeAs[A, B]("transforms.LinearTranspose", f, primals)
}

// linearTransposeAs is LinearTranspose with errors naming op.
func linearTransposeAs[A, B any](op string, f func(A) B, primals A) func(B) A {
	defer interp.Annotate(op)
	leaves, def := flatten(op, primals)
	in := make([]interp.Aval, len(leaves))
	for i, l := range leaves {
		if !l.DType().IsFloat() {
			treeErrorf(op, "%s is %s: a linear function's argument is float", def.LeafName("the argument", i), l.TypeString())
		}
		in[i] = interp.AvalOf(l)
	}
	var outDef *treeDef
	g := interp.TraceAvals("linear_transpose", flatFn(op, f, def, &outDef), in).DCE()
	out := make([]interp.Aval, len(g.Out))
	for i, v := range g.Out {
		if !v.Aval.DType.IsFloat() {
			treeErrorf(op, "f's value %s is %s: a linear function's value is float", outDef.LeafName("(the whole value)", i), v.Aval)
		}
		out[i] = v.Aval
	}
	if e, i := autodiff.NotLinear(g); e != nil {
		treeErrorf(op, "f is not linear in its argument: it applies %s to a value that depends on the argument (operand %d), and %s is not linear in it", e.Prim.Name, i, e.Prim.Name)
	}
	checkZeroAtZero(op, g, in, outDef)
	// The transpose, traced once: a product of two values that depend on
	// the argument fails here, in its transpose rule, rather than at the
	// first call.
	tg := interp.TraceAvals("linear_transpose", func(cts []*tensor) []*tensor {
		return fillZeros(autodiff.TransposeGraph(g, cts), in)
	}, out)
	return func(ct B) A {
		defer interp.Annotate(op)
		cts, cdef := flatten(op, ct)
		sameStructure(op, outDef.Proto().Interface(), cdef.Proto().Interface())
		for i, c := range cts {
			if !interp.AvalOf(c).Equal(out[i]) {
				treeErrorf(op, "cotangent %s is %s, but f's value is %s", cdef.LeafName("(the whole cotangent)", i), c.TypeString(), out[i])
			}
		}
		return build[A](def, tg.Eval(cts...))
	}
}

// checkZeroAtZero panics with *peel.Error naming op when g, a graph
// linear in its inputs but for constants added on the way (an affine
// map), is not zero at zero: the transpose of its linear part would
// silently stand for the transpose of an affine function. Outputs that
// are not concrete (f closes over a tracer of an enclosing transform)
// are not checked.
func checkZeroAtZero(op string, g *interp.Graph, in []interp.Aval, outDef *treeDef) {
	zeros := make([]*tensor, len(in))
	for i, a := range in {
		zeros[i] = autodiff.Zeros(a)
	}
	for i, v := range g.Eval(zeros...) {
		if !v.IsConcrete() {
			continue
		}
		if s := peel.Sum(peel.Abs(v)).Item(); s != 0 {
			leaf := ""
			if p := outDef.LeafName("", i); p != "" {
				leaf = " " + p
			}
			treeErrorf(op, "f is affine, not linear: its value%s at a zero argument is not zero (Σ|f(0)| = %g)", leaf, s)
		}
	}
}
