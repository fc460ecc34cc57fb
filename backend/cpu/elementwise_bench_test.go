package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Benchmarks of the elementwise and reduction kernels over 1<<20 float32
// elements on one thread, called through the real dispatch path
// (interp.Bind → eval → Backend.Exec, output allocation included). Each
// reports ns/elem. Run with
//
//	go test ./backend/cpu/ -run '^$' -bench 'Elementwise|Reduce' -benchtime=200ms

const ewBenchN = 1 << 20

// ewBenchSetup pins one thread for the benchmark and restores the default
// afterwards.
func ewBenchSetup(b *testing.B) {
	b.Helper()
	cpu.SetThreads(1)
	b.Cleanup(func() { cpu.SetThreads(0) })
}

func ewBenchData(n int, lo, hi float32) []float32 {
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = lo + (hi-lo)*rng.Float32()
	}
	return x
}

func ewPerElem(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
}

// BenchmarkElementwiseCopy is the baseline: a plain Go copy of 1<<20
// float32 (4 MiB), without and with allocating the destination.
func BenchmarkElementwiseCopy(b *testing.B) {
	src := ewBenchData(ewBenchN, -1, 1)
	b.Run("copy", func(b *testing.B) {
		dst := make([]float32, ewBenchN)
		b.SetBytes(4 * ewBenchN)
		for b.Loop() {
			copy(dst, src)
		}
		ewPerElem(b, ewBenchN)
	})
	b.Run("alloc+copy", func(b *testing.B) {
		b.SetBytes(4 * ewBenchN)
		for b.Loop() {
			dst := make([]float32, ewBenchN)
			copy(dst, src)
		}
		ewPerElem(b, ewBenchN)
	})
}

