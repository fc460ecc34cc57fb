package linalg_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/linalg"
	"github.com/peel-ml/peel/transforms"
)

type T = peel.Tensor

// drawMatrix draws an m×n matrix with elements in [-1, 1], plus diag on
// the diagonal.
func drawMatrix(t *rapid.T, name string, m, n int, diag float64) []float64 {
	d := make([]float64, m*n)
	for i := range d {
		d[i] = rapid.Float64Range(-1, 1).Draw(t, name)
		if i/n == i%n {
			d[i] += diag
		}
	}
	return d
}

func dense(t *T) *mat.Dense {
	s := t.Shape()
	return mat.NewDense(s[0], s[1], peel.AsType(t, peel.Float64).Float64s())
}

// closeTo fails unless every element of got equals want's or is within
// tol·max(1, |want|) of it.
func closeTo(t interface {
	Helper()
	Fatalf(string, ...any)
}, what string, got *T, want mat.Matrix, tol float64) {
	t.Helper()
	g := dense(got)
	r, c := want.Dims()
	if gr, gc := g.Dims(); gr != r || gc != c {
		t.Fatalf("%s: %d×%d, want %d×%d", what, gr, gc, r, c)
	}
	for i := range r {
		for j := range c {
			w := want.At(i, j)
			if g.At(i, j) == w {
				continue // equal infinities differ by NaN
			}
			if d := math.Abs(g.At(i, j) - w); !(d <= tol*max(1, math.Abs(w))) {
				t.Fatalf("%s: [%d,%d] = %v, want %v", what, i, j, g.At(i, j), w)
			}
		}
	}
}

// allClose reports whether x and y have one shape and elements within
// 1e-9·max(1, |y|).
func allClose(x, y *T) bool {
	if !slices.Equal(x.Shape(), y.Shape()) {
		return false
	}
	a, b := peel.AsType(x, peel.Float64).Float64s(), peel.AsType(y, peel.Float64).Float64s()
	for i := range a {
		if !(math.Abs(a[i]-b[i]) <= 1e-9*max(1, math.Abs(b[i]))) {
			return false
		}
	}
	return true
}

func mT(x *T) *T { r := x.Rank(); return peel.MoveAxis(x, r-1, r-2) }

