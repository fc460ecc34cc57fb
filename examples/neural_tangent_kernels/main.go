// Command neural_tangent_kernels ports the PyTorch tutorial "Neural Tangent
// Kernels" (pytorch/tutorials, intermediate_source/neural_tangent_kernels.py)
// to peel: the empirical NTK of a network, J(x1)·J(x2)ᵀ over all its
// parameters, computed two ways — contracting per-sample Jacobians (Vmap of
// Jacrev over the parameter tree) and stacking NTK-vector products (VJP,
// then JVP, vectorized over the output basis and over both batches).
//
// The tutorial's model is a CNN; peel has no convolution yet, so this port
// uses an MLP with the same role (an input image, ten-ish outputs). Inputs
// and weights are deterministic (package synth), so the kernels can be
// checked against PyTorch (testdata/gen_reference.py).
//
//	go run ./examples/neural_tangent_kernels
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Net is the parameters of the network.
type Net struct{ W1, B1, W2, B2, W3, B3 *peel.Tensor }

// net runs a batch of images x [B, 3, 4, 4] and returns outputs [B, 5].
func net(p Net, x *peel.Tensor) *peel.Tensor {
	x = peel.Flatten(x, 1)
	x = peel.ReLU(peel.Add(peel.MatMul(x, p.W1), p.B1))
	x = peel.ReLU(peel.Add(peel.MatMul(x, p.W2), p.B2))
	return peel.Add(peel.MatMul(x, p.W3), p.B3)
}

// fnetSingle runs the network on one input, as a batch of one.
func fnetSingle(p Net, x *peel.Tensor) *peel.Tensor {
	return peel.Squeeze(net(p, peel.Unsqueeze(x, 0)), 0)
}

// empiricalNTKJacobianContraction computes the NTK by contracting the
// Jacobians of the outputs on x1 and x2 with respect to every parameter.
// compute is "full" ([N, M, O, O]), "trace" ([N, M]) or "diagonal" ([N, M, O]).
func empiricalNTKJacobianContraction(p Net, x1, x2 *peel.Tensor, compute string) *peel.Tensor {
	// A Net of Jacobians, each leaf [N, O, leaf shape...].
	jac := transforms.Vmap2(transforms.Jacrev2(fnetSingle), transforms.InAxes(transforms.NoAxis, 0))
	expr := map[string]string{"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}[compute]
	flat := func(j *peel.Tensor) *peel.Tensor { return peel.Reshape(j, j.Shape()[0], j.Shape()[1], -1) }
	terms := tree.MapN(func(j []*peel.Tensor) *peel.Tensor { return peel.Einsum(expr, flat(j[0]), flat(j[1])) }, jac(p, x1), jac(p, x2))
	return peel.Sum(peel.Stack(tree.Leaves(terms), 0), 0)
}

// empiricalNTKVPs computes the same NTK from NTK-vector products:
// J(x1)·(J(x2)ᵀ·e) for each output basis vector e, without any Jacobian.
func empiricalNTKVPs(p Net, x1, x2 *peel.Tensor, compute string) *peel.Tensor {
	getNTK := func(x1, x2 *peel.Tensor) *peel.Tensor {
		funcX1 := func(p Net) *peel.Tensor { return fnetSingle(p, x1) }
		funcX2 := func(p Net) *peel.Tensor { return fnetSingle(p, x2) }
		output, vjpFn := transforms.VJP(funcX1, p)
		getNTKSlice := func(vec *peel.Tensor) *peel.Tensor {
			_, jvps := transforms.JVP(funcX2, p, vjpFn(vec))
			return jvps
		}
		return transforms.Vmap(getNTKSlice)(peel.Eye(output.DType(), output.Size()))
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

// run computes the kernels of the tutorial, by name.
func run() map[string]*peel.Tensor {
	xTrain, xTest := synth.Data(1, 6, 3, 4, 4), synth.Data(2, 3, 3, 4, 4)
	params := Net{
		W1: peel.Mul(synth.Data(3, 48, 16), 0.15), B1: peel.Mul(synth.Data(4, 16), 0.1),
		W2: peel.Mul(synth.Data(5, 16, 16), 0.25), B2: peel.Mul(synth.Data(6, 16), 0.1),
		W3: peel.Mul(synth.Data(7, 16, 5), 0.25), B3: peel.Mul(synth.Data(8, 5), 0.1),
	}
	return map[string]*peel.Tensor{
		"jc_full":     empiricalNTKJacobianContraction(params, xTrain, xTest, "full"),
		"jc_trace":    empiricalNTKJacobianContraction(params, xTrain, xTest, "trace"),
		"jc_diagonal": empiricalNTKJacobianContraction(params, xTrain, xTest, "diagonal"),
		"jc_test":     empiricalNTKJacobianContraction(params, xTest, xTrain, "full"),
		"vps_test":    empiricalNTKVPs(params, xTest, xTrain, "full"),
		"vps_trace":   empiricalNTKVPs(params, xTest, xTrain, "trace"),
	}
}

func main() {
	r := run()
	for _, k := range []string{"jc_full", "jc_trace", "jc_diagonal", "jc_test", "vps_test", "vps_trace"} {
		fmt.Printf("%-12s %s\n", k, r[k].TypeString())
	}
	fmt.Println("trace NTK (Jacobian contraction), x_test × x_train:")
	fmt.Println(peel.Einsum("NMKK->NM", r["jc_test"]))
	fmt.Println("trace NTK (NTK-vector products):")
	fmt.Println(r["vps_trace"])
}
