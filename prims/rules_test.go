package prims_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/peel-ml/peel/backend"
	_ "github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Tolerances (float64):
//   - JVP against central differences with ε = 1e-6: |jvp − fd| ≤ 1e-6·(1 + |fd|)
//     per element (the difference quotient's error is O(ε²) plus rounding
//     O(1e-16/ε)).
//   - Second derivatives (a rule differentiated by a small forward-mode
//     interpreter) against central differences of the rule: 1e-5·(1 + |fd|).
//   - Transpose against the inner-product identity ⟨u, L t⟩ = ⟨Lᵀu, t⟩:
//     1e-10·(1 + Σ|uᵢ·(L t)ᵢ|).
const (
	fdEps    = 1e-6
	jvpTol   = 1e-6
	hvpTol   = 1e-5
	transTol = 1e-10
)

type T = interp.Tensor

// ---------------------------------------------------------------------------
// Tensor construction and host arithmetic.

func concrete(data any, shape ...int) *T {
	be := interp.DefaultBackend()
	if shape == nil {
		shape = []int{}
	}
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

func f64(data []float64, shape ...int) *T { return concrete(data, shape...) }
func i64(data []int64, shape ...int) *T   { return concrete(data, shape...) }

// uniform returns a float64 tensor with elements uniform in [lo, hi).
func uniform(r *rand.Rand, lo, hi float64, shape ...int) *T {
	d := make([]float64, backend.ShapeSize(shape))
	for i := range d {
		d[i] = lo + (hi-lo)*r.Float64()
	}
	return f64(d, shape...)
}

// awayFromZero returns elements with magnitude in [lo, hi) and random sign.
func awayFromZero(r *rand.Rand, lo, hi float64, shape ...int) *T {
	d := make([]float64, backend.ShapeSize(shape))
	for i := range d {
		d[i] = lo + (hi-lo)*r.Float64()
		if r.IntN(2) == 0 {
			d[i] = -d[i]
		}
	}
	return f64(d, shape...)
}

func randBools(r *rand.Rand, shape ...int) *T {
	d := make([]bool, backend.ShapeSize(shape))
	for i := range d {
		d[i] = r.IntN(2) == 0
	}
	return concrete(d, shape...)
}

// vals returns a float tensor's elements as float64s.
func vals(t *T) []float64 {
	a, be := interp.ArrayOf(t)
	h := be.ToHost(a)
	runtime.KeepAlive(t)
	switch v := h.(type) {
	case []float64:
		return v
	case []float32:
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	panic("vals: not a float tensor: " + t.TypeString())
}

// axpy returns x + a·v (float64 tensors; v nil means zero).
func axpy(x *T, a float64, v *T) *T {
	if v == nil {
		return x
	}
	xs, vs := vals(x), vals(v)
	out := make([]float64, len(xs))
	for i := range xs {
		out[i] = xs[i] + a*vs[i]
	}
	return f64(out, x.Shape()...)
}

func dot(a, b *T) float64 {
	if a == nil || b == nil {
		return 0
	}
	x, y := vals(a), vals(b)
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func absDot(a, b *T) float64 {
	x, y := vals(a), vals(b)
	s := 0.0
	for i := range x {
		s += math.Abs(x[i] * y[i])
	}
	return s
}

func isFloat(t *T) bool { return t.DType().IsFloat() }

// toF32 converts float64 tensors to float32 (others unchanged).
func toF32(t *T) *T {
	if t == nil || t.DType() != interp.Float64 {
		return t
	}
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: interp.Float32}, t)
}

// checkClose reports elementwise |got − want| > tol·(1 + |want|) (equal
// infinities and NaN against NaN pass). A nil got stands for zeros.
func checkClose(t *testing.T, what string, got *T, want []float64, tol float64) {
	t.Helper()
	g := make([]float64, len(want))
	if got != nil {
		g = vals(got)
	}
	if len(g) != len(want) {
		t.Errorf("%s: %d elements, want %d", what, len(g), len(want))
		return
	}
	for i := range want {
		if g[i] == want[i] || math.IsNaN(g[i]) && math.IsNaN(want[i]) {
			continue
		}
		if d := math.Abs(g[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Errorf("%s: element %d = %.12g, want %.12g (diff %.3g)", what, i, g[i], want[i], d)
			return
		}
	}
}

// ---------------------------------------------------------------------------
// JVP cases.

type jvpCase struct {
	name   string
	prim   *interp.Prim
	params any
	args   []*T
	// zero marks primitives whose tangent is zero by definition
	// (stop_gradient), which finite differences do not see.
	zero bool
	// noHVP skips the second-derivative check (a rule that is not smooth
	// in its primals at the sample, or whose FD is ill-conditioned).
	noHVP bool
}

func jvpCases() []jvpCase {
	r := rand.New(rand.NewPCG(1, 2))
	var cs []jvpCase
	shapes := [][]int{{}, {3}, {2, 3}}
	type unaryDomain struct {
		p      *interp.Prim
		lo, hi float64
		away   bool // magnitude in [lo, hi), random sign
	}
	for _, u := range []unaryDomain{
		{prims.Neg, -2, 2, false}, {prims.Abs, 0.2, 2, true}, {prims.Sign, 0.2, 2, true},
		{prims.Exp, -2, 2, false}, {prims.Log, 0.5, 2, false}, {prims.Log1p, -0.5, 2, false},
		{prims.Expm1, -2, 2, false}, {prims.Sqrt, 0.5, 2, false}, {prims.Rsqrt, 0.5, 2, false},
		{prims.Sin, -3, 3, false}, {prims.Cos, -3, 3, false}, {prims.Tan, -1, 1, false},
		{prims.Tanh, -2, 2, false}, {prims.Logistic, -3, 3, false}, {prims.Erf, -2, 2, false},
		{prims.Copy, -2, 2, false}, {prims.StopGradient, -2, 2, false},
	} {
		for _, s := range shapes {
			x := uniform(r, u.lo, u.hi, s...)
			if u.away {
				x = awayFromZero(r, u.lo, u.hi, s...)
			}
			cs = append(cs, jvpCase{name: fmt.Sprint(s), prim: u.p, args: []*T{x}, zero: u.p == prims.StopGradient})
		}
	}
	// Every primitive with a Reference, on its [Lo, Hi].
	for _, p := range prims.References() {
		ref, _ := prims.ReferenceOf(p)
		for _, s := range shapes {
			cs = append(cs, jvpCase{name: fmt.Sprint(s), prim: p, args: []*T{uniform(r, ref.Lo, ref.Hi, s...)}})
		}
	}
	for _, s := range shapes {
		cs = append(cs,
			jvpCase{prim: prims.Add, args: []*T{uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Sub, args: []*T{uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Mul, args: []*T{uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Div, args: []*T{uniform(r, -2, 2, s...), awayFromZero(r, 0.5, 2, s...)}},
			jvpCase{prim: prims.Pow, args: []*T{uniform(r, 0.5, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Max, args: []*T{uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Min, args: []*T{uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Rem, args: []*T{uniform(r, -5, 5, s...), awayFromZero(r, 0.7, 2, s...)}},
			jvpCase{prim: prims.Atan2, args: []*T{uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Where, args: []*T{randBools(r, s...), uniform(r, -2, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.ConvertElementType, params: prims.ConvertParams{DType: interp.Float64}, args: []*T{uniform(r, -2, 2, s...)}},
		)
	}
	// Pow with an integer-valued negative base (x^y is smooth in x there).
	cs = append(cs, jvpCase{name: "negative base", prim: prims.Pow, args: []*T{f64([]float64{-1.5, -0.7}, 2), f64([]float64{2, 3}, 2)}, noHVP: true})

	red := func(p *interp.Prim, x *T, axes ...int) jvpCase {
		if axes == nil {
			axes = []int{}
		}
		return jvpCase{name: fmt.Sprintf("%v axes %v", x.Shape(), axes), prim: p, params: prims.ReduceParams{Axes: axes}, args: []*T{x}}
	}
	for _, p := range []*interp.Prim{prims.ReduceSum, prims.ReduceMax, prims.ReduceMin, prims.ReduceProd} {
		cs = append(cs,
			red(p, uniform(r, -2, 2)),
			red(p, uniform(r, -2, 2, 4), 0),
			red(p, uniform(r, -2, 2, 2, 3, 4), 0, 2),
			red(p, uniform(r, -2, 2, 2, 3, 4), 1),
			red(p, uniform(r, -2, 2, 2, 3, 4)),
			red(p, uniform(r, -2, 2, 2, 3, 4), 0, 1, 2),
		)
	}
	cs = append(cs,
		red(prims.ReduceProd, f64([]float64{1.5, 0, -2, 0.5, 3}, 5), 0),
		red(prims.ReduceProd, f64([]float64{1.5, 0, -2, 0, 3, 1.1, 0.9, -1.2}, 8), 0),
		red(prims.ReduceProd, f64([]float64{0, 0, 0, 2, 1, 0}, 2, 3), 1),
		red(prims.ReduceProd, uniform(r, 0.5, 1.5, 2, 7, 3), 1),
		red(prims.ReduceSum, uniform(r, -2, 2, 2, 0, 3), 1),
		red(prims.ReduceProd, uniform(r, -2, 2, 2, 0, 3), 1),
	)

	cs = append(cs,
		jvpCase{prim: prims.Cumsum, params: prims.CumsumParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 5)}},
		jvpCase{prim: prims.Cumsum, params: prims.CumsumParams{Axis: 1, Reverse: true}, args: []*T{uniform(r, -2, 2, 2, 3)}},
		jvpCase{prim: prims.BroadcastInDim, params: prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{}}, args: []*T{uniform(r, -2, 2)}},
		jvpCase{prim: prims.BroadcastInDim, params: prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{1}}, args: []*T{uniform(r, -2, 2, 3)}},
		jvpCase{prim: prims.BroadcastInDim, params: prims.BroadcastParams{Shape: []int{2, 5, 3}, Dims: []int{0, 2}}, args: []*T{uniform(r, -2, 2, 2, 1)}},
		jvpCase{prim: prims.Reshape, params: prims.ReshapeParams{Shape: []int{3, 2}}, args: []*T{uniform(r, -2, 2, 2, 3)}},
		jvpCase{prim: prims.Reshape, params: prims.ReshapeParams{Shape: []int{1}}, args: []*T{uniform(r, -2, 2)}},
		jvpCase{prim: prims.Transpose, params: prims.TransposeParams{Perm: []int{2, 0, 1}}, args: []*T{uniform(r, -2, 2, 2, 3, 4)}},
		jvpCase{prim: prims.Slice, params: prims.SliceParams{Start: []int{1, 0}, Limit: []int{3, 6}, Stride: []int{1, 3}}, args: []*T{uniform(r, -2, 2, 4, 6)}},
		jvpCase{prim: prims.Rev, params: prims.RevParams{Axes: []int{0, 1}}, args: []*T{uniform(r, -2, 2, 2, 3)}},
		jvpCase{prim: prims.OptimizationBarrier, args: []*T{uniform(r, -2, 2, 2, 3)}},
		jvpCase{prim: prims.Pad, params: prims.PadParams{Low: []int{1}, High: []int{2}, Interior: []int{1}}, args: []*T{uniform(r, -2, 2, 3), uniform(r, -2, 2)}},
		jvpCase{prim: prims.Pad, params: prims.PadParams{Low: []int{-1, 0}, High: []int{1, -2}, Interior: []int{0, 1}}, args: []*T{uniform(r, -2, 2, 2, 3), uniform(r, -2, 2)}},
		jvpCase{prim: prims.Pad, params: prims.PadParams{Low: []int{}, High: []int{}, Interior: []int{}}, args: []*T{uniform(r, -2, 2), uniform(r, -2, 2)}},
		jvpCase{prim: prims.Concatenate, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 2), uniform(r, -2, 2, 3), uniform(r, -2, 2, 1)}},
		jvpCase{prim: prims.Concatenate, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 2, 3), uniform(r, -2, 2, 2, 1)}},
		jvpCase{prim: prims.Gather, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 5), i64([]int64{3, 0, 3}, 3)}},
		jvpCase{prim: prims.Gather, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 3, 4), i64([]int64{-1, 2, 7, 1}, 2, 2)}},
		jvpCase{prim: prims.ScatterAdd, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 5), i64([]int64{3, 0, 3}, 3), uniform(r, -2, 2, 3)}},
		jvpCase{prim: prims.ScatterAdd, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 3, 4), i64([]int64{1, 9}, 2), uniform(r, -2, 2, 3, 2)}},
		jvpCase{prim: prims.Scatter, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 5), i64([]int64{3, 0, 3}, 3), uniform(r, -2, 2, 3)}},
		jvpCase{prim: prims.Scatter, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 3, 4), i64([]int64{1, -2}, 2), uniform(r, -2, 2, 3, 2)}},
		jvpCase{prim: prims.DynamicSlice, params: prims.DynamicSliceParams{Sizes: []int{3}}, args: []*T{uniform(r, -2, 2, 5), i64([]int64{1})}},
		jvpCase{prim: prims.DynamicSlice, params: prims.DynamicSliceParams{Sizes: []int{2, 2}}, args: []*T{uniform(r, -2, 2, 3, 4), i64([]int64{2}), i64([]int64{3})}},
		jvpCase{prim: prims.DynamicUpdateSlice, args: []*T{uniform(r, -2, 2, 5), uniform(r, -2, 2, 2), i64([]int64{4})}},
		jvpCase{prim: prims.DynamicUpdateSlice, args: []*T{uniform(r, -2, 2, 3, 4), uniform(r, -2, 2, 2, 3), i64([]int64{1}), i64([]int64{0})}},
	)
	for _, d := range dotConfigs() {
		cs = append(cs, jvpCase{name: d.name, prim: prims.DotGeneral, params: d.p, args: []*T{uniform(r, -2, 2, d.a...), uniform(r, -2, 2, d.b...)}})
	}
	// linear: x of rank 1, 2 and 3 (tangents in every operand).
	for _, x := range [][]int{{3}, {4, 3}, {2, 4, 3}} {
		cs = append(cs, jvpCase{name: fmt.Sprint(x), prim: prims.Linear, args: []*T{uniform(r, -2, 2, x...), uniform(r, -2, 2, 3, 5), uniform(r, -2, 2, 5)}})
	}
	for _, c := range convConfigs() {
		cs = append(cs, jvpCase{name: c.name, prim: prims.ConvGeneralDilated, params: c.p, args: []*T{uniform(r, -2, 2, c.x...), uniform(r, -2, 2, c.w...)}})
	}
	for _, c := range windowConfigs() {
		for _, p := range []*interp.Prim{prims.ReduceWindowSum, prims.ReduceWindowMax} {
			cs = append(cs, jvpCase{name: c.name, prim: p, params: c.p, args: []*T{uniform(r, -2, 2, c.x...)}})
		}
	}
	cs = append(cs, specialJVPCases(r)...)
	cs = append(cs, linalgJVPCases(r)...)
	cs = append(cs, sortJVPCases(r)...)
	return append(cs, scatterReduceJVPCases(r)...)
}

