package peel_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

var everyDType = []peel.DType{peel.Bool, peel.Uint8, peel.Int32, peel.Int64, peel.Float16, peel.BFloat16, peel.Float32, peel.Float64}

// TestPromoteTypesTable checks every pair against JAX's lattice
// restricted to peel's dtypes, written out by hand.
func TestPromoteTypesTable(t *testing.T) {
	const (
		b, u8, i32, i64 = peel.Bool, peel.Uint8, peel.Int32, peel.Int64
		f16, bf, f32    = peel.Float16, peel.BFloat16, peel.Float32
		f64             = peel.Float64
	)
	// Rows and columns in everyDType's order.
	want := [8][8]peel.DType{
		/* bool */ {b, u8, i32, i64, f16, bf, f32, f64},
		/* u8   */ {u8, u8, i32, i64, f16, bf, f32, f64},
		/* i32  */ {i32, i32, i32, i64, f16, bf, f32, f64},
		/* i64  */ {i64, i64, i64, i64, f16, bf, f32, f64},
		/* f16  */ {f16, f16, f16, f16, f16, f32, f32, f64},
		/* bf16 */ {bf, bf, bf, bf, f32, bf, f32, f64},
		/* f32  */ {f32, f32, f32, f32, f32, f32, f32, f64},
		/* f64  */ {f64, f64, f64, f64, f64, f64, f64, f64},
	}
	for i, a := range everyDType {
		for j, c := range everyDType {
			if got := peel.PromoteTypes(a, c); got != want[i][j] {
				t.Errorf("PromoteTypes(%v, %v) = %v, want %v", a, c, got, want[i][j])
			}
			// Tensors promote as PromoteTypes says.
			x, y := peel.AsType(peel.Ones(peel.Float64, 2), a), peel.AsType(peel.Ones(peel.Float64, 2), c)
			if got := peel.Where(peel.FromBools([]bool{true, false}), x, y).DType(); got != want[i][j] {
				t.Errorf("Where(%v, %v) has dtype %v, want %v", a, c, got, want[i][j])
			}
		}
	}
}

// TestWeakScalarsNarrowDTypes: Go scalars take a tensor's dtype when it
// is of their kind or a wider one.
func TestWeakScalarsNarrowDTypes(t *testing.T) {
	cases := []struct {
		x      peel.DType
		scalar any
		want   peel.DType
	}{
		{peel.Int32, 2, peel.Int32}, {peel.Uint8, 1, peel.Uint8}, {peel.Uint8, int64(3), peel.Uint8},
		{peel.Int32, 0.5, peel.Float64}, {peel.Uint8, 1.5, peel.Float64},
		{peel.Float16, 2.0, peel.Float16}, {peel.BFloat16, 3, peel.BFloat16}, {peel.Float16, true, peel.Float16},
		{peel.Bool, 1, peel.Int64}, {peel.Int32, true, peel.Int32},
	}
	for _, c := range cases {
		x := peel.AsType(peel.Ones(peel.Float64, 3), c.x)
		if got := peel.Add(x, c.scalar).DType(); got != c.want {
			t.Errorf("Add(%v tensor, %T) has dtype %v, want %v", c.x, c.scalar, got, c.want)
		}
	}
}

// exactValue is a source element: an exact float, or an integer.
type exactValue struct {
	isInt bool
	f     float64
	i     int64
}

