package transforms_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// linearOp is one step of a random linear program on rank-2 float64
// tensors: apply returns a linear function of x (constants drawn once).
type linearOp struct {
	name  string
	apply func(x *T) *T
}

func (o linearOp) String() string { return o.name }

// drawLinearOp draws a linear step for an input of the given shape and
// returns it with its result's shape.
func drawLinearOp(t *rapid.T, shape []int) (linearOp, []int) {
	m, n := shape[0], shape[1]
	switch rapid.IntRange(0, 9).Draw(t, "op") {
	case 0:
		k := rapid.IntRange(1, 3).Draw(t, "k")
		w := drawTensor(t, "w", []int{k, m})
		return linearOp{fmt.Sprintf("W%v·", w.Shape()), func(x *T) *T { return peel.MatMul(w, x) }}, []int{k, n}
	case 1:
		return linearOp{"transpose", func(x *T) *T { return peel.Transpose(x, 1, 0) }}, []int{n, m}
	case 2:
		c := drawTensor(t, "c", shape)
		return linearOp{"c⊙", func(x *T) *T { return peel.Mul(c, x) }}, shape
	case 3:
		return linearOp{"x−3x", func(x *T) *T { return peel.Sub(x, peel.Mul(x, peel.Scalar(3.0))) }}, shape
	case 4:
		return linearOp{"concat(x, −x)", func(x *T) *T { return peel.Concat([]*T{x, peel.Neg(x)}, 0) }}, []int{2 * m, n}
	case 5:
		return linearOp{"sum rows", func(x *T) *T { return peel.Reshape(peel.Sum(x, 0), 1, n) }}, []int{1, n}
	case 6:
		return linearOp{"cumsum", func(x *T) *T { return peel.Cumsum(x, 1) }}, shape
	case 7:
		return linearOp{"pad", func(x *T) *T { return peel.Pad(x, [][2]int{{1, 0}, {0, 2}}, 0) }}, []int{m + 1, n + 2}
	case 8:
		if m > 1 {
			return linearOp{"slice", func(x *T) *T { return peel.Slice(x, 0, 1, m, 1) }}, []int{m - 1, n}
		}
		return linearOp{"flip", func(x *T) *T { return peel.Flip(x, 1) }}, shape
	default:
		return linearOp{"reshape", func(x *T) *T { return peel.Reshape(x, n, m) }}, []int{n, m}
	}
}

// dot is ⟨a, b⟩.
func dot(a, b *T) float64 { return peel.Sum(peel.Mul(a, b)).Item() }

// TestLinearTransposeRapid checks the transpose of random linear
// programs (products by constant matrices, transposes, scalings,
// concatenation, sums, cumulative sums, padding, slices, reshapes): the
// adjoint identity ⟨ct, f(x)⟩ = ⟨tr(ct), x⟩, T against VJP's pullback at
// a random point, and T under Compile and Vmap (against a loop over the
// batch), in float64 to 1e-12 relative.
func TestLinearTransposeRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		shape := []int{rapid.IntRange(1, 3).Draw(rt, "m"), rapid.IntRange(1, 3).Draw(rt, "n")}
		var ops []linearOp
		s := shape
		for range rapid.IntRange(1, 4).Draw(rt, "steps") {
			var op linearOp
			op, s = drawLinearOp(rt, s)
			ops = append(ops, op)
		}
		f := func(x *T) *T {
			for _, op := range ops {
				x = op.apply(x)
			}
			return x
		}
		x := drawTensor(rt, "x", shape)
		ct := drawTensor(rt, "ct", s)
		tr := transforms.LinearTranspose(f, peel.Zeros(peel.Float64, shape...))
		tct := tr(ct)
		lhs, rhs := dot(ct, f(x)), dot(tct, x)
		if math.Abs(lhs-rhs) > 1e-12*math.Max(1, math.Abs(lhs)) {
			rt.Fatalf("%v: ⟨ct, f(x)⟩ = %v, ⟨tr(ct), x⟩ = %v", ops, lhs, rhs)
		}
		_, pb := transforms.VJP(f, x)
		want := pb(ct).Float64s()
		if d := maxDiff(tct.Float64s(), want); d > 1e-12 {
			rt.Fatalf("%v: tr(ct) differs from the pullback by %v", ops, d)
		}
		if d := maxDiff(transforms.Compile(tr)(ct).Float64s(), want); d > 1e-12 {
			rt.Fatalf("%v: Compile(T)(ct) differs from the pullback by %v", ops, d)
		}
		// Vmap over a batch of cotangents: a loop over the batch.
		cts := []*T{ct, peel.Mul(ct, peel.Scalar(-2.0)), drawTensor(rt, "ct2", s)}
		batched := transforms.Vmap(tr)(peel.Stack(cts, 0))
		for b, c := range cts {
			if d := maxDiff(peel.Index(batched, b).Float64s(), tr(c).Float64s()); d > 1e-12 {
				rt.Fatalf("%v: Vmap(T) lane %d differs from T by %v", ops, b, d)
			}
		}
	})
}

