package nn

import (
	"math"

	"github.com/peel-ml/peel"
)

// maskValue is the logit given to masked-out positions: the lowest finite
// value of the dtype, as flax (not -Inf, so that a fully masked row gives
// a uniform distribution instead of NaN).
func maskValue(dt peel.DType) float64 {
	if dt == peel.Float32 {
		return -math.MaxFloat32
	}
	return -math.MaxFloat64
}

// ScaledDotProductAttention returns softmax(q·kᵀ/sqrt(d) + mask)·v for q
// [..., Lq, d], k [..., Lk, d] and v [..., Lk, dv] (the leading
// dimensions broadcast, as peel.MatMul's): [..., Lq, dv]. mask, when not
// nil, is a bool tensor broadcasting to [..., Lq, Lk] that is true where
// a query may attend to a key (flax's convention; torch's bool attn_mask
// is the same); masked logits are set to the dtype's lowest finite value,
// so a row with every key masked attends uniformly. It panics with a
// *peel.Error if an operand is nil or not float, the ranks are below 2,
// the feature or key sizes differ, the mask is not bool, or the shapes do
// not broadcast.
func ScaledDotProductAttention(q, k, v, mask *peel.Tensor) *peel.Tensor {
	const op = "nn.ScaledDotProductAttention"
	defer peel.Annotate(op)
	needFloat(op, "query", q)
	needFloat(op, "key", k)
	needFloat(op, "value", v)
	if q.Rank() < 2 || k.Rank() < 2 || v.Rank() < 2 {
		fail(op, "query %v, key %v and value %v must have rank ≥ 2", q.TypeString(), k.TypeString(), v.TypeString())
	}
	d := q.Shape()[q.Rank()-1]
	if k.Shape()[k.Rank()-1] != d {
		fail(op, "query %v and key %v differ in features", q.TypeString(), k.TypeString())
	}
	if k.Shape()[k.Rank()-2] != v.Shape()[v.Rank()-2] {
		fail(op, "key %v and value %v differ in length", k.TypeString(), v.TypeString())
	}
	logits := peel.MatMul(q, peel.MoveAxis(k, -1, -2))
	logits = peel.Mul(logits, 1/math.Sqrt(float64(d)))
	if mask != nil {
		if mask.DType() != peel.Bool {
			fail(op, "mask %v is not bool", mask.TypeString())
		}
		logits = peel.Where(mask, logits, maskValue(logits.DType()))
	}
	return peel.MatMul(peel.Softmax(logits, -1), v)
}

// MultiHeadAttentionParams are the params of MultiHeadAttention: the
// query, key, value and output projections.
type MultiHeadAttentionParams struct{ Query, Key, Value, Out LinearParams }

// InitMultiHeadAttention returns MultiHeadAttention params for inputs of
// dim features: four dim×dim Linear layers initialized as InitLinear does
// (with opts). It panics as InitLinear does.
func InitMultiHeadAttention(key *peel.Tensor, dt peel.DType, dim int, opts ...LayerOption) MultiHeadAttentionParams {
	const op = "nn.InitMultiHeadAttention"
	defer peel.Annotate(op)
	ks := peel.SplitKeys(key, 4)
	return MultiHeadAttentionParams{
		Query: InitLinear(ks[0], dt, dim, dim, opts...),
		Key:   InitLinear(ks[1], dt, dim, dim, opts...),
		Value: InitLinear(ks[2], dt, dim, dim, opts...),
		Out:   InitLinear(ks[3], dt, dim, dim, opts...),
	}
}

// MultiHeadAttention is multi-head attention (torch's
// MultiheadAttention, flax's MultiHeadDotProductAttention) of queries q
// [..., Lq, D] over keys k and values v [..., Lk, D] (usually [batch,
// seq, dim]; self-attention passes the same tensor three times): the
// projections q·Wq, k·Wk, v·Wv (Linear) are split into numHeads heads of
// D'/numHeads features (D' the projections' width), each head runs
// ScaledDotProductAttention with mask (bool, broadcasting to [..., heads,
// Lq, Lk]; nil for none), and the heads are concatenated and projected
// by Out: [..., Lq, out]. It panics with a *peel.Error if an operand is
// nil or not float, numHeads does not divide the projections' width, the
// shapes do not fit, or as ScaledDotProductAttention does.
func MultiHeadAttention(p MultiHeadAttentionParams, q, k, v *peel.Tensor, numHeads int, mask *peel.Tensor) *peel.Tensor {
	const op = "nn.MultiHeadAttention"
	defer peel.Annotate(op)
	needFloat(op, "query", q)
	needFloat(op, "key", k)
	needFloat(op, "value", v)
	if q.Rank() < 2 || k.Rank() < 2 || v.Rank() < 2 {
		fail(op, "query %v, key %v and value %v must have rank ≥ 2 ([..., seq, dim])", q.TypeString(), k.TypeString(), v.TypeString())
	}
	if numHeads < 1 {
		fail(op, "numHeads %d is below 1", numHeads)
	}
	qp, kp, vp := Linear(p.Query, q), Linear(p.Key, k), Linear(p.Value, v)
	heads := func(what string, x *peel.Tensor) *peel.Tensor {
		s := x.Shape()
		r := len(s)
		if s[r-1]%numHeads != 0 {
			fail(op, "%s projection %v is not divisible into %d heads", what, x.TypeString(), numHeads)
		}
		hs := append(append([]int{}, s[:r-1]...), numHeads, s[r-1]/numHeads)
		// [..., L, H, d] → [..., H, L, d]
		return peel.MoveAxis(peel.Reshape(x, hs...), -2, -3)
	}
	o := ScaledDotProductAttention(heads("query", qp), heads("key", kp), heads("value", vp), mask)
	// [..., H, Lq, d] → [..., Lq, H·d]
	o = peel.MoveAxis(o, -3, -2)
	s := o.Shape()
	r := len(s)
	o = peel.Reshape(o, append(append([]int{}, s[:r-2]...), s[r-2]*s[r-1])...)
	return Linear(p.Out, o)
}
