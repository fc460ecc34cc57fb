package batching_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/peel-ml/peel/backend"
	_ "github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Every rule is checked against the loop oracle: for each lane, the
// primitive applied (at eval level) to the lane's slices of the batched
// operands, the results stacked. Each case runs for every choice of batch
// dimension per operand (not batched, first, last and a middle one; at
// least one operand batched) and for batch sizes 1 and 3. Shape and index
// primitives and integer or bool results must match exactly; float
// results within 1e-12 relative (scaled by max(1, |want|)), since a
// reduction or contraction over a differently laid out operand may sum in
// another order. The fallback is disabled, so a missing or looping rule
// fails.

func TestMain(m *testing.M) {
	batching.SetFallback(batching.FallbackError)
	os.Exit(m.Run())
}

type T = interp.Tensor

const (
	f64 = backend.Float64
	i64 = backend.Int64
	bln = backend.Bool
)

// operand describes a logical operand: its shape and dtype and the range
// its random values are drawn from (floats uniform in [lo, hi], integers
// in lo…hi).
type operand struct {
	shape  []int
	dt     backend.DType
	lo, hi float64
}

func op(dt backend.DType, shape ...int) operand {
	o := operand{shape: shape, dt: dt, lo: -2, hi: 2}
	if dt == i64 {
		o.lo, o.hi = -5, 5
	}
	if shape == nil {
		o.shape = []int{}
	}
	return o
}

func (o operand) in(lo, hi float64) operand { o.lo, o.hi = lo, hi; return o }

// idx is an i64 index operand with values in lo…hi.
func idx(lo, hi int, shape ...int) operand { return op(i64, shape...).in(float64(lo), float64(hi)) }

type ruleCase struct {
	prim   *interp.Prim
	params any
	ops    []operand
}

func (c ruleCase) String() string {
	s := c.prim.Name
	if p := interp.FormatParams(c.params); p != "" {
		s += "{" + p + "}"
	}
	for _, o := range c.ops {
		s += fmt.Sprintf(" %v%v", o.dt, o.shape)
	}
	return s
}

func (c ruleCase) float() bool {
	for _, o := range c.ops {
		if o.dt == f64 {
			return true
		}
	}
	return false
}

// valueRange returns the range of random values for an elementwise
// primitive's operands of dtype dt: positive where the primitive needs it.
func valueRange(name string, dt backend.DType) (float64, float64) {
	switch {
	case name == "threefry2x32":
		return 0, math.MaxUint32
	case dt == i64 && name == "pow":
		return -2, 3
	case dt == i64:
		return -5, 5
	}
	switch name {
	case "log", "sqrt", "rsqrt", "pow":
		return 0.1, 3
	case "log1p":
		return -0.5, 3
	}
	return -2, 2
}

var allDTypes = []backend.DType{f64, i64, bln}

func elementwiseCases() []ruleCase {
	var cs []ruleCase
	shapes := [][]int{{2, 3}, {}, {3, 0}}
	add := func(p *interp.Prim, params any, ops ...operand) {
		cs = append(cs, ruleCase{prim: p, params: params, ops: ops})
	}
	for _, p := range interp.Prims() {
		if p.Elementwise == nil || p.Kind != interp.Pure {
			continue
		}
		for _, dt := range allDTypes {
			if !p.Elementwise.Accepts(dt) {
				continue
			}
			lo, hi := valueRange(p.Name, dt)
			for _, s := range shapes {
				ops := make([]operand, p.Elementwise.Arity)
				for i := range ops {
					ops[i] = op(dt, s...).in(lo, hi)
				}
				add(p, nil, ops...)
			}
		}
	}
	for _, s := range shapes {
		for _, dt := range allDTypes {
			add(prims.Where, nil, op(bln, s...), op(dt, s...), op(dt, s...))
			for _, to := range allDTypes {
				add(prims.ConvertElementType, prims.ConvertParams{DType: to}, op(dt, s...))
			}
		}
		w := op(i64, s...).in(0, math.MaxUint32)
		add(prims.Threefry2x32, nil, w, w, w, w)
	}
	return cs
}

