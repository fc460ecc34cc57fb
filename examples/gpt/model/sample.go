package model

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
)

// KV is one block's cache of the keys and values of the positions seen
// so far, each [B, Heads, Context, Width/Heads]; the rows past the
// current position hold zeros and are masked.
type KV struct{ K, V *peel.Tensor }

// EmptyCache returns the zero cache of c for a batch of b sequences.
func EmptyCache(c Config, b int) []KV {
	cache := make([]KV, c.Layers)
	for l := range cache {
		shape := []int{b, c.Heads, c.Context, c.Width / c.Heads}
		cache[l] = KV{peel.Zeros(c.DType, shape...), peel.Zeros(c.DType, shape...)}
	}
	return cache
}

// Decode runs the tokens idx [B, S] at positions pos, pos+1, …,
// pos+S-1 (pos an i64 scalar, which may be traced) through the model,
// attending to the cached positions before pos and to each other
// causally, and returns the logits of the last position [B, Vocab] and
// the cache with the S new positions written. pos+S must not exceed
// c.Context (DynamicUpdateSlice would clamp the write). Without dropout:
// this is inference.
func Decode(c Config, p Params, idx, pos *peel.Tensor, cache []KV) (*peel.Tensor, []KV) {
	s := idx.Shape()[1]
	zero := peel.Zeros(peel.Int64)
	x := peel.Add(nn.Embedding(nn.EmbeddingParams{Table: p.WTE}, idx),
		peel.DynamicSlice(p.WPE, []*peel.Tensor{pos, zero}, []int{s, c.Width}))
	// Query i (at pos+i) may attend to key j when j ≤ pos+i.
	qpos := peel.Add(peel.Arange(peel.Int64, 0, float64(s), 1), pos)
	kpos := peel.Arange(peel.Int64, 0, float64(c.Context), 1)
	bias := maskBias(peel.LessEqual(peel.Reshape(kpos, 1, c.Context), peel.Reshape(qpos, s, 1)), c.DType)
	at := []*peel.Tensor{zero, zero, pos, zero}
	next := make([]KV, len(cache))
	for l, b := range p.Blocks {
		q, k, v := heads(nn.Linear(b.Attn.QKV, nn.LayerNorm(b.LN1, x)), c.Heads)
		next[l] = KV{peel.DynamicUpdateSlice(cache[l].K, k, at), peel.DynamicUpdateSlice(cache[l].V, v, at)}
		y := attend(q, next[l].K, next[l].V, bias, nil, 0)
		x = peel.Add(x, nn.Linear(b.Attn.Proj, merge(y)))
		x = peel.Add(x, mlp(b.MLP, nn.LayerNorm(b.LN2, x)))
	}
	last := peel.Select(nn.LayerNorm(p.LNF, x), 1, s-1)
	return peel.MatMul(last, peel.Transpose(p.WTE)), next
}

// Sampling says how a token is drawn from the logits.
type Sampling struct {
	Temperature float64 // divides the logits; 0 takes the most likely token
	TopK        int     // draw among the TopK most likely tokens only (0: all)
}

// Pick draws one token per row of logits [B, Vocab] with key: the
// i64 tokens [B].
func (s Sampling) Pick(key, logits *peel.Tensor) *peel.Tensor {
	if s.Temperature <= 0 {
		return peel.ArgMax(logits, -1)
	}
	logits = peel.Div(logits, s.Temperature)
	if v := logits.Shape()[1]; s.TopK > 0 && s.TopK < v {
		top, _ := peel.TopK(logits, s.TopK)
		kth := peel.Narrow(top, 1, s.TopK-1, 1)
		logits = peel.Where(peel.Less(logits, kth), maskValue(logits.DType()), logits)
	}
	return peel.Categorical(key, logits, -1)
}

// Generate returns n tokens [B, n] that follow the prompts [B, P]
// (int64): one forward pass over the prompt fills the cache, then a
// transforms.Scan of n-1 steps decodes one token at a time from the
// cache, never re-running the context. P+n-1 must not exceed c.Context.
// Every token is drawn with s from its own key of SplitKeysStacked(key, n).
// Generate is a function of tensors only, so it compiles and exports.
// It panics with a *peel.Error when the prompt and n do not fit the
// context.
func Generate(c Config, p Params, prompt, key *peel.Tensor, n int, s Sampling) *peel.Tensor {
	b, pl := prompt.Shape()[0], prompt.Shape()[1]
	if n < 1 || pl < 1 || pl+n-1 > c.Context {
		fail("a prompt of %d tokens and %d new ones do not fit the context of %d", pl, n, c.Context)
	}
	keys := peel.SplitKeysStacked(key, n)
	logits, cache := Decode(c, p, prompt, peel.Zeros(peel.Int64), EmptyCache(c, b))
	first := s.Pick(peel.Select(keys, 0, 0), logits)
	if n == 1 {
		return peel.Reshape(first, b, 1)
	}
	type carry struct {
		Cache []KV
		Tok   *peel.Tensor // [B], the latest token
		Pos   *peel.Tensor // its position
	}
	init := carry{Cache: cache, Tok: first, Pos: peel.Full(peel.Int64, float64(pl))}
	_, toks := transforms.Scan(func(cr carry, k *peel.Tensor) (carry, *peel.Tensor) {
		logits, cache := Decode(c, p, peel.Reshape(cr.Tok, b, 1), cr.Pos, cr.Cache)
		t := s.Pick(k, logits)
		return carry{Cache: cache, Tok: t, Pos: peel.Add(cr.Pos, 1)}, t
	}, init, peel.Narrow(keys, 0, 1, n-1))
	// toks is [n-1, B]
	return peel.Concat([]*peel.Tensor{peel.Reshape(first, b, 1), peel.Transpose(toks)}, 1)
}

// NaiveGenerate is Generate without a cache: every token re-runs the
// whole sequence so far through Forward (nanoGPT's generate). It gives
// the same tokens as Generate (the same keys, the same picks), and is
// its test oracle.
func NaiveGenerate(c Config, p Params, prompt, key *peel.Tensor, n int, s Sampling) *peel.Tensor {
	keys := peel.SplitKeysStacked(key, n)
	seq := prompt
	b, pl := prompt.Shape()[0], prompt.Shape()[1]
	if n < 1 || pl < 1 || pl+n-1 > c.Context {
		fail("a prompt of %d tokens and %d new ones do not fit the context of %d", pl, n, c.Context)
	}
	for i := range n {
		logits := Forward(c, p, seq, Options{})
		last := peel.Select(logits, 1, seq.Shape()[1]-1)
		t := s.Pick(peel.Select(keys, 0, i), last)
		seq = peel.Concat([]*peel.Tensor{seq, peel.Reshape(t, b, 1)}, 1)
	}
	return peel.Narrow(seq, 1, pl, n)
}
