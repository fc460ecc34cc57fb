package prims

import (
	"fmt"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Helpers shared by every family file: operand checks of the shape
// rules, the rule constructors (defJVP, defTranspose and their forms),
// and the shorthands the rules are written with.

type aval = interp.Aval

type tensor = interp.Tensor

// dtype classes accepted by elementwise primitives.
type dclass uint8

const (
	numeric dclass = iota // integers and floats
	floats                // f16, bf16, f32, f64
	bools                 // bool
	logical               // bool and integers
	anyType               // every dtype
)

func (c dclass) accepts(d backend.DType) bool {
	switch c {
	case numeric:
		return d.IsInteger() || d.IsFloat()
	case floats:
		return d.IsFloat()
	case bools:
		return d == backend.Bool
	case logical:
		return d == backend.Bool || d.IsInteger()
	}
	return d.IsValid()
}

func (c dclass) String() string {
	return [...]string{"a numeric", "a floating-point", "a bool", "a bool or integer", "any"}[c]
}

func checkClass(c dclass, a aval) {
	if !c.accepts(a.DType) {
		interp.Panicf("operand of dtype %v is not %s dtype", a.DType, c)
	}
}

func one(a aval) []aval { return []aval{a} }

func checkArity(in []aval, n int) {
	if len(in) != n {
		interp.Panicf("takes %d operands, got %d", n, len(in))
	}
}

func sameAvals(in []aval) {
	for _, a := range in[1:] {
		if !a.Equal(in[0]) {
			interp.Panicf("operands must have equal shapes and dtypes (primitives do not broadcast or promote)")
		}
	}
}

func checkAxis(axis, rank int) {
	if axis < 0 || axis >= rank {
		interp.Panicf("axis %d out of range for rank %d", axis, rank)
	}
}

func checkAxes(axes []int, rank int) {
	seen := make([]bool, rank)
	for _, a := range axes {
		checkAxis(a, rank)
		if seen[a] {
			interp.Panicf("axis %d repeated in %v", a, axes)
		}
		seen[a] = true
	}
}

func checkLen(what string, got, rank int) {
	if got != rank {
		interp.Panicf("%s has %d entries, operand has rank %d", what, got, rank)
	}
}

// checkShape returns the number of elements of shape, panicking with
// *interp.Error when a dimension is negative or the shape is too large
// (see backend.CheckedSize). Every shape a rule takes from its parameters
// or computes from several operands passes it.
func checkShape(shape []int) int {
	n, err := backend.CheckedSize(shape)
	if err != nil {
		panic(&interp.Error{Msg: err.Error()})
	}
	return n
}

// AxisParams are the parameters of argmax, argmin and gather-like
// primitives that act along one axis.
type AxisParams struct{ Axis int }

func (p AxisParams) String() string { return fmt.Sprintf("axis=%d", p.Axis) }

// JVP rules. Each rule receives the primals (concrete tensors or tracers of
// lower levels, used only through Bind) and their tangents (nil for a
// symbolic zero; integer and bool operands never have one), computes the
// primal results with Bind and returns one tangent per result, nil where
// it is zero. Tangents have their primal's dtype; results of integer or
// bool dtype have nil tangents. A rule is written with Bind, so it can be
// transformed again (second derivatives, vmap of a derivative), and the
// tangent is computed by operations linear in the tangents whose other
// operands depend only on primals, so linearize can stage it and
// transpose it.
//
// Zeros are materialized only where a primitive needs a whole operand
// (select, pad, concatenate, scatter and dynamic_update_slice with one
// tangent missing).

// tangentFn computes the tangent of a primitive's single result from the
// primals x, their tangents t (at least one non-nil) and the primal
// result out.
type tangentFn func(params any, x, t []*tensor, out *tensor) *tensor

// defJVP sets p's JVP rule: the primal by Bind, the tangent by f unless
// every tangent is zero or the result is not a float.
func defJVP(p *interp.Prim, f tangentFn) {
	p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		outs := interp.Bind(p, params, primals...)
		if allNil(tangents) || !outs[0].DType().IsFloat() {
			return outs, []*tensor{nil}
		}
		return outs, []*tensor{f(params, primals, tangents, outs[0])}
	}
}

// defScaleJVP defines the JVP of a unary primitive whose derivative is
// coef(x, out): the tangent is t·coef.
func defScaleJVP(p *interp.Prim, coef func(x, out *tensor) *tensor) {
	defJVP(p, func(_ any, x, t []*tensor, out *tensor) *tensor {
		return mul(t[0], coef(x[0], out))
	})
}

