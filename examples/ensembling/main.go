// Command ensembling ports the PyTorch tutorial "Model ensembling"
// (pytorch/tutorials, intermediate_source/ensembling.py, read at commit
// 1dc22dff39bc8f6c862783393b70ca1e1b8ed516) to peel: the parameters of
// several models of one architecture are stacked with tree.Stack (torch's
// stack_module_state), and Vmap runs them all at once, each on its own
// minibatch or all on the same one, next to the tutorial's loops.
//
// The model is the tutorial's SimpleMLP (three linear layers with ReLU
// between them) with torch's default initialization (nn.TorchInit), shrunk
// so that it runs in milliseconds: 8×8 images instead of 28×28 (fc1 is 64→16
// instead of 784→128, fc2 16→16, fc3 16→10), minibatches of 8 instead of 64,
// 4 models instead of 10, on the CPU in float64. peel's model is a function
// of its params (a SimpleMLP struct), so there are no buffers, no
// functional_call and no meta-device base model; the tutorial's targets,
// which it never uses, and its timings are left out. main_test.go checks the
// predictions against PyTorch (testdata/gen_reference.py) and the vmapped
// ones against the loops; train_test.go goes beyond the tutorial and trains
// the ensemble with one compiled, vmapped Adam step.
//
//	go run ./examples/ensembling
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// SimpleMLP holds the parameters of the tutorial's MLP.
type SimpleMLP struct{ FC1, FC2, FC3 nn.LinearParams }

// newSimpleMLP initializes the layers as torch's nn.Linear does, each with
// a key of its own.
func newSimpleMLP(key *peel.Tensor) SimpleMLP {
	return SimpleMLP{
		FC1: nn.InitLinear(peel.FoldIn(key, 1), peel.Float64, 64, 16, nn.TorchInit()),
		FC2: nn.InitLinear(peel.FoldIn(key, 2), peel.Float64, 16, 16, nn.TorchInit()),
		FC3: nn.InitLinear(peel.FoldIn(key, 3), peel.Float64, 16, 10, nn.TorchInit()),
	}
}

// fmodel is SimpleMLP's forward: images x [B, 1, 8, 8] to logits [B, 10].
func fmodel(params SimpleMLP, x *peel.Tensor) *peel.Tensor {
	x = x.Flatten(1)
	x = nn.Linear(params.FC1, x).ReLU()
	x = nn.Linear(params.FC2, x).ReLU()
	return nn.Linear(params.FC3, x)
}

const numModels = 4

// run returns the ensemble's predictions with a different minibatch for each
// model and with the same one for all, by the tutorial's loops (numModels
// tensors [8, 10]) and by Vmap ([numModels, 8, 10]).
func run(models []SimpleMLP, data *peel.Tensor) (predictionsDiffMinibatchLoop, predictions2 []*peel.Tensor, predictions1Vmap, predictions2Vmap *peel.Tensor) {
	// The tutorial's loops over the models. Option 1: a different minibatch
	// for each model; option 2: the same minibatch for all.
	minibatches := peel.Narrow(data, 0, 0, numModels)
	minibatch := peel.Index(data, 0)
	predictionsDiffMinibatchLoop, predictions2 = make([]*peel.Tensor, numModels), make([]*peel.Tensor, numModels)
	for i, model := range models {
		predictionsDiffMinibatchLoop[i] = fmodel(model, peel.Index(minibatches, i))
		predictions2[i] = fmodel(model, minibatch)
	}
	// vmap: the models' params stacked into one SimpleMLP whose every leaf
	// has a leading dimension of numModels (torch's stack_module_state).
	params := tree.Stack(models)
	predictions1Vmap = transforms.Vmap2(fmodel)(params, minibatches)
	// InAxes: map axis 0 of the params, share the minibatch (in_dims=(0, 0, None)).
	predictions2Vmap = transforms.Vmap2(fmodel, transforms.InAxes(0, transforms.NoAxis))(params, minibatch)
	return predictionsDiffMinibatchLoop, predictions2, predictions1Vmap, predictions2Vmap
}

func main() {
	keys := peel.SplitKeys(peel.Key(0), numModels+1) // torch.manual_seed(0)
	data := peel.Normal(keys[0], peel.Float64, 10, 8, 1, 8, 8)
	models := make([]SimpleMLP, numModels)
	for i := range models {
		models[i] = newSimpleMLP(keys[i+1])
	}
	_, _, predictions1Vmap, predictions2Vmap := run(models, data)
	fmt.Println("stacked fc1 weight:", tree.Stack(models).FC1.W.TypeString())
	fmt.Println("predictions, a minibatch per model:", predictions1Vmap.TypeString())
	fmt.Println("predictions, one shared minibatch: ", predictions2Vmap.TypeString())
	fmt.Println("ensemble average, first image:", peel.Index(predictions2Vmap.Mean(0), 0))
}
