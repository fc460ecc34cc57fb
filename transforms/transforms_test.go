package transforms_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

type T = peel.Tensor

func f64(v ...float64) *T { return peel.FromFloat64s(v) }

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s: element %d is %v, want %v (all: %v vs %v)", what, i, got[i], want[i], got, want)
		}
	}
}

// fdGrad is the central finite-difference gradient of a scalar function.
func fdGrad(f func(*T) *T, x []float64, shape ...int) []float64 {
	const eps = 1e-6
	g := make([]float64, len(x))
	for i := range x {
		xp := append([]float64{}, x...)
		xm := append([]float64{}, x...)
		xp[i] += eps
		xm[i] -= eps
		g[i] = (f(peel.FromFloat64s(xp, shape...)).Item() - f(peel.FromFloat64s(xm, shape...)).Item()) / (2 * eps)
	}
	return g
}

func wantError(t *testing.T, f func(), substr ...string) {
	t.Helper()
	err := peel.Catch(f)
	var e *peel.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want *peel.Error", err)
	}
	for _, s := range substr {
		if !strings.Contains(e.Error(), s) {
			t.Errorf("error %q does not mention %q", e.Error(), s)
		}
	}
}

func TestGradPolynomialAndSin(t *testing.T) {
	x := f64(0.5, -1.5, 2)
	cube := func(x *T) *T { return peel.Sum(peel.Mul(peel.Mul(x, x), x)) }
	near(t, "grad x³", transforms.Grad(cube)(x).Float64s(), []float64{0.75, 6.75, 12}, 1e-12)

	sin := func(x *T) *T { return peel.Sum(peel.Sin(x)) }
	g := transforms.Grad(sin)
	gg := transforms.Grad(func(x *T) *T { return peel.Sum(g(x)) })
	ggg := transforms.Grad(func(x *T) *T { return peel.Sum(gg(x)) })
	xs := x.Float64s()
	var wantG, wantGG, wantGGG []float64
	for _, v := range xs {
		wantG = append(wantG, math.Cos(v))
		wantGG = append(wantGG, -math.Sin(v))
		wantGGG = append(wantGGG, -math.Cos(v))
	}
	near(t, "grad sin", g(x).Float64s(), wantG, 1e-12)
	near(t, "grad grad sin", gg(x).Float64s(), wantGG, 1e-12)
	near(t, "grad³ sin", ggg(x).Float64s(), wantGGG, 1e-12)
}

type mlp struct {
	W1, B1, W2 *T
	Name       string // static: kept, not differentiated
}

func loss(p mlp, x *T) *T {
	h := peel.Tanh(peel.Add(peel.MatMul(x, p.W1), p.B1))
	return peel.Mean(peel.Square(peel.MatMul(h, p.W2)))
}

func TestGradOfStruct(t *testing.T) {
	p := mlp{
		W1:   peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, 2, 3),
		B1:   f64(0.01, 0.02, -0.03),
		W2:   peel.FromFloat64s([]float64{0.7, -0.8, 0.9}, 3, 1),
		Name: "net",
	}
	x := peel.FromFloat64s([]float64{1, 2, -1, 0.5}, 2, 2)
	g := transforms.Grad2(loss)(p, x)
	if g.Name != "net" {
		t.Errorf("static field lost: %q", g.Name)
	}
	for _, c := range []struct {
		name string
		leaf func(mlp) *T
		set  func(*mlp, *T)
	}{
		{"W1", func(m mlp) *T { return m.W1 }, func(m *mlp, v *T) { m.W1 = v }},
		{"B1", func(m mlp) *T { return m.B1 }, func(m *mlp, v *T) { m.B1 = v }},
		{"W2", func(m mlp) *T { return m.W2 }, func(m *mlp, v *T) { m.W2 = v }},
	} {
		leaf := c.leaf(p)
		want := fdGrad(func(v *T) *T {
			q := p
			c.set(&q, v)
			return loss(q, x)
		}, leaf.Float64s(), leaf.Shape()...)
		near(t, c.name, c.leaf(g).Float64s(), want, 1e-6)
	}
	// Maps and slices are trees too.
	m := map[string]*T{"a": f64(1, 2), "b": f64(3)}
	gm := transforms.Grad(func(m map[string]*T) *T {
		return peel.Add(peel.Sum(peel.Mul(m["a"], m["a"])), peel.Sum(m["b"]))
	})(m)
	near(t, "map a", gm["a"].Float64s(), []float64{2, 4}, 0)
	near(t, "map b", gm["b"].Float64s(), []float64{1}, 0)
}

