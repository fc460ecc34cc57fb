package transforms_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Regressions of issue 25, items 1, 8 and 9: writes whose destination and
// value live at different levels. Every oracle is exact or a finite
// difference: the same code run per lane without Vmap (1e-12 relative
// above magnitude 1), or central differences of the eager function
// (fdGrad, ε = 1e-6; 1e-6 relative above magnitude 1).

// lvFlat concatenates the flattened tensors.
func lvFlat(ts ...*T) *T {
	flat := make([]*T, len(ts))
	for i, t := range ts {
		flat[i] = peel.Reshape(t, -1)
	}
	return peel.Concat(flat, 0)
}

// lvLanes runs body per lane of xs and ys (stacked along 0) without Vmap
// and stacks the results: the oracle of Vmap2(body).
func lvLanes(body func(x, y *T) *T, xs, ys *T) *T {
	n := xs.Shape()[0]
	outs := make([]*T, n)
	for i := range outs {
		outs[i] = body(peel.Clone(peel.Index(xs, i)), peel.Clone(peel.Index(ys, i)))
	}
	return peel.Stack(outs, 0)
}

// lvWrite is the h: a copy of x whose first row is written, through
// an Index view, with y.
func lvWrite(x, y *T) *T {
	c := peel.Clone(x)
	peel.CopyInto(peel.Index(c, 0), y)
	return c
}

func lvSumSq(c *T) *T { return peel.Sum(peel.Mul(c, c)) }

// TestRegressionViewOfBatchedFromInnerTransform (issue 25, item 1): a
// write through a view of a tensor batched at an outer Vmap, of a value
// of an inner autodiff level, reaches the base (it was dropped: the
// batched view did not record its base, so the inner level adopted the
// view alone). Each body runs under Vmap2 (x batched, [2,2,3]; y batched,
// [2,3]) against the same body per lane.
func TestRegressionViewOfBatchedFromInnerTransform(t *testing.T) {
	xs := peel.Reshape(peel.Arange(peel.Float64, 0, 12, 1), 2, 2, 3)
	ys := peel.Add(peel.Reshape(peel.Arange(peel.Float64, 0, 6, 1), 2, 3), 100.0)
	ones := func(y *T) *T { return peel.OnesLike(y) }
	bodies := []struct {
		name string
		body func(x, y *T) *T
	}{
		{"grad", func(x, y *T) *T {
			return transforms.Grad(func(y *T) *T { return lvSumSq(lvWrite(x, y)) })(y)
		}},
		{"vjp", func(x, y *T) *T {
			p, pb := transforms.VJP(func(y *T) *T { return lvWrite(x, y) }, y)
			return lvFlat(p, pb(peel.Add(p, 0.5)))
		}},
		{"jvp", func(x, y *T) *T {
			p, tan := transforms.JVP(func(y *T) *T { return lvSumSq(lvWrite(x, y)) }, y, ones(y))
			return lvFlat(p, tan)
		}},
		{"jvp_vector", func(x, y *T) *T {
			p, tan := transforms.JVP(func(y *T) *T { return lvWrite(x, y) }, y, peel.Mul(y, 0.25))
			return lvFlat(p, tan)
		}},
		{"linearize", func(x, y *T) *T {
			p, lin := transforms.Linearize(func(y *T) *T { return lvWrite(x, y) }, y)
			return lvFlat(p, lin(peel.Sin(y)))
		}},
		{"jacfwd", func(x, y *T) *T {
			return transforms.Jacfwd(func(y *T) *T { return peel.Mul(lvWrite(x, y), x) })(y)
		}},
		{"jacrev", func(x, y *T) *T {
			return transforms.Jacrev(func(y *T) *T { return peel.Mul(lvWrite(x, y), x) })(y)
		}},
		{"grad_functionalize", func(x, y *T) *T {
			return transforms.Grad(transforms.Functionalize(func(y *T) *T { return lvSumSq(lvWrite(x, y)) }))(y)
		}},
		{"functionalize_grad", func(x, y *T) *T {
			return transforms.Functionalize(transforms.Grad(func(y *T) *T { return lvSumSq(lvWrite(x, y)) }))(y)
		}},
		// An alias of the batched tensor taken before the inner
		// transform, read inside it after the write and after it.
		{"grad_alias_before", func(x, y *T) *T {
			c := peel.Clone(x)
			a := peel.Index(c, 0)
			g := transforms.Grad(func(y *T) *T {
				peel.CopyInto(peel.Index(c, 0), peel.Mul(y, y))
				return peel.Add(lvSumSq(a), peel.Sum(c))
			})(y)
			return lvFlat(g, a, c)
		}},
		{"jvp_slice_of_row", func(x, y *T) *T {
			c := peel.Clone(x)
			p, tan := transforms.JVP(func(y *T) *T {
				peel.AddInPlace(peel.Slice(peel.Index(c, 1), 0, 0, 3, 2), peel.Narrow(peel.Exp(y), 0, 0, 2))
				return peel.Mul(c, 3.0)
			}, y, ones(y))
			return lvFlat(p, tan, c)
		}},
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			want := lvLanes(b.body, xs, ys)
			ipWant(t, "vmap", want.Float64s(), func() []*T { return ipOne(transforms.Vmap2(b.body)(xs, ys)) })
			ipWant(t, "compile_vmap", want.Float64s(), func() []*T {
				return ipOne(transforms.Compile2(transforms.Vmap2(b.body))(xs, ys))
			})
		})
	}
	// The numbers: the gradient of Σ c⊙c with respect to the
	// row written, 2y.
	ipWant(t, "issue", []float64{200, 202, 204, 206, 208, 210}, func() []*T {
		return ipOne(transforms.Vmap2(bodies[0].body)(xs, ys))
	})
}