func shapeCases() []ruleCase {
	var cs []ruleCase
	add := func(p *interp.Prim, params any, ops ...operand) {
		cs = append(cs, ruleCase{prim: p, params: params, ops: ops})
	}
	red := func(axes ...int) prims.ReduceParams {
		if axes == nil {
			axes = []int{}
		}
		return prims.ReduceParams{Axes: axes}
	}
	for _, p := range []*interp.Prim{prims.ReduceSum, prims.ReduceMax, prims.ReduceMin, prims.ReduceProd} {
		dts := []backend.DType{f64, i64}
		if p == prims.ReduceMax || p == prims.ReduceMin {
			dts = allDTypes
		}
		for _, dt := range dts {
			for _, axes := range [][]int{nil, {0}, {1}, {2}, {0, 2}, {0, 1, 2}} {
				add(p, red(axes...), op(dt, 2, 3, 4))
			}
			add(p, red(), op(dt))
			add(p, red(1), op(dt, 0, 2))
			if p == prims.ReduceSum || p == prims.ReduceProd {
				add(p, red(1), op(dt, 2, 0))
			}
		}
	}
	for _, p := range []*interp.Prim{prims.ArgMax, prims.ArgMin} {
		for _, dt := range allDTypes {
			for axis := range 3 {
				add(p, prims.AxisParams{Axis: axis}, op(dt, 2, 3, 4).in(-2, 2))
			}
			add(p, prims.AxisParams{Axis: 0}, op(dt, 3))
			add(p, prims.AxisParams{Axis: 1}, op(dt, 0, 3))
		}
	}
	for _, dt := range []backend.DType{f64, i64} {
		for axis := range 3 {
			for _, rev := range []bool{false, true} {
				add(prims.Cumsum, prims.CumsumParams{Axis: axis, Reverse: rev}, op(dt, 2, 3, 4))
			}
		}
		add(prims.Cumsum, prims.CumsumParams{Axis: 0}, op(dt, 0, 2))
	}
	bc := func(shape []int, dims []int, x operand) {
		add(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, x)
	}
	for _, dt := range allDTypes {
		bc([]int{2, 3, 4}, []int{1, 2}, op(dt, 3, 1))
		bc([]int{2, 3, 4}, []int{0, 2}, op(dt, 2, 4))
		bc([]int{2, 3}, []int{}, op(dt))
		bc([]int{3, 2}, []int{0}, op(dt, 3))
		bc([]int{1, 3, 2}, []int{0, 1, 2}, op(dt, 1, 1, 2))
		bc([]int{2, 0}, []int{1}, op(dt, 1))
	}
	rs := func(x operand, shape ...int) {
		add(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
	}
	for _, dt := range allDTypes {
		rs(op(dt, 2, 3, 4), 6, 4)
		rs(op(dt, 2, 3, 4), 4, 3, 2)
		rs(op(dt, 2, 3, 4), 24)
		rs(op(dt), 1, 1)
		rs(op(dt, 1, 1))
		rs(op(dt, 0, 3), 3, 0)
	}
	tr := func(x operand, perm ...int) {
		add(prims.Transpose, prims.TransposeParams{Perm: perm}, x)
	}
	for _, dt := range allDTypes {
		tr(op(dt, 2, 3, 4), 2, 0, 1)
		tr(op(dt, 2, 3, 4), 1, 0, 2)
		tr(op(dt, 2, 3, 4), 0, 1, 2)
		tr(op(dt, 2, 3), 1, 0)
		tr(op(dt, 0, 3), 1, 0)
		tr(op(dt))
	}
	for _, dt := range allDTypes {
		add(prims.Slice, prims.SliceParams{Start: []int{1, 0}, Limit: []int{4, 6}, Stride: []int{2, 3}}, op(dt, 5, 6))
		add(prims.Slice, prims.SliceParams{Start: []int{1}, Limit: []int{1}, Stride: []int{1}}, op(dt, 4))
		add(prims.Slice, prims.SliceParams{Start: []int{0, 1, 0}, Limit: []int{2, 3, 0}, Stride: []int{1, 1, 2}}, op(dt, 2, 3, 0))
		add(prims.Slice, prims.SliceParams{Start: []int{}, Limit: []int{}, Stride: []int{}}, op(dt))
	}
	for _, dt := range allDTypes {
		add(prims.Rev, prims.RevParams{Axes: []int{0, 2}}, op(dt, 2, 3, 4))
		add(prims.Rev, prims.RevParams{Axes: []int{1}}, op(dt, 2, 3, 4))
		add(prims.Rev, prims.RevParams{Axes: []int{}}, op(dt, 2, 3))
		add(prims.OptimizationBarrier, nil, op(dt, 2, 3))
		add(prims.Rev, prims.RevParams{Axes: []int{0}}, op(dt, 0, 3))
	}
	pad := func(x operand, low, high, interior []int) {
		add(prims.Pad, prims.PadParams{Low: low, High: high, Interior: interior}, x, op(x.dt))
	}
	for _, dt := range allDTypes {
		pad(op(dt, 2, 3), []int{1, -1}, []int{0, 2}, []int{1, 0})
		pad(op(dt, 3, 2), []int{0, 1}, []int{-2, 0}, []int{2, 1})
		pad(op(dt, 0, 2), []int{1, 0}, []int{1, 1}, []int{2, 0})
		pad(op(dt), []int{}, []int{}, []int{})
	}
	for _, dt := range allDTypes {
		add(prims.Concatenate, prims.AxisParams{Axis: 1}, op(dt, 2, 1), op(dt, 2, 3), op(dt, 2, 0))
		add(prims.Concatenate, prims.AxisParams{Axis: 0}, op(dt, 1, 2), op(dt, 2, 2))
		add(prims.Concatenate, prims.AxisParams{Axis: 0}, op(dt, 3))
	}
	return cs
}

func indexCases() []ruleCase {
	var cs []ruleCase
	add := func(p *interp.Prim, params any, ops ...operand) {
		cs = append(cs, ruleCase{prim: p, params: params, ops: ops})
	}
	ax := func(a int) prims.AxisParams { return prims.AxisParams{Axis: a} }
	for _, dt := range allDTypes {
		// Indices reach below 0 and past the end: gather clamps them,
		// scatter drops them.
		add(prims.Gather, ax(0), op(dt, 4, 3), idx(-2, 6, 5))
		add(prims.Gather, ax(1), op(dt, 4, 3), idx(-1, 4, 2, 2))
		add(prims.Gather, ax(1), op(dt, 2, 3, 4), idx(-1, 3))
		add(prims.Gather, ax(2), op(dt, 2, 3, 4), idx(0, 3, 3))
		add(prims.Gather, ax(0), op(dt, 3), idx(-1, 3, 0))
		add(prims.Gather, ax(1), op(dt, 2, 0), idx(-1, 3, 3))
		add(prims.Gather, ax(0), op(dt, 0, 2), idx(0, 1, 2))
	}
	for _, p := range []*interp.Prim{prims.ScatterAdd, prims.Scatter, prims.ScatterMul, prims.ScatterMax, prims.ScatterMin} {
		dts := []backend.DType{f64, i64}
		if p == prims.Scatter {
			dts = allDTypes
		}
		for _, dt := range dts {
			add(p, ax(0), op(dt, 4, 3), idx(-2, 6, 5), op(dt, 5, 3))
			add(p, ax(1), op(dt, 4, 3), idx(-1, 4, 2, 2), op(dt, 4, 2, 2))
			add(p, ax(2), op(dt, 2, 3, 4), idx(-1, 4, 3), op(dt, 2, 3, 3))
			add(p, ax(1), op(dt, 2, 3, 4), idx(-1, 3), op(dt, 2, 4))
			add(p, ax(0), op(dt, 3), idx(0, 2, 0), op(dt, 0))
			add(p, ax(1), op(dt, 2, 0), idx(-1, 1, 3), op(dt, 2, 3))
		}
	}
	st := idx(-2, 6)
	for _, dt := range allDTypes {
		ds := func(x operand, sizes ...int) {
			ops := []operand{x}
			for range sizes {
				ops = append(ops, st)
			}
			if sizes == nil {
				sizes = []int{}
			}
			add(prims.DynamicSlice, prims.DynamicSliceParams{Sizes: sizes}, ops...)
		}
		ds(op(dt, 5, 4), 2, 3)
		ds(op(dt, 5, 4), 5, 1)
		ds(op(dt, 3), 0)
		ds(op(dt, 4, 0, 3), 2, 0, 1)
		dus := func(x, u operand) {
			ops := []operand{x, u}
			for range x.shape {
				ops = append(ops, st)
			}
			add(prims.DynamicUpdateSlice, nil, ops...)
		}
		dus(op(dt, 5, 4), op(dt, 2, 3))
		dus(op(dt, 5, 4), op(dt, 5, 1))
		dus(op(dt, 3), op(dt, 3))
		dus(op(dt, 3), op(dt, 0))
		dus(op(dt, 4, 2, 3), op(dt, 2, 0, 1))
		dus(op(dt, 4, 2, 3), op(dt, 3, 2, 2))
	}
	// Rank 0: no starts, only the operand (and update) can be batched.
	add(prims.DynamicSlice, prims.DynamicSliceParams{Sizes: []int{}}, op(f64))
	add(prims.DynamicUpdateSlice, nil, op(f64), op(f64))
	return cs
}

func dotCases() []ruleCase {
	var cs []ruleCase
	dot := func(lc, rc, lb, rb []int, l, r []int) {
		for _, dt := range []backend.DType{f64, i64} {
			cs = append(cs, ruleCase{prim: prims.DotGeneral,
				params: prims.DotParams{LhsContract: lc, RhsContract: rc, LhsBatch: lb, RhsBatch: rb},
				ops:    []operand{op(dt, l...), op(dt, r...)}})
		}
	}
	e := []int{}
	dot([]int{1}, []int{0}, e, e, []int{2, 3}, []int{3, 4})
	dot([]int{0}, []int{1}, e, e, []int{3, 2}, []int{4, 3})
	dot([]int{2}, []int{1}, []int{0}, []int{0}, []int{2, 3, 4}, []int{2, 4, 5})
	dot([]int{2}, []int{0}, []int{1}, []int{2}, []int{3, 2, 4}, []int{4, 5, 2})
	dot(e, e, e, e, []int{2}, []int{3})
	dot([]int{0}, []int{0}, e, e, []int{3}, []int{3})
	dot([]int{2, 1}, []int{0, 1}, e, e, []int{2, 3, 4}, []int{4, 3, 5})
	dot([]int{2}, []int{2}, []int{1, 0}, []int{0, 1}, []int{2, 3, 4}, []int{3, 2, 4})
	dot([]int{1}, []int{0}, e, e, []int{2, 0}, []int{0, 3})
	dot(e, e, e, e, []int{}, []int{2})
	return cs
}

func convCases() []ruleCase {
	var cs []ruleCase
	conv := func(p prims.ConvParams, x, w []int) {
		cs = append(cs, ruleCase{prim: prims.ConvGeneralDilated, params: p, ops: []operand{op(f64, x...), op(f64, w...)}})
	}
	conv(prims.ConvParams{}, []int{2, 3, 5}, []int{2, 3, 2})
	conv(prims.ConvParams{Strides: []int{2, 1}, PadLo: []int{1, 0}, PadHi: []int{0, 1}, RhsDilation: []int{1, 2}}, []int{1, 2, 5, 4}, []int{3, 2, 2, 2})
	conv(prims.ConvParams{FeatureGroupCount: 2, LhsDilation: []int{2}, PadLo: []int{1}, PadHi: []int{1}}, []int{2, 4, 3}, []int{4, 2, 2})
	conv(prims.ConvParams{FeatureGroupCount: 3}, []int{1, 3, 4}, []int{3, 1, 2})
	conv(prims.ConvParams{}, []int{2, 3}, []int{4, 3})
	conv(prims.ConvParams{BatchGroupCount: 2, PadLo: []int{1}, PadHi: []int{0}}, []int{4, 3, 5}, []int{4, 3, 2})
	for _, p := range []*interp.Prim{prims.ReduceWindowSum, prims.ReduceWindowMax} {
		for _, dt := range []backend.DType{f64, i64} {
			cs = append(cs,
				ruleCase{prim: p, params: prims.WindowParams{Window: []int{2, 2}, Strides: []int{2, 1}, PadLo: []int{1, 0}, PadHi: []int{0, 1}}, ops: []operand{op(dt, 3, 4)}},
				ruleCase{prim: p, params: prims.WindowParams{Window: []int{3}}, ops: []operand{op(dt, 5)}},
			)
		}
	}
	return cs
}

func allCases() []ruleCase {
	var cs []ruleCase
	cs = append(cs, elementwiseCases()...)
	cs = append(cs, shapeCases()...)
	cs = append(cs, indexCases()...)
	cs = append(cs, convCases()...)
	cs = append(cs, specialCases()...)
	cs = append(cs, linalgCases()...)
	cs = append(cs, sortCases()...)
	return append(cs, dotCases()...)
}

// bdimChoices returns the batch dimensions tried for an operand of
// logical rank r: not batched, first, last and a middle one.
func bdimChoices(r int) []int {
	ch := []int{batching.NotMapped, 0}
	if r > 0 {
		ch = append(ch, r)
	}
	if m := (r + 1) / 2; m > 0 && m < r {
		ch = append(ch, m)
	}
	return ch
}

// combos returns every choice of one entry of each of choices, except
// the one with every entry NotMapped.
func combos(choices [][]int) [][]int {
	out := [][]int{{}}
	for _, ch := range choices {
		var next [][]int
		for _, c := range out {
			for _, d := range ch {
				next = append(next, append(append([]int{}, c...), d))
			}
		}
		out = next
	}
	var res [][]int
	for _, c := range out {
		for _, d := range c {
			if d != batching.NotMapped {
				res = append(res, c)
				break
			}
		}
	}
	return res
}

func insert(s []int, at, v int) []int {
	out := append([]int{}, s[:at]...)
	out = append(out, v)
	return append(out, s[at:]...)
}

// random returns a concrete tensor of the given shape with o's dtype and
// value range.
func random(r *rand.Rand, o operand, shape []int) *T {
	n := backend.ShapeSize(shape)
	var data any
	switch o.dt {
	case f64:
		v := make([]float64, n)
		for i := range v {
			v[i] = o.lo + (o.hi-o.lo)*r.Float64()
		}
		data = v
	case i64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(o.lo) + r.Int64N(int64(o.hi-o.lo)+1)
		}
		data = v
	case bln:
		v := make([]bool, n)
		for i := range v {
			v[i] = r.IntN(2) == 1
		}
		data = v
	}
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: append([]int{}, shape...)})
}

