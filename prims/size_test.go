package prims_test

import (
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// ruleError runs a shape rule and returns the *interp.Error it panicked
// with, failing the test on success or on any other panic.
func ruleError(t *testing.T, name string, f func()) string {
	t.Helper()
	var msg string
	func() {
		defer func() {
			r := recover()
			if r == nil {
				t.Fatalf("%s: no error", name)
			}
			e, ok := r.(*interp.Error)
			if !ok {
				t.Fatalf("%s: panicked with %T %v, not *interp.Error", name, r, r)
			}
			msg = e.Error()
		}()
		f()
	}()
	return msg
}

// TestShapeRulesRefuseOverflow checks that every shape rule that takes a
// shape from its parameters or combines operand dimensions refuses
// negative dimensions and sizes that overflow int with an *interp.Error.
func TestShapeRulesRefuseOverflow(t *testing.T) {
	f64 := func(shape ...int) interp.Aval { return interp.Aval{Shape: shape, DType: backend.Float64} }
	i64 := func(shape ...int) interp.Aval { return interp.Aval{Shape: shape, DType: backend.Int64} }
	cases := []struct {
		name   string
		p      *interp.Prim
		params any
		in     []interp.Aval
		want   string
	}{
		{"broadcast overflow", prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{1 << 32, 1 << 31}, Dims: []int{}}, []interp.Aval{f64()}, "too large"},
		{"broadcast negative", prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{math.MinInt}, Dims: []int{}}, []interp.Aval{f64()}, "negative"},
		{"reshape wraps to 6", prims.Reshape, prims.ReshapeParams{Shape: []int{2305843009213693955, 4611686018427387906}}, []interp.Aval{f64(6)}, "too large"},
		{"reshape empty overflow", prims.Reshape, prims.ReshapeParams{Shape: []int{1 << 62, 4}}, []interp.Aval{f64(0)}, "too large"},
		{"iota overflow", prims.Iota, prims.IotaParams{DType: backend.Int64, Shape: []int{math.MaxInt, 2}, Dim: 0}, nil, "too large"},
		{"iota negative", prims.Iota, prims.IotaParams{DType: backend.Int64, Shape: []int{-1}, Dim: 0}, nil, "negative"},
		{"pad overflow", prims.Pad, prims.PadParams{Low: []int{1 << 62}, High: []int{1 << 62}, Interior: []int{0}}, []interp.Aval{f64(2), f64()}, "too large"},
		{"pad MaxInt", prims.Pad, prims.PadParams{Low: []int{math.MaxInt}, High: []int{1}, Interior: []int{0}}, []interp.Aval{f64(2), f64()}, "too large"},
		{"pad interior overflow", prims.Pad, prims.PadParams{Low: []int{0}, High: []int{0}, Interior: []int{math.MaxInt}}, []interp.Aval{f64(3), f64()}, "too large"},
		{"pad MinInt", prims.Pad, prims.PadParams{Low: []int{math.MinInt}, High: []int{-1}, Interior: []int{0}}, []interp.Aval{f64(2), f64()}, "removes more"},
		{"pad product overflow", prims.Pad, prims.PadParams{Low: []int{1 << 31, 0}, High: []int{0, 1 << 32}, Interior: []int{0, 0}}, []interp.Aval{f64(0, 0), f64()}, "too large"},
		{"concatenate overflow", prims.Concatenate, prims.AxisParams{Axis: 0}, []interp.Aval{f64(math.MaxInt), f64(1)}, "too large"},
		{"concatenate product", prims.Concatenate, prims.AxisParams{Axis: 1}, []interp.Aval{f64(1<<32, 1<<30), f64(1<<32, 1<<30)}, "too large"},
		{"gather overflow", prims.Gather, prims.AxisParams{Axis: 1}, []interp.Aval{f64(1<<40, 2), i64(1 << 40)}, "too large"},
		{"dot overflow", prims.DotGeneral, prims.DotParams{}, []interp.Aval{f64(1 << 32), f64(1 << 32)}, "too large"},
		{"slice bounds", prims.Slice, prims.SliceParams{Start: []int{0}, Limit: []int{math.MaxInt}, Stride: []int{1}}, []interp.Aval{f64(3)}, "out of range"},
		{"slice stride", prims.Slice, prims.SliceParams{Start: []int{0}, Limit: []int{3}, Stride: []int{math.MinInt}}, []interp.Aval{f64(3)}, "stride"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := ruleError(t, c.name, func() { c.p.Abstract(c.params, c.in) })
			if !strings.Contains(msg, c.want) {
				t.Errorf("message %q does not mention %q", msg, c.want)
			}
		})
	}
}

// TestSliceShapeHugeStride is the regression test for a stride near
// MaxInt, whose rounding up used to overflow into a negative dimension.
func TestSliceShapeHugeStride(t *testing.T) {
	for _, c := range []struct{ start, limit, stride, want int }{
		{0, 3, math.MaxInt, 1},
		{0, 3, math.MaxInt - 1, 1},
		{2, 3, math.MaxInt, 1},
		{3, 3, math.MaxInt, 0},
		{0, math.MaxInt, math.MaxInt, 1},
		{0, math.MaxInt, 2, math.MaxInt/2 + 1},
		{1, math.MaxInt, 1 << 62, 2},
	} {
		got := prims.SliceShape(prims.SliceParams{Start: []int{c.start}, Limit: []int{c.limit}, Stride: []int{c.stride}}, []int{math.MaxInt})
		if got[0] != c.want {
			t.Errorf("slice [%d:%d:%d] of MaxInt: %d elements, want %d", c.start, c.limit, c.stride, got[0], c.want)
		}
	}
}

func TestPadLen(t *testing.T) {
	for _, c := range []struct {
		d, low, high, interior, want int
		err                          string
	}{
		{2, 1, 1, 0, 4, ""},
		{3, 0, 0, 2, 7, ""},
		{0, 0, 0, math.MaxInt, 0, ""},
		{1, 0, 0, math.MaxInt, 1, ""},
		{2, math.MaxInt - 2, 0, 0, math.MaxInt, ""},
		{2, math.MaxInt - 1, 0, 0, 0, "too large"},
		{2, math.MaxInt, -5, 0, math.MaxInt - 3, ""}, // no intermediate overflow
		{2, -5, math.MaxInt, 0, math.MaxInt - 3, ""},
		{2, math.MinInt, math.MaxInt, 0, 1, ""},
		{2, math.MinInt, -1, 0, 0, "removes more"},
		{2, -3, 0, 0, 0, "removes more"},
		{math.MaxInt, 1, 0, 0, 0, "too large"},
		{3, 0, 0, math.MaxInt/2 + 1, 0, "too large"},
	} {
		n, err := prims.PadLen(c.d, c.low, c.high, c.interior)
		switch {
		case c.err == "" && (err != nil || n != c.want):
			t.Errorf("PadLen(%d, %d, %d, %d) = %d, %v; want %d", c.d, c.low, c.high, c.interior, n, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("PadLen(%d, %d, %d, %d) = %d, %v; want an error saying %q", c.d, c.low, c.high, c.interior, n, err, c.err)
		}
	}
}
