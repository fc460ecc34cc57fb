package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The shape and indexing kernels move values without arithmetic, so every
// result is compared exactly against a float64 reference computed with
// plain loops over multi-indices. Each case runs for every dtype the
// primitive accepts (values are small integers, and 0/1 for bool) and for
// three layouts of the data operand: contiguous, a transposed view and a
// sliced view with an offset (both non-contiguous, so Exec materializes
// them).

var (
	stAllDTypes     = []backend.DType{backend.Bool, backend.Int64, backend.Float32, backend.Float64}
	stNumericDTypes = []backend.DType{backend.Int64, backend.Float32, backend.Float64}
)

type stLayout int

const (
	stContiguous stLayout = iota
	stTransposed
	stSliced
)

func (l stLayout) String() string { return [...]string{"contiguous", "transposed", "sliced"}[l] }

var stLayouts = []stLayout{stContiguous, stTransposed, stSliced}

// stCast returns data as dt would hold it (bool keeps only non-zero).
func stCast(data []float64, dt backend.DType) []float64 {
	out := make([]float64, len(data))
	for i, v := range data {
		switch dt {
		case backend.Bool:
			if v != 0 {
				out[i] = 1
			}
		case backend.Float32:
			out[i] = float64(float32(v))
		default:
			out[i] = v
		}
	}
	return out
}

// stHost converts float64 values to a host slice of dtype dt.
func stHost(data []float64, dt backend.DType) any {
	switch dt {
	case backend.Bool:
		s := make([]bool, len(data))
		for i, v := range data {
			s[i] = v != 0
		}
		return s
	case backend.Int64:
		s := make([]int64, len(data))
		for i, v := range data {
			s[i] = int64(v)
		}
		return s
	case backend.Float32:
		s := make([]float32, len(data))
		for i, v := range data {
			s[i] = float32(v)
		}
		return s
	}
	return slices.Clone(data)
}

// stTensor makes a contiguous tensor of dtype dt.
func stTensor(data []float64, dt backend.DType, shape ...int) *interp.Tensor {
	be := cpu.New()
	if shape == nil {
		shape = []int{}
	}
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(stHost(data, dt)), Shape: shape})
}

// stIndices makes an i64 tensor.
func stIndices(idx []int64, shape ...int) *interp.Tensor {
	be := cpu.New()
	if shape == nil {
		shape = []int{}
	}
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(slices.Clone(idx)), Shape: shape})
}

func stRavel(idx, shape []int) int {
	i := 0
	for k, d := range shape {
		i = i*d + idx[k]
	}
	return i
}

func stUnravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = i % shape[k]
		i /= shape[k]
	}
	return idx
}

// stLaidOut makes a tensor with the given logical content and layout.
func stLaidOut(data []float64, dt backend.DType, l stLayout, shape ...int) *interp.Tensor {
	r := len(shape)
	switch l {
	case stTransposed:
		// Store the transpose, then view it transposed back.
		rs := slices.Clone(shape)
		slices.Reverse(rs)
		td := make([]float64, len(data))
		for i, v := range data {
			idx := stUnravel(i, shape)
			slices.Reverse(idx)
			td[stRavel(idx, rs)] = v
		}
		perm := make([]int, r)
		for k := range perm {
			perm[k] = r - 1 - k
		}
		return interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, stTensor(td, dt, rs...))
	case stSliced:
		// Store inside a larger array (one extra element before and
		// after along each dimension, and every other element along the
		// last), then slice it out.
		big := make([]int, r)
		start, limit, stride := make([]int, r), make([]int, r), make([]int, r)
		for k, d := range shape {
			stride[k] = 1
			if k == r-1 {
				stride[k] = 2
			}
			big[k] = d*stride[k] + 2
			start[k] = 1
			limit[k] = 1 + d*stride[k]
		}
		bd := make([]float64, backend.ShapeSize(big))
		for i := range bd {
			bd[i] = -7
		}
		for i, v := range data {
			idx := stUnravel(i, shape)
			for k := range idx {
				idx[k] = start[k] + idx[k]*stride[k]
			}
			bd[stRavel(idx, big)] = v
		}
		return interp.Bind1(prims.Slice, prims.SliceParams{Start: start, Limit: limit, Stride: stride}, stTensor(bd, dt, big...))
	}
	return stTensor(data, dt, shape...)
}

