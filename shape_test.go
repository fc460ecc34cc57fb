package peel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Test helpers shared by shape_test.go, index_test.go, dot_test.go and
// elementwise_inplace_test.go. They are prefixed with sv to stay out of
// the way of the other test files of the package.

// svSeq returns an f64 tensor of the given shape holding 0, 1, 2, … in
// row-major order (rank 0 for an empty shape).
func svSeq(shape ...int) *Tensor {
	n := svSize(shape)
	data := make([]float64, n)
	for i := range data {
		data[i] = float64(i)
	}
	return FromFloat64s(data, append([]int{}, shape...)...)
}

// svF64 returns an f64 tensor with the given data and shape.
func svF64(data []float64, shape ...int) *Tensor {
	return FromFloat64s(data, append([]int{}, shape...)...)
}

// svI64 returns an i64 tensor with the given data and shape.
func svI64(data []int64, shape ...int) *Tensor {
	return FromInt64s(data, append([]int{}, shape...)...)
}

func svSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// svVals returns a concrete tensor's elements as float64s in row-major
// order, whatever its dtype, without running a kernel.
func svVals(t *testing.T, x *Tensor) []float64 {
	t.Helper()
	var out []float64
	switch x.DType() {
	case Float64:
		out = x.Float64s()
	case Float32:
		for _, v := range x.Float32s() {
			out = append(out, float64(v))
		}
	case Int64:
		for _, v := range x.Int64s() {
			out = append(out, float64(v))
		}
	case Bool:
		for _, v := range x.Bools() {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	}
	if out == nil {
		out = []float64{}
	}
	return out
}

// svCheck fails when x does not have the given shape and values.
func svCheck(t *testing.T, what string, x *Tensor, shape []int, want []float64) {
	t.Helper()
	if !slices.Equal(x.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, x.Shape(), shape)
	}
	got := svVals(t, x)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: values\n got %v\nwant %v", what, got, want)
	}
}

// svClose fails when x and want differ by more than tol (relative to
// max(1, |want|)).
func svClose(t *testing.T, what string, x *Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if !slices.Equal(x.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, x.Shape(), shape)
	}
	got := svVals(t, x)
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		d := got[i] - want[i]
		if d < 0 {
			d = -d
		}
		if d > tol*max(1, want[i], -want[i]) {
			t.Fatalf("%s: element %d is %v, want %v (tolerance %g)", what, i, got[i], want[i], tol)
		}
	}
}

// svErr runs f and fails unless it panics with a *Error whose message
// names op and contains every want.
func svErr(t *testing.T, op string, f func(), wants ...string) {
	t.Helper()
	err := Catch(f)
	if err == nil {
		t.Fatalf("%s: no error", op)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: error %v is not a *peel.Error", op, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, op) || strings.Contains(msg, op+" > "+op) {
		t.Fatalf("error %q does not name %s once", msg, op)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q does not contain %q", msg, w)
		}
	}
}

// svStrides returns row-major strides.
func svStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		st[k] = s
		s *= shape[k]
	}
	return st
}

// svEach calls f with every multi-index of shape in row-major order.
func svEach(shape []int, f func(idx []int)) {
	n := svSize(shape)
	idx := make([]int, len(shape))
	for i := 0; i < n; i++ {
		rem := i
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k] = rem % shape[k]
			rem /= shape[k]
		}
		f(idx)
	}
}

// svAt returns the flat position of idx in a row-major array of shape.
func svAt(shape, idx []int) int {
	p := 0
	for k, s := range svStrides(shape) {
		p += idx[k] * s
	}
	return p
}

// svMap builds the reference values of a result of shape out whose
// element at idx is src[from(idx)] for a row-major source of shape in.
func svMap(in, out []int, src []float64, from func(idx []int) []int) []float64 {
	res := make([]float64, 0, svSize(out))
	svEach(out, func(idx []int) { res = append(res, src[svAt(in, from(idx))]) })
	return res
}

func svIota(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// svPermuteRef is the reference of Transpose(x, perm...) for x = svSeq(shape).
func svPermuteRef(shape, perm []int) ([]int, []float64) {
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = shape[p]
	}
	return out, svMap(shape, out, svIota(svSize(shape)), func(idx []int) []int {
		src := make([]int, len(shape))
		for i, p := range perm {
			src[p] = idx[i]
		}
		return src
	})
}

