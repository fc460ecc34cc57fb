// Command jacobians_hessians ports the PyTorch tutorial "Jacobians,
// Hessians, hvp, vhp, and more: composing function transforms"
// (pytorch/tutorials, intermediate_source/jacobians_hessians.py at commit
// 14f19bbffcff42ee752897e57b4b96e4972d302f) to peel, cell by cell: the
// Jacobian row by row and then by VJP and Vmap, Jacrev with respect to the
// input and to (weight, bias), Jacfwd against Jacrev on a taller and a wider
// layer, the Hessian three ways, batched Jacobians and Hessians, and
// Hessian-vector products forward-over-reverse and reverse-over-reverse.
//
// What differs: the timing cells (Timer, get_perf) are left out, the sizes
// are smaller (D 16 as in the tutorial; Din×Dout 4×32 and 32×4 instead of
// 32×2048 and 2048×32, 12×4 instead of 512×32 for the Hessian, a batch of
// 5 of 7→6 instead of 64 of 31→33, 32 instead of 2048 for the HVP), and
// torch.randn is replaced by the deterministic synth.Data, so the numbers
// can be checked against PyTorch (testdata/gen_reference.py).
//
//	go run ./examples/jacobians_hessians
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// predict is a linear layer with a tanh: F.linear(x, weight, bias).tanh(),
// weight being [Dout, Din] as torch's.
func predict(weight, bias, x *peel.Tensor) *peel.Tensor {
	return x.MatMul(weight.T()).Add(bias).Tanh()
}

// run computes the quantities of the tutorial, by the tutorial's names.
func run() map[string]*peel.Tensor {
	r := map[string]*peel.Tensor{}
	const D = 16
	weight := synth.Data(1, D, D)
	bias := synth.Data(2, D)
	x := synth.Data(3, D)

	// The Jacobian row by row: one vector-Jacobian product per unit vector.
	unitVectors := peel.Eye(peel.Float64, D)
	computeJac := func(xp *peel.Tensor) *peel.Tensor {
		var jacobianRows []*peel.Tensor
		for _, vec := range tree.Unstack(unitVectors) {
			_, vjpFn := transforms.VJP(func(xp *peel.Tensor) *peel.Tensor { return predict(weight, bias, xp) }, xp)
			jacobianRows = append(jacobianRows, vjpFn(vec))
		}
		return peel.Stack(jacobianRows, 0)
	}
	r["jacobian"] = computeJac(x)

	// The same rows at once: Vmap over the unit vectors of a VJP.
	_, vjpFn := transforms.VJP(func(x *peel.Tensor) *peel.Tensor { return predict(weight, bias, x) }, x)
	r["ft_jacobian"] = transforms.Vmap(vjpFn)(unitVectors)

	// Jacrev does that; argnum 2 is x; Argnums(0, 1) is (weight, bias).
	r["ft_jacobian_jacrev"] = transforms.Jacrev3At[*peel.Tensor](predict, 2)(weight, bias, x)
	r["ft_jac_weight"], r["ft_jac_bias"], _ = transforms.JacrevArgs3(predict, transforms.Argnums(0, 1))(weight, bias, x)

	// Jacfwd (column by column) and Jacrev (row by row) agree; which is
	// faster depends on whether the Jacobian is taller or wider.
	Din, Dout := 4, 32
	weight = synth.Data(4, Dout, Din)
	bias = synth.Data(5, Dout)
	x = synth.Data(6, Din)
	r["jacfwd_taller"] = transforms.Jacfwd3At[*peel.Tensor](predict, 2)(weight, bias, x)
	r["jacrev_taller"] = transforms.Jacrev3At[*peel.Tensor](predict, 2)(weight, bias, x)

	Din, Dout = 32, 4
	weight = synth.Data(7, Dout, Din)
	bias = synth.Data(8, Dout)
	x = synth.Data(9, Din)
	r["jacfwd_wider"] = transforms.Jacfwd3At[*peel.Tensor](predict, 2)(weight, bias, x)
	r["jacrev_wider"] = transforms.Jacrev3At[*peel.Tensor](predict, 2)(weight, bias, x)

	// The Hessian is the Jacobian of the Jacobian: Hessian3At(predict, 2)
	// is Jacfwd3At(Jacrev3At(predict, 2), 2), with respect to x.
	Din, Dout = 12, 4
	weight = synth.Data(10, Dout, Din)
	bias = synth.Data(11, Dout)
	x = synth.Data(12, Din)
	hessian := transforms.Hessian3At(predict, 2)
	r["hess_api"] = hessian(weight, bias, x)
	r["hess_fwdfwd"] = transforms.Jacfwd3At[*peel.Tensor](transforms.Jacfwd3At[*peel.Tensor](predict, 2), 2)(weight, bias, x)
	r["hess_revrev"] = transforms.Jacrev3At[*peel.Tensor](transforms.Jacrev3At[*peel.Tensor](predict, 2), 2)(weight, bias, x)

	// Batch Jacobians and Hessians: Vmap over the batch of inputs only.
	batchSize := 5
	Din, Dout = 7, 6
	weight = synth.Data(13, Dout, Din)
	bias = synth.Data(14, Dout)
	x = synth.Data(15, batchSize, Din)
	inDims := transforms.InAxes(transforms.NoAxis, transforms.NoAxis, 0)
	computeBatchJacobian := transforms.Vmap3(transforms.Jacrev3At[*peel.Tensor](predict, 2), inDims)
	r["batch_jacobian0"] = computeBatchJacobian(weight, bias, x)
	// Each output depends on its own input only: the Jacobian of the sum.
	predictWithOutputSummed := func(weight, bias, x *peel.Tensor) *peel.Tensor { return predict(weight, bias, x).Sum(0) }
	r["batch_jacobian1"] = peel.MoveAxis(transforms.Jacrev3At[*peel.Tensor](predictWithOutputSummed, 2)(weight, bias, x), 1, 0)
	computeBatchHessian := transforms.Vmap3(hessian, inDims)
	r["batch_hess"] = computeBatchHessian(weight, bias, x)

	// Hessian-vector products without forming the Hessian.
	f := func(x *peel.Tensor) *peel.Tensor { return x.Sin().Sum() }
	x = synth.Data(16, 32)
	tangent := synth.Data(17, 32)
	r["result"] = hvp(f, x, tangent)
	r["result_hvp_revrev"] = hvpRevrev(f, x, tangent)
	return r
}

// hvp is forward-over-reverse: the JVP of the gradient.
func hvp(f func(*peel.Tensor) *peel.Tensor, primals, tangents *peel.Tensor) *peel.Tensor {
	_, hvpOut := transforms.JVP(transforms.Grad(f), primals, tangents)
	return hvpOut
}

// hvpRevrev is reverse-over-reverse, for functions forward mode cannot do.
func hvpRevrev(f func(*peel.Tensor) *peel.Tensor, primals, tangents *peel.Tensor) *peel.Tensor {
	_, vjpFn := transforms.VJP(transforms.Grad(f), primals)
	return vjpFn(tangents)
}

func main() {
	r := run()
	fmt.Println(r["jacobian"].TypeString())
	fmt.Println(peel.Select(r["jacobian"], 0, 0)) // its first row
	fmt.Println(r["ft_jac_weight"].TypeString(), r["ft_jac_bias"].TypeString())
	fmt.Println(r["hess_api"].TypeString(), r["batch_hess"].TypeString())
}
