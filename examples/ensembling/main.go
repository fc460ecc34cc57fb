// Command ensembling ports the PyTorch tutorial "Model ensembling"
// (pytorch/tutorials, intermediate_source/ensembling.py) to peel: the
// parameters of several models of one architecture are stacked with
// tree.Stack, and Vmap runs them all at once, each on its own minibatch or
// all on the same one.
//
// The tutorial's three-layer MLP on 28×28 images is kept, on 6×6 images and
// with narrower layers so that it runs in milliseconds. Inputs and initial
// weights are deterministic (package synth), so the predictions can be
// checked against PyTorch (testdata/gen_reference.py).
//
// Beyond the tutorial, train.go trains the ensemble: one model's Adam
// training step (package optim) is vmapped over stacked params and stacked
// optimizer states and compiled, and main_test.go checks it against
// training each model alone.
//
//	go run ./examples/ensembling
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// MLP is the parameters of one model: three linear layers.
type MLP struct{ W1, B1, W2, B2, W3, B3 *peel.Tensor }

// newMLP returns one model's initial parameters (nn.Linear's would be random).
func newMLP(seed float64) MLP {
	return MLP{
		W1: peel.Mul(synth.Data(seed, 36, 16), 0.17), B1: peel.Mul(synth.Data(seed+1, 16), 0.1),
		W2: peel.Mul(synth.Data(seed+2, 16, 16), 0.25), B2: peel.Mul(synth.Data(seed+3, 16), 0.1),
		W3: peel.Mul(synth.Data(seed+4, 16, 10), 0.25), B3: peel.Mul(synth.Data(seed+5, 10), 0.1),
	}
}

// fmodel runs one model on a minibatch x [B, 1, 6, 6] and returns logits [B, 10].
func fmodel(p MLP, x *peel.Tensor) *peel.Tensor {
	x = peel.Flatten(x, 1)
	x = peel.ReLU(peel.Add(peel.MatMul(x, p.W1), p.B1))
	x = peel.ReLU(peel.Add(peel.MatMul(x, p.W2), p.B2))
	return peel.Add(peel.MatMul(x, p.W3), p.B3)
}

// run returns the ensemble's predictions with a different minibatch for
// each model and with the same minibatch for all, both [numModels, 8, 10].
func run() (diffMinibatch, sameMinibatch *peel.Tensor) {
	const numModels = 4
	data := synth.Data(1, 10, 8, 1, 6, 6) // 10 minibatches of 8 images
	models := make([]MLP, numModels)
	for i := range models {
		models[i] = newMLP(float64(10 * i))
	}
	// One MLP whose every leaf has a leading dimension of numModels.
	params := tree.Stack(models)
	// Option 1: a different minibatch for each model; Vmap maps axis 0 of both.
	minibatches := peel.Narrow(data, 0, 0, numModels)
	diffMinibatch = transforms.Vmap2(fmodel)(params, minibatches)
	// Option 2: the same minibatch for every model.
	minibatch := peel.Select(data, 0, 0)
	sameMinibatch = transforms.Vmap2(fmodel, transforms.InAxes(0, transforms.NoAxis))(params, minibatch)
	return diffMinibatch, sameMinibatch
}

func main() {
	diff, same := run()
	fmt.Println("stacked W1:", tree.Stack([]MLP{newMLP(0), newMLP(10)}).W1.TypeString(), "(2 models)")
	fmt.Println("predictions, a minibatch per model:", diff.TypeString())
	fmt.Println("predictions, one shared minibatch: ", same.TypeString())
	fmt.Println("model 0, first image, shared minibatch:", peel.Index(same, 0, 0))
	fmt.Println("ensemble average, first image:        ", peel.Mean(peel.Select(same, 1, 0), 0))
	_, losses, _ := trainEnsemble()
	fmt.Println("training the 4 models at once (Compile of Vmap of an Adam step), losses [step, model]:")
	fmt.Println(losses)
}