func TestReshape(t *testing.T) {
	cases := []struct {
		in, shape, want []int
	}{
		{[]int{2, 3}, []int{3, 2}, []int{3, 2}},
		{[]int{2, 3}, []int{-1}, []int{6}},
		{[]int{2, 3, 4}, []int{4, -1}, []int{4, 6}},
		{[]int{2, 3, 4}, []int{2, -1, 2}, []int{2, 6, 2}},
		{[]int{1}, []int{}, []int{}},
		{[]int{}, []int{1, 1}, []int{1, 1}},
		{[]int{}, []int{-1}, []int{1}},
		{[]int{0, 3}, []int{-1, 3}, []int{0, 3}},
		{[]int{0, 3}, []int{3, 0, 5}, []int{3, 0, 5}},
		{[]int{2, 3}, []int{2, 3}, []int{2, 3}},
	}
	for _, c := range cases {
		x := svSeq(c.in...)
		y := Reshape(x, c.shape...)
		svCheck(t, fmt.Sprintf("Reshape(%v, %v)", c.in, c.shape), y, c.want, svIota(svSize(c.in)))
	}
	// A reshape of a non-contiguous tensor copies.
	y := Reshape(Transpose(svSeq(2, 3)), 6)
	svCheck(t, "Reshape(Transpose)", y, []int{6}, []float64{0, 3, 1, 4, 2, 5})

	x := svSeq(2, 3)
	svErr(t, "peel.Reshape", func() { Reshape(x, 4) }, "cannot reshape", "f64[2,3]")
	svErr(t, "peel.Reshape", func() { Reshape(x, -1, -1) }, "more than one -1")
	svErr(t, "peel.Reshape", func() { Reshape(x, -2, 3) }, "negative")
	svErr(t, "peel.Reshape", func() { Reshape(x, 4, -1) }, "cannot reshape")
	svErr(t, "peel.Reshape", func() { Reshape(svSeq(0, 2), 0, -1) }, "cannot infer")
	svErr(t, "peel.Reshape", func() { Reshape(nil, 1) }, "nil")
}

func TestTransposePermuteMoveAxis(t *testing.T) {
	cases := []struct {
		shape, perm, want []int // want is the normalized perm
	}{
		{[]int{}, nil, []int{}},
		{[]int{5}, nil, []int{0}},
		{[]int{2, 3}, nil, []int{1, 0}},
		{[]int{2, 3, 4}, nil, []int{2, 1, 0}},
		{[]int{2, 3, 4}, []int{1, 0, 2}, []int{1, 0, 2}},
		{[]int{2, 3, 4}, []int{-1, 0, -2}, []int{2, 0, 1}},
		{[]int{2, 0, 4}, []int{2, 0, 1}, []int{2, 0, 1}},
	}
	for _, c := range cases {
		x := svSeq(c.shape...)
		shape, want := svPermuteRef(c.shape, c.want)
		svCheck(t, fmt.Sprintf("Transpose(%v, %v)", c.shape, c.perm), Transpose(x, c.perm...), shape, want)
		svCheck(t, fmt.Sprintf("Permute(%v, %v)", c.shape, c.want), Permute(x, c.want...), shape, want)
	}
	mv := []struct {
		shape    []int
		src, dst int
		perm     []int
	}{
		{[]int{2, 3, 4}, 0, 2, []int{1, 2, 0}},
		{[]int{2, 3, 4}, -1, 0, []int{2, 0, 1}},
		{[]int{2, 3, 4}, 1, 1, []int{0, 1, 2}},
		{[]int{2, 3, 4, 5}, 3, -3, []int{0, 3, 1, 2}},
		{[]int{7}, 0, -1, []int{0}},
	}
	for _, c := range mv {
		shape, want := svPermuteRef(c.shape, c.perm)
		svCheck(t, fmt.Sprintf("MoveAxis(%v, %d, %d)", c.shape, c.src, c.dst), MoveAxis(svSeq(c.shape...), c.src, c.dst), shape, want)
	}
	x := svSeq(2, 3)
	svErr(t, "peel.Transpose", func() { Transpose(x, 0) }, "permutation")
	svErr(t, "peel.Transpose", func() { Transpose(x, 0, 0) }, "repeated")
	svErr(t, "peel.Transpose", func() { Transpose(x, 0, 2) }, "out of range")
	svErr(t, "peel.Permute", func() { Permute(x) }, "permutation")
	svErr(t, "peel.Permute", func() { Permute(x, 1, -3) }, "out of range")
	svErr(t, "peel.MoveAxis", func() { MoveAxis(x, 2, 0) }, "out of range")
	svErr(t, "peel.MoveAxis", func() { MoveAxis(x, 0, -3) }, "out of range")
	svErr(t, "peel.MoveAxis", func() { MoveAxis(svSeq(), 0, 0) }, "rank 0")
}