// host returns t's elements as float64s (bools as 0/1) and its dtype.
func host(t *T) []float64 {
	switch t.DType() {
	case f64:
		return t.Float64s()
	case i64:
		v := t.Int64s()
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	case bln:
		v := t.Bools()
		out := make([]float64, len(v))
		for i, x := range v {
			if x {
				out[i] = 1
			}
		}
		return out
	}
	panic("unexpected dtype " + t.DType().String())
}

// result is a stacked oracle or a rule's result.
type result struct {
	shape []int
	dt    backend.DType
	data  []float64
}

func resultOf(t *T) result { return result{t.Shape(), t.DType(), host(t)} }

// stack stacks lane results (all of one shape) along a new first axis.
func stack(lanes []result, shape []int, dt backend.DType) result {
	out := result{shape: insert(shape, 0, len(lanes)), dt: dt}
	for _, l := range lanes {
		out.data = append(out.data, l.data...)
	}
	return out
}

func compare(t *testing.T, what string, got, want result, tol float64) {
	t.Helper()
	if !interp.ShapeEqual(got.shape, want.shape) || got.dt != want.dt {
		t.Fatalf("%s: got %v%v, want %v%v", what, got.dt, got.shape, want.dt, want.shape)
	}
	for i, w := range want.data {
		g := got.data[i]
		if g == w || (math.IsNaN(g) && math.IsNaN(w)) {
			continue
		}
		if tol > 0 && math.Abs(g-w) <= tol*math.Max(1, math.Abs(w)) {
			continue
		}
		t.Fatalf("%s: element %d = %v, want %v\ngot  %v\nwant %v", what, i, g, w, got.data, want.data)
	}
}