func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestLinearTransposeMatrix checks T's matrix, found by applying it to
// each basis cotangent, against the transpose of f's matrix, found by
// applying f to each basis vector: exactly, for f(x) = W·x + Wᵀ-free
// mixes of a struct's two fields.
func TestLinearTransposeMatrix(t *testing.T) {
	type pair struct{ A, B *T }
	w := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	f := func(p pair) *T { return peel.Add(peel.MatMul(w, p.A), peel.Mul(p.B, peel.Scalar(7.0))) }
	proto := pair{peel.Zeros(peel.Float64, 3), peel.Zeros(peel.Float64, 2)}
	tr := transforms.LinearTranspose(f, proto)
	basis := func(n, i int) *T {
		v := make([]float64, n)
		v[i] = 1
		return peel.FromFloat64s(v)
	}
	// f's matrix: column j is f of the j-th basis vector of (A, B).
	var cols [][]float64
	for j := range 3 {
		cols = append(cols, f(pair{basis(3, j), peel.Zeros(peel.Float64, 2)}).Float64s())
	}
	for j := range 2 {
		cols = append(cols, f(pair{peel.Zeros(peel.Float64, 3), basis(2, j)}).Float64s())
	}
	for i := range 2 {
		got := tr(basis(2, i))
		row := append(got.A.Float64s(), got.B.Float64s()...)
		for j, v := range row {
			if v != cols[j][i] {
				t.Fatalf("T's matrix [%d, %d] = %v, want f's [%d, %d] = %v", j, i, v, i, j, cols[j][i])
			}
		}
	}
}

// TestLinearTransposeUnderGrad takes LinearTranspose inside Grad, of f
// closing over the matrix being differentiated: d/dW ⟨Wᵀct, y⟩ = ct·yᵀ;
// and Grad of T itself in the cotangent: d/dct ⟨tr(ct), y⟩ = f(y).
func TestLinearTransposeUnderGrad(t *testing.T) {
	w := peel.FromFloat64s([]float64{1, -2, 0.5, 3, 4, -1}, 2, 3)
	ct := f64(0.25, -1.5)
	y := f64(2, -1, 0.5)
	g := transforms.Grad(func(w *T) *T {
		tr := transforms.LinearTranspose(func(x *T) *T { return peel.MatMul(w, x) }, peel.Zeros(peel.Float64, 3))
		return peel.Sum(peel.Mul(tr(ct), y))
	})(w)
	want := peel.Mul(peel.Reshape(ct, 2, 1), peel.Reshape(y, 1, 3))
	near(t, "d/dW ⟨Wᵀct, y⟩", g.Float64s(), want.Float64s(), 1e-14)
	f := func(x *T) *T { return peel.MatMul(w, x) }
	tr := transforms.LinearTranspose(f, peel.Zeros(peel.Float64, 3))
	gct := transforms.Grad(func(c *T) *T { return peel.Sum(peel.Mul(tr(c), y)) })(ct)
	near(t, "d/dct ⟨tr(ct), y⟩", gct.Float64s(), f(y).Float64s(), 1e-14)
}

