package peel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/peel-ml/peel/interp"
	"pgregory.net/rapid"
)

// svTakeRef is the reference of Take(svSeq(shape), idx, axis).
func svTakeRef(shape []int, idx []int64, ishape []int, axis int) ([]int, []float64) {
	n := shape[axis]
	out := append(append(slices.Clone(shape[:axis]), ishape...), shape[axis+1:]...)
	return out, svMap(shape, out, svIota(svSize(shape)), func(o []int) []int {
		src := slices.Clone(o[:axis])
		i := int(idx[svAt(ishape, o[axis:axis+len(ishape)])])
		if i < 0 {
			i += n
		}
		src = append(src, i)
		return append(src, o[axis+len(ishape):]...)
	})
}

func TestTake(t *testing.T) {
	cases := []struct {
		shape  []int
		idx    []int64
		ishape []int
		axis   int
	}{
		{[]int{5}, []int64{4, 0, 2}, []int{3}, 0},
		{[]int{5}, []int64{-1, -5}, []int{2}, 0},
		{[]int{5}, []int64{3}, []int{}, 0},
		{[]int{3, 4}, []int64{1, 1, 0, 2}, []int{2, 2}, 0},
		{[]int{3, 4}, []int64{3, -4, 1}, []int{3}, 1},
		{[]int{3, 4}, []int64{-1}, []int{1}, -1},
		{[]int{2, 3, 4}, []int64{2, 0}, []int{2}, -2},
		{[]int{2, 3, 4}, []int64{}, []int{0}, 1},
		{[]int{2, 0, 4}, []int64{1}, []int{1}, 2},
	}
	for _, c := range cases {
		a := c.axis
		if a < 0 {
			a += len(c.shape)
		}
		shape, want := svTakeRef(c.shape, c.idx, c.ishape, a)
		svCheck(t, fmt.Sprintf("Take(%v, %v, %d)", c.shape, c.idx, c.axis), Take(svSeq(c.shape...), svI64(c.idx, c.ishape...), c.axis), shape, want)
	}
	x := svSeq(3, 4)
	svErr(t, "peel.Take", func() { Take(x, svI64([]int64{0, 4}, 2), 1) }, "index 4", "position [1]", "size 4")
	svErr(t, "peel.Take", func() { Take(x, svI64([]int64{0, -4}, 2), 0) }, "index -4", "size 3")
	svErr(t, "peel.Take", func() { Take(x, svF64([]float64{0}, 1), 0) }, "not i64")
	svErr(t, "peel.Take", func() { Take(x, nil, 0) }, "nil")
	svErr(t, "peel.Take", func() { Take(x, svI64([]int64{0}, 1), 2) }, "axis 2")
	svErr(t, "peel.Take", func() { Take(svSeq(), svI64([]int64{0}, 1), 0) }, "rank 0")
}

// svAlongRef is the reference of TakeAlongAxis with broadcasting.
func svAlongRef(xs []int, idx []int64, is []int, axis int) ([]int, []float64) {
	out := make([]int, len(xs))
	for k := range out {
		out[k] = max(xs[k], is[k])
		if k == axis {
			out[k] = is[k]
		}
	}
	return out, svMap(xs, out, svIota(svSize(xs)), func(o []int) []int {
		ii := make([]int, len(o))
		src := make([]int, len(o))
		for k := range o {
			if is[k] != 1 {
				ii[k] = o[k]
			}
			if xs[k] != 1 {
				src[k] = o[k]
			}
		}
		j := int(idx[svAt(is, ii)])
		if j < 0 {
			j += xs[axis]
		}
		src[axis] = j
		return src
	})
}