// TestRapidFactorizations checks each factorization of random
// well-conditioned matrices against gonum and its defining property.
func TestRapidFactorizations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		m := rapid.IntRange(1, 6).Draw(t, "m")
		sq := peel.FromFloat64s(drawMatrix(t, "a", n, n, float64(n)+1), n, n)
		rect := peel.FromFloat64s(drawMatrix(t, "r", m, n, 0), m, n)
		a := dense(sq)

		// Solve, Inv, Det against gonum.
		b := peel.FromFloat64s(drawMatrix(t, "b", n, 2, 0), n, 2)
		var x mat.Dense
		if err := x.Solve(a, dense(b)); err != nil {
			t.Fatal(err)
		}
		closeTo(t, "Solve", linalg.Solve(sq, b), &x, 1e-10)
		var inv mat.Dense
		if err := inv.Inverse(a); err != nil {
			t.Fatal(err)
		}
		closeTo(t, "Inv", linalg.Inv(sq), &inv, 1e-10)
		det := linalg.Det(sq).Item()
		if w := mat.Det(a); math.Abs(det-w) > 1e-10*math.Abs(w) {
			t.Fatalf("Det = %v, want %v", det, w)
		}
		sign, logdet := linalg.Slogdet(sq)
		if w, ws := mat.LogDet(a); sign.Item() != ws || math.Abs(logdet.Item()-w) > 1e-10*max(1, math.Abs(w)) {
			t.Fatalf("Slogdet = %v, %v, want %v, %v", sign.Item(), logdet.Item(), ws, w)
		}

		// Cholesky of a·aᵀ: L·Lᵀ reconstructs it.
		spd := peel.MatMul(sq, mT(sq))
		l := linalg.Cholesky(spd)
		closeTo(t, "L·Lᵀ", peel.MatMul(l, mT(l)), dense(spd), 1e-10)
		for i := range n {
			for j := i + 1; j < n; j++ {
				if dense(l).At(i, j) != 0 {
					t.Fatalf("Cholesky: L[%d,%d] = %v above the diagonal", i, j, dense(l).At(i, j))
				}
			}
		}
		// TriangularSolve by L undoes the product.
		closeTo(t, "TriangularSolve(L, L·b)", linalg.TriangularSolve(l, peel.MatMul(l, b), linalg.Lower), dense(b), 1e-9)
		bt := mT(b)
		closeTo(t, "TriangularSolve(Lᵀ, bᵀ·Lᵀ) right", linalg.TriangularSolve(l, peel.MatMul(bt, mT(l)), linalg.Lower|linalg.RightSide|linalg.Transposed), dense(bt), 1e-9)

		// QR: q·r = a, qᵀ·q = I.
		q, r := linalg.QR(rect)
		closeTo(t, "q·r", peel.MatMul(q, r), dense(rect), 1e-10)
		k := min(m, n)
		closeTo(t, "qᵀ·q", peel.MatMul(mT(q), q), eye(k), 1e-10)

		// Eigh of a symmetric matrix: eigenvalues as gonum's, a·v = v·diag(w).
		sym := peel.Mul(peel.Add(sq, mT(sq)), 0.5)
		w, v := linalg.Eigh(sym)
		var es mat.EigenSym
		if !es.Factorize(mat.NewSymDense(n, dense(sym).RawMatrix().Data), true) {
			t.Fatal("gonum EigenSym failed")
		}
		closeTo(t, "Eigh w", peel.Reshape(w, 1, n), mat.NewDense(1, n, es.Values(nil)), 1e-10)
		closeTo(t, "a·v", peel.MatMul(sym, v), dense(peel.Mul(v, w)), 1e-10)
		closeTo(t, "vᵀ·v", peel.MatMul(mT(v), v), eye(n), 1e-10)

		// SVD: values as gonum's, u·diag(s)·vt = a.
		u, s, vt := linalg.SVD(rect)
		var sv mat.SVD
		if !sv.Factorize(dense(rect), mat.SVDThin) {
			t.Fatal("gonum SVD failed")
		}
		closeTo(t, "SVD s", peel.Reshape(s, 1, k), mat.NewDense(1, k, sv.Values(nil)), 1e-10)
		closeTo(t, "SVDVals", peel.Reshape(linalg.SVDVals(rect), 1, k), mat.NewDense(1, k, sv.Values(nil)), 1e-10)
		closeTo(t, "u·diag(s)·vt", peel.MatMul(peel.Mul(u, s), vt), dense(rect), 1e-10)

		// Pinv: the Penrose conditions a·p·a = a and p·a·p = p.
		p := linalg.Pinv(rect)
		pn := max(1, peel.Max(peel.Abs(p)).Item())
		closeTo(t, "a·p·a", peel.MatMul(peel.MatMul(rect, p), rect), dense(rect), 1e-9*pn)
		closeTo(t, "p·a·p", peel.MatMul(peel.MatMul(p, rect), p), dense(p), 1e-9*pn*pn)

		// MatrixExp against gonum.
		var e mat.Dense
		e.Exp(a)
		closeTo(t, "MatrixExp", linalg.MatrixExp(sq), &e, 1e-9)
	})
}

func eye(n int) *mat.Dense {
	e := mat.NewDense(n, n, nil)
	for i := range n {
		e.Set(i, i, 1)
	}
	return e
}

