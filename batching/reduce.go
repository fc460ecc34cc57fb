package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Reductions and arg-reductions keep the batch dimension where it is and
// rewrite their axis parameters for the physical operand (physAxis).

func init() {
	for _, p := range []*interp.Prim{prims.ReduceSum, prims.ReduceMax, prims.ReduceMin, prims.ReduceProd} {
		register(p, reduceRule(p))
	}
	register(prims.ArgMax, argRule(prims.ArgMax))
	register(prims.ArgMin, argRule(prims.ArgMin))
}

// reduceRule reduces the physical axes; the batch dimension shifts left
// by the number of reduced axes before it.
func reduceRule(p *interp.Prim) Rule {
	return func(_ int, params any, args []*T, dims []int) ([]*T, []int) {
		d := dims[0]
		axes := params.(prims.ReduceParams).Axes
		od := d
		for _, a := range axes {
			if a < d {
				od--
			}
		}
		return one(interp.Bind1(p, prims.ReduceParams{Axes: physAxes(axes, d)}, args[0]), od)
	}
}

func argRule(p *interp.Prim) Rule {
	return func(_ int, params any, args []*T, dims []int) ([]*T, []int) {
		d := dims[0]
		a := physAxis(params.(prims.AxisParams).Axis, d)
		od := d
		if a < d {
			od--
		}
		return one(interp.Bind1(p, prims.AxisParams{Axis: a}, args[0]), od)
	}
}
