package transforms_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// smoothOp is one operation of the random programs: smooth everywhere on
// the reals (Exp and Log are composed so that their inputs stay bounded
// and positive).
type smoothOp struct {
	name string
	f1   func(*T) *T      // unary, or nil
	f2   func(a, b *T) *T // binary (broadcasting), or nil
}

var smoothOps = []smoothOp{
	{name: "sin", f1: peel.Sin},
	{name: "cos", f1: peel.Cos},
	{name: "tanh", f1: peel.Tanh},
	{name: "exp∘tanh", f1: func(x *T) *T { return peel.Exp(peel.Tanh(x)) }},
	{name: "sigmoid", f1: peel.Sigmoid},
	{name: "square", f1: peel.Square},
	{name: "softplus", f1: peel.Softplus},
	{name: "log(x²+1)", f1: func(x *T) *T { return peel.Log(peel.Add(peel.Square(x), 1.0)) }},
	{name: "add", f2: func(a, b *T) *T { return peel.Add(a, b) }},
	{name: "sub", f2: func(a, b *T) *T { return peel.Sub(a, b) }},
	{name: "mul", f2: func(a, b *T) *T { return peel.Mul(a, b) }},
}

// program is a random composition: values v0 = x, v1 = y (broadcastable
// to x), and each step appends op(v[a]) or op(v[a], v[b]); the result is
// the last value.
type program struct {
	steps []progStep
}

type progStep struct{ op, a, b int }

// drawProgram draws 1 to 6 steps.
func drawProgram(t *rapid.T) program {
	n := rapid.IntRange(1, 6).Draw(t, "steps")
	var p program
	for i := 0; i < n; i++ {
		s := progStep{
			op: rapid.IntRange(0, len(smoothOps)-1).Draw(t, "op"),
			a:  rapid.IntRange(0, i+1).Draw(t, "a"),
		}
		if smoothOps[s.op].f2 != nil {
			s.b = rapid.IntRange(0, i+1).Draw(t, "b")
		}
		p.steps = append(p.steps, s)
	}
	return p
}

func (p program) run(x, y *T) *T {
	v := []*T{x, y}
	for _, s := range p.steps {
		o := smoothOps[s.op]
		if o.f2 != nil {
			v = append(v, o.f2(v[s.a], v[s.b]))
		} else {
			v = append(v, o.f1(v[s.a]))
		}
	}
	return v[len(v)-1]
}

func (p program) String() string {
	e := []string{"x", "y"}
	for _, s := range p.steps {
		o := smoothOps[s.op]
		if o.f2 != nil {
			e = append(e, fmt.Sprintf("%s(%s, %s)", o.name, e[s.a], e[s.b]))
		} else {
			e = append(e, fmt.Sprintf("%s(%s)", o.name, e[s.a]))
		}
	}
	return e[len(e)-1]
}

// drawShapes draws x's shape (rank minRank to 3, dimensions 1 to 3) and
// y's, which broadcasts to it: a suffix of x's shape with some dimensions
// 1.
func drawShapes(t *rapid.T, minRank int) (xs, ys []int) {
	xs = make([]int, rapid.IntRange(minRank, 3).Draw(t, "rank"))
	for i := range xs {
		xs[i] = rapid.IntRange(1, 3).Draw(t, "dim")
	}
	ys = make([]int, rapid.IntRange(0, len(xs)).Draw(t, "yrank"))
	for i := range ys {
		ys[i] = xs[len(xs)-len(ys)+i]
		if rapid.Bool().Draw(t, "broadcast") {
			ys[i] = 1
		}
	}
	return xs, ys
}

func drawTensor(t *rapid.T, name string, shape []int) *T {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := rapid.SliceOfN(rapid.Float64Range(-1.5, 1.5), n, n).Draw(t, name)
	return peel.FromFloat64s(v, shape...)
}

func sumAll(x *T) *T { return peel.Sum(x) }

