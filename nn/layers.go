package nn

import (
	"math"
	"slices"

	"github.com/peel-ml/peel"
)

// A LayerOption configures a layer's Init.
type LayerOption func(*layerConfig)

type layerConfig struct {
	weight, bias Initializer
	noBias       bool
	torch        bool
	groups       int    // InitConv2D's channel groups; 0 is 1
	kernel       [2]int // InitConv2D's kernel height and width, when KernelSize set them
}

// Groups splits a convolution's channels into n groups (InitConv2D;
// torch's groups=n): each output channel sees in/n input channels. The
// default is 1. Pass peel.ConvGroups(n) to Conv2D too.
func Groups(n int) LayerOption { return func(c *layerConfig) { c.groups = n } }

// KernelSize sets a convolution's kernel to h×w (InitConv2D), for a
// kernel that is not square; torch's kernel_size=(h, w).
func KernelSize(h, w int) LayerOption { return func(c *layerConfig) { c.kernel = [2]int{h, w} } }

// WeightInit sets the initializer of a layer's weight. The default is
// each Init's own: LecunNormal for InitLinear and InitConv2D (flax's),
// the standard normal for InitEmbedding (torch's).
func WeightInit(init Initializer) LayerOption { return func(c *layerConfig) { c.weight = init } }

// BiasInit sets the initializer of a layer's bias (Zeros by default).
func BiasInit(init Initializer) LayerOption { return func(c *layerConfig) { c.bias = init } }

// NoBias makes Init leave the bias nil: the layer has none.
func NoBias() LayerOption { return func(c *layerConfig) { c.noBias = true } }

// TorchInit makes Init draw the params as torch's nn.Linear and
// nn.Conv2d do by default, so a port starts from the same distribution
// (for the same numbers, load torch's tensors): the weight by
// kaiming_uniform_ with a = √5, which is uniform in ±1/√fan_in, and the
// bias uniform in ±1/√fan_in too, fan_in being the inputs of one output
// unit (in for Linear, in/groups·kh·kw for Conv2D). Layouts differ:
// InitLinear's W is [in, out], the transpose of torch's weight [out,
// in]; InitConv2D's is OIHW, as torch's. WeightInit and BiasInit given
// after TorchInit override it.
func TorchInit() LayerOption {
	return func(c *layerConfig) { c.torch, c.weight, c.bias = true, nil, nil }
}

// torchInit fills in TorchInit's initializers for a layer of the given
// fan-in and weight axes, where no later option replaced them.
func (c *layerConfig) torchInit(fanIn int, axes FanAxes) {
	if !c.torch {
		return
	}
	if c.weight == nil {
		c.weight = VarianceScaling(1.0/3, FanIn, DistUniform, axes)
	}
	if c.bias == nil {
		b := 1 / math.Sqrt(float64(max(fanIn, 1)))
		c.bias = Uniform(-b, b)
	}
}

// layerOptions applies opts over the defaults weight and Zeros.
func layerOptions(op string, weight Initializer, opts []LayerOption) layerConfig {
	c := layerConfig{weight: weight, bias: Zeros}
	for _, o := range opts {
		if o == nil {
			fail(op, "nil LayerOption")
		}
		o(&c)
	}
	if !c.torch && (c.weight == nil || c.bias == nil) {
		fail(op, "nil Initializer")
	}
	if op != "nn.InitConv2D" && (c.groups != 0 || c.kernel != [2]int{}) {
		fail(op, "Groups and KernelSize are options of nn.InitConv2D")
	}
	return c
}

// keys2 splits key into the weight's and the bias's keys.
func keys2(key *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
	ks := peel.SplitKeys(key, 2)
	return ks[0], ks[1]
}

// LinearParams are the params of a Linear layer: W [in, out] (flax's
// layout, y = x·W; torch's Linear stores the transpose) and B [out], or
// nil for a layer without bias. The transforms reject nil leaves, so to
// differentiate a bias-free layer pass W alone (or a tree without the
// nil) to Grad.
type LinearParams struct{ W, B *peel.Tensor }

// InitLinear returns the params of a Linear layer from in to out
// features: W drawn with LecunNormal (flax's default; WeightInit
// changes it), B zeros (BiasInit, NoBias). It panics with a *peel.Error
// if a size is negative, dt is not float, the key is invalid, or an
// option is nil.
func InitLinear(key *peel.Tensor, dt peel.DType, in, out int, opts ...LayerOption) LinearParams {
	const op = "nn.InitLinear"
	defer peel.Annotate(op)
	c := layerOptions(op, LecunNormal(), opts)
	if in < 0 || out < 0 {
		fail(op, "negative size (in %d, out %d)", in, out)
	}
	c.torchInit(in, DenseAxes)
	kw, kb := keys2(key)
	p := LinearParams{W: c.weight(kw, dt, in, out)}
	if !c.noBias {
		p.B = c.bias(kb, dt, out)
	}
	return p
}

