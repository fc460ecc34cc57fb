package optim_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
)

type linear struct{ W, B *peel.Tensor }

func Example() {
	// Fit y = 2x - 1 with a linear model.
	x := peel.FromFloat64s([]float64{-1, 0, 1, 2}, 4, 1)
	y := peel.FromFloat64s([]float64{-3, -1, 1, 3}, 4, 1)
	loss := func(p linear) *peel.Tensor {
		return peel.Mean(peel.Square(peel.Sub(peel.Add(peel.MatMul(x, p.W), p.B), y)))
	}
	params := linear{W: peel.Zeros(peel.Float64, 1, 1), B: peel.Zeros(peel.Float64, 1)}

	// Adam on clipped gradients, with a cosine learning-rate decay.
	opt := optim.Chain(
		optim.ClipByGlobalNorm[linear](10),
		optim.Adam[linear](optim.CosineDecay(0.1, 300, 0.01)),
	)
	state := opt.Init(params)
	step := func(params linear, state optim.State) (linear, optim.State, *peel.Tensor) {
		l, grads := transforms.ValueAndGrad(loss)(params)
		updates, state := opt.Update(grads, state, params)
		return optim.ApplyUpdates(params, updates), state, l
	}
	for i := range 300 {
		var l *peel.Tensor
		params, state, l = step(params, state)
		if i%100 == 0 {
			fmt.Printf("step %d: loss %.4f\n", i, l.Item())
		}
	}
	fmt.Printf("W %.3f, B %.3f\n", params.W.Item(), params.B.Item())
	// Output:
	// step 0: loss 5.0000
	// step 100: loss 0.0001
	// step 200: loss 0.0000
	// W 2.000, B -1.000
}