func TestSqueezeUnsqueezeFlatten(t *testing.T) {
	sq := []struct {
		shape, axes, want []int
	}{
		{[]int{1, 2, 1, 3, 1}, nil, []int{2, 3}},
		{[]int{1, 2, 1, 3, 1}, []int{0}, []int{2, 1, 3, 1}},
		{[]int{1, 2, 1, 3, 1}, []int{-1, 2}, []int{1, 2, 3}},
		{[]int{1}, nil, []int{}},
		{[]int{}, nil, []int{}},
		{[]int{2, 0}, nil, []int{2, 0}},
		{[]int{1, 0, 1}, []int{0, 2}, []int{0}},
	}
	for _, c := range sq {
		svCheck(t, fmt.Sprintf("Squeeze(%v, %v)", c.shape, c.axes), Squeeze(svSeq(c.shape...), c.axes...), c.want, svIota(svSize(c.shape)))
	}
	un := []struct {
		shape []int
		axis  int
		want  []int
	}{
		{[]int{}, 0, []int{1}},
		{[]int{}, -1, []int{1}},
		{[]int{2, 3}, 0, []int{1, 2, 3}},
		{[]int{2, 3}, 2, []int{2, 3, 1}},
		{[]int{2, 3}, -1, []int{2, 3, 1}},
		{[]int{2, 3}, -3, []int{1, 2, 3}},
		{[]int{2, 3}, 1, []int{2, 1, 3}},
		{[]int{0}, 1, []int{0, 1}},
	}
	for _, c := range un {
		svCheck(t, fmt.Sprintf("Unsqueeze(%v, %d)", c.shape, c.axis), Unsqueeze(svSeq(c.shape...), c.axis), c.want, svIota(svSize(c.shape)))
	}
	for _, s := range [][]int{{}, {3}, {2, 3}, {2, 0, 4}} {
		svCheck(t, fmt.Sprintf("Flatten(%v)", s), Flatten(svSeq(s...)), []int{svSize(s)}, svIota(svSize(s)))
	}
	svCheck(t, "Flatten(Transpose)", Flatten(Transpose(svSeq(2, 2))), []int{4}, []float64{0, 2, 1, 3})

	x := svSeq(1, 2, 1)
	svErr(t, "peel.Squeeze", func() { Squeeze(x, 1) }, "size 2")
	svErr(t, "peel.Squeeze", func() { Squeeze(x, 3) }, "out of range")
	svErr(t, "peel.Squeeze", func() { Squeeze(x, 0, -3) }, "repeated")
	svErr(t, "peel.Unsqueeze", func() { Unsqueeze(x, 4) }, "out of range")
	svErr(t, "peel.Unsqueeze", func() { Unsqueeze(x, -5) }, "out of range")
	svErr(t, "peel.Flatten", func() { Flatten(nil) }, "nil")
	svErr(t, "peel.Flatten", func() { Flatten(Zeros(Float64, 2, 3), 1, 0) }, "comes before")
	svErr(t, "peel.Flatten", func() { Flatten(Zeros(Float64, 2, 3), 2) }, "out of range")
	svErr(t, "peel.Flatten", func() { Flatten(Zeros(Float64, 2, 3), 0, 1, 1) }, "at most 2")
}

func TestBroadcastTo(t *testing.T) {
	cases := []struct {
		in, shape []int
	}{
		{[]int{}, []int{2, 3}},
		{[]int{3}, []int{2, 3}},
		{[]int{2, 1}, []int{2, 3}},
		{[]int{1, 3}, []int{4, 2, 3}},
		{[]int{2, 3}, []int{2, 3}},
		{[]int{1}, []int{0}},
		{[]int{}, []int{}},
	}
	for _, c := range cases {
		off := len(c.shape) - len(c.in)
		want := svMap(c.in, c.shape, svIota(svSize(c.in)), func(idx []int) []int {
			src := make([]int, len(c.in))
			for k := range src {
				if c.in[k] != 1 {
					src[k] = idx[off+k]
				}
			}
			return src
		})
		svCheck(t, fmt.Sprintf("BroadcastTo(%v, %v)", c.in, c.shape), BroadcastTo(svSeq(c.in...), c.shape...), c.shape, want)
	}
	x := svSeq(2, 3)
	svErr(t, "peel.BroadcastTo", func() { BroadcastTo(x, 3) }, "lower rank")
	svErr(t, "peel.BroadcastTo", func() { BroadcastTo(x, 3, 3) }, "cannot broadcast")
	svErr(t, "peel.BroadcastTo", func() { BroadcastTo(x, -1, 3) }, "negative")
}

// svSliceRef is the reference of Slice on svSeq(shape).
func svSliceRef(shape []int, axis, start, stop, step int) ([]int, []float64) {
	n := shape[axis]
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	var keep []int
	for i := start; i < stop; i += step {
		keep = append(keep, i)
	}
	out := slices.Clone(shape)
	out[axis] = len(keep)
	return out, svMap(shape, out, svIota(svSize(shape)), func(idx []int) []int {
		src := slices.Clone(idx)
		src[axis] = keep[idx[axis]]
		return src
	})
}

