package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Linear-algebra primitives: cholesky, triangular_solve, lu, qr, eigh
// and svd. A factorization is not unique bit for bit (nor in its signs),
// so the references are the defining properties, checked in float64
// with plain loops: the factors' structure (triangular, orthonormal,
// ordered), and the reconstruction of the operand (L·Lᵀ = a, P·a = L·U,
// q·r = a, a·v = v·diag(w), u·diag(s)·vt = a) or, for the solve, the
// residual, each to a bound of the dtype's roundoff times the size and
// the operand's norm. The triangle of the operand that a primitive does
// not read holds junk.

// hmat is a row-major host matrix.
type hmat struct {
	r, c int
	d    []float64
}

func newHmat(r, c int) hmat { return hmat{r, c, make([]float64, r*c)} }

func (m hmat) at(i, j int) float64 { return m.d[i*m.c+j] }

func (m hmat) mul(n hmat) hmat {
	o := newHmat(m.r, n.c)
	for i := range m.r {
		for k := range m.c {
			a := m.at(i, k)
			for j := range n.c {
				o.d[i*o.c+j] += a * n.at(k, j)
			}
		}
	}
	return o
}

func (m hmat) t() hmat {
	o := newHmat(m.c, m.r)
	for i := range m.r {
		for j := range m.c {
			o.d[j*o.c+i] = m.at(i, j)
		}
	}
	return o
}

// maxAbs returns the largest magnitude (the max norm), NaN if any is NaN.
func (m hmat) maxAbs() float64 {
	v := 0.0
	for _, x := range m.d {
		if math.IsNaN(x) {
			return math.NaN()
		}
		v = max(v, math.Abs(x))
	}
	return v
}

// diff returns max |m − n|.
func (m hmat) diff(n hmat) float64 {
	v := 0.0
	for k := range m.d {
		d := math.Abs(m.d[k] - n.d[k])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		v = max(v, d)
	}
	return v
}

func eyeH(n int) hmat {
	o := newHmat(n, n)
	for i := range n {
		o.d[i*n+i] = 1
	}
	return o
}

// matsOf splits host array a [..., r, c] into its matrices.
func matsOf(a array) []hmat {
	s := a.shape
	r, c := s[len(s)-2], s[len(s)-1]
	n := 1
	for _, d := range s[:len(s)-2] {
		n *= d
	}
	out := make([]hmat, n)
	for b := range out {
		out[b] = hmat{r, c, a.f[b*r*c : (b+1)*r*c]}
	}
	return out
}

// linalgTol is the error allowed relative to the operand's scale: a
// backward-stable factorization's residual is a small multiple of the
// unit roundoff times the size.
func linalgTol(dt backend.DType, n int) float64 {
	return 64 * float64(max(n, 1)) * unitRoundoff(dt)
}

// linalgShapes are the stacks of square matrices the cases use.
var linalgShapes = [][]int{{0, 0}, {1, 1}, {3, 3}, {2, 4, 4}, {2, 1, 6, 6}, {0, 3, 3}, {3, 0, 0}, {17, 17}}

// randomMatrices fills an array of dtype dt and shape with values in
// [−1, 1) plus diag on the diagonal of each (square) matrix.
func (s *suite) randomMatrices(dt backend.DType, shape []int, diag float64) array {
	a := newArray(dt, shape)
	r, c := shape[len(shape)-2], shape[len(shape)-1]
	for k := range a.f {
		v := 2*s.rng.Float64() - 1
		if i, j := (k/c)%max(r, 1), k%c; i == j {
			v += diag
		}
		a.f[k] = fround(dt, v)
	}
	return a
}

// linalgDTypes returns the float dtypes p's rule accepts for a 2×2
// operand (checking that the others are rejected).
func (s *suite) linalgDTypes(p *interp.Prim, params any, arity int) []backend.DType {
	avals := func(dt backend.DType) []interp.Aval {
		in := make([]interp.Aval, arity)
		for i := range in {
			in[i] = interp.Aval{Shape: []int{2, 2}, DType: dt}
		}
		return in
	}
	dts := accepted(p, params, avals)
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(p.Name, dt, []int{2, 2}, "(a dtype the rule rejects)"), func() {
				args := make([]*interp.Tensor, arity)
				for i := range args {
					args[i] = s.operand(dt, []int{2, 2}, contiguous, finiteValues).t
				}
				interp.Bind(p, params, args...)
			})
		}
	}
	return dts
}