// TestLinearTransposeRefuses checks the functions that are not linear,
// each refused with the reason, and a cotangent of the wrong shape.
func TestLinearTransposeRefuses(t *testing.T) {
	x := peel.Zeros(peel.Float64, 3)
	for _, c := range []struct {
		name string
		f    func(*T) *T
		want []string
	}{
		{"tanh", peel.Tanh, []string{"transforms.LinearTranspose", "not linear", "tanh"}},
		{"abs", peel.Abs, []string{"not linear", "abs"}},
		{"square", func(x *T) *T { return peel.Mul(x, x) }, []string{"not linear"}},
		{"x·sum(x)", func(x *T) *T { return peel.Mul(x, peel.Sum(x)) }, []string{"not linear"}},
		{"affine", func(x *T) *T { return peel.Add(x, peel.Scalar(1.0)) }, []string{"affine", "not zero"}},
		{"constant", func(*T) *T { return peel.Ones(peel.Float64, 2) }, []string{"affine"}},
		{"integer value", func(x *T) *T { return peel.AsType(x, peel.Int64) }, []string{"float"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, func() { transforms.LinearTranspose(c.f, x) }, c.want...)
		})
	}
	wantError(t, func() { transforms.LinearTranspose(peel.Neg, peel.Zeros(peel.Int64, 3)) }, "float")
	tr := transforms.LinearTranspose(peel.Neg, x)
	wantError(t, func() { tr(peel.Zeros(peel.Float64, 4)) }, "cotangent", "f64[4]")
	wantError(t, func() { transforms.LinearTranspose[*T, *T](nil, x) }, "nil")
	// A zero constant added is linear: f(0) = 0.
	z := transforms.LinearTranspose(func(x *T) *T { return peel.Add(x, peel.Zeros(peel.Float64, 3)) }, x)
	near(t, "T of x + 0", z(f64(1, 2, 3)).Float64s(), []float64{1, 2, 3}, 0)
}

// TestLinearTransposeArity checks LinearTranspose3: the transpose of a
// function linear in three arguments together returns each one's
// cotangent, against the pullback.
func TestLinearTransposeArity(t *testing.T) {
	w := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	f := func(a, b, c *T) *T {
		return peel.Sub(peel.Add(a, peel.Mul(b, peel.Scalar(2.0))), peel.MatMul(w, c))
	}
	z3, z2 := peel.Zeros(peel.Float64, 3), peel.Zeros(peel.Float64, 2)
	ct := f64(1, -2, 0.5)
	ga, gb, gc := transforms.LinearTranspose3(f, z3, z3, z2)(ct)
	_, pb := transforms.VJP3(f, f64(1, 2, 3), f64(4, 5, 6), f64(7, 8))
	wa, wb, wc := pb(ct)
	near(t, "a", ga.Float64s(), wa.Float64s(), 0)
	near(t, "b", gb.Float64s(), wb.Float64s(), 0)
	near(t, "c", gc.Float64s(), wc.Float64s(), 0)
	wantError(t, func() { transforms.LinearTranspose2(func(a, b *T) *T { return peel.Mul(a, b) }, z3, z3) }, "transforms.LinearTranspose2", "not linear")
}

// ExampleLinearTranspose transposes a product by a matrix: tr(ct) = Wᵀ·ct,
// without forming Wᵀ or evaluating f.
func ExampleLinearTranspose() {
	w := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	f := func(x *peel.Tensor) *peel.Tensor { return peel.MatMul(w, x) }
	tr := transforms.LinearTranspose(f, peel.Zeros(peel.Float64, 3))
	fmt.Println(tr(peel.FromFloat64s([]float64{1, -1})).Float64s())
	err := peel.Catch(func() { transforms.LinearTranspose(peel.Tanh, peel.Zeros(peel.Float64, 3)) })
	fmt.Println(strings.Contains(err.Error(), "not linear"))
	// Output:
	// [-3 -3 -3]
	// true
}