func TestSliceNarrowSelectIndex(t *testing.T) {
	sl := []struct {
		shape                   []int
		axis, start, stop, step int
	}{
		{[]int{10}, 0, 2, 7, 1},
		{[]int{10}, 0, 2, 7, 2},
		{[]int{10}, 0, -3, 10, 1},
		{[]int{10}, 0, -10, -1, 3},
		{[]int{10}, 0, 5, 5, 1},
		{[]int{10}, 0, 7, 2, 1}, // start > stop: empty
		{[]int{10}, 0, 0, 10, 1},
		{[]int{3, 4, 5}, 1, 1, 4, 2},
		{[]int{3, 4, 5}, -1, 0, -1, 2},
		{[]int{3, 4, 5}, -3, 1, 3, 1},
		{[]int{3, 0, 5}, 2, 1, 3, 1},
		{[]int{0}, 0, 0, 0, 1},
	}
	for _, c := range sl {
		a := c.axis
		if a < 0 {
			a += len(c.shape)
		}
		shape, want := svSliceRef(c.shape, a, c.start, c.stop, c.step)
		svCheck(t, fmt.Sprintf("Slice(%v, %d, %d, %d, %d)", c.shape, c.axis, c.start, c.stop, c.step),
			Slice(svSeq(c.shape...), c.axis, c.start, c.stop, c.step), shape, want)
	}
	nw := []struct {
		shape               []int
		axis, start, length int
	}{
		{[]int{10}, 0, 2, 3},
		{[]int{10}, 0, -4, 4},
		{[]int{10}, 0, 10, 0},
		{[]int{3, 4}, 1, 1, 2},
		{[]int{3, 4}, -2, 0, 3},
	}
	for _, c := range nw {
		a := c.axis
		if a < 0 {
			a += len(c.shape)
		}
		shape, want := svSliceRef(c.shape, a, c.start, c.start+c.length, 1)
		if c.start < 0 {
			shape, want = svSliceRef(c.shape, a, c.start+c.shape[a], c.start+c.shape[a]+c.length, 1)
		}
		svCheck(t, fmt.Sprintf("Narrow(%v, %d, %d, %d)", c.shape, c.axis, c.start, c.length),
			Narrow(svSeq(c.shape...), c.axis, c.start, c.length), shape, want)
	}
	se := []struct {
		shape       []int
		axis, index int
	}{
		{[]int{5}, 0, 3},
		{[]int{5}, 0, -1},
		{[]int{3, 4}, 0, 2},
		{[]int{3, 4}, 1, -4},
		{[]int{3, 4, 2}, -2, 1},
		{[]int{1, 4}, 0, 0},
		{[]int{3, 0}, 0, 1},
	}
	for _, c := range se {
		a := c.axis
		if a < 0 {
			a += len(c.shape)
		}
		i := c.index
		if i < 0 {
			i += c.shape[a]
		}
		shape, want := svSliceRef(c.shape, a, i, i+1, 1)
		shape = slices.Delete(shape, a, a+1)
		svCheck(t, fmt.Sprintf("Select(%v, %d, %d)", c.shape, c.axis, c.index), Select(svSeq(c.shape...), c.axis, c.index), shape, want)
	}
	x := svSeq(2, 3, 4)
	svCheck(t, "Index()", Index(x), []int{2, 3, 4}, svIota(24))
	svCheck(t, "Index(1)", Index(x, 1), []int{3, 4}, svIota(24)[12:])
	svCheck(t, "Index(-1, 1)", Index(x, -1, 1), []int{4}, svIota(24)[16:20])
	svCheck(t, "Index(0, -3, 3)", Index(x, 0, -3, 3), []int{}, []float64{3})
	svCheck(t, "Index(rank 0)", Index(svSeq()), []int{}, []float64{0})
	svCheck(t, "Index of Transpose", Index(Transpose(svSeq(2, 3)), 2), []int{2}, []float64{2, 5})

	svErr(t, "peel.Slice", func() { Slice(x, 0, 0, 3, 1) }, "stop 3 is out of range")
	svErr(t, "peel.Slice", func() { Slice(x, 0, -3, 2, 1) }, "start -3 is out of range")
	svErr(t, "peel.Slice", func() { Slice(x, 0, 0, 2, 0) }, "step 0")
	svErr(t, "peel.Slice", func() { Slice(x, 3, 0, 2, 1) }, "axis 3")
	svErr(t, "peel.Slice", func() { Slice(svSeq(), 0, 0, 0, 1) }, "rank 0")
	svErr(t, "peel.Narrow", func() { Narrow(x, 1, 2, 2) }, "out of range")
	svErr(t, "peel.Narrow", func() { Narrow(x, 1, -4, 1) }, "out of range")
	svErr(t, "peel.Narrow", func() { Narrow(x, 1, 0, -1) }, "out of range")
	svErr(t, "peel.Select", func() { Select(x, 0, 2) }, "index 2 is out of range")
	svErr(t, "peel.Select", func() { Select(x, 2, -5) }, "index -5 is out of range")
	svErr(t, "peel.Select", func() { Select(x, -4, 0) }, "axis -4")
	svErr(t, "peel.Index", func() { Index(x, 0, 3) }, "index 3 is out of range")
	svErr(t, "peel.Index", func() { Index(x, 0, 0, 0, 0) }, "4 indices")
}