type windowConfig struct {
	name string
	p    prims.WindowParams
	x    []int
}

// windowConfigs have no window entirely in the padding (whose maximum,
// −∞, finite differences cannot check).
func windowConfigs() []windowConfig {
	return []windowConfig{
		{"2x2 pool", prims.WindowParams{Window: []int{1, 1, 2, 2}, Strides: []int{1, 1, 2, 2}}, []int{2, 2, 4, 5}},
		{"3x3 padded stride 2", prims.WindowParams{Window: []int{1, 1, 3, 3}, Strides: []int{1, 1, 2, 2}, PadLo: []int{0, 0, 1, 1}, PadHi: []int{0, 0, 1, 0}}, []int{1, 2, 5, 4}},
		{"overlapping 1-d", prims.WindowParams{Window: []int{3}, Strides: []int{1}, PadLo: []int{2}, PadHi: []int{1}}, []int{6}},
		{"stride beyond the window", prims.WindowParams{Window: []int{2, 1}, Strides: []int{3, 2}}, []int{8, 3}},
		{"negative padding", prims.WindowParams{Window: []int{2}, PadLo: []int{-1}, PadHi: []int{-2}}, []int{7}},
		{"rank 0", prims.WindowParams{Window: []int{}}, []int{}},
	}
}

type convConfig struct {
	name string
	p    prims.ConvParams
	x, w []int
}