// TestBatchedMatchesLoop checks every function on a batch [2, 3, n, n]
// against the function applied to each matrix, and under Vmap.
func TestBatchedMatchesLoop(t *testing.T) {
	const n = 4
	g := func(seed float64) *T {
		d := make([]float64, 2*3*n*n)
		for i := range d {
			d[i] = math.Sin(seed*float64(i+1)) + 0
			if (i/n)%n == i%n {
				d[i] += n + 1
			}
		}
		return peel.FromFloat64s(d, 2, 3, n, n)
	}
	a := g(1.3)
	b := peel.Select(peel.Select(g(0.7), 0, 1), 0, 2)
	fns := map[string]func(x *T) *T{
		"Solve":     func(x *T) *T { return linalg.Solve(x, b) },
		"Inv":       linalg.Inv,
		"Det":       linalg.Det,
		"Cholesky":  func(x *T) *T { return linalg.Cholesky(peel.MatMul(x, mT(x))) },
		"QR":        func(x *T) *T { q, r := linalg.QR(x); return peel.Add(q, r) },
		"Eigvalsh":  linalg.Eigvalsh,
		"SVDVals":   linalg.SVDVals,
		"Pinv":      linalg.Pinv,
		"MatrixExp": func(x *T) *T { return linalg.MatrixExp(peel.Mul(x, 0.3)) },
		"Nuc":       func(x *T) *T { return linalg.MatrixNorm(x, linalg.Nuc) },
		"TriSolve":  func(x *T) *T { return linalg.TriangularSolve(x, b, linalg.Upper|linalg.Transposed) },
	}
	for name, f := range fns {
		whole := f(a)
		for i := range 2 {
			for j := range 3 {
				one := f(peel.Select(peel.Select(a, 0, i), 0, j))
				got := peel.Select(peel.Select(whole, 0, i), 0, j)
				if !allClose(got, one) {
					t.Errorf("%s: matrix [%d,%d] of the batch differs from the matrix alone", name, i, j)
				}
			}
		}
		vm := transforms.Vmap(transforms.Vmap(f))(a)
		if !allClose(vm, whole) {
			t.Errorf("%s: Vmap differs from the batched call", name)
		}
	}
}

// TestBroadcastBatch: Solve and TriangularSolve broadcast batch
// dimensions; a 1-D b is one vector.
func TestBroadcastBatch(t *testing.T) {
	a := peel.FromFloat64s([]float64{3, 1, 0, 2, 4, 1, 0, 1, 5, 2, 0, 0, 1, 3, 0, 0, 1, 4}, 2, 3, 3)
	b := peel.FromFloat64s([]float64{1, 2, 3}, 3)
	x := linalg.Solve(a, b)
	if s := x.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 3 {
		t.Fatalf("Solve([2,3,3], [3]) has shape %v, want [2 3]", s)
	}
	back := peel.Squeeze(peel.MatMul(a, peel.Unsqueeze(x, 2)), 2)
	if !allClose(back, peel.BroadcastTo(b, 2, 3)) {
		t.Errorf("a·Solve(a, b) = %v, want b", back)
	}
	bm := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 1, 3, 2)
	y := linalg.TriangularSolve(a, bm, linalg.Upper)
	if s := y.Shape(); s[0] != 2 || s[1] != 3 || s[2] != 2 {
		t.Fatalf("TriangularSolve([2,3,3], [1,3,2]) has shape %v", s)
	}
}

// TestDegenerate: singular and indefinite operands give values, not
// panics.
func TestDegenerate(t *testing.T) {
	sing := peel.FromFloat64s([]float64{1, 2, 2, 4}, 2, 2)
	if d := linalg.Det(sing).Item(); d != 0 {
		t.Errorf("Det(singular) = %v, want 0", d)
	}
	s, l := linalg.Slogdet(sing)
	if s.Item() != 0 || !math.IsInf(l.Item(), -1) {
		t.Errorf("Slogdet(singular) = %v, %v, want 0, -Inf", s.Item(), l.Item())
	}
	for _, v := range linalg.Inv(sing).Float64s() {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			t.Errorf("Inv(singular) = %v, want ±Inf or NaN elements", linalg.Inv(sing))
			break
		}
	}
	for _, v := range linalg.Cholesky(peel.FromFloat64s([]float64{1, 2, 2, 1}, 2, 2)).Float64s() {
		if !math.IsNaN(v) {
			t.Errorf("Cholesky(indefinite) has %v, want NaN", v)
		}
	}
	// Repeated eigenvalues: the values are right.
	w, _ := linalg.Eigh(peel.Eye(peel.Float64, 3))
	for _, v := range w.Float64s() {
		if math.Abs(v-1) > 1e-15 {
			t.Errorf("Eigh(I) eigenvalue %v, want 1", v)
		}
	}
	// Pinv of a rank-1 matrix and its derivative at the identity
	// (repeated singular values) are finite.
	p := linalg.Pinv(sing)
	want := mat.NewDense(2, 2, []float64{1. / 25, 2. / 25, 2. / 25, 4. / 25})
	closeTo(t, "Pinv(rank 1)", p, want, 1e-12)
	g := transforms.Grad(func(x *T) *T { return peel.Sum(linalg.Pinv(x)) })(peel.Eye(peel.Float64, 3))
	for _, v := range g.Float64s() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("Grad of Pinv at I = %v, want finite", g)
		}
	}
	// Compiled, Pinv stays one equation with its rule.
	cp := transforms.Compile(linalg.Pinv)
	gc := transforms.Grad(func(x *T) *T { return peel.Sum(cp(x)) })(peel.Eye(peel.Float64, 3))
	if !allClose(gc, g) {
		t.Errorf("Grad of compiled Pinv at I = %v, want %v", gc, g)
	}
	// NaN inputs give NaN, no panic.
	nan := peel.FromFloat64s([]float64{math.NaN(), 0, 0, 1}, 2, 2)
	for _, f := range []func(*T) *T{linalg.Eigvalsh, linalg.SVDVals, linalg.Inv, linalg.Det, linalg.MatrixExp, linalg.Pinv} {
		if v := peel.Sum(f(nan)).Item(); !math.IsNaN(v) {
			t.Errorf("NaN input gave %v", v)
		}
	}
}

