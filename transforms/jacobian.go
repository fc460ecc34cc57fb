package transforms

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/interp"
)

// The Jacobians are one engine, jacobianFlat: f is linearized once at the
// argument's leaves, and its transpose (reverse mode) or its linear map
// (forward mode) is vmapped over the rows of one identity that covers
// every output leaf (reverse) or every input leaf (forward). Each block
// d out_k / d leaf_i is then a slice of the batched result, of shape
// out_k.shape + leaf_i.shape.

// jacobianFlat returns the Jacobian blocks of fl at leaves: jac[k][i] is
// d out_k / d leaves[i] for the first nDiff outputs of fl; the others
// (aux data) come back as primal values in rest. Every leaf must be a
// float tensor (name names them in errors), as must every differentiated
// output.
func jacobianFlat(op, name string, forward bool, fl func([]*tensor) []*tensor, leaves []*tensor, leafName func(int) string, nDiff int, cfg *jacobianConfig) (jac [][]*tensor, rest []*tensor) {
	return jacobianNamed(op, name, forward, fl, leaves, leafName, nil, nDiff, cfg)
}

// jacobianNamed is jacobianFlat with outName naming the result leaves in
// errors (nil: the result is one tensor).
func jacobianNamed(op, name string, forward bool, fl func([]*tensor) []*tensor, leaves []*tensor, leafName, outName func(int) string, nDiff int, cfg *jacobianConfig) (jac [][]*tensor, rest []*tensor) {
	checked := func(in []*tensor) []*tensor {
		// Checked inside the level, so the error names it.
		checkFloatLeaves(op, leaves, leafName)
		outs := fl(in)
		if nDiff < 0 {
			nDiff = len(outs)
		}
		for k, y := range outs[:nDiff] {
			if y == nil {
				treeErrorf(op, "the function returned a nil tensor")
			}
			if !y.DType().IsFloat() {
				what := "the output"
				if outName != nil {
					what = "result " + outName(k)
				}
				treeErrorf(op, "%s must be a float tensor, not %s", what, y.TypeString())
			}
		}
		return outs
	}
	lin := autodiff.Linearize(name, checked, leaves)
	defer lin.Release()
	ys := lin.Outs[:nDiff]
	jac = make([][]*tensor, len(ys))
	for k := range jac {
		jac[k] = make([]*tensor, len(leaves))
	}
	var outSize, inSize int
	for _, y := range ys {
		outSize += y.Size()
	}
	for _, x := range leaves {
		inSize += x.Size()
	}
	if outSize == 0 || inSize == 0 {
		for k, y := range ys {
			for i, x := range leaves {
				jac[k][i] = autodiff.Zeros(interp.Aval{Shape: jacobianShape(y.Shape(), x.Shape()), DType: x.DType()})
			}
		}
		return jac, lin.Outs[nDiff:]
	}
	vcfg := cfg.vmap()
	if forward {
		// One lane per input element; the batch goes last, after each
		// output's own shape.
		basis := identityBlocks(inSize, leaves)
		axes := make([]int, len(basis))
		outAxes := make([]int, len(ys))
		for k, y := range ys {
			outAxes[k] = y.Rank()
		}
		cols := vmapFlat(op, vcfg, func(ts []*tensor) []*tensor { return lin.Apply(ts)[:nDiff] }, basis, axes,
			func([]*tensor) []int { return outAxes }, nil)
		for k, y := range ys {
			off := 0
			for i, x := range leaves {
				jac[k][i] = block(cols[k], y.Rank(), off, x.Size(), len(leaves) == 1, jacobianShape(y.Shape(), x.Shape()))
				off += x.Size()
			}
		}
		return jac, lin.Outs[nDiff:]
	}
	// Reverse: one lane per output element, the batch first.
	basis := identityBlocks(outSize, ys)
	axes := make([]int, len(basis))
	outAxes := make([]int, len(leaves))
	rows := vmapFlat(op, vcfg, func(cts []*tensor) []*tensor {
		all := make([]*tensor, len(lin.Outs)) // no cotangent for aux outputs
		copy(all, cts)
		in := lin.Transpose(all)
		for i := range in {
			in[i] = autodiff.ZerosIfNil(in[i], interp.AvalOf(leaves[i]))
		}
		return in
	}, basis, axes, func([]*tensor) []int { return outAxes }, nil)
	for i, x := range leaves {
		off := 0
		for k, y := range ys {
			jac[k][i] = block(rows[i], 0, off, y.Size(), len(ys) == 1, jacobianShape(y.Shape(), x.Shape()))
			off += y.Size()
		}
	}
	return jac, lin.Outs[nDiff:]
}

