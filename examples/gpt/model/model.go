package model

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
)

// Config is the shape of a GPT: nanoGPT's GPTConfig, plus the dtype.
type Config struct {
	Vocab   int        // tokens in the vocabulary
	Context int        // the longest sequence (block_size): rows of the position table
	Layers  int        // transformer blocks
	Heads   int        // attention heads; must divide Width
	Width   int        // the embedding width (n_embd)
	Dropout float64    // dropout rate on embeddings, attention weights and residual branches while training
	DType   peel.DType // Float32 or Float64
}

// Small is the default configuration: small enough for a test or a CI
// run (about 0.1 M parameters with a vocabulary of 100).
func Small(vocab int) Config {
	return Config{Vocab: vocab, Context: 64, Layers: 2, Heads: 4, Width: 64, Dropout: 0.1, DType: peel.Float32}
}

// Preset is a real run: nanoGPT's shakespeare_char configuration (6
// layers, 6 heads, 384 wide, context 256, dropout 0.2; about 10.7 M
// parameters).
func Preset(vocab int) Config {
	return Config{Vocab: vocab, Context: 256, Layers: 6, Heads: 6, Width: 384, Dropout: 0.2, DType: peel.Float32}
}

// Check panics with a *peel.Error when c is not a valid configuration.
func (c Config) Check() {
	switch {
	case c.Vocab < 1 || c.Context < 1 || c.Layers < 0 || c.Heads < 1 || c.Width < 1:
		fail("a size is below 1: %+v", c)
	case c.Width%c.Heads != 0:
		fail("%d heads do not divide the width %d", c.Heads, c.Width)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		fail("dropout %v is outside [0, 1)", c.Dropout)
	case c.DType != peel.Float32 && c.DType != peel.Float64:
		fail("dtype %v is not f32 or f64", c.DType)
	}
}

func fail(format string, args ...any) {
	panic(&peel.Error{Ops: []string{"gpt"}, Msg: fmt.Sprintf(format, args...)})
}

// Attention is a block's causal self-attention: the fused query, key and
// value projection (Width → 3·Width, nanoGPT's c_attn) and the output
// projection (c_proj).
type Attention struct{ QKV, Proj nn.LinearParams }

// MLP is a block's feed-forward network: Width → 4·Width, GELU, → Width.
type MLP struct{ FC, Proj nn.LinearParams }

// Block is a pre-LN transformer block.
type Block struct {
	LN1  nn.LayerNormParams
	Attn Attention
	LN2  nn.LayerNormParams
	MLP  MLP
}

// Params are a GPT's parameters. The language-model head is tied to the
// token embedding: the logits are x·WTEᵀ.
type Params struct {
	WTE    *peel.Tensor // token embedding [Vocab, Width]
	WPE    *peel.Tensor // position embedding [Context, Width]
	Blocks []Block
	LNF    nn.LayerNormParams // the final LayerNorm
}

// Init returns the parameters of a GPT of configuration c drawn from key
// as nanoGPT draws them: every Linear weight and both embeddings normal
// with standard deviation 0.02, the residual projections (Attn.Proj and
// MLP.Proj) 0.02/√(2·Layers), biases zero, LayerNorms scale one and bias
// zero. Linear weights are [in, out] (nn.Linear's layout: torch's
// weight transposed).
func Init(key *peel.Tensor, c Config) Params {
	c.Check()
	ks := peel.SplitKeys(key, 2+c.Layers)
	normal := func(k *peel.Tensor, std float64, shape ...int) *peel.Tensor {
		return nn.Normal(std)(k, c.DType, shape...)
	}
	proj := 0.02 / math.Sqrt(2*float64(max(c.Layers, 1)))
	linear := func(k *peel.Tensor, in, out int, std float64) nn.LinearParams {
		return nn.LinearParams{W: normal(k, std, in, out), B: peel.Zeros(c.DType, out)}
	}
	p := Params{
		WTE: normal(ks[0], 0.02, c.Vocab, c.Width),
		WPE: normal(ks[1], 0.02, c.Context, c.Width),
		LNF: nn.InitLayerNorm(c.DType, c.Width),
	}
	w := c.Width
	for l := range c.Layers {
		bk := peel.SplitKeys(ks[2+l], 4)
		p.Blocks = append(p.Blocks, Block{
			LN1:  nn.InitLayerNorm(c.DType, w),
			Attn: Attention{QKV: linear(bk[0], w, 3*w, 0.02), Proj: linear(bk[1], w, w, proj)},
			LN2:  nn.InitLayerNorm(c.DType, w),
			MLP:  MLP{FC: linear(bk[2], w, 4*w, 0.02), Proj: linear(bk[3], 4*w, w, proj)},
		})
	}
	return p
}

