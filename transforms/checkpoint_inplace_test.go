package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// ckMutating are programs of x [2, 3] that write in place through a
// view kind v (ipViews): into a tensor they make, into a clone of x,
// and into x itself (the caller's tensor receives the write).
var ckMutating = []struct {
	name    string
	writesX bool
	f       func(v func(*T) *T) func(*T) *T
}{
	{"made inside", false, func(v func(*T) *T) func(*T) *T {
		return func(x *T) *T {
			y := peel.Zeros(peel.Float64, 2, 3)
			peel.CopyInto(v(y), v(peel.Sin(x)))
			peel.AddInPlace(v(y), v(x))
			return peel.Tanh(peel.Mul(y, x))
		}
	}},
	{"clone", false, func(v func(*T) *T) func(*T) *T {
		return func(x *T) *T {
			y := peel.Clone(x)
			peel.MulInPlace(v(y), v(peel.Exp(x)))
			a := v(y) // an alias taken before the next write
			peel.AddInPlace(y, 1.0)
			return peel.Add(peel.Sum(peel.Mul(a, a)), peel.Sin(y))
		}
	}},
	{"argument", true, func(v func(*T) *T) func(*T) *T {
		return func(x *T) *T {
			peel.MulInPlace(v(x), v(peel.Cos(x)))
			return peel.Mul(x, peel.Exp(x))
		}
	}},
}

// TestCheckpointInPlaceWrites is the regression test of issue 25 item
// 10: Checkpoint refused in-place writes through views ("not supported
// by the staging interpreter") even outside autodiff, into its argument
// as into tensors it makes (whole-tensor writes passed). For every mutating
// program, view kind and policy, Checkpoint(f) must give f's result and
// leave the argument as f does (eagerly), and Grad of a loss through
// Checkpoint(f) must equal Grad of the loss through f (tolerance 1e-12,
// float64), also compiled and as Grad's Remat option; Vmap(Checkpoint(f))
// equals per-lane eager calls.
func TestCheckpointInPlaceWrites(t *testing.T) {
	x0 := ckRandom(7, 2, 3)
	w := ckRandom(8, 2, 3)
	xs := ckRandom(9, 4, 2, 3)
	loss := func(f func(*T) *T) func(*T) *T {
		return func(x *T) *T { return peel.Sum(peel.Mul(f(x), w)) }
	}
	for _, prog := range ckMutating {
		for _, view := range ipViews {
			f := prog.f(view.v)
			xe := peel.Clone(x0)
			want := f(xe)
			wantGrad := transforms.Grad(loss(f))(peel.Clone(x0))
			var wantLanes [][]float64
			for i := 0; i < xs.Shape()[0]; i++ {
				wantLanes = append(wantLanes, f(peel.Clone(peel.Index(xs, i))).Float64s())
			}
			for _, c := range ckPolicies {
				t.Run(prog.name+"/"+view.name+"/"+c.name, func(t *testing.T) {
					err := peel.Catch(func() {
						ck := transforms.Checkpoint(f, c.policy)
						x := peel.Clone(x0)
						near(t, "value", ck(x).Float64s(), want.Float64s(), 1e-12)
						near(t, "argument after the call", x.Float64s(), xe.Float64s(), 1e-12)
						near(t, "Grad", transforms.Grad(loss(ck))(peel.Clone(x0)).Float64s(), wantGrad.Float64s(), 1e-12)
						near(t, "Grad with Remat", transforms.Grad(loss(f), transforms.Remat(c.policy))(peel.Clone(x0)).Float64s(), wantGrad.Float64s(), 1e-12)
						near(t, "Compile(Grad)", transforms.Compile(transforms.Grad(loss(ck)))(peel.Clone(x0)).Float64s(), wantGrad.Float64s(), 1e-12)
						got := transforms.Vmap(ck)(peel.Clone(xs))
						for i, lane := range wantLanes {
							near(t, "Vmap lane", peel.Index(got, i).Float64s(), lane, 1e-12)
						}
					})
					if err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// TestCheckpointInPlaceNested checks a mutating Checkpoint inside
// another one, with other policies, under Grad, Grad(Grad) and Jacfwd,
// against the same code without checkpoints (float64; 1e-12, 1e-10 for
// the second order).
func TestCheckpointInPlaceNested(t *testing.T) {
	x0 := ckRandom(7, 2, 3)
	inner := func(x *T) *T { peel.MulInPlace(peel.Narrow(x, 1, 1, 2), 3.0); return peel.Sin(x) }
	outer := func(x *T) *T {
		y := peel.Clone(x)
		r := transforms.Checkpoint(inner, transforms.MinCut)(y)
		return peel.Mul(r, y)
	}
	plain := func(x *T) *T { y := peel.Clone(x); r := inner(y); return peel.Mul(r, y) }
	ck := transforms.Checkpoint(outer, transforms.DotsSaveable)
	loss := func(f func(*T) *T) func(*T) *T { return func(x *T) *T { return peel.Sum(peel.Square(f(x))) } }
	gradLoss := func(f func(*T) *T) func(*T) *T {
		return loss(func(x *T) *T { return transforms.Grad(loss(f))(x) })
	}
	near(t, "value", ck(peel.Clone(x0)).Float64s(), plain(peel.Clone(x0)).Float64s(), 1e-12)
	near(t, "Grad", transforms.Grad(loss(ck))(peel.Clone(x0)).Float64s(), transforms.Grad(loss(plain))(peel.Clone(x0)).Float64s(), 1e-12)
	near(t, "Grad(Grad)", transforms.Grad(gradLoss(ck))(peel.Clone(x0)).Float64s(), transforms.Grad(gradLoss(plain))(peel.Clone(x0)).Float64s(), 1e-10)
	near(t, "Jacfwd", transforms.Jacfwd(ck)(peel.Clone(x0)).Float64s(), transforms.Jacfwd(plain)(peel.Clone(x0)).Float64s(), 1e-12)
}
