package peel_test

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// refReduce reduces data of the given row-major shape over axes (already
// non-negative) with f, which receives the values of one output element in
// row-major order. It returns the result and its shape.
func refReduce(data []float64, shape, axes []int, keep bool, f func([]float64) float64) ([]float64, []int) {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	var outShape, keptShape []int
	for k, d := range shape {
		if red[k] {
			keptShape = append(keptShape, 1)
			if keep {
				outShape = append(outShape, 1)
			}
			continue
		}
		keptShape = append(keptShape, d)
		outShape = append(outShape, d)
	}
	if outShape == nil {
		outShape = []int{}
	}
	n := 1
	for _, d := range keptShape {
		n *= d
	}
	groups := make([][]float64, n)
	idx := make([]int, len(shape))
	for _, v := range data {
		o := 0
		for k := range shape {
			i := idx[k]
			if red[k] {
				i = 0
			}
			o = o*keptShape[k] + i
		}
		groups[o] = append(groups[o], v)
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	out := make([]float64, n)
	for i, g := range groups {
		out[i] = f(g)
	}
	return out, outShape
}

func refSum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func refProd(v []float64) float64 {
	p := 1.0
	for _, x := range v {
		p *= x
	}
	return p
}

func refMax(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		if x > m || math.IsNaN(x) {
			m = x
		}
		if math.IsNaN(m) {
			break
		}
	}
	return m
}

func refMin(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		if x < m || math.IsNaN(x) {
			m = x
		}
		if math.IsNaN(m) {
			break
		}
	}
	return m
}

func refMean(v []float64) float64 { return refSum(v) / float64(len(v)) }

func refVar(v []float64) float64 {
	m := refMean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v))
}

func refLSE(v []float64) float64 {
	m := refMax(v)
	if math.IsInf(m, 0) {
		m = 0
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return math.Log(s) + m
}

// normalized returns axes made non-negative and sorted (none: all).
func normalized(axes []int, rank int) []int {
	if len(axes) == 0 {
		out := make([]int, rank)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += rank
		}
		out[i] = a
	}
	sort.Ints(out)
	return out
}

var reductions = []struct {
	name string
	f    func(*peel.Tensor, ...int) *peel.Tensor
	ref  func([]float64) float64
	// float: integer inputs give f64.
	float bool
}{
	{"Sum", peel.Sum, refSum, false},
	{"Prod", peel.Prod, refProd, false},
	{"Max", peel.Max, refMax, false},
	{"Min", peel.Min, refMin, false},
	{"Mean", peel.Mean, refMean, true},
	{"Var", peel.Var, refVar, true},
	{"Std", peel.Std, func(v []float64) float64 { return math.Sqrt(refVar(v)) }, true},
	{"LogSumExp", peel.LogSumExp, refLSE, true},
}

