package optest

import (
	"fmt"
	"sort"

	"github.com/peel-ml/peel"
)

type T = peel.Tensor

var (
	floats   = []peel.DType{peel.Float32, peel.Float64}
	numerics = []peel.DType{peel.Int64, peel.Float32, peel.Float64}
	allTypes = []peel.DType{peel.Bool, peel.Int64, peel.Float32, peel.Float64}
)

// floatOf is the dtype float-only functions compute in: floats stay,
// integers and bools become f64.
func floatOf(d peel.DType) peel.DType {
	if d.IsFloat() {
		return d
	}
	return peel.Float64
}

func same(d peel.DType) peel.DType { return d }
func toBool(peel.DType) peel.DType { return peel.Bool }

// unarySamples draws every shape of Shapes for each dtype, plus the float
// edge values.
func unarySamples(dtypes []peel.DType, lo, hi float64) func() []Sample {
	return func() []Sample {
		g := NewGen(1)
		var out []Sample
		for _, d := range dtypes {
			for _, s := range Shapes {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, lo, hi, s...)}})
			}
			if d.IsFloat() {
				h := Host{Shape: []int{len(FloatEdges)}, DType: d, Data: FloatEdges}
				out = append(out, Sample{Name: fmt.Sprintf("%v/edges", d), Args: []*T{h.Tensor()}})
			}
		}
		return out
	}
}

func unaryOp(name string, f func(*T) *T, ref func(float64) float64, dtypes []peel.DType, out func(peel.DType) peel.DType, lo, hi float64) Op {
	return Op{
		Name:    name,
		F:       func(a []*T) *T { return f(a[0]) },
		Samples: unarySamples(dtypes, lo, hi),
		Ref: func(a []Host) Host {
			return Map(out(a[0].DType), a, func(x []float64) float64 { return ref(x[0]) })
		},
		Differentiable: true,
	}
}

// binaryShapes are operand shape pairs, including broadcasts.
var binaryShapes = [][2][]int{{{}, {}}, {{5}, {5}}, {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{0}, {0}}, {{2, 0}, {1, 0}}, {{2, 3, 4}, {3, 1}}}

func binarySamples(dtypes []peel.DType, lo, hi float64, avoidZero bool) func() []Sample {
	return func() []Sample {
		g := NewGen(2)
		var out []Sample
		for _, d := range dtypes {
			for _, sh := range binaryShapes {
				y := g.Tensor(d, lo, hi, sh[1]...)
				if avoidZero {
					y = peel.Where(peel.Equal(y, 0), peel.AsType(peel.Scalar(int64(3)), d), y)
				}
				out = append(out, Sample{Name: fmt.Sprintf("%v%v%v", d, sh[0], sh[1]), Args: []*T{g.Tensor(d, lo, hi, sh[0]...), y}})
			}
		}
		// Mixed dtypes promote.
		if len(dtypes) > 1 {
			out = append(out, Sample{Name: "mixed", Args: []*T{g.Tensor(dtypes[0], lo, hi, 2, 3), g.Tensor(dtypes[len(dtypes)-1], 1, hi, 3)}})
		}
		return out
	}
}

func binaryOp(name string, f func(x, y any) *T, ref func(a, b float64) float64, dtypes []peel.DType, out func(peel.DType) peel.DType, lo, hi float64) Op {
	return Op{
		Name:    name,
		F:       func(a []*T) *T { return f(a[0], a[1]) },
		Samples: binarySamples(dtypes, lo, hi, false),
		Ref: func(a []Host) Host {
			d := peel.PromoteTypes(a[0].DType, a[1].DType)
			return Map(out(d), a, func(x []float64) float64 { return ref(x[0], x[1]) })
		},
		Differentiable: true,
	}
}

// All returns every registry entry, sorted by name.
func All() []Op {
	ops := elementwise()
	ops = append(ops, reductionOps()...)
	ops = append(ops, shapeOps()...)
	ops = append(ops, shapeMoreOps()...)
	ops = append(ops, dotOps()...)
	ops = append(ops, linalgPkgOps()...)
	ops = append(ops, convOps()...)
	ops = append(ops, poolOps()...)
	ops = append(ops, userOps()...)
	ops = append(ops, specialOps()...)
	ops = append(ops, sortAreaOps()...)
	ops = withStorageSamples(ops)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops
}