// refConvert is the reference of AsType for one element: float → int
// truncates toward zero and saturates (NaN → 0), int → int wraps, float
// dtypes round to nearest even once (the f16/bf16 roundings checked
// against an IEEE reference in package backend), nonzero → true.
func refConvert(v exactValue, to peel.DType) float64 {
	if to == peel.Bool {
		if v.isInt {
			return b2f(v.i != 0)
		}
		return b2f(v.f != 0)
	}
	if v.isInt {
		switch to {
		case peel.Int64:
			return float64(v.i)
		case peel.Int32:
			return float64(int32(v.i))
		case peel.Uint8:
			return float64(uint8(v.i))
		case peel.Float64:
			return float64(v.i)
		case peel.Float32:
			return float64(float32(v.i))
		case peel.Float16:
			return backend.F16FromInt64(v.i).Float64()
		case peel.BFloat16:
			return backend.BF16FromInt64(v.i).Float64()
		}
	}
	sat := func(lo, hi float64) float64 {
		switch {
		case math.IsNaN(v.f):
			return 0
		case v.f <= lo:
			return lo
		case v.f >= hi:
			return hi
		}
		return math.Trunc(v.f) + 0 // an integer has no -0
	}
	switch to {
	case peel.Int64:
		return sat(math.MinInt64, math.MaxInt64)
	case peel.Int32:
		return sat(math.MinInt32, math.MaxInt32)
	case peel.Uint8:
		return sat(0, 255)
	case peel.Float64:
		return v.f
	case peel.Float32:
		return float64(float32(v.f))
	case peel.Float16:
		return backend.F16FromFloat64(v.f).Float64()
	case peel.BFloat16:
		return backend.BF16FromFloat64(v.f).Float64()
	}
	panic("bad dtype")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// elems returns t's elements as exact values (floats widened exactly).
func elems(t *testing.T, x *peel.Tensor) []exactValue {
	t.Helper()
	var out []exactValue
	switch x.DType() {
	case peel.Bool:
		for _, v := range x.Bools() {
			out = append(out, exactValue{isInt: true, i: int64(b2f(v))})
		}
	case peel.Int64:
		for _, v := range x.Int64s() {
			out = append(out, exactValue{isInt: true, i: v})
		}
	case peel.Int32:
		for _, v := range x.Int32s() {
			out = append(out, exactValue{isInt: true, i: int64(v)})
		}
	case peel.Uint8:
		for _, v := range x.Uint8s() {
			out = append(out, exactValue{isInt: true, i: int64(v)})
		}
	case peel.Float64:
		for _, v := range x.Float64s() {
			out = append(out, exactValue{f: v})
		}
	default:
		for _, v := range x.Float32s() {
			out = append(out, exactValue{f: float64(v)})
		}
	}
	return out
}

func sameFloat(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

var (
	floatEdgeValues = []float64{0, math.Copysign(0, -1), 1, -1, 1.5, -2.5, -2.9, 0.1, 1.0 / 3, 65504, 65519, 65520, 1e5, -1e5,
		0x1p-14, 0x1p-24, 0x1p-25, 0x3p-26, 6e-8, 1e-8, 1 + 0x1p-8, 1 + 0x3p-8, 1 + 0x1p-11, 255.9, 256, -0.9,
		0x1p31, -0x1p31 - 1, 3e9, 3.4e38, math.MaxFloat32, 1e300, -1e300, 0x1p63, -0x1p64, 1e-40, 5e-324,
		math.Inf(1), math.Inf(-1), math.NaN()}
	intEdgeValues = []int64{0, 1, -1, 127, 128, 255, 256, -129, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1,
		math.MaxInt64, math.MinInt64, 65504, 65519, 65520, 1<<24 + 1, 1<<53 + 1, 2049, 2051, 257, 259, 1<<60 + 1<<52 + 1}
)

// source returns a tensor of dtype d holding edge values of its kind.
func source(d peel.DType) *peel.Tensor {
	switch d {
	case peel.Bool:
		return peel.FromBools([]bool{true, false, true})
	case peel.Int64:
		return peel.FromInt64s(intEdgeValues)
	case peel.Int32:
		var s []int32
		for _, v := range intEdgeValues {
			if v >= math.MinInt32 && v <= math.MaxInt32 {
				s = append(s, int32(v))
			}
		}
		return peel.FromInt32s(s)
	case peel.Uint8:
		return peel.FromUint8s([]uint8{0, 1, 127, 128, 254, 255})
	case peel.Float32:
		s := make([]float32, len(floatEdgeValues))
		for i, v := range floatEdgeValues {
			s[i] = float32(v)
		}
		return peel.FromFloat32s(s)
	case peel.Float16:
		h := make([]backend.F16, 0, 1<<16)
		for b := range 1 << 16 {
			h = append(h, backend.F16(b))
		}
		return fromHostDType(h)
	case peel.BFloat16:
		h := make([]backend.BF16, 0, 1<<16)
		for b := range 1 << 16 {
			h = append(h, backend.BF16(b))
		}
		return fromHostDType(h)
	}
	return peel.FromFloat64s(floatEdgeValues)
}

// fromHostDType makes a 1-D tensor of a host slice on the default backend.
func fromHostDType(data any) *peel.Tensor {
	be := peel.DefaultBackend()
	buf := be.FromHost(data)
	return interp.NewConcrete(be, backend.Array{Buf: buf, Shape: []int{buf.Len()}})
}

// TestAsTypeEveryPair converts edge values (every f16 and bf16 bit
// pattern) between every pair of dtypes.
func TestAsTypeEveryPair(t *testing.T) {
	for _, from := range everyDType {
		x := source(from)
		in := elems(t, x)
		for _, to := range everyDType {
			for _, view := range []string{"contiguous", "reversed"} {
				src := x
				if view == "reversed" {
					src = peel.Flip(x, 0)
				}
				y := peel.AsType(src, to)
				if y.DType() != to {
					t.Fatalf("AsType(%v → %v) has dtype %v", from, to, y.DType())
				}
				got := elems(t, y)
				fails := 0
				for k, v := range in {
					g := got[k]
					if view == "reversed" {
						g = got[len(got)-1-k]
					}
					want := refConvert(v, to)
					var gv float64
					if g.isInt {
						gv = float64(g.i)
						if to == peel.Int64 && v.isInt {
							if g.i != v.i {
								t.Errorf("AsType %v → %v of %d: got %d", from, to, v.i, g.i)
							}
							continue
						}
					} else {
						gv = g.f
					}
					if !sameFloat(gv, want) && fails < 5 {
						fails++
						t.Errorf("AsType %v → %v (%s) of %+v: got %v, want %v", from, to, view, v, gv, want)
					}
				}
			}
		}
	}
}

func TestAsTypeNaNAndSignedZero(t *testing.T) {
	x := peel.FromFloat64s([]float64{math.NaN(), math.Copysign(0, -1), math.Inf(-1), 70000})
	for _, d := range []peel.DType{peel.Float16, peel.BFloat16} {
		v := peel.AsType(x, d).Float32s()
		if !math.IsNaN(float64(v[0])) || !math.Signbit(float64(v[1])) || !math.IsInf(float64(v[2]), -1) {
			t.Errorf("%v: NaN, -0, -Inf convert to %v", d, v)
		}
		if d == peel.Float16 && !math.IsInf(float64(v[3]), 1) {
			t.Errorf("f16(70000) = %v, want +Inf", v[3])
		}
	}
	if got := peel.AsType(peel.FromFloat16s([]float32{65504}), peel.Float64).Float64s()[0]; got != 65504 {
		t.Errorf("f16 max widens to %v", got)
	}
}

func TestIntegerWraparound(t *testing.T) {
	i := peel.FromInt32s([]int32{math.MaxInt32, math.MinInt32, 7, -7})
	if got := peel.Add(i, 1).Int32s(); got[0] != math.MinInt32 || got[1] != math.MinInt32+1 || got[2] != 8 {
		t.Errorf("MaxInt32 + 1 etc.: %v", got)
	}
	if got := peel.Sub(i, 1).Int32s(); got[1] != math.MaxInt32 {
		t.Errorf("MinInt32 - 1 = %d, want MaxInt32", got[1])
	}
	if got := peel.Neg(i).Int32s(); got[1] != math.MinInt32 || got[3] != 7 {
		t.Errorf("Neg: %v", got)
	}
	if got := peel.Mul(i, i).Int32s(); got[0] != 1 || got[2] != 49 {
		t.Errorf("MaxInt32² wraps to 1: %v", got)
	}
	if got := peel.FloorDiv(i, -1).Int32s(); got[1] != math.MinInt32 {
		t.Errorf("MinInt32 // -1 = %d, want MinInt32 (wraps)", got[1])
	}
	if got := peel.LeftShift(peel.FromInt32s([]int32{1, 1}), peel.FromInt32s([]int32{31, 32})).Int32s(); got[0] != math.MinInt32 || got[1] != 0 {
		t.Errorf("1<<31, 1<<32 in int32: %v", got)
	}
	u := peel.FromUint8s([]uint8{255, 0, 200, 16})
	if got := peel.Add(u, 1).Uint8s(); got[0] != 0 || got[1] != 1 || got[2] != 201 {
		t.Errorf("255 + 1 etc.: %v", got)
	}
	if got := peel.Sub(u, 1).Uint8s(); got[1] != 255 {
		t.Errorf("uint8 0 - 1 = %d, want 255", got[1])
	}
	if got := peel.Mul(u, u).Uint8s(); got[2] != uint8(200*200%256) || got[3] != 0 {
		t.Errorf("uint8 products: %v", got)
	}
	if got := peel.RightShift(u, 4).Uint8s(); got[0] != 15 || got[2] != 12 {
		t.Errorf("uint8 >> 4 is a logical shift: %v", got)
	}
	if got := peel.BitwiseNot(u).Uint8s(); got[0] != 0 || got[1] != 255 {
		t.Errorf("^uint8: %v", got)
	}
	// Sums of bytes do not wrap; sums of int32 do, as in JAX.
	if got := peel.Sum(u); got.DType() != peel.Int64 || got.Item() != 471 {
		t.Errorf("Sum(uint8) = %v %v, want i64 471", got.DType(), got.Item())
	}
	if got := peel.Sum(peel.FromInt32s([]int32{math.MaxInt32, 1})); got.DType() != peel.Int32 || got.Item() != math.MinInt32 {
		t.Errorf("Sum(int32) = %v %v, want i32 MinInt32", got.DType(), got.Item())
	}
}

func TestHalfArithmeticRoundsPerOp(t *testing.T) {
	// 2048 + 1 is not a float16 (ties to even: 2048), computed in f32 and
	// rounded back after the op.
	h := peel.FromFloat16s([]float32{2048, 1, 65504, 0.1})
	got := peel.Add(h, 1).Float32s()
	if got[0] != 2048 || got[1] != 2 || got[2] != 65504 {
		t.Errorf("f16 + 1: %v", got)
	}
	if got := peel.Mul(h, 2).Float32s(); !math.IsInf(float64(got[2]), 1) {
		t.Errorf("65504·2 in f16 = %v, want +Inf", got[2])
	}
	b := peel.FromBFloat16s([]float32{256, 1})
	if got := peel.Add(b, 1).Float32s(); got[0] != 256 || got[1] != 2 {
		t.Errorf("bf16 + 1: %v", got)
	}
	if got := peel.Sum(peel.FromFloat16s([]float32{0.1, 0.2, 0.3})); got.DType() != peel.Float16 || math.Abs(got.Item()-0.6) > 1e-3 {
		t.Errorf("Sum(f16) = %v %v", got.DType(), got.Item())
	}
}

func TestDTypeMisuse(t *testing.T) {
	i := peel.FromInt32s([]int32{1, 2})
	err := peel.Catch(func() {
		transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(x, x)) })(i)
	})
	var pe *peel.Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "i32") {
		t.Errorf("Grad wrt an i32 input: %v, want an *Error naming i32", err)
	}
	err = peel.Catch(func() { peel.FromFloat32s([]float32{1}).Int32s() })
	if err == nil || !strings.Contains(err.Error(), "i32") {
		t.Errorf("Int32s of an f32 tensor: %v", err)
	}
	err = peel.Catch(func() { peel.Sin(peel.FromBools([]bool{true})).Uint8s() })
	if err == nil || !strings.Contains(err.Error(), "u8") {
		t.Errorf("Uint8s of an f64 tensor: %v", err)
	}
}