func (c ruleCase) tol() float64 {
	if c.float() {
		return 1e-12
	}
	return 0
}

// laneArgs returns the operands of lane i: the slices of the batched
// operands.
func laneArgs(phys []*T, dims []int, i int) []*T {
	in := make([]*T, len(phys))
	for k, p := range phys {
		in[k] = p
		if dims[k] != batching.NotMapped {
			in[k] = batching.Lane(p, dims[k], i)
		}
	}
	return in
}

// oracle applies c's primitive lane by lane and stacks the results.
func oracle(c ruleCase, size int, phys []*T, dims []int) []result {
	var lanes [][]result
	var first []*T
	for i := range size {
		ys := interp.Bind(c.prim, c.params, laneArgs(phys, dims, i)...)
		if first == nil {
			first = ys
		}
		row := make([]result, len(ys))
		for j, y := range ys {
			row[j] = resultOf(y)
		}
		lanes = append(lanes, row)
	}
	if first == nil {
		// A batch of size 0: the shapes come from lane 0 of a size-1
		// batch, which we do not have; callers do not use size 0.
		panic("oracle needs a batch of at least one lane")
	}
	out := make([]result, len(first))
	for j, y := range first {
		col := make([]result, size)
		for i := range col {
			col[i] = lanes[i][j]
		}
		out[j] = stack(col, y.Shape(), y.DType())
	}
	return out
}

