package main

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
)

// TestAgainstTorch checks every Jacobian, Hessian and HVP, however peel
// computed it (loop of VJPs, Vmap of a VJP, Jacrev, Jacfwd, their
// compositions, the sum trick), against PyTorch's plain-autograd loops over
// the output elements (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	r := run()
	const rtol, atol = 1e-10, 1e-13
	for got, want := range map[string]string{
		"jacobian": "jac_x", "ft_jacobian": "jac_x", "ft_jacobian_jacrev": "jac_x",
		"ft_jac_weight": "jac_weight", "ft_jac_bias": "jac_bias",
		"jacfwd_taller": "jac_taller", "jacrev_taller": "jac_taller",
		"jacfwd_wider": "jac_wider", "jacrev_wider": "jac_wider",
		"hess_api": "hess", "hess_fwdfwd": "hess", "hess_revrev": "hess",
		"batch_jacobian0": "batch_jac", "batch_jacobian1": "batch_jac", "batch_hess": "batch_hess",
		"result": "hvp", "result_hvp_revrev": "hvp",
	} {
		reftest.Close(t, got, r[got], ref[want], rtol, atol)
	}
	if len(r) != 17 {
		t.Errorf("run returned %d quantities, the test checks 17", len(r))
	}
}

// BenchmarkTutorial times the tutorial's transform cells as run computes
// them (the transforms made in the loop, as there), on run's inputs, made
// beforehand, in float64: the Jacobian of predict in x by Vmap of a VJP and
// by Jacrev, and in (weight, bias) by JacrevArgs3 (D = 16); Jacfwd and
// Jacrev on a taller (4→32) and a wider (32→4) layer; the Hessian in x
// three ways (Hessian3At, Jacfwd of Jacfwd, Jacrev of Jacrev; 12→4); the
// batch Jacobian by Vmap of Jacrev and by the summed output, and the batch
// Hessian (a batch of 5 of 7→6); the HVP of sum(sin(x))
// forward-over-reverse and reverse-over-reverse (x of 32). The row-by-row
// loop of VJPs, the tutorial's baseline, is left out.
// testdata/time_torch.py times the same cells with functorch.
func BenchmarkTutorial(b *testing.B) {
	type layer struct{ weight, bias, x *peel.Tensor }
	newLayer := func(seed float64, din, dout int, batch ...int) layer {
		return layer{synth.Data(seed, dout, din), synth.Data(seed+1, dout), synth.Data(seed+2, append(batch, din)...)}
	}
	const D = 16
	square := layer{synth.Data(1, D, D), synth.Data(2, D), synth.Data(3, D)}
	unitVectors := peel.Eye(peel.Float64, D)
	taller, wider, hess := newLayer(4, 4, 32), newLayer(7, 32, 4), newLayer(10, 12, 4)
	batch := newLayer(13, 7, 6, 5)
	f := func(x *peel.Tensor) *peel.Tensor { return x.Sin().Sum() }
	x, tangent := synth.Data(16, 32), synth.Data(17, 32)
	predictWithOutputSummed := func(weight, bias, x *peel.Tensor) *peel.Tensor { return predict(weight, bias, x).Sum(0) }
	for b.Loop() {
		_, vjpFn := transforms.VJP(func(x *peel.Tensor) *peel.Tensor { return predict(square.weight, square.bias, x) }, square.x)
		transforms.Vmap(vjpFn)(unitVectors)
		transforms.Jacrev3At[*peel.Tensor](predict, 2)(square.weight, square.bias, square.x)
		transforms.JacrevArgs3(predict, transforms.Argnums(0, 1))(square.weight, square.bias, square.x)
		for _, l := range []layer{taller, wider} {
			transforms.Jacfwd3At[*peel.Tensor](predict, 2)(l.weight, l.bias, l.x)
			transforms.Jacrev3At[*peel.Tensor](predict, 2)(l.weight, l.bias, l.x)
		}
		hessian := transforms.Hessian3At(predict, 2)
		hessian(hess.weight, hess.bias, hess.x)
		transforms.Jacfwd3At[*peel.Tensor](transforms.Jacfwd3At[*peel.Tensor](predict, 2), 2)(hess.weight, hess.bias, hess.x)
		transforms.Jacrev3At[*peel.Tensor](transforms.Jacrev3At[*peel.Tensor](predict, 2), 2)(hess.weight, hess.bias, hess.x)
		inDims := transforms.InAxes(transforms.NoAxis, transforms.NoAxis, 0)
		transforms.Vmap3(transforms.Jacrev3At[*peel.Tensor](predict, 2), inDims)(batch.weight, batch.bias, batch.x)
		peel.MoveAxis(transforms.Jacrev3At[*peel.Tensor](predictWithOutputSummed, 2)(batch.weight, batch.bias, batch.x), 1, 0)
		transforms.Vmap3(hessian, inDims)(batch.weight, batch.bias, batch.x)
		hvp(f, x, tangent)
		hvpRevrev(f, x, tangent)
	}
}