func TestHalfTransforms(t *testing.T) {
	x := peel.FromFloat16s([]float32{1, -2, 0.5})
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(x, peel.Tanh(x))) }
	g := transforms.Grad(f)(x)
	if g.DType() != peel.Float16 {
		t.Fatalf("Grad of an f16 function has dtype %v", g.DType())
	}
	x64 := peel.AsType(x, peel.Float64)
	g64 := transforms.Grad(f)(x64).Float64s()
	for k, v := range g.Float32s() {
		if math.Abs(float64(v)-g64[k]) > 4e-3*math.Max(1, math.Abs(g64[k])) {
			t.Errorf("f16 grad[%d] = %v, f64 %v", k, v, g64[k])
		}
	}
	// Vmap and Compile give eager results, bit for bit.
	h := func(x *peel.Tensor) *peel.Tensor { return peel.Add(peel.Mul(x, x), peel.Sum(x)) }
	for _, d := range []peel.DType{peel.Float16, peel.BFloat16, peel.Int32, peel.Uint8} {
		xs := peel.AsType(peel.FromFloat64s([]float64{1, 2.5, -3, 4, 5, 6}, 2, 3), d)
		eager := peel.Stack([]*peel.Tensor{h(peel.Index(xs, 0)), h(peel.Index(xs, 1))}, 0)
		v := transforms.Vmap(h)(xs)
		c := transforms.Compile(h)(xs)
		for name, got := range map[string]*peel.Tensor{"vmap": v, "compile": c} {
			want := eager
			if name == "compile" {
				want = h(xs)
			}
			if got.DType() != want.DType() || !sameElems(t, got, want) {
				t.Errorf("%v %s: %v %v, eager %v", d, name, got.DType(), elems(t, got), elems(t, want))
			}
		}
	}
}

