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
	p = tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(0.1)) }, p, g)
	fmt.Println(tree.Paths(p), p.W, p.B)

	// An ensemble of three copies, and one vector of all parameters.
	ens := tree.Stack([]layer{p, p, p})
	vec, unravel := tree.Ravel(p)
	fmt.Println(ens.W.Shape(), vec, unravel(vec).W)
	// Output:
	// [.W .B] [0.8 1.6] 0.3
	// [3 2] [0.8 1.6 0.3] [0.8 1.6]
}

// Several results of a function are one tree: a tuple, unpacked in one
// line.
func ExampleTuple3() {
	step := func(p layer, lr float64) tree.Tuple3[layer, layer, *peel.Tensor] {
		loss := func(p layer) *peel.Tensor { return p.W.Square().Sum().Add(p.B) }
		l, g := transforms.ValueAndGrad(loss)(p)
		return tree.Pack3(tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(lr)) }, p, g), g, l)
	}
	p := layer{W: peel.FromFloat64s([]float64{1, 2}), B: peel.Scalar(0.5)}
	p, g, loss := step(p, 0.1).Unpack()
	fmt.Println(p.W, g.W, loss, tree.Paths(tree.Pack2(p, loss)))
	// Output:
	// [0.8 1.6] [2 4] 5.5 [[0].W [0].B [1]]
}
