package transforms_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestVmapMoreSamplers checks that vmapping each sampler over a batch of
// keys [B, 2] gives, lane by lane, the sample drawn with that lane's key
// (so the lanes are as independent as samples with distinct keys), and
// that the lanes differ.
func TestVmapMoreSamplers(t *testing.T) {
	const b = 4
	keys := peel.SplitKeysStacked(peel.Key(2026), b)
	lanes := peel.SplitKeys(peel.Key(2026), b)
	logits := peel.FromFloat64s([]float64{0.3, -1, 2, 0.5, 0, 1}, 2, 3)
	x := peel.Reshape(peel.Arange(peel.Float64, 0, 12, 1), 4, 3)
	p := peel.FromFloat64s([]float64{0.2, 0.5, 0.3})
	samplers := map[string]func(k *T) *T{
		"UniformRange":    func(k *T) *T { return peel.UniformRange(k, peel.Float32, -2, 5, 3, 5) },
		"NormalScaled":    func(k *T) *T { return peel.NormalScaled(k, peel.Float64, 1, 3, 7) },
		"RandInt":         func(k *T) *T { return peel.RandInt(k, -(1 << 40), 1<<50, 9) },
		"RandIntSmall":    func(k *T) *T { return peel.RandInt(k, 0, 6, 2, 4) },
		"Permutation":     func(k *T) *T { return peel.Permutation(k, 11) },
		"Shuffle":         func(k *T) *T { return peel.Shuffle(k, x, 0) },
		"Categorical":     func(k *T) *T { return peel.Categorical(k, logits, 1, 5, 2) },
		"Choice":          func(k *T) *T { return peel.Choice(k, 3, p, 8) },
		"TruncatedNormal": func(k *T) *T { return peel.TruncatedNormal(k, peel.Float64, -0.5, 1.5, 6) },
		"SplitKeys":       func(k *T) *T { return peel.Stack(peel.SplitKeys(k, 3), 0) },
	}
	for name, f := range samplers {
		got := transforms.Vmap(f)(keys)
		for i, k := range lanes {
			want := f(k)
			lane := peel.Take(got, peel.FromInt64s([]int64{int64(i)}, []int{}...), 0)
			if !sameRandomValues(lane, want) {
				t.Errorf("%s: vmap lane %d = %v; want %v", name, i, lane, want)
			}
		}
		l0 := peel.Take(got, peel.FromInt64s([]int64{0}, []int{}...), 0)
		l1 := peel.Take(got, peel.FromInt64s([]int64{1}, []int{}...), 0)
		if sameRandomValues(l0, l1) {
			t.Errorf("%s: vmap lanes 0 and 1 are equal: %v", name, l0)
		}
	}
	// SplitKeys under vmap returns a slice of batched keys.
	ks := transforms.Vmap(func(k *T) []*T { return peel.SplitKeys(k, 2) })(keys)
	if len(ks) != 2 {
		t.Fatalf("vmapped SplitKeys gave %d keys", len(ks))
	}
	want := transforms.Vmap(func(k *T) *T { return peel.SplitKeysStacked(k, 2) })(keys).Int64s()
	for j, k := range ks {
		w := k.Int64s()
		for i := 0; i < b; i++ {
			if w[2*i] != want[4*i+2*j] || w[2*i+1] != want[4*i+2*j+1] {
				t.Fatalf("vmapped SplitKeys key %d lane %d = %v; want %v", j, i, w[2*i:2*i+2], want[4*i+2*j:4*i+2*j+2])
			}
		}
	}
}

// TestGradThroughShuffle checks that Shuffle is differentiable in x (the
// permutation is an integer constant to autodiff).
func TestGradThroughShuffle(t *testing.T) {
	key := peel.Key(3)
	w := peel.FromFloat64s([]float64{1, 2, 3, 4, 5})
	f := func(x *T) *T { return peel.Sum(peel.Mul(peel.Shuffle(key, x, 0), w)) }
	g := transforms.Grad(f)(peel.FromFloat64s([]float64{0, 0, 0, 0, 0}))
	perm := peel.Permutation(key, 5).Int64s()
	gv := g.Float64s()
	for j, src := range perm {
		if gv[src] != w.Float64s()[j] {
			t.Fatalf("grad of Shuffle = %v; permutation %v", gv, perm)
		}
	}
}

func sameRandomValues(a, b *T) bool {
	if a.DType() != b.DType() || len(a.Shape()) != len(b.Shape()) {
		return false
	}
	for i, d := range a.Shape() {
		if b.Shape()[i] != d {
			return false
		}
	}
	switch a.DType() {
	case peel.Int64:
		x, y := a.Int64s(), b.Int64s()
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
	case peel.Float32:
		x, y := a.Float32s(), b.Float32s()
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
	default:
		x, y := a.Float64s(), b.Float64s()
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
	}
	return true
}