func TestValueAndGradAndAux(t *testing.T) {
	f := func(x *T) *T { return peel.Sum(peel.Exp(x)) }
	v, g := transforms.ValueAndGrad(f)(f64(0, 1))
	near(t, "value", []float64{v.Item()}, []float64{1 + math.E}, 1e-12)
	near(t, "grad", g.Float64s(), []float64{1, math.E}, 1e-12)
	g2, aux := transforms.GradAux(func(x *T) (*T, string) { return f(x), "aux" })(f64(0, 1))
	near(t, "grad aux", g2.Float64s(), []float64{1, math.E}, 1e-12)
	if aux != "aux" {
		t.Errorf("aux = %q", aux)
	}
}

func TestVJPAndJVP(t *testing.T) {
	f := func(x *T) *T { return peel.Mul(peel.Sin(x), peel.Sum(x)) }
	x := f64(0.3, -0.7, 1.1)
	y, pull := transforms.VJP(f, x)
	near(t, "value", y.Float64s(), f(x).Float64s(), 0)
	u := f64(1, -2, 0.5)
	v := f64(0.2, 0.4, -1)
	_, jv := transforms.JVP(f, x, v)
	// ⟨u, J v⟩ = ⟨Jᵀ u, v⟩
	lhs := peel.Sum(peel.Mul(u, jv)).Item()
	rhs := peel.Sum(peel.Mul(pull(u), v)).Item()
	near(t, "inner product", []float64{lhs}, []float64{rhs}, 1e-12)
	// J v against finite differences.
	const eps = 1e-6
	fp := f(peel.Add(x, peel.Mul(v, eps))).Float64s()
	fm := f(peel.Sub(x, peel.Mul(v, eps))).Float64s()
	var fd []float64
	for i := range fp {
		fd = append(fd, (fp[i]-fm[i])/(2*eps))
	}
	near(t, "JVP vs FD", jv.Float64s(), fd, 1e-6)
	// Linearize gives the same map without re-running f.
	_, lin := transforms.Linearize(f, x)
	near(t, "linearize", lin(v).Float64s(), jv.Float64s(), 1e-12)
}

func TestJacobiansAndHessian(t *testing.T) {
	w := peel.FromFloat64s([]float64{0.5, -1, 2, 0.3, 0.1, -0.4}, 2, 3)
	f := func(v *T) *T { return peel.Tanh(peel.MatMul(w, v)) }
	x := f64(0.2, -0.1, 0.7)
	jr := transforms.Jacrev(f)(x)
	jf := transforms.Jacfwd(f)(x)
	if got := jr.Shape(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("Jacrev shape %v", got)
	}
	near(t, "jacrev = jacfwd", jr.Float64s(), jf.Float64s(), 1e-12)
	for i := 0; i < 2; i++ {
		row := fdGrad(func(v *T) *T { return peel.Index(f(v), i) }, x.Float64s(), 3)
		near(t, "jacobian row", peel.Index(jr, i).Float64s(), row, 1e-6)
	}
	s := func(v *T) *T { return peel.Sum(peel.Square(f(v))) }
	h := transforms.Hessian(s)(x)
	h2 := transforms.Jacrev(transforms.Jacfwd(s))(x)
	near(t, "jacfwd(jacrev) = jacrev(jacfwd)", h.Float64s(), h2.Float64s(), 1e-10)
	g := transforms.Grad(s)
	for i := 0; i < 3; i++ {
		col := fdGrad(func(v *T) *T { return peel.Index(g(v), i) }, x.Float64s(), 3)
		near(t, "hessian row", peel.Index(h, i).Float64s(), col, 1e-5)
	}
	hv := transforms.HVP(s, x, f64(1, 0, -1))
	near(t, "hvp", hv.Float64s(), peel.MatMul(h, f64(1, 0, -1)).Float64s(), 1e-10)
}