// physical draws each operand of c with a batch of size inserted at its
// batch dimension.
func physical(r *rand.Rand, c ruleCase, size int, dims []int) []*T {
	phys := make([]*T, len(c.ops))
	for k, o := range c.ops {
		shape := o.shape
		if dims[k] != batching.NotMapped {
			shape = insert(shape, dims[k], size)
		}
		phys[k] = random(r, o, shape)
	}
	return phys
}

// batched applies c's primitive under a vmap of the given size and
// returns the results with the batch first.
func batched(c ruleCase, size int, phys []*T, dims []int) []result {
	in := batching.New(size)
	defer in.End()
	xs := make([]*T, len(phys))
	for k, p := range phys {
		xs[k] = in.Batched(p, dims[k])
	}
	ys := interp.Bind(c.prim, c.params, xs...)
	out := make([]result, len(ys))
	for j, y := range ys {
		out[j] = resultOf(in.Unbatched(y, 0))
	}
	return out
}

func TestRules(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range allCases() {
		choices := make([][]int, len(c.ops))
		for k, o := range c.ops {
			choices[k] = bdimChoices(len(o.shape))
		}
		t.Run(c.String(), func(t *testing.T) {
			for _, dims := range combos(choices) {
				for _, size := range []int{1, 3} {
					what := fmt.Sprintf("dims %v size %d", dims, size)
					phys := physical(r, c, size, dims)
					want := oracle(c, size, phys, dims)
					var got []result
					if err := interp.Catch(func() { got = batched(c, size, phys, dims) }); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if len(got) != len(want) {
						t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
					}
					for j := range want {
						compare(t, fmt.Sprintf("%s result %d", what, j), got[j], want[j], c.tol())
					}
				}
			}
		})
	}
}

