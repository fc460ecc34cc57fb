package nn

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"pgregory.net/rapid"
)

// Property: CrossEntropy matches the loop reference for any shape,
// logits, labels and smoothing, and its gradient in the logits is
// softmax - smoothed target, so each sample's row sums to 0.
func TestCrossEntropyProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(rt, "n")
		c := rapid.IntRange(1, 6).Draw(rt, "c")
		xs := rapid.SliceOfN(rapid.Float64Range(-30, 30), n*c, n*c).Draw(rt, "logits")
		lab := make([]int64, n)
		for i := range lab {
			lab[i] = int64(rapid.IntRange(0, c-1).Draw(rt, "label"))
		}
		eps := rapid.Float64Range(0, 1).Draw(rt, "eps")
		x, y := peel.FromFloat64s(xs, n, c), peel.FromInt64s(lab)
		got := CrossEntropy(x, y, LabelSmoothing(eps), Reduce(ReduceNone))
		want := ceRef(xs, n, c, lab, nil, eps)
		for i, g := range got.Float64s() {
			if !closeTo(g, want[i], 1e-12, 1e-12) {
				rt.Fatalf("sample %d: %v, want %v", i, g, want[i])
			}
		}
		g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return CrossEntropy(x, y, LabelSmoothing(eps), Reduce(ReduceSum)) })(x).Float64s()
		for i := range n {
			s := 0.0
			for j := range c {
				s += g[i*c+j]
			}
			if math.Abs(s) > 1e-12 {
				rt.Fatalf("gradient row %d sums to %v", i, s)
			}
		}
	})
}

// Property: LayerNorm with unit scale and zero bias gives rows of mean 0
// and variance v/(v+eps) for any shape and offset.
func TestLayerNormProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "n")
		d := rapid.IntRange(2, 8).Draw(rt, "d")
		xs := rapid.SliceOfN(rapid.Float64Range(-100, 100), n*d, n*d).Draw(rt, "x")
		p := InitLayerNorm(peel.Float64, d)
		y := LayerNorm(p, peel.FromFloat64s(xs, n, d)).Float64s()
		for i := range n {
			_, v := moments(xs[i*d : (i+1)*d])
			m, vy := moments(y[i*d : (i+1)*d])
			if math.Abs(m) > 1e-9 || math.Abs(vy-v/(v+1e-5)) > 1e-9 {
				rt.Fatalf("row %d: mean %v, variance %v, want 0 and %v", i, m, vy, v/(v+1e-5))
			}
		}
	})
}

func TestFloat32Layers(t *testing.T) {
	x := peel.AsType(tensor(80, 2, 3, 4), peel.Float32)
	key := peel.Key(9)
	lin := InitLinear(key, peel.Float32, 4, 4)
	ln := InitLayerNorm(peel.Float32, 4)
	rms := InitRMSNorm(peel.Float32, 4)
	bp, bs := InitBatchNorm(peel.Float32, 3)
	mha := InitMultiHeadAttention(key, peel.Float32, 4)
	bn, st := BatchNorm(bp, bs, x, true)
	for name, y := range map[string]*peel.Tensor{
		"Linear":             Linear(lin, x),
		"LayerNorm":          LayerNorm(ln, x),
		"RMSNorm":            RMSNorm(rms, x),
		"BatchNorm":          bn,
		"BatchNorm state":    st.Var,
		"Dropout":            Dropout(key, x, 0.5, true),
		"MultiHeadAttention": MultiHeadAttention(mha, x, x, x, 2, peel.FromBools([]bool{true, false, true}, 1, 3)),
		"CrossEntropy":       CrossEntropy(x, labels(1, 4, 2, 3)),
	} {
		if y.DType() != peel.Float32 {
			t.Errorf("%s of float32 input has dtype %v", name, y.DType())
		}
	}
}
