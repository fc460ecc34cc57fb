package nn

import "github.com/peel-ml/peel"

// GroupNormParams are the params of GroupNorm: Scale and Bias [C], one
// per channel (torch's GroupNorm weight and bias, affine=True), or nil
// for none (both nil is torch's affine=False; see LinearParams on nil
// leaves).
type GroupNormParams struct{ Scale, Bias *peel.Tensor }

// InitGroupNorm returns GroupNorm params for c channels as torch's
// nn.GroupNorm(num_groups, c) initializes them: Scale ones, Bias zeros.
// The number of groups is given where the layer runs (GroupNorm's
// numGroups, as torch's F.group_norm). It panics with a *peel.Error if c
// is negative or dt is not float.
func InitGroupNorm(dt peel.DType, c int) GroupNormParams {
	const op = "nn.InitGroupNorm"
	defer peel.Annotate(op)
	if c < 0 {
		fail(op, "negative number of channels %d", c)
	}
	return GroupNormParams{Scale: Ones(nil, dt, c), Bias: Zeros(nil, dt, c)}
}

// GroupNorm normalizes x [N, C, ...] over groups of channels (torch's
// nn.GroupNorm and F.group_norm, flax's GroupNorm): the C channels are
// split into numGroups consecutive groups of C/numGroups, and each
// sample's group is normalized over its channels and all its spatial
// positions together, (x - mean)/sqrt(var + eps), with the mean and the
// population variance of that group; then each channel is scaled by
// Scale and shifted by Bias. The defaults are torch's: Eps(1e-5) (the
// option), and InitGroupNorm's Scale ones and Bias zeros. It uses no
// batch statistics, so it is the same in training and evaluation and
// under Vmap each mapped example is normalized on its own (per-sample
// gradients, where BatchNorm does not fit). numGroups = 1 normalizes
// each sample over all its features (LayerNorm over [C, ...] without
// its per-element affine), numGroups = C each channel alone (instance
// normalization). It panics with a *peel.Error if x is not float or of
// rank below 2, numGroups is below 1 or does not divide C, a non-nil
// Scale or Bias is not [C], or an option is invalid.
func GroupNorm(p GroupNormParams, x *peel.Tensor, numGroups int, opts ...NormOption) *peel.Tensor {
	const op = "nn.GroupNorm"
	defer peel.Annotate(op)
	c := normOptions(op, 1e-5, opts)
	needFloat(op, "input", x)
	if x.Rank() < 2 {
		fail(op, "input %v has no channel axis (want [N, C, ...])", x.TypeString())
	}
	shape := x.Shape()
	ch := shape[1]
	if numGroups < 1 || ch%numGroups != 0 {
		fail(op, "%d groups do not divide the %d channels of input %v", numGroups, ch, x.TypeString())
	}
	for _, t := range []struct {
		what string
		t    *peel.Tensor
	}{{"Scale", p.Scale}, {"Bias", p.Bias}} {
		if t.t != nil && (t.t.Rank() != 1 || t.t.Shape()[0] != ch) {
			fail(op, "%s %v is not [%d] for input %v", t.what, t.t.TypeString(), ch, x.TypeString())
		}
	}
	// Each sample's group is one row of [N, G, C/G·spatial].
	perGroup := ch / numGroups
	for _, d := range shape[2:] {
		perGroup *= d
	}
	g := x.Reshape(shape[0], numGroups, perGroup)
	d := g.Sub(peel.Keep(peel.Mean, g, 2))
	v := peel.Keep(peel.Mean, d.Square(), 2)
	y := d.Mul(peel.Rsqrt(v.Add(c.eps))).Reshape(shape...)
	// [C, 1, …] broadcasts a per-channel vector against [N, C, ...].
	perChannel := make([]int, len(shape)-1)
	for i := range perChannel {
		perChannel[i] = 1
	}
	perChannel[0] = ch
	if p.Scale != nil {
		y = y.Mul(p.Scale.Reshape(perChannel...))
	}
	if p.Bias != nil {
		y = y.Add(p.Bias.Reshape(perChannel...))
	}
	return y
}
