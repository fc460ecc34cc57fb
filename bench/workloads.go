package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
)

// Workload is one benchmark, defined once and run both by `go test
// -bench` and by the peelbench harness.
type Workload struct {
	// Name identifies the workload across implementations: the peer
	// scripts use the same names.
	Name string
	// Impl is who computes it: "peel", or for a reference the library
	// called directly ("gonum" or "openblas" for BLAS, "go" for plain Go).
	Impl string
	// Doc says what is computed.
	Doc string
	// Unit names the derived metric ("ns/op", "ns/elem/op", "GFLOPS",
	// "ns/elem") and Metric computes it from the time of one run
	// (without Metric the metric is 0).
	Unit   string
	Metric func(nsPerRun float64) float64
	// Setup makes the inputs and returns the function that is timed and
	// a check that compares the result of the latest run with a
	// reference. Setup is called once per measurement; run is called
	// many times.
	Setup func() (run func(), check func() error)
	// FLOPs is the floating-point operations of one run of a workload
	// bound by arithmetic, in float64 when F64 is set and float32
	// otherwise; Traffic the bytes one run must read and write, for a
	// workload bound by memory. Reports give either as a percentage of
	// the machine's limit (Roof); both are 0 for other workloads.
	FLOPs, Traffic float64
	F64            bool
	// LiveHeap makes the harness also measure the peak of the live heap
	// during one run (Result.LivePeak): the memory a run holds at once,
	// which checkpoint policies change. It is slow (the collector runs
	// all the time), so only workloads about memory set it.
	LiveHeap bool
}

// Workloads returns every workload, peel's first, each followed by the
// references it is compared with.
// A compiled workload comes right after its eager twin (see compile.go).
func Workloads() []Workload {
	ws := []Workload{
		tinyChain(),
		chain1M(peel.Float32),
		chain1M(peel.Float64),
		copy1M(),
		copyInto1M(),
	}
	ws = append(ws, memBoundWorkloads()...)
	ws = append(ws, []Workload{
		matmul(peel.Float32, false),
		matmul(peel.Float64, false),
		matmul(peel.Float32, true),
		matmul(peel.Float64, true),
	}...)
	ws = append(ws, matmulShapeWorkloads()...)
	ws = append(ws, autodiffWorkloads()...)
	ws = append(ws, vmapWorkloads()...)
	ws = append(ws, customOpWorkloads()...)
	ws = append(ws, convWorkloads()...)
	ws = append(ws, perSampleCNN(false), perSampleCNN(true))
	ws = append(ws, digitsEpoch())
	ws = append(ws, distWorkloads()...)
	ws = append(ws, gptWorkloads()...)
	return placeCompiled(ws, compiledWorkloadList())
}

// placeCompiled inserts each of the compiled workloads cs after its eager
// twin in ws (the workload named without the _compiled suffix) and the
// twin's compiled workloads placed before it; one without a twin goes at
// the end.
func placeCompiled(ws, cs []Workload) []Workload {
	for _, c := range cs {
		twin, _, _ := strings.Cut(c.Name, "_compiled")
		at := slices.IndexFunc(ws, func(w Workload) bool { return w.Name == twin })
		if at < 0 {
			ws = append(ws, c)
			continue
		}
		for at++; at < len(ws) && strings.HasPrefix(ws[at].Name, twin+"_compiled"); at++ {
		}
		ws = slices.Insert(ws, at, c)
	}
	return ws
}

// perOp returns a metric of ns per op for ops ops per run.
func perOp(ops float64) func(float64) float64 {
	return func(ns float64) float64 { return ns / ops }
}

// randFloats returns n deterministic pseudo-random values in [lo, hi).
func randFloats(seed uint64, n int, lo, hi float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]float64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*r.Float64()
	}
	return out
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func fromFloats(x []float64, dt peel.DType, shape ...int) *peel.Tensor {
	if dt == peel.Float32 {
		return peel.FromFloat32s(toF32(x), shape...)
	}
	return peel.FromFloat64s(x, shape...)
}

func hostFloats(t *peel.Tensor) []float64 {
	if t.DType() == peel.Float32 {
		f := t.Float32s()
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	return t.Float64s()
}

// compare checks got against want elementwise: |got-want| ≤ atol +
// rtol·|want|.
func compare(got, want []float64, rtol, atol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d elements, want %d", len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= atol+rtol*math.Abs(want[i])) {
			return fmt.Errorf("element %d = %v, want %v (difference %.3g)", i, got[i], want[i], d)
		}
	}
	return nil
}