// identityBlocks splits the columns of an n×n identity among like's
// tensors: block i has shape [n] + like[i].shape and like[i]'s dtype.
func identityBlocks(n int, like []*tensor) []*tensor {
	eye := peel.Eye(peel.Float64, n)
	out := make([]*tensor, len(like))
	off := 0
	for i, l := range like {
		b := eye
		if len(like) > 1 {
			b = peel.Slice(eye, 1, off, off+l.Size(), 1)
		}
		out[i] = peel.Reshape(peel.AsType(b, l.DType()), append([]int{n}, l.Shape()...)...)
		off += l.Size()
	}
	return out
}

// block returns the size elements of x along axis from off, reshaped to
// shape (whole: x is the only block).
func block(x *tensor, axis, off, size int, whole bool, shape []int) *tensor {
	if !whole {
		x = peel.Slice(x, axis, off, off+size, 1)
	}
	return peel.Reshape(x, shape...)
}

// jacobianShape is out.shape + in.shape.
func jacobianShape(out, in []int) []int {
	return append(append([]int{}, out...), in...)
}

// jacobian is Jacrev or Jacfwd of f: A → tensor, as op.
func jacobian[A any](op, name string, forward bool, f func(A) *peel.Tensor, cfg *jacobianConfig) func(A) A {
	return func(x A) A {
		cfg.noArgnums(op)
		leaves, def := flatten(op, x)
		jac, _ := jacobianFlat(op, name, forward, func(in []*tensor) []*tensor {
			return []*tensor{f(build[A](def, in))}
		}, leaves, argName(def), 1, cfg)
		return build[A](def, jac[0])
	}
}

// Jacrev returns a function computing the Jacobian of f in reverse mode:
// f is linearized once and its transpose is vmapped over the rows of an
// identity. The argument is a tree (a tensor, or a struct, slice or map
// of them; see Grad) of float tensors, f's result a float tensor; the
// Jacobian has the argument's structure, each leaf of shape
// f(x).shape + leaf.shape (for a tensor argument, one tensor of shape
// f(x).shape + x.shape). For a tree result use JacrevTree, for aux data
// JacrevAux, for functions of several arguments Jacrev2 … Jacrev5 and
// the JacrevArgs and At forms. ChunkSize among opts bounds the rows
// computed at once.
//
// The function Jacrev returns panics with *peel.Error when the argument
// is not a valid tree or has a leaf that is not a float tensor (the
// error names its path), when f returns nil or a tensor that is not
// float, or when f misuses a tensor; and for Argnums among opts.
func Jacrev[A any](f func(A) *peel.Tensor, opts ...JacobianOption) func(A) A {
	needFunc("transforms.Jacrev", f)
	return jacobian("transforms.Jacrev", "jacrev", false, f, jacobianOptions(opts))
}

// Jacfwd is Jacrev in forward mode: f is linearized once and the linear
// map is vmapped over the columns of an identity (one lane per element
// of the argument), which is cheaper when the argument is smaller than
// the result. Shapes, options and panics are Jacrev's.
func Jacfwd[A any](f func(A) *peel.Tensor, opts ...JacobianOption) func(A) A {
	needFunc("transforms.Jacfwd", f)
	return jacobian("transforms.Jacfwd", "jacfwd", true, f, jacobianOptions(opts))
}

// jacobianTree is JacrevTree or JacfwdTree.
func jacobianTree[A, R any](op, name string, forward bool, f func(A) R, cfg *jacobianConfig) func(A) []A {
	return func(x A) []A {
		cfg.noArgnums(op)
		leaves, def := flatten(op, x)
		var outDef *treeDef
		jac, _ := jacobianNamed(op, name, forward, flatFn(op, f, def, &outDef), leaves, argName(def),
			func(k int) string { return outDef.LeafName("(the whole result)", k) }, -1, cfg)
		res := make([]A, len(jac))
		for k := range jac {
			res[k] = build[A](def, jac[k])
		}
		return res
	}
}