// convConfigs cover each parameter of conv_general_dilated alone and all
// of them together, so a transpose rule wrong for one of them fails.
func convConfigs() []convConfig {
	return []convConfig{
		{"valid", prims.ConvParams{}, []int{2, 3, 5}, []int{2, 3, 2}},
		{"2-d padded", prims.ConvParams{PadLo: []int{1, 0}, PadHi: []int{1, 2}}, []int{1, 2, 4, 3}, []int{3, 2, 3, 2}},
		{"strided", prims.ConvParams{Strides: []int{2, 3}, PadLo: []int{1, 1}, PadHi: []int{0, 2}}, []int{2, 2, 6, 7}, []int{2, 2, 3, 2}},
		{"uneven stride", prims.ConvParams{Strides: []int{3}}, []int{1, 2, 8}, []int{2, 2, 2}},
		{"rhs dilation", prims.ConvParams{RhsDilation: []int{2, 3}}, []int{1, 2, 6, 7}, []int{2, 2, 2, 2}},
		{"lhs dilation", prims.ConvParams{LhsDilation: []int{2}, PadLo: []int{1}, PadHi: []int{2}, Strides: []int{2}}, []int{2, 2, 4}, []int{3, 2, 3}},
		{"negative padding", prims.ConvParams{PadLo: []int{-1}, PadHi: []int{-2}}, []int{1, 2, 7}, []int{2, 2, 2}},
		{"padding beyond the kernel", prims.ConvParams{PadLo: []int{4}, PadHi: []int{3}}, []int{1, 1, 3}, []int{2, 1, 2}},
		{"groups", prims.ConvParams{FeatureGroupCount: 2, PadLo: []int{1, 1}, PadHi: []int{1, 1}}, []int{2, 4, 4, 3}, []int{6, 2, 3, 2}},
		{"depthwise", prims.ConvParams{FeatureGroupCount: 3, Strides: []int{2}}, []int{2, 3, 7}, []int{3, 1, 3}},
		{"everything", prims.ConvParams{Strides: []int{2, 1}, PadLo: []int{2, -1}, PadHi: []int{1, 3}, LhsDilation: []int{2, 1}, RhsDilation: []int{1, 2}, FeatureGroupCount: 2}, []int{2, 4, 4, 5}, []int{4, 2, 2, 3}},
		{"3-d", prims.ConvParams{Strides: []int{1, 2, 1}, PadLo: []int{1, 0, 1}, PadHi: []int{0, 1, 1}}, []int{1, 2, 3, 4, 3}, []int{2, 2, 2, 2, 2}},
		{"no spatial dims", prims.ConvParams{}, []int{3, 4}, []int{2, 4}},
		{"batch groups", prims.ConvParams{BatchGroupCount: 2, Strides: []int{2}, PadLo: []int{1}, PadHi: []int{0}}, []int{4, 3, 6}, []int{4, 3, 2}},
		{"batch groups 2-d", prims.ConvParams{BatchGroupCount: 3, RhsDilation: []int{2, 1}}, []int{3, 2, 5, 4}, []int{6, 2, 2, 2}},
	}
}

type dotConfig struct {
	name string
	p    prims.DotParams
	a, b []int
}

func dotConfigs() []dotConfig {
	return []dotConfig{
		{"matmul", prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}, []int{2, 3}, []int{3, 4}},
		{"inner", prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, []int{3}, []int{3}},
		{"outer", prims.DotParams{}, []int{2}, []int{3}},
		{"scalar", prims.DotParams{}, []int{}, []int{2, 3}},
		{"batched", prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}, []int{2, 3, 4}, []int{2, 4, 5}},
		{"batch in the middle", prims.DotParams{LhsContract: []int{0}, RhsContract: []int{2}, LhsBatch: []int{1}, RhsBatch: []int{0}}, []int{3, 2, 4}, []int{2, 5, 3}},
		{"crossed contractions", prims.DotParams{LhsContract: []int{1, 2}, RhsContract: []int{1, 0}}, []int{2, 3, 4}, []int{4, 3, 5}},
		{"batch last", prims.DotParams{LhsContract: []int{2}, RhsContract: []int{0}, LhsBatch: []int{1}, RhsBatch: []int{1}}, []int{3, 2, 4}, []int{4, 2}},
		{"two batch dims", prims.DotParams{LhsContract: []int{1}, RhsContract: []int{2}, LhsBatch: []int{2, 0}, RhsBatch: []int{0, 1}}, []int{2, 3, 4}, []int{4, 2, 3, 5}},
	}
}

func (c jvpCase) String() string {
	if c.name != "" {
		return c.prim.Name + " " + c.name
	}
	s := c.prim.Name
	for _, a := range c.args {
		s += " " + a.TypeString()
	}
	return s
}

// floatOperands returns the indices of the float operands.
func floatOperands(args []*T) []int {
	var fs []int
	for i, a := range args {
		if isFloat(a) {
			fs = append(fs, i)
		}
	}
	return fs
}

// directions returns random tangents for the operands in which, nil
// elsewhere.
func directions(r *rand.Rand, args []*T, which []int) []*T {
	ts := make([]*T, len(args))
	for _, i := range which {
		ts[i] = uniform(r, -1, 1, args[i].Shape()...)
	}
	return ts
}

// centralDiff returns (f(x+εv) − f(x−εv))/2ε for f = Bind of the case.
func (c jvpCase) centralDiff(v []*T) []float64 {
	plus, minus := make([]*T, len(c.args)), make([]*T, len(c.args))
	for i, a := range c.args {
		plus[i], minus[i] = axpy(a, fdEps, v[i]), axpy(a, -fdEps, v[i])
	}
	fp := vals(interp.Bind1(c.prim, c.params, plus...))
	fm := vals(interp.Bind1(c.prim, c.params, minus...))
	d := make([]float64, len(fp))
	for i := range d {
		d[i] = (fp[i] - fm[i]) / (2 * fdEps)
	}
	return d
}