// lvProgram is item 8's program: it writes its argument in place (a
// square, then through a Narrow view) and returns a vector.
func lvProgram(x *T) *T {
	peel.MulInPlace(x, x)
	peel.AddInPlace(peel.Narrow(x, 0, 1, 2), peel.Sin(peel.Narrow(x, 0, 0, 2)))
	return peel.Mul(peel.Sin(x), 1.5)
}

// lvScalar is a scalar variant: Σ w⊙v with distinct weights.
func lvScalar(f func(*T) *T) func(*T) *T {
	return func(x *T) *T { return peel.Sum(peel.Mul(f(x), f64(0.5, -1.25, 2))) }
}

// lvFDJac is the central-difference Jacobian (m×n, row-major) of the
// eager f at x0 (fresh inputs per evaluation).
func lvFDJac(f func(*T) *T, x0 []float64) []float64 {
	m := f(peel.FromFloat64s(append([]float64{}, x0...))).Size()
	jac := make([]float64, m*len(x0))
	for i := 0; i < m; i++ {
		row := fdGrad(func(x *T) *T { return peel.Index(f(x), i) }, x0, len(x0))
		copy(jac[i*len(x0):], row)
	}
	return jac
}

// TestRegressionWritesIntoArguments (issue 25, item 8): a function that
// writes its argument leaves the caller's tensor as eager code does,
// under every transform, and so do the caller's views of it taken before
// the call; the derivatives are those of the eager function (finite
// differences). Before the fix the caller's tensor kept its old value
// under every autodiff transform (the level's input box was written, not
// the caller's).
func TestRegressionWritesIntoArguments(t *testing.T) {
	x0 := []float64{0.3, -0.8, 1.1}
	y0 := []float64{0.7, 0.2, -0.4}
	ref := peel.FromFloat64s(append([]float64{}, x0...))
	lvProgram(ref)
	after := ref.Float64s() // x after the eager call
	jac := lvFDJac(lvProgram, x0)
	grad := fdGrad(lvScalar(lvProgram), x0, 3)
	// A two-argument program writing both arguments: x as above, y ← y·x.
	two := func(x, y *T) *T {
		peel.MulInPlace(y, x)
		return peel.Add(lvScalar(lvProgram)(x), peel.Sum(peel.Mul(y, y)))
	}
	refX, refY := peel.FromFloat64s(append([]float64{}, x0...)), peel.FromFloat64s(append([]float64{}, y0...))
	two(refX, refY)
	afterX, afterY := refX.Float64s(), refY.Float64s()
	gradX := fdGrad(func(x *T) *T { return two(x, peel.FromFloat64s(append([]float64{}, y0...))) }, x0, 3)
	gradY := fdGrad(func(y *T) *T { return two(peel.FromFloat64s(append([]float64{}, x0...)), y) }, y0, 3)

	// jvpWant is J·v for v = [1, 0.5, -1].
	v := []float64{1, 0.5, -1}
	jv := make([]float64, 3)
	for i := range jv {
		for j := range v {
			jv[i] += jac[i*3+j] * v[j]
		}
	}
	u := []float64{0.5, -1.25, 2}
	ujt := grad // Jᵀu = the scalar variant's gradient

	type outcome struct {
		got, want []float64
		tol       float64
	}
	one := []struct {
		name string
		run  func(x *T) []outcome
	}{
		{"grad", func(x *T) []outcome {
			return []outcome{{transforms.Grad(lvScalar(lvProgram))(x).Float64s(), grad, 1e-6}}
		}},
		{"value_and_grad", func(x *T) []outcome {
			_, g := transforms.ValueAndGrad(lvScalar(lvProgram))(x)
			return []outcome{{g.Float64s(), grad, 1e-6}}
		}},
		{"vjp", func(x *T) []outcome {
			_, pb := transforms.VJP(lvProgram, x)
			return []outcome{{pb(f64(u...)).Float64s(), ujt, 1e-6}}
		}},
		{"jvp", func(x *T) []outcome {
			_, tan := transforms.JVP(lvProgram, x, f64(v...))
			return []outcome{{tan.Float64s(), jv, 1e-6}}
		}},
		{"linearize", func(x *T) []outcome {
			_, lin := transforms.Linearize(lvProgram, x)
			return []outcome{{lin(f64(v...)).Float64s(), jv, 1e-6}}
		}},
		{"jacfwd", func(x *T) []outcome {
			return []outcome{{transforms.Jacfwd(lvProgram)(x).Float64s(), jac, 1e-6}}
		}},
		{"jacrev", func(x *T) []outcome {
			return []outcome{{transforms.Jacrev(lvProgram)(x).Float64s(), jac, 1e-6}}
		}},
		{"hessian", func(x *T) []outcome {
			// Against the Hessian of the function on a copy (exact).
			want := transforms.Hessian(func(x *T) *T { return lvScalar(lvProgram)(peel.Clone(x)) })(f64(x0...))
			return []outcome{{transforms.Hessian(lvScalar(lvProgram))(x).Float64s(), want.Float64s(), 1e-12}}
		}},
		{"hvp", func(x *T) []outcome {
			want := transforms.HVP(func(x *T) *T { return lvScalar(lvProgram)(peel.Clone(x)) }, f64(x0...), f64(v...))
			return []outcome{{transforms.HVP(lvScalar(lvProgram), x, f64(v...)).Float64s(), want.Float64s(), 1e-12}}
		}},
		{"grad_functionalize", func(x *T) []outcome {
			return []outcome{{transforms.Grad(transforms.Functionalize(lvScalar(lvProgram)))(x).Float64s(), grad, 1e-6}}
		}},
		{"functionalize_grad", func(x *T) []outcome {
			return []outcome{{transforms.Functionalize(transforms.Grad(lvScalar(lvProgram)))(x).Float64s(), grad, 1e-6}}
		}},
		{"compile_grad", func(x *T) []outcome {
			return []outcome{{transforms.Compile(transforms.Grad(lvScalar(lvProgram)))(x).Float64s(), grad, 1e-6}}
		}},
	}
	for _, c := range one {
		t.Run(c.name, func(t *testing.T) {
			x := f64(x0...)
			view := peel.Narrow(x, 0, 1, 2) // a caller's alias, taken before
			var outs []outcome
			if err := catchAll(func() { outs = c.run(x) }); err != nil {
				t.Fatalf("error: %s", ipTrim(err.Error()))
			}
			for i, o := range outs {
				if msg := withinTol(o.got, o.want, o.tol, o.tol); msg != "" {
					t.Errorf("derivative %d: %s", i, msg)
				}
			}
			near(t, "the caller's tensor after the call", x.Float64s(), after, 1e-15)
			near(t, "the caller's view of it", view.Float64s(), after[1:], 1e-15)
		})
	}
	// Two arguments, both written.
	twoCases := []struct {
		name string
		run  func(x, y *T) []outcome
	}{
		{"grad2", func(x, y *T) []outcome {
			return []outcome{{transforms.Grad2(two)(x, y).Float64s(), gradX, 1e-6}}
		}},
		{"value_and_grad2", func(x, y *T) []outcome {
			_, g := transforms.ValueAndGrad2(two)(x, y)
			return []outcome{{g.Float64s(), gradX, 1e-6}}
		}},
		{"grad_args2", func(x, y *T) []outcome {
			gx, gy := transforms.GradArgs2(two, transforms.Argnums(0, 1))(x, y)
			return []outcome{{gx.Float64s(), gradX, 1e-6}, {gy.Float64s(), gradY, 1e-6}}
		}},
		{"grad_args2_argnums1", func(x, y *T) []outcome {
			_, gy := transforms.GradArgs2(two, transforms.Argnums(1))(x, y)
			return []outcome{{gy.Float64s(), gradY, 1e-6}}
		}},
		{"vjp2", func(x, y *T) []outcome {
			_, pb := transforms.VJP2(two, x, y)
			gx, gy := pb(peel.Scalar(1.0))
			return []outcome{{gx.Float64s(), gradX, 1e-6}, {gy.Float64s(), gradY, 1e-6}}
		}},
		{"jvp2", func(x, y *T) []outcome {
			_, tan := transforms.JVP2(two, x, y, f64(v...), f64(0, 0, 0))
			want := 0.0
			for i := range v {
				want += gradX[i] * v[i]
			}
			return []outcome{{tan.Float64s(), []float64{want}, 1e-6}}
		}},
		{"jacrev_args2", func(x, y *T) []outcome {
			jx, jy := transforms.JacrevArgs2(two)(x, y)
			return []outcome{{jx.Float64s(), gradX, 1e-6}, {jy.Float64s(), gradY, 1e-6}}
		}},
		{"jacfwd2", func(x, y *T) []outcome {
			return []outcome{{transforms.Jacfwd2(two)(x, y).Float64s(), gradX, 1e-6}}
		}},
	}
	for _, c := range twoCases {
		t.Run(c.name, func(t *testing.T) {
			x, y := f64(x0...), f64(y0...)
			var outs []outcome
			if err := catchAll(func() { outs = c.run(x, y) }); err != nil {
				t.Fatalf("error: %s", ipTrim(err.Error()))
			}
			for i, o := range outs {
				if msg := withinTol(o.got, o.want, o.tol, o.tol); msg != "" {
					t.Errorf("derivative %d: %s", i, msg)
				}
			}
			near(t, "x after the call", x.Float64s(), afterX, 1e-15)
			near(t, "y after the call", y.Float64s(), afterY, 1e-15)
		})
	}
	// Three arguments: the third, z, is written too (z ← z + x) and
	// read, so its gradient is that of the eager function.
	three := func(x, y, z *T) *T {
		peel.AddInPlace(z, x)
		return peel.Add(two(x, y), peel.Sum(peel.Mul(z, z)))
	}
	z0 := []float64{-0.2, 0.6, 0.15}
	refX, refY = f64(x0...), f64(y0...)
	refZ := f64(z0...)
	three(refX, refY, refZ)
	afterX3, afterY3, afterZ3 := refX.Float64s(), refY.Float64s(), refZ.Float64s()
	fresh := func(v []float64) *T { return f64(v...) }
	gradX3 := fdGrad(func(x *T) *T { return three(x, fresh(y0), fresh(z0)) }, x0, 3)
	gradZ3 := fdGrad(func(z *T) *T { return three(fresh(x0), fresh(y0), z) }, z0, 3)
	threeCases := []struct {
		name string
		run  func(x, y, z *T) []outcome
	}{
		{"grad3", func(x, y, z *T) []outcome {
			return []outcome{{transforms.Grad3(three)(x, y, z).Float64s(), gradX3, 1e-6}}
		}},
		{"value_and_grad3", func(x, y, z *T) []outcome {
			_, g := transforms.ValueAndGrad3(three)(x, y, z)
			return []outcome{{g.Float64s(), gradX3, 1e-6}}
		}},
		{"grad_args3", func(x, y, z *T) []outcome {
			gx, _, gz := transforms.GradArgs3(three, transforms.Argnums(0, 2))(x, y, z)
			return []outcome{{gx.Float64s(), gradX3, 1e-6}, {gz.Float64s(), gradZ3, 1e-6}}
		}},
		{"vjp3", func(x, y, z *T) []outcome {
			_, pb := transforms.VJP3(three, x, y, z)
			gx, _, gz := pb(peel.Scalar(1.0))
			return []outcome{{gx.Float64s(), gradX3, 1e-6}, {gz.Float64s(), gradZ3, 1e-6}}
		}},
		{"jvp3", func(x, y, z *T) []outcome {
			_, tan := transforms.JVP3(three, x, y, z, f64(0, 0, 0), f64(0, 0, 0), f64(v...))
			want := 0.0
			for i := range v {
				want += gradZ3[i] * v[i]
			}
			return []outcome{{tan.Float64s(), []float64{want}, 1e-6}}
		}},
		{"jacfwd_args3", func(x, y, z *T) []outcome {
			jx, _, jz := transforms.JacfwdArgs3(three, transforms.Argnums(0, 2))(x, y, z)
			return []outcome{{jx.Float64s(), gradX3, 1e-6}, {jz.Float64s(), gradZ3, 1e-6}}
		}},
		{"jacrev3", func(x, y, z *T) []outcome {
			return []outcome{{transforms.Jacrev3(three)(x, y, z).Float64s(), gradX3, 1e-6}}
		}},
	}
	for _, c := range threeCases {
		t.Run(c.name, func(t *testing.T) {
			x, y, z := f64(x0...), f64(y0...), f64(z0...)
			var outs []outcome
			if err := catchAll(func() { outs = c.run(x, y, z) }); err != nil {
				t.Fatalf("error: %s", ipTrim(err.Error()))
			}
			for i, o := range outs {
				if msg := withinTol(o.got, o.want, o.tol, o.tol); msg != "" {
					t.Errorf("derivative %d: %s", i, msg)
				}
			}
			near(t, "x after the call", x.Float64s(), afterX3, 1e-15)
			near(t, "y after the call", y.Float64s(), afterY3, 1e-15)
			near(t, "z after the call", z.Float64s(), afterZ3, 1e-15)
		})
	}
	// Under Vmap the caller's batched tensor receives every lane's write.
	t.Run("vmap_grad", func(t *testing.T) {
		xs := peel.Stack([]*T{f64(x0...), f64(y0...)}, 0)
		r0, r1 := f64(x0...), f64(y0...)
		lvProgram(r0)
		lvProgram(r1)
		want := append(transforms.Grad(lvScalar(lvProgram))(f64(x0...)).Float64s(), transforms.Grad(lvScalar(lvProgram))(f64(y0...)).Float64s()...)
		got := transforms.Vmap(transforms.Grad(lvScalar(lvProgram)))(xs)
		near(t, "Vmap(Grad) vs a loop of Grad", got.Float64s(), want, 1e-12)
		near(t, "the caller's batched tensor", xs.Float64s(), append(r0.Float64s(), r1.Float64s()...), 1e-15)
	})
}