func TestConcatStackSplit(t *testing.T) {
	a, b := svSeq(2, 3), svF64([]float64{10, 11, 12, 13}, 2, 2)
	svCheck(t, "Concat axis 1", Concat([]*Tensor{a, b}, 1), []int{2, 5}, []float64{0, 1, 2, 10, 11, 3, 4, 5, 12, 13})
	svCheck(t, "Concat axis -1", Concat([]*Tensor{a, b}, -1), []int{2, 5}, []float64{0, 1, 2, 10, 11, 3, 4, 5, 12, 13})
	c := svI64([]int64{7, 8, 9}, 1, 3)
	y := Concat([]*Tensor{a, c}, 0)
	if y.DType() != Float64 {
		t.Fatalf("Concat(f64, i64) has dtype %v", y.DType())
	}
	svCheck(t, "Concat axis 0", y, []int{3, 3}, []float64{0, 1, 2, 3, 4, 5, 7, 8, 9})
	f32 := FromFloat32s([]float32{1, 2}, 2)
	i64 := svI64([]int64{3}, 1)
	if y := Concat([]*Tensor{i64, f32}, 0); y.DType() != Float32 {
		t.Fatalf("Concat(i64, f32) has dtype %v", y.DType())
	} else {
		svCheck(t, "Concat(i64, f32)", y, []int{3}, []float64{3, 1, 2})
	}
	svCheck(t, "Concat one", Concat([]*Tensor{a}, 0), []int{2, 3}, svIota(6))
	svCheck(t, "Concat empty piece", Concat([]*Tensor{svSeq(0, 3), a}, 0), []int{2, 3}, svIota(6))

	svCheck(t, "Stack 0", Stack([]*Tensor{svSeq(3), svF64([]float64{5, 6, 7}, 3)}, 0), []int{2, 3}, []float64{0, 1, 2, 5, 6, 7})
	svCheck(t, "Stack -1", Stack([]*Tensor{svSeq(3), svF64([]float64{5, 6, 7}, 3)}, -1), []int{3, 2}, []float64{0, 5, 1, 6, 2, 7})
	svCheck(t, "Stack scalars", Stack([]*Tensor{svF64([]float64{1}), svF64([]float64{2})}, 0), []int{2}, []float64{1, 2})
	svCheck(t, "Stack rank0", Stack([]*Tensor{svSeq(), svF64([]float64{4})}, 0), []int{2}, []float64{0, 4})

	parts := Split(svSeq(2, 5), []int{2, 0, 3}, -1)
	if len(parts) != 3 {
		t.Fatalf("Split gave %d parts", len(parts))
	}
	svCheck(t, "Split[0]", parts[0], []int{2, 2}, []float64{0, 1, 5, 6})
	svCheck(t, "Split[1]", parts[1], []int{2, 0}, []float64{})
	svCheck(t, "Split[2]", parts[2], []int{2, 3}, []float64{2, 3, 4, 7, 8, 9})

	svErr(t, "peel.Concat", func() { Concat(nil, 0) }, "no tensors")
	svErr(t, "peel.Concat", func() { Concat([]*Tensor{a, nil}, 0) }, "nil")
	svErr(t, "peel.Concat", func() { Concat([]*Tensor{a, b}, 0) }, "dimension 1 differs")
	svErr(t, "peel.Concat", func() { Concat([]*Tensor{a, svSeq(3)}, 0) }, "ranks differ")
	svErr(t, "peel.Concat", func() { Concat([]*Tensor{svSeq(), svSeq()}, 0) }, "rank-0")
	svErr(t, "peel.Concat", func() { Concat([]*Tensor{a, a}, 2) }, "axis 2")
	svErr(t, "peel.Stack", func() { Stack([]*Tensor{a, b}, 0) }, "shapes differ")
	svErr(t, "peel.Stack", func() { Stack([]*Tensor{a}, 3) }, "axis 3")
	svErr(t, "peel.Stack", func() { Stack(nil, 0) }, "no tensors")
	svErr(t, "peel.Stack", func() { Stack([]*Tensor{a, nil}, 0) }, "tensor 1 is nil")
	svErr(t, "peel.Split", func() { Split(a, []int{1, 1}, 1) }, "sum to 2")
	svErr(t, "peel.Split", func() { Split(a, []int{4, -1}, 1) }, "negative")
	svErr(t, "peel.Split", func() { Split(a, []int{2}, 2) }, "axis 2")
}