func TestTakeAlongAxis(t *testing.T) {
	cases := []struct {
		xs   []int
		idx  []int64
		is   []int
		axis int
	}{
		{[]int{5}, []int64{4, 0, -1, 2}, []int{4}, 0},
		{[]int{2, 3}, []int64{2, 0, 1, 1}, []int{2, 2}, 1},
		{[]int{2, 3}, []int64{1, 0, 0}, []int{1, 3}, 0},
		{[]int{2, 3}, []int64{-1, 0}, []int{2, 1}, -1},
		{[]int{2, 1, 4}, []int64{3, 0, 1, 2, 0, 0}, []int{1, 3, 2}, 2},
		{[]int{1, 3}, []int64{2, 1, 0, 0}, []int{4, 1}, 1},
		{[]int{3, 2}, []int64{}, []int{0, 2}, 0},
	}
	for _, c := range cases {
		a := c.axis
		if a < 0 {
			a += len(c.xs)
		}
		shape, want := svAlongRef(c.xs, c.idx, c.is, a)
		svCheck(t, fmt.Sprintf("TakeAlongAxis(%v, %v %v, %d)", c.xs, c.idx, c.is, c.axis),
			TakeAlongAxis(svSeq(c.xs...), svI64(c.idx, c.is...), c.axis), shape, want)
	}
	x := svSeq(2, 3)
	svErr(t, "peel.TakeAlongAxis", func() { TakeAlongAxis(x, svI64([]int64{0}, 1), 0) }, "same rank")
	svErr(t, "peel.TakeAlongAxis", func() { TakeAlongAxis(x, svI64([]int64{0, 0, 0, 0}, 4, 1), 1) }, "broadcast")
	svErr(t, "peel.TakeAlongAxis", func() { TakeAlongAxis(x, svI64([]int64{3}, 1, 1), 1) }, "index 3")
	svErr(t, "peel.TakeAlongAxis", func() { TakeAlongAxis(x, svI64([]int64{0}, 1, 1), 2) }, "axis 2")
}

func TestScatterAddIndexAddIndexCopy(t *testing.T) {
	// IndexAdd: out[:, idx[j]] += src[:, j].
	x := svSeq(2, 4)
	src := svF64([]float64{1, 2, 3, 10, 20, 30}, 2, 3)
	y := IndexAdd(x, svI64([]int64{3, -4, 3}, 3), src, 1)
	svCheck(t, "IndexAdd", y, []int{2, 4}, []float64{0 + 2, 1, 2, 3 + 1 + 3, 4 + 20, 5, 6, 7 + 10 + 30})
	svCheck(t, "IndexAdd leaves x", x, []int{2, 4}, svIota(8))
	// Scalar source broadcast, 2-D indices, i64 operand with f-less source.
	xi := svI64([]int64{0, 0, 0}, 3)
	yi := IndexAdd(xi, svI64([]int64{0, 2, 2, 2}, 2, 2), svI64([]int64{5}), 0)
	svCheck(t, "IndexAdd i64", yi, []int{3}, []float64{5, 0, 15})
	svCheck(t, "IndexAdd empty", IndexAdd(x, svI64([]int64{}, 0), svSeq(0, 4), 0), []int{2, 4}, svIota(8))

	yc := IndexCopy(x, svI64([]int64{-1}, 1), svF64([]float64{9, 8, 7, 6}, 1, 4), 0)
	svCheck(t, "IndexCopy", yc, []int{2, 4}, []float64{0, 1, 2, 3, 9, 8, 7, 6})

	// ScatterAdd along axis 1: out[i, idx[i, j]] += src[i, j].
	s := ScatterAdd(Zeros(Float64, 2, 3), svI64([]int64{0, 2, 2, 1, 1, 0}, 2, 3), svF64([]float64{1, 2, 3, 4, 5, 6}, 2, 3), 1)
	svCheck(t, "ScatterAdd", s, []int{2, 3}, []float64{1, 0, 5, 6, 9, 0})
	// Along axis 0 with a broadcast index row and a scalar source.
	s = ScatterAdd(Zeros(Float64, 3, 2), svI64([]int64{2, -3}, 2, 1), svF64([]float64{1}), 0)
	svCheck(t, "ScatterAdd broadcast", s, []int{3, 2}, []float64{1, 1, 0, 0, 1, 1})
	// ScatterAdd is the transpose of TakeAlongAxis: <TakeAlongAxis(x), g> == <x, ScatterAdd(0, g)>.
	idx := svI64([]int64{1, 0, 2, 2, 0, 1, 1, 1}, 2, 4)
	g := svF64([]float64{1, -2, 3, 0.5, 7, 1, -1, 2}, 2, 4)
	xx := svF64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	lhs, rhs := 0.0, 0.0
	for i, v := range TakeAlongAxis(xx, idx, 1).Float64s() {
		lhs += v * g.Float64s()[i]
	}
	for i, v := range ScatterAdd(Zeros(Float64, 2, 3), idx, g, 1).Float64s() {
		rhs += v * xx.Float64s()[i]
	}
	if lhs != rhs {
		t.Fatalf("ScatterAdd is not the transpose of TakeAlongAxis: %v vs %v", lhs, rhs)
	}

	svErr(t, "peel.IndexAdd", func() { IndexAdd(x, svI64([]int64{4}, 1), svSeq(2, 1), 1) }, "index 4")
	svErr(t, "peel.IndexAdd", func() { IndexAdd(x, svI64([]int64{0}, 1), svSeq(2, 2), 1) }, "cannot be broadcast")
	svErr(t, "peel.IndexAdd", func() { IndexAdd(xi, svI64([]int64{0}, 1), svF64([]float64{1}, 1), 0) }, "can't be cast")
	svErr(t, "peel.IndexAdd", func() { IndexAdd(FromBools([]bool{true}, 1), svI64([]int64{0}, 1), FromBools([]bool{true}, 1), 0) }, "bool")
	svErr(t, "peel.IndexAdd", func() { IndexAdd(x, svI64([]int64{0}, 1), svSeq(2, 1), 2) }, "axis 2")
	svErr(t, "peel.IndexCopy", func() { IndexCopy(x, svI64([]int64{2}, 1), svSeq(1, 4), 0) }, "index 2")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(x, svI64([]int64{0, 0}, 1, 2), svSeq(1, 2), 0) }, "broadcast")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(FromBools([]bool{true}, 1), svI64([]int64{0}, 1), FromBools([]bool{true}, 1), 0) }, "bool")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(x, svI64([]int64{0}, 1, 1), nil, 0) }, "nil")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(xi, svI64([]int64{0}, 1), svF64([]float64{1}, 1), 0) }, "can't be cast")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(x, svI64([]int64{0}, 1), svSeq(1), 0) }, "same rank")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(x, svI64([]int64{-3}, 1, 1), svSeq(1, 1), 0) }, "index -3")
	svErr(t, "peel.ScatterAdd", func() { ScatterAdd(x, svI64([]int64{0}, 1, 1), svSeq(2, 2), 0) }, "cannot be broadcast")
}