// tinyChainOps is the length of the tiny chain: the cost of dispatching
// one op dominates.
const tinyChainOps = 100

// tinyChain is 100 elementwise ops on 8-element f64 tensors, cycling
// through x·a, x+b, tanh(x), x−c with fixed 8-element a, b, c.
func tinyChain() Workload {
	return Workload{
		Name: "tiny_chain_100", Impl: "peel",
		Doc:  "100 elementwise ops (mul, add, tanh, sub) on f64[8]: per-op dispatch overhead",
		Unit: "ns/op", Metric: perOp(tinyChainOps),
		Setup: func() (func(), func() error) {
			xs, as, bs, cs := tinyChainInputs()
			x0 := peel.FromFloat64s(xs)
			a, b, c := peel.FromFloat64s(as), peel.FromFloat64s(bs), peel.FromFloat64s(cs)
			chain := tinyChainFn(a, b, c)
			var out *peel.Tensor
			run := func() { out = chain(x0) }
			want := tinyChainWant(xs, as, bs, cs)
			check := func() error { return compare(out.Float64s(), want, 1e-12, 1e-12) }
			return run, check
		},
	}
}

// tinyChainInputs returns the tiny chain's input and constants: x0, a, b,
// c, each 8 values.
func tinyChainInputs() (xs, as, bs, cs []float64) {
	return randFloats(1, 8, -1, 1), randFloats(2, 8, 0.5, 1.5), randFloats(3, 8, -0.5, 0.5), randFloats(4, 8, -0.5, 0.5)
}

// tinyChainWant is the tiny chain computed with float64 loops.
func tinyChainWant(xs, as, bs, cs []float64) []float64 {
	want := append([]float64(nil), xs...)
	for i := range tinyChainOps {
		for j := range want {
			switch i % 4 {
			case 0:
				want[j] *= as[j]
			case 1:
				want[j] += bs[j]
			case 2:
				want[j] = math.Tanh(want[j])
			case 3:
				want[j] -= cs[j]
			}
		}
	}
	return want
}

// chainN is the length of the 1M-element chains.
const chainN = 1 << 20

// chainOps is the number of ops in tanh(2x+1)·x.
const chainOps = 4

// chain1M computes tanh(2x+1)·x on 2^20 elements: four ops, each a pass
// over memory, so the metric is ns per element per op.
func chain1M(dt peel.DType) Workload {
	return Workload{
		Name: "chain_1m_" + dt.String(), Impl: "peel",
		Doc:  "tanh(2x+1)*x on 1<<20 " + dt.String() + " (4 ops: mul, add, tanh, mul)",
		Unit: "ns/elem/op", Metric: perOp(chainN * chainOps),
		Setup: func() (func(), func() error) {
			xs := randFloats(5, chainN, -2, 2)
			x := fromFloats(xs, dt)
			var out *peel.Tensor
			run := func() { out = chainFn(x) }
			check := chainCheck(x, &out)
			return run, check
		},
	}
}

// chainFn is tanh(2x+1)·x.
func chainFn(x *peel.Tensor) *peel.Tensor {
	return peel.Mul(peel.Tanh(peel.Add(peel.Mul(x, 2.0), 1.0)), x)
}

// chainCheck returns the check of chainFn(x): it compares *out with a
// float64 loop over x's values.
func chainCheck(x *peel.Tensor, out **peel.Tensor) func() error {
	want := hostFloats(x) // the f32 inputs as rounded
	for i, v := range want {
		want[i] = math.Tanh(2*v+1) * v
	}
	tol := 1e-12
	if x.DType() == peel.Float32 {
		tol = 1e-5
	}
	return func() error { return compare(hostFloats(*out), want, tol, tol) }
}