// within reports a failure when err exceeds bound (or is NaN).
func (s *suite) within(desc, what string, err, bound float64) {
	s.t.Helper()
	if !(err <= bound) {
		s.failf("%s: %s error %.3g exceeds %.3g", desc, what, err, bound)
	}
}

// orthonormalCols checks qᵀ·q = I.
func (s *suite) orthonormalCols(desc, what string, q hmat, tol float64) {
	s.within(desc, what+"ᵀ·"+what+" − I", q.t().mul(q).diff(eyeH(q.c)), tol)
}

func linalgLayouts(shape []int) []layout {
	if backend.ShapeSize(shape) == 0 {
		return []layout{contiguous}
	}
	return []layout{contiguous, transposed, strided}
}

func runCholesky(s *suite) {
	p := prims.Cholesky
	for _, dt := range s.linalgDTypes(p, nil, 1) {
		for _, shape := range linalgShapes {
			n := shape[len(shape)-1]
			for _, l := range linalgLayouts(shape) {
				// An SPD matrix m·mᵀ + n·I in the lower triangle, junk above.
				src := s.randomMatrices(dt, shape, 0)
				a := src.clone()
				for b, m := range matsOf(src) {
					g := m.mul(m.t())
					for i := range n {
						for j := range n {
							v := 7.5 // junk: not read
							if j <= i {
								v = g.at(i, j)
								if i == j {
									v += float64(n)
								}
							}
							a.f[b*n*n+i*n+j] = fround(dt, v)
						}
					}
				}
				x := s.place(a, l)
				desc := describe(p.Name, dt, shape, "x="+l.String())
				s.try(desc, func() {
					got := interp.Bind1(p, nil, x.t)
					if !interp.AvalOf(got).Equal(interp.Aval{Shape: shape, DType: dt}) {
						s.failf("%s: result %v", desc, got.TypeString())
						return
					}
					ls := matsOf(readTensor(got))
					for b, am := range matsOf(a) {
						lm := ls[b]
						sym := newHmat(n, n)
						for i := range n {
							for j := range n {
								sym.d[i*n+j] = am.at(max(i, j), min(i, j))
								if j > i && lm.at(i, j) != 0 {
									s.failf("%s: matrix %d: L[%d,%d] = %v above the diagonal", desc, b, i, j, lm.at(i, j))
									return
								}
							}
							if !(lm.at(i, i) > 0) {
								s.failf("%s: matrix %d: L[%d,%d] = %v, want > 0", desc, b, i, i, lm.at(i, i))
							}
						}
						s.within(desc, "L·Lᵀ − a", lm.mul(lm.t()).diff(sym), linalgTol(dt, n)*max(sym.maxAbs(), 1))
					}
				})
			}
		}
		// Not positive definite: NaN.
		desc := describe(p.Name, dt, []int{2, 2}, "indefinite")
		s.try(desc, func() {
			a := newArray(dt, []int{2, 2})
			copy(a.f, []float64{1, 0, 2, 1})
			got := readTensor(interp.Bind1(p, nil, s.tensor(a)))
			for _, v := range got.f {
				if !math.IsNaN(v) {
					s.failf("%s: got %v, want NaN", desc, got)
					return
				}
			}
		})
	}
	bad := func(desc string, x *interp.Tensor) { s.expectError(desc, func() { interp.Bind1(p, nil, x) }) }
	f := func(shape ...int) *interp.Tensor {
		return s.operand(backend.Float64, shape, contiguous, finiteValues).t
	}
	bad("cholesky of rank 1", f(3))
	bad("cholesky of 2×3", f(2, 3))
}