// lvCaptured returns item 9's program and its fresh captured tensor: the
// function writes an x-dependent value into the capture (through a view,
// after a whole write) and reads it, so the result depends on x through
// the capture; cview is a view of the capture taken before any call.
func lvCaptured() (f func(x *T) *T, c, cview *T) {
	c = f64(0.25, -0.5, 1.5)
	cview = peel.Narrow(c, 0, 1, 2)
	f = func(x *T) *T {
		peel.CopyInto(c, peel.Mul(x, 2.0))
		peel.AddInPlace(peel.Narrow(c, 0, 0, 2), peel.Exp(peel.Narrow(x, 0, 1, 2)))
		return peel.Mul(peel.Sin(c), x)
	}
	return f, c, cview
}

// TestCapturedWritesUnderEveryTransform (issue 25, item 9): a function
// that writes an x-dependent value into a captured tensor and reads it
// back is differentiated through the capture (plain autograd's
// semantics), and the captured tensor, and every view of it taken
// before, ends with the primal value eager code leaves in it. Before the
// fix the capture was rebound to a new buffer, so its views kept the old
// values.
func TestCapturedWritesUnderEveryTransform(t *testing.T) {
	x0 := []float64{0.4, -0.3, 0.9}
	eager := func(x *T) *T { f, _, _ := lvCaptured(); return f(x) }
	fe, ce, _ := lvCaptured()
	value := fe(f64(x0...)).Float64s()
	capAfter := ce.Float64s()
	jac := lvFDJac(eager, x0)
	grad := fdGrad(lvScalar(eager), x0, 3)
	v := []float64{1, 0.5, -1}
	jv := make([]float64, 3)
	for i := range jv {
		for j := range v {
			jv[i] += jac[i*3+j] * v[j]
		}
	}
	u := []float64{0.5, -1.25, 2}
	cases := []struct {
		name string
		// run returns the derivative and its finite-difference want.
		run func(f func(*T) *T, x *T) (got, want []float64)
	}{
		{"grad", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Grad(lvScalar(f))(x).Float64s(), grad
		}},
		{"vjp", func(f func(*T) *T, x *T) ([]float64, []float64) {
			p, pb := transforms.VJP(f, x)
			return append(p.Float64s(), pb(f64(u...)).Float64s()...), append(append([]float64{}, value...), grad...)
		}},
		{"jvp", func(f func(*T) *T, x *T) ([]float64, []float64) {
			p, tan := transforms.JVP(f, x, f64(v...))
			return append(p.Float64s(), tan.Float64s()...), append(append([]float64{}, value...), jv...)
		}},
		{"linearize", func(f func(*T) *T, x *T) ([]float64, []float64) {
			p, lin := transforms.Linearize(f, x)
			return append(p.Float64s(), lin(f64(v...)).Float64s()...), append(append([]float64{}, value...), jv...)
		}},
		{"jacfwd", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Jacfwd(f)(x).Float64s(), jac
		}},
		{"jacrev", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Jacrev(f)(x).Float64s(), jac
		}},
		{"grad_functionalize", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Grad(transforms.Functionalize(lvScalar(f)))(x).Float64s(), grad
		}},
		{"functionalize_grad", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Functionalize(transforms.Grad(lvScalar(f)))(x).Float64s(), grad
		}},
		{"compile_grad", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Compile(transforms.Grad(lvScalar(f)))(x).Float64s(), grad
		}},
		{"grad_checkpoint", func(f func(*T) *T, x *T) ([]float64, []float64) {
			return transforms.Grad(lvScalar(transforms.Checkpoint(f, transforms.NothingSaveable)))(x).Float64s(), grad
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, capt, cview := lvCaptured()
			var got, want []float64
			if err := catchAll(func() { got, want = c.run(f, f64(x0...)) }); err != nil {
				t.Fatalf("error: %s", ipTrim(err.Error()))
			}
			if msg := withinTol(got, want, 1e-6, 1e-6); msg != "" {
				t.Errorf("vs finite differences of the eager function: %s", msg)
			}
			if msg := ipConcrete("the captured tensor", capt); msg != "" {
				t.Fatal(msg)
			}
			near(t, "the captured tensor after the call", capt.Float64s(), capAfter, 1e-15)
			near(t, "a view of it taken before", cview.Float64s(), capAfter[1:], 1e-15)
		})
	}
	// Vmap with Functionalize: a value that is the same in every lane
	// (computed from an unbatched argument) is written into the capture;
	// the batched argument only scales the result.
	t.Run("vmap_functionalize", func(t *testing.T) {
		f, capt, cview := lvCaptured()
		scales := f64(1, -2)
		x := f64(x0...)
		got := transforms.Vmap(transforms.Functionalize(func(s *T) *T { return peel.Mul(f(x), s) }))(scales)
		var want []float64
		for _, s := range []float64{1, -2} {
			fe, _, _ := lvCaptured()
			want = append(want, peel.Mul(fe(f64(x0...)), s).Float64s()...)
		}
		near(t, "Vmap(Functionalize) vs a loop", got.Float64s(), want, 1e-12)
		near(t, "the captured tensor after the call", capt.Float64s(), capAfter, 1e-15)
		near(t, "a view of it taken before", cview.Float64s(), capAfter[1:], 1e-15)
	})
	// A value that differs per lane cannot be held by the capture: using
	// it after Vmap returns is a *peel.Error that says so.
	t.Run("vmap_functionalize_per_lane", func(t *testing.T) {
		f, capt, _ := lvCaptured()
		xs := peel.Stack([]*T{f64(x0...), f64(0.1, 0.2, 0.3)}, 0)
		transforms.Vmap(transforms.Functionalize(f))(xs)
		wantError(t, func() { peel.Add(capt, 1.0) }, "escaped tracer", "captured from outside Vmap")
		wantError(t, func() { capt.Float64s() }, "traced tensor")
	})
}

