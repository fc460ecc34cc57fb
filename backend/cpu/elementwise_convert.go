package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernel of convert_element_type.

func init() {
	register(prims.ConvertElementType, true, convertKernel)
}

// ---------------------------------------------------------------------------
// convert_element_type
//
// Every conversion follows the one rule of backend/convert.go (float to
// integer truncates toward zero, saturates, NaN → 0; nonzero → true), by
// calling its functions.

func convertKernel(_ any, in, out []backend.Array) {
	x, o := in[0], out[0]
	switch xb := x.Buf.(type) {
	case *boolBuf:
		switch o.Buf.(type) {
		case *boolBuf:
			runConvert(bools(o), x, xb.s, copyLoop[bool])
		case *i64Buf:
			runConvert(i64s(o), x, xb.s, fromBoolLoop[int64])
		case *f32Buf:
			runConvert(f32s(o), x, xb.s, fromBoolLoop[float32])
		case *f64Buf:
			runConvert(f64s(o), x, xb.s, fromBoolLoop[float64])
		}
	case *i64Buf:
		switch o.Buf.(type) {
		case *boolBuf:
			runConvert(bools(o), x, xb.s, toBoolLoop[int64])
		case *i64Buf:
			runConvert(i64s(o), x, xb.s, copyLoop[int64])
		case *f32Buf:
			runConvert(f32s(o), x, xb.s, numConvLoop[int64, float32])
		case *f64Buf:
			runConvert(f64s(o), x, xb.s, numConvLoop[int64, float64])
		}
	case *f32Buf:
		switch o.Buf.(type) {
		case *boolBuf:
			runConvert(bools(o), x, xb.s, toBoolLoop[float32])
		case *i64Buf:
			runConvert(i64s(o), x, xb.s, floatToIntLoop[float32])
		case *f32Buf:
			runConvert(f32s(o), x, xb.s, copyLoop[float32])
		case *f64Buf:
			runConvert(f64s(o), x, xb.s, numConvLoop[float32, float64])
		}
	case *f64Buf:
		switch o.Buf.(type) {
		case *boolBuf:
			runConvert(bools(o), x, xb.s, toBoolLoop[float64])
		case *i64Buf:
			runConvert(i64s(o), x, xb.s, floatToIntLoop[float64])
		case *f32Buf:
			runConvert(f32s(o), x, xb.s, numConvLoop[float64, float32])
		case *f64Buf:
			runConvert(f64s(o), x, xb.s, copyLoop[float64])
		}
	default:
		badDType(prims.ConvertElementType, x.Buf.DType())
	}
}

func runConvert[S, D any](d []D, x backend.Array, buf []S, f func(d []D, a []S)) {
	runUnary(prims.ConvertElementType, f, costCheap, d, buf, &x)
}

func fromBoolLoop[D elemNum](d []D, a []bool) {
	a = a[:len(d)]
	for i, x := range a {
		var v D
		if x {
			v = 1
		}
		d[i] = v
	}
}

func toBoolLoop[S elemNum](d []bool, a []S) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x != 0
	}
}

// numConvLoop converts a into d four elements an iteration: fewer
// loop instructions per element, and a loop long enough that where its
// code falls (a 64-byte line boundary inside a five-instruction loop
// cost f32→f64 a third of its speed) matters little.
func numConvLoop[S, D elemNum](d []D, a []S) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s, t := a[i:i+4:i+4], d[i:i+4:i+4]
		t[0], t[1], t[2], t[3] = D(s[0]), D(s[1]), D(s[2]), D(s[3])
	}
	for ; i < len(a); i++ {
		d[i] = D(a[i])
	}
}

func floatToIntLoop[S elemFloat](d []int64, a []S) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = backend.FloatToInt64(float64(x))
	}
}