// TestRulesNested runs every case under two vmaps (the outer of size 2,
// the inner of size 3), so each rule also runs on tracers of the outer
// level: the inner level batches the even operands at their last
// dimension, the outer one every choice of first, last or none.
func TestRulesNested(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const outer, inner = 2, 3
	for _, c := range allCases() {
		innerDims := make([]int, len(c.ops))
		choices := make([][]int, len(c.ops))
		for k, o := range c.ops {
			innerDims[k] = batching.NotMapped
			rank := len(o.shape)
			if k%2 == 0 {
				innerDims[k] = rank
				rank++
			}
			choices[k] = []int{batching.NotMapped, 0, rank}
		}
		t.Run(c.String(), func(t *testing.T) {
			for _, dims := range combos(choices) {
				what := fmt.Sprintf("outer dims %v inner dims %v", dims, innerDims)
				phys := make([]*T, len(c.ops))
				for k, o := range c.ops {
					shape := o.shape
					if innerDims[k] != batching.NotMapped {
						shape = insert(shape, innerDims[k], inner)
					}
					if dims[k] != batching.NotMapped {
						shape = insert(shape, dims[k], outer)
					}
					phys[k] = random(r, o, shape)
				}
				var lanes []result
				var first []*T
				for i := range outer {
					for j := range inner {
						in := laneArgs(laneArgs(phys, dims, i), innerDims, j)
						ys := interp.Bind(c.prim, c.params, in...)
						first = ys
						lanes = append(lanes, resultOf(ys[0]))
					}
				}
				want := stack(lanes, first[0].Shape(), first[0].DType())
				want.shape = insert(want.shape[1:], 0, inner)
				want.shape = insert(want.shape, 0, outer)
				var got result
				err := interp.Catch(func() {
					lo := batching.New(outer)
					defer lo.End()
					hi := batching.New(inner)
					defer hi.End()
					xs := make([]*T, len(phys))
					for k, p := range phys {
						xs[k] = hi.Batched(lo.Batched(p, dims[k]), innerDims[k])
					}
					y := interp.Bind(c.prim, c.params, xs...)[0]
					got = resultOf(lo.Unbatched(hi.Unbatched(y, 0), 0))
				})
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				compare(t, what, got, want, c.tol())
			}
		})
	}
}