// copy1M is a plain Go copy of the bytes one f32 op of chain_1m reads
// and writes: the floor for a cheap elementwise op.
func copy1M() Workload {
	return Workload{
		Name: "copy_1m_f32", Impl: "go",
		Doc:  "Go copy() of 1<<20 float32 (4 MiB read, 4 MiB written): the floor of a cheap op",
		Unit: "ns/elem", Metric: perOp(chainN), Traffic: 8 * chainN,
		Setup: func() (func(), func() error) {
			src := toF32(randFloats(6, chainN, -1, 1))
			dst := make([]float32, chainN)
			run := func() { copy(dst, src) }
			check := func() error {
				for i := range src {
					if dst[i] != src[i] {
						return fmt.Errorf("element %d = %v, want %v", i, dst[i], src[i])
					}
				}
				return nil
			}
			return run, check
		},
	}
}

// copyInto1M is peel's copy of 1M f32: CopyInto of one contiguous tensor
// into another, the eager copy every view materialization and in-place
// write goes through (Backend.Copy).
func copyInto1M() Workload {
	return Workload{
		Name: "copyinto_1m_f32", Impl: "peel",
		Doc:  "peel.CopyInto of 1<<20 float32 into a contiguous tensor (torch: dst.copy_(src))",
		Unit: "ns/elem", Metric: perOp(chainN), Traffic: 8 * chainN,
		Setup: func() (func(), func() error) {
			xs := randFloats(6, chainN, -1, 1)
			src := fromFloats(xs, peel.Float32)
			dst := peel.Zeros(peel.Float32, chainN)
			run := func() { peel.CopyInto(dst, src) }
			check := func() error { return compare(hostFloats(dst), hostFloats(src), 0, 0) }
			return run, check
		},
	}
}

// matN is the size of the square matrix products.
const matN = 512

func gflops(ns float64) float64 { return 2 * matN * matN * matN / ns }

// matmul multiplies two 512×512 matrices, with peel.MatMul or, when ref
// is set, with blas64.Gemm / blas32.Gemm called directly on the same
// data (whichever BLAS gonum is set to use: gonum's pure Go one, or
// OpenBLAS under -tags openblas).
func matmul(dt peel.DType, ref bool) Workload {
	w := Workload{
		Name: "matmul512_" + dt.String(), Impl: "peel",
		Doc:  fmt.Sprintf("%d×%d · %d×%d %v matrix product", matN, matN, matN, matN, dt),
		Unit: "GFLOPS", Metric: gflops,
		FLOPs: 2 * matN * matN * matN, F64: dt == peel.Float64,
	}
	if ref {
		w.Name += "_gonum"
		w.Impl = cpu.BLAS()
		w.Doc += " with " + dt.String()[:1] + "gemm called directly"
	}
	w.Setup = func() (func(), func() error) {
		as := randFloats(7, matN*matN, -1, 1)
		bs := randFloats(8, matN*matN, -1, 1)
		var run func()
		var result func() []float64
		switch {
		case !ref:
			a, b := fromFloats(as, dt, matN, matN), fromFloats(bs, dt, matN, matN)
			var c *peel.Tensor
			run = func() { c = peel.MatMul(a, b) }
			result = func() []float64 { return hostFloats(c) }
		case dt == peel.Float32:
			a := blas32.General{Rows: matN, Cols: matN, Stride: matN, Data: toF32(as)}
			b := blas32.General{Rows: matN, Cols: matN, Stride: matN, Data: toF32(bs)}
			c := blas32.General{Rows: matN, Cols: matN, Stride: matN, Data: make([]float32, matN*matN)}
			run = func() { blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c) }
			result = func() []float64 {
				out := make([]float64, len(c.Data))
				for i, v := range c.Data {
					out[i] = float64(v)
				}
				return out
			}
		default:
			a := blas64.General{Rows: matN, Cols: matN, Stride: matN, Data: as}
			b := blas64.General{Rows: matN, Cols: matN, Stride: matN, Data: bs}
			c := blas64.General{Rows: matN, Cols: matN, Stride: matN, Data: make([]float64, matN*matN)}
			run = func() { blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c) }
			result = func() []float64 { return c.Data }
		}
		check := func() error { return checkMatmul(dt, as, bs, result()) }
		return run, check
	}
	return w
}

// checkMatmul compares c with a naive float64 product of the inputs (as
// rounded to dt) at pseudo-random entries (checkMatShape).
func checkMatmul(dt peel.DType, as, bs, c []float64) error {
	return checkMatShape(matShape{batch: 1, m: matN, k: matN, n: matN}, dt, as, bs, c)
}
