package optest

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/linalg"
)

// Registry entries of package linalg. References are gonum's (mat),
// matrix by matrix over the batch. Samples are well conditioned:
// diagonally dominant for solves and determinants, SPD for Cholesky,
// symmetric with distinct eigenvalues for Eigh, distinct singular values
// for SVD. Functions of eigenvectors and singular vectors are
// gauge-invariant (v·D·vᵀ for a fixed diagonal D), since each vector's
// sign is arbitrary.

// linalgTol is the tolerance of the linalg entries: float32 results are
// computed in float64 and rounded, so they agree with the float64
// reference to a few float32 ulps (and absolutely near zero).
const linalgTol = 2e-6

// hostMats splits h [..., m, n] into its matrices.
func hostMats(h Host) (batch []int, ms []*mat.Dense) {
	r := len(h.Shape)
	m, n := h.Shape[r-2], h.Shape[r-1]
	batch = h.Shape[:r-2]
	cnt := h.Size() / max(m*n, 1)
	if m*n == 0 {
		cnt = 1
		for _, d := range batch {
			cnt *= d
		}
	}
	for b := range cnt {
		if m == 0 || n == 0 {
			ms = append(ms, nil)
			continue
		}
		ms = append(ms, mat.NewDense(m, n, append([]float64{}, h.Data[b*m*n:(b+1)*m*n]...)))
	}
	return batch, ms
}

// fromMats stacks matrices (each rows×cols; nil for empty ones) into a
// Host of dtype d and shape batch + [rows, cols].
func fromMats(d peel.DType, batch []int, rows, cols int, ms []*mat.Dense) Host {
	h := Host{Shape: append(append([]int{}, batch...), rows, cols), DType: d}
	h.Data = make([]float64, 0, len(ms)*rows*cols)
	for _, m := range ms {
		if m == nil {
			h.Data = append(h.Data, make([]float64, rows*cols)...)
			continue
		}
		for i := range rows {
			for j := range cols {
				h.Data = append(h.Data, Round(d, m.At(i, j)))
			}
		}
	}
	return h
}

// fromVecs stacks vectors into batch + [n].
func fromVecs(d peel.DType, batch []int, n int, vs [][]float64) Host {
	h := Host{Shape: append(append([]int{}, batch...), n), DType: d}
	h.Data = make([]float64, 0, len(vs)*n)
	for _, v := range vs {
		for _, x := range v {
			h.Data = append(h.Data, Round(d, x))
		}
	}
	return h
}

// fromScalars stacks one value per matrix into batch.
func fromScalars(d peel.DType, batch []int, v []float64) Host {
	h := Host{Shape: append([]int{}, batch...), DType: d, Data: make([]float64, len(v))}
	for i, x := range v {
		h.Data[i] = Round(d, x)
	}
	return h
}

// perMatrix applies f to each matrix of a (its rows and columns given for
// empty ones) and stacks the rows×cols results.
func perMatrix(a Host, rows, cols int, f func(m *mat.Dense) *mat.Dense) Host {
	batch, ms := hostMats(a)
	out := make([]*mat.Dense, len(ms))
	for i, m := range ms {
		if m != nil {
			out[i] = f(m)
		}
	}
	return fromMats(a.DType, batch, rows, cols, out)
}

// perMatrix2 applies f to the matrices of a and b (equal batches).
func perMatrix2(a, b Host, rows, cols int, f func(a, b *mat.Dense) *mat.Dense) Host {
	batch, as := hostMats(a)
	_, bs := hostMats(b)
	out := make([]*mat.Dense, len(as))
	for i := range as {
		if rows*cols > 0 {
			out[i] = f(as[i], bs[i])
		}
	}
	return fromMats(peel.PromoteTypes(a.DType, b.DType), batch, rows, cols, out)
}

func lastTwo(h Host) (int, int) { return h.Shape[len(h.Shape)-2], h.Shape[len(h.Shape)-1] }

// wellConditioned returns random matrices [..., n, n] in [-1, 1) plus
// n·I (diagonally dominant).
func wellConditioned(g *Gen, d peel.DType, shape ...int) *T {
	n := shape[len(shape)-1]
	return peel.Add(g.Tensor(d, -1, 1, shape...), peel.Mul(peel.Eye(d, n), float64(n)))
}

// spd returns symmetric positive-definite matrices m·mᵀ + n·I.
func spd(g *Gen, d peel.DType, shape ...int) *T {
	n := shape[len(shape)-1]
	m := g.Tensor(d, -1, 1, shape...)
	r := m.Rank()
	return peel.Add(peel.MatMul(m, peel.MoveAxis(m, r-1, r-2)), peel.Mul(peel.Eye(d, n), float64(n)))
}