func runTriangularSolve(s *suite) {
	p := prims.TriangularSolve
	for _, dt := range s.linalgDTypes(p, prims.TriangularSolveParams{LeftSide: true}, 2) {
		for pk := range 16 {
			params := prims.TriangularSolveParams{Lower: pk&1 != 0, LeftSide: pk&2 != 0, TransposeA: pk&4 != 0, UnitDiagonal: pk&8 != 0}
			for _, shape := range linalgShapes {
				m := shape[len(shape)-1]
				batch := shape[:len(shape)-2]
				for _, k := range []int{1, 3} {
					bshape := append(slices.Clone(batch), m, k)
					if !params.LeftSide {
						bshape = append(slices.Clone(batch), k, m)
					}
					// Junk in the triangle not read (and on the diagonal for
					// a unit diagonal).
					a := s.randomMatrices(dt, shape, 2+float64(m))
					for bi, am := range matsOf(a) {
						for i := range m {
							for j := range m {
								read := i == j && !params.UnitDiagonal || params.Lower && j < i || !params.Lower && j > i
								if !read {
									a.f[bi*m*m+i*m+j] = fround(dt, 1e3+am.at(i, j))
								}
							}
						}
					}
					bv := s.randomMatrices(dt, bshape, 0)
					for _, l := range linalgLayouts(shape) {
						x, y := s.place(a, l), s.place(bv, contiguous)
						if l == strided {
							y = s.place(bv, transposed)
						}
						desc := describe(p.Name, dt, shape, params, "b="+fmtShape(bshape), "a="+l.String())
						s.try(desc, func() {
							got := interp.Bind1(p, params, x.t, y.t)
							if !interp.AvalOf(got).Equal(interp.Aval{Shape: bshape, DType: dt}) {
								s.failf("%s: result %v", desc, got.TypeString())
								return
							}
							xs := matsOf(readTensor(got))
							bs := matsOf(bv)
							for bi, am := range matsOf(a) {
								t := newHmat(m, m)
								for i := range m {
									for j := range m {
										switch {
										case i == j && params.UnitDiagonal:
											t.d[i*m+j] = 1
										case i == j || params.Lower && j < i || !params.Lower && j > i:
											t.d[i*m+j] = am.at(i, j)
										}
									}
								}
								if params.TransposeA {
									t = t.t()
								}
								var res hmat
								if params.LeftSide {
									res = t.mul(xs[bi])
								} else {
									res = xs[bi].mul(t)
								}
								scale := max(t.maxAbs()*xs[bi].maxAbs(), 1)
								s.within(desc, "residual", res.diff(bs[bi]), linalgTol(dt, m)*scale)
							}
						})
					}
				}
			}
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	f64 := backend.Float64
	left := prims.TriangularSolveParams{LeftSide: true}
	bad := func(desc string, params prims.TriangularSolveParams, a, b *interp.Tensor) {
		s.expectError(desc, func() { interp.Bind1(p, params, a, b) })
	}
	bad("triangular_solve of 2×3", left, f(f64, 2, 3), f(f64, 2, 2))
	bad("triangular_solve of 3×3 by 2 rows", left, f(f64, 3, 3), f(f64, 2, 2))
	bad("triangular_solve of 3×3 by 2 columns (right)", prims.TriangularSolveParams{}, f(f64, 3, 3), f(f64, 3, 2))
	bad("triangular_solve of f64 and f32", left, f(f64, 2, 2), f(backend.Float32, 2, 2))
	bad("triangular_solve with other batches", left, f(f64, 2, 2, 2), f(f64, 3, 2, 2))
	bad("triangular_solve of ranks 3 and 2", left, f(f64, 1, 2, 2), f(f64, 2, 2))
}

func runLU(s *suite) {
	p := prims.LU
	for _, dt := range s.linalgDTypes(p, nil, 1) {
		for _, shape := range append(slices.Clone(linalgShapes), []int{4, 4}) {
			n := shape[len(shape)-1]
			for _, diag := range []float64{0, 3} {
				a := s.randomMatrices(dt, shape, diag)
				if len(shape) == 2 && n == 4 {
					// Singular: a zero column.
					for i := range n {
						a.f[i*n+1] = 0
					}
				}
				for _, l := range linalgLayouts(shape) {
					x := s.place(a, l)
					desc := describe(p.Name, dt, shape, fmt.Sprintf("diag+%v", diag), "x="+l.String())
					s.try(desc, func() {
						res := interp.Bind(p, nil, x.t)
						lus, piv, perm := matsOf(readTensor(res[0])), readTensor(res[1]), readTensor(res[2])
						for b, am := range matsOf(a) {
							lu := lus[b]
							L, U, PA := newHmat(n, n), newHmat(n, n), newHmat(n, n)
							pr := seq(n)
							for i := range n {
								j := int(piv.i[b*n+i])
								if j < i || j >= n {
									s.failf("%s: matrix %d: pivot %d is %d", desc, b, i, j)
									return
								}
								pr[i], pr[j] = pr[j], pr[i]
							}
							for i := range n {
								if int(perm.i[b*n+i]) != pr[i] {
									s.failf("%s: matrix %d: permutation %v does not follow the pivots %v", desc, b, perm.i[b*n:(b+1)*n], piv.i[b*n:(b+1)*n])
									return
								}
								for j := range n {
									switch {
									case j < i:
										L.d[i*n+j] = lu.at(i, j)
										if math.Abs(lu.at(i, j)) > 1 {
											s.failf("%s: matrix %d: |L[%d,%d]| = %v > 1 (partial pivoting)", desc, b, i, j, lu.at(i, j))
										}
									case j == i:
										L.d[i*n+j] = 1
										U.d[i*n+j] = lu.at(i, j)
									default:
										U.d[i*n+j] = lu.at(i, j)
									}
									PA.d[i*n+j] = am.at(pr[i], j)
								}
							}
							s.within(desc, "L·U − P·a", L.mul(U).diff(PA), linalgTol(dt, n)*max(am.maxAbs(), 1))
						}
					})
				}
			}
		}
	}
	s.expectError("lu of 2×3", func() {
		interp.Bind(p, nil, s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t)
	})
}

// rectShapes are the stacks of matrices of any shape the cases use.
var rectShapes = [][]int{{0, 0}, {1, 1}, {3, 3}, {4, 3}, {3, 5}, {0, 2}, {2, 0}, {2, 3, 2}, {2, 1, 2, 6}, {12, 7}}

func runQR(s *suite) {
	p := prims.QR
	for _, dt := range s.linalgDTypes(p, nil, 1) {
		for _, shape := range rectShapes {
			m, n := shape[len(shape)-2], shape[len(shape)-1]
			k := min(m, n)
			a := s.randomMatrices(dt, shape, 0)
			for _, l := range linalgLayouts(shape) {
				x := s.place(a, l)
				desc := describe(p.Name, dt, shape, "x="+l.String())
				s.try(desc, func() {
					res := interp.Bind(p, nil, x.t)
					batch := shape[:len(shape)-2]
					if !interp.ShapeEqual(res[0].Shape(), append(slices.Clone(batch), m, k)) || !interp.ShapeEqual(res[1].Shape(), append(slices.Clone(batch), k, n)) {
						s.failf("%s: results %v, %v", desc, res[0].TypeString(), res[1].TypeString())
						return
					}
					qs, rs := matsOf(readTensor(res[0])), matsOf(readTensor(res[1]))
					tol := linalgTol(dt, max(m, n))
					for b, am := range matsOf(a) {
						for i := range k {
							for j := range min(i, n) {
								if rs[b].at(i, j) != 0 {
									s.failf("%s: matrix %d: r[%d,%d] = %v below the diagonal", desc, b, i, j, rs[b].at(i, j))
									return
								}
							}
						}
						s.orthonormalCols(desc, "q", qs[b], tol)
						s.within(desc, "q·r − a", qs[b].mul(rs[b]).diff(am), tol*max(am.maxAbs(), 1))
					}
				})
			}
		}
	}
	s.expectError("qr of rank 1", func() {
		interp.Bind(p, nil, s.operand(backend.Float64, []int{3}, contiguous, finiteValues).t)
	})
}

func runEigh(s *suite) {
	p := prims.Eigh
	for _, dt := range s.linalgDTypes(p, nil, 1) {
		for _, shape := range linalgShapes {
			n := shape[len(shape)-1]
			a := s.randomMatrices(dt, shape, 0)
			for b := range matsOf(a) {
				for i := range n {
					for j := i + 1; j < n; j++ {
						a.f[b*n*n+i*n+j] = 99 // junk: not read
					}
				}
			}
			for _, l := range linalgLayouts(shape) {
				x := s.place(a, l)
				desc := describe(p.Name, dt, shape, "x="+l.String())
				s.try(desc, func() {
					res := interp.Bind(p, nil, x.t)
					w, vs := readTensor(res[0]), matsOf(readTensor(res[1]))
					tol := linalgTol(dt, n)
					for b, am := range matsOf(a) {
						sym := newHmat(n, n)
						for i := range n {
							for j := range n {
								sym.d[i*n+j] = am.at(max(i, j), min(i, j))
							}
						}
						wb := w.f[b*n : (b+1)*n]
						if !slices.IsSorted(wb) {
							s.failf("%s: matrix %d: eigenvalues %v not ascending", desc, b, wb)
						}
						v := vs[b]
						s.orthonormalCols(desc, "v", v, tol)
						vw := newHmat(n, n)
						for i := range n {
							for j := range n {
								vw.d[i*n+j] = v.at(i, j) * wb[j]
							}
						}
						s.within(desc, "a·v − v·diag(w)", sym.mul(v).diff(vw), tol*max(sym.maxAbs(), 1))
					}
				})
			}
		}
		desc := describe(p.Name, dt, []int{2, 2}, "NaN")
		s.try(desc, func() {
			a := newArray(dt, []int{2, 2})
			copy(a.f, []float64{1, 0, math.NaN(), 1})
			for _, r := range interp.Bind(p, nil, s.tensor(a)) {
				for _, v := range readTensor(r).f {
					if !math.IsNaN(v) {
						s.failf("%s: got %v, want NaN", desc, v)
						return
					}
				}
			}
		})
	}
	s.expectError("eigh of 2×3", func() {
		interp.Bind(p, nil, s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t)
	})
}

func runSVD(s *suite) {
	p := prims.SVD
	uv := prims.SVDParams{ComputeUV: true}
	for _, dt := range s.linalgDTypes(p, uv, 1) {
		for _, shape := range rectShapes {
			m, n := shape[len(shape)-2], shape[len(shape)-1]
			k := min(m, n)
			a := s.randomMatrices(dt, shape, 0)
			for _, l := range linalgLayouts(shape) {
				x := s.place(a, l)
				desc := describe(p.Name, dt, shape, "x="+l.String())
				s.try(desc, func() {
					res := interp.Bind(p, uv, x.t)
					vals := interp.Bind(p, prims.SVDParams{}, x.t)
					if len(vals) != 1 {
						s.failf("%s: %d results without vectors, want 1", desc, len(vals))
						return
					}
					sv, us, vts := readTensor(res[0]), matsOf(readTensor(res[1])), matsOf(readTensor(res[2]))
					only := readTensor(vals[0])
					tol := linalgTol(dt, max(m, n))
					for b, am := range matsOf(a) {
						sb := sv.f[b*k : (b+1)*k]
						for i := range k {
							if !(sb[i] >= 0) || i > 0 && sb[i] > sb[i-1] {
								s.failf("%s: matrix %d: singular values %v not descending and ≥ 0", desc, b, sb)
								break
							}
							if d := math.Abs(only.f[b*k+i] - sb[i]); !(d <= tol*max(sb[0], 1)) {
								s.failf("%s: matrix %d: values-only s[%d] = %v, with vectors %v", desc, b, i, only.f[b*k+i], sb[i])
							}
						}
						u, vt := us[b], vts[b]
						s.orthonormalCols(desc, "u", u, tol)
						s.orthonormalCols(desc, "vtᵀ", vt.t(), tol)
						us := newHmat(m, k)
						for i := range m {
							for j := range k {
								us.d[i*k+j] = u.at(i, j) * sb[j]
							}
						}
						s.within(desc, "u·diag(s)·vt − a", us.mul(vt).diff(am), tol*max(am.maxAbs(), 1))
					}
				})
			}
		}
	}
	s.expectError("svd of rank 1", func() {
		interp.Bind(p, uv, s.operand(backend.Float64, []int{3}, contiguous, finiteValues).t)
	})
}
