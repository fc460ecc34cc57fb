package tree_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

type layer struct{ W, B *peel.Tensor }

func Example() {
	p := layer{W: peel.FromFloat64s([]float64{1, 2}), B: peel.Scalar(0.5)}
	loss := func(p layer) *peel.Tensor { return peel.Sum(peel.Add(peel.Mul(p.W, p.W), p.B)) }
	g := transforms.Grad(loss)(p)

	// One SGD step over every leaf.
	p = tree.MapN(func(x []*peel.Tensor) *peel.Tensor { return peel.Sub(x[0], peel.Mul(x[1], 0.1)) }, p, g)
	fmt.Println(tree.Paths(p), p.W, p.B)

	// An ensemble of three copies, and one vector of all parameters.
	ens := tree.Stack([]layer{p, p, p})
	vec, unravel := tree.Ravel(p)
	fmt.Println(ens.W.Shape(), vec, unravel(vec).W)
	// Output:
	// [.W .B] [0.8 1.6] 0.3
	// [3 2] [0.8 1.6 0.3] [0.8 1.6]
}