// Linear returns x·W + B for x [..., in]: [..., out]. It panics with a
// *peel.Error if x or W is nil, W is not rank 2, B is not [out], or x's
// last axis is not in.
func Linear(p LinearParams, x *peel.Tensor) *peel.Tensor {
	const op = "nn.Linear"
	defer peel.Annotate(op)
	need(op, "input", x)
	need(op, "weight W", p.W)
	if p.W.Rank() != 2 {
		fail(op, "weight %v is not rank 2 [in, out]", p.W.TypeString())
	}
	if x.Rank() == 0 || x.Shape()[x.Rank()-1] != p.W.Shape()[0] {
		fail(op, "input %v does not end in the weight's %d input features (weight %v)", x.TypeString(), p.W.Shape()[0], p.W.TypeString())
	}
	if p.B != nil && (p.B.Rank() != 1 || p.B.Shape()[0] != p.W.Shape()[1]) {
		fail(op, "bias %v is not [%d]", p.B.TypeString(), p.W.Shape()[1])
	}
	return peel.Linear(x, p.W, p.B)
}

// Conv2DParams are the params of a Conv2D layer: W [O, I/groups, KH, KW]
// (OIHW, as peel.Conv2D and torch) and B [O], or nil (see LinearParams
// on nil leaves).
type Conv2DParams struct{ W, B *peel.Tensor }

// InitConv2D returns the params of a Conv2D layer from in to out channels
// with a kernel×kernel kernel, as torch's nn.Conv2d(in, out, kernel):
// W drawn with LecunNormal(ConvAxes) (fan-in = in/groups·kh·kw), B
// zeros. Options: Groups(n) (default 1), KernelSize(h, w) for a kernel
// that is not square, and InitLinear's (WeightInit, BiasInit, NoBias,
// TorchInit). Strides, padding and dilation are Conv2D's options, given
// where the layer runs. It panics with a *peel.Error if a size is
// negative, groups does not divide in and out, dt is not float, the key
// is invalid, or an option is nil.
func InitConv2D(key *peel.Tensor, dt peel.DType, in, out, kernel int, opts ...LayerOption) Conv2DParams {
	const op = "nn.InitConv2D"
	defer peel.Annotate(op)
	c := layerOptions(op, LecunNormal(ConvAxes), opts)
	groups, kh, kw := c.groups, kernel, kernel
	if groups == 0 {
		groups = 1
	}
	if c.kernel != [2]int{} {
		kh, kw = c.kernel[0], c.kernel[1]
	}
	if in < 0 || out < 0 || kh < 0 || kw < 0 || groups < 0 {
		fail(op, "negative size (in %d, out %d, kernel %d×%d, groups %d)", in, out, kh, kw, groups)
	}
	if in%groups != 0 || out%groups != 0 {
		fail(op, "groups %d do not divide the channels (in %d, out %d)", groups, in, out)
	}
	c.torchInit(in/groups*kh*kw, ConvAxes)
	kW, kB := keys2(key)
	p := Conv2DParams{W: c.weight(kW, dt, out, in/groups, kh, kw)}
	if !c.noBias {
		p.B = c.bias(kB, dt, out)
	}
	return p
}

// Conv2D returns peel.Conv2D(x, W, opts...) + B for x [N, C, H, W]
// (NCHW): [N, O, H', W']; opts are peel's ConvStrides, ConvPadding,
// ConvDilation, ConvGroups…. It panics with a *peel.Error as peel.Conv2D
// does, and if W is nil or B is not [O].
func Conv2D(p Conv2DParams, x *peel.Tensor, opts ...peel.ConvOption) *peel.Tensor {
	const op = "nn.Conv2D"
	defer peel.Annotate(op)
	need(op, "input", x)
	need(op, "weight W", p.W)
	y := peel.Conv2D(x, p.W, opts...)
	if p.B != nil {
		o := p.W.Shape()[0]
		if p.B.Rank() != 1 || p.B.Shape()[0] != o {
			fail(op, "bias %v is not [%d]", p.B.TypeString(), o)
		}
		y = peel.Add(y, peel.Reshape(p.B, 1, o, 1, 1))
	}
	return y
}

// EmbeddingParams are the params of an Embedding: Table [num, dim].
type EmbeddingParams struct{ Table *peel.Tensor }