// TestFloat32AndIntegers: float32 in, float32 out; integers as float64.
func TestFloat32AndIntegers(t *testing.T) {
	a32 := peel.FromFloat32s([]float32{4, 1, 1, 3}, 2, 2)
	if d := linalg.Inv(a32).DType(); d != peel.Float32 {
		t.Errorf("Inv(f32) dtype %v", d)
	}
	if d := linalg.Det(a32).Item(); math.Abs(d-11) > 1e-5 {
		t.Errorf("Det(f32) = %v, want 11", d)
	}
	ai := peel.FromInt64s([]int64{4, 1, 1, 3}, 2, 2)
	if x := linalg.Det(ai); x.DType() != peel.Float64 || math.Abs(x.Item()-11) > 1e-12 {
		t.Errorf("Det(i64) = %v", x)
	}
	if x := linalg.VectorNorm(peel.FromInt64s([]int64{3, -4}, 2), 2); x.Item() != 5 {
		t.Errorf("VectorNorm(i64 [3 -4]) = %v", x)
	}
}

// TestDerivatives spot-checks closed forms: d det = det·tr(a⁻¹·da), the
// gradient of logabsdet is a⁻ᵀ, that of Σ eigenvalues is I, that of the
// nuclear norm of an SPD matrix is I.
func TestDerivatives(t *testing.T) {
	a := peel.FromFloat64s([]float64{4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2}, 3, 3)
	g := transforms.Grad(linalg.Det)(a)
	want := peel.Mul(linalg.Det(a), mT(linalg.Inv(a)))
	if !allClose(g, want) {
		t.Errorf("Grad Det = %v, want det·a⁻ᵀ = %v", g, want)
	}
	// At singular matrices the gradient is the cofactor matrix.
	for _, c := range []struct {
		a, want []float64
	}{
		{[]float64{1, 2, 2, 4}, []float64{4, -2, -2, 1}},
		{[]float64{1, 0, 2, 3, 0, 1, -1, 0, 4}, []float64{0, -13, 0, 0, 6, 0, 0, 5, 0}},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, []float64{-3, 6, -3, 6, -12, 6, -3, 6, -3}},
		{make([]float64, 9), make([]float64, 9)},
	} {
		n := int(math.Sqrt(float64(len(c.a))))
		x := peel.FromFloat64s(c.a, n, n)
		want := peel.FromFloat64s(c.want, n, n)
		if g := transforms.Grad(linalg.Det)(x); !allClose(g, want) {
			t.Errorf("Grad Det at singular %v = %v, want %v", x, g, want)
		}
		// Under Vmap the primitive keeps its rule.
		xs := peel.Stack([]*T{x, x}, 0)
		if g := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(linalg.Det)(x)) })(xs); !allClose(g, peel.Stack([]*T{want, want}, 0)) {
			t.Errorf("Grad of Vmap Det at singular %v = %v", x, g)
		}
	}
	gl := transforms.Grad(func(x *T) *T { _, l := linalg.Slogdet(x); return l })(a)
	if !allClose(gl, mT(linalg.Inv(a))) {
		t.Errorf("Grad logabsdet = %v, want a⁻ᵀ", gl)
	}
	ge := transforms.Grad(func(x *T) *T { return peel.Sum(linalg.Eigvalsh(x)) })(a)
	if !allClose(ge, peel.Eye(peel.Float64, 3)) {
		t.Errorf("Grad Σw = %v, want I", ge)
	}
	gn := transforms.Grad(func(x *T) *T { return linalg.MatrixNorm(x, linalg.Nuc) })(a)
	if !allClose(gn, peel.Eye(peel.Float64, 3)) {
		t.Errorf("Grad nuclear norm of SPD = %v, want I", gn)
	}
	// d/dt exp(t·a) at t = 0 is a.
	_, tan := transforms.JVP(func(t *T) *T { return linalg.MatrixExp(peel.Mul(a, t)) }, peel.Scalar(0.0), peel.Scalar(1.0))
	if !allClose(tan, a) {
		t.Errorf("d/dt exp(t·a) at 0 = %v, want a", tan)
	}
}

