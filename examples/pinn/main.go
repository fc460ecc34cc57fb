// Command pinn ports adam_poisson_2d.py, the Adam baseline of "Achieving
// High Accuracy with PINNs via Energy Natural Gradient Descent" (Müller and
// Zeinhofer, ICML 2023), a JAX script (github.com/MariusZeinhofer/
// Natural-Gradient-PINNs-ICML23, commit 40202250a1cff81a494d906786e28e724738cca6),
// to peel: a physics-informed neural network for the Poisson equation
// -Δu = f on the unit square with u = 0 on its boundary, whose exact
// solution is u*(x, y) = sin(πx)·sin(πy). The network's Laplacian is the
// trace of its Hessian in x, Jacfwd of Jacrev (JAX's hessian, which the
// script's laplace calls), vmapped over the collocation points; Adam
// (package optim) minimizes the residual and boundary losses, one compiled
// step per iteration.
//
// The script takes its model, grids and integrators from its own package
// ngrad; they are written out here: init_params and mlp (a [2, 32, 1] tanh
// MLP with normal weights and biases scaled by 0.1, here from peel's PRNG),
// the grid points of Square(1.) and SquareBoundary(1.), and
// DeterministicIntegrator (the mean over the points times the domain's
// measure). Sizes differ so that it runs in under a second: the grids have
// 16 points per unit length (the script's 30; 100 for the errors, the
// script's 200) and Adam runs 2000 steps at a learning rate of 1e-2 (200000
// steps at 1e-3), so the schedule's decay, which begins at step 15000,
// never starts.
//
//	go run ./examples/pinn
package main

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Params are the MLP's layers.
type Params = []nn.LinearParams

// initParams draws every weight and bias from a normal distribution scaled
// by 0.1 (ngrad's init_params).
func initParams(layerSizes []int, key *peel.Tensor) Params {
	keys, scaled := peel.SplitKeys(key, len(layerSizes)), nn.Normal(0.1)
	var params Params
	for i := range len(layerSizes) - 1 {
		params = append(params, nn.InitLinear(keys[i], peel.Float64,
			layerSizes[i], layerSizes[i+1], nn.WeightInit(scaled), nn.BiasInit(scaled)))
	}
	return params
}

// model is the MLP at one point x [2], a scalar (ngrad's mlp(jnp.tanh)).
func model(params Params, x *peel.Tensor) *peel.Tensor {
	hidden := x
	for _, layer := range params[:len(params)-1] {
		hidden = nn.Linear(layer, hidden).Tanh()
	}
	return nn.Linear(params[len(params)-1], hidden).Reshape()
}

// overPoints maps a function of (params, x) over points x: in_axes (None, 0).
var overPoints = transforms.InAxes(transforms.NoAxis, 0)

var vModel = transforms.Vmap2(model, overPoints)

// squarePoints returns the inner points of an n×n grid on the unit square
// (Square(1.).deterministic_integration_points(n)).
func squarePoints(n int) *peel.Tensor {
	t := peel.Narrow(peel.Linspace(peel.Float64, 0, 1, n), 0, 1, n-2)
	grid := peel.Meshgrid("ij", t, t)
	return peel.Stack([]*peel.Tensor{grid[0].Flatten(), grid[1].Flatten()}, 1)
}

// boundaryPoints returns n-1 points on each side of the unit square
// (SquareBoundary(1.).deterministic_integration_points(n)).
func boundaryPoints(n int) *peel.Tensor {
	t := peel.Narrow(peel.Linspace(peel.Float64, 0, 1, n), 0, 0, n-1)
	zero, one, back := peel.ZerosLike(t), peel.OnesLike(t), t.Neg().Add(1)
	var sides []*peel.Tensor
	for _, xy := range [][]*peel.Tensor{{t, zero}, {one, t}, {back, one}, {zero, back}} {
		sides = append(sides, peel.Stack(xy, 1))
	}
	return peel.Concat(sides, 0)
}

// The integrators' points.
var (
	interior = squarePoints(16)
	boundary = boundaryPoints(16)
	eval     = squarePoints(100)
)