// InitEmbedding returns an embedding table of num rows of dim features
// drawn from the standard normal (torch's default; WeightInit changes
// it). It panics with a *peel.Error if a size is negative, dt is not
// float, the key is invalid, or an option is nil.
func InitEmbedding(key *peel.Tensor, dt peel.DType, num, dim int, opts ...LayerOption) EmbeddingParams {
	const op = "nn.InitEmbedding"
	defer peel.Annotate(op)
	c := layerOptions(op, Normal(1), opts)
	if num < 0 || dim < 0 {
		fail(op, "negative size (num %d, dim %d)", num, dim)
	}
	return EmbeddingParams{Table: c.weight(key, dt, num, dim)}
}

// Embedding returns the rows of the table at the i64 indices idx [...]:
// [..., dim] (peel.Take along axis 0; negative indices count from the
// end). Its gradient with respect to the table adds up the cotangents of
// repeated indices. It panics with a *peel.Error if the table is nil or
// not rank 2, or as peel.Take does (idx not i64, a concrete index out of
// range).
func Embedding(p EmbeddingParams, idx *peel.Tensor) *peel.Tensor {
	const op = "nn.Embedding"
	defer peel.Annotate(op)
	need(op, "table", p.Table)
	need(op, "indices", idx)
	if p.Table.Rank() != 2 {
		fail(op, "table %v is not rank 2 [num, dim]", p.Table.TypeString())
	}
	return peel.Take(p.Table, idx, 0)
}

// A NormOption configures LayerNorm, RMSNorm and BatchNorm.
type NormOption func(*normConfig)

type normConfig struct {
	eps, momentum float64
	// sum, for BatchNorm across devices, sums a statistic over them.
	sum func(*peel.Tensor) *peel.Tensor
}

// SyncStats makes BatchNorm's training statistics those of the whole
// batch across data-parallel devices (torch's SyncBatchNorm): sum adds a
// per-device value over the devices, such as
//
//	func(t *peel.Tensor) *peel.Tensor { return dist.Psum(t, "data") }
//
// inside a ShardMap or a Vmap with an axis name. The counts, the sums
// and, around the global mean, the squared deviations are summed, so the
// mean and variance are the whole batch's (devices may hold batches of
// different sizes), and the gradient flows through the sums as through
// one device's statistics. nn does not name package dist: the caller
// says which axis.
func SyncStats(sum func(*peel.Tensor) *peel.Tensor) NormOption {
	return func(c *normConfig) { c.sum = sum }
}

// Eps sets the ε added to the variance (1e-5 by default for LayerNorm
// and BatchNorm, as torch; 1e-6 for RMSNorm, as flax).
func Eps(eps float64) NormOption { return func(c *normConfig) { c.eps = eps } }

// Momentum sets BatchNorm's momentum m (0.1 by default, as torch): a
// running statistic r becomes (1-m)·r + m·s for the batch's s. Note that
// flax's momentum is torch's 1-m.
func Momentum(m float64) NormOption { return func(c *normConfig) { c.momentum = m } }

func normOptions(op string, eps float64, opts []NormOption) normConfig {
	c := normConfig{eps: eps, momentum: 0.1}
	for _, o := range opts {
		if o == nil {
			fail(op, "nil NormOption")
		}
		o(&c)
	}
	if !(c.eps >= 0) || math.IsInf(c.eps, 0) {
		fail(op, "eps %v is negative or not finite", c.eps)
	}
	if !(c.momentum >= 0 && c.momentum <= 1) {
		fail(op, "momentum %v is outside [0, 1]", c.momentum)
	}
	return c
}

// LayerNormParams are the params of LayerNorm: Scale and Bias of the
// normalized shape (the trailing dimensions of the input), or nil for
// none (see LinearParams on nil leaves).
type LayerNormParams struct{ Scale, Bias *peel.Tensor }

// InitLayerNorm returns LayerNorm params over the normalized shape (a
// single feature dimension usually): Scale ones, Bias zeros. It panics
// with a *peel.Error if shape is empty or has a negative dimension, or
// dt is not float.
func InitLayerNorm(dt peel.DType, shape ...int) LayerNormParams {
	const op = "nn.InitLayerNorm"
	defer peel.Annotate(op)
	if len(shape) == 0 {
		fail(op, "empty normalized shape")
	}
	return LayerNormParams{Scale: Ones(nil, dt, shape...), Bias: Zeros(nil, dt, shape...)}
}

