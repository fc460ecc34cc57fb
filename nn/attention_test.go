package nn

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// mhaRef is multi-head attention of one sequence by loops: q [lq, d],
// k, v [lk, d], mask [lq, lk] (nil for none), h heads.
func mhaRef(p MultiHeadAttentionParams, q, k, v []float64, lq, lk, d, h int, mask []bool) []float64 {
	proj := func(lp LinearParams, x []float64, l int) []float64 {
		return linearRef(x, lp.W.Float64s(), lp.B.Float64s(), l, d, d)
	}
	Q, K, V := proj(p.Query, q, lq), proj(p.Key, k, lk), proj(p.Value, v, lk)
	dh := d / h
	if mask == nil {
		mask = make([]bool, lq*lk)
		for i := range mask {
			mask[i] = true
		}
	}
	// Each head is scaled dot-product attention of its columns.
	cols := func(x []float64, l, hi int) []float64 {
		out := make([]float64, 0, l*dh)
		for i := range l {
			out = append(out, x[i*d+hi*dh:i*d+(hi+1)*dh]...)
		}
		return out
	}
	o := make([]float64, lq*d)
	for hi := range h {
		oh := sdpaRef(cols(Q, lq, hi), cols(K, lk, hi), cols(V, lk, hi), lq, lk, dh, dh, mask)
		for i := range lq {
			copy(o[i*d+hi*dh:i*d+(hi+1)*dh], oh[i*dh:(i+1)*dh])
		}
	}
	return linearRef(o, p.Out.W.Float64s(), p.Out.B.Float64s(), lq, d, d)
}

func TestMultiHeadAttention(t *testing.T) {
	const b, lq, lk, d, h = 2, 3, 4, 6, 2
	p := InitMultiHeadAttention(peel.Key(8), peel.Float64, d, BiasInit(Normal(0.5)))
	q := tensor(70, b, lq, d)
	kv := tensor(71, b, lk, d)
	// A causal-like mask with one fully masked row (row 0 of the second
	// head pattern is left open; row 2 masks everything).
	mv := []bool{
		true, false, false, false,
		true, true, false, true,
		false, false, false, false,
	}
	mask := peel.FromBools(mv, lq, lk)
	got := MultiHeadAttention(p, q, kv, kv, h, mask)
	var want []float64
	for bi := range b {
		qb := peel.Select(q, 0, bi).Float64s()
		kb := peel.Select(kv, 0, bi).Float64s()
		want = append(want, mhaRef(p, qb, kb, kb, lq, lk, d, h, mv)...)
	}
	assertClose(t, "MultiHeadAttention", got, want, []int{b, lq, d}, 1e-11, 1e-13)
	// The masked row in every float dtype: float32 params and inputs
	// against the loops in float64 on the same (rounded) values.
	for _, dt := range floatDTypes {
		pd := InitMultiHeadAttention(peel.Key(8), dt, d, BiasInit(Normal(0.5)))
		pf := tree.Map(func(x *peel.Tensor) *peel.Tensor { return peel.AsType(x, peel.Float64) }, pd)
		qd, kvd := peel.AsType(q, dt), peel.AsType(kv, dt)
		var wantD []float64
		for bi := range b {
			qb := peel.AsType(peel.Select(qd, 0, bi), peel.Float64).Float64s()
			kb := peel.AsType(peel.Select(kvd, 0, bi), peel.Float64).Float64s()
			wantD = append(wantD, mhaRef(pf, qb, kb, kb, lq, lk, d, h, mv)...)
		}
		gotD := MultiHeadAttention(pd, qd, kvd, kvd, h, mask)
		if gotD.DType() != dt {
			t.Fatalf("%v: result dtype %v", dt, gotD.DType())
		}
		assertClose(t, fmt.Sprintf("MultiHeadAttention %v", dt), gotD, wantD, []int{b, lq, d}, 1e3*epsOf(dt), 1e3*epsOf(dt))
	}
	// No mask; self-attention.
	var wantSelf []float64
	for bi := range b {
		qb := peel.Select(q, 0, bi).Float64s()
		wantSelf = append(wantSelf, mhaRef(p, qb, qb, qb, lq, lq, d, h, nil)...)
	}
	assertClose(t, "MultiHeadAttention self", MultiHeadAttention(p, q, q, q, h, nil), wantSelf, []int{b, lq, d}, 1e-11, 1e-13)
	// One head is ScaledDotProductAttention between the projections.
	p1 := MultiHeadAttention(p, q, kv, kv, 1, nil)
	sd := Linear(p.Out, ScaledDotProductAttention(Linear(p.Query, q), Linear(p.Key, kv), Linear(p.Value, kv), nil))
	assertSame(t, "one head", p1, sd, 1e-12, 1e-13)
	// Transforms: Grad in params (a small random probe of the output),
	// Grad in the queries, Vmap over the batch, Compile.
	w := tensor(72, b, lq, d)
	loss := func(p MultiHeadAttentionParams) *peel.Tensor {
		return sumAll(peel.Mul(MultiHeadAttention(p, q, kv, kv, h, mask), w))
	}
	checkTreeGrad(t, "MultiHeadAttention", loss, p, fdRtol, fdAtol)
	checkGradFD(t, "MultiHeadAttention d/dq", func(q *peel.Tensor) *peel.Tensor {
		return sumAll(peel.Mul(MultiHeadAttention(p, q, kv, kv, h, mask), w))
	}, q, fdRtol, fdAtol)
	checkVmap(t, "MultiHeadAttention", func(q *peel.Tensor) *peel.Tensor { return MultiHeadAttention(p, q, q, q, h, nil) }, q)
	checkCompileTree(t, "MultiHeadAttention", loss, p)
	if n := len(tree.Leaves(p)); n != 8 {
		t.Fatalf("params have %d leaves, want 8", n)
	}
	mustPanic(t, "nn.MultiHeadAttention", func() { MultiHeadAttention(p, q, kv, kv, 4, nil) })
	mustPanic(t, "nn.MultiHeadAttention", func() { MultiHeadAttention(p, q, kv, kv, 0, nil) })
	mustPanic(t, "nn.MultiHeadAttention", func() { MultiHeadAttention(p, q, kv, kv, h, peel.Ones(peel.Float64, lq, lk)) })
	mustPanic(t, "nn.MultiHeadAttention", func() { MultiHeadAttention(p, q, kv, tensor(1, b, lk+1, d), h, nil) })
	mustPanic(t, "nn.ScaledDotProductAttention", func() { ScaledDotProductAttention(q, tensor(1, b, lk, d+1), kv, nil) })
}

