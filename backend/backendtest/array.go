package backendtest

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// array is a host-side tensor value, the currency of the reference
// implementations. Float32 and Float64 elements live in f (float32 ones
// hold exactly representable values), Int64 in i and Bool in b.
type array struct {
	dt    backend.DType
	shape []int
	f     []float64
	i     []int64
	b     []bool
}

func newArray(dt backend.DType, shape []int) array {
	a := array{dt: dt, shape: slices.Clone(shape)}
	if a.shape == nil {
		a.shape = []int{}
	}
	n := backend.ShapeSize(shape)
	switch dt {
	case backend.Bool:
		a.b = make([]bool, n)
	case backend.Int64:
		a.i = make([]int64, n)
	default:
		a.f = make([]float64, n)
	}
	return a
}

func (a array) size() int { return backend.ShapeSize(a.shape) }

func (a array) clone() array {
	c := a
	c.shape = slices.Clone(a.shape)
	c.f, c.i, c.b = slices.Clone(a.f), slices.Clone(a.i), slices.Clone(a.b)
	return c
}

// reshaped returns a with another shape of the same size (sharing data).
func (a array) reshaped(shape []int) array {
	a.shape = slices.Clone(shape)
	return a
}

// host returns the elements as the slice type Backend.FromHost takes.
func (a array) host() any {
	switch a.dt {
	case backend.Bool:
		return slices.Clone(a.b)
	case backend.Int64:
		return slices.Clone(a.i)
	case backend.Float32:
		out := make([]float32, len(a.f))
		for k, v := range a.f {
			out[k] = float32(v)
		}
		return out
	}
	return slices.Clone(a.f)
}

// readTensor reads a concrete tensor back to the host (through the
// backend's ToHost).
func readTensor(t *interp.Tensor) array {
	a := array{dt: t.DType(), shape: slices.Clone(t.Shape())}
	switch t.DType() {
	case backend.Bool:
		a.b = t.Bools()
	case backend.Int64:
		a.i = t.Int64s()
	case backend.Float32:
		for _, v := range t.Float32s() {
			a.f = append(a.f, float64(v))
		}
		if a.f == nil {
			a.f = []float64{}
		}
	default:
		a.f = t.Float64s()
	}
	return a
}

// hostArray converts a slice returned by Backend.ToHost.
func hostArray(dt backend.DType, shape []int, data any) (array, bool) {
	a := array{dt: dt, shape: slices.Clone(shape)}
	switch d := data.(type) {
	case []bool:
		a.b = d
	case []int64:
		a.i = d
	case []float32:
		for _, v := range d {
			a.f = append(a.f, float64(v))
		}
		if a.f == nil {
			a.f = []float64{}
		}
	case []float64:
		a.f = d
	default:
		return a, false
	}
	return a, hostType(dt, data)
}

// hostType reports whether data has the host slice type of dt.
func hostType(dt backend.DType, data any) bool {
	switch data.(type) {
	case []bool:
		return dt == backend.Bool
	case []int64:
		return dt == backend.Int64
	case []float32:
		return dt == backend.Float32
	case []float64:
		return dt == backend.Float64
	}
	return false
}

func (a array) hostLen() int {
	switch a.dt {
	case backend.Bool:
		return len(a.b)
	case backend.Int64:
		return len(a.i)
	}
	return len(a.f)
}

// set copies element j of src (same dtype) into element k of a.
func (a array) set(k int, src array, j int) {
	switch a.dt {
	case backend.Bool:
		a.b[k] = src.b[j]
	case backend.Int64:
		a.i[k] = src.i[j]
	default:
		a.f[k] = src.f[j]
	}
}

// take returns the array of the given shape whose element k is a's element
// m[k], or fill's only element where m[k] < 0.
func (a array) take(shape []int, m []int, fill array) array {
	out := newArray(a.dt, shape)
	for k, j := range m {
		if j < 0 {
			out.set(k, fill, 0)
		} else {
			out.set(k, a, j)
		}
	}
	return out
}

// str formats element k.
func (a array) str(k int) string {
	switch a.dt {
	case backend.Bool:
		return strconv.FormatBool(a.b[k])
	case backend.Int64:
		return strconv.FormatInt(a.i[k], 10)
	}
	return fmtFloat(a.f[k])
}

func fmtFloat(v float64) string {
	if v == 0 && math.Signbit(v) {
		return "-0"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// String formats a as "f32[2,3]{1, 2, …}", listing at most 24 elements.
func (a array) String() string {
	var b strings.Builder
	b.WriteString(interp.Aval{Shape: a.shape, DType: a.dt}.String())
	n := a.size()
	if n > 24 {
		return b.String()
	}
	b.WriteByte('{')
	for k := range n {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.str(k))
	}
	b.WriteByte('}')
	return b.String()
}

// fround rounds v to the precision of float dtype dt.
func fround(dt backend.DType, v float64) float64 {
	if dt == backend.Float32 {
		return float64(float32(v))
	}
	return v
}

// Index helpers, all row-major.

// unravel writes the multi-index of flat index k of shape into idx.
func unravel(k int, shape, idx []int) {
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = k % shape[d]
			k /= shape[d]
		}
	}
}

// ravel returns the flat index of idx under strides.
func ravel(idx, strides []int) int {
	k := 0
	for d, i := range idx {
		k += i * strides[d]
	}
	return k
}

// forEachIndex calls f for every multi-index of shape in row-major order
// with its flat index. idx is reused between calls.
func forEachIndex(shape []int, f func(k int, idx []int)) {
	n := backend.ShapeSize(shape)
	idx := make([]int, len(shape))
	for k := range n {
		f(k, idx)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

func identityMap(n int) []int {
	m := make([]int, n)
	for k := range m {
		m[k] = k
	}
	return m
}

func seq(n int) []int { return identityMap(n) }

// fmtShape formats a shape as "[2,3]".
func fmtShape(shape []int) string { return backend.FormatShapeCompact(shape) }
