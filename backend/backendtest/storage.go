package backendtest

import (
	"fmt"
	"math"
	"runtime"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The storage dtypes (i32, u8, f16, bf16) are checked by their
// conversions, at the edge values, against a reference written from the
// IEEE 754 definitions: a value rounds to the nearest multiple of its
// binade's quantum (2^(e-m) for a value in [2^e, 2^(e+1)), never below
// the subnormal quantum 2^(emin-m)), ties to even, and is ±Inf from the
// largest finite value plus half its quantum on; and by a few kernels
// that run on them through the conversion at the kernel edge.

var storageDTypes = []backend.DType{backend.Int32, backend.Uint8, backend.Float16, backend.BFloat16}

// halfFormat is a 16-bit float format: fraction bits, least normal
// exponent, largest finite value.
type halfFormat struct {
	mbits int
	emin  int
	max   float64
}

var (
	refF16  = halfFormat{10, -14, 65504}
	refBF16 = halfFormat{7, -126, 0x1.fep127}
)

// round is the reference rounding of x to the format.
func (f halfFormat) round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	ax := math.Abs(x)
	_, fe := math.Frexp(f.max) // f.max in [2^(fe-1), 2^fe)
	if ax >= f.max+math.Ldexp(1, fe-1-f.mbits)/2 {
		return math.Copysign(math.Inf(1), x)
	}
	_, e := math.Frexp(ax) // ax in [2^(e-1), 2^e)
	q := math.Ldexp(1, max(e-1, f.emin)-f.mbits)
	return math.Copysign(math.RoundToEven(ax/q)*q, x)
}

// refStorage converts an exact value (a float64 holding every value of
// the source dtype exactly, or an int64 for integer sources) to dtype to.
func refStorage(f float64, i int64, isInt bool, to backend.DType) float64 {
	if to == backend.Bool {
		if isInt {
			return b2f(i != 0)
		}
		return b2f(f != 0)
	}
	if isInt {
		switch to {
		case backend.Int64:
			return float64(i)
		case backend.Int32:
			return float64(int32(i))
		case backend.Uint8:
			return float64(uint8(i))
		}
		f = float64(i) // exact for the sources checked here (|i| < 2^53)
	} else if to.IsInteger() {
		lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
		switch to {
		case backend.Int32:
			lo, hi = math.MinInt32, math.MaxInt32
		case backend.Uint8:
			lo, hi = 0, 255
		}
		switch {
		case math.IsNaN(f):
			return 0
		case f <= lo:
			return lo
		case f >= hi:
			return hi
		}
		return math.Trunc(f) + 0
	}
	switch to {
	case backend.Float64:
		return f
	case backend.Float32:
		return float64(float32(f))
	case backend.Float16:
		return refF16.round(f)
	}
	return refBF16.round(f)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// storageSource returns a host slice of dtype d holding edge values, and
// those values exactly.
func storageSource(d backend.DType) (any, []float64, []int64) {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, 2.9, -2.9, 0.1, 65504, 65519, 65520, -65536, 1e5,
		0x1p-14, 0x1p-24, 0x1p-25, 0x3p-26, 0x1p-133, 0x1p-134, 1 + 0x1p-8, 1 + 0x3p-8, 1 + 0x1p-11, 1 + 0x3p-11,
		255.5, 256, 300, -129, 0x1p31, -0x1p31 - 2, 3e38, 1e300, -1e300, 1e-300, math.Inf(1), math.Inf(-1), math.NaN()}
	ints := []int64{0, 1, -1, 127, 128, 255, 256, -129, math.MaxInt32, math.MinInt32, 2049, 2051, 257, 259, 65519, 65520, 1 << 24, 1<<24 + 1}
	switch d {
	case backend.Int64:
		return append([]int64{}, ints...), nil, ints
	case backend.Int32:
		h := make([]int32, len(ints))
		for i, v := range ints {
			h[i] = int32(v)
		}
		return h, nil, ints
	case backend.Uint8:
		var h []uint8
		var ex []int64
		for _, v := range ints {
			if v >= 0 && v <= 255 {
				h, ex = append(h, uint8(v)), append(ex, v)
			}
		}
		return h, nil, ex
	case backend.Bool:
		return []bool{true, false}, nil, []int64{1, 0}
	case backend.Float64:
		return append([]float64{}, floats...), floats, nil
	case backend.Float32:
		h := make([]float32, len(floats))
		ex := make([]float64, len(floats))
		for i, v := range floats {
			h[i] = float32(v)
			ex[i] = float64(h[i])
		}
		return h, ex, nil
	case backend.Float16:
		// Every bit pattern.
		h := make([]backend.F16, 1<<16)
		ex := make([]float64, 1<<16)
		for b := range h {
			h[b] = backend.F16(b)
			ex[b] = refF16Value(uint16(b))
		}
		return h, ex, nil
	}
	h := make([]backend.BF16, 1<<16)
	ex := make([]float64, 1<<16)
	for b := range h {
		h[b] = backend.BF16(b)
		ex[b] = float64(math.Float32frombits(uint32(b) << 16))
	}
	return h, ex, nil
}