// The level sweep (issue 25): writes through each view kind of a tensor
// made at an outer Vmap level, performed inside an inner transform, as a
// cross product of
//
//   - the written tensor (lsDests): batched at the Vmap level (a copy of
//     the vmapped argument x) or not (a constant created inside the
//     vmapped function);
//   - the written value (lsSources): one of the Vmap level (from x), one
//     of the inner transform's level (from its argument y), or a
//     constant;
//   - the view written through (lsViews): the tensor itself, Index of one
//     element, Select of a row, Narrow, a strided Slice, Transpose,
//     Permute of a Narrow, Reshape, Diagonal, and a broadcast view
//     (BroadcastTo of a row), which eager code refuses to write;
//   - the write (lsOps): CopyInto or AddInPlace;
//   - the composition (lsModes): Vmap∘Grad, Vmap∘JVP,
//     Vmap∘Grad∘Functionalize, Compile∘Vmap∘Grad, Compile of the
//     program with Grad (no Vmap; compiled once, called per lane), and
//     Vmap∘Grad mapping axis 1 of the inputs (the batch in the middle
//     of the physical values, so some views are copies there).
//
// Each program (lsBody) takes one lane's x and y ([2,3] each), makes the
// tensor, takes an alias of it (a Narrow) before the inner transform,
// runs the inner transform of a scalar that writes and then reads the
// tensor and the alias, and returns the inner transform's results, the
// tensor and the alias after it. Checks, in float64:
//
//   - the composition against the same program run per lane without
//     Vmap (1e-12 relative above magnitude 1);
//   - per lane, the inner derivative of the program without Vmap against
//     central differences of the eager scalar (ε = 1e-6; 1e-6 relative,
//     plus 1e-6 times the scalar's magnitude): the gradient, or for JVP
//     the tangent against ⟨gradient, v⟩.
//
// Where eager code refuses (the broadcast view), every composition must
// refuse with *peel.Error. Where eager runs, every composition must run,
// except one documented refusal: Vmap writing a batched value (of the
// Vmap level) into a tensor not batched there (docs/design/vmap.md,
// "Mutation"); the inner Functionalize does not lift it, since neither
// the tensor nor the value is of its level. A second is documented
// there too: with the batch in the middle, Vmap itself writing through a
// view whose batched layout is a copy (a value of the Vmap level or a
// constant written through Reshape or Diagonal); a value of the inner
// level is written by that level, through the view's base. 2 × 3 × 10 × 2 × 6 = 720
// programs, about a second.