// normShape returns the normalized shape of a LayerNorm or RMSNorm,
// checking that scale and bias agree with it and with x's trailing
// dimensions.
func normShape(op string, x, scale, bias *peel.Tensor) int {
	needFloat(op, "input", x)
	var ref *peel.Tensor
	for _, t := range []*peel.Tensor{scale, bias} {
		if t == nil {
			continue
		}
		if ref != nil && !slices.Equal(ref.Shape(), t.Shape()) {
			fail(op, "scale %v and bias %v differ in shape", scale.TypeString(), bias.TypeString())
		}
		ref = t
	}
	if ref == nil {
		fail(op, "neither a scale nor a bias gives the normalized shape")
	}
	k := ref.Rank()
	if k == 0 || k > x.Rank() || !slices.Equal(x.Shape()[x.Rank()-k:], ref.Shape()) {
		fail(op, "input %v does not end in the normalized shape %v", x.TypeString(), ref.Shape())
	}
	return k
}

// LayerNorm normalizes x over its trailing dimensions (those of Scale and
// Bias; usually the last): (x - mean)/sqrt(var + eps)·Scale + Bias with
// the mean and population variance over those dimensions (torch's
// layer_norm, flax's LayerNorm). A nil Scale or Bias is skipped, but one
// of them must give the normalized shape. Option: Eps (1e-5). It panics
// with a *peel.Error if x is not float, the shapes do not fit, or an
// option is invalid.
func LayerNorm(p LayerNormParams, x *peel.Tensor, opts ...NormOption) *peel.Tensor {
	const op = "nn.LayerNorm"
	defer peel.Annotate(op)
	c := normOptions(op, 1e-5, opts)
	k := normShape(op, x, p.Scale, p.Bias)
	y := peel.Standardize(x, k, c.eps)
	if p.Scale != nil {
		y = peel.Mul(y, p.Scale)
	}
	if p.Bias != nil {
		y = peel.Add(y, p.Bias)
	}
	return y
}

// RMSNormParams are the params of RMSNorm: Scale of the normalized shape.
type RMSNormParams struct{ Scale *peel.Tensor }

// InitRMSNorm returns RMSNorm params over the normalized shape: Scale
// ones. It panics as InitLayerNorm does.
func InitRMSNorm(dt peel.DType, shape ...int) RMSNormParams {
	const op = "nn.InitRMSNorm"
	defer peel.Annotate(op)
	if len(shape) == 0 {
		fail(op, "empty normalized shape")
	}
	return RMSNormParams{Scale: Ones(nil, dt, shape...)}
}

// RMSNorm normalizes x by its root mean square over the trailing
// dimensions of Scale: x/sqrt(mean(x²) + eps)·Scale (torch's rms_norm,
// flax's RMSNorm). Option: Eps (1e-6). It panics with a *peel.Error if x
// is not float, Scale is nil, the shapes do not fit, or an option is
// invalid.
func RMSNorm(p RMSNormParams, x *peel.Tensor, opts ...NormOption) *peel.Tensor {
	const op = "nn.RMSNorm"
	defer peel.Annotate(op)
	c := normOptions(op, 1e-6, opts)
	need(op, "scale", p.Scale)
	k := normShape(op, x, p.Scale, nil)
	return peel.Mul(peel.RMSNormalize(x, k, c.eps), p.Scale)
}

// BatchNormParams are the learned params of BatchNorm: Scale and Bias
// [C].
type BatchNormParams struct{ Scale, Bias *peel.Tensor }

// BatchNormState is BatchNorm's running state: the running Mean and Var
// [C]. It is not learned; BatchNorm in training mode returns the next
// state.
type BatchNormState struct{ Mean, Var *peel.Tensor }

// InitBatchNorm returns BatchNorm params for c channels (Scale ones,
// Bias zeros) and its initial state (Mean zeros, Var ones), as torch. It
// panics with a *peel.Error if c is negative or dt is not float.
func InitBatchNorm(dt peel.DType, c int) (BatchNormParams, BatchNormState) {
	const op = "nn.InitBatchNorm"
	defer peel.Annotate(op)
	if c < 0 {
		fail(op, "negative number of channels %d", c)
	}
	return BatchNormParams{Scale: Ones(nil, dt, c), Bias: Zeros(nil, dt, c)},
		BatchNormState{Mean: Zeros(nil, dt, c), Var: Ones(nil, dt, c)}
}