// defSameJVP defines the JVP of a primitive linear in its first operand
// alone (the others, if any, are integer operands such as indices): the
// tangent is the primitive applied to the tangent.
func defSameJVP(p *interp.Prim) {
	defJVP(p, func(params any, x, t []*tensor, _ *tensor) *tensor {
		args := append([]*tensor{t[0]}, x[1:]...)
		return interp.Bind1(p, params, args...)
	})
}

// zeroJVP is the rule of a primitive whose result has a zero tangent but
// whose primal still flows (stop_gradient, sign).
func zeroJVP(p *interp.Prim) interp.JVPRule {
	return func(params any, primals, _ []*tensor) ([]*tensor, []*tensor) {
		outs := interp.Bind(p, params, primals...)
		return outs, make([]*tensor, len(outs))
	}
}

// Transpose rules.
//
// Contract between the transposer (reverse mode, package transforms) and
// these rules:
//
//   - A rule is called for a primitive applied in a linear graph, with
//     linear[i] set for each operand that is a linear input. The primitive
//     must be linear in those operands jointly with the others held
//     constant (LinearIn(p, i) for each; mul and dot_general are linear in
//     one operand at a time). A rule panics with *interp.Error otherwise.
//   - For a linear operand, args[i] is a placeholder that carries the
//     operand's abstract value (interp.Placeholder: binding it panics
//     with *interp.Error). Rules read only its Shape and DType (some
//     transposes need the operand's shape: reduce_sum, broadcast_in_dim,
//     slice, pad, gather, dynamic_slice) and never Bind it. For a constant
//     operand args[i] is the real value, a concrete tensor or a tracer of a
//     lower level, used only through Bind.
//   - cts[j] is the cotangent of result j, nil for a symbolic zero. When
//     every one is nil the rule returns all nils.
//   - The rule returns one cotangent per operand: for a linear operand a
//     tensor of its shape and dtype, or nil for a zero; nil for a
//     constant. Results may share memory with the cotangents and with each
//     other (add returns ct for both operands, copy returns ct itself, some
//     zeros are zero-stride broadcasts): treat them as immutable, never as
//     destinations of in-place ops.
//
// The rules are written with Bind, so a transposed graph can itself be
// transformed (the derivative of a gradient, vmap of a gradient).

// LinearIn reports whether p can be linear in operand i (with the others
// held constant). It reads p.Linear, whose entries past its end repeat the
// last one: concatenate lists one entry for all its operands, and the
// trailing start indices of dynamic_slice and dynamic_update_slice take
// the last entry, false.
func LinearIn(p *interp.Prim, i int) bool {
	switch {
	case len(p.Linear) == 0 || i < 0:
		return false
	case i < len(p.Linear):
		return p.Linear[i]
	}
	return p.Linear[len(p.Linear)-1]
}

// transposeFn maps the cotangent of a single-result primitive (non-nil)
// to its operands' cotangents.
type transposeFn func(params any, ct *tensor, args []*tensor, linear []bool) []*tensor

// defSelfTranspose makes p, a map linear in its first operand alone
// and symmetric in it (softmax_lin, layer_norm_lin, rms_norm_lin), its
// own transpose: the first operand's cotangent is p applied to the
// result's cotangent, the other operands as they are.
func defSelfTranspose(p *interp.Prim) {
	p.Linear = []bool{true, false}
	p.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		if !linear[0] || slices.Contains(linear[1:], true) {
			interp.Panicf("%s transpose: linear in its first operand only", p.Name)
		}
		res := make([]*tensor, len(args))
		if cts[0] != nil {
			res[0] = interp.Bind1(p, params, append([]*tensor{cts[0]}, args[1:]...)...)
		}
		return res
	}
}

// defTranspose sets p's linearity and transpose rule.
func defTranspose(p *interp.Prim, lin []bool, f transposeFn) {
	p.Linear = lin
	p.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		if len(linear) != len(args) {
			interp.Panicf("%s transpose: %d linearity flags for %d operands", p.Name, len(linear), len(args))
		}
		for i, l := range linear {
			if l && !LinearIn(p, i) {
				interp.Panicf("%s is not linear in operand %d", p.Name, i)
			}
		}
		if len(cts) != 1 {
			interp.Panicf("%s transpose: %d cotangents for 1 result", p.Name, len(cts))
		}
		if cts[0] == nil {
			return make([]*tensor, len(args))
		}
		return f(params, cts[0], args, linear)
	}
}

// only keeps the cotangents of the linear operands.
func only(linear []bool, cts ...*tensor) []*tensor {
	for i, l := range linear {
		if !l {
			cts[i] = nil
		}
	}
	return cts
}

