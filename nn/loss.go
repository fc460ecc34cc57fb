package nn

import (
	"math"
	"slices"

	"github.com/peel-ml/peel"
)

// Reduction says how a loss reduces its per-element (or per-sample)
// values.
type Reduction int

// The reductions.
const (
	// ReduceMean averages (the default, torch's "mean"). The mean over
	// no elements is NaN.
	ReduceMean Reduction = iota
	// ReduceSum sums (0 over no elements).
	ReduceSum
	// ReduceNone returns the unreduced values.
	ReduceNone
	// ReduceBatchMean sums and divides by the size of the first axis
	// (torch's "batchmean", the mathematically right reduction of
	// KLDiv); for a rank-0 loss it is the sum.
	ReduceBatchMean
)

// A LossOption configures a loss.
type LossOption func(*lossConfig)

type lossConfig struct {
	reduction Reduction
	smoothing float64
	logTarget bool
}

// Reduce sets the reduction of a loss (ReduceMean by default).
func Reduce(r Reduction) LossOption { return func(c *lossConfig) { c.reduction = r } }

// LabelSmoothing sets the label smoothing of CrossEntropy: the target
// distribution t becomes (1-eps)·t + eps/C over the C classes, as torch's
// label_smoothing (and optax's smooth_labels); the default is 0, no
// smoothing. eps must lie in [0, 1].
func LabelSmoothing(eps float64) LossOption { return func(c *lossConfig) { c.smoothing = eps } }

// LogTarget says that KLDiv's target is given as log-probabilities
// (torch's log_target=True).
func LogTarget() LossOption { return func(c *lossConfig) { c.logTarget = true } }

// lossOptions applies opts and validates them for op.
func lossOptions(op string, opts []LossOption) lossConfig {
	var c lossConfig
	for _, o := range opts {
		if o == nil {
			fail(op, "nil LossOption")
		}
		o(&c)
	}
	if c.reduction < ReduceMean || c.reduction > ReduceBatchMean {
		fail(op, "invalid reduction %d", c.reduction)
	}
	if !(c.smoothing >= 0 && c.smoothing <= 1) {
		fail(op, "label smoothing %v is outside [0, 1]", c.smoothing)
	}
	return c
}

// reduce applies the reduction r to the per-element losses l.
func reduce(l *peel.Tensor, r Reduction) *peel.Tensor {
	switch r {
	case ReduceSum:
		return peel.Sum(l)
	case ReduceNone:
		return l
	case ReduceBatchMean:
		if l.Rank() == 0 {
			return l
		}
		return peel.Div(peel.Sum(l), float64(l.Shape()[0]))
	}
	return peel.Mean(l)
}

// pair checks the prediction and target of an elementwise loss: both
// float, of equal shapes.
func pair(op string, pred, target *peel.Tensor) {
	needFloat(op, "prediction", pred)
	needFloat(op, "target", target)
	if !slices.Equal(pred.Shape(), target.Shape()) {
		fail(op, "prediction %v and target %v differ in shape", pred.TypeString(), target.TypeString())
	}
}

// MSE returns the mean squared error of pred against target, (pred -
// target)² reduced (torch's mse_loss). pred and target must be float
// tensors of the same shape (no broadcasting: torch's silent broadcast of
// a [N] target against [N, 1] predictions is a classic bug); mixed
// dtypes promote. NaN inputs give NaN. It panics with a *peel.Error if
// an operand is nil or not float, the shapes differ, or an option is
// invalid.
func MSE(pred, target *peel.Tensor, opts ...LossOption) *peel.Tensor {
	const op = "nn.MSE"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	pair(op, pred, target)
	return reduce(peel.Square(peel.Sub(pred, target)), c.reduction)
}