// JacrevTree is Jacrev for a function whose result is a tree: element k
// of the result is the Jacobian of the k-th leaf of f's result (in
// tree.Leaves order), with the argument's structure and leaves of shape
// out_k.shape + leaf.shape. One reverse pass is vmapped over the
// elements of every result leaf at once. It panics as Jacrev does, and
// when a result leaf is not a float tensor.
func JacrevTree[A, R any](f func(A) R, opts ...JacobianOption) func(A) []A {
	needFunc("transforms.JacrevTree", f)
	return jacobianTree("transforms.JacrevTree", "jacrev", false, f, jacobianOptions(opts))
}

// JacfwdTree is JacrevTree in forward mode.
func JacfwdTree[A, R any](f func(A) R, opts ...JacobianOption) func(A) []A {
	needFunc("transforms.JacfwdTree", f)
	return jacobianTree("transforms.JacfwdTree", "jacfwd", true, f, jacobianOptions(opts))
}

// jacobianAux is JacrevAux or JacfwdAux.
func jacobianAux[A, X any](op, name string, forward bool, f func(A) (*peel.Tensor, X), cfg *jacobianConfig) func(A) (A, X) {
	return func(x A) (A, X) {
		cfg.noArgnums(op)
		leaves, def := flatten(op, x)
		var aux auxResult[X]
		jac, rest := jacobianFlat(op, name, forward, func(in []*tensor) []*tensor {
			y, a := f(build[A](def, in))
			return append([]*tensor{y}, aux.collect(op, a)...)
		}, leaves, argName(def), 1, cfg)
		return build[A](def, jac[0]), aux.result(rest)
	}
}

// JacrevAux is Jacrev for a function that also returns auxiliary data
// (JAX's has_aux), which is not differentiated and comes back as GradAux
// returns it.
func JacrevAux[A, X any](f func(A) (*peel.Tensor, X), opts ...JacobianOption) func(A) (A, X) {
	needFunc("transforms.JacrevAux", f)
	return jacobianAux("transforms.JacrevAux", "jacrev", false, f, jacobianOptions(opts))
}

// JacfwdAux is JacrevAux in forward mode.
func JacfwdAux[A, X any](f func(A) (*peel.Tensor, X), opts ...JacobianOption) func(A) (A, X) {
	needFunc("transforms.JacfwdAux", f)
	return jacobianAux("transforms.JacfwdAux", "jacfwd", true, f, jacobianOptions(opts))
}

// Hessian returns a function computing the Hessian of f, Jacfwd of
// Jacrev: of shape x.shape + x.shape for a scalar f, and f(x).shape +
// x.shape + x.shape (one Hessian per output element) for any other.
// ChunkSize among opts bounds the rows or columns computed at once. For
// a tree argument use HessianTree. It panics as Jacrev does.
func Hessian(f func(*peel.Tensor) *peel.Tensor, opts ...JacobianOption) func(*peel.Tensor) *peel.Tensor {
	needFunc("transforms.Hessian", f)
	h := Jacfwd(Jacrev(f, opts...), opts...)
	return func(x *peel.Tensor) *peel.Tensor {
		defer interp.Annotate("transforms.Hessian")
		return h(x)
	}
}

// HessianTree is Hessian for a tree argument (JacfwdTree of Jacrev):
// element i of the result is an A whose leaf j is the block
// d²f / d leaf_i d leaf_j, of shape f(x).shape + leaf_i.shape +
// leaf_j.shape, with i and j in tree.Leaves order. It panics as Jacrev
// does.
func HessianTree[A any](f func(A) *peel.Tensor, opts ...JacobianOption) func(A) []A {
	needFunc("transforms.HessianTree", f)
	h := JacfwdTree(Jacrev(f, opts...), opts...)
	return func(x A) []A {
		defer interp.Annotate("transforms.HessianTree")
		return h(x)
	}
}

// HVP returns the Hessian-vector product of a scalar function f at x
// along v (a tree of x's structure, shapes and dtypes), forward-over-
// reverse (one JVP of the gradient), without forming the Hessian. It
// panics as Grad and JVP do.
func HVP[A any](f func(A) *peel.Tensor, x, v A) A {
	needFunc("transforms.HVP", f)
	defer interp.Annotate("transforms.HVP")
	_, t := JVP(Grad(f), x, v)
	return t
}