func TestReductions(t *testing.T) {
	shape := []int{2, 3, 4}
	data := make([]float64, 24)
	ints := make([]int64, 24)
	for i := range data {
		ints[i] = int64((i*7)%11 - 5)
		data[i] = float64(ints[i]) / 4
	}
	axesCases := [][]int{nil, {}, {0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {-1, -3}, {0, 1, 2}, {1, -1}}
	for _, r := range reductions {
		t.Run(r.name, func(t *testing.T) {
			x := peel.FromFloat64s(data, shape...)
			x32 := peel.AsType(x, peel.Float32)
			xi := peel.FromInt64s(ints, shape...)
			fi := make([]float64, len(ints))
			for i, v := range ints {
				fi[i] = float64(v)
			}
			for _, axes := range axesCases {
				for _, keep := range []bool{false, true} {
					ax := normalized(axes, 3)
					want, wshape := refReduce(data, shape, ax, keep, r.ref)
					name := r.name
					check(t, name+" f64", reduceWith(r.f, x, axes, keep), peel.Float64, wshape, want, 1e-13)
					check(t, name+" f32", reduceWith(r.f, x32, axes, keep), peel.Float32, wshape, want, 1e-5)
					iwant, _ := refReduce(fi, shape, ax, keep, r.ref)
					dt := peel.Int64
					if r.float {
						dt = peel.Float64
					}
					check(t, name+" i64", reduceWith(r.f, xi, axes, keep), dt, wshape, iwant, 1e-13)
				}
			}
			// Rank 0: every axis is no axis.
			check(t, "rank0", reduceWith(r.f, peel.Scalar(2.5), nil, false), peel.Float64, []int{}, []float64{r.ref([]float64{2.5})}, 1e-15)
			check(t, "rank0 keep", reduceWith(r.f, peel.Scalar(2.5), nil, true), peel.Float64, []int{}, []float64{r.ref([]float64{2.5})}, 1e-15)
			// Errors.
			op := "peel." + r.name
			wantError(t, op, func() { reduceWith(r.f, nil, nil, false) }, "nil")
			wantError(t, op, func() { reduceWith(r.f, x, []int{3}, false) }, "axis 3", "rank 3")
			wantError(t, op, func() { reduceWith(r.f, x, []int{-4}, false) }, "axis -4")
			wantError(t, op, func() { reduceWith(r.f, x, []int{1, -2}, false) }, "repeated")
			wantError(t, op, func() { reduceWith(r.f, peel.Scalar(1.0), []int{0}, false) }, "rank 0")
		})
	}
}

func TestReductionDTypes(t *testing.T) {
	b := peel.FromBools([]bool{true, false, true, true}, 2, 2)
	check(t, "Sum bool", peel.Sum(b), peel.Int64, []int{}, []float64{3}, 0)
	check(t, "Sum bool axis", peel.Sum(b, 1), peel.Int64, []int{2}, []float64{1, 2}, 0)
	check(t, "Prod bool", peel.Prod(b, 0), peel.Int64, []int{2}, []float64{1, 0}, 0)
	check(t, "Max bool", peel.Max(b, 1), peel.Bool, []int{2}, []float64{1, 1}, 0)
	check(t, "Min bool", peel.Keep(peel.Min, b, 1), peel.Bool, []int{2, 1}, []float64{0, 1}, 0)
	check(t, "Mean bool", peel.Mean(b), peel.Float64, []int{}, []float64{0.75}, 0)
	check(t, "Cumsum bool", peel.Cumsum(b, -1), peel.Int64, []int{2, 2}, []float64{1, 1, 1, 2}, 0)
}

func TestEmptyReductions(t *testing.T) {
	x := peel.Zeros(peel.Float64, 2, 0)
	check(t, "Sum", peel.Sum(x, 1), peel.Float64, []int{2}, []float64{0, 0}, 0)
	check(t, "Prod", peel.Keep(peel.Prod, x, -1), peel.Float64, []int{2, 1}, []float64{1, 1}, 0)
	check(t, "Sum all", peel.Sum(x), peel.Float64, []int{}, []float64{0}, 0)
	check(t, "Sum kept axis", peel.Sum(x, 0), peel.Float64, []int{0}, nil, 0)
	nan := math.NaN()
	check(t, "Mean", peel.Mean(x, 1), peel.Float64, []int{2}, []float64{nan, nan}, 0)
	check(t, "Var", peel.Var(x, 1), peel.Float64, []int{2}, []float64{nan, nan}, 0)
	check(t, "LogSumExp", peel.LogSumExp(x, 1), peel.Float64, []int{2}, []float64{math.Inf(-1), math.Inf(-1)}, 0)
	check(t, "LogSumExp keep", peel.Keep(peel.LogSumExp, x), peel.Float64, []int{1, 1}, []float64{math.Inf(-1)}, 0)
	check(t, "Max of non-empty axis", peel.Max(x, 0), peel.Float64, []int{0}, nil, 0)
	wantError(t, "peel.Max", func() { peel.Max(x) }, "empty")
	wantError(t, "peel.Min", func() { peel.Min(x, -1) }, "empty")
	wantError(t, "peel.ArgMax", func() { peel.ArgMax(x, 1) }, "empty")
	wantError(t, "peel.ArgMin", func() { peel.ArgMin(x, -1) }, "empty")
	check(t, "Softmax empty", peel.Softmax(x, 1), peel.Float64, []int{2, 0}, nil, 0)
	check(t, "LogSoftmax empty", peel.LogSoftmax(x, 1), peel.Float64, []int{2, 0}, nil, 0)
	check(t, "Cumsum empty", peel.Cumsum(x, 1), peel.Float64, []int{2, 0}, nil, 0)
}

func TestLogSumExpStability(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name string
		in   []float64
		want float64
	}{
		{"large", []float64{1000, 1000}, 1000 + math.Ln2},
		{"very negative", []float64{-1000, -1000}, -1000 + math.Ln2},
		{"mixed", []float64{1e308, 0}, 1e308},
		{"all -Inf", []float64{-inf, -inf}, -inf},
		{"some -Inf", []float64{-inf, 0}, 0},
		{"+Inf", []float64{inf, 0}, inf},
		{"NaN", []float64{math.NaN(), 0}, math.NaN()},
	}
	for _, c := range cases {
		check(t, c.name, peel.LogSumExp(peel.FromFloat64s(c.in)), peel.Float64, []int{}, []float64{c.want}, 1e-15)
		check(t, c.name+" f32", peel.Keep(peel.LogSumExp, peel.FromFloat32s([]float32{float32(c.in[0]), float32(c.in[1])}), -1), peel.Float32, []int{1}, []float64{float64(float32(c.want))}, 1e-6)
	}
}