func sameElems(t *testing.T, a, b *peel.Tensor) bool {
	ea, eb := elems(t, a), elems(t, b)
	if len(ea) != len(eb) {
		return false
	}
	for k := range ea {
		if ea[k].isInt != eb[k].isInt || ea[k].i != eb[k].i || !sameFloat(ea[k].f, eb[k].f) {
			return false
		}
	}
	return true
}

func TestScalarOutOfRange(t *testing.T) {
	u := peel.FromUint8s([]uint8{1})
	err := peel.Catch(func() { peel.Add(u, 300) })
	if err == nil || !strings.Contains(err.Error(), "peel.Add") || !strings.Contains(err.Error(), "u8") {
		t.Errorf("Add(u8, 300): %v, want an *Error naming peel.Add and u8", err)
	}
	if err := peel.Catch(func() { peel.Add(peel.FromInt32s([]int32{1}), int64(math.MaxInt32)+1) }); err == nil {
		t.Error("Add(i32, MaxInt32+1) did not panic")
	}
	if got := peel.Add(u, 254).Uint8s()[0]; got != 255 {
		t.Errorf("1 + 254 = %d in u8", got)
	}
}

func TestHalfNanToNumAndLinalg(t *testing.T) {
	x := peel.FromFloat16s([]float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 2})
	if got := peel.NanToNum(x).Float32s(); got[0] != 65504 || got[1] != -65504 || got[2] != 0 || got[3] != 2 {
		t.Errorf("NanToNum(f16) = %v", got)
	}
	b := peel.FromBFloat16s([]float32{float32(math.Inf(1))})
	if got := peel.NanToNum(b).Float32s()[0]; got != 0x1.fep127 {
		t.Errorf("NanToNum(bf16 +Inf) = %v", got)
	}
	// A matmul of f16 accumulates in f32 and rounds once.
	a := peel.FromFloat16s([]float32{1, 2, 3, 4}, 2, 2)
	if got := peel.MatMul(a, a); got.DType() != peel.Float16 || got.Float32s()[3] != 22 {
		t.Errorf("MatMul(f16) = %v %v", got.DType(), got.Float32s())
	}
}