// BatchNorm normalizes x [N, C, ...] per channel (axis 1, as torch's
// BatchNorm1d/2d/3d): (x - mean)/sqrt(var + eps)·Scale + Bias. In
// training mode (train) mean and var are the batch's, over every axis
// but 1, var the population variance, and it returns the next running
// state (1-m)·running + m·batch, with the unbiased variance (n/(n-1),
// n the number of values per channel) for Var, as torch; the running
// update does not carry gradients (the batch statistics are
// StopGradient-ed there, not in the output). In evaluation mode it
// normalizes with the running state and returns it unchanged. Options:
// Eps (1e-5), Momentum (0.1), SyncStats (statistics over data-parallel
// devices: SyncBatchNorm). Under Vmap the batch statistics are each
// mapped example's. It panics with a *peel.Error if x is not float or
// of rank below 2, a param or state tensor is nil or not [C], training
// has fewer than 2 values per channel, or an option is invalid.
func BatchNorm(p BatchNormParams, s BatchNormState, x *peel.Tensor, train bool, opts ...NormOption) (*peel.Tensor, BatchNormState) {
	const op = "nn.BatchNorm"
	defer peel.Annotate(op)
	c := normOptions(op, 1e-5, opts)
	needFloat(op, "input", x)
	if x.Rank() < 2 {
		fail(op, "input %v has no channel axis (want [N, C, ...])", x.TypeString())
	}
	ch := x.Shape()[1]
	for _, t := range []struct {
		what string
		t    *peel.Tensor
	}{{"Scale", p.Scale}, {"Bias", p.Bias}, {"running Mean", s.Mean}, {"running Var", s.Var}} {
		need(op, t.what, t.t)
		if t.t.Rank() != 1 || t.t.Shape()[0] != ch {
			fail(op, "%s %v is not [%d] for input %v", t.what, t.t.TypeString(), ch, x.TypeString())
		}
	}
	// bc reshapes a [C] tensor to broadcast against x.
	bshape := make([]int, x.Rank())
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[1] = ch
	bc := func(t *peel.Tensor) *peel.Tensor { return peel.Reshape(t, bshape...) }
	var mean, variance *peel.Tensor
	next := s
	if train {
		axes := []int{0}
		n := x.Shape()[0]
		for i := 2; i < x.Rank(); i++ {
			axes = append(axes, i)
			n *= x.Shape()[i]
		}
		var unbiased *peel.Tensor
		if c.sum == nil {
			if n < 2 {
				fail(op, "input %v has %d value per channel; training needs at least 2", x.TypeString(), n)
			}
			mean = peel.Mean(x, axes...)
			variance = peel.Mean(peel.Square(peel.Sub(x, bc(mean))), axes...)
			unbiased = peel.Mul(variance, float64(n)/float64(n-1))
		} else {
			// The values per channel over every device, then the sums.
			count := c.sum(peel.Full(x.DType(), float64(n)))
			mean = peel.Div(c.sum(peel.Sum(x, axes...)), count)
			variance = peel.Div(c.sum(peel.Sum(peel.Square(peel.Sub(x, bc(mean))), axes...)), count)
			// n/(n-1) for the running variance: +Inf for one value per
			// channel over every device.
			unbiased = peel.Mul(variance, peel.Div(count, peel.Sub(count, 1.0)))
		}
		m := c.momentum
		bm := peel.StopGradient(mean)
		bv := peel.StopGradient(unbiased)
		next = BatchNormState{
			Mean: peel.Add(peel.Mul(s.Mean, 1-m), peel.Mul(bm, m)),
			Var:  peel.Add(peel.Mul(s.Var, 1-m), peel.Mul(bv, m)),
		}
	} else {
		mean, variance = s.Mean, s.Var
	}
	y := peel.Mul(peel.Sub(x, bc(mean)), bc(peel.Rsqrt(peel.Add(variance, c.eps))))
	return peel.Add(peel.Mul(y, bc(p.Scale)), bc(p.Bias)), next
}

// Dropout zeroes each element of x with probability rate and scales the
// others by 1/(1-rate) (inverted dropout, torch's dropout and flax's
// Dropout), drawing the mask with peel.Bernoulli(key, 1-rate). It
// returns x itself when train is false or rate is 0 (the key is then
// not used and may be nil), and zeros when rate is 1. It panics with a
// *peel.Error if x is nil or not float, rate is outside [0, 1], or the
// key is invalid.
func Dropout(key, x *peel.Tensor, rate float64, train bool) *peel.Tensor {
	const op = "nn.Dropout"
	defer peel.Annotate(op)
	needFloat(op, "input", x)
	if !(rate >= 0 && rate <= 1) {
		fail(op, "rate %v is outside [0, 1]", rate)
	}
	if !train || rate == 0 {
		return x
	}
	if rate == 1 {
		return peel.ZerosLike(x)
	}
	keep := peel.Bernoulli(key, 1-rate, x.Shape()...)
	return peel.Where(keep, peel.Div(x, 1-rate), 0.0)
}