// TestRapidGradOfCompositions checks Grad of Σ p(x, y), for random smooth
// programs p on random broadcast shapes, against coordinate-wise central
// differences (ε = 1e-6) to 1e-6·|want| + 1e-6·max(1, Σ|p(x, y)|): the
// rounding error of the difference quotient grows with the magnitude of
// the summed terms.
func TestRapidGradOfCompositions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs, ys := drawShapes(t, 0)
		p := drawProgram(t)
		x, y := drawTensor(t, "x", xs), drawTensor(t, "y", ys)
		t.Logf("f = Σ %s with x %v, y %v", p, xs, ys)
		f := func(a []*T) *T { return sumAll(p.run(a[0], a[1])) }
		in := []*T{x, y}
		g := transforms.Grad(f)(in)
		for k := range g {
			if !sameType(g[k], in[k]) {
				t.Fatalf("gradient %d is %s, want %s", k, g[k].TypeString(), in[k].TypeString())
			}
		}
		var fd []float64
		for _, e := range optest.Basis(in) {
			fd = append(fd, optest.CentralDiff(func(a []*T) []*T { return []*T{f(a)} }, in, e, fdEps)[0].Data[0])
		}
		s := math.Max(1, sumAll(peel.Abs(p.run(x, y))).Item())
		if msg := withinTol(concatData(g), fd, fdRtol, fdAtol*s); msg != "" {
			t.Fatalf("Grad vs central differences: %s", msg)
		}
	})
}

// hessianMinRank is the smallest rank TestRapidHessian draws.
const hessianMinRank = 0

// TestRapidHessian checks, for random smooth programs of x (y fixed), that
// Hessian (Jacfwd of Jacrev) is symmetric, that reverse-over-reverse
// (Grad of ⟨Grad f, w⟩) gives H·w, and that H·w matches the central
// difference of Grad f along w.
func TestRapidHessian(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs, ys := drawShapes(t, hessianMinRank)
		p := drawProgram(t)
		x, y := drawTensor(t, "x", xs), drawTensor(t, "y", ys)
		w := drawTensor(t, "w", xs)
		t.Logf("f = Σ %s with x %v, y %v", p, xs, ys)
		f := func(x *T) *T { return sumAll(p.run(x, y)) }
		n := x.Size()
		h := transforms.Hessian(f)(x)
		if want := append(append([]int{}, xs...), xs...); fmt.Sprint(h.Shape()) != fmt.Sprint(want) {
			t.Fatalf("Hessian shape %v, want %v", h.Shape(), want)
		}
		hd := hostData(h)
		scale := math.Max(1, optest.MaxAbs(h))
		for i := 0; i < n; i++ {
			for j := 0; j < i; j++ {
				if math.Abs(hd[i*n+j]-hd[j*n+i]) > 1e-9*scale {
					t.Fatalf("Hessian not symmetric: H[%d,%d] = %.15g, H[%d,%d] = %.15g", i, j, hd[i*n+j], j, i, hd[j*n+i])
				}
			}
		}
		grad := transforms.Grad(f)
		hw := transforms.Grad(func(x *T) *T { return sumAll(peel.Mul(grad(x), w)) })(x)
		wd := hostData(w)
		want := make([]float64, n)
		for i := range want {
			for j := range wd {
				want[i] += hd[i*n+j] * wd[j]
			}
		}
		if msg := withinTol(hostData(hw), want, 1e-9, 1e-9*scale*float64(n)); msg != "" {
			t.Fatalf("Grad(⟨Grad f, w⟩) vs Hessian·w: %s", msg)
		}
		fd := optest.CentralDiff(func(a []*T) []*T { return []*T{grad(a[0])} }, []*T{x}, []*T{w}, fdEps)[0]
		s := math.Max(1, optest.MaxAbs(grad(x)))
		if msg := withinTol(hostData(hw), fd.Data, fdRtol, fdAtol*s); msg != "" {
			t.Fatalf("Hessian·w vs central differences of Grad: %s", msg)
		}
	})
}

// gradGradOps are the smooth unary ops of the registry checked by
// TestGradGradRegistryDiagonal, with whether they are smooth at 0 (then
// they are also checked at the special point zeroPoint).
var gradGradOps = map[string]bool{
	"peel.Neg": true, "peel.Exp": true, "peel.Log": false, "peel.Log1p": true, "peel.Expm1": true,
	"peel.Sqrt": false, "peel.Rsqrt": false, "peel.Sin": true, "peel.Cos": true, "peel.Tan": true,
	"peel.Tanh": true, "peel.Sigmoid": true, "peel.Erf": true, "peel.Square": true, "peel.GELU": true,
	"peel.Softplus": true,
}

