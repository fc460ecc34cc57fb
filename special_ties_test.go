package peel_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// tiesCheck compares got (any float dtype) with want exactly or within
// tol.
func tiesCheck(t *testing.T, what string, got *peel.Tensor, want []float64, tol float64) {
	t.Helper()
	g := peel.AsType(got, peel.Float64).Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range want {
		if math.Abs(g[i]-want[i]) > tol {
			t.Fatalf("%s: element %d = %v, want %v (all %v)", what, i, g[i], want[i], g)
		}
	}
}

// TestMaxMinTieWeights: where Maximum's or Minimum's operands tie, each
// operand's tangent counts half (JAX's convention), and a reduction's
// tied extrema share its tangent equally; checked by value, in float32
// and float64, under Grad, JVP, Jacfwd, Vmap(Grad) and Compile(Grad),
// so a wrong weight is a wrong number under every transform.
func TestMaxMinTieWeights(t *testing.T) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, c := range []struct {
			name string
			f    func(x, y *peel.Tensor) *peel.Tensor
		}{
			{"Maximum", func(x, y *peel.Tensor) *peel.Tensor { return peel.Maximum(x, y) }},
			{"Minimum", func(x, y *peel.Tensor) *peel.Tensor { return peel.Minimum(x, y) }},
		} {
			x := peel.AsType(peel.FromFloat64s([]float64{1, -2, 3, 0.5}), dt)
			y := peel.AsType(peel.FromFloat64s([]float64{1, -2, 2, 0.75}), dt)
			// Elements 0 and 1 tie; 2 and 3 do not.
			wx, wy := []float64{0.5, 0.5, 1, 0}, []float64{0.5, 0.5, 0, 1}
			if c.name == "Minimum" {
				wx, wy = []float64{0.5, 0.5, 0, 1}, []float64{0.5, 0.5, 1, 0}
			}
			loss := func(x, y *peel.Tensor) *peel.Tensor { return peel.Sum(c.f(x, y)) }
			name := fmt.Sprintf("%s %v", c.name, dt)
			gx, gy := transforms.Grad2(loss)(x, y), transforms.Grad2At[*peel.Tensor](loss, 1)(x, y)
			tiesCheck(t, name+" Grad x", gx, wx, 0)
			tiesCheck(t, name+" Grad y", gy, wy, 0)
			cx := transforms.Compile2(transforms.Grad2(loss))(x, y)
			cy := transforms.Compile2(transforms.Grad2At[*peel.Tensor](loss, 1))(x, y)
			tiesCheck(t, name+" Compile(Grad) x", cx, wx, 0)
			tiesCheck(t, name+" Compile(Grad) y", cy, wy, 0)
			tx := peel.AsType(peel.FromFloat64s([]float64{2, 4, 8, 16}), dt)
			ty := peel.AsType(peel.FromFloat64s([]float64{6, 12, 24, 48}), dt)
			_, tan := transforms.JVP2(c.f, x, y, tx, ty)
			want := make([]float64, 4)
			for i := range want {
				want[i] = wx[i]*[]float64{2, 4, 8, 16}[i] + wy[i]*[]float64{6, 12, 24, 48}[i]
			}
			tiesCheck(t, name+" JVP", tan, want, 0)
			jf := transforms.Jacfwd(func(x *peel.Tensor) *peel.Tensor { return c.f(x, y) })(x)
			tiesCheck(t, name+" Jacfwd diagonal", peel.Diagonal(jf), wx, 0)
			// Per-row gradients of stacked rows, one tying, one not.
			xs := peel.Stack([]*peel.Tensor{x, peel.Add(x, 10.0)}, 0)
			vg := transforms.Vmap(transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return loss(x, y) }))(xs)
			other := []float64{1, 1, 1, 1}
			if c.name == "Minimum" {
				other = []float64{0, 0, 0, 0}
			}
			tiesCheck(t, name+" Vmap(Grad)", vg, append(append([]float64{}, wx...), other...), 0)
		}

		// Reductions: ties among the extrema share the tangent equally.
		for _, c := range []struct {
			name string
			f    func(x *peel.Tensor, axes ...int) *peel.Tensor
			x    []float64
			w    []float64 // d/dx of the sum of the reduction over axis 1
		}{
			{"Max", peel.Max, []float64{1, 3, 3, 2, 5, 5, 5, 0}, []float64{0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}},
			{"Min", peel.Min, []float64{1, 3, 1, 2, 0, 5, 5, 0}, []float64{0.5, 0, 0.5, 0, 0.5, 0, 0, 0.5}},
			{"Max one", peel.Max, []float64{1, 3, 2, 2, 7, 5, 6, 0}, []float64{0, 1, 0, 0, 1, 0, 0, 0}},
		} {
			name := fmt.Sprintf("%s %v", c.name, dt)
			x := peel.AsType(peel.FromFloat64s(c.x, 2, 4), dt)
			loss := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(c.f(x, 1)) }
			tol := 0.0
			if dt == peel.Float32 {
				tol = 1e-7 // a third
			} else {
				tol = 1e-16
			}
			tiesCheck(t, name+" Grad", transforms.Grad(loss)(x), c.w, tol)
			tiesCheck(t, name+" Compile(Grad)", transforms.Compile(transforms.Grad(loss))(x), c.w, tol)
			tiesCheck(t, name+" Vmap(Grad)", transforms.Vmap(transforms.Grad(func(r *peel.Tensor) *peel.Tensor { return peel.Sum(c.f(r)) }))(x), c.w, tol)
			_, tan := transforms.JVP(loss, x, peel.OnesLike(x))
			tiesCheck(t, name+" JVP of ones", tan, []float64{2}, 4*tol)
		}
	}
}