// Count returns the number of parameters (the position table included;
// the head is the token table).
func (p Params) Count() int {
	n := p.WTE.Size() + p.WPE.Size() + p.LNF.Scale.Size() + p.LNF.Bias.Size()
	for _, b := range p.Blocks {
		for _, t := range []*peel.Tensor{b.LN1.Scale, b.LN1.Bias, b.LN2.Scale, b.LN2.Bias,
			b.Attn.QKV.W, b.Attn.QKV.B, b.Attn.Proj.W, b.Attn.Proj.B,
			b.MLP.FC.W, b.MLP.FC.B, b.MLP.Proj.W, b.MLP.Proj.B} {
			n += t.Size()
		}
	}
	return n
}

// Decayed says whether the parameter at tree path is weight-decayed:
// the Linear weights only, not biases, LayerNorms or the embeddings
// (minGPT's grouping: decay what multiplies in a Linear layer).
func Decayed(path string) bool {
	n := len(path)
	return n > 2 && path[n-2:] == ".W"
}

// causalMask is the bool [t, t] mask of the keys each query may attend
// to: key j for query i when j ≤ i.
func causalMask(t int) *peel.Tensor {
	i := peel.Arange(peel.Int64, 0, float64(t), 1)
	return peel.GreaterEqual(peel.Reshape(i, t, 1), peel.Reshape(i, 1, t))
}

// maskBias is the additive form of the bool mask: 0 where a key may be
// attended to, maskValue where not. Adding it masks as Where does (a
// masked logit becomes the lowest finite value, or −Inf, and its weight
// after the softmax exactly zero; the others are unchanged, x + 0 = x)
// at the cost of an addition, whose gradient passes through unchanged
// (a masked weight's gradient is zero through the softmax).
func maskBias(mask *peel.Tensor, dt peel.DType) *peel.Tensor {
	return peel.AsType(peel.Where(mask, 0.0, maskValue(dt)), dt)
}

// maskValue is the logit of a masked key: the lowest finite value, so
// its weight after the softmax is exactly zero.
func maskValue(dt peel.DType) float64 {
	if dt == peel.Float32 {
		return -math.MaxFloat32
	}
	return -math.MaxFloat64
}

// dropout is nn.Dropout, skipped when key is nil.
func dropout(key, x *peel.Tensor, rate float64) *peel.Tensor {
	if key == nil || rate == 0 {
		return x
	}
	return nn.Dropout(key, x, rate, true)
}

// heads splits x [B, T, 3·C] into the queries, keys and values, each
// [B, H, T, C/H].
func heads(x *peel.Tensor, h int) (q, k, v *peel.Tensor) {
	s := x.Shape()
	b, t, c := s[0], s[1], s[2]/3
	x = peel.Permute(peel.Reshape(x, b, t, 3, h, c/h), 2, 0, 3, 1, 4)
	return peel.Select(x, 0, 0), peel.Select(x, 0, 1), peel.Select(x, 0, 2)
}

// merge is heads' inverse for one tensor: [B, H, T, d] → [B, T, H·d].
func merge(y *peel.Tensor) *peel.Tensor {
	s := y.Shape()
	return peel.Reshape(peel.MoveAxis(y, 1, 2), s[0], s[2], s[1]*s[3])
}

// attend is softmax(q·kᵀ/√d + bias)·v with dropout of rate on the
// weights: q [B, H, Tq, d], k and v [B, H, Tk, d], bias [Tq, Tk] the
// additive mask (maskBias).
func attend(q, k, v, bias, key *peel.Tensor, rate float64) *peel.Tensor {
	d := q.Shape()[3]
	att := peel.Mul(peel.MatMul(q, peel.MoveAxis(k, -1, -2)), 1/math.Sqrt(float64(d)))
	att = peel.Add(att, bias)
	att = dropout(key, peel.Softmax(att, -1), rate)
	return peel.MatMul(att, v)
}

