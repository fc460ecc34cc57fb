package interp_test

import (
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestUpdateInPlace: UpdateInPlace writes p(dst, args…) into dst's own
// buffer where only dst can see it, and otherwise refuses, leaving every
// tensor as it was.
func TestUpdateInPlace(t *testing.T) {
	fresh := func() *interp.Tensor {
		// A kernel's result: a whole buffer no one else holds.
		return interptest.Bind(prims.Add, interptest.Tensor([]float64{1, 2, 3}, 3), interptest.Tensor([]float64{0, 0, 0}, 3))
	}
	bufOf := func(x *interp.Tensor) backend.Buffer { a, _ := interp.ArrayOf(x); return a.Buf }
	for _, c := range []struct {
		name string
		arg  func(dst *interp.Tensor) *interp.Tensor
		want []float64
	}{
		{"contiguous operand", func(*interp.Tensor) *interp.Tensor { return interptest.Tensor([]float64{10, 20, 30}, 3) }, []float64{11, 22, 33}},
		{"broadcast operand", func(*interp.Tensor) *interp.Tensor { return interptest.Splat([]float64{5}, 3) }, []float64{6, 7, 8}},
		{"strided operand", func(*interp.Tensor) *interp.Tensor {
			x := interptest.Tensor([]float64{1, 9, 2, 9, 3, 9}, 3, 2)
			return interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{0, 0}, Limit: []int{3, 1}, Stride: []int{1, 1}}, x)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := fresh()
			arg := c.arg(dst)
			if c.want == nil {
				arg = interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{3}}, arg)
				c.want = []float64{2, 4, 6}
			}
			buf := bufOf(dst)
			if !interp.UpdateInPlace(prims.Add, nil, dst, arg) {
				t.Fatal("refused")
			}
			sameF64(t, "dst", f64s(dst), c.want)
			if bufOf(dst) != buf {
				t.Fatal("dst has a new buffer: not in place")
			}
		})
	}
	for _, c := range []struct {
		name string
		try  func(t *testing.T) (dst *interp.Tensor, ok bool, check []*interp.Tensor)
	}{
		{"snapshot shares dst", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			snap := interp.Snapshot(dst)
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, interptest.Tensor([]float64{1, 1, 1}, 3)), []*interp.Tensor{snap}
		}},
		{"operand is dst", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, dst), nil
		}},
		{"operand is a view of dst", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			v := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{3}}, dst)
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, v), []*interp.Tensor{v}
		}},
		{"operand shares dst's box", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, interp.NewBox(dst)), nil
		}},
		{"dst is a view", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			base := fresh()
			dst := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{3}}, base)
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, interptest.Tensor([]float64{1, 1, 1}, 3)), []*interp.Tensor{base}
		}},
		{"dst is a broadcast", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := interptest.Splat([]float64{4}, 3)
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, interptest.Tensor([]float64{1, 1, 1}, 3)), nil
		}},
		{"result of another dtype", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			return dst, interp.UpdateInPlace(prims.Lt, nil, dst, interptest.Tensor([]float64{1, 1, 1}, 3)), nil
		}},
		{"operand of another shape", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			return dst, interp.UpdateInPlace(prims.Add, nil, dst, interptest.Tensor([]float64{1}, 1)), nil
		}},
		{"not an in-place kernel", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			return dst, interp.UpdateInPlace(prims.Exp, nil, dst), nil
		}},
		{"operand is a tracer", func(t *testing.T) (*interp.Tensor, bool, []*interp.Tensor) {
			dst := fresh()
			var ok bool
			interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				ok = interp.UpdateInPlace(prims.Add, nil, dst, a[0])
				return a
			}, interptest.Aval(backend.Float64, 3))
			return dst, ok, nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst, ok, others := c.try(t)
			if ok {
				t.Fatal("UpdateInPlace wrote where another tensor could see it, or with a result that is not dst's type")
			}
			want := []float64{1, 2, 3}
			if c.name == "dst is a broadcast" {
				want = []float64{4, 4, 4}
			}
			sameF64(t, "dst", f64s(dst), want)
			for _, o := range others {
				if got := f64s(o); got[0]+got[1]+got[2] != 6 {
					t.Fatalf("another tensor changed: %v", got)
				}
			}
		})
	}
}
