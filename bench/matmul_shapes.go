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
// (batch 1: a plain product of two matrices). With ta the left operand
// is stored transposed (k×m, the product is Aᵀ·B: a weight gradient),
// with tb the right one (n×k, A·Bᵀ: an input gradient, attention's
// Q·Kᵀ); the product reads them in place.
type matShape struct {
	batch, m, k, n int
	ta, tb         bool
}

func (s matShape) name(dt peel.DType) string {
	b := ""
	if s.batch > 1 {
		b = fmt.Sprintf("b%d_", s.batch)
	}
	t := ""
	if s.ta || s.tb {
		t = "_" + map[bool]string{false: "n", true: "t"}[s.ta] + map[bool]string{false: "n", true: "t"}[s.tb]
	}
	return fmt.Sprintf("matmul_%s%dx%dx%d%s_%v", b, s.m, s.k, s.n, t, dt)
}

// aAt and bAt index the operands' host values: element (p, i, k) of
// batch element p of A and (p, k, j) of B, as stored.
func (s matShape) aAt(p, i, k int) int {
	if s.ta {
		return (p*s.k+k)*s.m + i
	}
	return (p*s.m+i)*s.k + k
}

func (s matShape) bAt(p, k, j int) int {
	if s.tb {
		return (p*s.n+j)*s.k + k
	}
	return (p*s.k+k)*s.n + j
}

// einsum is the Einsum spec of the product.
func (s matShape) einsum() string {
	a, b := "ik", "kj"
	if s.ta {
		a = "ki"
	}
	if s.tb {
		b = "jk"
	}
	if s.batch > 1 {
		return "p" + a + ",p" + b + "->pij"
	}
	return a + "," + b + "->ij"
}

func (s matShape) flops() float64 { return 2 * float64(s.batch*s.m*s.k*s.n) }

// mlpMatShapes are the products of the MLP workloads (a 784-128 layer on
// a batch of 64, a 256-10 layer on a batch of 128), plain and batched 8
// ways (an ensemble, or per-example products under Vmap).
var mlpMatShapes = []matShape{{batch: 1, m: 64, k: 784, n: 128}, {batch: 1, m: 128, k: 256, n: 10}, {batch: 8, m: 64, k: 784, n: 128}, {batch: 8, m: 128, k: 256, n: 10}}

// skinnyMatShapes are products of few rows (a batch of 8 at inference),
// a short contraction, attention's batched products (Q·Kᵀ and P·V of 32
// heads of 128 tokens, 64 wide) and the two products of a layer's
// backward pass (xᵀ·dy, dy·Wᵀ of the 784-128 layer on a batch of 64),
// the transposed operands read in place; f32 only.
var skinnyMatShapes = []matShape{
	{batch: 1, m: 8, k: 512, n: 512},
	{batch: 1, m: 512, k: 16, n: 512},
	{batch: 32, m: 128, k: 64, n: 128, tb: true},
	{batch: 32, m: 128, k: 128, n: 64},
	{batch: 1, m: 784, k: 64, n: 128, ta: true},
	{batch: 1, m: 64, k: 128, n: 784, tb: true},
}

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
	for _, s := range skinnyMatShapes {
		ws = append(ws, matmulShape(s, peel.Float32, false), matmulShape(s, peel.Float32, true))
	}
	return ws
}

func matmulShape(s matShape, dt peel.DType, ref bool) Workload {
	w := Workload{
		Name: s.name(dt), Impl: "peel",
		Doc:  fmt.Sprintf("%d×%d%s · %d×%d%s %v matrix product", s.m, s.k, map[bool]string{true: " (stored transposed)"}[s.ta], s.k, s.n, map[bool]string{true: " (stored transposed)"}[s.tb], dt),
		Unit: "GFLOPS", Metric: func(ns float64) float64 { return s.flops() / ns },
		FLOPs: s.flops(), F64: dt == peel.Float64,
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
			if s.ta {
				ash[0], ash[1] = s.k, s.m
			}
			if s.tb {
				bsh[0], bsh[1] = s.n, s.k
			}
			if s.batch > 1 {
				ash, bsh = append([]int{s.batch}, ash...), append([]int{s.batch}, bsh...)
			}
			a, b := fromFloats(as, dt, ash...), fromFloats(bs, dt, bsh...)
			var c *peel.Tensor
			run = func() { c = peel.MatMul(a, b) }
			if s.ta || s.tb {
				spec := s.einsum()
				run = func() { c = peel.Einsum(spec, a, b) }
			}
			result = func() []float64 { return hostFloats(c) }
		case dt == peel.Float32:
			a, b := toF32(as), toF32(bs)
			c := make([]float32, s.batch*s.m*s.n)
			ta, ar, ac := blas.NoTrans, s.m, s.k
			if s.ta {
				ta, ar, ac = blas.Trans, s.k, s.m
			}
			tb, br, bc := blas.NoTrans, s.k, s.n
			if s.tb {
				tb, br, bc = blas.Trans, s.n, s.k
			}
			run = func() {
				for i := range s.batch {
					blas32.Gemm(ta, tb, 1,
						blas32.General{Rows: ar, Cols: ac, Stride: ac, Data: a[i*s.m*s.k:]},
						blas32.General{Rows: br, Cols: bc, Stride: bc, Data: b[i*s.k*s.n:]}, 0,
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
			x := round(as[s.aAt(p, i, k)]) * round(bs[s.bAt(p, k, j)])
			want += x
			mag += math.Abs(x)
		}
		if got := c[(p*s.m+i)*s.n+j]; math.Abs(got-want) > tol*mag {
			return fmt.Errorf("c[%d,%d,%d] = %v, want %v", p, i, j, got, want)
		}
	}
	return nil
}
