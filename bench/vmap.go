package bench

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Vmap workloads: the tiny chain under Vmap and Vmap(Grad) with a batch
// of 16 rows, and per-sample gradients of an MLP 784-128-10 (batch 64)
// with Vmap(Grad) against a loop of Grad.

const (
	tinyBatch = 16
	mlpIn     = 784
	mlpHidden = 128
	mlpOut    = 10
	mlpBatch  = 64
)

// tinyChainFn is the tiny chain on one 8-element row with fixed a, b, c.
func tinyChainFn(a, b, c *peel.Tensor) func(*peel.Tensor) *peel.Tensor {
	return func(x *peel.Tensor) *peel.Tensor {
		for i := range tinyChainOps {
			switch i % 4 {
			case 0:
				x = peel.Mul(x, a)
			case 1:
				x = peel.Add(x, b)
			case 2:
				x = peel.Tanh(x)
			case 3:
				x = peel.Sub(x, c)
			}
		}
		return x
	}
}

// tinyChainVmap is the chain vmapped over 16 rows (grad: of Σ chain per
// row), checked against the same computation row by row.
func tinyChainVmap(grad bool) Workload {
	name, doc := "tiny_chain_100_vmap", "Vmap of the 100-op chain over 16 rows of f64[8]"
	if grad {
		name, doc = "tiny_chain_100_vmap_grad", "Vmap(Grad) of the 100-op chain over 16 rows of f64[8]"
	}
	return Workload{
		Name: name, Impl: "peel", Doc: doc,
		Unit: "ns/op", Metric: perOp(tinyChainOps),
		Setup: func() (func(), func() error) {
			a := peel.FromFloat64s(randFloats(2, 8, 0.5, 1.5))
			b := peel.FromFloat64s(randFloats(3, 8, -0.5, 0.5))
			c := peel.FromFloat64s(randFloats(4, 8, -0.5, 0.5))
			x := peel.FromFloat64s(randFloats(1, tinyBatch*8, -1, 1), tinyBatch, 8)
			chain := tinyChainFn(a, b, c)
			f := chain
			if grad {
				f = transforms.Grad(func(r *peel.Tensor) *peel.Tensor { return peel.Sum(chain(r)) })
			}
			vf := transforms.Vmap(f)
			var out *peel.Tensor
			run := func() { out = vf(x) }
			check := func() error {
				for i := range tinyBatch {
					want := f(peel.Select(x, 0, i)).Float64s()
					if err := compare(peel.Select(out, 0, i).Float64s(), want, 1e-12, 1e-12); err != nil {
						return fmt.Errorf("row %d: %v", i, err)
					}
				}
				return nil
			}
			return run, check
		},
	}
}

type mlpParams struct{ W1, B1, W2, B2 *peel.Tensor }

func mlpLoss(p mlpParams, x, onehot *peel.Tensor) *peel.Tensor {
	h := peel.Tanh(peel.Add(peel.MatMul(x, p.W1), p.B1))
	logits := peel.Add(peel.MatMul(h, p.W2), p.B2)
	return peel.Neg(peel.Sum(peel.Mul(peel.LogSoftmax(logits, -1), onehot)))
}

func mlpSetup(dt peel.DType) (mlpParams, *peel.Tensor, *peel.Tensor) {
	p := mlpParams{
		W1: fromFloats(randFloats(11, mlpIn*mlpHidden, -0.05, 0.05), dt, mlpIn, mlpHidden),
		B1: fromFloats(randFloats(12, mlpHidden, -0.1, 0.1), dt, mlpHidden),
		W2: fromFloats(randFloats(13, mlpHidden*mlpOut, -0.2, 0.2), dt, mlpHidden, mlpOut),
		B2: fromFloats(randFloats(14, mlpOut, -0.1, 0.1), dt, mlpOut),
	}
	x := fromFloats(randFloats(15, mlpBatch*mlpIn, 0, 1), dt, mlpBatch, mlpIn)
	labels := make([]int64, mlpBatch)
	for i := range labels {
		labels[i] = int64(i % mlpOut)
	}
	onehot := peel.OneHot(peel.FromInt64s(labels), mlpOut, dt)
	return p, x, onehot
}

// perSampleGrads is Vmap(Grad(loss)) (or, with loop, a Go loop of Grad)
// over a batch of 64 examples; both are checked against each other.
func perSampleGrads(dt peel.DType, loop bool) Workload {
	impl := "peel"
	name := fmt.Sprintf("per_sample_grad_mlp_%v", dt)
	doc := "Vmap(Grad(loss)) of an MLP 784-128-10, batch 64"
	if loop {
		name += "_loop"
		doc = "a Go loop of Grad(loss) over the 64 examples of the same MLP"
	}
	return Workload{
		Name: name, Impl: impl, Doc: doc,
		Unit: "ms", Metric: func(ns float64) float64 { return ns / 1e6 },
		Setup: func() (func(), func() error) {
			p, x, onehot := mlpSetup(dt)
			type ex struct{ X, Y *peel.Tensor }
			grad := func(e ex) mlpParams {
				return transforms.Grad(func(p mlpParams) *peel.Tensor { return mlpLoss(p, e.X, e.Y) })(p)
			}
			vgrad := transforms.Vmap(grad)
			var w1 *peel.Tensor
			run := func() {
				if !loop {
					w1 = vgrad(ex{X: x, Y: onehot}).W1
					return
				}
				rows := make([]*peel.Tensor, mlpBatch)
				for i := range rows {
					rows[i] = grad(ex{X: peel.Select(x, 0, i), Y: peel.Select(onehot, 0, i)}).W1
				}
				w1 = peel.Stack(rows, 0)
			}
			check := func() error {
				// Two examples against an independent Grad.
				for _, i := range []int{0, mlpBatch - 1} {
					want := grad(ex{X: peel.Select(x, 0, i), Y: peel.Select(onehot, 0, i)}).W1
					if err := compare(hostFloats(peel.Select(w1, 0, i)), hostFloats(want), 1e-4, 1e-6); err != nil {
						return fmt.Errorf("example %d: %v", i, err)
					}
				}
				return nil
			}
			return run, check
		},
	}
}

func vmapWorkloads() []Workload {
	return []Workload{
		tinyChainVmap(false),
		tinyChainVmap(true),
		perSampleGrads(peel.Float32, false),
		perSampleGrads(peel.Float32, true),
		perSampleGrads(peel.Float64, false),
		perSampleGrads(peel.Float64, true),
		vmapFunctionalize(),
	}
}
