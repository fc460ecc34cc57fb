package peel_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// ownsBuffer checks that x is concrete and owns a contiguous buffer of
// exactly its size (no zero-stride broadcast), so it can be written.
func ownsBuffer(t *testing.T, name string, x *peel.Tensor) {
	t.Helper()
	if !x.IsConcrete() {
		t.Errorf("%s: result is not concrete", name)
		return
	}
	arr, _ := interp.ArrayOf(x)
	if arr.Overlaps() || !arr.IsContiguous() || arr.Buf.Len() != x.Size() || arr.Offset != 0 {
		t.Errorf("%s: result is not a buffer of its own: shape %v strides %v offset %d buffer %d", name, arr.Shape, arr.Strides, arr.Offset, arr.Buf.Len())
	}
}

func TestScalar(t *testing.T) {
	cases := []struct {
		v    any
		dt   peel.DType
		want float64
	}{
		{2.5, peel.Float64, 2.5},
		{float32(1.5), peel.Float32, 1.5},
		{3, peel.Int64, 3},
		{int64(-4), peel.Int64, -4},
		{int32(5), peel.Int64, 5},
		{uint8(6), peel.Int64, 6},
		{true, peel.Bool, 1},
		{false, peel.Bool, 0},
	}
	for _, c := range cases {
		x := peel.Scalar(c.v)
		check(t, "Scalar", x, c.dt, []int{}, []float64{c.want}, 0)
		ownsBuffer(t, "Scalar", x)
	}
	big := peel.Scalar(int64(1<<62 + 1))
	if got := big.Int64s()[0]; got != 1<<62+1 {
		t.Errorf("Scalar(int64) lost precision: %d", got)
	}
	wantError(t, "peel.Scalar", func() { peel.Scalar("x") }, "string")
	wantError(t, "peel.Scalar", func() { peel.Scalar(uint64(1)) }, "uint64")
	wantError(t, "peel.Scalar", func() { peel.Scalar(nil) }, "nil")
}

func TestZerosOnesFull(t *testing.T) {
	for _, dt := range []peel.DType{peel.Bool, peel.Int64, peel.Float32, peel.Float64} {
		check(t, "Zeros", peel.Zeros(dt, 2, 3), dt, []int{2, 3}, make([]float64, 6), 0)
		check(t, "Zeros rank0", peel.Zeros(dt), dt, []int{}, []float64{0}, 0)
		check(t, "Zeros empty", peel.Zeros(dt, 3, 0), dt, []int{3, 0}, nil, 0)
		check(t, "Ones", peel.Ones(dt, 3), dt, []int{3}, []float64{1, 1, 1}, 0)
		check(t, "Ones rank0", peel.Ones(dt), dt, []int{}, []float64{1}, 0)
		for _, x := range []*peel.Tensor{peel.Zeros(dt, 2, 3), peel.Ones(dt, 4), peel.Full(dt, 2, 1, 2), peel.Ones(dt)} {
			ownsBuffer(t, "creation "+dt.String(), x)
		}
	}
	check(t, "Full f64", peel.Full(peel.Float64, -2.5, 2), peel.Float64, []int{2}, []float64{-2.5, -2.5}, 0)
	check(t, "Full f32", peel.Full(peel.Float32, 0.1, 1), peel.Float32, []int{1}, []float64{float64(float32(0.1))}, 0)
	check(t, "Full i64", peel.Full(peel.Int64, 2.7, 2), peel.Int64, []int{2}, []float64{2, 2}, 0)
	check(t, "Full i64 negative", peel.Full(peel.Int64, -2.7), peel.Int64, []int{}, []float64{-2}, 0)
	check(t, "Full bool", peel.Full(peel.Bool, -0.5, 2), peel.Bool, []int{2}, []float64{1, 1}, 0)
	check(t, "Full bool 0", peel.Full(peel.Bool, 0, 2), peel.Bool, []int{2}, []float64{0, 0}, 0)
	check(t, "Full NaN", peel.Full(peel.Float64, math.NaN(), 1), peel.Float64, []int{1}, []float64{math.NaN()}, 0)
	if v := peel.Full(peel.Float64, math.Copysign(0, -1)).Float64s()[0]; !math.Signbit(v) {
		t.Errorf("Full(-0) = %v, want -0", v)
	}

	// The shape argument is copied.
	shape := []int{2, 2}
	z := peel.Zeros(peel.Float64, shape...)
	shape[0] = 5
	if z.Shape()[0] != 2 {
		t.Errorf("Zeros kept the caller's shape slice")
	}

	for _, c := range []struct {
		op string
		f  func()
	}{
		{"peel.Zeros", func() { peel.Zeros(peel.Float64, 2, -1) }},
		{"peel.Ones", func() { peel.Ones(peel.Int64, -3) }},
		{"peel.Full", func() { peel.Full(peel.Float32, 1, 1, -1) }},
	} {
		wantError(t, c.op, c.f, "negative")
	}
	wantError(t, "peel.Zeros", func() { peel.Zeros(peel.DType(0), 2) }, "dtype")
	wantError(t, "peel.Ones", func() { peel.Ones(peel.DType(99), 2) }, "dtype")
	wantError(t, "peel.Full", func() { peel.Full(peel.DType(0), 1) }, "dtype")
}