// skipped reports whether p needs no batching rule: mutations (the
// interpreter handles them), composites (decomposed) and iota (no
// operands).
func skipped(p *interp.Prim) bool {
	return p.Kind == interp.Mutation || p.Impl != nil || p == prims.Iota
}

// collective reports whether p is a collective: its named rule is tested
// in package dist, under Vmap with an axis name (TestCollectivesUnderVmap,
// against the explicit computation over the batch), since it needs an
// axis bound.
func collective(p *interp.Prim) bool { return slices.Contains(prims.Collectives, p) }

func TestEveryPrimitiveHasRule(t *testing.T) {
	tested := map[*interp.Prim]bool{}
	for _, c := range allCases() {
		tested[c.prim] = true
	}
	for _, p := range interp.Prims() {
		if skipped(p) {
			continue
		}
		if collective(p) {
			if batching.NamedRuleFor(p) == nil {
				t.Errorf("%s has no named batching rule", p.Name)
			}
			continue
		}
		if batching.RuleFor(p) == nil {
			t.Errorf("%s has no batching rule", p.Name)
		}
		if !tested[p] && !slices.Contains(prims.Debugging, p) { // tested by their prints and calls, in package peel
			t.Errorf("%s has no test case", p.Name)
		}
	}
}

// TestRuleErrors: bad parameters or operands under vmap fail with the
// primitive's *interp.Error naming the logical shapes, whatever the batch
// dimension (the rules' own index bookkeeping never sees them).
func TestRuleErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	bad := []ruleCase{
		{prims.Gather, prims.AxisParams{Axis: 2}, []operand{op(f64, 2, 3), idx(0, 1, 2)}},
		{prims.ScatterAdd, prims.AxisParams{Axis: 0}, []operand{op(f64, 2, 3), idx(0, 1, 2), op(f64, 3, 3)}},
		{prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{}}, []operand{op(f64, 2, 3)}},
		{prims.Transpose, prims.TransposeParams{Perm: []int{0}}, []operand{op(f64, 2, 3)}},
		{prims.Slice, prims.SliceParams{Start: []int{0}, Limit: []int{1}, Stride: []int{1}}, []operand{op(f64, 2, 3)}},
		{prims.Pad, prims.PadParams{Low: []int{0}, High: []int{0}, Interior: []int{0}}, []operand{op(f64, 2, 3), op(f64)}},
		{prims.ReduceSum, prims.ReduceParams{Axes: []int{2}}, []operand{op(f64, 2, 3)}},
		{prims.DynamicSlice, prims.DynamicSliceParams{Sizes: []int{1, 1}}, []operand{op(f64, 2, 3), idx(0, 1), idx(0, 1), idx(0, 1)}},
		{prims.DynamicUpdateSlice, nil, []operand{op(f64, 2, 3), op(f64, 1), idx(0, 1), idx(0, 1)}},
		{prims.DotGeneral, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}}, []operand{op(f64, 2, 3), op(f64, 3, 2)}},
		{prims.Add, nil, []operand{op(f64, 2, 3), op(f64, 3, 2)}},
	}
	for _, c := range bad {
		t.Run(c.String(), func(t *testing.T) {
			for _, d := range []int{0, 1, 2} {
				dims := make([]int, len(c.ops))
				for k := range dims {
					dims[k] = batching.NotMapped
				}
				dims[0] = d
				phys := physical(r, c, 3, dims)
				err := interp.Catch(func() { batched(c, 3, phys, dims) })
				if err == nil {
					t.Fatalf("dims %v: no error", dims)
				}
				if e := err.(*interp.Error); e.Prim != c.prim.Name || e.Operands[0] != "f64[2,3]" || e.Transform != "vmap" {
					t.Fatalf("dims %v: error %v does not name %s, the logical operands and vmap", dims, err, c.prim.Name)
				}
			}
		})
	}
}

