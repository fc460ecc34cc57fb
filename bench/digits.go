package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// A training epoch of examples/digits' classifier: a 64-64-10 ReLU MLP
// (f32) on a synthetic stand-in of the digits training set (1437 rows of
// 64 pixels in [0, 1], 10 classes), minibatches of 64 in a shuffled order
// (data.Batches, the last batch short: 22 of 64 and one of 29, 23 steps),
// each step one compiled function (transforms.Compile2: ValueAndGrad of
// nn.CrossEntropy, optim.Adam at 1e-2, ApplyUpdates). Every run starts
// from the same parameters and Adam state, so every run does the same
// work.
const (
	digitsRows, digitsPixels, digitsHidden, digitsClasses = 1437, 64, 64, 10
	digitsBatchSize, digitsLR                             = 64, 1e-2
	digitsSteps                                           = (digitsRows + digitsBatchSize - 1) / digitsBatchSize
)

const digitsDoc = "a training epoch of examples/digits' MLP 64-64-10 (ReLU, f32) on 1437 synthetic rows: 23 minibatches of 64 (the last 29), each a Compile2'd step (ValueAndGrad of nn.CrossEntropy, optim.Adam, ApplyUpdates)"

type digitsMLP struct{ L1, L2 nn.LinearParams }

type digitsState struct {
	Params digitsMLP
	Opt    optim.State
}

type digitsBatch struct{ X, Y *peel.Tensor }

type digitsOut struct {
	State digitsState
	Loss  *peel.Tensor
}

// digitsData is the stand-in training set: row i of class i mod 10, its
// pixels the class's prototype (uniform in 0…16) plus uniform noise in
// ±8, clipped to 0…16, divided by 16; and parameters drawn as torch's
// Linear draws them, uniform in ±1/√fan-in.
func digitsData() (p digitsMLP, x, y *peel.Tensor) {
	protos := randFloats(81, digitsClasses*digitsPixels, 0, 16)
	noise := randFloats(82, digitsRows*digitsPixels, -8, 8)
	xs := make([]float64, digitsRows*digitsPixels)
	labels := make([]int64, digitsRows)
	for i := range digitsRows {
		c := i % digitsClasses
		labels[i] = int64(c)
		for j := range digitsPixels {
			k := i*digitsPixels + j
			xs[k] = math.Min(16, math.Max(0, protos[c*digitsPixels+j]+noise[k])) / 16
		}
	}
	u := func(seed uint64, fanIn int, shape ...int) *peel.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		s := 1 / math.Sqrt(float64(fanIn))
		return fromFloats(randFloats(seed, n, -s, s), peel.Float32, shape...)
	}
	p = digitsMLP{
		L1: nn.LinearParams{W: u(83, digitsPixels, digitsPixels, digitsHidden), B: u(84, digitsPixels, digitsHidden)},
		L2: nn.LinearParams{W: u(85, digitsHidden, digitsHidden, digitsClasses), B: u(86, digitsHidden, digitsClasses)},
	}
	return p, fromFloats(xs, peel.Float32, digitsRows, digitsPixels), peel.FromInt64s(labels, digitsRows)
}

func digitsStep(opt optim.Transformation[digitsMLP]) func(digitsState, digitsBatch) digitsOut {
	return func(s digitsState, b digitsBatch) digitsOut {
		loss := func(p digitsMLP) *peel.Tensor {
			return nn.CrossEntropy(nn.Linear(p.L2, peel.ReLU(nn.Linear(p.L1, b.X))), b.Y)
		}
		l, g := transforms.ValueAndGrad(loss)(s.Params)
		u, o := opt.Update(g, s.Opt, s.Params)
		return digitsOut{digitsState{optim.ApplyUpdates(s.Params, u), o}, l}
	}
}

// digitsEpoch is the workload. Its check compares the first step with an
// eager step on the same batch, and asserts that the epoch decreased the
// loss (the last five steps' mean below the first step's) and left every
// parameter finite, and that the compiled step traced once per batch
// shape.
func digitsEpoch() Workload {
	return Workload{
		Name: "digits_mlp_epoch_f32", Impl: "peel", Doc: digitsDoc,
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			p, x, y := digitsData()
			opt := optim.Adam[digitsMLP](digitsLR)
			var stepIns transforms.Inspector
			step := transforms.Compile2(digitsStep(opt), transforms.Inspect(&stepIns))
			s0 := digitsState{p, opt.Init(p)}
			key := peel.Key(87)
			var first digitsOut
			var firstBatch digitsBatch
			var losses []*peel.Tensor
			var final digitsState
			run := func() {
				s := s0
				losses = losses[:0]
				for b := range data.Batches(key, digitsBatchSize, false, x, y) {
					out := step(s, digitsBatch{b[0], b[1]})
					if len(losses) == 0 {
						first, firstBatch = out, digitsBatch{b[0], b[1]}
					}
					s = out.State
					losses = append(losses, out.Loss)
				}
				final = s
			}
			check := func() error {
				if len(losses) != digitsSteps {
					return fmt.Errorf("%d steps, want %d", len(losses), digitsSteps)
				}
				want := digitsStep(opt)(s0, firstBatch)
				gl, wl, paths := tree.Leaves(first), tree.Leaves(want), tree.Paths(want)
				for i := range wl {
					if err := compare(hostFloats(peel.AsType(gl[i], peel.Float64)), hostFloats(peel.AsType(wl[i], peel.Float64)), 1e-5, 1e-6); err != nil {
						return fmt.Errorf("first step against eager, %s: %v", paths[i], err)
					}
				}
				l0, tail := losses[0].Item(), 0.0
				for _, l := range losses[len(losses)-5:] {
					tail += l.Item() / 5
				}
				if !(tail < l0) {
					return fmt.Errorf("loss did not decrease over the epoch: first step %v, last five %v", l0, tail)
				}
				for i, leaf := range tree.Leaves(final.Params) {
					for _, v := range hostFloats(leaf) {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							return fmt.Errorf("parameter %s not finite after the epoch", tree.Paths(final.Params)[i])
						}
					}
				}
				if st := stepIns.Stats(); st.Misses > 2 || st.Uncompiled > 0 {
					return fmt.Errorf("not compiled code: %d of %d calls traced, %d ran uncompiled (last miss: %s)",
						st.Misses, st.Calls, st.Uncompiled, st.LastMiss)
				}
				return nil
			}
			return run, check
		},
	}
}