// stRead returns a tensor's elements as float64s.
func stRead(t *interp.Tensor) []float64 {
	var out []float64
	switch t.DType() {
	case backend.Bool:
		for _, v := range t.Bools() {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	case backend.Int64:
		for _, v := range t.Int64s() {
			out = append(out, float64(v))
		}
	case backend.Float32:
		for _, v := range t.Float32s() {
			out = append(out, float64(v))
		}
	default:
		out = t.Float64s()
	}
	if out == nil {
		out = []float64{}
	}
	return out
}

// stCheck compares a result with its reference exactly.
func stCheck(t *testing.T, got *interp.Tensor, want []float64, wantShape []int) {
	t.Helper()
	if !slices.Equal(got.Shape(), wantShape) && !(len(got.Shape()) == 0 && len(wantShape) == 0) {
		t.Fatalf("shape %v, want %v", got.Shape(), wantShape)
	}
	g := stRead(got)
	if !slices.Equal(g, want) {
		t.Fatalf("got  %v\nwant %v", g, want)
	}
}

// stSeq returns n small integers, some of them zero (so bool data mixes
// true and false).
func stSeq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64((i*7)%11 - 3)
	}
	return s
}

// stForEach runs f as a subtest for each dtype and layout.
func stForEach(t *testing.T, dts []backend.DType, f func(t *testing.T, dt backend.DType, l stLayout)) {
	for _, dt := range dts {
		for _, l := range stLayouts {
			t.Run(fmt.Sprintf("%v/%v", dt, l), func(t *testing.T) { f(t, dt, l) })
		}
	}
}

func stRefPad(x []float64, shape []int, p prims.PadParams, v float64) ([]float64, []int) {
	os := make([]int, len(shape))
	for k, d := range shape {
		os[k] = p.Low[k] + p.High[k] + d
		if d > 0 {
			os[k] += (d - 1) * p.Interior[k]
		}
	}
	out := make([]float64, backend.ShapeSize(os))
	for i := range out {
		idx := stUnravel(i, os)
		out[i] = v
		in := make([]int, len(shape))
		ok := true
		for k := range idx {
			t := idx[k] - p.Low[k]
			step := p.Interior[k] + 1
			if t < 0 || t%step != 0 || t/step >= shape[k] {
				ok = false
				break
			}
			in[k] = t / step
		}
		if ok {
			out[i] = x[stRavel(in, shape)]
		}
	}
	return out, os
}

func TestPad(t *testing.T) {
	cases := []struct {
		shape               []int
		low, high, interior []int
		value               float64
	}{
		{[]int{}, []int{}, []int{}, []int{}, 9},
		{[]int{3}, []int{1}, []int{2}, []int{0}, 9},
		{[]int{3}, []int{0}, []int{0}, []int{2}, 9},
		{[]int{3}, []int{-5}, []int{3}, []int{1}, 9},
		{[]int{4}, []int{-2}, []int{-2}, []int{0}, 9},
		{[]int{2, 3}, []int{-1, 1}, []int{0, -2}, []int{1, 0}, 9},
		{[]int{3, 4}, []int{-1, 0}, []int{0, -1}, []int{0, 0}, 0},
		{[]int{3, 4}, []int{0, 0}, []int{0, 0}, []int{0, 0}, 9},
		{[]int{0, 3}, []int{1, 0}, []int{0, 1}, []int{2, 1}, 9},
		{[]int{2, 0, 2}, []int{0, 1, 0}, []int{1, 0, -1}, []int{0, 3, 2}, 9},
		{[]int{2, 3, 4}, []int{1, -1, 2}, []int{-1, 2, -3}, []int{2, 1, 0}, 9},
		{[]int{1, 5}, []int{0, -3}, []int{0, 2}, []int{5, 1}, 0},
	}
	for _, c := range cases {
		p := prims.PadParams{Low: c.low, High: c.high, Interior: c.interior}
		t.Run(p.String(), func(t *testing.T) {
			stForEach(t, stAllDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				x := stCast(stSeq(backend.ShapeSize(c.shape)), dt)
				v := stCast([]float64{c.value}, dt)[0]
				want, ws := stRefPad(x, c.shape, p, v)
				got := interp.Bind1(prims.Pad, p, stLaidOut(x, dt, l, c.shape...), stTensor([]float64{v}, dt))
				stCheck(t, got, want, ws)
			})
		})
	}
}