// TestErrors: misuse panics with *peel.Error naming the function.
func TestErrors(t *testing.T) {
	m23 := peel.Zeros(peel.Float64, 2, 3)
	v := peel.Zeros(peel.Float64, 3)
	sq := peel.Eye(peel.Float64, 3)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"linalg.Cholesky", func() { linalg.Cholesky(m23) }},
		{"linalg.Cholesky", func() { linalg.Cholesky(v) }},
		{"linalg.Cholesky", func() { linalg.Cholesky(nil) }},
		{"linalg.Inv", func() { linalg.Inv(m23) }},
		{"linalg.Det", func() { linalg.Det(v) }},
		{"linalg.Slogdet", func() { linalg.Slogdet(m23) }},
		{"linalg.Eigh", func() { linalg.Eigh(m23) }},
		{"linalg.LU", func() { linalg.LU(m23) }},
		{"linalg.QR", func() { linalg.QR(v) }},
		{"linalg.SVD", func() { linalg.SVD(v) }},
		{"linalg.Solve", func() { linalg.Solve(sq, peel.Zeros(peel.Float64, 2)) }},
		{"linalg.Solve", func() { linalg.Solve(sq, peel.Scalar(1.0)) }},
		{"linalg.Solve", func() { linalg.Solve(peel.Zeros(peel.Float64, 2, 3, 3), peel.Zeros(peel.Float64, 3, 3, 1)) }},
		{"linalg.TriangularSolve", func() { linalg.TriangularSolve(sq, m23, linalg.Lower) }},
		{"linalg.TriangularSolve", func() { linalg.TriangularSolve(sq, sq, linalg.Transposed) }},
		{"linalg.TriangularSolve", func() { linalg.TriangularSolve(sq, sq, linalg.Lower|linalg.Upper) }},
		{"linalg.TriangularSolve", func() { linalg.TriangularSolve(sq, sq, linalg.Lower|1<<6) }},
		{"linalg.CholeskySolve", func() { linalg.CholeskySolve(sq, m23) }},
		{"linalg.Lstsq", func() { linalg.Lstsq(m23, peel.Zeros(peel.Float64, 3)) }},
		{"linalg.MatrixNorm", func() { linalg.MatrixNorm(m23, "3") }},
		{"linalg.MatrixNorm", func() { linalg.MatrixNorm(peel.Zeros(peel.Float64, 0, 2), linalg.Spectral) }},
		{"linalg.VectorNorm", func() { linalg.VectorNorm(v, math.NaN()) }},
		{"linalg.MatrixExp", func() { linalg.MatrixExp(m23) }},
		{"linalg.Pinv", func() { linalg.Pinv(v) }},
	} {
		err := peel.Catch(c.f)
		var pe *peel.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want *peel.Error", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: error %q does not name the function", c.name, err)
		}
	}
}