// TestNormalizeEpsClosedForm: Standardize and RMSNormalize put eps
// inside the square root with the variance (or mean square): rows ±a
// with eps = 3a² normalize to ±1/2 exactly, a tangent along x moves them
// by ±3/8, and one along the row's mean by 0 (Standardize) or 1/(2a)
// (RMSNormalize); by value in float32 and float64, eagerly, compiled
// (the norms expanded into fused row operations) and under Vmap.
func TestNormalizeEpsClosedForm(t *testing.T) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, c := range []struct {
			name  string
			f     func(x *peel.Tensor, k int, eps float64) *peel.Tensor
			shift []float64 // the tangent of the result for a tangent of ones
		}{
			{"Standardize", peel.Standardize, []float64{0, 0, 0, 0}},
			{"RMSNormalize", peel.RMSNormalize, []float64{0.5, 0.5, 0.25, 0.25}},
		} {
			name := fmt.Sprintf("%s %v", c.name, dt)
			// Rows [1, -1] and [2, -2], with eps 3 and 12 = 3a².
			x1 := peel.AsType(peel.FromFloat64s([]float64{1, -1}, 1, 2), dt)
			x2 := peel.AsType(peel.FromFloat64s([]float64{2, -2}, 1, 2), dt)
			f := func(x *peel.Tensor) *peel.Tensor {
				a := peel.Slice(x, 0, 0, 1, 1)
				b := peel.Slice(x, 0, 1, 2, 1)
				return peel.Concat([]*peel.Tensor{c.f(a, 1, 3), c.f(b, 1, 12)}, 0)
			}
			x := peel.Concat([]*peel.Tensor{x1, x2}, 0)
			half := []float64{0.5, -0.5, 0.5, -0.5}
			tiesCheck(t, name, f(x), half, 0)
			tiesCheck(t, name+" Compile", transforms.Compile(f)(x), half, 1e-7)
			tiesCheck(t, name+" Vmap", transforms.Vmap(func(r *peel.Tensor) *peel.Tensor {
				return c.f(r, 1, 3)
			})(peel.AsType(peel.FromFloat64s([]float64{1, -1, -1, 1}, 2, 2), dt)), []float64{0.5, -0.5, -0.5, 0.5}, 0)
			_, along := transforms.JVP(f, x, x)
			tiesCheck(t, name+" JVP along x", along, []float64{0.375, -0.375, 0.375, -0.375}, 1e-7)
			_, shift := transforms.JVP(f, x, peel.OnesLike(x))
			tiesCheck(t, name+" JVP of ones", shift, c.shift, 1e-7)
			_, cshift := transforms.JVP(transforms.Compile(f), x, peel.OnesLike(x))
			tiesCheck(t, name+" JVP of ones, compiled", cshift, c.shift, 1e-7)
		}
	}
}