func TestNarrowIntegerIndices(t *testing.T) {
	x := peel.FromFloat64s([]float64{10, 20, 30, 40})
	for _, idx := range []*peel.Tensor{peel.FromInt32s([]int32{3, -1, 0}), peel.AsType(peel.FromInt64s([]int64{3, 3, 0}), peel.Uint8)} {
		got := peel.Take(x, idx, 0).Float64s()
		if got[0] != 40 || got[1] != 40 || got[2] != 10 {
			t.Errorf("Take with %v indices: %v", idx.DType(), got)
		}
		oh := peel.OneHot(idx, 4, peel.Float32).Float32s()
		if oh[3] != 1 || oh[8] != 1 {
			t.Errorf("OneHot with %v indices: %v", idx.DType(), oh)
		}
	}
	idx := []*peel.Tensor{peel.FromInt32s([]int32{1, 2})}
	if got := peel.IndexPut(x, idx, 0.0, false).Float64s(); got[1] != 0 || got[2] != 0 || got[0] != 10 {
		t.Errorf("IndexPut with i32 indices: %v", got)
	}
	if idx[0].DType() != peel.Int32 {
		t.Error("IndexPut wrote to its indices slice")
	}
}

// TestStorageStaticArgAndString: a static storage tensor is keyed by its
// value, and storage tensors print.
func TestStorageStaticArgAndString(t *testing.T) {
	for _, d := range []peel.DType{peel.Int32, peel.Uint8, peel.Float16, peel.BFloat16} {
		traces := 0
		c := transforms.Compile2(func(x, s *peel.Tensor) *peel.Tensor { traces++; return peel.Mul(x, s) }, transforms.StaticArgnums(1))
		x := peel.AsType(peel.FromFloat64s([]float64{1, 2}), d)
		two, three := peel.AsType(peel.Scalar(2.0), d), peel.AsType(peel.Scalar(3.0), d)
		c(x, two)
		c(x, two)
		if got := c(x, three); !sameElems(t, got, peel.Mul(x, three)) {
			t.Errorf("%v: compiled with static 3 gives %v", d, elems(t, got))
		}
		if traces != 2 {
			t.Errorf("%v: %d traces, want 2 (one per static value)", d, traces)
		}
	}
	for _, c := range []struct {
		x    *peel.Tensor
		want string
	}{
		{peel.FromInt32s([]int32{-3, 7}), "[-3  7]"},
		{peel.FromUint8s([]uint8{255, 0}), "[255   0]"},
		{peel.FromFloat16s([]float32{0.1, -2}), "[0.099976       -2]"},
		{peel.FromBFloat16s([]float32{3.14159, 1e30}), "[3.141 1e+30]"},
	} {
		if got := c.x.String(); !strings.Contains(got, c.want) {
			t.Errorf("%v String() = %q, want it to contain %q", c.x.DType(), got, c.want)
		}
	}
}