// uStar is the solution.
func uStar(x *peel.Tensor) *peel.Tensor { return peel.Prod(x.Mul(math.Pi).Sin()) }

// f is the right-hand side, -Δu*.
func f(x *peel.Tensor) *peel.Tensor { return uStar(x).Mul(2 * math.Pi * math.Pi) }

// hessian is the model's Hessian in x, [2, 2]; laplace is its trace.
var hessian = transforms.Jacfwd2At[*peel.Tensor](transforms.Jacrev2At[*peel.Tensor](model, 1), 1)

func laplace(params Params, x *peel.Tensor) *peel.Tensor { return peel.Trace(hessian(params, x)) }

func residual(params Params, x *peel.Tensor) *peel.Tensor {
	return laplace(params, x).Add(f(x)).Square()
}

var vResidual = transforms.Vmap2(residual, overPoints)

// The losses integrate over the square (measure 1) and its boundary (measure 4).
func interiorLoss(params Params) *peel.Tensor { return vResidual(params, interior).Mean() }

func boundaryLoss(params Params) *peel.Tensor { return vModel(params, boundary).Square().Mean().Mul(4) }

func loss(params Params) *peel.Tensor { return interiorLoss(params).Add(boundaryLoss(params)) }

// errorFn is the model's error at x; vError and vErrorAbsGrad map it and
// the norm of its gradient over points.
func errorFn(params Params, x *peel.Tensor) *peel.Tensor { return model(params, x).Sub(uStar(x)) }

var vError = transforms.Vmap2(errorFn, overPoints)

var vErrorAbsGrad = transforms.Vmap2(func(params Params, x *peel.Tensor) *peel.Tensor {
	return transforms.Grad2At[*peel.Tensor](errorFn, 1)(params, x).Square().Sum().Sqrt()
}, overPoints)

// l2Norm is the L2 norm of f(params, ·) over the square, on the eval grid.
func l2Norm(f func(Params, *peel.Tensor) *peel.Tensor, params Params) *peel.Tensor {
	return f(params, eval).Square().Mean().Sqrt()
}

// exponentialDecay is the script's schedule at this port's initial rate:
// from step 15000 on, the rate falls by 0.1 every 10000 steps, to 1e-7.
var exponentialDecay = optim.ExponentialDecay(1e-2, 10000, 0.1, optim.TransitionBegin(15000), optim.EndValue(1e-7))

var optimizer = optim.Adam[Params](exponentialDecay)

// trainStep is one Adam step; it returns the new params and optimizer
// state, and the loss before the step.
func trainStep(params Params, optState optim.State) tree.Tuple3[Params, optim.State, *peel.Tensor] {
	value, grads := transforms.ValueAndGrad(loss)(params)
	updates, optState := optimizer.Update(grads, optState, params)
	return tree.Pack3(optim.ApplyUpdates(params, updates), optState, value)
}

// train runs the compiled training step from init_params with seed 0; it
// returns the trained params and the loss of every step.
func train(iterations int) (Params, []float64) {
	params := initParams([]int{2, 32, 1}, peel.Key(0))
	optState := optimizer.Init(params)
	step := transforms.Compile2(trainStep)
	var losses []float64
	for iteration := range iterations {
		var value *peel.Tensor
		params, optState, value = step(params, optState).Unpack()
		losses = append(losses, value.Item())
		if iteration%250 == 0 {
			l2Error := l2Norm(vError, params)
			h1Error := l2Error.Add(l2Norm(vErrorAbsGrad, params))
			fmt.Printf("Adam Iteration: %d with loss: %.4g with error L2: %.3g and error H1: %.3g.\n",
				iteration, value.Item(), l2Error.Item(), h1Error.Item())
		}
	}
	return params, losses
}

func main() {
	params, losses := train(2000)
	fmt.Printf("final loss %.3g, error L2 %.3g (of ‖u*‖ = 0.5)\n", losses[len(losses)-1], l2Norm(vError, params).Item())
}