// refF16Value decodes a binary16 bit pattern from its definition.
func refF16Value(b uint16) float64 {
	s := 1.0
	if b&0x8000 != 0 {
		s = -1
	}
	e, m := int(b>>10)&0x1f, float64(b&0x3ff)
	switch e {
	case 0:
		return s * math.Ldexp(m, -24)
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return s * math.Inf(1)
	}
	return s * math.Ldexp(1024+m, e-25)
}

// hostFloats reads a host slice of any dtype as float64s (exactly).
func hostFloats(h any) []float64 {
	var out []float64
	switch v := h.(type) {
	case []bool:
		for _, x := range v {
			out = append(out, b2f(x))
		}
	case []int64:
		for _, x := range v {
			out = append(out, float64(x))
		}
	case []int32:
		for _, x := range v {
			out = append(out, float64(x))
		}
	case []uint8:
		for _, x := range v {
			out = append(out, float64(x))
		}
	case []float32:
		for _, x := range v {
			out = append(out, float64(x))
		}
	case []float64:
		out = append(out, v...)
	case []backend.F16:
		for _, x := range v {
			out = append(out, refF16Value(uint16(x)))
		}
	case []backend.BF16:
		for _, x := range v {
			out = append(out, float64(math.Float32frombits(uint32(x)<<16)))
		}
	}
	return out
}

func sameBits(a, b float64) bool {
	return math.IsNaN(a) && math.IsNaN(b) || a == b && math.Signbit(a) == math.Signbit(b)
}

// runConvertStorage checks convert_element_type from and to every
// storage dtype, contiguous and through a reversed view.
func runConvertStorage(s *suite) {
	p := prims.ConvertElementType
	every := append(append([]backend.DType{}, allDTypes...), storageDTypes...)
	for _, from := range every {
		for _, to := range every {
			h, fs, is := storageSource(from)
			n0 := max(len(fs), len(is))
			for _, variant := range []string{"contiguous", "reversed", "repeated"} {
				rev, n, hv := variant == "reversed", n0, h
				switch {
				case variant == "repeated" && n0 < 8192:
					// The edge values repeated past the sizes at which a
					// backend changes its loops (tables, threads,
					// vectors).
					hv = repeatHost(h, (8192+n0-1)/n0+1)
					n = n0 * ((8192+n0-1)/n0 + 1)
				case !from.IsStorage() && !to.IsStorage():
					continue // runConvert's cases
				case variant == "repeated":
					continue // already that large
				}
				desc := fmt.Sprintf("convert_element_type %v[%d] to %v (%s)", from, n, to, variant)
				s.try(desc, func() {
					x := interp.NewConcrete(s.b, backend.Array{Buf: s.b.FromHost(hv), Shape: []int{n}})
					if rev {
						x = interp.Bind1(prims.Rev, prims.RevParams{Axes: []int{0}}, x)
					}
					y := interp.Bind1(p, prims.ConvertParams{DType: to}, x)
					arr, be := interp.ArrayOf(y)
					if arr.Buf.DType() != to {
						s.failf("%s: result dtype %v", desc, arr.Buf.DType())
						return
					}
					got := hostFloats(be.ToHost(arr))
					runtime.KeepAlive(y)
					bad := 0
					for k := range n {
						src := k % n0
						if rev {
							src = n - 1 - k
						}
						var want float64
						if is != nil {
							want = refStorage(0, is[src], true, to)
						} else {
							want = refStorage(fs[src], 0, false, to)
						}
						if !sameBits(got[k], want) && bad < 3 {
							bad++
							var v any = is
							if is == nil {
								v = fs[src]
							} else {
								v = is[src]
							}
							s.failf("%s: element %d (%v) converts to %v, want %v", desc, k, v, got[k], want)
						}
					}
				})
			}
		}
	}
	// The reference itself: known bit patterns.
	for _, c := range []struct {
		f    halfFormat
		x    float64
		want float64
	}{
		{refF16, 65519, 65504}, {refF16, 65520, math.Inf(1)}, {refF16, 0x1p-25, 0}, {refF16, 0x1.8p-25, 0x1p-24},
		{refF16, 1 + 0x1p-11, 1}, {refF16, 1 + 0x3p-11, 1 + 0x1p-9}, {refBF16, 1 + 0x1p-8, 1}, {refBF16, 1 + 0x3p-8, 1 + 0x1p-6},
		{refBF16, math.MaxFloat32, math.Inf(1)},
	} {
		if got := c.f.round(c.x); got != c.want {
			s.failf("backendtest's 16-bit reference rounds %v to %v, want %v", c.x, got, c.want)
		}
	}
}