// subsets lists the sets of float operands a test perturbs: all of them,
// and each alone.
func subsets(fs []int) [][]int {
	out := [][]int{fs}
	if len(fs) > 1 {
		for _, i := range fs {
			out = append(out, []int{i})
		}
	}
	return out
}

func TestJVPRules(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range jvpCases() {
		t.Run(c.String(), func(t *testing.T) {
			if c.prim.JVP == nil {
				t.Fatalf("no JVP rule")
			}
			want := interp.Bind(c.prim, c.params, c.args...)
			fs := floatOperands(c.args)

			outs, touts := c.prim.JVP(c.params, c.args, make([]*T, len(c.args)))
			if len(outs) != len(want) || len(touts) != len(want) {
				t.Fatalf("rule returned %d results and %d tangents, want %d", len(outs), len(touts), len(want))
			}
			if touts[0] != nil {
				t.Errorf("zero tangents in, nonzero tangent out")
			}
			checkClose(t, "primal", outs[0], vals(want[0]), 0)

			for _, which := range subsets(fs) {
				v := directions(r, c.args, which)
				outs, touts := c.prim.JVP(c.params, c.args, v)
				checkClose(t, "primal", outs[0], vals(want[0]), 0)
				tan := touts[0]
				if tan != nil && !interp.AvalOf(tan).Equal(interp.AvalOf(want[0])) {
					t.Fatalf("tangent is %v, want %v", interp.AvalOf(tan), interp.AvalOf(want[0]))
				}
				if c.zero {
					if tan != nil {
						t.Errorf("tangent of %s is not a symbolic zero", c.prim.Name)
					}
					continue
				}
				checkClose(t, fmt.Sprintf("tangent along operands %v", which), tan, c.centralDiff(v), jvpTol)
			}
		})
	}
}

// TestJVPRulesFloat32 checks that tangents keep their primal's dtype:
// every constant a rule makes must take the operands' dtype.
func TestJVPRulesFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range jvpCases() {
		t.Run(c.String(), func(t *testing.T) {
			args := make([]*T, len(c.args))
			for i, a := range c.args {
				args[i] = toF32(a)
			}
			params := c.params
			if c.prim == prims.ConvertElementType {
				params = prims.ConvertParams{DType: interp.Float32}
			}
			want := interp.Bind1(c.prim, params, args...)
			v := directions(r, c.args, floatOperands(c.args))
			for i := range v {
				v[i] = toF32(v[i])
			}
			_, touts := c.prim.JVP(params, args, v)
			if touts[0] == nil {
				return
			}
			if !interp.AvalOf(touts[0]).Equal(interp.AvalOf(want)) {
				t.Fatalf("tangent is %v, want %v", interp.AvalOf(touts[0]), interp.AvalOf(want))
			}
			_, ref := c.prim.JVP(c.params, c.args, castAll(v))
			checkClose(t, "tangent in float32 (loose)", touts[0], vals(ref[0]), 1e-3)
		})
	}
}

func castAll(ts []*T) []*T {
	out := make([]*T, len(ts))
	for i, t := range ts {
		if t != nil {
			out[i] = interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: interp.Float64}, t)
		}
	}
	return out
}

// TestJVPSpecialValues checks rules at kinks and singular points against
// exact values.
func TestJVPSpecialValues(t *testing.T) {
	tan := func(p *interp.Prim, params any, args, ts []*T) *T {
		_, touts := p.JVP(params, args, ts)
		return touts[0]
	}
	one := func(n int) *T {
		d := make([]float64, n)
		for i := range d {
			d[i] = 1
		}
		return f64(d, n)
	}
	tx, ty := f64([]float64{1, 2, 3}, 3), f64([]float64{10, 20, 30}, 3)
	x, y := f64([]float64{1, -2, 0}, 3), f64([]float64{1, -2, 0}, 3)
	checkClose(t, "max at ties", tan(prims.Max, nil, []*T{x, y}, []*T{tx, ty}), []float64{5.5, 11, 16.5}, 0)
	checkClose(t, "min at ties", tan(prims.Min, nil, []*T{x, y}, []*T{tx, ty}), []float64{5.5, 11, 16.5}, 0)
	checkClose(t, "max at ties, one tangent", tan(prims.Max, nil, []*T{x, y}, []*T{nil, ty}), []float64{5, 10, 15}, 0)
	nan := f64([]float64{math.NaN()}, 1)
	checkClose(t, "max with NaN", tan(prims.Max, nil, []*T{nan, scalarVec(1)}, []*T{one(1), one(1)}), []float64{0}, 0)

	checkClose(t, "abs at 0", tan(prims.Abs, nil, []*T{f64([]float64{0}, 1)}, []*T{one(1)}), []float64{0}, 0)
	// sinc′ = (cos(πx) − sinc(x))/x, and 0 at 0.
	checkClose(t, "sinc′", tan(prims.Sinc, nil, []*T{f64([]float64{0, 0.5, -1, 2}, 4)}, []*T{one(4)}), []float64{0, -4 / math.Pi, 1, 0.5}, 1e-15)

	// pow: d/dx x^y = 0 where y = 0; d/dy x^y = 0 where x = 0.
	px, py := f64([]float64{0, 0, 2, 0}, 4), f64([]float64{0, 2, 0, 0.5}, 4)
	checkClose(t, "pow d/dx", tan(prims.Pow, nil, []*T{px, py}, []*T{one(4), nil}), []float64{0, 0, 0, math.Inf(1)}, 0)
	checkClose(t, "pow d/dy", tan(prims.Pow, nil, []*T{px, py}, []*T{nil, one(4)}), []float64{0, 0, math.Log(2), 0}, 1e-15)

	// reduce_max with ties averages the tied tangents.
	rx := f64([]float64{1, 3, 3, 2, 5, 5, 5, 0}, 2, 4)
	rt := f64([]float64{1, 2, 4, 8, 1, 2, 6, 100}, 2, 4)
	checkClose(t, "reduce_max ties", tan(prims.ReduceMax, prims.ReduceParams{Axes: []int{1}}, []*T{rx}, []*T{rt}), []float64{3, 3}, 1e-15)

	// reduce_prod with zeros: exact products of the other elements.
	zx := f64([]float64{2, 0, 3, 0, 5}, 5)
	for i := 0; i < 5; i++ {
		e := make([]float64, 5)
		e[i] = 1
		want := 0.0 // two zeros: every product of the others holds a zero
		checkClose(t, "reduce_prod, two zeros", tan(prims.ReduceProd, prims.ReduceParams{Axes: []int{0}}, []*T{zx}, []*T{f64(e, 5)}), []float64{want}, 0)
	}
	sx := f64([]float64{2, 0, 3, 4}, 4)
	checkClose(t, "reduce_prod, one zero", tan(prims.ReduceProd, prims.ReduceParams{Axes: []int{0}}, []*T{sx}, []*T{f64([]float64{1, 1, 1, 1}, 4)}), []float64{24}, 0)

	// Conversions: to float32 converts the tangent; to integers drops it.
	cx := f64([]float64{1.5, -2.5}, 2)
	ct := f64([]float64{0.1, 0.2}, 2)
	if got := tan(prims.ConvertElementType, prims.ConvertParams{DType: interp.Int64}, []*T{cx}, []*T{ct}); got != nil {
		t.Errorf("convert to i64: tangent %v, want nil", got.TypeString())
	}
	if got := tan(prims.ConvertElementType, prims.ConvertParams{DType: interp.Float32}, []*T{cx}, []*T{ct}); got == nil || got.DType() != interp.Float32 {
		t.Errorf("convert to f32: tangent %v, want f32", got.TypeString())
	} else {
		checkClose(t, "convert to f32", got, []float64{float64(float32(0.1)), float64(float32(0.2))}, 0)
	}
}