// BenchmarkElementwiseBinary: tensor-tensor and tensor-scalar arithmetic.
func BenchmarkElementwiseBinary(b *testing.B) {
	ewBenchSetup(b)
	x := ewTensor(ewBenchData(ewBenchN, -1, 1), ewBenchN)
	y := ewTensor(ewBenchData(ewBenchN, 1, 2), ewBenchN)
	s := ewSplat([]float32{2}, ewBenchN)
	for _, c := range []struct {
		name string
		p    *interp.Prim
		a, b *interp.Tensor
	}{
		{"add", prims.Add, x, y},
		{"mul", prims.Mul, x, y},
		{"sub", prims.Sub, x, y},
		{"div", prims.Div, x, y},
		{"max", prims.Max, x, y},
		{"add_scalar", prims.Add, x, s},
		{"mul_scalar", prims.Mul, x, s},
		{"scalar_sub", prims.Sub, s, x},
		{"lt", prims.Lt, x, y},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(4 * ewBenchN)
			for b.Loop() {
				interp.Bind1(c.p, nil, c.a, c.b)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

// BenchmarkElementwiseUnary: the float32 transcendental functions (and a
// few float64 ones for comparison).
func BenchmarkElementwiseUnary(b *testing.B) {
	ewBenchSetup(b)
	x := ewTensor(ewBenchData(ewBenchN, -4, 4), ewBenchN)
	pos := ewTensor(ewBenchData(ewBenchN, 0.01, 100), ewBenchN)
	x64 := interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Float64}, x)
	// A network's pre-activations: mostly small, some large.
	rng := rand.New(rand.NewPCG(2, 2))
	nd := make([]float32, ewBenchN)
	for i := range nd {
		nd[i] = float32(rng.NormFloat64())
	}
	normal := ewTensor(nd, ewBenchN)
	// A network at initialization: pre-activations within ±0.5.
	small := ewTensor(ewBenchData(ewBenchN, -0.5, 0.5), ewBenchN)
	for _, c := range []struct {
		name string
		p    *interp.Prim
		a    *interp.Tensor
	}{
		{"tanh_f32", prims.Tanh, x},
		{"exp_f32", prims.Exp, x},
		{"expm1_f32", prims.Expm1, x},
		{"logistic_f32", prims.Logistic, x},
		{"log_f32", prims.Log, pos},
		{"sqrt_f32", prims.Sqrt, pos},
		{"neg_f32", prims.Neg, x},
		{"sin_f32", prims.Sin, x},
		{"cos_f32", prims.Cos, x},
		{"gelu_f32", prims.GELU, normal},
		{"gelu_grad_f32", prims.GELUGrad, normal},
		{"gelu_small_f32", prims.GELU, small},
		{"gelu_grad_small_f32", prims.GELUGrad, small},
		{"tanh_f64", prims.Tanh, x64},
		{"exp_f64", prims.Exp, x64},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				interp.Bind1(c.p, nil, c.a)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

// BenchmarkElementwiseTanhChain is tanh(2x+1)*x: four kernel calls (mul
// by a broadcast scalar, add a broadcast scalar, tanh, mul).
func BenchmarkElementwiseTanhChain(b *testing.B) {
	ewBenchSetup(b)
	x := ewTensor(ewBenchData(ewBenchN, -2, 2), ewBenchN)
	two := ewSplat([]float32{2}, ewBenchN)
	one := ewSplat([]float32{1}, ewBenchN)
	for b.Loop() {
		h := interp.Bind1(prims.Mul, nil, x, two)
		h = interp.Bind1(prims.Add, nil, h, one)
		h = interp.Bind1(prims.Tanh, nil, h)
		interp.Bind1(prims.Mul, nil, h, x)
	}
	ewPerElem(b, ewBenchN)
}

// BenchmarkReduce: full and per-axis sums, max, argmax and cumsum.
func BenchmarkReduce(b *testing.B) {
	ewBenchSetup(b)
	flat := ewTensor(ewBenchData(ewBenchN, -1, 1), ewBenchN)
	mat := ewTensor(ewBenchData(ewBenchN, -1, 1), 1024, 1024)
	for _, c := range []struct {
		name   string
		p      *interp.Prim
		params any
		a      *interp.Tensor
	}{
		{"sum_all", prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, flat},
		{"sum_rows", prims.ReduceSum, prims.ReduceParams{Axes: []int{1}}, mat},
		{"sum_cols", prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, mat},
		{"max_rows", prims.ReduceMax, prims.ReduceParams{Axes: []int{1}}, mat},
		{"argmax_rows", prims.ArgMax, prims.AxisParams{Axis: 1}, mat},
		{"cumsum_rows", prims.Cumsum, prims.CumsumParams{Axis: 1}, mat},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				interp.Bind1(c.p, c.params, c.a)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

// BenchmarkElementwiseMisc: select with a random predicate, conversion
// and threefry (1<<20 counters under one broadcast key).
func BenchmarkElementwiseMisc(b *testing.B) {
	ewBenchSetup(b)
	x := ewTensor(ewBenchData(ewBenchN, -1, 1), ewBenchN)
	y := ewTensor(ewBenchData(ewBenchN, -1, 1), ewBenchN)
	zero := ewSplat([]float32{0}, ewBenchN)
	pred := interp.Bind1(prims.Lt, nil, x, y)
	ctr := interp.Bind1(prims.Iota, prims.IotaParams{DType: backend.Int64, Shape: []int{ewBenchN}, Dim: 0})
	key := ewSplat([]int64{42}, ewBenchN)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"select", func() { interp.Bind1(prims.Where, nil, pred, x, y) }},
		{"select_scalar", func() { interp.Bind1(prims.Where, nil, pred, x, zero) }},
		{"convert_f32_i64", func() {
			interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Int64}, x)
		}},
		{"threefry", func() { interp.Bind(prims.Threefry2x32, nil, key, key, key, ctr) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

var ewSink float32

// BenchmarkElementwiseScalarLoop measures the fast float32 tanh loop
// without the dispatch path, for comparison with a math.Tanh loop.
func BenchmarkElementwiseScalarLoop(b *testing.B) {
	x := ewBenchData(ewBenchN, -4, 4)
	b.Run("math.Tanh", func(b *testing.B) {
		for b.Loop() {
			var s float32
			for _, v := range x {
				s += float32(math.Tanh(float64(v)))
			}
			ewSink = s
		}
		ewPerElem(b, ewBenchN)
	})
}

// BenchmarkConvert converts 1<<20 elements between the dtypes a model
// moves between (through the real dispatch, result allocated), reporting
// the bytes read and written per second:
//
//	go test ./backend/cpu/ -run '^$' -bench Convert -benchtime=200ms
func BenchmarkConvert(b *testing.B) {
	ewBenchSetup(b)
	pairs := [][2]backend.DType{
		{backend.Float32, backend.Float16}, {backend.Float16, backend.Float32},
		{backend.Float32, backend.BFloat16}, {backend.BFloat16, backend.Float32},
		{backend.Float64, backend.Float16}, {backend.Bool, backend.Float16},
		{backend.Uint8, backend.Float32}, {backend.Int64, backend.BFloat16},
		{backend.Float32, backend.Float64}, {backend.Bool, backend.Float32},
	}
	for _, p := range pairs {
		b.Run(p[0].String()+"→"+p[1].String(), func(b *testing.B) {
			x := interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: p[0]}, interp.NewConcrete(interp.DefaultBackend(),
				backend.Array{Buf: interp.DefaultBackend().FromHost(ewBenchData(ewBenchN, -2, 2)), Shape: []int{ewBenchN}}))
			b.SetBytes(int64(ewBenchN * (p[0].Size() + p[1].Size())))
			for b.Loop() {
				interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: p[1]}, x)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

// BenchmarkElementwiseBroadcast: binary operations at a GPT's shapes
// (2048 rows of 64 float32, 512 KiB, in the L2), with one operand
// broadcast: one element per row (a norm's mean or scale, softmax's
// sums: runRowSplat) or one row for all (a bias: runRepeat).
func BenchmarkElementwiseBroadcast(b *testing.B) {
	ewBenchSetup(b)
	const rows, k = 2048, 64
	x := ewTensor(ewBenchData(rows*k, -1, 1), rows, k)
	bc := func(t *interp.Tensor, dims ...int) *interp.Tensor {
		return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{rows, k}, Dims: dims}, t)
	}
	perRow := bc(ewTensor(ewBenchData(rows, 1, 2), rows), 0)
	bias := bc(ewTensor(ewBenchData(k, 1, 2), k), 1)
	for _, c := range []struct {
		name string
		p    *interp.Prim
		a, b *interp.Tensor
	}{
		{"sub_row", prims.Sub, x, perRow},
		{"mul_row", prims.Mul, x, perRow},
		{"row_div", prims.Div, perRow, x},
		{"add_bias", prims.Add, x, bias},
		{"bias_sub", prims.Sub, bias, x},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(4 * rows * k)
			for b.Loop() {
				interp.Bind1(c.p, nil, c.a, c.b)
			}
			ewPerElem(b, rows*k)
		})
	}
}

// BenchmarkRowKernels: softmax, log_softmax and layer_norm over rows at
// a GPT's attention (8192 rows of 64), a transformer's (128 rows of 128)
// and a classifier's (128 rows of 10), float32: the row kernels, a block
// of rows at a time.
func BenchmarkRowKernels(b *testing.B) {
	ewBenchSetup(b)
	for _, s := range [][2]int{{8192, 64}, {128, 128}, {128, 10}} {
		rows, n := s[0], s[1]
		x := ewTensor(ewBenchData(rows*n, -3, 3), rows, n)
		for _, c := range []struct {
			name   string
			p      *interp.Prim
			params any
		}{
			{"softmax", prims.Softmax, prims.AxisParams{Axis: 1}},
			{"log_softmax", prims.LogSoftmax, prims.AxisParams{Axis: 1}},
			{"layer_norm", prims.LayerNorm, prims.NormParams{Axes: 1, Eps: 1e-5}},
		} {
			b.Run(fmt.Sprintf("%s/%dx%d", c.name, rows, n), func(b *testing.B) {
				for b.Loop() {
					interp.Bind(c.p, c.params, x)
				}
				ewPerElem(b, rows*n)
			})
		}
	}
}