// repeatHost returns the host slice h repeated times times.
func repeatHost(h any, times int) any {
	switch h := h.(type) {
	case []bool:
		return repeat(h, times)
	case []int64:
		return repeat(h, times)
	case []int32:
		return repeat(h, times)
	case []uint8:
		return repeat(h, times)
	case []float32:
		return repeat(h, times)
	case []float64:
		return repeat(h, times)
	case []backend.F16:
		return repeat(h, times)
	case []backend.BF16:
		return repeat(h, times)
	}
	panic(fmt.Sprintf("backendtest: host slice %T", h))
}

func repeat[T any](h []T, times int) []T {
	out := make([]T, 0, len(h)*times)
	for range times {
		out = append(out, h...)
	}
	return out
}

// runStorageKernels runs kernels on storage dtypes through the
// conversion at the kernel edge: wraparound of i32 and u8, rounding of
// f16 and bf16 results, reductions, and iota of a storage dtype.
func runStorageKernels(s *suite) {
	mk := func(h any, n int) *interp.Tensor {
		return interp.NewConcrete(s.b, backend.Array{Buf: s.b.FromHost(h), Shape: []int{n}})
	}
	read := func(t *interp.Tensor) []float64 {
		arr, be := interp.ArrayOf(t)
		h := be.ToHost(arr)
		runtime.KeepAlive(t)
		return hostFloats(h)
	}
	check := func(desc string, got []float64, want ...float64) {
		if len(got) != len(want) {
			s.failf("%s: %d elements, want %d", desc, len(got), len(want))
			return
		}
		for k := range want {
			if !sameBits(got[k], want[k]) {
				s.failf("%s: element %d is %v, want %v", desc, k, got[k], want[k])
				return
			}
		}
	}
	s.try("add i32 wraps", func() {
		x := mk([]int32{math.MaxInt32, math.MinInt32, 5}, 3)
		y := mk([]int32{1, -1, -7}, 3)
		check("add i32", read(interp.Bind1(prims.Add, nil, x, y)), math.MinInt32, math.MaxInt32, -2)
	})
	s.try("add u8 wraps", func() {
		x := mk([]uint8{255, 0, 100}, 3)
		y := mk([]uint8{1, 255, 100}, 3)
		check("add u8", read(interp.Bind1(prims.Add, nil, x, y)), 0, 255, 200)
		check("mul u8", read(interp.Bind1(prims.Mul, nil, x, y)), 255, 0, 16)
	})
	s.try("add f16 rounds", func() {
		x := mk([]backend.F16{backend.F16FromFloat64(2048), backend.F16FromFloat64(65504), backend.F16FromFloat64(0.1)}, 3)
		y := mk([]backend.F16{backend.F16FromFloat64(1), backend.F16FromFloat64(65504), backend.F16FromFloat64(0.2)}, 3)
		check("add f16", read(interp.Bind1(prims.Add, nil, x, y)), 2048, math.Inf(1), refF16.round(float64(float32(refF16.round(0.1))+float32(refF16.round(0.2)))))
	})
	s.try("reduce_sum bf16", func() {
		x := mk([]backend.BF16{backend.BF16FromFloat64(256), backend.BF16FromFloat64(1), backend.BF16FromFloat64(1)}, 3)
		check("reduce_sum bf16", read(interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, x)), 258)
	})
	s.try("iota u8", func() {
		y := interp.Bind1(prims.Iota, prims.IotaParams{DType: backend.Uint8, Shape: []int{4}, Dim: 0})
		check("iota u8", read(y), 0, 1, 2, 3)
	})
	s.try("max i32 of a reversed view", func() {
		x := interp.Bind1(prims.Rev, prims.RevParams{Axes: []int{0}}, mk([]int32{3, math.MinInt32, 7}, 3))
		check("max i32", read(interp.Bind1(prims.Max, nil, x, mk([]int32{4, 4, 4}, 3))), 7, 4, 4)
	})
	if r, ok := s.b.(backend.KernelResolver); ok {
		s.try("resolve of a storage dtype", func() {
			l := backend.Layout{DType: backend.Float16, Shape: []int{3}}
			if d := r.Resolve(prims.Add.Op, nil, []backend.Layout{l, l}, []backend.Layout{l}); d != nil {
				// A direct kernel is allowed only if it matches Exec,
				// which the compiler's sweeps check; it must run.
				x := mk([]backend.F16{1, 2, 3}, 3)
				xa, _ := interp.ArrayOf(x)
				out := backend.Array{Buf: s.b.Alloc(backend.Float16, 3), Shape: []int{3}}
				d([]backend.Array{xa, xa}, []backend.Array{out})
			}
		})
	}
}