// L1 returns the mean absolute error of pred against target, |pred -
// target| reduced (torch's l1_loss). Its derivative at pred = target is
// 0. It treats shapes and dtypes and panics as MSE does.
func L1(pred, target *peel.Tensor, opts ...LossOption) *peel.Tensor {
	const op = "nn.L1"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	pair(op, pred, target)
	return reduce(peel.Abs(peel.Sub(pred, target)), c.reduction)
}

// Huber returns the Huber loss of pred against target with threshold
// delta (torch's huber_loss): for d = pred - target, ½d² where |d| <
// delta and delta·(|d| - ½delta) elsewhere (the two agree at |d| =
// delta), reduced. It treats shapes and dtypes as MSE does and panics
// as MSE does, and if delta is not positive and finite.
func Huber(pred, target *peel.Tensor, delta float64, opts ...LossOption) *peel.Tensor {
	const op = "nn.Huber"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	pair(op, pred, target)
	if !(delta > 0) || math.IsInf(delta, 0) {
		fail(op, "delta %v is not positive and finite", delta)
	}
	d := peel.Sub(pred, target)
	a := peel.Abs(d)
	quad := peel.Mul(peel.Square(d), 0.5)
	lin := peel.Mul(peel.Sub(a, 0.5*delta), delta)
	return reduce(peel.Where(peel.Less(a, delta), quad, lin), c.reduction)
}

// classTargets checks the targets of CrossEntropy and NLL against the
// scores x [..., C]: i64 class indices of shape x.shape[:-1], or (when
// probs is allowed) float probabilities of x's shape. It reports whether
// the targets are indices.
func classTargets(op string, x, target *peel.Tensor, probs bool) bool {
	needFloat(op, "input", x)
	need(op, "target", target)
	if x.Rank() == 0 {
		fail(op, "input %v has no class axis", x.TypeString())
	}
	lead := x.Shape()[:x.Rank()-1]
	switch d := target.DType(); {
	case d == peel.Int64:
		if !slices.Equal(target.Shape(), lead) {
			fail(op, "class indices %v do not have the input's shape %v without its class axis", target.TypeString(), x.TypeString())
		}
		return true
	case probs && (d == peel.Float32 || d == peel.Float64):
		if !slices.Equal(target.Shape(), x.Shape()) {
			fail(op, "target probabilities %v and input %v differ in shape", target.TypeString(), x.TypeString())
		}
		return false
	case probs:
		fail(op, "target has dtype %v; want i64 class indices or float probabilities", d)
	default:
		fail(op, "target has dtype %v; want i64 class indices", d)
	}
	return false
}

// picked returns x[..., idx[...]] for x [..., C] and i64 idx [...].
func picked(x, idx *peel.Tensor) *peel.Tensor {
	a := x.Rank() - 1
	return peel.Squeeze(peel.TakeAlongAxis(x, peel.Unsqueeze(idx, a), a), a)
}

// CrossEntropy returns the cross-entropy of the logits [..., C] (classes
// on the last axis, as optax; torch puts them on axis 1) against target:
// either i64 class indices of shape [...] (torch's cross_entropy with
// integer targets) or float probabilities of the logits' shape (torch's
// with probability targets, optax's softmax_cross_entropy). The
// per-sample loss -Σ_c t_c·log_softmax(logits)_c, with t the one-hot of
// the index or the given probabilities, is computed stably from
// peel.LogSoftmax and reduced over the samples. LabelSmoothing(eps) replaces
// t by (1-eps)·t + eps/C. Class indices are checked as peel.TakeAlongAxis
// checks them (a concrete index outside [-C, C) panics; negative indices
// count from the end; there is no ignore_index). NaN logits give NaN.
// It panics with a *peel.Error if an operand is nil, the logits are not
// float or rank 0, the target has another dtype or shape, or an option
// is invalid.
func CrossEntropy(logits, target *peel.Tensor, opts ...LossOption) *peel.Tensor {
	const op = "nn.CrossEntropy"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	indices := classTargets(op, logits, target, true)
	a := logits.Rank() - 1
	n := logits.Shape()[a]
	lp := peel.LogSoftmax(logits, a)
	var l *peel.Tensor
	if indices {
		l = peel.Neg(picked(lp, target))
		if c.smoothing > 0 {
			// -(1-eps)·lp[y] - eps/C·Σ lp
			l = peel.Sub(peel.Mul(l, 1-c.smoothing), peel.Mul(peel.Sum(lp, a), c.smoothing/float64(n)))
		}
	} else {
		t := target
		if c.smoothing > 0 {
			t = peel.Add(peel.Mul(t, 1-c.smoothing), c.smoothing/float64(n))
		}
		l = peel.Neg(peel.Sum(peel.Mul(t, lp), a))
	}
	return reduce(l, c.reduction)
}