func TestFlipTilePadClone(t *testing.T) {
	x := svSeq(2, 3)
	svCheck(t, "Flip()", Flip(x), []int{2, 3}, []float64{5, 4, 3, 2, 1, 0})
	svCheck(t, "Flip(0)", Flip(x, 0), []int{2, 3}, []float64{3, 4, 5, 0, 1, 2})
	svCheck(t, "Flip(-1)", Flip(x, -1), []int{2, 3}, []float64{2, 1, 0, 5, 4, 3})
	svCheck(t, "Flip(rank 0)", Flip(svSeq()), []int{}, []float64{0})
	svCheck(t, "Flip(empty)", Flip(svSeq(0, 2), 0), []int{0, 2}, []float64{})
	svCheck(t, "Flip(Transpose)", Flip(Transpose(x), 0), []int{3, 2}, []float64{2, 5, 1, 4, 0, 3})
	svErr(t, "peel.Flip", func() { Flip(x, 0, -2) }, "repeated")
	svErr(t, "peel.Flip", func() { Flip(x, 2) }, "axis 2")

	tl := []struct {
		shape, reps, want []int
	}{
		{[]int{3}, []int{2}, []int{6}},
		{[]int{2, 3}, []int{2, 1}, []int{4, 3}},
		{[]int{2, 3}, []int{1, 2}, []int{2, 6}},
		{[]int{2, 3}, []int{3}, []int{2, 9}},
		{[]int{3}, []int{2, 2}, []int{2, 6}},
		{[]int{}, []int{3}, []int{3}},
		{[]int{2}, []int{}, []int{2}},
		{[]int{2, 3}, []int{0, 2}, []int{0, 6}},
		{[]int{1}, []int{4}, []int{4}},
	}
	for _, c := range tl {
		r := len(c.want)
		in := make([]int, r)
		for i := range in {
			in[i] = 1
		}
		copy(in[r-len(c.shape):], c.shape)
		want := svMap(in, c.want, svIota(svSize(in)), func(idx []int) []int {
			src := make([]int, r)
			for k := range src {
				src[k] = idx[k] % in[k]
			}
			return src
		})
		y := Tile(svSeq(c.shape...), c.reps...)
		svCheck(t, fmt.Sprintf("Tile(%v, %v)", c.shape, c.reps), y, c.want, want)
	}
	// Tile returns a fresh tensor even when it does not repeat.
	x1 := svSeq(4)
	y1 := Tile(x1, 1)
	CopyInto(x1, 9.0)
	svCheck(t, "Tile is fresh", y1, []int{4}, svIota(4))
	svErr(t, "peel.Tile", func() { Tile(x, -1) }, "negative")

	svCheck(t, "Pad", Pad(svSeq(3), [][2]int{{1, 2}}, -1), []int{6}, []float64{-1, 0, 1, 2, -1, -1})
	svCheck(t, "Pad 2-D", Pad(x, [][2]int{{1, 0}, {0, 1}}, 7), []int{3, 4}, []float64{7, 7, 7, 7, 0, 1, 2, 7, 3, 4, 5, 7})
	svCheck(t, "Pad crop", Pad(x, [][2]int{{0, -1}, {-1, 1}}, 7), []int{1, 3}, []float64{1, 2, 7})
	svCheck(t, "Pad rank 0", Pad(svSeq(), nil, 7), []int{}, []float64{0})
	svCheck(t, "Pad empty", Pad(svSeq(0), [][2]int{{2, 0}}, 1), []int{2}, []float64{1, 1})
	pi := Pad(svI64([]int64{1, 2}, 2), [][2]int{{1, 1}}, 3.9)
	if pi.DType() != Int64 {
		t.Fatalf("Pad of i64 has dtype %v", pi.DType())
	}
	svCheck(t, "Pad i64", pi, []int{4}, []float64{3, 1, 2, 3})
	svCheck(t, "Pad bool", Pad(FromBools([]bool{false}, 1), [][2]int{{1, 0}}, 2), []int{2}, []float64{1, 0})
	svErr(t, "peel.Pad", func() { Pad(x, [][2]int{{0, 0}}, 0) }, "1 pad pairs")
	svErr(t, "peel.Pad", func() { Pad(x, [][2]int{{0, 0}, {-2, -2}}, 0) }, "removes more")
	svErr(t, "peel.Pad", func() { Pad(x, [][2]int{{0, 0}, {-4, 3}}, 0) }, "removes more")

	c := Clone(x)
	svCheck(t, "Clone", c, []int{2, 3}, svIota(6))
	CopyInto(c, 1.0)
	svCheck(t, "Clone is fresh", x, []int{2, 3}, svIota(6))
	svCheck(t, "Clone of a view", Clone(Transpose(x)), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5})
	svErr(t, "peel.Clone", func() { Clone(nil) }, "nil")
}

