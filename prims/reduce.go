package prims

import (
	"fmt"
	"sort"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The reduce family: reductions over axes and arg-reductions.

// ReduceParams are the parameters of reduce_sum, reduce_max, reduce_min
// and reduce_prod: the axes reduced (sorted, distinct), which are removed
// from the result's shape.
type ReduceParams struct{ Axes []int }

func (p ReduceParams) String() string { return fmt.Sprintf("axes=%v", p.Axes) }

func reduction(name string, c dclass) *interp.Prim {
	return graphio.Params[ReduceParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(c, in[0])
		axes := params.(ReduceParams).Axes
		checkAxes(axes, len(in[0].Shape))
		if !sort.IntsAreSorted(axes) {
			interp.Panicf("axes %v are not sorted", axes)
		}
		shape := make([]int, 0, len(in[0].Shape))
		j := 0
		for i, d := range in[0].Shape {
			if j < len(axes) && axes[j] == i {
				j++
				if (name == "reduce_max" || name == "reduce_min") && d == 0 {
					interp.Panicf("%s of an empty axis %d has no identity", name, i)
				}
				continue
			}
			shape = append(shape, d)
		}
		return one(aval{Shape: shape, DType: in[0].DType})
	}))
}

// Reductions over ReduceParams.Axes.
var (
	ReduceSum  = reduction("reduce_sum", numeric)
	ReduceMax  = reduction("reduce_max", anyType)
	ReduceMin  = reduction("reduce_min", anyType)
	ReduceProd = reduction("reduce_prod", numeric)
)

func init() {
	defSameJVP(ReduceSum)
	defJVP(ReduceMax, reduceMaxMinJVP)
	defJVP(ReduceMin, reduceMaxMinJVP)
	defJVP(ReduceProd, reduceProdJVP)
	defTranspose(ReduceSum, linear1, func(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{unreduce(ct, args[0].Shape(), params.(ReduceParams).Axes)}
	})
}

// reduceMaxMinJVP: the mean of the tangents at the positions equal to the
// extremum (ties share it equally; a NaN extremum gives a NaN tangent).
func reduceMaxMinJVP(params any, x, t []*tensor, out *tensor) *tensor {
	axes := params.(ReduceParams).Axes
	shape := x[0].Shape()
	mask := convert(eq(x[0], unreduce(out, shape, axes)), out.DType())
	return div(reduceSum(mul(t[0], mask), axes), reduceSum(mask, axes))
}

// reduceProdJVP: Σᵢ tᵢ·Πⱼ≠ᵢ xⱼ, with the products of the other elements
// computed without division (exclusive prefix and suffix products over
// the reduced axes flattened into one), so it is exact for any number of
// zeros, and differentiable again.
func reduceProdJVP(params any, x, t []*tensor, out *tensor) *tensor {
	axes := params.(ReduceParams).Axes
	if len(axes) == 0 {
		return t[0]
	}
	shape := x[0].Shape()
	kept := keptAxes(len(shape), axes)
	perm := append(append([]int{}, kept...), axes...)
	flat := make([]int, 0, len(kept)+1)
	n := 1
	for _, a := range kept {
		flat = append(flat, shape[a])
	}
	for _, a := range axes {
		n *= shape[a]
	}
	flat = append(flat, n)
	last := len(kept)
	xs := reshape(transpose(x[0], perm), flat)
	ts := reshape(transpose(t[0], perm), flat)
	return reduceSum(mul(ts, productOfOthers(xs, last)), []int{last})
}

func argReduction(name string) *interp.Prim {
	return graphio.Params[AxisParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		axis := params.(AxisParams).Axis
		checkAxis(axis, len(in[0].Shape))
		if in[0].Shape[axis] == 0 {
			interp.Panicf("%s of an empty axis", name)
		}
		shape := append(append([]int{}, in[0].Shape[:axis]...), in[0].Shape[axis+1:]...)
		return one(aval{Shape: shape, DType: backend.Int64})
	}))
}

// ArgMax and ArgMin return the index (i64) of the first maximum (minimum)
// along AxisParams.Axis, which is removed. NaN counts as the maximum
// (minimum), as in numpy.
var (
	ArgMax = argReduction("argmax")
	ArgMin = argReduction("argmin")
)

func init() {
	ArgMax.NonDifferentiable = true
	ArgMin.NonDifferentiable = true
}