type lsView struct {
	name string
	v    func(*T) *T
}

var lsViews = []lsView{
	{"self", func(c *T) *T { return c }},
	{"index", func(c *T) *T { return peel.Index(c, 1, 2) }},
	{"select", func(c *T) *T { return peel.Select(c, 0, 1) }},
	{"narrow", func(c *T) *T { return peel.Narrow(c, 1, 1, 2) }},
	{"strided_slice", func(c *T) *T { return peel.Slice(c, 1, 0, 3, 2) }},
	{"transpose", func(c *T) *T { return peel.Transpose(c) }},
	{"permute_narrow", func(c *T) *T { return peel.Permute(peel.Narrow(c, 1, 0, 2), 1, 0) }},
	{"reshape", func(c *T) *T { return peel.Reshape(c, 3, 2) }},
	{"diagonal", func(c *T) *T { return peel.Diagonal(c, 1, 0, 1) }},
	{"expand", func(c *T) *T { return peel.BroadcastTo(peel.Select(c, 0, 0), 2, 3) }},
}

var lsDests = []string{"batched", "unbatched"}

var lsSources = []string{"outer", "inner", "const"}

var lsOps = []string{"copy", "add"}

var lsModes = []string{"vmap_grad", "vmap_jvp", "vmap_grad_functionalize", "compile_vmap_grad", "compile_grad", "vmap_grad_inaxes1"}