func TestConcatenate(t *testing.T) {
	cases := []struct {
		axis   int
		shapes [][]int
	}{
		{0, [][]int{{3}}},
		{0, [][]int{{3}, {2}, {0}, {4}}},
		{1, [][]int{{2, 3}, {2, 1}, {2, 0}}},
		{0, [][]int{{2, 3}, {1, 3}}},
		{1, [][]int{{2, 2, 3}, {2, 4, 3}}},
		{2, [][]int{{2, 2, 3}, {2, 2, 1}, {2, 2, 2}}},
		{1, [][]int{{0, 2}, {0, 3}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.axis, c.shapes), func(t *testing.T) {
			stForEach(t, stAllDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				var args []*interp.Tensor
				var datas [][]float64
				ws := slices.Clone(c.shapes[0])
				ws[c.axis] = 0
				for i, s := range c.shapes {
					d := stSeq(backend.ShapeSize(s))
					for j := range d {
						d[j] += float64(100 * i)
					}
					d = stCast(d, dt)
					datas = append(datas, d)
					args = append(args, stLaidOut(d, dt, l, s...))
					ws[c.axis] += s[c.axis]
				}
				want := make([]float64, backend.ShapeSize(ws))
				for i := range want {
					idx := stUnravel(i, ws)
					for j, s := range c.shapes {
						if idx[c.axis] < s[c.axis] {
							want[i] = datas[j][stRavel(idx, s)]
							break
						}
						idx[c.axis] -= s[c.axis]
					}
				}
				got := interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: c.axis}, args...)
				stCheck(t, got, want, ws)
			})
		})
	}
}

func TestRev(t *testing.T) {
	cases := []struct {
		shape, axes []int
	}{
		{[]int{}, []int{}},
		{[]int{5}, []int{0}},
		{[]int{5}, []int{}},
		{[]int{3, 4}, []int{1}},
		{[]int{3, 4}, []int{0}},
		{[]int{3, 4}, []int{1, 0}},
		{[]int{2, 3, 4}, []int{0, 2}},
		{[]int{2, 0, 4}, []int{1, 2}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.shape, c.axes), func(t *testing.T) {
			stForEach(t, stAllDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				x := stCast(stSeq(backend.ShapeSize(c.shape)), dt)
				want := make([]float64, len(x))
				for i := range want {
					idx := stUnravel(i, c.shape)
					for _, a := range c.axes {
						idx[a] = c.shape[a] - 1 - idx[a]
					}
					want[i] = x[stRavel(idx, c.shape)]
				}
				got := interp.Bind1(prims.Rev, prims.RevParams{Axes: c.axes}, stLaidOut(x, dt, l, c.shape...))
				stCheck(t, got, want, c.shape)
			})
		})
	}
}

// stGatherCase is shared by the gather and scatter tests: x of shape, the
// indices idx of idxShape along axis.
type stGatherCase struct {
	shape    []int
	axis     int
	idx      []int64
	idxShape []int
}

var stGatherCases = []stGatherCase{
	{[]int{5}, 0, []int64{0, 4, 2}, []int{3}},
	{[]int{5}, 0, []int64{3}, []int{}},
	{[]int{5}, 0, []int64{-1, 5, 9, -20, 2}, []int{5}},
	{[]int{5}, 0, []int64{}, []int{0}},
	{[]int{3, 4}, 1, []int64{2, 2, -1, 7}, []int{2, 2}},
	{[]int{3, 4}, 0, []int64{1, 1, 0, 1, 2, 2}, []int{3, 2}},
	{[]int{2, 5, 3}, 1, []int64{4, 0, 4, 3}, []int{4}},
	{[]int{2, 5, 3}, 2, []int64{2, 0}, []int{1, 2}},
	{[]int{0, 5, 3}, 1, []int64{1, 2}, []int{2}},
	{[]int{2, 5, 0}, 1, []int64{1, 2}, []int{2}},
}