func TestOneHot(t *testing.T) {
	y := OneHot(svI64([]int64{0, 2, -1, 1}, 2, 2), 3, Float32)
	if y.DType() != Float32 {
		t.Fatalf("OneHot dtype %v", y.DType())
	}
	svCheck(t, "OneHot", y, []int{2, 2, 3}, []float64{1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0})
	svCheck(t, "OneHot rank 0", OneHot(svI64([]int64{1}, []int{}...), 2, Int64), []int{2}, []float64{0, 1})
	svCheck(t, "OneHot bool", OneHot(svI64([]int64{1}, 1), 2, Bool), []int{1, 2}, []float64{0, 1})
	svCheck(t, "OneHot empty", OneHot(svI64([]int64{}, 0), 4, Float64), []int{0, 4}, []float64{})
	svErr(t, "peel.OneHot", func() { OneHot(svI64([]int64{3}, 1), 3, Float64) }, "index 3")
	svErr(t, "peel.OneHot", func() { OneHot(svI64([]int64{0}, 1), -1, Float64) }, "negative")
	svErr(t, "peel.OneHot", func() { OneHot(svF64([]float64{0}, 1), 2, Float64) }, "not i64")
	svErr(t, "peel.OneHot", func() { OneHot(svI64([]int64{0}, 1), 2, DType(0)) }, "invalid dtype")
}

func svStarts(v ...int64) []*Tensor {
	out := make([]*Tensor, len(v))
	for i, s := range v {
		out[i] = svI64([]int64{s}, []int{}...)
	}
	return out
}