// lsWeights are the fixed weights of the scalar.
var lsWeights = []float64{0.5, -1.25, 2, 0.75, -0.5, 1.5}

// lsCase is one program: dest, source, view, op.
type lsCase struct {
	dest, src, op string
	view          lsView
}

// dest makes the written tensor from the lane's x.
func (c lsCase) makeDest(x *T) *T {
	if c.dest == "batched" {
		return peel.Clone(x)
	}
	return peel.Full(peel.Float64, 0.5, 2, 3)
}

// scalar is the inner function: it writes the tensor through the view and
// returns Σ w⊙d⊙(d + y) + Σ alias².
func (c lsCase) scalar(x, d, alias *T) func(y *T) *T {
	return func(y *T) *T {
		var src *T
		switch c.src {
		case "outer":
			src = c.view.v(peel.Cos(x))
		case "inner":
			src = c.view.v(peel.Mul(peel.Sin(y), y))
		default:
			src = c.view.v(f64(1.5, -0.5, 0.25, -1.25, 2, 0.75))
			src = peel.Reshape(src, src.Shape()...)
		}
		dv := c.view.v(d)
		if c.op == "copy" {
			peel.CopyInto(dv, src)
		} else {
			peel.AddInPlace(dv, src)
		}
		w := peel.FromFloat64s(lsWeights, 2, 3)
		return peel.Add(peel.Sum(peel.Mul(w, peel.Mul(d, peel.Add(d, y)))), peel.Sum(peel.Mul(alias, alias)))
	}
}

// lsDirection is the JVP direction of a lane's y.
func lsDirection(y *T) *T { return peel.Add(peel.Mul(peel.Cos(y), 0.5), 0.25) }

// body is the per-lane program of a mode.
func (c lsCase) body(mode string) func(x, y *T) *T {
	return func(x, y *T) *T {
		d := c.makeDest(x)
		alias := peel.Narrow(d, 1, 1, 2)
		s := c.scalar(x, d, alias)
		var r []*T
		switch mode {
		case "vmap_jvp":
			p, tan := transforms.JVP(s, y, lsDirection(y))
			r = []*T{p, tan}
		case "vmap_grad_functionalize":
			r = []*T{transforms.Grad(transforms.Functionalize(s))(y)}
		default:
			r = []*T{transforms.Grad(s)(y)}
		}
		return lvFlat(append(r, d, alias)...)
	}
}