func scalarVec(v float64) *T { return f64([]float64{v}, 1) }

// ---------------------------------------------------------------------------
// Second derivatives: the rules differentiated by a minimal forward-mode
// interpreter, which checks that they only use their primals through Bind.

type dualTracer struct {
	l       *interp.Level
	primal  *T
	tangent *T
}

func (d *dualTracer) Level() *interp.Level { return d.l }

type dualInterp struct{}

func (dualInterp) Process(l *interp.Level, p *interp.Prim, params any, args []*T) []*T {
	primals, tangents := make([]*T, len(args)), make([]*T, len(args))
	for i, a := range args {
		if d, ok := interp.TracerOf(a).(*dualTracer); ok && d.l == l {
			primals[i], tangents[i] = d.primal, d.tangent
		} else {
			primals[i] = a
		}
	}
	var outs, touts []*T
	switch {
	case p.NonDifferentiable:
		outs = interp.Bind(p, params, primals...)
		touts = make([]*T, len(outs))
	case p.JVP != nil:
		outs, touts = p.JVP(params, primals, tangents)
	default:
		interp.Panicf("test jvp: no rule for %s", p.Name)
	}
	res := make([]*T, len(outs))
	for i, o := range outs {
		res[i] = interp.NewTracer(interp.AvalOf(o), &dualTracer{l, o, touts[i]})
	}
	return res
}

func TestJVPRulesSecondOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range jvpCases() {
		if c.zero || c.noHVP {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			fs := floatOperands(c.args)
			if len(fs) == 0 {
				return
			}
			v := directions(r, c.args, fs) // inner tangent, fixed
			w := directions(r, c.args, fs) // outer direction
			g := func(args []*T) *T {
				_, touts := c.prim.JVP(c.params, args, v)
				return touts[0]
			}
			l := interp.NewLevel("test-jvp", dualInterp{})
			duals := make([]*T, len(c.args))
			for i, a := range c.args {
				duals[i] = interp.NewTracer(interp.AvalOf(a), &dualTracer{l, a, w[i]})
			}
			var hv *T
			if tan := g(duals); tan != nil {
				if d, ok := interp.TracerOf(tan).(*dualTracer); ok && d.l == l {
					hv = d.tangent
				}
			}
			l.End()
			plus, minus := make([]*T, len(c.args)), make([]*T, len(c.args))
			for i, a := range c.args {
				plus[i], minus[i] = axpy(a, fdEps, w[i]), axpy(a, -fdEps, w[i])
			}
			gp, gm := g(plus), g(minus)
			if gp == nil && gm == nil {
				if hv != nil {
					checkClose(t, "second derivative", hv, make([]float64, hv.Size()), 0)
				}
				return
			}
			a, b := vals(gp), vals(gm)
			fd := make([]float64, len(a))
			for i := range fd {
				fd[i] = (a[i] - b[i]) / (2 * fdEps)
			}
			checkClose(t, "second derivative", hv, fd, hvpTol)
		})
	}
}

// ---------------------------------------------------------------------------
// Reverse mode through the rules: a minimal linearize records the tangent
// computation of each JVP rule (checking that every primitive it applies
// to tangents is linear in them), and the recorded graph is run
// transposed with the transpose rules. The result must satisfy
// ⟨u, J v⟩ = ⟨Jᵀu, v⟩ with J v from the JVP rule on concrete tangents.

type linVar struct {
	l  *interp.Level
	id int
}

func (v *linVar) Level() *interp.Level { return v.l }

type linEqn struct {
	p      *interp.Prim
	params any
	args   []*T
	linear []bool
	outs   []int
}

type linRecorder struct {
	avals []interp.Aval
	eqns  []linEqn
}

func (r *linRecorder) newVar(l *interp.Level, a interp.Aval) *T {
	r.avals = append(r.avals, a)
	return interp.NewTracer(a, &linVar{l, len(r.avals) - 1})
}

func (r *linRecorder) varOf(l *interp.Level, t *T) (int, bool) {
	if t == nil {
		return 0, false
	}
	v, ok := interp.TracerOf(t).(*linVar)
	if !ok || v.l != l {
		return 0, false
	}
	return v.id, true
}

func (r *linRecorder) Process(l *interp.Level, p *interp.Prim, params any, args []*T) []*T {
	linear := make([]bool, len(args))
	n := 0
	for i, a := range args {
		if _, ok := r.varOf(l, a); ok {
			linear[i] = true
			n++
			if !prims.LinearIn(p, i) {
				interp.Panicf("test linearize: %s applied to a tangent as operand %d, in which it is not linear", p.Name, i)
			}
		}
	}
	if (p == prims.Mul || p == prims.DotGeneral) && n > 1 {
		interp.Panicf("test linearize: %s of two tangents", p.Name)
	}
	eq := linEqn{p: p, params: params, args: args, linear: linear}
	var res []*T
	for _, a := range interp.Abstract(p, params, args) {
		v := r.newVar(l, a)
		id, _ := r.varOf(l, v)
		eq.outs = append(eq.outs, id)
		res = append(res, v)
	}
	r.eqns = append(r.eqns, eq)
	return res
}

// transpose runs the recorded equations backward from the cotangent ct of
// variable out and returns the cotangents of the variables.
func (r *linRecorder) transpose(l *interp.Level, out int, ct *T) []*T {
	cts := make([]*T, len(r.avals))
	cts[out] = ct
	for k := len(r.eqns) - 1; k >= 0; k-- {
		eq := r.eqns[k]
		outCts := make([]*T, len(eq.outs))
		for j, id := range eq.outs {
			outCts[j] = cts[id]
		}
		args := make([]*T, len(eq.args))
		for i, a := range eq.args {
			args[i] = a
			if eq.linear[i] {
				args[i] = interp.Placeholder(interp.AvalOf(a))
			}
		}
		for i, g := range eq.p.Transpose(eq.params, outCts, args, eq.linear) {
			if !eq.linear[i] || g == nil {
				continue
			}
			id, _ := r.varOf(l, eq.args[i])
			if cts[id] == nil {
				cts[id] = g
			} else {
				cts[id] = interp.Bind1(prims.Add, nil, cts[id], g)
			}
		}
	}
	return cts
}