// symmetric returns random symmetric matrices (distinct eigenvalues
// almost surely; the samples' gaps are checked by the tests).
func symmetric(g *Gen, d peel.DType, shape ...int) *T {
	m := g.Tensor(d, -2, 2, shape...)
	r := m.Rank()
	return peel.Mul(peel.Add(m, peel.MoveAxis(m, r-1, r-2)), 0.5)
}

// weighted returns v·diag(1, 2, …, k)·vᵀ for vectors v [..., m, k]: a
// function of v's columns that does not depend on their signs.
func weighted(v *T) *T {
	r := v.Rank()
	k := v.Shape()[r-1]
	w := peel.Arange(v.DType(), 1, float64(k)+1, 1)
	return peel.MatMul(peel.Mul(v, w), peel.MoveAxis(v, r-1, r-2))
}

func weightedRef(v *mat.Dense) *mat.Dense {
	m, k := v.Dims()
	vw := mat.NewDense(m, k, nil)
	for i := range m {
		for j := range k {
			vw.Set(i, j, v.At(i, j)*float64(j+1))
		}
	}
	var out mat.Dense
	out.Mul(vw, v.T())
	return &out
}

// triangle returns op(a) as triangular_solve reads it.
func triangle(a *mat.Dense, lower, transpose, unit bool) *mat.Dense {
	n, _ := a.Dims()
	t := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			keep := (lower && j < i) || (!lower && j > i)
			switch {
			case i == j && unit:
				t.Set(i, j, 1)
			case i == j || keep:
				t.Set(i, j, a.At(i, j))
			}
		}
	}
	if transpose {
		return mat.DenseCopyOf(t.T())
	}
	return t
}

func solveRef(a, b *mat.Dense) *mat.Dense {
	var x mat.Dense
	if err := x.Solve(a, b); err != nil {
		panic(err)
	}
	return &x
}

