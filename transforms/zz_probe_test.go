package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

func TestZZProbeA(t *testing.T) {
	defer func() { t.Log("A recovered:", recover()) }()
	W := peel.FromFloat64s([]float64{1, 2, 3}, 3)
	We := peel.Clone(W)
	mk := func(w *T) func(*T) *T {
		return func(x *T) *T { peel.AddInPlace(w, peel.Sin(x)); return peel.Sum(peel.Mul(x, w)) }
	}
	c := transforms.Compile(transforms.Grad(mk(W)))
	ge := transforms.Grad(mk(We))
	x := peel.FromFloat64s([]float64{0.5, 1, 2}, 3)
	for range 3 {
		t.Log("A", c.Call(x).Float64s(), ge(x).Float64s(), W.Float64s(), We.Float64s())
	}
}

func TestZZProbeB(t *testing.T) {
	defer func() { t.Log("B recovered:", recover()) }()
	f := func(x *T) *T { peel.MulInPlace(x, 2.0); return peel.Sum(peel.Sin(x)) }
	x1 := peel.FromFloat64s([]float64{0.5, 1, 2}, 3)
	x2 := peel.Clone(x1)
	g1 := transforms.Grad(transforms.Checkpoint(f, transforms.NothingSaveable))(x1)
	g2 := transforms.Grad(f)(x2)
	t.Log("B", g1.Float64s(), g2.Float64s(), x1.Float64s(), x2.Float64s())
	x3 := peel.FromFloat64s([]float64{0.5, 1, 2}, 3)
	g3 := transforms.Grad(f, transforms.Remat(transforms.NothingSaveable))(x3)
	t.Log("B remat", g3.Float64s(), x3.Float64s())
	x4 := peel.FromFloat64s([]float64{0.5, 1, 2}, 3)
	v, g4 := transforms.ValueAndGrad(transforms.Checkpoint(f, transforms.NothingSaveable))(x4)
	t.Log("B vg", v.Float64s(), g4.Float64s(), x4.Float64s())
}

func TestZZProbeC(t *testing.T) {
	defer func() { t.Log("C recovered:", recover()) }()
	W := peel.FromFloat64s([]float64{1}, 1)
	c := transforms.Compile(func(v *T) *T { return peel.Add(v, peel.Mul(W, 2.0)) })
	one := peel.FromFloat64s([]float64{1}, 1)
	t.Log("C", c.Call(one).Float64s())
	peel.AddInPlace(W, 1.0)
	t.Log("C", c.Call(one).Float64s(), "want 5")
}