// TestMatrixExpTraced: under Compile (traced operands) the result equals
// the eager one, also for a norm needing many squarings.
func TestMatrixExpTraced(t *testing.T) {
	a := peel.FromFloat64s([]float64{0.5, 40, -40, 0.1}, 2, 2)
	eager := linalg.MatrixExp(a)
	c := transforms.Compile(linalg.MatrixExp)
	if got := c(a); !allClose(got, eager) {
		t.Errorf("compiled MatrixExp = %v, eager %v", got, eager)
	}
}

// TestNonFiniteNoPanic: Inf and NaN anywhere give values, never a
// panic.
func TestNonFiniteNoPanic(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for pos := range 9 {
			d := []float64{1, 2, 3, 4, 5, 6, 7, 8, 10}
			d[pos] = v
			a := peel.FromFloat64s(d, 3, 3)
			err := peel.Catch(func() {
				linalg.LU(a)
				linalg.QR(a)
				linalg.SVD(a)
				linalg.Eigh(a)
				linalg.Cholesky(a)
				linalg.Solve(a, a)
				linalg.Det(a)
				linalg.Pinv(a)
				linalg.MatrixExp(a)
				linalg.TriangularSolve(a, a, linalg.Lower)
			})
			if err != nil {
				t.Errorf("%v at %d: %v", v, pos, err)
			}
		}
	}
}

// TestVectorNormEdges: empty axes, zero vectors and their derivatives.
func TestVectorNormEdges(t *testing.T) {
	empty := peel.Zeros(peel.Float64, 0)
	for _, c := range []struct {
		ord, want float64
	}{{1, 0}, {2, 0}, {3, 0}, {0.5, 0}, {0, 0}, {-1, math.Inf(1)}} {
		if got := linalg.VectorNorm(empty, c.ord).Item(); got != c.want {
			t.Errorf("VectorNorm(empty, %v) = %v, want %v", c.ord, got, c.want)
		}
	}
	if got := linalg.VectorNorm(peel.FromFloat64s([]float64{0, 2}, 2), -1).Item(); got != 0 {
		t.Errorf("VectorNorm([0 2], -1) = %v, want 0", got)
	}
	for _, ord := range []float64{1, 2, 3, math.Inf(1)} {
		g := transforms.Grad(func(x *T) *T { return linalg.VectorNorm(x, ord) })(peel.Zeros(peel.Float64, 3))
		for _, v := range g.Float64s() {
			if v != 0 {
				t.Errorf("Grad VectorNorm(ord %v) at 0 = %v, want 0", ord, g)
				break
			}
		}
	}
}

// TestTriangleString checks the flags' names in errors.
func TestTriangleString(t *testing.T) {
	for _, c := range []struct {
		tri  linalg.Triangle
		want string
	}{
		{0, "0"}, {linalg.Lower, "Lower"}, {linalg.Upper | linalg.Transposed | linalg.UnitDiagonal, "Upper|Transposed|UnitDiagonal"},
		{linalg.Lower | linalg.RightSide | 1<<7, "Lower|RightSide|0x80"},
	} {
		if got := c.tri.String(); got != c.want {
			t.Errorf("Triangle(%d).String() = %q, want %q", uint8(c.tri), got, c.want)
		}
	}
	err := peel.Catch(func() {
		linalg.TriangularSolve(peel.Eye(peel.Float64, 2), peel.Eye(peel.Float64, 2), linalg.Transposed)
	})
	if err == nil || !strings.Contains(err.Error(), "linalg.Lower or linalg.Upper (got Transposed)") {
		t.Errorf("a solve naming no triangle: %v", err)
	}
}

// TestCholeskySolve checks CholeskySolve(Cholesky(A), b) against A·x = b
// on a symmetric positive-definite A, batched.
func TestCholeskySolve(t *testing.T) {
	a := peel.FromFloat64s([]float64{4, 2, 0.6, 2, 5, 1, 0.6, 1, 3, 2, 0, 0, 0, 3, 1, 0, 1, 4}, 2, 3, 3)
	b := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	x := linalg.CholeskySolve(linalg.Cholesky(a), b)
	ax := peel.MatMul(a, x)
	for i := range 2 {
		closeTo(t, "A·CholeskySolve(L, b)", peel.Select(ax, 0, i), dense(b), 1e-12)
	}
}