// oneLinear returns the index of the single linear operand of a bilinear
// primitive (mul, dot_general), panicking when both or neither are.
func oneLinear(name string, linear []bool) int {
	if linear[0] == linear[1] {
		interp.Panicf("%s transpose: exactly one operand must be linear, got %v (a product of two linear inputs is not linear)", name, linear)
	}
	if linear[0] {
		return 0
	}
	return 1
}

// Linearity of the transposable primitives: linear in its one operand,
// in both, or in the first only.
var (
	linear1     = []bool{true}
	linear2     = []bool{true, true}
	linearFirst = []bool{true, false}
)

// Helpers shared by the JVP and transpose rules. Every one of them is a
// Bind of primitives (or makes a concrete constant), so the rules built on
// them are transformable in turn.

// scalarConst returns a new concrete rank-0 tensor of dtype dt on the
// default backend holding v, converted by the one conversion rule
// (backend.HostFill: saturating for integers, nonzero is true for bool).
// It panics with *interp.Error for an invalid dtype.
func scalarConst(v float64, dt interp.DType) *tensor {
	be := interp.DefaultBackend()
	data := backend.HostFill(v, dt, 1)
	if data == nil {
		interp.Panicf("cannot make a constant of dtype %v", dt)
	}
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, data), Shape: []int{}})
}

// full returns a tensor of aval a filled with v: a fresh rank-0 constant
// broadcast (a zero-stride view at eval level) to a's shape. The result
// must not be the destination of an in-place op.
func full(v float64, a interp.Aval) *tensor {
	s := scalarConst(v, a.DType)
	if len(a.Shape) == 0 {
		return s
	}
	return interp.Bind1(BroadcastInDim, BroadcastParams{Shape: a.Shape, Dims: []int{}}, s)
}

// zerosLike returns zeros of aval a (see full).
func zerosLike(a interp.Aval) *tensor { return full(0, a) }

// constLike returns a tensor of like's shape and dtype filled with v (see
// full).
func constLike(v float64, like *tensor) *tensor { return full(v, interp.AvalOf(like)) }

// Zeros returns a tensor of zeros of aval a, built with primitives (a
// concrete rank-0 zero broadcast with broadcast_in_dim), for interpreters
// that must materialize a symbolic zero tangent or cotangent. The result
// is a zero-stride view at eval level: never use it as the destination of
// an in-place op. It panics with *interp.Error for an invalid dtype or
// when no backend is installed.
func Zeros(a interp.Aval) *interp.Tensor { return zerosLike(a) }

// Full is Zeros with every element equal to v (converted to a's dtype).
func Full(v float64, a interp.Aval) *interp.Tensor { return full(v, a) }

func allNil(ts []*tensor) bool {
	for _, t := range ts {
		if t != nil {
			return false
		}
	}
	return true
}

// Elementwise shorthands.

func add(a, b *tensor) *tensor { return interp.Bind1(Add, nil, a, b) }
func sub(a, b *tensor) *tensor { return interp.Bind1(Sub, nil, a, b) }
func mul(a, b *tensor) *tensor { return interp.Bind1(Mul, nil, a, b) }
func div(a, b *tensor) *tensor { return interp.Bind1(Div, nil, a, b) }
func neg(a *tensor) *tensor    { return interp.Bind1(Neg, nil, a) }
func eq(a, b *tensor) *tensor  { return interp.Bind1(Eq, nil, a, b) }

// subUnreduced returns a − b, b reduced over axes and broadcast back
// to a's shape, negating b before the broadcast: the same values (a − b
// is a + (−b) exactly), but where a and b are linear, the transpose
// negates the reduced cotangent instead of one as large as a (the
// backward passes of softmax and the norms negated every element of
// their rows: a tenth of a millisecond in a GPT step's 40).
func subUnreduced(a, b *tensor, axes []int) *tensor {
	return add(a, unreduce(neg(b), a.Shape(), axes))
}

func sel(p, a, b *tensor) *tensor {
	return interp.Bind1(Where, nil, p, a, b)
}

// addNil adds two tangents where nil is a symbolic zero.
func addNil(a, b *tensor) *tensor {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return add(a, b)
}

// scale returns c*t for the constant float c.
func scale(c float64, t *tensor) *tensor { return mul(constLike(c, t), t) }

// orZeros returns t, or zeros of aval a when t is nil.
func orZeros(t *tensor, a interp.Aval) *tensor {
	if t == nil {
		return zerosLike(a)
	}
	return t
}

func convert(x *tensor, dt interp.DType) *tensor {
	return interp.Bind1(ConvertElementType, ConvertParams{DType: dt}, x)
}

func reduceSum(x *tensor, axes []int) *tensor {
	return interp.Bind1(ReduceSum, ReduceParams{Axes: axes}, x)
}