// TestViewRulesAlias: the rules of view primitives return views of the
// operand, so an in-place write through a batched view reaches the base
// in every lane (each element of the view gets +1 exactly once). The
// reshapes are ones the batch dimension can stay in place for.
func TestViewRulesAlias(t *testing.T) {
	x := op(f64, 2, 3, 4)
	views := []struct {
		ruleCase
		size int // elements of the view, per lane
	}{
		{ruleCase{prims.Slice, prims.SliceParams{Start: []int{1, 0, 1}, Limit: []int{2, 3, 4}, Stride: []int{1, 2, 2}}, []operand{x}}, 4},
		{ruleCase{prims.Transpose, prims.TransposeParams{Perm: []int{2, 0, 1}}, []operand{x}}, 24},
		{ruleCase{prims.Reshape, prims.ReshapeParams{Shape: []int{6, 4}}, []operand{x}}, 24},
		{ruleCase{prims.Reshape, prims.ReshapeParams{Shape: []int{2, 3, 2, 2}}, []operand{x}}, 24},
	}
	const size = 3
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range views {
		t.Run(c.String(), func(t *testing.T) {
			for _, d := range []int{0, 2, 3} {
				phys := physical(r, c.ruleCase, size, []int{d})
				before := phys[0].Float64s()
				err := interp.Catch(func() {
					in := batching.New(size)
					defer in.End()
					y := interp.Bind1(c.prim, c.params, in.Batched(phys[0], d))
					interp.Bind(prims.AddInPlace, nil, y, prims.Full(1, interp.AvalOf(y)))
				})
				if err != nil {
					t.Fatalf("bdim %d: %v", d, err)
				}
				changed := 0
				for i, v := range phys[0].Float64s() {
					switch v - before[i] {
					case 0:
					case 1:
						changed++
					default:
						t.Fatalf("bdim %d: element %d changed by %v", d, i, v-before[i])
					}
				}
				if changed != size*c.size {
					t.Fatalf("bdim %d: %d elements changed, want %d", d, changed, size*c.size)
				}
			}
		})
	}
}