// fakeTracer is a tracer of a level with no interpreter: the *Like
// functions only look at its shape and dtype.
type fakeTracer struct{ l *interp.Level }

func (f fakeTracer) Level() *interp.Level { return f.l }

func TestLike(t *testing.T) {
	x := peel.FromInt64s([]int64{1, 2, 3, 4, 5, 6}, 2, 3)
	check(t, "ZerosLike", peel.ZerosLike(x), peel.Int64, []int{2, 3}, make([]float64, 6), 0)
	check(t, "OnesLike", peel.OnesLike(x), peel.Int64, []int{2, 3}, []float64{1, 1, 1, 1, 1, 1}, 0)
	check(t, "FullLike", peel.FullLike(x, 7.9), peel.Int64, []int{2, 3}, []float64{7, 7, 7, 7, 7, 7}, 0)
	check(t, "FullLike f32", peel.FullLike(peel.Zeros(peel.Float32, 2), 0.5), peel.Float32, []int{2}, []float64{0.5, 0.5}, 0)
	check(t, "OnesLike bool", peel.OnesLike(peel.Zeros(peel.Bool, 2)), peel.Bool, []int{2}, []float64{1, 1}, 0)
	check(t, "ZerosLike rank0", peel.ZerosLike(peel.Scalar(3.0)), peel.Float64, []int{}, []float64{0}, 0)
	check(t, "OnesLike empty", peel.OnesLike(peel.Zeros(peel.Float64, 0, 2)), peel.Float64, []int{0, 2}, nil, 0)
	for _, y := range []*peel.Tensor{peel.ZerosLike(x), peel.OnesLike(x), peel.FullLike(x, 2), peel.OnesLike(peel.Scalar(1.0))} {
		ownsBuffer(t, "Like", y)
	}
	// The result is a new tensor even when it equals the operand.
	z := peel.Zeros(peel.Float64, 2)
	if peel.ZerosLike(z) == z {
		t.Errorf("ZerosLike returned its operand")
	}

	// A tracer: only its shape and dtype are used.
	lvl := interp.NewLevel("fake", nil)
	defer lvl.End()
	tr := interp.NewTracer(interp.Aval{Shape: []int{3, 2}, DType: peel.Float32}, fakeTracer{lvl})
	check(t, "ZerosLike tracer", peel.ZerosLike(tr), peel.Float32, []int{3, 2}, make([]float64, 6), 0)
	check(t, "OnesLike tracer", peel.OnesLike(tr), peel.Float32, []int{3, 2}, []float64{1, 1, 1, 1, 1, 1}, 0)
	check(t, "FullLike tracer", peel.FullLike(tr, -1), peel.Float32, []int{3, 2}, []float64{-1, -1, -1, -1, -1, -1}, 0)
	ownsBuffer(t, "ZerosLike tracer", peel.ZerosLike(tr))

	wantError(t, "peel.ZerosLike", func() { peel.ZerosLike(nil) }, "nil")
	wantError(t, "peel.OnesLike", func() { peel.OnesLike(nil) }, "nil")
	wantError(t, "peel.FullLike", func() { peel.FullLike(nil, 1) }, "nil")
}

