package peel_test

// ExampleTaste is the README's "A taste", kept compiling and running by
// TestREADMETaste, which checks that the README shows this body.

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

func Example_taste() {
	type MLP struct{ L1, L2 nn.LinearParams }

	predict := func(p MLP, x *peel.Tensor) *peel.Tensor { return nn.Linear(p.L2, nn.Linear(p.L1, x).ReLU()) }
	loss := func(p MLP, x, y *peel.Tensor) *peel.Tensor { return nn.CrossEntropy(predict(p, x), y) }

	ks := peel.SplitKeys(peel.Key(0), 2)
	params := MLP{nn.InitLinear(ks[0], peel.Float32, 64, 32), nn.InitLinear(ks[1], peel.Float32, 32, 10)}
	x, y := peel.Normal(peel.Key(1), peel.Float32, 128, 64), peel.RandInt(peel.Key(2), 0, 10, 128)

	// Per-sample gradients: Vmap over the batch of Grad of a one-sample loss.
	perSample := transforms.Vmap3(transforms.Grad3(loss), transforms.InAxes(transforms.NoAxis, 0, 0))(params, x, y)

	// A compiled Adam step: a Go function of the same signature, several results as a tuple.
	opt, state := optim.Start(params, optim.Adam, 1e-3)
	step := transforms.Compile4(func(p MLP, s optim.State, x, y *peel.Tensor) tree.Tuple3[MLP, optim.State, *peel.Tensor] {
		l, g := transforms.ValueAndGrad3(loss)(p, x, y)
		u, s := opt.Update(g, s, p)
		return tree.Pack3(optim.ApplyUpdates(p, u), s, l)
	})
	params, state, l := step(params, state, x, y).Unpack()

	// The Hessian of u(params, x) in x, composed as in JAX: jacfwd(jacrev(u, argnums=1), argnums=1).
	u := func(p MLP, x *peel.Tensor) *peel.Tensor { return predict(p, x).Tanh().Sum() }
	hess := transforms.Jacfwd2At[*peel.Tensor](transforms.Jacrev2At[*peel.Tensor](u, 1), 1)(params, peel.Select(x, 0, 0))
	fmt.Println(perSample.L1.W.Shape(), l.Shape(), hess.Shape())
	// Output:
	// [128 64 32] [] [64 64]
}
