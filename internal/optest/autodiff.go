package optest

import (
	"math"

	"github.com/peel-ml/peel"
)

// Float64Args returns args with every float operand converted to float64
// (other operands, such as integer indices and boolean predicates, are
// returned as they are) and the positions of the float operands: the ones
// an autodiff sweep differentiates.
func Float64Args(args []*peel.Tensor) (out []*peel.Tensor, float []int) {
	out = make([]*peel.Tensor, len(args))
	for i, a := range args {
		out[i] = a
		if a.DType().IsFloat() {
			if a.DType() != peel.Float64 {
				out[i] = peel.AsType(a, peel.Float64)
			}
			float = append(float, i)
		}
	}
	return out, float
}

// AllFinite reports whether every element of every float tensor of ts is
// finite (neither infinite nor NaN); other dtypes are always finite.
func AllFinite(ts ...*peel.Tensor) bool {
	for _, t := range ts {
		if !t.DType().IsFloat() {
			continue
		}
		for _, v := range ToHost(t).Data {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return false
			}
		}
	}
	return true
}

// Direction returns a float64 tensor shaped like t with entries drawn
// uniformly from [-1, 1): a random direction for directional derivatives.
func (g *Gen) Direction(t *peel.Tensor) *peel.Tensor {
	return g.Tensor(peel.Float64, -1, 1, shapeOf(t)...)
}

// Directions returns one Direction per tensor of ts.
func (g *Gen) Directions(ts []*peel.Tensor) []*peel.Tensor {
	out := make([]*peel.Tensor, len(ts))
	for i, t := range ts {
		out[i] = g.Direction(t)
	}
	return out
}

// Step returns x + alpha·v leaf by leaf (x and v float64, of equal shapes).
func Step(x, v []*peel.Tensor, alpha float64) []*peel.Tensor {
	out := make([]*peel.Tensor, len(x))
	for i := range x {
		out[i] = peel.Add(x[i], peel.Mul(v[i], alpha))
	}
	return out
}

// Dot returns the inner product Σ_k ⟨a_k, b_k⟩ of two lists of tensors of
// equal shapes, read in float64, and Σ |a_k·b_k| over all elements: the
// scale a relative comparison of inner products is measured against.
func Dot(a, b []*peel.Tensor) (dot, scale float64) {
	for k := range a {
		x, y := ToHost(a[k]).Data, ToHost(b[k]).Data
		for i := range x {
			dot += x[i] * y[i]
			scale += math.Abs(x[i] * y[i])
		}
	}
	return dot, scale
}

// CentralDiff returns the central finite difference
// (f(x+εv) − f(x−εv)) / 2ε of f at x along v, one Host per result of f.
func CentralDiff(f func([]*peel.Tensor) []*peel.Tensor, x, v []*peel.Tensor, eps float64) []Host {
	p := f(Step(x, v, eps))
	m := f(Step(x, v, -eps))
	out := make([]Host, len(p))
	for i := range p {
		hp, hm := ToHost(p[i]), ToHost(m[i])
		d := Host{Shape: hp.Shape, DType: peel.Float64, Data: make([]float64, len(hp.Data))}
		for j := range d.Data {
			d.Data[j] = (hp.Data[j] - hm.Data[j]) / (2 * eps)
		}
		out[i] = d
	}
	return out
}

// Basis returns the one-hot float64 tensors e_i, one per element of every
// leaf of x in order, each as a list shaped like x: the directions of a
// coordinate-wise finite-difference gradient.
func Basis(x []*peel.Tensor) [][]*peel.Tensor {
	var out [][]*peel.Tensor
	for k, l := range x {
		n := l.Size()
		for i := 0; i < n; i++ {
			e := make([]*peel.Tensor, len(x))
			for j, m := range x {
				d := make([]float64, m.Size())
				if j == k {
					d[i] = 1
				}
				e[j] = peel.FromFloat64s(d, shapeOf(m)...)
			}
			out = append(out, e)
		}
	}
	return out
}

// MaxAbs returns the largest absolute value of the finite elements of
// the float tensors ts (0 if there are none).
func MaxAbs(ts ...*peel.Tensor) float64 {
	m := 0.0
	for _, t := range ts {
		for _, v := range ToHost(t).Data {
			if !math.IsInf(v, 0) && !math.IsNaN(v) {
				m = math.Max(m, math.Abs(v))
			}
		}
	}
	return m
}

// shapeOf returns t's shape as a non-nil slice, so that passing it on as a
// variadic shape keeps rank 0 (a nil shape means 1-D to the constructors).
func shapeOf(t *peel.Tensor) []int { return append([]int{}, t.Shape()...) }
