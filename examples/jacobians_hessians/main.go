// Command jacobians_hessians ports the PyTorch tutorial "Jacobians,
// Hessians, hvp, vhp, and more: composing function transforms"
// (pytorch/tutorials, intermediate_source/jacobians_hessians.py) to peel:
// Jacobians from VJP and Vmap, Jacrev and Jacfwd with respect to chosen
// arguments, Hessians as Jacobians of Jacobians, batched Jacobians and
// Hessians with Vmap, and Hessian-vector products forward-over-reverse and
// reverse-over-reverse.
//
// The tutorial's timing cells are left out and its sizes are smaller.
// Inputs are deterministic (package synth), so the numbers can be checked
// against PyTorch (testdata/gen_reference.py).
//
//	go run ./examples/jacobians_hessians
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
)

// predict is a linear layer with a tanh: F.linear(x, weight, bias).tanh().
func predict(weight, bias, x *peel.Tensor) *peel.Tensor {
	return peel.Tanh(peel.Add(peel.MatMul(x, peel.Transpose(weight)), bias))
}

// run computes every quantity of the tutorial, by name.
func run() map[string]*peel.Tensor {
	r := map[string]*peel.Tensor{}
	const D = 16
	weight, bias, x := peel.Mul(synth.Data(1, D, D), 0.3), synth.Data(2, D), synth.Data(3, D)
	// px is predict as a function of x alone (functools.partial), for the
	// weight and bias of the moment.
	px := func(x *peel.Tensor) *peel.Tensor { return predict(weight, bias, x) }
	// The Jacobian row by row: the VJP against each unit vector, vectorized.
	_, vjpFn := transforms.VJP(px, x)
	r["jac_vjp"] = transforms.Vmap(vjpFn)(peel.Eye(peel.Float64, D))
	// Jacrev does that; Argnums picks the arguments (x is argument 2).
	_, _, r["jac_x"] = transforms.JacrevArgs3(predict, transforms.Argnums(2))(weight, bias, x)
	r["jac_weight"], r["jac_bias"], _ = transforms.JacrevArgs3(predict, transforms.Argnums(0, 1))(weight, bias, x)
	// Forward mode computes the same Jacobian column by column.
	_, _, r["jacfwd_x"] = transforms.JacfwdArgs3(predict, transforms.Argnums(2))(weight, bias, x)

	// Hessians: Jacobians of Jacobians, one per output element.
	weight, bias, x = peel.Mul(synth.Data(4, 4, 12), 0.3), synth.Data(5, 4), synth.Data(6, 12)
	r["hess_api"] = transforms.Hessian(px)(x)
	r["hess_fwdfwd"] = transforms.Jacfwd(transforms.Jacfwd(px))(x)
	r["hess_revrev"] = transforms.Jacrev(transforms.Jacrev(px))(x)

	// Batched Jacobians and Hessians: Vmap over a batch of inputs.
	weight, bias, x = peel.Mul(synth.Data(7, 6, 7), 0.3), synth.Data(8, 6), synth.Data(9, 5, 7)
	r["batch_jac0"] = transforms.Vmap(transforms.Jacrev(px))(x)
	// Each output depends on its own input only: the Jacobian of the sum.
	predictWithOutputSummed := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(px(x), 0) }
	r["batch_jac1"] = peel.MoveAxis(transforms.Jacrev(predictWithOutputSummed)(x), 1, 0)
	r["batch_hess"] = transforms.Vmap(transforms.Hessian(px))(x)

	// Hessian-vector products without forming the Hessian.
	hvp := func(f func(*peel.Tensor) *peel.Tensor, primals, tangents *peel.Tensor) *peel.Tensor {
		_, t := transforms.JVP(transforms.Grad(f), primals, tangents)
		return t
	}
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Sin(x)) }
	x, tangent := synth.Data(10, 32), synth.Data(11, 32)
	r["hvp"] = hvp(f, x, tangent)
	hvpRevrev := func(f func(*peel.Tensor) *peel.Tensor, primals, tangents *peel.Tensor) *peel.Tensor {
		_, vjpFn := transforms.VJP(transforms.Grad(f), primals)
		return vjpFn(tangents)
	}
	r["hvp_revrev"] = hvpRevrev(f, x, tangent)
	r["hvp_api"] = transforms.HVP(f, x, tangent)
	return r
}

func main() {
	r := run()
	for _, k := range []string{"jac_vjp", "jac_x", "jacfwd_x", "jac_weight", "jac_bias", "hess_api", "hess_revrev", "batch_jac0", "batch_jac1", "batch_hess", "hvp", "hvp_revrev"} {
		fmt.Printf("%-12s %s\n", k, r[k].TypeString())
	}
	fmt.Println("first Jacobian row:", peel.Select(r["jac_x"], 0, 0))
	fmt.Println("hvp[:4]:           ", peel.Narrow(r["hvp"], 0, 0, 4))
}