// TestViewsAlias checks that every view function returns an alias: a write
// into the view is visible in the base, also through views of views.
func TestViewsAlias(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		view  func(y *Tensor) *Tensor
	}{
		{"Reshape", []int{2, 3}, func(y *Tensor) *Tensor { return Reshape(y, 3, 2) }},
		{"Reshape(-1)", []int{2, 3}, func(y *Tensor) *Tensor { return Reshape(y, -1) }},
		{"Flatten", []int{2, 3}, func(y *Tensor) *Tensor { return Flatten(y) }},
		{"Flatten(1)", []int{2, 3, 2}, func(y *Tensor) *Tensor { return Flatten(y, 1) }},
		{"Transpose", []int{2, 3}, func(y *Tensor) *Tensor { return Transpose(y) }},
		{"Permute", []int{2, 3, 2}, func(y *Tensor) *Tensor { return Permute(y, 2, 0, 1) }},
		{"MoveAxis", []int{2, 3, 2}, func(y *Tensor) *Tensor { return MoveAxis(y, 0, -1) }},
		{"Squeeze", []int{1, 3, 1}, func(y *Tensor) *Tensor { return Squeeze(y) }},
		{"Unsqueeze", []int{2, 3}, func(y *Tensor) *Tensor { return Unsqueeze(y, 1) }},
		{"Slice", []int{8}, func(y *Tensor) *Tensor { return Slice(y, 0, 1, 7, 3) }},
		{"Narrow", []int{5}, func(y *Tensor) *Tensor { return Narrow(y, 0, 1, 3) }},
		{"Select", []int{3, 4}, func(y *Tensor) *Tensor { return Select(y, 1, -2) }},
		{"Index", []int{2, 3, 4}, func(y *Tensor) *Tensor { return Index(y, 1, 2) }},
		{"Split", []int{2, 5}, func(y *Tensor) *Tensor { return Split(y, []int{2, 3}, 1)[1] }},
		{"Narrow(Transpose)", []int{3, 4}, func(y *Tensor) *Tensor { return Narrow(Transpose(y), 0, 1, 2) }},
		{"Select(Narrow(Transpose))", []int{3, 4}, func(y *Tensor) *Tensor { return Select(Narrow(Transpose(y), 1, 1, 2), 0, -1) }},
		{"Reshape(Slice)", []int{4, 3}, func(y *Tensor) *Tensor { return Reshape(Slice(y, 0, 1, 3, 1), 3, 2) }},
		{"Unsqueeze(Select(Transpose))", []int{2, 3, 4}, func(y *Tensor) *Tensor { return Unsqueeze(Select(Permute(y, 2, 0, 1), 0, 3), 0) }},
		{"Index(Slice(MoveAxis))", []int{2, 3, 4}, func(y *Tensor) *Tensor { return Index(Slice(MoveAxis(y, 2, 0), 0, -3, 4, 2), 1) }},
		{"Squeeze(Narrow(Squeeze))", []int{1, 5, 1}, func(y *Tensor) *Tensor { return Squeeze(Narrow(Squeeze(y, 0), 0, 2, 1)) }},
	}
	for _, c := range cases {
		// Reference: apply the same view to a tensor of element ids, so
		// the view's elements name their positions in the base.
		ids := c.view(svSeq(c.shape...))
		pos := svVals(t, ids)
		y := Zeros(Float64, c.shape...)
		v := c.view(y)
		if !slices.Equal(v.Shape(), ids.Shape()) {
			t.Fatalf("%s: view shape %v, want %v", c.name, v.Shape(), ids.Shape())
		}
		src := make([]float64, len(pos))
		for i := range src {
			src[i] = -1 - float64(i)
		}
		if got := CopyInto(v, svF64(src, v.Shape()...)); got != v {
			t.Fatalf("%s: CopyInto did not return its destination", c.name)
		}
		want := make([]float64, svSize(c.shape))
		for i, p := range pos {
			want[int(p)] = src[i]
		}
		svCheck(t, c.name+": base after write through view", y, c.shape, want)
		// And the other way: writing the base shows through the view.
		CopyInto(y, svSeq(c.shape...))
		svCheck(t, c.name+": view after write to base", v, ids.Shape(), pos)
	}
}