// sdpaRef is scaled dot-product attention of one head by loops: q [lq,
// d], k [lk, d], v [lk, dv], mask [lq, lk]; a fully masked row attends
// uniformly.
func sdpaRef(q, k, v []float64, lq, lk, d, dv int, mask []bool) []float64 {
	o := make([]float64, lq*dv)
	for i := range lq {
		logits := make([]float64, lk)
		open := false
		for j := range lk {
			if mask[i*lk+j] {
				open = true
			}
		}
		m := math.Inf(-1)
		for j := range lk {
			s := 0.0
			for e := range d {
				s += q[i*d+e] * k[j*d+e]
			}
			s /= math.Sqrt(float64(d))
			switch {
			case !open:
				s = 0 // every logit equal: uniform
			case !mask[i*lk+j]:
				s = math.Inf(-1)
			}
			logits[j] = s
			m = math.Max(m, s)
		}
		z := 0.0
		for j := range lk {
			logits[j] = math.Exp(logits[j] - m)
			z += logits[j]
		}
		for e := range dv {
			for j := range lk {
				o[i*dv+e] += logits[j] / z * v[j*dv+e]
			}
		}
	}
	return o
}

// TestAttentionMaskedRowEveryDType: in each float dtype, a query whose
// keys are all masked attends uniformly (the mask value is the dtype's
// lowest finite value, not -Inf, which would give NaN), the other rows
// match loops in float64, and the gradients are finite, the masked row's
// zero in the queries.
func TestAttentionMaskedRowEveryDType(t *testing.T) {
	const lq, lk, d, dv = 3, 4, 5, 2
	mv := []bool{
		true, false, true, false,
		false, false, false, false,
		true, true, true, true,
	}
	mask := peel.FromBools(mv, lq, lk)
	for _, dt := range floatDTypes {
		q := peel.AsType(tensor(80, lq, d), dt)
		k := peel.AsType(tensor(81, lk, d), dt)
		v := peel.AsType(tensor(82, lk, dv), dt)
		f64 := func(x *peel.Tensor) []float64 { return peel.AsType(x, peel.Float64).Float64s() }
		want := sdpaRef(f64(q), f64(k), f64(v), lq, lk, d, dv, mv)
		got := ScaledDotProductAttention(q, k, v, mask)
		if got.DType() != dt {
			t.Fatalf("%v: result dtype %v", dt, got.DType())
		}
		assertClose(t, fmt.Sprintf("masked row %v", dt), got, want, []int{lq, dv}, 100*epsOf(dt), 100*epsOf(dt))
		gq := transforms.Grad(func(q *peel.Tensor) *peel.Tensor { return peel.Sum(ScaledDotProductAttention(q, k, v, mask)) })(q)
		for i, x := range f64(gq) {
			if math.IsNaN(x) || math.IsInf(x, 0) || (i/d == 1 && x != 0) {
				t.Fatalf("%v: d/dq element %d = %v", dt, i, x)
			}
		}
		gv := transforms.Grad(func(v *peel.Tensor) *peel.Tensor { return peel.Sum(ScaledDotProductAttention(q, k, v, mask)) })(v)
		for i, x := range f64(gv) {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("%v: d/dv element %d = %v", dt, i, x)
			}
		}
	}
}

// TestLayersCheckEveryTransform runs transforms.Check on a block of
// layers (linear, layer norm, attention, GELU), as a user would on their
// model: every transform agrees with its oracle.
func TestLayersCheckEveryTransform(t *testing.T) {
	type block struct {
		In   LinearParams
		Norm LayerNormParams
		Attn MultiHeadAttentionParams
	}
	key := peel.Key(3)
	ks := peel.SplitKeys(key, 2)
	p := block{
		In:   InitLinear(ks[0], peel.Float64, 3, 4),
		Norm: InitLayerNorm(peel.Float64, 4),
		Attn: InitMultiHeadAttention(ks[1], peel.Float64, 4),
	}
	x := peel.Normal(peel.Key(4), peel.Float64, 5, 3)
	f := func(p block) *peel.Tensor {
		h := LayerNorm(p.Norm, peel.GELU(Linear(p.In, x)))
		return peel.Sum(peel.Square(MultiHeadAttention(p.Attn, h, h, h, 2, nil)))
	}
	if rep := transforms.Check(f, p); !rep.OK() {
		t.Fatalf("a block of layers:\n%v", rep)
	}
}