// zeroPoint holds signed zeros and tiny values, where composites written
// with Abs, Max or Where may lose a derivative that the function has.
var zeroPoint = peel.FromFloat64s([]float64{0, math.Copysign(0, -1), 1e-30, -1e-30, 0.5, -0.75}, 2, 3)

// gradGradBugs lists the cases of TestGradGradRegistryDiagonal not run,
// by op name and point ("f64[2 3]" or "zero"), with the reason.
var gradGradBugs = map[[2]string]string{}

// TestGradGradRegistryDiagonal checks Grad(Grad) on the smooth unary ops
// of the registry, at the f64[2 3] sample and, for ops smooth at 0, at
// zeroPoint: for elementwise g the Hessian of Σ g(x) is diagonal, so
// Grad(x ↦ Σ Grad(Σ g)(x)) is its diagonal g”(x). It must match the
// central differences of g' (ε = 1e-6, 1e-6 relative + 1e-6·max(1, ‖g'‖∞)
// absolute) and the diagonal of Hessian, whose off-diagonal must be 0;
// the gradient itself must match central differences of Σ g.
func TestGradGradRegistryDiagonal(t *testing.T) {
	seen := 0
	for _, op := range optest.All() {
		at0, ok := gradGradOps[op.Name]
		if !ok {
			continue
		}
		for _, s := range op.Samples() {
			if s.Name != "f64[2 3]" {
				continue
			}
			seen++
			points := map[string]*T{"f64[2 3]": s.Args[0]}
			if at0 {
				points["zero"] = zeroPoint
			}
			for pname, x := range points {
				if r := gradGradBugs[[2]string{op.Name, pname}]; r != "" {
					t.Logf("%s at %s not checked: %s", op.Name, pname, r)
					continue
				}
				if err := catchAll(func() { checkGradGrad(t, op, pname, x) }); err != nil {
					t.Errorf("%s at %s: %v", op.Name, pname, err)
				}
			}
		}
	}
	if seen != len(gradGradOps) {
		t.Errorf("found an f64[2 3] sample for %d of the %d ops %v", seen, len(gradGradOps), gradGradOps)
	}
}

func checkGradGrad(t *testing.T, op optest.Op, pname string, x *T) {
	t.Helper()
	g := func(x *T) *T { return sumAll(op.F([]*T{x})) }
	grad := transforms.Grad(g)
	var fd1 []float64
	for _, e := range optest.Basis([]*T{x}) {
		fd1 = append(fd1, optest.CentralDiff(func(a []*T) []*T { return []*T{g(a[0])} }, []*T{x}, e, fdEps)[0].Data[0])
	}
	if msg := withinTol(hostData(grad(x)), fd1, fdRtol, fdAtol*math.Max(1, sumAll(peel.Abs(op.F([]*T{x}))).Item())); msg != "" {
		t.Errorf("%s at %s: Grad vs central differences: %s", op.Name, pname, msg)
	}
	gg := hostData(transforms.Grad(func(x *T) *T { return sumAll(grad(x)) })(x))
	var fd []float64
	for i, e := range optest.Basis([]*T{x}) {
		d := optest.CentralDiff(func(a []*T) []*T { return []*T{grad(a[0])} }, []*T{x}, e, fdEps)[0]
		fd = append(fd, d.Data[i])
	}
	if msg := withinTol(gg, fd, fdRtol, fdAtol*math.Max(1, optest.MaxAbs(grad(x)))); msg != "" {
		t.Errorf("%s at %s: Grad(Grad) vs central differences of the gradient: %s", op.Name, pname, msg)
	}
	h := hostData(transforms.Hessian(g)(x))
	n := x.Size()
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			want := 0.0
			if i == j {
				want = gg[i]
			}
			if math.Abs(h[i*n+j]-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("%s at %s: Hessian[%d,%d] = %v, want %v", op.Name, pname, i, j, h[i*n+j], want)
			}
		}
	}
}