func TestVJPThroughRules(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, c := range jvpCases() {
		if c.zero {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			fs := floatOperands(c.args)
			if len(fs) == 0 {
				return
			}
			for _, which := range subsets(fs) {
				rec := &linRecorder{}
				l := interp.NewLevel("test-linearize", rec)
				vars := make([]*T, len(c.args))
				for _, i := range which {
					vars[i] = rec.newVar(l, interp.AvalOf(c.args[i]))
				}
				_, touts := c.prim.JVP(c.params, c.args, vars)
				v := directions(r, c.args, which)
				_, jv := c.prim.JVP(c.params, c.args, v)
				if touts[0] == nil {
					l.End()
					if jv[0] != nil {
						t.Errorf("linearized tangent is zero, JVP's is not")
					}
					continue
				}
				out, ok := rec.varOf(l, touts[0])
				if !ok {
					l.End()
					t.Fatalf("tangent along %v is not a linear function of the input tangents", which)
				}
				u := uniform(r, -1, 1, touts[0].Shape()...)
				cts := rec.transpose(l, out, u)
				l.End()
				lhs := dot(u, jv[0])
				rhs := 0.0
				for _, i := range which {
					id, _ := rec.varOf(l, vars[i])
					if g := cts[id]; g != nil {
						if !interp.AvalOf(g).Equal(interp.AvalOf(c.args[i])) {
							t.Fatalf("cotangent of operand %d is %v, want %v", i, interp.AvalOf(g), interp.AvalOf(c.args[i]))
						}
						rhs += dot(g, v[i])
					}
				}
				if math.IsNaN(lhs) && math.IsNaN(rhs) {
					continue // pow of a negative base along y
				}
				if d := math.Abs(lhs - rhs); !(d <= transTol*(1+absDot(u, jv[0]))) {
					t.Errorf("along %v: <u, J v> = %.15g, <Jᵀu, v> = %.15g (diff %.3g)", which, lhs, rhs, d)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Transpose cases.

type linCase struct {
	name   string
	prim   *interp.Prim
	params any
	// args holds the constant operands, and for linear operands a tensor
	// of the operand's shape and dtype (its value is not used).
	args   []*T
	linear []bool
}

func (c linCase) String() string {
	s := c.prim.Name
	if c.name != "" {
		s += " " + c.name
	}
	for i, a := range c.args {
		s += " " + a.TypeString()
		if c.linear[i] {
			s += "*"
		}
	}
	return s
}

func zeros(shape ...int) *T { return f64(make([]float64, backend.ShapeSize(shape)), shape...) }

func linCases() []linCase {
	r := rand.New(rand.NewPCG(9, 10))
	u := func(shape ...int) *T { return uniform(r, -2, 2, shape...) }
	tt, tf, ft, t := []bool{true, true}, []bool{true, false}, []bool{false, true}, []bool{true}
	var cs []linCase
	for _, s := range [][]int{{}, {3}, {2, 3}} {
		cs = append(cs,
			linCase{prim: prims.Add, args: []*T{u(s...), u(s...)}, linear: tt},
			linCase{prim: prims.Sub, args: []*T{u(s...), u(s...)}, linear: tt},
			linCase{prim: prims.Neg, args: []*T{u(s...)}, linear: t},
			linCase{prim: prims.Mul, args: []*T{u(s...), u(s...)}, linear: tf},
			linCase{prim: prims.Mul, args: []*T{u(s...), u(s...)}, linear: ft},
			linCase{prim: prims.Div, args: []*T{u(s...), awayFromZero(r, 0.5, 2, s...)}, linear: tf},
			linCase{prim: prims.Where, args: []*T{randBools(r, s...), u(s...), u(s...)}, linear: []bool{false, true, true}},
			linCase{prim: prims.Where, args: []*T{randBools(r, s...), u(s...), zeros(s...)}, linear: []bool{false, true, false}},
			linCase{prim: prims.Where, args: []*T{randBools(r, s...), zeros(s...), u(s...)}, linear: []bool{false, false, true}},
			linCase{prim: prims.ConvertElementType, params: prims.ConvertParams{DType: interp.Float64}, args: []*T{u(s...)}, linear: t},
			linCase{prim: prims.Copy, args: []*T{u(s...)}, linear: t},
		)
	}
	red := func(x *T, axes ...int) linCase {
		if axes == nil {
			axes = []int{}
		}
		return linCase{name: fmt.Sprintf("axes %v", axes), prim: prims.ReduceSum, params: prims.ReduceParams{Axes: axes}, args: []*T{x}, linear: t}
	}
	bc := func(x *T, shape []int, dims ...int) linCase {
		if dims == nil {
			dims = []int{}
		}
		return linCase{prim: prims.BroadcastInDim, params: prims.BroadcastParams{Shape: shape, Dims: dims}, args: []*T{x}, linear: t}
	}
	sl := func(x *T, start, limit, stride []int) linCase {
		return linCase{prim: prims.Slice, params: prims.SliceParams{Start: start, Limit: limit, Stride: stride}, args: []*T{x}, linear: t}
	}
	pd := func(x, v *T, lin []bool, low, high, interior []int) linCase {
		return linCase{prim: prims.Pad, params: prims.PadParams{Low: low, High: high, Interior: interior}, args: []*T{x, v}, linear: lin}
	}
	cs = append(cs,
		red(u()), red(u(4), 0), red(u(2, 3, 4), 0, 2), red(u(2, 3, 4), 1), red(u(2, 3, 4), 0, 1, 2), red(u(2, 3)),
		bc(u(), []int{2, 3}), bc(u(), nil), bc(u(3), []int{2, 3}, 1), bc(u(1, 3), []int{4, 3}, 0, 1),
		bc(u(2, 1), []int{2, 5, 3}, 0, 2), bc(u(1, 1), []int{1, 4}, 0, 1), bc(u(2, 3), []int{2, 3}, 0, 1),
		linCase{prim: prims.Reshape, params: prims.ReshapeParams{Shape: []int{3, 2}}, args: []*T{u(2, 3)}, linear: t},
		linCase{prim: prims.Reshape, params: prims.ReshapeParams{Shape: []int{1, 1}}, args: []*T{u()}, linear: t},
		linCase{prim: prims.Reshape, params: prims.ReshapeParams{Shape: []int{}}, args: []*T{u(1)}, linear: t},
		linCase{prim: prims.Transpose, params: prims.TransposeParams{Perm: []int{2, 0, 1}}, args: []*T{u(2, 3, 4)}, linear: t},
		linCase{prim: prims.Transpose, params: prims.TransposeParams{Perm: []int{1, 0}}, args: []*T{u(2, 3)}, linear: t},
		linCase{prim: prims.Transpose, params: prims.TransposeParams{Perm: []int{}}, args: []*T{u()}, linear: t},
		linCase{prim: prims.Rev, params: prims.RevParams{Axes: []int{0}}, args: []*T{u(4)}, linear: t},
		linCase{prim: prims.OptimizationBarrier, args: []*T{u(2, 3)}, linear: t},
		linCase{prim: prims.Rev, params: prims.RevParams{Axes: []int{1, 0}}, args: []*T{u(2, 3)}, linear: t},
		linCase{prim: prims.Cumsum, params: prims.CumsumParams{Axis: 0}, args: []*T{u(5)}, linear: t},
		// Self-adjoint for any y: diag(y) − y·yᵀ along the axis.
		linCase{prim: prims.SoftmaxLin, params: prims.AxisParams{Axis: 1}, args: []*T{u(3, 5), u(3, 5)}, linear: []bool{true, false}},
		linCase{prim: prims.SoftmaxLin, params: prims.AxisParams{Axis: 0}, args: []*T{u(4, 2), u(4, 2)}, linear: []bool{true, false}},
		// Self-adjoint for any y and r: r times a symmetric projection.
		linCase{prim: prims.LayerNormLin, params: prims.NormParams{Axes: 1}, args: []*T{u(3, 5), u(3, 5), u(3)}, linear: []bool{true, false, false}},
		linCase{prim: prims.LayerNormLin, params: prims.NormParams{Axes: 2}, args: []*T{u(2, 3, 4), u(2, 3, 4), u(2)}, linear: []bool{true, false, false}},
		linCase{prim: prims.RMSNormLin, params: prims.NormParams{Axes: 1}, args: []*T{u(3, 5), u(3, 5), u(3)}, linear: []bool{true, false, false}},
		linCase{prim: prims.Cumsum, params: prims.CumsumParams{Axis: 1, Reverse: true}, args: []*T{u(2, 3)}, linear: t},
		linCase{prim: prims.Cumsum, params: prims.CumsumParams{Axis: 0, Reverse: true}, args: []*T{u(3, 2)}, linear: t},
		sl(u(5), []int{1}, []int{5}, []int{2}),
		sl(u(5), []int{1}, []int{4}, []int{2}),
		sl(u(5), []int{2}, []int{2}, []int{1}),
		sl(u(4, 6), []int{1, 0}, []int{3, 6}, []int{1, 3}),
		sl(u(), []int{}, []int{}, []int{}),
		pd(u(3), u(), tt, []int{1}, []int{2}, []int{1}),
		pd(u(3), zeros(), tf, []int{1}, []int{2}, []int{1}),
		pd(zeros(3), u(), ft, []int{1}, []int{2}, []int{1}),
		pd(u(2, 3), u(), tt, []int{-1, 0}, []int{1, -2}, []int{0, 1}),
		pd(u(4, 3), u(), tt, []int{-3, 2}, []int{-2, -1}, []int{2, 0}),
		pd(u(0, 2), u(), tt, []int{2, 0}, []int{1, 1}, []int{1, 0}),
		pd(u(), u(), tt, []int{}, []int{}, []int{}),
		linCase{prim: prims.Concatenate, params: prims.AxisParams{Axis: 0}, args: []*T{u(2), u(3), u(1)}, linear: []bool{true, true, true}},
		linCase{prim: prims.Concatenate, params: prims.AxisParams{Axis: 0}, args: []*T{u(2), zeros(3), u(1)}, linear: []bool{true, false, true}},
		linCase{prim: prims.Concatenate, params: prims.AxisParams{Axis: 1}, args: []*T{u(2, 3), u(2, 1)}, linear: tt},
		linCase{prim: prims.Gather, params: prims.AxisParams{Axis: 0}, args: []*T{u(5), i64([]int64{3, 0, 3}, 3)}, linear: tf},
		linCase{prim: prims.Gather, params: prims.AxisParams{Axis: 1}, args: []*T{u(3, 4), i64([]int64{-1, 2, 7, 1}, 2, 2)}, linear: tf},
		linCase{prim: prims.Gather, params: prims.AxisParams{Axis: 0}, args: []*T{u(4, 2), i64([]int64{2})}, linear: tf},
	)
	for _, sc := range []*interp.Prim{prims.ScatterAdd, prims.Scatter} {
		cs = append(cs,
			linCase{prim: sc, params: prims.AxisParams{Axis: 0}, args: []*T{u(5), i64([]int64{3, 0, 3}, 3), u(3)}, linear: []bool{true, false, true}},
			linCase{prim: sc, params: prims.AxisParams{Axis: 0}, args: []*T{u(5), i64([]int64{3, 0, 3}, 3), zeros(3)}, linear: []bool{true, false, false}},
			linCase{prim: sc, params: prims.AxisParams{Axis: 0}, args: []*T{zeros(5), i64([]int64{3, 0, 3}, 3), u(3)}, linear: []bool{false, false, true}},
			linCase{prim: sc, params: prims.AxisParams{Axis: 1}, args: []*T{u(3, 4), i64([]int64{1, 9, -1, 1, 2, 1}, 2, 3), u(3, 2, 3)}, linear: []bool{true, false, true}},
			linCase{prim: sc, params: prims.AxisParams{Axis: 0}, args: []*T{u(2, 2), i64([]int64{1}), u(2)}, linear: []bool{true, false, true}},
		)
	}
	cs = append(cs,
		linCase{prim: prims.DynamicSlice, params: prims.DynamicSliceParams{Sizes: []int{3}}, args: []*T{u(5), i64([]int64{1})}, linear: tf},
		linCase{prim: prims.DynamicSlice, params: prims.DynamicSliceParams{Sizes: []int{2, 2}}, args: []*T{u(3, 4), i64([]int64{2}), i64([]int64{-3})}, linear: []bool{true, false, false}},
		linCase{prim: prims.DynamicSlice, params: prims.DynamicSliceParams{Sizes: []int{}}, args: []*T{u()}, linear: t},
		linCase{prim: prims.DynamicUpdateSlice, args: []*T{u(5), u(2), i64([]int64{4})}, linear: []bool{true, true, false}},
		linCase{prim: prims.DynamicUpdateSlice, args: []*T{u(5), zeros(2), i64([]int64{1})}, linear: []bool{true, false, false}},
		linCase{prim: prims.DynamicUpdateSlice, args: []*T{zeros(3, 4), u(2, 3), i64([]int64{1}), i64([]int64{0})}, linear: []bool{false, true, false, false}},
	)
	for _, d := range dotConfigs() {
		cs = append(cs,
			linCase{name: d.name, prim: prims.DotGeneral, params: d.p, args: []*T{u(d.a...), u(d.b...)}, linear: tf},
			linCase{name: d.name, prim: prims.DotGeneral, params: d.p, args: []*T{u(d.a...), u(d.b...)}, linear: ft},
		)
	}
	for _, c := range convConfigs() {
		cs = append(cs,
			linCase{name: c.name, prim: prims.ConvGeneralDilated, params: c.p, args: []*T{u(c.x...), u(c.w...)}, linear: tf},
			linCase{name: c.name, prim: prims.ConvGeneralDilated, params: c.p, args: []*T{u(c.x...), u(c.w...)}, linear: ft},
		)
	}
	for _, c := range windowConfigs() {
		cs = append(cs, linCase{name: c.name, prim: prims.ReduceWindowSum, params: c.p, args: []*T{u(c.x...)}, linear: t})
	}
	cs = append(cs, linCase{name: "all padding", prim: prims.ReduceWindowSum, params: prims.WindowParams{Window: []int{2}, Strides: []int{2}, PadLo: []int{5}, PadHi: []int{4}}, args: []*T{u(3)}, linear: t})
	cs = append(cs, linalgLinCases(r)...)
	return cs
}

// deadTracer is a placeholder payload whose level has ended: binding a
// tensor that holds it panics, so a rule that binds a linear operand's
// placeholder fails loudly.
type deadTracer struct{ l *interp.Level }

func (d deadTracer) Level() *interp.Level { return d.l }

func TestTransposeRules(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	dead := interp.NewLevel("ended", dualInterp{})
	dead.End()
	for _, c := range linCases() {
		t.Run(c.String(), func(t *testing.T) {
			p := c.prim
			if p.Transpose == nil {
				t.Fatalf("no transpose rule")
			}
			for i, l := range c.linear {
				if l && !prims.LinearIn(p, i) {
					t.Fatalf("LinearIn(%s, %d) is false", p.Name, i)
				}
			}
			// L(t): the primitive with random values in the linear slots.
			in := make([]*T, len(c.args))
			copy(in, c.args)
			ts := make([]*T, len(c.args))
			for i, l := range c.linear {
				if l {
					ts[i] = uniform(r, -1, 1, c.args[i].Shape()...)
					in[i] = ts[i]
				}
			}
			y := interp.Bind1(p, c.params, in...)
			ct := uniform(r, -1, 1, y.Shape()...)
			lhs := dot(ct, y)
			scale := 1 + absDot(ct, y)

			for _, ph := range []struct {
				name string
				tr   interp.Tracer // nil: interp.Placeholder
			}{{"placeholder", nil}, {"dead placeholder", deadTracer{dead}}} {
				args := make([]*T, len(c.args))
				for i, a := range c.args {
					args[i] = a
					if c.linear[i] {
						if ph.tr == nil {
							args[i] = interp.Placeholder(interp.AvalOf(a))
						} else {
							args[i] = interp.NewTracer(interp.AvalOf(a), ph.tr)
						}
					}
				}
				cts := p.Transpose(c.params, []*T{ct}, args, c.linear)
				if len(cts) != len(args) {
					t.Fatalf("%s: %d cotangents for %d operands", ph.name, len(cts), len(args))
				}
				rhs := 0.0
				for i, g := range cts {
					if !c.linear[i] {
						if g != nil {
							t.Errorf("%s: cotangent for constant operand %d", ph.name, i)
						}
						continue
					}
					if g != nil && !interp.AvalOf(g).Equal(interp.AvalOf(c.args[i])) {
						t.Fatalf("%s: cotangent %d is %v, want %v", ph.name, i, interp.AvalOf(g), interp.AvalOf(c.args[i]))
					}
					rhs += dot(g, ts[i])
				}
				if d := math.Abs(lhs - rhs); !(d <= transTol*scale) {
					t.Errorf("%s: <u, L t> = %.15g, <Lᵀu, t> = %.15g (diff %.3g)", ph.name, lhs, rhs, d)
				}
				zero := p.Transpose(c.params, []*T{nil}, args, c.linear)
				if !allNilT(zero) || len(zero) != len(args) {
					t.Errorf("%s: zero cotangent in, nonzero out", ph.name)
				}
			}
		})
	}
}

func allNilT(ts []*T) bool {
	for _, t := range ts {
		if t != nil {
			return false
		}
	}
	return true
}

// TestTransposeRulesFloat32 checks that cotangents keep the operand's
// dtype.
func TestTransposeRulesFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range linCases() {
		t.Run(c.String(), func(t *testing.T) {
			args := make([]*T, len(c.args))
			for i, a := range c.args {
				args[i] = toF32(a)
				if c.linear[i] {
					args[i] = interp.Placeholder(interp.AvalOf(args[i]))
				}
			}
			params := c.params
			if c.prim == prims.ConvertElementType {
				params = prims.ConvertParams{DType: interp.Float32}
			}
			in := make([]*T, len(args))
			for i := range args {
				in[i] = toF32(c.args[i])
			}
			y := interp.Bind1(c.prim, params, in...)
			ct := toF32(uniform(r, -1, 1, y.Shape()...))
			for i, g := range c.prim.Transpose(params, []*T{ct}, args, c.linear) {
				if g != nil && !interp.AvalOf(g).Equal(interp.AvalOf(args[i])) {
					t.Errorf("cotangent %d is %v, want %v", i, interp.AvalOf(g), interp.AvalOf(args[i]))
				}
			}
		})
	}
	// convert f32 → f64 transposes to an f32 cotangent.
	ph := interp.Placeholder(interp.Aval{Shape: []int{2}, DType: interp.Float32})
	g := prims.ConvertElementType.Transpose(prims.ConvertParams{DType: interp.Float64}, []*T{f64([]float64{1, 2}, 2)}, []*T{ph}, []bool{true})
	if g[0] == nil || g[0].DType() != interp.Float32 {
		t.Errorf("convert f32→f64 transpose: %v, want f32[2]", g[0].TypeString())
	}
}

func TestTransposeRejectsNonlinear(t *testing.T) {
	ph := interp.Placeholder(interp.Aval{Shape: []int{2}, DType: interp.Float64})
	ct := f64([]float64{1, 2}, 2)
	for _, c := range []struct {
		p      *interp.Prim
		args   []*T
		linear []bool
	}{
		{prims.Mul, []*T{ph, ph}, []bool{true, true}},
		{prims.Div, []*T{ct, ph}, []bool{false, true}},
		{prims.Gather, []*T{ct, ph}, []bool{false, true}},
	} {
		err := interp.Catch(func() { c.p.Transpose(nil, []*T{ct}, c.args, c.linear) })
		if err == nil {
			t.Errorf("%s transpose with linear %v: no error", c.p.Name, c.linear)
		}
	}
}

// TestRuleCoverage checks every registered primitive: non-differentiable,
// a mutation (differentiated through its pure form), or with a JVP rule;
// every primitive that can be linear has a transpose rule; and every rule
// is exercised by a case above.
func TestRuleCoverage(t *testing.T) {
	jvpTested, transTested := map[*interp.Prim]bool{}, map[*interp.Prim]bool{}
	for _, c := range jvpCases() {
		jvpTested[c.prim] = true
	}
	for _, c := range linCases() {
		transTested[c.prim] = true
	}
	for _, p := range interp.Prims() {
		if slices.Contains(prims.Collectives, p) {
			// Their rules need an axis bound: package dist tests them
			// under Vmap with an axis name (TestCollectiveDerivatives:
			// JVP and Grad against finite differences, each transpose
			// by <Ax, y> = <x, Aᵀy>).
			if p.JVP == nil || (p != prims.Pmax && p != prims.Pmin && p.Transpose == nil) {
				t.Errorf("%s: a collective without its JVP or transpose rule", p.Name)
			}
			continue
		}
		switch {
		case p.Kind == interp.Mutation:
			if p.Pure == nil {
				t.Errorf("%s: mutation without a pure form", p.Name)
			}
		case p.NonDifferentiable:
			if p.JVP != nil {
				t.Errorf("%s: both NonDifferentiable and a JVP rule", p.Name)
			}
		case p.JVP == nil:
			t.Errorf("%s: no JVP rule and not NonDifferentiable", p.Name)
		case !jvpTested[p] && !slices.Contains(prims.Debugging, p): // tested by their prints and calls, in package peel
			t.Errorf("%s: JVP rule not tested", p.Name)
		}
		if (p.Linear != nil) != (p.Transpose != nil) {
			t.Errorf("%s: Linear %v but transpose rule set = %v", p.Name, p.Linear, p.Transpose != nil)
		}
		if p.Transpose != nil && !transTested[p] {
			t.Errorf("%s: transpose rule not tested", p.Name)
		}
	}
}

func TestLinearIn(t *testing.T) {
	for _, c := range []struct {
		p    *interp.Prim
		i    int
		want bool
	}{
		{prims.Concatenate, 0, true}, {prims.Concatenate, 5, true},
		{prims.DynamicSlice, 0, true}, {prims.DynamicSlice, 3, false},
		{prims.DynamicUpdateSlice, 1, true}, {prims.DynamicUpdateSlice, 2, false},
		{prims.Where, 0, false}, {prims.Where, 2, true},
		{prims.Exp, 0, false}, {prims.Div, 1, false}, {prims.Add, -1, false},
	} {
		if got := prims.LinearIn(c.p, c.i); got != c.want {
			t.Errorf("LinearIn(%s, %d) = %v, want %v", c.p.Name, c.i, got, c.want)
		}
	}
}

func TestZeros(t *testing.T) {
	for _, a := range []interp.Aval{
		{Shape: []int{}, DType: interp.Float64},
		{Shape: []int{2, 3}, DType: interp.Float32},
		{Shape: []int{0, 4}, DType: interp.Int64},
		{Shape: []int{3}, DType: interp.Bool},
	} {
		z := prims.Zeros(a)
		if !interp.AvalOf(z).Equal(a) {
			t.Errorf("Zeros(%v) is %v", a, interp.AvalOf(z))
		}
		if a.DType.IsFloat() {
			checkClose(t, "Zeros", z, make([]float64, z.Size()), 0)
		}
	}
	checkClose(t, "Full", prims.Full(2.5, interp.Aval{Shape: []int{2}, DType: interp.Float64}), []float64{2.5, 2.5}, 0)
	if err := interp.Catch(func() { prims.Zeros(interp.Aval{Shape: []int{1}}) }); err == nil {
		t.Errorf("Zeros of an invalid dtype: no error")
	}
}