func TestInPlaceLevelSweep(t *testing.T) {
	xs := peel.FromFloat64s([]float64{0.3, -0.7, 1.1, 0.5, -1.2, 0.9, -0.4, 0.8, 0.6, -1.1, 0.2, 1.3}, 2, 2, 3)
	ys := peel.FromFloat64s([]float64{0.9, 0.1, -0.6, 1.2, -0.3, 0.7, 0.4, -0.9, 1.0, 0.35, -1.15, 0.55}, 2, 2, 3)
	lane := func(t *T, i int) *T { return peel.Clone(peel.Index(t, i)) }
	programs, refusals := 0, 0
	for _, dest := range lsDests {
		for _, src := range lsSources {
			for _, view := range lsViews {
				for _, op := range lsOps {
					c := lsCase{dest: dest, src: src, op: op, view: view}
					t.Run(dest+"/"+src+"/"+view.name+"/"+op, func(t *testing.T) {
						// The eager oracle's derivative per lane vs
						// finite differences; eager refusal decides the
						// rule for the compositions.
						eagerErr := catchAll(func() {
							for i := 0; i < 2; i++ {
								x, y := lane(xs, i), lane(ys, i)
								f := func(y *T) *T {
									d := c.makeDest(x)
									return c.scalar(x, d, peel.Narrow(d, 1, 1, 2))(y)
								}
								fd := fdGrad(f, y.Float64s(), 2, 3)
								s := magnitude(f(lane(ys, i)))
								d := c.makeDest(x)
								g := transforms.Grad(c.scalar(x, d, peel.Narrow(d, 1, 1, 2)))(y)
								if msg := withinTol(g.Float64s(), fd, 1e-6, 1e-6*s); msg != "" {
									t.Errorf("lane %d: Grad vs finite differences: %s", i, msg)
								}
								d = c.makeDest(x)
								_, tan := transforms.JVP(c.scalar(x, d, peel.Narrow(d, 1, 1, 2)), y, lsDirection(y))
								v := lsDirection(y).Float64s()
								if msg := ipLinearFD(tan.Float64s(), fd, v, 1, 6, false, s); msg != "" {
									t.Errorf("lane %d: JVP tangent vs ⟨finite-difference gradient, v⟩: %s", i, msg)
								}
							}
						})
						if eagerErr != nil {
							if o := ipOutcome(eagerErr, eagerErr); o != "" {
								t.Fatalf("eager: %s", o)
							}
						}
						for _, mode := range lsModes {
							programs++
							var got, want *T
							err := catchAll(func() {
								body := c.body(mode)
								want = lvLanes(body, xs, ys)
							})
							if (err == nil) != (eagerErr == nil) {
								t.Errorf("%s: the per-lane oracle and eager disagree on refusing: %v vs %v", mode, err, eagerErr)
								continue
							}
							err = catchAll(func() {
								body := c.body(mode)
								switch mode {
								case "compile_grad":
									// Compiled once, called per lane.
									comp := transforms.Compile2(body)
									got = peel.Stack([]*T{comp(lane(xs, 0), lane(ys, 0)), comp(lane(xs, 1), lane(ys, 1))}, 0)
								case "compile_vmap_grad":
									got = transforms.Compile2(transforms.Vmap2(body))(xs, ys)
								case "vmap_grad_inaxes1":
									// The batch in the middle of the
									// physical values: views whose
									// batched layout needs a copy.
									got = transforms.Vmap2(body, transforms.InAxes(1, 1))(peel.Permute(xs, 1, 0, 2), peel.Permute(ys, 1, 0, 2))
								default:
									got = transforms.Vmap2(body)(xs, ys)
								}
							})
							if err != nil {
								var pe *peel.Error
								switch {
								case !errors.As(err, &pe):
									t.Errorf("%s: non-*peel.Error panic: %s", mode, ipTrim(err.Error()))
								case eagerErr != nil:
									// Refused where eager refuses.
								case dest == "unbatched" && src == "outer" && mode != "compile_grad" && strings.Contains(err.Error(), "not batched at this level"):
									refusals++ // documented
								case mode == "vmap_grad_inaxes1" && src != "inner" && strings.Contains(err.Error(), "could not keep as an alias"):
									refusals++ // documented: vmap writing through a view that is a copy
								default:
									t.Errorf("%s: refused while eager runs: %v", mode, err)
								}
								continue
							}
							if eagerErr != nil {
								t.Errorf("%s: runs while eager refuses (%v)", mode, eagerErr)
								continue
							}
							if msg := ipConcrete(mode, got); msg != "" {
								t.Errorf("%s", msg)
								continue
							}
							if msg := ipSame(got.Float64s(), want.Float64s(), 1e-12); msg != "" {
								t.Errorf("%s vs the program per lane without Vmap: %s", mode, msg)
							}
						}
					})
				}
			}
		}
	}
	t.Logf("%d programs; documented Vmap refusals: %d", programs, refusals)
}

// TestRegressionStaleViewOfRebatchedBase: under Vmap(Grad), a tensor
// created unbatched in the vmapped function and written inside Grad
// with a value of the Grad argument becomes batched; a view of it taken
// before reads its new value per lane. Bind used to route such a view
// to the vmap level, which handed it back to Bind unchanged, until the
// stack overflowed (a fatal error that ends the test binary, so the
// checks run in a child process); the view is now replayed from its
// base (interp.Replay).
func TestRegressionStaleViewOfRebatchedBase(t *testing.T) {
	const child = "PEEL_TEST_STALE_VIEW_CHILD"
	if os.Getenv(child) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRegressionStaleViewOfRebatchedBase$", "-test.v")
		cmd.Env = append(os.Environ(), child+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the checks, run in a child process, fail (%v):\n%s", err, ipChildSummary(string(out)))
		}
		return
	}
	body := func(y *T) *T {
		d := peel.Full(peel.Float64, 0.5, 3)
		a := peel.Narrow(d, 0, 1, 2)
		g := transforms.Grad(func(y *T) *T {
			peel.CopyInto(d, peel.Sin(y))
			return peel.Add(peel.Sum(peel.Mul(d, d)), peel.Sum(peel.Mul(a, peel.Narrow(y, 0, 0, 2))))
		})(y)
		return lvFlat(g, d, a, peel.Mul(a, 2.0))
	}
	ys := peel.FromFloat64s([]float64{0.1, 0.2, 0.3, -0.4, 0.5, 0.6}, 2, 3)
	want := peel.Stack([]*T{body(peel.Clone(peel.Index(ys, 0))), body(peel.Clone(peel.Index(ys, 1)))}, 0)
	ipWant(t, "vmap_grad", want.Float64s(), func() []*T { return ipOne(transforms.Vmap(body)(ys)) })
}

// TestRegressionResidualOfWrittenBatchedTensor: a pullback's residuals
// are the values at the call (graph constants are snapshots), also under
// Vmap and Functionalize, whose tensors a later in-place write updates
// in place (vmap: the physical value; functionalize: the payload's value).
// They used to share the payload, so the pullback saw the write: the
// cotangent of x⊙x at x+1 instead of x.
func TestRegressionResidualOfWrittenBatchedTensor(t *testing.T) {
	xs := peel.FromFloat64s([]float64{0.1, 0.2, 0.3, -0.4, 0.5, 0.6}, 2, 3)
	body := func(x *T) *T {
		_, pb := transforms.VJP(func(x *T) *T { return peel.Mul(x, x) }, x)
		peel.AddInPlace(x, 1.0)
		return pb(peel.OnesLike(x))
	}
	want := peel.Mul(xs, 2.0).Float64s()
	ipWant(t, "vmap", want, func() []*T { return ipOne(transforms.Vmap(body)(peel.Clone(xs))) })
	ipWant(t, "functionalize", want[:3], func() []*T {
		return ipOne(transforms.Functionalize(body)(peel.Clone(peel.Index(xs, 0))))
	})
	ipWant(t, "vmap_functionalize", want, func() []*T {
		return ipOne(transforms.Vmap(transforms.Functionalize(body))(peel.Clone(xs)))
	})
}