func TestPerturbationConfusion(t *testing.T) {
	// d/dx [x · d/dy (x + y)] = d/dx [x · 1] = 1.
	f := func(x *T) *T {
		inner := transforms.Grad(func(y *T) *T { return peel.Add(x, y) })(peel.Scalar(1.0))
		return peel.Mul(x, inner)
	}
	near(t, "perturbation", []float64{transforms.Grad(f)(peel.Scalar(3.0)).Item()}, []float64{1}, 0)
	// An inner function capturing an outer tracer: d/dx Σ d/dy (x·y²) at y = 2 = d/dx 4x = 4.
	g := func(x *T) *T {
		return transforms.Grad(func(y *T) *T { return peel.Mul(x, peel.Square(y)) })(peel.Scalar(2.0))
	}
	near(t, "captured tracer", []float64{transforms.Grad(g)(peel.Scalar(5.0)).Item()}, []float64{4}, 1e-12)
}

func TestIgnoredInputHasZeroGradient(t *testing.T) {
	g := transforms.Grad(func(x *T) *T { return peel.Scalar(3.0) })(peel.Ones(peel.Float32, 2, 2))
	if g.DType() != peel.Float32 || len(g.Shape()) != 2 {
		t.Fatalf("gradient %s", g.TypeString())
	}
	for _, v := range g.Float32s() {
		if v != 0 {
			t.Fatalf("gradient %v", g.Float32s())
		}
	}
}

func TestStopGradient(t *testing.T) {
	f := func(x *T) *T { return peel.Sum(peel.Mul(x, peel.StopGradient(x))) }
	near(t, "stop gradient", transforms.Grad(f)(f64(2, 3)).Float64s(), []float64{2, 3}, 0)
}

func TestCustomVJP(t *testing.T) {
	// log(1 + eˣ), whose naive gradient eˣ/(1+eˣ) overflows to NaN at
	// x = 1000; the rule uses the stable sigmoid.
	log1pexp := transforms.CustomVJP(
		func(x *T) *T { return peel.Log(peel.Add(peel.Exp(x), 1)) },
		func(x *T) (*T, *T) { return peel.Softplus(x), x },
		func(x *T, ct *T) *T { return peel.Mul(ct, peel.Sigmoid(x)) },
	)
	f := func(x *T) *T { return peel.Sum(log1pexp(x)) }
	g := transforms.Grad(f)(f64(0, 1000, -1000))
	near(t, "custom vjp", g.Float64s(), []float64{0.5, 1, 0}, 1e-12)
	// Second order goes through the rule's own operations: σ'(0) = 1/4.
	gg := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Grad(f)(x)) })(f64(0))
	near(t, "second order", gg.Float64s(), []float64{0.25}, 1e-12)
	// A rule that clips is used, not the function's derivative.
	clipped := transforms.CustomVJP(
		func(x *T) *T { return peel.Mul(x, 3) },
		func(x *T) (*T, any) { return peel.Mul(x, 3), nil },
		func(_ any, ct *T) *T { return peel.Clip(ct, -1, 1) },
	)
	gc := transforms.Grad(func(x *T) *T { return peel.Sum(peel.Mul(clipped(x), 5)) })(f64(1, 2))
	near(t, "clipping rule", gc.Float64s(), []float64{1, 1}, 0)
	wantError(t, func() { transforms.JVP(func(x *T) *T { return clipped(x) }, f64(1), f64(1)) }, "CustomVJP", "CustomJVP")
}

func TestCustomJVP(t *testing.T) {
	// A JVP rule that doubles the true derivative, to see that it is used
	// in forward and reverse mode.
	sq := transforms.CustomJVP(
		func(x *T) *T { return peel.Square(x) },
		func(p, tg *T) (*T, *T) { return peel.Square(p), peel.Mul(peel.Mul(p, 4), tg) },
	)
	_, jv := transforms.JVP(func(x *T) *T { return sq(x) }, f64(3), f64(1))
	near(t, "custom jvp forward", jv.Float64s(), []float64{12}, 0)
	g := transforms.Grad(func(x *T) *T { return peel.Sum(sq(x)) })(f64(3))
	near(t, "custom jvp reverse", g.Float64s(), []float64{12}, 0)
	gg := transforms.Grad(func(x *T) *T {
		return peel.Sum(transforms.Grad(func(x *T) *T { return peel.Sum(sq(x)) })(x))
	})(f64(3))
	near(t, "custom jvp second order", gg.Float64s(), []float64{4}, 0)
}