func TestDynamicSliceUpdate(t *testing.T) {
	x := svSeq(3, 4)
	cases := []struct {
		starts []int64
		sizes  []int
		want   []int // effective starts
	}{
		{[]int64{1, 1}, []int{2, 2}, []int{1, 1}},
		{[]int64{0, 3}, []int{3, 1}, []int{0, 3}},
		{[]int64{2, 3}, []int{2, 2}, []int{1, 2}},   // clamped
		{[]int64{-1, -2}, []int{1, 2}, []int{2, 2}}, // negative counts from the end
		{[]int64{-9, 0}, []int{1, 4}, []int{0, 0}},  // clamped after wrapping
		{[]int64{1, 2}, []int{0, 2}, []int{1, 2}},
	}
	for _, c := range cases {
		want := svMap([]int{3, 4}, c.sizes, svIota(12), func(o []int) []int { return []int{o[0] + c.want[0], o[1] + c.want[1]} })
		svCheck(t, fmt.Sprintf("DynamicSlice(%v, %v)", c.starts, c.sizes), DynamicSlice(x, svStarts(c.starts...), c.sizes), c.sizes, want)
	}
	svCheck(t, "DynamicSlice rank 0", DynamicSlice(svSeq(), nil, nil), []int{}, []float64{0})

	u := svF64([]float64{-1, -2, -3, -4}, 2, 2)
	y := DynamicUpdateSlice(x, u, svStarts(2, -1))
	svCheck(t, "DynamicUpdateSlice", y, []int{3, 4}, []float64{0, 1, 2, 3, 4, 5, -1, -2, 8, 9, -3, -4})
	svCheck(t, "DynamicUpdateSlice leaves x", x, []int{3, 4}, svIota(12))
	yi := DynamicUpdateSlice(svI64([]int64{0, 0, 0}, 3), svF64([]float64{2.7}, 1), svStarts(1))
	svCheck(t, "DynamicUpdateSlice converts", yi, []int{3}, []float64{0, 2, 0})

	svErr(t, "peel.DynamicSlice", func() { DynamicSlice(x, svStarts(0), []int{1, 1}) }, "1 start indices")
	svErr(t, "peel.DynamicSlice", func() { DynamicSlice(x, svStarts(0, 0), []int{1}) }, "1 sizes")
	svErr(t, "peel.DynamicSlice", func() { DynamicSlice(x, svStarts(0, 0), []int{4, 1}) }, "size 4")
	svErr(t, "peel.DynamicSlice", func() { DynamicSlice(x, []*Tensor{svI64([]int64{0}, 1), svStarts(0)[0]}, []int{1, 1}) }, "not an i64 scalar")
	svErr(t, "peel.DynamicSlice", func() { DynamicSlice(x, []*Tensor{nil, nil}, []int{1, 1}) }, "nil")
	svErr(t, "peel.DynamicUpdateSlice", func() { DynamicUpdateSlice(x, svSeq(4), svStarts(0)) }, "rank")
	svErr(t, "peel.DynamicUpdateSlice", func() { DynamicUpdateSlice(x, svSeq(1, 5), svStarts(0, 0)) }, "larger")
	svErr(t, "peel.DynamicUpdateSlice", func() { DynamicUpdateSlice(x, svSeq(1, 1), svStarts(0)) }, "start indices")
}

func TestRapidTake(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rapid.IntRange(1, 3).Draw(t, "rank")
		shape := make([]int, r)
		for i := range shape {
			shape[i] = rapid.IntRange(1, 4).Draw(t, "dim")
		}
		axis := rapid.IntRange(0, r-1).Draw(t, "axis")
		ir := rapid.IntRange(0, 2).Draw(t, "irank")
		ishape := make([]int, ir)
		for i := range ishape {
			ishape[i] = rapid.IntRange(0, 3).Draw(t, "idim")
		}
		n := shape[axis]
		idx := make([]int64, svSize(ishape))
		for i := range idx {
			idx[i] = int64(rapid.IntRange(-n, n-1).Draw(t, "idx"))
		}
		ws, wv := svTakeRef(shape, idx, ishape, axis)
		y := Take(svSeq(shape...), svI64(idx, ishape...), axis)
		if !slices.Equal(y.Shape(), ws) || !slices.Equal(y.Float64s(), wv) {
			t.Fatalf("Take(%v, %v %v, %d) = %v %v, want %v %v", shape, idx, ishape, axis, y.Shape(), y.Float64s(), ws, wv)
		}
	})
}