// NLL returns the negative log-likelihood of i64 class indices target
// [...] under log-probabilities logProbs [..., C] (classes last; torch's
// nll_loss has them on axis 1): -logProbs[..., target], reduced. It
// expects log-probabilities (peel.LogSoftmax's output) and does not check
// them. It panics with a *peel.Error if an operand is nil, logProbs is
// not float or rank 0, target is not i64 of shape logProbs.shape[:-1],
// a concrete index lies outside [-C, C), or an option is invalid
// (LabelSmoothing is CrossEntropy's only).
func NLL(logProbs, target *peel.Tensor, opts ...LossOption) *peel.Tensor {
	const op = "nn.NLL"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	if c.smoothing != 0 {
		fail(op, "LabelSmoothing applies to CrossEntropy only")
	}
	classTargets(op, logProbs, target, false)
	return reduce(peel.Neg(picked(logProbs, target)), c.reduction)
}

// BinaryCrossEntropyWithLogits returns the binary cross-entropy of
// logits x against targets y in [0, 1] (torch's
// binary_cross_entropy_with_logits, optax's sigmoid_binary_cross_entropy):
// -y·log σ(x) - (1-y)·log(1-σ(x)), computed stably as softplus(x) - x·y,
// so large |x| neither overflows nor loses the derivative σ(x) - y. It
// treats shapes and dtypes and panics as MSE does; targets outside
// [0, 1] are not checked.
func BinaryCrossEntropyWithLogits(logits, target *peel.Tensor, opts ...LossOption) *peel.Tensor {
	const op = "nn.BinaryCrossEntropyWithLogits"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	pair(op, logits, target)
	return reduce(peel.Sub(peel.Softplus(logits), peel.Mul(logits, target)), c.reduction)
}

// KLDiv returns torch's kl_div(input, target): the Kullback–Leibler
// divergence KL(target ‖ q) where input holds log q (log-probabilities,
// as torch: the input is in log space, the target is not unless
// LogTarget). Pointwise it is target·(log target - input), with 0 where
// target is 0 (torch's xlogy; the derivative there is 0 too), and NaN
// where target is negative; with LogTarget it is exp(target)·(target -
// input). The reduction is over all elements: ReduceMean (the default,
// as torch) divides by the number of elements, which is not the
// divergence; ReduceBatchMean divides the sum by the batch size (axis 0)
// and ReduceSum gives the divergence of one distribution. It treats
// shapes and dtypes and panics as MSE does.
func KLDiv(input, target *peel.Tensor, opts ...LossOption) *peel.Tensor {
	const op = "nn.KLDiv"
	defer peel.Annotate(op)
	c := lossOptions(op, opts)
	if c.smoothing != 0 {
		fail(op, "LabelSmoothing applies to CrossEntropy only")
	}
	pair(op, input, target)
	var l *peel.Tensor
	if c.logTarget {
		l = peel.Mul(peel.Exp(target), peel.Sub(target, input))
	} else {
		zero := peel.Equal(target, 0.0)
		safe := peel.Where(zero, 1.0, target)
		l = peel.Where(zero, 0.0, peel.Mul(target, peel.Sub(peel.Log(safe), input)))
	}
	return reduce(l, c.reduction)
}