func TestInPlaceMatchesOutOfPlace(t *testing.T) {
	inplace := func(x *T) *T {
		y := peel.Zeros(peel.Float64, 3)
		peel.CopyInto(y, x)
		peel.MulInPlace(y, x)
		peel.AddInPlace(y, peel.Sin(x))
		z := peel.Clone(x)
		peel.SubInPlace(z, 1.0)
		peel.MulInPlace(z, y)
		return peel.Sum(z)
	}
	outplace := func(x *T) *T {
		y := peel.Add(peel.Mul(x, x), peel.Sin(x))
		return peel.Sum(peel.Mul(peel.Sub(x, 1.0), y))
	}
	x := f64(0.5, -1, 2)
	near(t, "in-place value", []float64{inplace(x).Item()}, []float64{outplace(x).Item()}, 1e-12)
	near(t, "in-place grad", transforms.Grad(inplace)(x).Float64s(), transforms.Grad(outplace)(x).Float64s(), 1e-12)
	_, jv := transforms.JVP(inplace, x, f64(1, 2, 3))
	_, jw := transforms.JVP(outplace, x, f64(1, 2, 3))
	near(t, "in-place jvp", jv.Float64s(), jw.Float64s(), 1e-12)
	if got := x.Float64s(); got[0] != 0.5 {
		t.Errorf("input changed: %v", got)
	}
	// Writes through views reach the base and every alias, with
	// tangents: the gradient of the out-of-place twin.
	viewsInPlace := func(x *T) *T {
		y := peel.Zeros(peel.Float64, 5)
		head := peel.Narrow(y, 0, 0, 2) // an alias taken before the writes
		peel.CopyInto(peel.Narrow(y, 0, 1, 3), x)
		peel.MulInPlace(peel.Slice(y, 0, 0, 5, 2), x)                     // y[0], y[2], y[4] *= x
		peel.AddInPlace(peel.Reshape(peel.Narrow(y, 0, 3, 2), 2, 1), 1.0) // y[3:5] += 1
		return peel.Add(peel.Sum(peel.Square(y)), peel.Sum(head))
	}
	viewsOutOfPlace := func(x *T) *T {
		x0, x1, x2 := peel.Index(x, 0), peel.Index(x, 1), peel.Index(x, 2)
		y := peel.Stack([]*T{peel.Mul(peel.Scalar(0.0), x0), x0, peel.Mul(x1, x1), peel.Add(x2, 1.0), peel.Add(peel.Mul(peel.Scalar(0.0), x2), 1.0)}, 0)
		return peel.Add(peel.Sum(peel.Square(y)), peel.Add(peel.Index(y, 0), peel.Index(y, 1)))
	}
	near(t, "views value", []float64{viewsInPlace(x).Item()}, []float64{viewsOutOfPlace(x).Item()}, 1e-12)
	near(t, "views grad", transforms.Grad(viewsInPlace)(x).Float64s(), transforms.Grad(viewsOutOfPlace)(x).Float64s(), 1e-12)
	_, jv1 := transforms.JVP(viewsInPlace, x, f64(1, -1, 2))
	_, jv2 := transforms.JVP(viewsOutOfPlace, x, f64(1, -1, 2))
	near(t, "views jvp", []float64{jv1.Item()}, []float64{jv2.Item()}, 1e-12)
}

func TestErrors(t *testing.T) {
	x := f64(1, 2)
	wantError(t, func() { transforms.Grad(func(x *T) *T { return peel.Sin(x) })(x) }, "scalar", "VJP", "Jacrev")
	wantError(t, func() {
		transforms.Grad(func(x *T) *T { return peel.Sum(x) })(peel.FromInt64s([]int64{1, 2}))
	}, "dtype i64")
	wantError(t, func() { transforms.JVP(peel.Sin, x, f64(1, 2, 3)) }, "tangent", "f64[3]", "f64[2]")
	wantError(t, func() { transforms.JVP(peel.Sin, x, peel.FromFloat32s([]float32{1, 2})) }, "tangent", "f32[2]")
	var leaked *T
	transforms.Grad(func(x *T) *T { leaked = peel.Exp(x); return peel.Sum(leaked) })(x)
	wantError(t, func() { peel.Add(leaked, 1.0) }, "escaped tracer", "grad")
	wantError(t, func() {
		transforms.JVP(func(xs []*T) *T { return xs[0] }, []*T{x, x}, []*T{x})
	}, "structure", "length")
	wantError(t, func() {
		transforms.Grad(func(x *T) *T { return peel.Sum(peel.Add(x, f64(1, 2, 3))) })(x)
	}, "peel.Add", "[in grad]")
}

