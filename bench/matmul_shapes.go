package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
)

// matShape is a matrix product's shape: batch products of m×k · k×n
// (batch 1: a plain product of two matrices).
type matShape struct{ batch, m, k, n int }

func (s matShape) name(dt peel.DType) string {
	b := ""
	if s.batch > 1 {
		b = fmt.Sprintf("b%d_", s.batch)
	}
	return fmt.Sprintf("matmul_%s%dx%dx%d_%v", b, s.m, s.k, s.n, dt)
}

func (s matShape) flops() float64 { return 2 * float64(s.batch*s.m*s.k*s.n) }

// mlpMatShapes are the products of the MLP workloads (a 784-128 layer on
// a batch of 64, a 256-10 layer on a batch of 128), plain and batched 8
// ways (an ensemble, or per-example products under Vmap).
var mlpMatShapes = []matShape{{1, 64, 784, 128}, {1, 128, 256, 10}, {8, 64, 784, 128}, {8, 128, 256, 10}}

// matmulShapeWorkloads are the MLP-shaped products, f32 and f64, with
// peel.MatMul and with gonum's Gemm called directly (a loop of Gemm
// calls for a batch).
func matmulShapeWorkloads() []Workload {
	var ws []Workload
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, s := range mlpMatShapes {
			ws = append(ws, matmulShape(s, dt, false), matmulShape(s, dt, true))
		}
	}
	return ws
}

func matmulShape(s matShape, dt peel.DType, ref bool) Workload {
	w := Workload{
		Name: s.name(dt), Impl: "peel",
		Doc:  fmt.Sprintf("%d×%d · %d×%d %v matrix product", s.m, s.k, s.k, s.n, dt),
		Unit: "GFLOPS", Metric: func(ns float64) float64 { return s.flops() / ns },
	}
	if s.batch > 1 {
		w.Doc = fmt.Sprintf("%d batched ", s.batch) + w.Doc + "s"
	}
	if ref {
		w.Name += "_gonum"
		w.Impl = cpu.BLAS()
		w.Doc += " with " + dt.String()[:1] + "gemm called directly"
	}
	w.Setup = func() (func(), func() error) {
		as := randFloats(17, s.batch*s.m*s.k, -1, 1)
		bs := randFloats(18, s.batch*s.k*s.n, -1, 1)
		var run func()
		var result func() []float64
		switch {
		case !ref:
			ash, bsh := []int{s.m, s.k}, []int{s.k, s.n}
			if s.batch > 1 {
				ash, bsh = []int{s.batch, s.m, s.k}, []int{s.batch, s.k, s.n}
			}
			a, b := fromFloats(as, dt, ash...), fromFloats(bs, dt, bsh...)
			var c *peel.Tensor
			run = func() { c = peel.MatMul(a, b) }
			result = func() []float64 { return hostFloats(c) }
		case dt == peel.Float32:
			a, b := toF32(as), toF32(bs)
			c := make([]float32, s.batch*s.m*s.n)
			run = func() {
				for i := range s.batch {
					blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
						blas32.General{Rows: s.m, Cols: s.k, Stride: s.k, Data: a[i*s.m*s.k:]},
						blas32.General{Rows: s.k, Cols: s.n, Stride: s.n, Data: b[i*s.k*s.n:]}, 0,
						blas32.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: c[i*s.m*s.n:]})
				}
			}
			result = func() []float64 {
				out := make([]float64, len(c))
				for i, v := range c {
					out[i] = float64(v)
				}
				return out
			}
		default:
			c := make([]float64, s.batch*s.m*s.n)
			run = func() {
				for i := range s.batch {
					blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
						blas64.General{Rows: s.m, Cols: s.k, Stride: s.k, Data: as[i*s.m*s.k:]},
						blas64.General{Rows: s.k, Cols: s.n, Stride: s.n, Data: bs[i*s.k*s.n:]}, 0,
						blas64.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: c[i*s.m*s.n:]})
				}
			}
			result = func() []float64 { return c }
		}
		return run, func() error { return checkMatShape(s, dt, as, bs, result()) }
	}
	return w
}

// checkMatShape compares c with a naive float64 product of the inputs
// (as rounded to dt) at 512 pseudo-random entries, relative to Σ|a||b|.
func checkMatShape(s matShape, dt peel.DType, as, bs, c []float64) error {
	if len(c) != s.batch*s.m*s.n {
		return fmt.Errorf("%d elements, want %d", len(c), s.batch*s.m*s.n)
	}
	round := func(v float64) float64 {
		if dt == peel.Float32 {
			return float64(float32(v))
		}
		return v
	}
	tol := 1e-13
	if dt == peel.Float32 {
		tol = 1e-5
	}
	r := rand.New(rand.NewPCG(19, 19))
	for range 512 {
		p, i, j := r.IntN(s.batch), r.IntN(s.m), r.IntN(s.n)
		var want, mag float64
		for k := range s.k {
			x := round(as[(p*s.m+i)*s.k+k]) * round(bs[(p*s.k+k)*s.n+j])
			want += x
			mag += math.Abs(x)
		}
		if got := c[(p*s.m+i)*s.n+j]; math.Abs(got-want) > tol*mag {
			return fmt.Errorf("c[%d,%d,%d] = %v, want %v", p, i, j, got, want)
		}
	}
	return nil
}
