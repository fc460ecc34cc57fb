package interp_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

type fakeTracer struct{ l *interp.Level }

func (f fakeTracer) Level() *interp.Level { return f.l }

func arange(n int, shape ...int) *peel.Tensor {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return peel.FromInt64s(v, shape...)
}

func TestString(t *testing.T) {
	negZero := math.Copysign(0, -1)
	cases := []struct {
		name string
		x    *peel.Tensor
		want string
	}{
		{"rank0 f64", peel.FromFloat64s([]float64{1.5}, []int{}...), "1.5"},
		{"rank0 i64", peel.FromInt64s([]int64{-3}, []int{}...), "-3"},
		{"rank0 bool", peel.FromBools([]bool{true}, []int{}...), "true"},
		{"rank0 -0", peel.FromFloat64s([]float64{negZero}, []int{}...), "-0"},
		{"1-D ints", peel.FromInt64s([]int64{1, 2, 3}), "[1 2 3]"},
		{"1-D floats", peel.FromFloat64s([]float64{1.5, -2, math.NaN(), math.Inf(1)}), "[ 1.5   -2  NaN +Inf]"},
		{"1-D f32", peel.FromFloat32s([]float32{0.1, 1e-7, 3}), "[  0.1 1e-07     3]"},
		{"precision", peel.FromFloat64s([]float64{0.1 + 0.2, 1.0 / 3}), "[       0.3 0.33333333]"},
		{"bools", peel.FromBools([]bool{true, false}), "[ true false]"},
		{"one element", peel.FromFloat64s([]float64{2}), "[2]"},
		{"2-D", peel.FromInt64s([]int64{1, 2, 3, 4, 5, 6}, 2, 3), "[[1 2 3]\n [4 5 6]]"},
		{"2-D aligned", peel.FromInt64s([]int64{1, -10, 100, 2}, 2, 2), "[[  1 -10]\n [100   2]]"},
		{"3-D", arange(8, 2, 2, 2), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"},
		{"4-D", arange(4, 2, 1, 2, 1), "[[[[0]\n   [1]]]\n\n\n [[[2]\n   [3]]]]"},
		{"column", arange(3, 3, 1), "[[0]\n [1]\n [2]]"},
		{"empty", peel.FromFloat64s(nil), "[]"},
		{"empty 2-D", peel.FromFloat64s(nil, 2, 0), "[]"},
		{"1000 elements not summarized", arange(1000), "[  0   1   2"},
		{"summarized 1-D", arange(1001), "[   0    1    2 ...  998  999 1000]"},
		{"summarized 2-D", arange(1200, 40, 30), strings.Join([]string{
			"[[   0    1    2 ...   27   28   29]",
			" [  30   31   32 ...   57   58   59]",
			" [  60   61   62 ...   87   88   89]",
			" ...",
			" [1110 1111 1112 ... 1137 1138 1139]",
			" [1140 1141 1142 ... 1167 1168 1169]",
			" [1170 1171 1172 ... 1197 1198 1199]]"}, "\n")},
		{"summarized short rows", arange(1002, 1002, 1), "[[   0]\n [   1]\n [   2]\n ...\n [ 999]\n [1000]\n [1001]]"},
	}
	for _, c := range cases {
		got := c.x.String()
		if c.name == "1000 elements not summarized" {
			if !strings.HasPrefix(got, c.want) || strings.Contains(got, "...") || !strings.HasSuffix(got, " 998 999]") {
				t.Errorf("%s: got %q", c.name, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

func TestStringViews(t *testing.T) {
	x := arange(6, 2, 3)
	tr := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, x)
	if got, want := tr.String(), "[[0 3]\n [1 4]\n [2 5]]"; got != want {
		t.Errorf("transposed view: got %q, want %q", got, want)
	}
	sl := interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{0, 1}, Limit: []int{2, 3}, Stride: []int{1, 2}}, x)
	if got, want := sl.String(), "[[1]\n [4]]"; got != want {
		t.Errorf("sliced view: got %q, want %q", got, want)
	}
	b := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 2}, Dims: []int{}}, peel.FromFloat64s([]float64{7}, []int{}...))
	if got, want := b.String(), "[[7 7]\n [7 7]]"; got != want {
		t.Errorf("broadcast view: got %q, want %q", got, want)
	}
}

func TestStringTracerAndNil(t *testing.T) {
	l := interp.NewLevel("vmap", nil)
	defer l.End()
	x := interp.NewTracer(interp.Aval{Shape: []int{2, 3}, DType: peel.Float64}, fakeTracer{l})
	want := "Traced<f64[2,3]> [vmap, level " + strconv.FormatUint(l.ID(), 10) + "]"
	if got := x.String(); got != want {
		t.Errorf("tracer: got %q, want %q", got, want)
	}
	if got := fmt.Sprint(x); got != want {
		t.Errorf("fmt.Sprint(tracer): got %q, want %q", got, want)
	}
	var n *peel.Tensor
	if got := n.String(); got != "<nil>" {
		t.Errorf("nil: got %q", got)
	}
	if got := fmt.Sprintf("%v", peel.FromInt64s([]int64{4, 5})); got != "[4 5]" {
		t.Errorf("%%v: got %q", got)
	}
}