func TestMakeGraph(t *testing.T) {
	f := func(x *T) *T { return peel.Sum(peel.Square(x)) }
	g := transforms.MakeGraph(transforms.Grad(f), f64(1, 2))
	s := g.String()
	if !strings.Contains(s, "mul") || len(g.In) != 1 || len(g.Out) != 1 {
		t.Errorf("graph of Grad:\n%s", s)
	}
	got := g.Eval(f64(3, -1))[0].Float64s()
	near(t, "graph eval", got, []float64{6, -2}, 0)
}

func TestWritesAfterUseKeepRecordedValues(t *testing.T) {
	// y is used by a differentiated op, then overwritten in place: the
	// gradient uses the value y had when it was used.
	f := func(x *T) *T {
		y := peel.Ones(peel.Float64, 3)
		z := peel.Mul(x, y)
		peel.Fill(y, 5.0)
		w := peel.Clone(x)
		u := peel.Mul(w, w)
		peel.AddInPlace(w, 1.0) // w was used by u; its tangent and primal are replaced
		return peel.Add(peel.Sum(z), peel.Sum(peel.Add(u, w)))
	}
	x := f64(1, 2, 3)
	want := []float64{1 + 2*1 + 1, 1 + 2*2 + 1, 1 + 2*3 + 1}
	near(t, "grad", transforms.Grad(f)(x).Float64s(), want, 1e-12)
	_, jv := transforms.JVP(f, x, f64(1, 1, 1))
	near(t, "jvp", []float64{jv.Item()}, []float64{want[0] + want[1] + want[2]}, 1e-12)
	// A captured tensor written inside a traced function keeps its value
	// in the graph's constants.
	c := peel.Ones(peel.Float64, 3)
	g := transforms.MakeGraph(func(x *T) *T {
		z := peel.Mul(x, c)
		peel.Fill(c, 7.0)
		return z
	}, x)
	near(t, "graph const", g.Eval(x)[0].Float64s(), []float64{1, 2, 3}, 0)
	near(t, "captured tensor written", c.Float64s(), []float64{7, 7, 7}, 0)
}

func TestErrorsNameTheLevel(t *testing.T) {
	x := f64(1, 2)
	wantError(t, func() { transforms.Grad(func(x *T) *T { return peel.Sin(x) })(x) }, "[in grad]")
	wantError(t, func() {
		transforms.Grad(func(x *T) *T { return peel.Sum(x) })(peel.FromInt64s([]int64{1, 2}))
	}, "dtype i64", "[in grad]")
	wantError(t, func() { transforms.JVP(peel.Sin, x, f64(1, 2, 3)) }, "tangent", "[in jvp]")
	wantError(t, func() {
		transforms.JVP(func(xs []*T) *T { return xs[0] }, []*T{x, x}, []*T{x})
	}, "structure", "[in jvp]")
}

func TestConcurrentTransforms(t *testing.T) {
	// Independent transforms in many goroutines: run with -race. Each
	// goroutine's Hessian must equal the one computed alone.
	f := func(x *T) *T { return peel.Sum(peel.Mul(peel.Sin(x), x)) }
	input := func(g int) *T { return f64(float64(g), 1, 2) }
	want := make([][]float64, 8)
	for g := range want {
		want[g] = peel.Flatten(transforms.Hessian(f)(input(g))).Float64s()
	}
	type result struct {
		g int
		h []float64
	}
	done := make(chan result)
	for g := 0; g < 8; g++ {
		go func(g int) {
			var h *T
			for i := 0; i < 20; i++ {
				h = transforms.Hessian(f)(input(g))
			}
			done <- result{g, peel.Flatten(h).Float64s()}
		}(g)
	}
	for i := 0; i < 8; i++ {
		r := <-done
		near(t, "concurrent hessian", r.h, want[r.g], 0)
	}
}
