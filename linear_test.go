package peel_test

import (
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// linParams are Linear's differentiable operands.
type linParams struct{ X, W, B *peel.Tensor }

// TestLinearMatchesDecomposition checks peel.Linear bit for bit against
// Add(MatMul(x, w), b), eagerly and under Grad (whose cotangents are the
// decomposition's) and Vmap (which decomposes it), float32 and float64,
// x of rank 1 to 3, products the CPU backend runs in parallel.
func TestLinearMatchesDecomposition(t *testing.T) {
	key := peel.Key(3)
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, x := range [][]int{{5}, {4, 5}, {2, 3, 5}, {300, 5}} {
			for _, n := range []int{1, 6, 70} {
				ks := peel.SplitKeys(key, 4)
				key = ks[3]
				p := linParams{
					X: peel.Normal(ks[0], dt, x...),
					W: peel.Normal(ks[1], dt, 5, n),
					B: peel.Normal(ks[2], dt, n),
				}
				fused := func(p linParams) *peel.Tensor { return peel.Linear(p.X, p.W, p.B) }
				dec := func(p linParams) *peel.Tensor { return peel.Add(peel.MatMul(p.X, p.W), p.B) }
				sameBits(t, "eager", fused(p), dec(p))
				sq := func(f func(linParams) *peel.Tensor) func(linParams) *peel.Tensor {
					return func(p linParams) *peel.Tensor { return peel.Sum(peel.Tanh(f(p))) }
				}
				gf, gd := transforms.Grad(sq(fused))(p), transforms.Grad(sq(dec))(p)
				sameBits(t, "grad x", gf.X, gd.X)
				sameBits(t, "grad w", gf.W, gd.W)
				sameBits(t, "grad b", gf.B, gd.B)
				if len(x) >= 2 {
					vf := transforms.Vmap(func(x *peel.Tensor) *peel.Tensor { return peel.Linear(x, p.W, p.B) })(p.X)
					sameBits(t, "vmap", vf, dec(p))
				}
			}
		}
	}
}

// sameBits fails unless a and b have one shape and the same bits.
func sameBits(t *testing.T, what string, a, b *peel.Tensor) {
	t.Helper()
	if !slices.Equal(a.Shape(), b.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, a.Shape(), b.Shape())
	}
	av, bv := peel.AsType(a, peel.Float64).Float64s(), peel.AsType(b, peel.Float64).Float64s()
	for i := range av {
		if math.Float64bits(av[i]) != math.Float64bits(bv[i]) {
			t.Fatalf("%s %v: element %d is %v, the decomposition's %v", what, a.Shape(), i, av[i], bv[i])
		}
	}
}

// TestLinearErrors checks Linear's misuse errors.
func TestLinearErrors(t *testing.T) {
	x, w, b := peel.Ones(peel.Float32, 2, 3), peel.Ones(peel.Float32, 3, 4), peel.Ones(peel.Float32, 4)
	wantError(t, "peel.Linear", func() { peel.Linear(nil, w, b) })
	wantError(t, "peel.Linear", func() { peel.Linear(x, peel.Ones(peel.Float32, 3), b) }, "not 2-D")
	wantError(t, "peel.Linear", func() { peel.Linear(peel.Ones(peel.Float32, 2, 4), w, b) }, "f32[2,4]", "3 rows")
	wantError(t, "peel.Linear", func() { peel.Linear(peel.Scalar(float32(1)), w, b) })
	wantError(t, "peel.Linear", func() { peel.Linear(x, w, peel.Ones(peel.Float32, 3)) }, "bias", "[4]")
	wantError(t, "peel.Linear", func() { peel.Linear(x, w, peel.Ones(peel.Float32, 1, 4)) }, "bias")
	wantError(t, "peel.Linear", func() {
		peel.Linear(peel.Ones(peel.Bool, 2, 3), peel.Ones(peel.Bool, 3, 4), b)
	}, "bool")
	if got := peel.Linear(x, w, nil); !slices.Equal(got.Shape(), []int{2, 4}) || got.Float32s()[0] != 3 {
		t.Errorf("Linear without a bias: %v %v", got.Shape(), got.Float32s())
	}
}