func broadcastInDim(x *tensor, shape, dims []int) *tensor {
	return interp.Bind1(BroadcastInDim, BroadcastParams{Shape: shape, Dims: dims}, x)
}

func reshape(x *tensor, shape []int) *tensor {
	if interp.ShapeEqual(x.Shape(), shape) {
		return x
	}
	return interp.Bind1(Reshape, ReshapeParams{Shape: shape}, x)
}

func transpose(x *tensor, perm []int) *tensor {
	if isIdentityPerm(perm) {
		return x
	}
	return interp.Bind1(Transpose, TransposeParams{Perm: perm}, x)
}

func isIdentityPerm(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

func rev(x *tensor, axes []int) *tensor {
	return interp.Bind1(Rev, RevParams{Axes: axes}, x)
}

// keptAxes returns the axes of a rank-r tensor that are not in the sorted
// list axes.
func keptAxes(r int, axes []int) []int {
	kept := make([]int, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if j < len(axes) && axes[j] == i {
			j++
			continue
		}
		kept = append(kept, i)
	}
	return kept
}

// unreduce broadcasts y, the result of reducing a tensor of shape shape
// over axes, back to shape.
func unreduce(y *tensor, shape, axes []int) *tensor {
	return broadcastInDim(y, shape, keptAxes(len(shape), axes))
}

// shiftAlong shifts x by k ≥ 0 positions toward higher indices along axis,
// filling with v: out[i] = x[i-k], v where i < k.
func shiftAlong(x *tensor, k, axis int, v float64) *tensor {
	r := x.Rank()
	low, high := make([]int, r), make([]int, r)
	low[axis], high[axis] = k, -k
	if n := x.Shape()[axis]; k > n {
		low[axis], high[axis] = n, -n
	}
	return interp.Bind1(Pad, PadParams{Low: low, High: high, Interior: make([]int, r)}, x, scalarConst(v, x.DType()))
}

// cumprod is the inclusive cumulative product along axis, by log-depth
// doubling (Hillis–Steele) with pad and mul: exact with zeros, no
// division, and differentiable in turn.
func cumprod(x *tensor, axis int) *tensor {
	n := x.Shape()[axis]
	for k := 1; k < n; k *= 2 {
		x = mul(x, shiftAlong(x, k, axis, 1))
	}
	return x
}

// productOfOthers returns, at each position i along axis, the product of
// the elements at every other position: exclusive prefix products times
// exclusive suffix products.
func productOfOthers(x *tensor, axis int) *tensor {
	ax := []int{axis}
	prefix := shiftAlong(cumprod(x, axis), 1, axis, 1)
	suffix := rev(shiftAlong(cumprod(rev(x, ax), axis), 1, axis, 1), ax)
	return mul(prefix, suffix)
}

// inRange returns the bool mask 0 ≤ idx < n of the i64 tensor idx.
func inRange(idx *tensor, n int) *tensor {
	lo := interp.Bind1(Ge, nil, idx, constLike(0, idx))
	hi := interp.Bind1(Lt, nil, idx, constLike(float64(n), idx))
	return interp.Bind1(And, nil, lo, hi)
}

// clampIndices clamps the i64 tensor idx into [0, n-1] (gather's rule).
func clampIndices(idx *tensor, n int) *tensor {
	if n == 0 {
		return idx
	}
	lo := interp.Bind1(Max, nil, idx, constLike(0, idx))
	return interp.Bind1(Min, nil, lo, constLike(float64(n-1), idx))
}

// indexMaskFor broadcasts m, a mask over the indices of a gather along
// axis (shape idx.shape), to the shape of the gathered result (or of
// scatter's updates), shape.
func indexMaskFor(m *tensor, shape []int, axis int) *tensor {
	dims := make([]int, m.Rank())
	for i := range dims {
		dims[i] = axis + i
	}
	return broadcastInDim(m, shape, dims)
}

// scatterWinners returns the bool mask over idx (shape idx.shape) of the
// index positions whose update scatter along an axis of size n keeps:
// in range, and the last (in row-major order) of the positions holding
// the same index.
func scatterWinners(idx *tensor, n int) *tensor {
	if n == 0 {
		return full(0, interp.Aval{Shape: idx.Shape(), DType: backend.Bool})
	}
	size := idx.Size()
	ids := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: []int{size}, Dim: 0})
	ids = reshape(ids, idx.Shape())
	none := full(-1, interp.Aval{Shape: []int{n}, DType: backend.Int64})
	owner := interp.Bind1(Scatter, AxisParams{Axis: 0}, none, idx, ids)
	return eq(interp.Bind1(Gather, AxisParams{Axis: 0}, owner, idx), ids)
}