func TestRapidShapeProperties(t *testing.T) {
	drawShape := func(t *rapid.T, minRank int) []int {
		r := rapid.IntRange(minRank, 4).Draw(t, "rank")
		s := make([]int, r)
		for i := range s {
			s[i] = rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("d%d", i))
		}
		return s
	}
	t.Run("reshape-transpose-roundtrip", rapid.MakeCheck(func(t *rapid.T) {
		shape := drawShape(t, 0)
		x := svSeq(shape...)
		perm := rapid.Permutation(svPerm(len(shape))).Draw(t, "perm")
		inv := make([]int, len(perm))
		for i, p := range perm {
			inv[p] = i
		}
		y := Transpose(Transpose(x, perm...), inv...)
		if !slices.Equal(y.Shape(), shape) || !slices.Equal(y.Float64s(), svIota(svSize(shape))) {
			t.Fatalf("Transpose round trip of %v by %v", shape, perm)
		}
		z := Reshape(Reshape(Transpose(x, perm...), -1), Transpose(x, perm...).Shape()...)
		ws, wv := svPermuteRef(shape, perm)
		if !slices.Equal(z.Shape(), ws) || !slices.Equal(z.Float64s(), wv) {
			t.Fatalf("Reshape round trip of Transpose(%v, %v)", shape, perm)
		}
	}))
	t.Run("concat-split", rapid.MakeCheck(func(t *rapid.T) {
		shape := drawShape(t, 1)
		axis := rapid.IntRange(-len(shape), len(shape)-1).Draw(t, "axis")
		a := axis
		if a < 0 {
			a += len(shape)
		}
		n := shape[a]
		var sizes []int
		for rest := n; rest > 0 || len(sizes) == 0; {
			s := rapid.IntRange(0, rest).Draw(t, "size")
			sizes = append(sizes, s)
			rest -= s
			if len(sizes) > 6 {
				sizes = append(sizes, rest)
				break
			}
		}
		x := svSeq(shape...)
		y := Concat(Split(x, sizes, axis), axis)
		if !slices.Equal(y.Shape(), shape) || !slices.Equal(y.Float64s(), svIota(svSize(shape))) {
			t.Fatalf("Concat(Split(%v, %v, %d)) = %v", shape, sizes, axis, y.Float64s())
		}
	}))
	t.Run("pad-crop", rapid.MakeCheck(func(t *rapid.T) {
		shape := drawShape(t, 0)
		pads := make([][2]int, len(shape))
		neg := make([][2]int, len(shape))
		for i := range pads {
			pads[i] = [2]int{rapid.IntRange(0, 3).Draw(t, "lo"), rapid.IntRange(0, 3).Draw(t, "hi")}
			neg[i] = [2]int{-pads[i][0], -pads[i][1]}
		}
		x := svSeq(shape...)
		p := Pad(x, pads, -7)
		y := Pad(p, neg, 0)
		if !slices.Equal(y.Shape(), shape) || !slices.Equal(y.Float64s(), svIota(svSize(shape))) {
			t.Fatalf("Pad(Pad(%v, %v), -) = %v", shape, pads, y.Float64s())
		}
		// The padding is where it should be.
		pv := p.Float64s()
		svEach(p.Shape(), func(idx []int) {
			inside := true
			src := make([]int, len(idx))
			for k := range idx {
				src[k] = idx[k] - pads[k][0]
				inside = inside && src[k] >= 0 && src[k] < shape[k]
			}
			want := -7.0
			if inside {
				want = float64(svAt(shape, src))
			}
			if got := pv[svAt(p.Shape(), idx)]; got != want {
				t.Fatalf("Pad(%v, %v) at %v = %v, want %v", shape, pads, idx, got, want)
			}
		})
	}))
	t.Run("slice", rapid.MakeCheck(func(t *rapid.T) {
		shape := drawShape(t, 1)
		axis := rapid.IntRange(0, len(shape)-1).Draw(t, "axis")
		n := shape[axis]
		start := rapid.IntRange(-n, n).Draw(t, "start")
		stop := rapid.IntRange(-n, n).Draw(t, "stop")
		step := rapid.IntRange(1, 3).Draw(t, "step")
		ws, wv := svSliceRef(shape, axis, start, stop, step)
		y := Slice(svSeq(shape...), axis-len(shape), start, stop, step)
		if !slices.Equal(y.Shape(), ws) || !slices.Equal(y.Float64s(), wv) {
			t.Fatalf("Slice(%v, %d, %d, %d, %d) = %v %v, want %v %v", shape, axis, start, stop, step, y.Shape(), y.Float64s(), ws, wv)
		}
	}))
}

func svPerm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
