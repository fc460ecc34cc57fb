// Command neural_tangent_kernels ports the PyTorch tutorial "Neural Tangent
// Kernels" (pytorch/tutorials, intermediate_source/neural_tangent_kernels.py
// at commit 34272e8d6470967947c5798e1ef5b0e4710cc80b) to peel: the empirical
// NTK J(x1)·J(x2)ᵀ of the tutorial's CNN over all its parameters, computed
// two ways — contracting per-sample Jacobians (Vmap of Jacrev over the
// parameter tree; compute "full", "trace" or "diagonal") and stacking
// NTK-vector products (a VJP, then a JVP, vectorized over the output basis
// and over both batches).
//
// The CNN is the tutorial's (three 3×3 convolutions 3→32→32→32 with ReLUs
// after the first two, flattened into a linear layer to 10 outputs,
// initialized as torch's layers are), on 8×8 images instead of 32×32, so the
// linear layer has 32·2·2 inputs instead of 21632; the batches are the
// tutorial's 20 and 5, in float32 as torch's default. There is no device
// to choose. The test runs the same functions in float64 on deterministic
// weights and images (package synth) against PyTorch
// (testdata/gen_reference.py).
//
//	go run ./examples/neural_tangent_kernels
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// CNN holds the parameters of the tutorial's network.
type CNN struct {
	Conv1, Conv2, Conv3 nn.Conv2DParams
	FC                  nn.LinearParams
}

// newCNN initializes the layers as torch's nn.Conv2d and nn.Linear do.
func newCNN(key *peel.Tensor) CNN {
	keys := peel.SplitKeys(key, 4)
	return CNN{
		Conv1: nn.InitConv2D(keys[0], peel.Float32, 3, 32, 3, nn.TorchInit()),
		Conv2: nn.InitConv2D(keys[1], peel.Float32, 32, 32, 3, nn.TorchInit()),
		Conv3: nn.InitConv2D(keys[2], peel.Float32, 32, 32, 3, nn.TorchInit()),
		FC:    nn.InitLinear(keys[3], peel.Float32, 32*2*2, 10, nn.TorchInit()),
	}
}

// forward runs a batch of images x [B, 3, 8, 8] and returns outputs [B, 10].
func forward(params CNN, x *peel.Tensor) *peel.Tensor {
	x = nn.Conv2D(params.Conv1, x).ReLU()
	x = nn.Conv2D(params.Conv2, x).ReLU()
	x = nn.Conv2D(params.Conv3, x).Flatten(1)
	return nn.Linear(params.FC, x)
}

// fnetSingle evaluates the network on a single input, as a batch of one.
func fnetSingle(params CNN, x *peel.Tensor) *peel.Tensor {
	return peel.Squeeze(forward(params, peel.Unsqueeze(x, 0)), 0)
}

// empiricalNTKJacobianContraction contracts the Jacobians of fnetSingle on
// each point of x1 and of x2, summed over the parameters: compute "full" is
// [N, M, O, O], "trace" [N, M] and "diagonal" [N, M, O].
func empiricalNTKJacobianContraction(fnetSingle func(CNN, *peel.Tensor) *peel.Tensor, params CNN, x1, x2 *peel.Tensor, compute string) *peel.Tensor {
	// The Jacobians on x1: params' tree, each leaf [N, O, leaf size].
	jac1 := transforms.Vmap2(transforms.Jacrev2(fnetSingle), transforms.InAxes(transforms.NoAxis, 0))(params, x1)
	jac1 = tree.Map(func(j *peel.Tensor) *peel.Tensor { return j.Flatten(2) }, jac1)
	// And on x2.
	jac2 := transforms.Vmap2(transforms.Jacrev2(fnetSingle), transforms.InAxes(transforms.NoAxis, 0))(params, x2)
	jac2 = tree.Map(func(j *peel.Tensor) *peel.Tensor { return j.Flatten(2) }, jac2)
	// Contract them leaf by leaf, then sum over the leaves.
	var einsumExpr string
	switch compute {
	case "full":
		einsumExpr = "Naf,Mbf->NMab"
	case "trace":
		einsumExpr = "Naf,Maf->NM"
	case "diagonal":
		einsumExpr = "Naf,Maf->NMa"
	default:
		panic("compute is full, trace or diagonal")
	}
	result := tree.Map2(func(j1, j2 *peel.Tensor) *peel.Tensor { return peel.Einsum(einsumExpr, j1, j2) }, jac1, jac2)
	return peel.Stack(tree.Leaves(result), 0).Sum(0)
}

// empiricalNTKNTKVPs computes the same NTK from NTK-vector products,
// J(x1)·(J(x2)ᵀ·e) for each output basis vector e, without any Jacobian.
func empiricalNTKNTKVPs(fn func(CNN, *peel.Tensor) *peel.Tensor, params CNN, x1, x2 *peel.Tensor, compute string) *peel.Tensor {
	getNTK := func(x1, x2 *peel.Tensor) *peel.Tensor {
		funcX1 := func(params CNN) *peel.Tensor { return fn(params, x1) }
		funcX2 := func(params CNN) *peel.Tensor { return fn(params, x2) }
		output, vjpFn := transforms.VJP(funcX1, params)
		getNTKSlice := func(vec *peel.Tensor) *peel.Tensor {
			// vecᵀ·J(x1), by reverse mode: a tree like params.
			vjps := vjpFn(vec)
			// J(x2)·vjps, by forward mode.
			_, jvps := transforms.JVP(funcX2, params, vjps)
			return jvps
		}
		// One slice per vector of the output basis.
		basis := peel.Eye(output.DType(), output.Size())
		return transforms.Vmap(getNTKSlice)(basis)
	}
	// Every pair of points of x1 and x2: Vmap over x2 inside Vmap over x1.
	result := transforms.Vmap2(transforms.Vmap2(getNTK, transforms.InAxes(transforms.NoAxis, 0)), transforms.InAxes(0, transforms.NoAxis))(x1, x2)
	switch compute {
	case "trace":
		return peel.Einsum("NMKK->NM", result)
	case "diagonal":
		return peel.Einsum("NMKK->NMK", result)
	}
	return result
}

func main() {
	keys := peel.SplitKeys(peel.Key(0), 3)
	xTrain := peel.Normal(keys[0], peel.Float32, 20, 3, 8, 8)
	xTest := peel.Normal(keys[1], peel.Float32, 5, 3, 8, 8)
	params := newCNN(keys[2])

	result := empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "full")
	fmt.Println(result.TypeString())
	result = empiricalNTKJacobianContraction(fnetSingle, params, xTrain, xTest, "trace")
	fmt.Println(result.TypeString())

	resultFromJacobianContraction := empiricalNTKJacobianContraction(fnetSingle, params, xTest, xTrain, "full")
	resultFromNTKVPs := empiricalNTKNTKVPs(fnetSingle, params, xTest, xTrain, "full")
	fmt.Println("max |difference| of the two methods:", resultFromJacobianContraction.Sub(resultFromNTKVPs).Abs().Max().Item())
}