// blockKeys are the dropout keys of one block (all nil without dropout).
type blockKeys struct{ Attn, Resid1, Resid2 *peel.Tensor }

// mlp is the feed-forward branch: Proj(GELU(FC(x))), GELU exact (erf),
// as torch's nn.GELU().
func mlp(p MLP, x *peel.Tensor) *peel.Tensor {
	return nn.Linear(p.Proj, peel.GELU(nn.Linear(p.FC, x)))
}

// block runs one pre-LN block on x [B, T, C].
func block(c Config, p Block, x, bias *peel.Tensor, ks blockKeys) *peel.Tensor {
	q, k, v := heads(nn.Linear(p.Attn.QKV, nn.LayerNorm(p.LN1, x)), c.Heads)
	y := nn.Linear(p.Attn.Proj, merge(attend(q, k, v, bias, ks.Attn, c.Dropout)))
	x = peel.Add(x, dropout(ks.Resid1, y, c.Dropout))
	return peel.Add(x, dropout(ks.Resid2, mlp(p.MLP, nn.LayerNorm(p.LN2, x)), c.Dropout))
}

// Options of Forward and Loss.
type Options struct {
	// Key draws the dropout masks; nil trains without dropout (and is
	// how evaluation runs).
	Key *peel.Tensor
	// Remat checkpoints each block (transforms.Checkpoint with this
	// policy): its activations are recomputed in the backward pass
	// instead of kept. Nil keeps everything.
	Remat *transforms.SavePolicy
}

// blockArgs are a block's arguments as one tree (what
// transforms.Checkpoint differentiates).
type blockArgs struct {
	P    Block
	X    *peel.Tensor
	Keys []*peel.Tensor // the block's three dropout keys, or none
}

// Forward returns the logits [B, T, Vocab] of the tokens idx [B, T]
// (int64, T ≤ Context). It panics with a *peel.Error when idx does not
// fit c.
func Forward(c Config, p Params, idx *peel.Tensor, o Options) *peel.Tensor {
	x := hidden(c, p, idx, o)
	return peel.MatMul(x, peel.Transpose(p.WTE))
}

// hidden is Forward before the head: the final LayerNorm's output.
func hidden(c Config, p Params, idx *peel.Tensor, o Options) *peel.Tensor {
	if idx.Rank() != 2 || idx.DType() != peel.Int64 || idx.Shape()[1] > c.Context || idx.Shape()[1] < 1 {
		fail("tokens %s are not i64[batch, 1…%d]", idx.TypeString(), c.Context)
	}
	t := idx.Shape()[1]
	var ks []*peel.Tensor
	if o.Key != nil && c.Dropout > 0 {
		ks = peel.SplitKeys(o.Key, 1+len(p.Blocks))
	}
	key := func(i int) *peel.Tensor {
		if ks == nil {
			return nil
		}
		return ks[i]
	}
	x := peel.Add(nn.Embedding(nn.EmbeddingParams{Table: p.WTE}, idx), peel.Narrow(p.WPE, 0, 0, t))
	x = dropout(key(0), x, c.Dropout)
	bias := maskBias(causalMask(t), c.DType)
	run := func(a blockArgs) *peel.Tensor {
		var bk blockKeys
		if len(a.Keys) == 3 {
			bk = blockKeys{a.Keys[0], a.Keys[1], a.Keys[2]}
		}
		return block(c, a.P, a.X, bias, bk)
	}
	if o.Remat != nil {
		run = transforms.Checkpoint(run, *o.Remat)
	}
	for l, b := range p.Blocks {
		a := blockArgs{P: b, X: x}
		if k := key(1 + l); k != nil {
			a.Keys = peel.SplitKeys(k, 3)
		}
		x = run(a)
	}
	return nn.LayerNorm(p.LNF, x)
}

// Loss is the mean cross-entropy of predicting targets [B, T] (int64)
// from idx [B, T].
func Loss(c Config, p Params, idx, targets *peel.Tensor, o Options) *peel.Tensor {
	logits := Forward(c, p, idx, o)
	s := logits.Shape()
	return nn.CrossEntropy(peel.Reshape(logits, s[0]*s[1], s[2]), peel.Reshape(targets, s[0]*s[1]))
}