// TestRegressionDetachedBatchedView: a view of a batched tensor whose
// batched layout needs a copy (a Reshape with the batch in the middle of
// the physical value) reads its base's later writes, and a write through
// it from an inner Grad reaches the base. Plain Vmap read the copy made
// before the write; Vmap(Grad) wrote the copy alone.
func TestRegressionDetachedBatchedView(t *testing.T) {
	xs := peel.Reshape(peel.Arange(peel.Float64, 0, 12, 1), 2, 2, 3)
	ys := peel.Add(peel.Reshape(peel.Arange(peel.Float64, 0, 12, 1), 2, 2, 3), 100.0)
	bodies := []struct {
		name string
		body func(x, y *T) *T
	}{
		{"read_after_base_write", func(x, y *T) *T {
			c := peel.Clone(x)
			v := peel.Reshape(c, 3, 2)
			peel.CopyInto(c, y)
			return lvFlat(v, peel.Mul(v, 2.0))
		}},
		{"grad_writes_through", func(x, y *T) *T {
			c := peel.Clone(x)
			g := transforms.Grad(func(y *T) *T {
				peel.CopyInto(peel.Reshape(c, 3, 2), peel.Reshape(peel.Sin(y), 3, 2))
				return peel.Sum(peel.Mul(c, c))
			})(y)
			return lvFlat(g, c)
		}},
	}
	for _, b := range bodies {
		want := lvLanes(b.body, xs, ys)
		ipWant(t, b.name, want.Float64s(), func() []*T {
			return ipOne(transforms.Vmap2(b.body, transforms.InAxes(1, 1))(peel.Permute(xs, 1, 0, 2), peel.Permute(ys, 1, 0, 2)))
		})
	}
}

// TestStaleViewLevelByValue: a stale view (its base rebatched by a write
// inside Grad or JVP under Vmap, after the view was taken) as an operand
// after, between and before tracers of other levels: the operation runs
// at the highest level among them all, the view's base's included, so
// each result equals the loop over the lanes. Handing it to a lower level
// (the base's, below a nested transform's) gives wrong numbers here, not
// only a crash.
func TestStaleViewLevelByValue(t *testing.T) {
	ops := []struct {
		name string
		use  func(a, y2 *T) *T // a: the stale view [2]; y2: a value of the inner level [2]
	}{
		{"view first", func(a, y2 *T) *T { return peel.Mul(a, y2) }},
		{"view second", func(a, y2 *T) *T { return peel.Mul(y2, a) }},
		{"view between", func(a, y2 *T) *T { return peel.Where(peel.Greater(y2, 0.0), a, peel.Neg(y2)) }},
		{"view last of three", func(a, y2 *T) *T { return peel.Where(peel.Greater(y2, 0.0), y2, a) }},
		{"view twice", func(a, y2 *T) *T { return peel.Add(peel.Mul(y2, a), peel.Mul(a, a)) }},
		// Inside a nested JVP, whose level is above the base's: the
		// operation belongs to the JVP, whichever operand comes first.
		{"nested JVP, view second", func(a, y2 *T) *T {
			p, tan := transforms.JVP(func(z *T) *T { return peel.Mul(peel.Sin(z), a) }, y2, peel.Cos(y2))
			return peel.Add(p, peel.Mul(tan, 3.0))
		}},
		{"nested JVP, view first", func(a, y2 *T) *T {
			p, tan := transforms.JVP(func(z *T) *T { return peel.Mul(a, peel.Sin(z)) }, y2, peel.Cos(y2))
			return peel.Add(p, peel.Mul(tan, 3.0))
		}},
		{"nested Grad", func(a, y2 *T) *T {
			return transforms.Grad(func(z *T) *T { return peel.Sum(peel.Mul(peel.Square(z), a)) })(y2)
		}},
	}
	ys := peel.FromFloat64s([]float64{0.1, 0.2, 0.3, -0.4, 0.5, 0.6}, 2, 3)
	for _, op := range ops {
		grad := func(y *T) *T {
			d := peel.Full(peel.Float64, 0.5, 3)
			a := peel.Narrow(d, 0, 1, 2)
			g := transforms.Grad(func(y *T) *T {
				peel.CopyInto(d, peel.Sin(y))
				return peel.Sum(op.use(a, peel.Narrow(y, 0, 0, 2)))
			})(y)
			return lvFlat(g, d, a)
		}
		jvp := func(y *T) *T {
			d := peel.Full(peel.Float64, 0.5, 3)
			a := peel.Narrow(d, 0, 1, 2)
			p, tan := transforms.JVP(func(y *T) *T {
				peel.CopyInto(d, peel.Cos(y))
				return op.use(a, peel.Narrow(y, 0, 1, 2))
			}, y, peel.OnesLike(y))
			return lvFlat(p, tan, d, a)
		}
		for _, b := range []struct {
			name string
			body func(y *T) *T
		}{{"grad", grad}, {"jvp", jvp}} {
			var want *T
			if err := catchAll(func() {
				want = peel.Stack([]*T{b.body(peel.Clone(peel.Index(ys, 0))), b.body(peel.Clone(peel.Index(ys, 1)))}, 0)
			}); err != nil {
				t.Fatalf("%s/%s, lane by lane: %v", op.name, b.name, err)
			}
			ipWant(t, op.name+"/vmap_"+b.name, want.Float64s(), func() []*T { return ipOne(transforms.Vmap(b.body)(ys)) })
		}
	}
}