// TestStorageInPlace: in-place writes into storage tensors, eagerly,
// functionalized and compiled, through views.
func TestStorageInPlace(t *testing.T) {
	f := func(x *peel.Tensor) *peel.Tensor {
		y := peel.Clone(x)
		peel.AddInPlace(peel.Narrow(y, 0, 1, 2), 1)
		return y
	}
	for _, d := range []peel.DType{peel.Int32, peel.Uint8, peel.Float16, peel.BFloat16} {
		x := peel.AsType(peel.FromFloat64s([]float64{1, 2, 3, 4}), d)
		if d == peel.Int32 {
			x = peel.FromInt32s([]int32{1, math.MaxInt32, 3, 4})
		}
		if d == peel.Uint8 {
			x = peel.FromUint8s([]uint8{1, 255, 3, 4})
		}
		eager := f(x)
		for name, got := range map[string]*peel.Tensor{
			"functionalize": transforms.Functionalize(f)(x),
			"compile":       transforms.Compile(f)(x),
		} {
			if got.DType() != d || !sameElems(t, got, eager) {
				t.Errorf("%v %s: %v, eager %v", d, name, elems(t, got), elems(t, eager))
			}
		}
		e := elems(t, eager)
		switch d {
		case peel.Int32:
			if e[1].i != math.MinInt32 || e[2].i != 4 || e[0].i != 1 {
				t.Errorf("i32 in place: %v", e)
			}
		case peel.Uint8:
			if e[1].i != 0 || e[2].i != 4 {
				t.Errorf("u8 in place: %v", e)
			}
		default:
			if e[1].f != 3 || e[2].f != 4 || e[3].f != 4 {
				t.Errorf("%v in place: %v", d, e)
			}
		}
	}
}

// TestHalfReductionsInF32: composite reductions of f16 compute in f32
// and round once, so an intermediate sum does not overflow.
func TestHalfReductionsInF32(t *testing.T) {
	x := peel.FromFloat16s([]float32{60000, 60000, 60000})
	if got := peel.Mean(x); got.DType() != peel.Float16 || got.Item() != 60000 {
		t.Errorf("Mean(f16 60000s) = %v %v, want f16 60000", got.DType(), got.Item())
	}
	if got := peel.Var(x); got.Item() != 0 {
		t.Errorf("Var(f16 60000s) = %v", got.Item())
	}
	if got := peel.Norm(peel.FromFloat16s([]float32{300, 400})); got.Item() != 500 {
		t.Errorf("Norm(f16 300, 400) = %v (300² overflows f16)", got.Item())
	}
	s := peel.Softmax(peel.FromBFloat16s([]float32{1, 2, 3}), 0)
	if s.DType() != peel.BFloat16 {
		t.Errorf("Softmax(bf16) has dtype %v", s.DType())
	}
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Mean(x) })(peel.FromFloat16s([]float32{1, 2, 3, 4}))
	if g.DType() != peel.Float16 || g.Float32s()[0] != 0.25 {
		t.Errorf("Grad of Mean(f16) = %v %v", g.DType(), g.Float32s())
	}
}