func TestArange(t *testing.T) {
	cases := []struct {
		name              string
		dt                peel.DType
		start, stop, step float64
		want              []float64
	}{
		{"basic", peel.Float64, 0, 5, 1, []float64{0, 1, 2, 3, 4}},
		{"fractional", peel.Float64, 1, 2, 0.3, []float64{1, 1.3, 1.6, 1.9}},
		{"descending", peel.Float64, 5, 0, -2, []float64{5, 3, 1}},
		{"empty", peel.Float64, 0, 0, 1, []float64{}},
		{"wrong direction", peel.Float64, 0, -1, 1, []float64{}},
		{"wrong direction down", peel.Float64, 0, 1, -1, []float64{}},
		{"int", peel.Int64, 0, 10, 3, []float64{0, 3, 6, 9}},
		{"int negative", peel.Int64, -3, 3, 2, []float64{-3, -1, 1}},
		{"f32", peel.Float32, 0, 1, 0.25, []float64{0, 0.25, 0.5, 0.75}},
		{"exact stop excluded", peel.Float64, 0, 1, 0.5, []float64{0, 0.5}},
	}
	for _, c := range cases {
		x := peel.Arange(c.dt, c.start, c.stop, c.step)
		check(t, "Arange "+c.name, x, c.dt, []int{len(c.want)}, c.want, 1e-15)
		ownsBuffer(t, "Arange", x)
	}
	wantError(t, "peel.Arange", func() { peel.Arange(peel.Float64, 0, 1, 0) }, "step")
	wantError(t, "peel.Arange", func() { peel.Arange(peel.Float64, 0, math.NaN(), 1) }, "finite")
	wantError(t, "peel.Arange", func() { peel.Arange(peel.Float64, 0, math.Inf(1), 1) }, "finite")
	wantError(t, "peel.Arange", func() { peel.Arange(peel.Bool, 0, 2, 1) }, "bool")
	wantError(t, "peel.Arange", func() { peel.Arange(peel.DType(0), 0, 2, 1) }, "dtype")
	wantError(t, "peel.Arange", func() { peel.Arange(peel.Float64, 0, 1e300, 1) }, "too many")
}

func TestLinspace(t *testing.T) {
	cases := []struct {
		name        string
		start, stop float64
		n           int
		dt          peel.DType
		want        []float64
	}{
		{"basic", 0, 1, 5, peel.Float64, []float64{0, 0.25, 0.5, 0.75, 1}},
		{"descending", 1, 0, 3, peel.Float64, []float64{1, 0.5, 0}},
		{"one", 2, 5, 1, peel.Float64, []float64{2}},
		{"none", 2, 5, 0, peel.Float64, []float64{}},
		{"two", -1, 1, 2, peel.Float32, []float64{-1, 1}},
		{"stop exact", 0, 0.3, 4, peel.Float64, []float64{0, 0.1, 0.2, 0.3}},
		{"int floors", 0, 10, 4, peel.Int64, []float64{0, 3, 6, 10}},
		{"int negative floors", -1, 0, 3, peel.Int64, []float64{-1, -1, 0}},
	}
	for _, c := range cases {
		x := peel.Linspace(c.dt, c.start, c.stop, c.n)
		check(t, "Linspace "+c.name, x, c.dt, []int{len(c.want)}, c.want, 1e-15)
		ownsBuffer(t, "Linspace", x)
	}
	if v := peel.Linspace(peel.Float64, 0, 0.3, 4).Float64s(); v[3] != 0.3 {
		t.Errorf("Linspace does not end exactly at stop: %v", v)
	}
	wantError(t, "peel.Linspace", func() { peel.Linspace(peel.Float64, 0, 1, -1) }, "negative")
	wantError(t, "peel.Linspace", func() { peel.Linspace(peel.Float64, 0, math.Inf(-1), 3) }, "finite")
	wantError(t, "peel.Linspace", func() { peel.Linspace(peel.Bool, 0, 1, 3) }, "bool")
}

func TestEye(t *testing.T) {
	check(t, "Eye 3", peel.Eye(peel.Float64, 3), peel.Float64, []int{3, 3}, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, 0)
	check(t, "Eye i64", peel.Eye(peel.Int64, 2), peel.Int64, []int{2, 2}, []float64{1, 0, 0, 1}, 0)
	check(t, "Eye f32", peel.Eye(peel.Float32, 1), peel.Float32, []int{1, 1}, []float64{1}, 0)
	check(t, "Eye bool", peel.Eye(peel.Bool, 2), peel.Bool, []int{2, 2}, []float64{1, 0, 0, 1}, 0)
	check(t, "Eye 0", peel.Eye(peel.Float64, 0), peel.Float64, []int{0, 0}, nil, 0)
	ownsBuffer(t, "Eye", peel.Eye(peel.Float64, 4))
	wantError(t, "peel.Eye", func() { peel.Eye(peel.Float64, -1) }, "negative")
	wantError(t, "peel.Eye", func() { peel.Eye(peel.DType(0), 2) }, "dtype")
}