func (c stGatherCase) geom() (P, n, S, J int) {
	return backend.ShapeSize(c.shape[:c.axis]), c.shape[c.axis], backend.ShapeSize(c.shape[c.axis+1:]), len(c.idx)
}

func (c stGatherCase) String() string {
	return fmt.Sprintf("x%v/axis%d/idx%v%v", c.shape, c.axis, c.idxShape, c.idx)
}

func stRefGather(x []float64, c stGatherCase) []float64 {
	P, n, S, J := c.geom()
	out := make([]float64, P*J*S)
	for p := range P {
		for j, v := range c.idx {
			i := min(max(int(v), 0), n-1)
			for s := range S {
				out[(p*J+j)*S+s] = x[(p*n+i)*S+s]
			}
		}
	}
	return out
}

func stRefScatter(x, u []float64, c stGatherCase, add bool) []float64 {
	P, n, S, J := c.geom()
	out := slices.Clone(x)
	for p := range P {
		for j, v := range c.idx {
			if v < 0 || int(v) >= n {
				continue
			}
			for s := range S {
				if add {
					out[(p*n+int(v))*S+s] += u[(p*J+j)*S+s]
				} else {
					out[(p*n+int(v))*S+s] = u[(p*J+j)*S+s]
				}
			}
		}
	}
	return out
}

func TestGather(t *testing.T) {
	for _, c := range stGatherCases {
		t.Run(c.String(), func(t *testing.T) {
			stForEach(t, stAllDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				x := stCast(stSeq(backend.ShapeSize(c.shape)), dt)
				got := interp.Bind1(prims.Gather, prims.AxisParams{Axis: c.axis},
					stLaidOut(x, dt, l, c.shape...), stIndices(c.idx, c.idxShape...))
				stCheck(t, got, stRefGather(x, c), prims.GatherShape(c.shape, c.idxShape, c.axis))
			})
		})
	}
}

// TestGatherEmptyAxis: no index can be clamped into an empty axis; the
// kernel leaves the result zero rather than reading out of range.
func TestGatherEmptyAxis(t *testing.T) {
	got := interp.Bind1(prims.Gather, prims.AxisParams{Axis: 1},
		stTensor(nil, backend.Float64, 2, 0), stIndices([]int64{0, 3}, 2))
	stCheck(t, got, []float64{0, 0, 0, 0}, []int{2, 2})
}

func TestScatter(t *testing.T) {
	for _, prim := range []*interp.Prim{prims.ScatterAdd, prims.Scatter} {
		add := prim == prims.ScatterAdd
		dts := stAllDTypes
		if add {
			dts = stNumericDTypes
		}
		for _, c := range stGatherCases {
			t.Run(prim.Name+"/"+c.String(), func(t *testing.T) {
				stForEach(t, dts, func(t *testing.T, dt backend.DType, l stLayout) {
					us := prims.GatherShape(c.shape, c.idxShape, c.axis)
					x := stCast(stSeq(backend.ShapeSize(c.shape)), dt)
					u := stSeq(backend.ShapeSize(us))
					for i := range u {
						u[i] = float64(i%5) * 10
					}
					u = stCast(u, dt)
					got := interp.Bind1(prim, prims.AxisParams{Axis: c.axis},
						stLaidOut(x, dt, l, c.shape...), stIndices(c.idx, c.idxShape...), stLaidOut(u, dt, l, us...))
					stCheck(t, got, stRefScatter(x, u, c, add), c.shape)
				})
			})
		}
	}
}