func refSoftmax(v []float64) []float64 {
	m := refMax(v)
	out := make([]float64, len(v))
	s := 0.0
	for i, x := range v {
		out[i] = math.Exp(x - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func TestSoftmax(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 1000, 1001, 1002}, 2, 3)
	s := refSoftmax([]float64{1, 2, 3})
	want := append(append([]float64{}, s...), s...)
	check(t, "Softmax", peel.Softmax(x, -1), peel.Float64, []int{2, 3}, want, 1e-15)
	check(t, "Softmax axis 1", peel.Softmax(x, 1), peel.Float64, []int{2, 3}, want, 1e-15)
	check(t, "LogSoftmax", peel.LogSoftmax(x, -1), peel.Float64, []int{2, 3}, mapf(want, math.Log), 1e-14)
	check(t, "Softmax [1000,1001]", peel.Softmax(peel.FromFloat64s([]float64{1000, 1001}), 0), peel.Float64, []int{2}, refSoftmax([]float64{0, 1}), 1e-15)
	check(t, "LogSoftmax [-1000, 0]", peel.LogSoftmax(peel.FromFloat64s([]float64{-1000, 0}), 0), peel.Float64, []int{2}, []float64{-1000, 0}, 1e-15)
	// Axis 0 of a column: every column sums to 1.
	col := refSoftmax([]float64{1, 1000})
	check(t, "Softmax axis 0", peel.Softmax(x, 0), peel.Float64, []int{2, 3}, []float64{col[0], col[0], col[0], col[1], col[1], col[1]}, 1e-15)
	check(t, "Softmax f32", peel.Softmax(peel.FromFloat32s([]float32{1000, 1001}), 0), peel.Float32, []int{2}, refSoftmax([]float64{0, 1}), 1e-6)
	check(t, "Softmax i64", peel.Softmax(peel.FromInt64s([]int64{1, 2, 3}), 0), peel.Float64, []int{3}, s, 1e-15)
	check(t, "Softmax -Inf entry", peel.Softmax(peel.FromFloat64s([]float64{math.Inf(-1), 0}), 0), peel.Float64, []int{2}, []float64{0, 1}, 0)
	for _, op := range []struct {
		name string
		f    func(*peel.Tensor, int) *peel.Tensor
	}{{"Softmax", peel.Softmax}, {"LogSoftmax", peel.LogSoftmax}, {"Cumsum", func(x *peel.Tensor, a int) *peel.Tensor { return peel.Cumsum(x, a) }}} {
		wantError(t, "peel."+op.name, func() { op.f(x, 2) }, "axis 2")
		wantError(t, "peel."+op.name, func() { op.f(x, -3) }, "axis -3")
		wantError(t, "peel."+op.name, func() { op.f(nil, 0) }, "nil")
		wantError(t, "peel."+op.name, func() { op.f(peel.Scalar(1.0), 0) }, "rank 0")
	}
}

func TestArgMaxMin(t *testing.T) {
	nan := math.NaN()
	x := peel.FromFloat64s([]float64{3, 1, 3, 2, 5, 5, 0, nan, 1, -1, -1, 4}, 3, 4)
	check(t, "ArgMax -1", peel.ArgMax(x, -1), peel.Int64, []int{3}, []float64{0, 3, 3}, 0)
	check(t, "ArgMin 1", peel.ArgMin(x, 1), peel.Int64, []int{3}, []float64{1, 3, 1}, 0)
	check(t, "ArgMax 0 keep", peel.Keep(peel.ArgMax, x, 0), peel.Int64, []int{1, 4}, []float64{1, 1, 0, 1}, 0)
	check(t, "ArgMin -2 keep", peel.Keep(peel.ArgMin, x, -2), peel.Int64, []int{1, 4}, []float64{2, 2, 2, 1}, 0)
	check(t, "ArgMax i64", peel.ArgMax(peel.FromInt64s([]int64{1, 7, 7}), 0), peel.Int64, []int{}, []float64{1}, 0)
	check(t, "ArgMax bool", peel.ArgMax(peel.FromBools([]bool{false, true}), 0), peel.Int64, []int{}, []float64{1}, 0)
	// No axis: the flat index over the whole tensor (numpy's default).
	check(t, "ArgMax flat", peel.ArgMax(x), peel.Int64, []int{}, []float64{7}, 0)
	check(t, "ArgMin flat (NaN counts as the smallest)", peel.ArgMin(x), peel.Int64, []int{}, []float64{7}, 0)
	check(t, "ArgMax flat keep", peel.Keep(peel.ArgMax, x), peel.Int64, []int{1, 1}, []float64{7}, 0)
	for _, op := range []struct {
		name string
		f    func(*peel.Tensor, ...int) *peel.Tensor
	}{{"ArgMax", peel.ArgMax}, {"ArgMin", peel.ArgMin}} {
		wantError(t, "peel."+op.name, func() { op.f(x, 2) }, "axis 2")
		wantError(t, "peel."+op.name, func() { op.f(x, 0, 1) }, "at most one axis")
		wantError(t, "peel."+op.name, func() { op.f(nil, 0) }, "nil")
		wantError(t, "peel."+op.name, func() { op.f(peel.Scalar(1.0), 0) }, "rank 0")
	}
}

// TestReductionCallForms: Sum(x) reduces everything, Sum(x, a, b) the
// given axes, an empty axis list is every axis, and Keep keeps the
// reduced axes for every reduction.
func TestReductionCallForms(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	check(t, "Sum(x)", peel.Sum(x), peel.Float64, []int{}, []float64{21}, 0)
	check(t, "Sum(x, 1)", peel.Sum(x, 1), peel.Float64, []int{2}, []float64{6, 15}, 0)
	check(t, "Sum(x, 0, 1)", peel.Sum(x, 0, 1), peel.Float64, []int{}, []float64{21}, 0)
	check(t, "Sum(x, none...)", peel.Sum(x, []int{}...), peel.Float64, []int{}, []float64{21}, 0)
	check(t, "Keep(Sum, x, -1)", peel.Keep(peel.Sum, x, -1), peel.Float64, []int{2, 1}, []float64{6, 15}, 0)
	check(t, "Keep(Max, x)", peel.Keep(peel.Max, x), peel.Float64, []int{1, 1}, []float64{6}, 0)
	check(t, "Keep(Mean, x, 0)", peel.Keep(peel.Mean, x, 0), peel.Float64, []int{1, 3}, []float64{2.5, 3.5, 4.5}, 0)
	wantError(t, "peel.Keep", func() { peel.Keep(func(x *peel.Tensor, _ ...int) *peel.Tensor { return x }, x, 0) }, "does not fit")
	wantError(t, "peel.Sum", func() { peel.Keep(peel.Sum, x, 2) }, "axis 2")
}

// reduceWith applies reduction f over axes, through peel.Keep when keep
// is set.
func reduceWith(f func(*peel.Tensor, ...int) *peel.Tensor, x *peel.Tensor, axes []int, keep bool) *peel.Tensor {
	if keep {
		return peel.Keep(f, x, axes...)
	}
	return f(x, axes...)
}

// TestAnyAllNorm: Any, All and Norm have the reductions' one shape;
// Any/All over an empty axis are false/true; Norm's derivative at zero is
// 0, not NaN.
func TestAnyAllNorm(t *testing.T) {
	b := peel.FromFloat64s([]float64{0, 2, 0, 0, 1, 3}, 2, 3)
	if got := peel.Any(b, 1).Bools(); !slices.Equal(got, []bool{true, true}) {
		t.Errorf("Any(b, 1) = %v", got)
	}
	if got := peel.All(b, 0).Bools(); !slices.Equal(got, []bool{false, true, false}) {
		t.Errorf("All(b, 0) = %v", got)
	}
	if got := peel.Keep(peel.All, b).Bools(); !slices.Equal(got, []bool{false}) || !slices.Equal(peel.Keep(peel.All, b).Shape(), []int{1, 1}) {
		t.Errorf("Keep(All, b) = %v", peel.Keep(peel.All, b))
	}
	empty := peel.Zeros(peel.Bool, 2, 0)
	if a, l := peel.Any(empty, 1).Bools(), peel.All(empty, 1).Bools(); !slices.Equal(a, []bool{false, false}) || !slices.Equal(l, []bool{true, true}) {
		t.Errorf("over an empty axis: Any %v, All %v", a, l)
	}
	check(t, "Norm(b, 1)", peel.Norm(b, 1), peel.Float64, []int{2}, []float64{2, math.Sqrt(10)}, 1e-15)
	check(t, "Norm(i64)", peel.Norm(peel.FromInt64s([]int64{3, 4})), peel.Float64, []int{}, []float64{5}, 0)
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Norm(x, 1)) })(b)
	check(t, "Grad of Norm (a zero row gives 0)", g, peel.Float64, []int{2, 3},
		[]float64{0, 1, 0, 0, 1 / math.Sqrt(10), 3 / math.Sqrt(10)}, 1e-15)
	z := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Norm(x) })(peel.Zeros(peel.Float64, 3))
	check(t, "Grad of Norm at 0", z, peel.Float64, []int{3}, []float64{0, 0, 0}, 0)
}
