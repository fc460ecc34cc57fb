package optim_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"pgregory.net/rapid"
)

// ravel concatenates the leaves of a list of tensors.
func ravel(ts []*peel.Tensor) []float64 {
	var out []float64
	for _, t := range ts {
		out = append(out, t.Float64s()...)
	}
	return out
}

// unravelLike splits x into tensors of the shapes of like.
func unravelLike(x []float64, like []*peel.Tensor) []*peel.Tensor {
	out := make([]*peel.Tensor, len(like))
	off := 0
	for i, l := range like {
		n := l.Size()
		out[i] = peel.FromFloat64s(append([]float64(nil), x[off:off+n]...), l.Shape()...)
		off += n
	}
	return out
}

// Property: for random hyperparameters, leaf shapes, parameters and
// gradient sequences, every optimizer's updates equal its float64
// reference's to 1e-12 relative.
func TestRapidOptimizersAgainstReference(t *testing.T) {
	type tensors = []*peel.Tensor
	rapid.Check(t, func(rt *rapid.T) {
		nLeaves := rapid.IntRange(1, 4).Draw(rt, "leaves")
		var params tensors
		for i := range nLeaves {
			shape := rapid.SliceOfN(rapid.IntRange(1, 3), 0, 2).Draw(rt, fmt.Sprintf("shape%d", i))
			n := 1
			for _, d := range shape {
				n *= d
			}
			vals := rapid.SliceOfN(rapid.Float64Range(-2, 2), n, n).Draw(rt, fmt.Sprintf("params%d", i))
			params = append(params, peel.FromFloat64s(vals, shape...))
		}
		lr := rapid.Float64Range(1e-4, 0.5).Draw(rt, "lr")
		b1 := rapid.Float64Range(0, 0.99).Draw(rt, "b1")
		b2 := rapid.Float64Range(0.5, 0.9999).Draw(rt, "b2")
		eps := rapid.Float64Range(1e-10, 0.1).Draw(rt, "eps")
		wd := rapid.Float64Range(0, 0.5).Draw(rt, "wd")
		mom := rapid.Float64Range(0, 1).Draw(rt, "momentum")
		nesterov := rapid.Bool().Draw(rt, "nesterov")
		sgdOpts := []optim.Option{optim.Momentum(mom)}
		if nesterov {
			sgdOpts = append(sgdOpts, optim.Nesterov())
		}
		cases := []struct {
			opt optim.Transformation[tensors]
			ref reference
		}{
			{optim.SGD[tensors](lr, sgdOpts...), refSGD(constLR(lr), mom, nesterov)},
			{optim.Adam[tensors](lr, optim.Betas(b1, b2), optim.Eps(eps)), refAdam(constLR(lr), b1, b2, eps, 0, 0)},
			{optim.AdamW[tensors](lr, optim.Betas(b1, b2), optim.Eps(eps), optim.WeightDecay(wd)), refAdam(constLR(lr), b1, b2, eps, 0, wd)},
			{optim.RMSProp[tensors](lr, optim.Decay(b2), optim.Eps(eps)), refRMSProp(constLR(lr), b2, eps, false, 0, false)},
			{optim.Adagrad[tensors](lr, optim.InitialAccumulator(wd), optim.Eps(eps)), refAdagrad(constLR(lr), wd, eps)},
			{optim.Lion[tensors](lr, optim.Betas(b1, b2), optim.WeightDecay(wd)), refLion(constLR(lr), b1, b2, wd)},
		}
		steps := rapid.IntRange(1, 4).Draw(rt, "steps")
		grads := make([][]float64, steps)
		for k := range grads {
			grads[k] = rapid.SliceOfN(rapid.Float64Range(-3, 3), len(ravel(params)), len(ravel(params))).Draw(rt, fmt.Sprintf("grads%d", k))
		}
		for ci, c := range cases {
			p, x := params, ravel(params)
			s := c.opt.Init(p)
			for k, g := range grads {
				var u tensors
				u, s = c.opt.Update(unravelLike(g, params), s, p)
				p = optim.ApplyUpdates(p, u)
				c.ref(x, g, k+1)
				got := ravel(p)
				for i := range x {
					if d := math.Abs(got[i] - x[i]); !(d <= 1e-12*(1+math.Abs(x[i]))) {
						rt.Fatalf("optimizer %d, step %d: x[%d] = %.17g, reference %.17g", ci, k+1, i, got[i], x[i])
					}
				}
			}
		}
	})
}