// TestUnderTrace stages the functions of this part of the API with
// interp.Trace (so no tensor data can be read) and checks that evaluating
// the graph agrees with eager evaluation.
func TestUnderTrace(t *testing.T) {
	x := svSeq(3, 4)
	idx := svI64([]int64{2, -1, 0}, 3)
	one := func(f func(a []*Tensor) *Tensor) func(a []*Tensor) []*Tensor {
		return func(a []*Tensor) []*Tensor { return []*Tensor{f(a)} }
	}
	cases := []struct {
		name string
		f    func(a []*Tensor) []*Tensor
		args []*Tensor
	}{
		{"Reshape", one(func(a []*Tensor) *Tensor { return Reshape(a[0], -1, 2) }), []*Tensor{x}},
		{"MoveAxis+Select", one(func(a []*Tensor) *Tensor { return Select(MoveAxis(a[0], 0, 1), 0, -1) }), []*Tensor{x}},
		{"Slice+Squeeze", one(func(a []*Tensor) *Tensor { return Squeeze(Slice(a[0], 1, -2, 3, 2), 1) }), []*Tensor{svSeq(3, 3)}},
		{"Index+Unsqueeze", one(func(a []*Tensor) *Tensor { return Unsqueeze(Index(a[0], 1), 0) }), []*Tensor{x}},
		{"BroadcastTo+Clone", one(func(a []*Tensor) *Tensor { return Clone(BroadcastTo(a[0], 2, 3, 4)) }), []*Tensor{x}},
		{"Concat+Stack", one(func(a []*Tensor) *Tensor {
			return Stack([]*Tensor{Concat([]*Tensor{a[0], a[1]}, 0), Concat([]*Tensor{a[1], a[0]}, 0)}, -1)
		}), []*Tensor{x, svI64([]int64{1, 2, 3, 4}, 1, 4)}},
		{"Split", func(a []*Tensor) []*Tensor { return Split(a[0], []int{1, 3}, 1) }, []*Tensor{x}},
		{"Flip+Tile+Pad", one(func(a []*Tensor) *Tensor { return Pad(Tile(Flip(a[0], 0), 2, 1), [][2]int{{1, -1}, {0, 2}}, 5) }), []*Tensor{x}},
		{"Take", one(func(a []*Tensor) *Tensor { return Take(a[0], a[1], 1) }), []*Tensor{x, idx}},
		{"TakeAlongAxis", one(func(a []*Tensor) *Tensor { return TakeAlongAxis(a[0], a[1], 0) }), []*Tensor{x, svI64([]int64{2, -1, 0, 1}, 1, 4)}},
		{"IndexAdd", one(func(a []*Tensor) *Tensor { return IndexAdd(a[0], a[1], Ones(Float64, 3, 3), 1) }), []*Tensor{x, idx}},
		{"IndexCopy", one(func(a []*Tensor) *Tensor { return IndexCopy(a[0], a[1], Zeros(Float64, 3, 4), 0) }), []*Tensor{x, svI64([]int64{-3, 1, 2}, 3)}},
		{"ScatterAdd", one(func(a []*Tensor) *Tensor { return ScatterAdd(a[0], a[1], Ones(Float64, 3, 2), 1) }), []*Tensor{x, svI64([]int64{0, -1, 2, 2, 1, 0}, 3, 2)}},
		{"OneHot", one(func(a []*Tensor) *Tensor { return OneHot(a[0], 3, Float32) }), []*Tensor{idx}},
		{"DynamicSlice", one(func(a []*Tensor) *Tensor { return DynamicSlice(a[0], []*Tensor{a[1], a[2]}, []int{2, 2}) }), []*Tensor{x, svStarts(-1)[0], svStarts(5)[0]}},
		{"DynamicUpdateSlice", one(func(a []*Tensor) *Tensor { return DynamicUpdateSlice(a[0], Ones(Float64, 1, 2), []*Tensor{a[1], a[2]}) }), []*Tensor{x, svStarts(-1)[0], svStarts(1)[0]}},
		{"MatMul", one(func(a []*Tensor) *Tensor { return MatMul(a[0], a[1]) }), []*Tensor{svSeq(2, 1, 3, 4), svSeq(5, 4, 2)}},
		{"Outer", one(func(a []*Tensor) *Tensor { return Outer(a[0], a[1]) }), []*Tensor{svSeq(2), svSeq(3)}},
		{"Einsum", one(func(a []*Tensor) *Tensor { return Einsum("ij,jk,k->ki", a[0], a[1], a[2]) }), []*Tensor{x, svSeq(4, 2), svSeq(2)}},
		{"in place on a fresh value", one(func(a []*Tensor) *Tensor {
			y := Clone(a[0])
			AddInPlace(y, 1)
			MulInPlace(y, a[0])
			CopyInto(y, Add(y, 2))
			return y
		}), []*Tensor{x}},
	}
	for _, c := range cases {
		g := interp.Trace(c.f, c.args)
		got := g.Eval(c.args...)
		want := c.f(c.args)
		if len(got) != len(want) {
			t.Fatalf("%s: %d results, want %d", c.name, len(got), len(want))
		}
		for i := range got {
			svCheck(t, c.name+" traced", got[i], want[i].Shape(), svVals(t, want[i]))
		}
	}
	// A traced index is not range-checked: gathers clamp it, as XLA does,
	// and one-hot rows of out-of-range indices are zero.
	g := interp.Trace(func(a []*Tensor) []*Tensor { return []*Tensor{Take(x, a[0], 1), OneHot(a[0], 4, Int64)} }, []*Tensor{idx})
	out := g.Eval(svI64([]int64{7, -9, 1}, 3))
	svCheck(t, "traced Take clamps", out[0], []int{3, 3}, []float64{3, 0, 1, 7, 4, 5, 11, 8, 9})
	svCheck(t, "traced OneHot out of range", out[1], []int{3, 4}, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0})
}