func linalgSolveOps() []Op {
	f32, f64 := peel.Float32, peel.Float64
	return []Op{
		{
			Name: "linalg.Solve",
			F:    func(a []*T) *T { return linalg.Solve(a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(40)
				return []Sample{
					{Name: "f64[3,3]·[3,2]", Args: []*T{wellConditioned(g, f64, 3, 3), g.Tensor(f64, -2, 2, 3, 2)}},
					{Name: "f64[2,4,4]·[2,4,1]", Args: []*T{wellConditioned(g, f64, 2, 4, 4), g.Tensor(f64, -2, 2, 2, 4, 1)}},
					{Name: "f64[3,3]·[3]", Args: []*T{wellConditioned(g, f64, 3, 3), g.Tensor(f64, -2, 2, 3)}},
					{Name: "f32[4,4]·[4,3]", Args: []*T{wellConditioned(g, f32, 4, 4), g.Tensor(f32, -2, 2, 4, 3)}},
					{Name: "f64[1,1]·[1,1]", Args: []*T{wellConditioned(g, f64, 1, 1), g.Tensor(f64, -2, 2, 1, 1)}},
					{Name: "empty", Args: []*T{wellConditioned(g, f64, 0, 0), g.Tensor(f64, -2, 2, 0, 2)}},
				}
			},
			Ref: func(a []Host) Host {
				b := a[1]
				vector := len(b.Shape) == 1
				if vector {
					b = Host{Shape: []int{b.Shape[0], 1}, DType: b.DType, Data: b.Data}
				}
				_, k := lastTwo(b)
				n, _ := lastTwo(a[0])
				out := perMatrix2(a[0], b, n, k, solveRef)
				if vector {
					out.Shape = out.Shape[:1]
				}
				return out
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			Name: "linalg.Inv",
			F:    func(a []*T) *T { return linalg.Inv(a[0]) },
			Samples: func() []Sample {
				g := NewGen(41)
				return []Sample{
					{Name: "f64[3,3]", Args: []*T{wellConditioned(g, f64, 3, 3)}},
					{Name: "f64[2,4,4]", Args: []*T{wellConditioned(g, f64, 2, 4, 4)}},
					{Name: "f32[3,3]", Args: []*T{wellConditioned(g, f32, 3, 3)}},
					{Name: "empty", Args: []*T{wellConditioned(g, f64, 2, 0, 0)}},
				}
			},
			Ref: func(a []Host) Host {
				n, _ := lastTwo(a[0])
				return perMatrix(a[0], n, n, func(m *mat.Dense) *mat.Dense {
					var x mat.Dense
					if err := x.Inverse(m); err != nil {
						panic(err)
					}
					return &x
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			Name: "linalg.Det",
			F:    func(a []*T) *T { return linalg.Det(a[0]) },
			Samples: func() []Sample {
				g := NewGen(42)
				return []Sample{
					{Name: "f64[3,3]", Args: []*T{wellConditioned(g, f64, 3, 3)}},
					{Name: "f64[2,4,4]", Args: []*T{wellConditioned(g, f64, 2, 4, 4)}},
					{Name: "f64[3,3] random", Args: []*T{g.Tensor(f64, -2, 2, 3, 3)}},
					{Name: "f32[3,3]", Args: []*T{wellConditioned(g, f32, 3, 3)}},
					{Name: "f64[1,1]", Args: []*T{g.Tensor(f64, -2, 2, 1, 1)}},
					{Name: "empty", Args: []*T{g.Tensor(f64, -2, 2, 2, 0, 0)}},
				}
			},
			Ref: func(a []Host) Host {
				batch, ms := hostMats(a[0])
				v := make([]float64, len(ms))
				for i, m := range ms {
					v[i] = 1
					if m != nil {
						v[i] = mat.Det(m)
					}
				}
				return fromScalars(a[0].DType, batch, v)
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		slogdetOp("sign", 0, 43),
		slogdetOp("logabsdet", 1, 44),
		{
			Name: "linalg.Cholesky",
			F:    func(a []*T) *T { return linalg.Cholesky(a[0]) },
			Samples: func() []Sample {
				g := NewGen(45)
				return []Sample{
					{Name: "f64[3,3]", Args: []*T{spd(g, f64, 3, 3)}},
					{Name: "f64[2,4,4]", Args: []*T{spd(g, f64, 2, 4, 4)}},
					{Name: "f32[3,3]", Args: []*T{spd(g, f32, 3, 3)}},
					{Name: "f64[1,1]", Args: []*T{spd(g, f64, 1, 1)}},
					{Name: "empty", Args: []*T{spd(g, f64, 0, 0)}},
				}
			},
			Ref: func(a []Host) Host {
				n, _ := lastTwo(a[0])
				return perMatrix(a[0], n, n, func(m *mat.Dense) *mat.Dense {
					s := mat.NewSymDense(n, nil)
					for i := range n {
						for j := range n {
							s.SetSym(i, j, (m.At(i, j)+m.At(j, i))/2)
						}
					}
					var c mat.Cholesky
					if !c.Factorize(s) {
						panic("not positive definite")
					}
					var l mat.TriDense
					c.LTo(&l)
					return mat.DenseCopyOf(&l)
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		triSolveOp(true, true, false, false, 46),
		triSolveOp(false, true, true, false, 47),
		triSolveOp(true, false, false, true, 48),
		triSolveOp(false, false, true, true, 49),
		{
			Name: "linalg.CholeskySolve",
			F:    func(a []*T) *T { return linalg.CholeskySolve(a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(50)
				return []Sample{
					{Name: "f64[3,3]", Args: []*T{wellConditioned(g, f64, 3, 3), g.Tensor(f64, -2, 2, 3, 2)}},
					{Name: "f64[2,4,4]", Args: []*T{wellConditioned(g, f64, 2, 4, 4), g.Tensor(f64, -2, 2, 2, 4, 3)}},
					{Name: "f32[3,3]", Args: []*T{wellConditioned(g, f32, 3, 3), g.Tensor(f32, -2, 2, 3, 1)}},
					{Name: "empty", Args: []*T{wellConditioned(g, f64, 2, 2), g.Tensor(f64, -2, 2, 2, 0)}},
				}
			},
			Ref: func(a []Host) Host {
				rows, cols := lastTwo(a[1])
				return perMatrix2(a[0], a[1], rows, cols, func(am, b *mat.Dense) *mat.Dense {
					l := triangle(am, true, false, false)
					var llt mat.Dense
					llt.Mul(l, l.T())
					return solveRef(&llt, b)
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
	}
}

func slogdetOp(which string, k int, seed uint64) Op {
	f32, f64 := peel.Float32, peel.Float64
	return Op{
		Name: "linalg.Slogdet/" + which,
		F: func(a []*T) *T {
			s, l := linalg.Slogdet(a[0])
			return []*T{s, l}[k]
		},
		Samples: func() []Sample {
			g := NewGen(seed)
			return []Sample{
				{Name: "f64[3,3]", Args: []*T{g.Tensor(f64, -2, 2, 3, 3)}},
				{Name: "f64[2,4,4]", Args: []*T{g.Tensor(f64, -2, 2, 2, 4, 4)}},
				{Name: "f32[3,3]", Args: []*T{wellConditioned(g, f32, 3, 3)}},
				{Name: "empty", Args: []*T{g.Tensor(f64, -2, 2, 0, 0)}},
			}
		},
		Ref: func(a []Host) Host {
			batch, ms := hostMats(a[0])
			v := make([]float64, len(ms))
			for i, m := range ms {
				if m == nil {
					v[i] = []float64{1, 0}[k]
					continue
				}
				l, s := mat.LogDet(m)
				v[i] = []float64{s, l}[k]
			}
			return fromScalars(a[0].DType, batch, v)
		},
		Tol:            linalgTol,
		Differentiable: true,
	}
}

func triSolveOp(lower, left, transpose, unit bool, seed uint64) Op {
	f32, f64 := peel.Float32, peel.Float64
	bshape := func(batch []int, m, n int) []int {
		if left {
			return append(append([]int{}, batch...), m, n)
		}
		return append(append([]int{}, batch...), n, m)
	}
	return Op{
		Name: fmt.Sprintf("linalg.TriangularSolve/lower=%v,left=%v,transpose=%v,unit=%v", lower, left, transpose, unit),
		F: func(a []*T) *T {
			tri := linalg.Upper
			if lower {
				tri = linalg.Lower
			}
			if !left {
				tri |= linalg.RightSide
			}
			if transpose {
				tri |= linalg.Transposed
			}
			if unit {
				tri |= linalg.UnitDiagonal
			}
			return linalg.TriangularSolve(a[0], a[1], tri)
		},
		Samples: func() []Sample {
			g := NewGen(seed)
			return []Sample{
				{Name: "f64[3,3]", Args: []*T{wellConditioned(g, f64, 3, 3), g.Tensor(f64, -2, 2, bshape(nil, 3, 2)...)}},
				{Name: "f64[2,4,4]", Args: []*T{wellConditioned(g, f64, 2, 4, 4), g.Tensor(f64, -2, 2, bshape([]int{2}, 4, 3)...)}},
				{Name: "f32[3,3]", Args: []*T{wellConditioned(g, f32, 3, 3), g.Tensor(f32, -2, 2, bshape(nil, 3, 1)...)}},
				{Name: "empty", Args: []*T{wellConditioned(g, f64, 2, 2), g.Tensor(f64, -2, 2, bshape(nil, 2, 0)...)}},
			}
		},
		Ref: func(a []Host) Host {
			rows, cols := lastTwo(a[1])
			return perMatrix2(a[0], a[1], rows, cols, func(am, b *mat.Dense) *mat.Dense {
				t := triangle(am, lower, transpose, unit)
				if left {
					return solveRef(t, b)
				}
				return mat.DenseCopyOf(solveRef(mat.DenseCopyOf(t.T()), mat.DenseCopyOf(b.T())).T())
			})
		},
		Tol:            linalgTol,
		Differentiable: true,
	}
}

func linalgDecompOps() []Op {
	f32, f64 := peel.Float32, peel.Float64
	qrSamples := func(seed uint64) func() []Sample {
		return func() []Sample {
			g := NewGen(seed)
			return []Sample{
				{Name: "f64[4,3]", Args: []*T{g.Tensor(f64, -2, 2, 4, 3)}},
				{Name: "f64[3,3]", Args: []*T{wellConditioned(g, f64, 3, 3)}},
				{Name: "f64[2,5,2]", Args: []*T{g.Tensor(f64, -2, 2, 2, 5, 2)}},
				{Name: "f64[2,4]", Args: []*T{g.Tensor(f64, -2, 2, 2, 4)}},
				{Name: "f32[4,3]", Args: []*T{g.Tensor(f32, -2, 2, 4, 3)}},
				{Name: "empty", Args: []*T{g.Tensor(f64, -2, 2, 3, 0)}},
			}
		}
	}
	qrRef := func(k int) func(a []Host) Host {
		return func(a []Host) Host {
			m, n := lastTwo(a[0])
			kk := min(m, n)
			rows, cols := m, kk
			if k == 1 {
				rows, cols = kk, n
			}
			return perMatrix(a[0], rows, cols, func(x *mat.Dense) *mat.Dense {
				// gonum's QR needs m ≥ n; for m < n the Householder
				// reflections are those of the leading m columns, and
				// r = qᵀ·a.
				var qr mat.QR
				qr.Factorize(x.Slice(0, m, 0, kk))
				var q, r mat.Dense
				qr.QTo(&q)
				if m >= n {
					qr.RTo(&r)
				} else {
					r.Mul(q.T(), x)
					for i := range m {
						for j := range i {
							r.Set(i, j, 0)
						}
					}
				}
				if k == 0 {
					return mat.DenseCopyOf(q.Slice(0, m, 0, kk))
				}
				return mat.DenseCopyOf(r.Slice(0, kk, 0, n))
			})
		}
	}
	eighSamples := func(seed uint64) func() []Sample {
		return func() []Sample {
			g := NewGen(seed)
			return []Sample{
				{Name: "f64[3,3]", Args: []*T{symmetric(g, f64, 3, 3)}},
				{Name: "f64[2,4,4]", Args: []*T{symmetric(g, f64, 2, 4, 4)}},
				{Name: "f32[3,3]", Args: []*T{symmetric(g, f32, 3, 3)}},
				{Name: "f64[1,1]", Args: []*T{symmetric(g, f64, 1, 1)}},
				{Name: "empty", Args: []*T{symmetric(g, f64, 0, 0)}},
			}
		}
	}
	eigen := func(m *mat.Dense) ([]float64, *mat.Dense) {
		n, _ := m.Dims()
		s := mat.NewSymDense(n, nil)
		for i := range n {
			for j := range n {
				s.SetSym(i, j, (m.At(i, j)+m.At(j, i))/2)
			}
		}
		var e mat.EigenSym
		if !e.Factorize(s, true) {
			panic("eigen")
		}
		var v mat.Dense
		e.VectorsTo(&v)
		return e.Values(nil), &v
	}
	svdSamples := func(seed uint64) func() []Sample {
		return func() []Sample {
			g := NewGen(seed)
			return []Sample{
				{Name: "f64[3,3]", Args: []*T{g.Tensor(f64, -2, 2, 3, 3)}},
				{Name: "f64[4,2]", Args: []*T{g.Tensor(f64, -2, 2, 4, 2)}},
				{Name: "f64[2,5]", Args: []*T{g.Tensor(f64, -2, 2, 2, 5)}},
				{Name: "f64[2,3,4]", Args: []*T{g.Tensor(f64, -2, 2, 2, 3, 4)}},
				{Name: "f32[3,2]", Args: []*T{g.Tensor(f32, -2, 2, 3, 2)}},
				{Name: "empty", Args: []*T{g.Tensor(f64, -2, 2, 0, 3)}},
			}
		}
	}
	thin := func(m *mat.Dense) ([]float64, *mat.Dense, *mat.Dense) {
		var s mat.SVD
		if !s.Factorize(m, mat.SVDThin) {
			panic("svd")
		}
		var u, v mat.Dense
		s.UTo(&u)
		s.VTo(&v)
		return s.Values(nil), &u, &v
	}
	svdVals := func(a []Host) Host {
		m, n := lastTwo(a[0])
		batch, ms := hostMats(a[0])
		vs := make([][]float64, len(ms))
		for i, x := range ms {
			if x != nil {
				vs[i], _, _ = thin(x)
			}
		}
		return fromVecs(a[0].DType, batch, min(m, n), vs)
	}
	return []Op{
		{Name: "linalg.QR/q", F: func(a []*T) *T { q, _ := linalg.QR(a[0]); return q }, Samples: qrSamples(50), Ref: qrRef(0), Tol: linalgTol, Differentiable: true},
		{Name: "linalg.QR/r", F: func(a []*T) *T { _, r := linalg.QR(a[0]); return r }, Samples: qrSamples(51), Ref: qrRef(1), Tol: linalgTol, Differentiable: true},
		{
			Name:    "linalg.Eigh/w",
			F:       func(a []*T) *T { w, _ := linalg.Eigh(a[0]); return w },
			Samples: eighSamples(52),
			Ref: func(a []Host) Host {
				n, _ := lastTwo(a[0])
				batch, ms := hostMats(a[0])
				vs := make([][]float64, len(ms))
				for i, m := range ms {
					if m != nil {
						vs[i], _ = eigen(m)
					}
				}
				return fromVecs(a[0].DType, batch, n, vs)
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			Name:    "linalg.Eigh/v·diag(1…n)·vᵀ",
			F:       func(a []*T) *T { _, v := linalg.Eigh(a[0]); return weighted(v) },
			Samples: eighSamples(53),
			Ref: func(a []Host) Host {
				n, _ := lastTwo(a[0])
				return perMatrix(a[0], n, n, func(m *mat.Dense) *mat.Dense {
					_, v := eigen(m)
					return weightedRef(v)
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			Name:    "linalg.Eigvalsh",
			F:       func(a []*T) *T { return linalg.Eigvalsh(a[0]) },
			Samples: eighSamples(59),
			Ref: func(a []Host) Host {
				n, _ := lastTwo(a[0])
				batch, ms := hostMats(a[0])
				vs := make([][]float64, len(ms))
				for i, m := range ms {
					if m != nil {
						vs[i], _ = eigen(m)
					}
				}
				return fromVecs(a[0].DType, batch, n, vs)
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			// The packed factors (gonum's LU pivots as LAPACK does).
			Name: "linalg.LU/lu",
			F:    func(a []*T) *T { lu, _, _ := linalg.LU(a[0]); return lu },
			Samples: func() []Sample {
				g := NewGen(65)
				return []Sample{
					{Name: "f64[3,3]", Args: []*T{g.Tensor(f64, -2, 2, 3, 3)}},
					{Name: "f64[2,4,4]", Args: []*T{g.Tensor(f64, -2, 2, 2, 4, 4)}},
					{Name: "f32[3,3]", Args: []*T{wellConditioned(g, f32, 3, 3)}},
					{Name: "empty", Args: []*T{g.Tensor(f64, -2, 2, 0, 0)}},
				}
			},
			Ref: func(a []Host) Host {
				n, _ := lastTwo(a[0])
				return perMatrix(a[0], n, n, func(m *mat.Dense) *mat.Dense {
					var lu mat.LU
					lu.Factorize(m)
					var l, u mat.TriDense
					lu.LTo(&l)
					lu.UTo(&u)
					out := mat.DenseCopyOf(&u)
					for i := range n {
						for j := range i {
							out.Set(i, j, l.At(i, j))
						}
					}
					return out
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{Name: "linalg.SVDVals", F: func(a []*T) *T { return linalg.SVDVals(a[0]) }, Samples: svdSamples(54), Ref: svdVals, Tol: linalgTol, Differentiable: true},
		{Name: "linalg.SVD/s", F: func(a []*T) *T { _, s, _ := linalg.SVD(a[0]); return s }, Samples: svdSamples(55), Ref: svdVals, Tol: linalgTol, Differentiable: true},
		{
			Name: "linalg.SVD/u·diag(s)·vt",
			F: func(a []*T) *T {
				u, s, vt := linalg.SVD(a[0])
				return peel.MatMul(peel.Mul(u, peel.Unsqueeze(s, s.Rank()-1)), vt)
			},
			Samples: svdSamples(56),
			Ref: func(a []Host) Host {
				m, n := lastTwo(a[0])
				return perMatrix(a[0], m, n, func(x *mat.Dense) *mat.Dense { return x })
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			Name:    "linalg.SVD/u·diag(1…k)·uᵀ",
			F:       func(a []*T) *T { u, _, _ := linalg.SVD(a[0]); return weighted(u) },
			Samples: svdSamples(57),
			Ref: func(a []Host) Host {
				m, _ := lastTwo(a[0])
				return perMatrix(a[0], m, m, func(x *mat.Dense) *mat.Dense {
					_, u, _ := thin(x)
					return weightedRef(u)
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
		{
			Name: "linalg.SVD/v·diag(1…k)·vᵀ",
			F: func(a []*T) *T {
				_, _, vt := linalg.SVD(a[0])
				r := vt.Rank()
				return weighted(peel.MoveAxis(vt, r-1, r-2))
			},
			Samples: svdSamples(58),
			Ref: func(a []Host) Host {
				_, n := lastTwo(a[0])
				return perMatrix(a[0], n, n, func(x *mat.Dense) *mat.Dense {
					_, _, v := thin(x)
					return weightedRef(v)
				})
			},
			Tol:            linalgTol,
			Differentiable: true,
		},
	}
}

// linalgPkgOps are the entries of package linalg.
func linalgPkgOps() []Op {
	ops := linalgSolveOps()
	ops = append(ops, linalgDecompOps()...)
	return append(ops, linalgMoreOps()...)
}

// pinvRef is the pseudo-inverse from gonum's SVD, with Pinv's cutoff.
func pinvRef(a *mat.Dense) *mat.Dense {
	m, n := a.Dims()
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		panic("svd")
	}
	s := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	cut := 10 * float64(max(m, n)) * 0x1p-52 * s[0]
	k := len(s)
	vs := mat.NewDense(n, k, nil)
	for i := range n {
		for j := range k {
			if s[j] > cut {
				vs.Set(i, j, v.At(i, j)/s[j])
			}
		}
	}
	var p mat.Dense
	p.Mul(vs, u.T())
	return &p
}

// matrixNormRef is the matrix norm of order ord by its definition.
func matrixNormRef(a *mat.Dense, ord linalg.MatrixOrd) float64 {
	m, n := a.Dims()
	colSums, rowSums := make([]float64, n), make([]float64, m)
	fro := 0.0
	for i := range m {
		for j := range n {
			v := a.At(i, j)
			colSums[j] += math.Abs(v)
			rowSums[i] += math.Abs(v)
			fro += v * v
		}
	}
	var sv []float64
	if m > 0 && n > 0 {
		var svd mat.SVD
		svd.Factorize(a, mat.SVDNone)
		sv = svd.Values(nil)
	}
	maxOf := func(x []float64) float64 { return slicesMax(x) }
	minOf := func(x []float64) float64 { return -slicesMax(negAll(x)) }
	switch ord {
	case linalg.Fro:
		return math.Sqrt(fro)
	case linalg.Nuc:
		t := 0.0
		for _, v := range sv {
			t += v
		}
		return t
	case linalg.OneNorm:
		return maxOf(colSums)
	case linalg.NegOneNorm:
		return minOf(colSums)
	case linalg.InfNorm:
		return maxOf(rowSums)
	case linalg.NegInfNorm:
		return minOf(rowSums)
	case linalg.Spectral:
		return sv[0]
	case linalg.NegSpectral:
		return sv[len(sv)-1]
	}
	panic("order")
}

func slicesMax(x []float64) float64 {
	v := math.Inf(-1)
	for _, e := range x {
		v = max(v, e)
	}
	return v
}

func negAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = -v
	}
	return out
}

// vectorNormRef is the vector norm of order ord of v.
func vectorNormRef(v []float64, ord float64) float64 {
	switch {
	case math.IsInf(ord, 1):
		return slicesMax(absAll(v))
	case math.IsInf(ord, -1):
		return -slicesMax(negAll(absAll(v)))
	case ord == 0:
		c := 0.0
		for _, x := range v {
			if x != 0 {
				c++
			}
		}
		return c
	}
	s := 0.0
	for _, x := range v {
		s += math.Pow(math.Abs(x), ord)
	}
	return math.Pow(s, 1/ord)
}

func absAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}

func linalgMoreOps() []Op {
	f32, f64 := peel.Float32, peel.Float64
	var ops []Op
	ops = append(ops, Op{
		Name: "linalg.Pinv",
		F:    func(a []*T) *T { return linalg.Pinv(a[0]) },
		Samples: func() []Sample {
			g := NewGen(60)
			return []Sample{
				{Name: "f64[4,3]", Args: []*T{g.Tensor(f64, -2, 2, 4, 3)}},
				{Name: "f64[2,5]", Args: []*T{g.Tensor(f64, -2, 2, 2, 5)}},
				{Name: "f64[2,3,3]", Args: []*T{wellConditioned(g, f64, 2, 3, 3)}},
				{Name: "identity", Args: []*T{peel.Eye(f64, 3)}},
				{Name: "f32[3,2]", Args: []*T{g.Tensor(f32, -2, 2, 3, 2)}},
				{Name: "empty", Args: []*T{g.Tensor(f64, -2, 2, 0, 3)}},
			}
		},
		Ref: func(a []Host) Host {
			m, n := lastTwo(a[0])
			return perMatrix(a[0], n, m, pinvRef)
		},
		Tol:            linalgTol,
		Differentiable: true,
	}, Op{
		Name: "linalg.Lstsq",
		F:    func(a []*T) *T { return linalg.Lstsq(a[0], a[1]) },
		Samples: func() []Sample {
			g := NewGen(61)
			return []Sample{
				{Name: "f64[5,3]·[5,2]", Args: []*T{g.Tensor(f64, -2, 2, 5, 3), g.Tensor(f64, -2, 2, 5, 2)}},
				{Name: "f64[2,5]·[2,1]", Args: []*T{g.Tensor(f64, -2, 2, 2, 5), g.Tensor(f64, -2, 2, 2, 1)}},
				{Name: "f64[2,4,2]·[2,4,3]", Args: []*T{g.Tensor(f64, -2, 2, 2, 4, 2), g.Tensor(f64, -2, 2, 2, 4, 3)}},
				{Name: "f32[4,2]·[4,1]", Args: []*T{g.Tensor(f32, -2, 2, 4, 2), g.Tensor(f32, -2, 2, 4, 1)}},
			}
		},
		Ref: func(a []Host) Host {
			_, n := lastTwo(a[0])
			_, k := lastTwo(a[1])
			return perMatrix2(a[0], a[1], n, k, func(am, b *mat.Dense) *mat.Dense {
				var x mat.Dense
				if err := x.Solve(am, b); err != nil {
					panic(err)
				}
				return &x
			})
		},
		Tol:            linalgTol,
		Differentiable: true,
	}, Op{
		Name: "linalg.MatrixExp",
		F:    func(a []*T) *T { return linalg.MatrixExp(a[0]) },
		Samples: func() []Sample {
			g := NewGen(62)
			return []Sample{
				{Name: "f64[3,3]", Args: []*T{g.Tensor(f64, -1, 1, 3, 3)}},
				{Name: "f64[2,3,3] scaled", Args: []*T{peel.Mul(g.Tensor(f64, -1, 1, 2, 3, 3), 4.0)}},
				{Name: "f64[2,2] rotation", Args: []*T{peel.FromFloat64s([]float64{0.1, 7, -7, 0.2}, 2, 2)}},
				{Name: "f64[1,1]", Args: []*T{g.Tensor(f64, -1, 1, 1, 1)}},
				{Name: "f32[3,3]", Args: []*T{g.Tensor(f32, -1, 1, 3, 3)}},
				{Name: "empty", Args: []*T{g.Tensor(f64, -1, 1, 0, 0)}},
			}
		},
		Ref: func(a []Host) Host {
			n, _ := lastTwo(a[0])
			return perMatrix(a[0], n, n, func(m *mat.Dense) *mat.Dense {
				var e mat.Dense
				e.Exp(m)
				return &e
			})
		},
		Tol:            1e-5,
		Differentiable: true,
	})
	for _, ord := range []linalg.MatrixOrd{linalg.Fro, linalg.Nuc, linalg.OneNorm, linalg.NegOneNorm, linalg.Spectral, linalg.NegSpectral, linalg.InfNorm, linalg.NegInfNorm} {
		ops = append(ops, Op{
			Name: "linalg.MatrixNorm/" + string(ord),
			F:    func(a []*T) *T { return linalg.MatrixNorm(a[0], ord) },
			Samples: func() []Sample {
				g := NewGen(63)
				return []Sample{
					{Name: "f64[3,4]", Args: []*T{g.Tensor(f64, -2, 2, 3, 4)}},
					{Name: "f64[2,3,2]", Args: []*T{g.Tensor(f64, -2, 2, 2, 3, 2)}},
					{Name: "f32[3,3]", Args: []*T{g.Tensor(f32, -2, 2, 3, 3)}},
					{Name: "i64[2,2]", Args: []*T{g.Tensor(peel.Int64, -3, 3, 2, 2)}},
				}
			},
			Ref: func(a []Host) Host {
				batch, ms := hostMats(a[0])
				v := make([]float64, len(ms))
				for i, m := range ms {
					v[i] = matrixNormRef(m, ord)
				}
				d := a[0].DType
				if !d.IsFloat() {
					d = f64
				}
				return fromScalars(d, batch, v)
			},
			Tol:            linalgTol,
			Differentiable: true,
		})
	}
	for _, c := range []struct {
		ord  float64
		axes []int
	}{{1, nil}, {math.Inf(1), nil}, {math.Inf(-1), []int{1}}, {0, []int{0}}, {3, []int{1}}, {0.5, nil}, {-1, []int{0}}, {2, []int{1}}} {
		ops = append(ops, Op{
			Name: fmt.Sprintf("linalg.VectorNorm/ord=%v,axes=%v", c.ord, c.axes),
			F:    func(a []*T) *T { return linalg.VectorNorm(a[0], c.ord, c.axes...) },
			Samples: func() []Sample {
				g := NewGen(64)
				return []Sample{
					{Name: "f64[3,4]", Args: []*T{g.Tensor(f64, -2, 2, 3, 4)}},
					{Name: "f32[2,5]", Args: []*T{g.Tensor(f32, -2, 2, 2, 5)}},
					{Name: "i64[2,3]", Args: []*T{g.Tensor(peel.Int64, -3, 3, 2, 3)}},
				}
			},
			Ref: func(a []Host) Host {
				x := a[0]
				d := x.DType
				if !d.IsFloat() {
					d = f64
				}
				if c.axes == nil {
					return Host{Shape: []int{}, DType: d, Data: []float64{Round(d, vectorNormRef(x.Data, c.ord))}}
				}
				ax := c.axes[0]
				outShape := []int{x.Shape[1-ax]}
				out := Host{Shape: outShape, DType: d, Data: make([]float64, outShape[0])}
				for i := range outShape[0] {
					var v []float64
					for j := range x.Shape[ax] {
						idx := []int{i, j}
						if ax == 0 {
							idx = []int{j, i}
						}
						v = append(v, x.At(idx))
					}
					out.Data[i] = Round(d, vectorNormRef(v, c.ord))
				}
				return out
			},
			Tol:            linalgTol,
			Differentiable: true,
		})
	}
	return ops
}
