package nn_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// MLP is a params tree: two Linear layers and a LayerNorm.
type MLP struct {
	L1   nn.LinearParams
	Norm nn.LayerNormParams
	L2   nn.LinearParams
}

func initMLP(key *peel.Tensor, in, hidden, classes int) MLP {
	ks := peel.SplitKeys(key, 2)
	return MLP{
		L1:   nn.InitLinear(ks[0], peel.Float64, in, hidden, nn.WeightInit(nn.HeNormal(nn.FanIn))),
		Norm: nn.InitLayerNorm(peel.Float64, hidden),
		L2:   nn.InitLinear(ks[1], peel.Float64, hidden, classes),
	}
}

func (m MLP) apply(x *peel.Tensor) *peel.Tensor {
	h := peel.ReLU(nn.LayerNorm(m.Norm, nn.Linear(m.L1, x)))
	return nn.Linear(m.L2, h)
}

// A classifier trained with a few steps of gradient descent: the params
// are a struct of layers, Grad differentiates the loss with respect to
// all of them, and Compile compiles the step.
func Example() {
	x := peel.Normal(peel.Key(1), peel.Float64, 32, 4)
	// The class is the index of the largest of the first three features.
	y := peel.ArgMax(peel.Slice(x, 1, 0, 3, 1), 1)
	params := initMLP(peel.Key(2), 4, 16, 3)

	loss := func(p MLP, x, y *peel.Tensor) *peel.Tensor {
		return nn.CrossEntropy(p.apply(x), y, nn.LabelSmoothing(0.05))
	}
	step := transforms.Compile3(func(p MLP, x, y *peel.Tensor) MLP {
		g := transforms.Grad3(loss)(p, x, y)
		return tree.MapN(func(l []*peel.Tensor) *peel.Tensor {
			return peel.Sub(l[0], peel.Mul(l[1], 0.5))
		}, p, g)
	})
	first := loss(params, x, y).Item()
	for range 50 {
		params = step(params, x, y)
	}
	last := loss(params, x, y).Item()
	fmt.Println("logits:", params.apply(x).Shape())
	fmt.Println("loss decreased:", last < first/2)
	// Output:
	// logits: [32 3]
	// loss decreased: true
}