// TestScatterLarge covers the parallel splits of scatter: along the rows
// before the axis, and along the slice after it.
func TestScatterLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][]int{{1, 10, 5000}, {8, 10, 3000}, {40000, 3, 1}} {
		c := stGatherCase{shape: shape, axis: 1}
		for range 20 {
			c.idx = append(c.idx, int64(rng.IntN(shape[1]+2)-1))
		}
		c.idxShape = []int{len(c.idx)}
		us := prims.GatherShape(c.shape, c.idxShape, c.axis)
		x := make([]float64, backend.ShapeSize(shape))
		for i := range x {
			x[i] = float64(rng.IntN(100))
		}
		u := make([]float64, backend.ShapeSize(us))
		for i := range u {
			u[i] = float64(rng.IntN(100))
		}
		for _, prim := range []*interp.Prim{prims.ScatterAdd, prims.Scatter} {
			t.Run(fmt.Sprint(prim.Name, shape), func(t *testing.T) {
				got := interp.Bind1(prim, prims.AxisParams{Axis: c.axis},
					stTensor(x, backend.Float64, shape...), stIndices(c.idx, c.idxShape...), stTensor(u, backend.Float64, us...))
				stCheck(t, got, stRefScatter(x, u, c, prim == prims.ScatterAdd), shape)
			})
		}
		t.Run(fmt.Sprint("gather", shape), func(t *testing.T) {
			got := interp.Bind1(prims.Gather, prims.AxisParams{Axis: c.axis},
				stTensor(x, backend.Float64, shape...), stIndices(c.idx, c.idxShape...))
			stCheck(t, got, stRefGather(x, c), us)
		})
	}
}

func stStarts(starts []int64) []*interp.Tensor {
	var ts []*interp.Tensor
	for _, s := range starts {
		ts = append(ts, stIndices([]int64{s}))
	}
	return ts
}

// stClamp clamps starts as dynamic_slice does.
func stClamp(starts []int64, shape, sizes []int) []int {
	out := make([]int, len(starts))
	for k, s := range starts {
		out[k] = min(max(int(s), 0), shape[k]-sizes[k])
	}
	return out
}

var stDynCases = []struct {
	shape, sizes []int
	starts       []int64
}{
	{[]int{}, []int{}, []int64{}},
	{[]int{5}, []int{2}, []int64{1}},
	{[]int{5}, []int{5}, []int64{3}},
	{[]int{5, 6}, []int{2, 3}, []int64{1, 2}},
	{[]int{5, 6}, []int{2, 3}, []int64{-3, 10}},
	{[]int{5, 6}, []int{2, 3}, []int64{4, 4}},
	{[]int{5, 6}, []int{0, 3}, []int64{2, 1}},
	{[]int{2, 3, 4}, []int{1, 3, 2}, []int64{1, -1, 1}},
	{[]int{2, 0, 4}, []int{1, 0, 2}, []int64{1, 0, 9}},
}

func TestDynamicSlice(t *testing.T) {
	for _, c := range stDynCases {
		t.Run(fmt.Sprint(c.shape, c.sizes, c.starts), func(t *testing.T) {
			stForEach(t, stAllDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				x := stCast(stSeq(backend.ShapeSize(c.shape)), dt)
				st := stClamp(c.starts, c.shape, c.sizes)
				want := make([]float64, backend.ShapeSize(c.sizes))
				for i := range want {
					idx := stUnravel(i, c.sizes)
					for k := range idx {
						idx[k] += st[k]
					}
					want[i] = x[stRavel(idx, c.shape)]
				}
				args := append([]*interp.Tensor{stLaidOut(x, dt, l, c.shape...)}, stStarts(c.starts)...)
				got := interp.Bind1(prims.DynamicSlice, prims.DynamicSliceParams{Sizes: c.sizes}, args...)
				stCheck(t, got, want, c.sizes)
			})
		})
	}
}

func TestDynamicUpdateSlice(t *testing.T) {
	for _, c := range stDynCases {
		t.Run(fmt.Sprint(c.shape, c.sizes, c.starts), func(t *testing.T) {
			stForEach(t, stAllDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				x := stCast(stSeq(backend.ShapeSize(c.shape)), dt)
				u := make([]float64, backend.ShapeSize(c.sizes))
				for i := range u {
					u[i] = float64(50 + i%2)
				}
				u = stCast(u, dt)
				st := stClamp(c.starts, c.shape, c.sizes)
				want := slices.Clone(x)
				for i := range u {
					idx := stUnravel(i, c.sizes)
					for k := range idx {
						idx[k] += st[k]
					}
					want[stRavel(idx, c.shape)] = u[i]
				}
				args := append([]*interp.Tensor{stLaidOut(x, dt, l, c.shape...), stLaidOut(u, dt, l, c.sizes...)}, stStarts(c.starts)...)
				got := interp.Bind1(prims.DynamicUpdateSlice, nil, args...)
				stCheck(t, got, want, c.shape)
			})
		})
	}
}
