// Command gp_regression ports JAX's example "Gaussian process regression"
// (jax-ml/jax, examples/gaussian_process_regression.py, at commit
// f090074d865a4f98fba32bd88460373438cb4f24, its last version before the
// example was removed) to peel: the hyperparameters of a squared-exponential
// kernel (amplitude, noise and lengthscale, each the softplus of a free
// parameter) are fitted by gradient descent on the negative log marginal
// likelihood, computed from a Cholesky factor, and the fitted GP's posterior
// mean and covariance are evaluated at test points.
//
// Differences: the data are deterministic stand-ins (package synth) for the
// example's random.uniform and random.normal draws, the same 7 points on
// [1, 5] with y = sin(x) plus noise of size 0.1, so that testdata/
// gen_reference.py computes the same numbers with PyTorch; the example's
// hand-written optimizer (momentum 0.9 over gradients scaled by a running
// mean square, no bias correction) is optim.Adam at the same learning rate;
// K⁻¹y is linalg.CholeskySolve (jax.scipy.linalg.cho_solve), the example's
// two triangular solves.
//
//	go run ./examples/gp_regression
package main

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/linalg"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
)

const numpts = 7

var eye = peel.Eye(peel.Float64, numpts)

// Params are the covariance hyperparameters to be learned, each [1, 1].
type Params struct{ Amplitude, Noise, Lengthscale *peel.Tensor }

// covMap returns the matrix a[i, j] = covFunc(xs[i], xs2[j]); xs2 nil means xs.
func covMap(covFunc func(x1, x2 *peel.Tensor) *peel.Tensor, xs, xs2 *peel.Tensor) *peel.Tensor {
	if xs2 == nil {
		xs2 = xs
	}
	return transforms.Vmap(func(x *peel.Tensor) *peel.Tensor {
		return transforms.Vmap(func(y *peel.Tensor) *peel.Tensor { return covFunc(x, y) })(xs2)
	})(xs)
}

func expQuadratic(x1, x2 *peel.Tensor) *peel.Tensor {
	return x1.Sub(x2).Square().Sum().Neg().Exp()
}

// gp returns the negative log marginal likelihood of x, y [numpts, 1] when
// xtest is nil, and otherwise the posterior mean [m, 1] and covariance
// [m, m] at xtest [m, 1].
func gp(params Params, x, y, xtest *peel.Tensor) (mu, variance *peel.Tensor) {
	noise := peel.Softplus(params.Noise)
	amp := peel.Softplus(params.Amplitude)
	ls := peel.Softplus(params.Lengthscale)
	ymean := y.Mean()
	y = y.Sub(ymean)
	x = x.Div(ls)
	trainCov := covMap(expQuadratic, x, nil).Mul(amp).Add(eye.Mul(noise.Add(1e-6)))
	chol := linalg.Cholesky(trainCov)
	kinvy := linalg.CholeskySolve(chol, y)
	if xtest == nil {
		log2pi := math.Log(2 * 3.1415)
		ml := y.T().MatMul(kinvy).Mul(-0.5).Sub(peel.Diagonal(chol).Log().Sum()).Sub(numpts / 2. * log2pi).Sum()
		ml = ml.Sub(amp.Log().Neg().Sub(amp.Log().Square().Mul(0.5)).Sub(0.5 * math.Log(2*3.1415)).Sum()) // lognormal prior
		return ml.Neg(), nil
	}
	xtest = xtest.Div(ls)
	crossCov := covMap(expQuadratic, x, xtest).Mul(amp)
	mu = crossCov.T().MatMul(kinvy).Add(ymean)
	v := linalg.TriangularSolve(chol, crossCov, linalg.Lower)
	variance = covMap(expQuadratic, xtest, nil).Mul(amp).Sub(v.T().MatMul(v))
	return mu, variance
}

func marginalLikelihood(params Params, x, y *peel.Tensor) *peel.Tensor {
	ml, _ := gp(params, x, y, nil)
	return ml
}

var gradFun = transforms.Compile3(transforms.Grad3(marginalLikelihood))

// data returns the training points x, y [numpts, 1] and the test points [200, 1].
func data() (x, y, xtest *peel.Tensor) {
	x = synth.Data(1, numpts, 1).Add(1).Mul(2).Add(1)
	y = x.Sin().Add(synth.Data(2, numpts, 1).Mul(0.1))
	xtest = peel.Linspace(peel.Float64, 0, 6, 200).Reshape(-1, 1)
	return x, y, xtest
}

// train fits the hyperparameters with steps Adam steps from the example's
// initial values.
func train(steps int) Params {
	x, y, _ := data()
	params := Params{
		Amplitude:   peel.Zeros(peel.Float64, 1, 1),
		Noise:       peel.Zeros(peel.Float64, 1, 1).Sub(5),
		Lengthscale: peel.Zeros(peel.Float64, 1, 1),
	}
	opt := optim.Adam[Params](0.01)
	optState := opt.Init(params)
	for i := range steps {
		updates, next := opt.Update(gradFun(params, x, y), optState, params)
		params, optState = optim.ApplyUpdates(params, updates), next
		if i%50 == 0 {
			fmt.Printf("Step: %d, neg marginal likelihood: %f\n", i, marginalLikelihood(params, x, y).Item())
		}
	}
	return params
}

func main() {
	params := train(1000)
	fmt.Printf("amplitude %.4f, noise %.4g, lengthscale %.4f (softplus)\n", peel.Softplus(params.Amplitude).Item(),
		peel.Softplus(params.Noise).Item(), peel.Softplus(params.Lengthscale).Item())
	x, y, xtest := data()
	mu, variance := gp(params, x, y, xtest)
	std := peel.Diagonal(variance).Sqrt()
	fmt.Println("posterior mean at x = 0, 3, 6:", peel.Index(mu, 0), peel.Index(mu, 100), peel.Index(mu, 199))
	fmt.Println("posterior std at x = 0, 3, 6: ", peel.Index(std, 0), peel.Index(std, 100), peel.Index(std, 199))
}
