package model

import (
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// tiny is a configuration small enough for float64 checks.
func tiny(dt peel.DType) Config {
	return Config{Vocab: 11, Context: 12, Layers: 2, Heads: 2, Width: 8, Dropout: 0, DType: dt}
}

func tinyBatch(c Config, b, t int) (x, y *peel.Tensor) {
	toks := peel.RandInt(peel.Key(3), 0, int64(c.Vocab), 200).Int64s()
	return Batch(peel.Key(4), toks, b, t)
}

func maxRelDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i])/(1e-12+math.Abs(b[i])))
	}
	return d
}

func flat(p any) []float64 {
	var out []float64
	for _, l := range tree.Leaves(p) {
		out = append(out, peel.AsType(l, peel.Float64).Float64s()...)
	}
	return out
}

// TestGradientFiniteDifferences checks the loss's gradient along random
// directions against central differences, in float64 (tolerance 1e-6
// relative: the step is 1e-5 and the loss is smooth).
func TestGradientFiniteDifferences(t *testing.T) {
	c := tiny(peel.Float64)
	p := Init(peel.Key(1), c)
	// Break the symmetry of the zero biases and unit norms.
	p = tree.Map(func(l *peel.Tensor) *peel.Tensor {
		return peel.Add(l, peel.NormalScaled(peel.FoldIn(peel.Key(9), int64(l.Size())), peel.Float64, 0, 0.1, l.Shape()...))
	}, p)
	x, y := tinyBatch(c, 3, 7)
	loss := func(p Params) *peel.Tensor { return Loss(c, p, x, y, Options{}) }
	g := transforms.Grad(loss)(p)
	for k := range 3 {
		dir := tree.Map(func(l *peel.Tensor) *peel.Tensor {
			return peel.Normal(peel.FoldIn(peel.Key(int64(20+k)), int64(l.Size())), peel.Float64, l.Shape()...)
		}, p)
		const h = 1e-5
		shift := func(s float64) Params {
			return tree.Map2(func(a, d *peel.Tensor) *peel.Tensor { return peel.Add(a, peel.Mul(d, s)) }, p, dir)
		}
		fd := (loss(shift(h)).Item() - loss(shift(-h)).Item()) / (2 * h)
		an := 0.0
		gl, dl := flat(g), flat(dir)
		for i := range gl {
			an += gl[i] * dl[i]
		}
		if math.Abs(fd-an) > 1e-6*(1+math.Abs(an)) {
			t.Errorf("direction %d: finite differences %.12g, gradient %.12g", k, fd, an)
		}
	}
}

// TestGenerateMatchesNaive: the cached sampler (prefill, then a Scan of
// one-token steps) draws the same tokens as re-running the whole
// sequence for each token, eagerly and compiled, greedy and sampled.
func TestGenerateMatchesNaive(t *testing.T) {
	c := tiny(peel.Float64)
	p := Init(peel.Key(2), c)
	prompt := peel.FromInt64s([]int64{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
	for _, s := range []Sampling{{Temperature: 0}, {Temperature: 1}, {Temperature: 0.8, TopK: 3}} {
		const n = 8
		want := NaiveGenerate(c, p, prompt, peel.Key(5), n, s).Int64s()
		got := Generate(c, p, prompt, peel.Key(5), n, s).Int64s()
		if !slices.Equal(got, want) {
			t.Errorf("%+v: cached %v, naive %v", s, got, want)
		}
		gen := transforms.Compile3(func(p Params, prompt, key *peel.Tensor) *peel.Tensor {
			return Generate(c, p, prompt, key, n, s)
		})
		if got := gen(p, prompt, peel.Key(5)).Int64s(); !slices.Equal(got, want) {
			t.Errorf("%+v: compiled %v, naive %v", s, got, want)
		}
	}
}

// TestDecodeMatchesForward: the logits of the cached decoder equal the
// full forward pass's at every position (float64, 1e-12).
func TestDecodeMatchesForward(t *testing.T) {
	c := tiny(peel.Float64)
	p := Init(peel.Key(2), c)
	x, _ := tinyBatch(c, 2, 9)
	full := Forward(c, p, x, Options{})
	logits, cache := Decode(c, p, peel.Narrow(x, 1, 0, 5), peel.Zeros(peel.Int64), EmptyCache(c, 2))
	check := func(pos int, got *peel.Tensor) {
		want := peel.Select(full, 1, pos).Float64s()
		if d := maxRelDiff(got.Float64s(), want); d > 1e-12 {
			t.Errorf("position %d: relative difference %g", pos, d)
		}
	}
	check(4, logits)
	for pos := 5; pos < 9; pos++ {
		logits, cache = Decode(c, p, peel.Narrow(x, 1, pos, 1), peel.Full(peel.Int64, float64(pos)), cache)
		check(pos, logits)
	}
}

// TestStepsAgree: the compiled step, and the step with every block
// checkpointed (each policy), give the eager step's losses and
// parameters (float64, 1e-12).
func TestStepsAgree(t *testing.T) {
	c := tiny(peel.Float64)
	c.Dropout = 0.1
	h := DefaultHyper(20)
	h.Warmup = 2
	opt := Optimizer(h)
	run := func(step StepFunc) ([]float64, Params) {
		p := Init(peel.Key(1), c)
		s := opt.Init(p)
		var losses []float64
		toks := peel.RandInt(peel.Key(3), 0, int64(c.Vocab), 300).Int64s()
		for i := range 4 {
			x, y := Batch(peel.FoldIn(peel.Key(8), int64(i)), toks, 3, 7)
			var l *peel.Tensor
			p, s, l = step(p, s, x, y, peel.FoldIn(peel.Key(9), int64(i))).Unpack()
			losses = append(losses, l.Item())
		}
		return losses, p
	}
	wantL, wantP := run(NewStep(c, opt, nil))
	for name, step := range map[string]StepFunc{
		"compiled":      Compiled(NewStep(c, opt, nil)),
		"remat dots":    NewStep(c, opt, &transforms.DotsSaveable),
		"remat nothing": NewStep(c, opt, &transforms.NothingSaveable),
		"remat compile": Compiled(NewStep(c, opt, &transforms.MinCut)),
	} {
		l, p := run(step)
		if d := maxRelDiff(l, wantL); d > 1e-12 {
			t.Errorf("%s: losses %v, eager %v", name, l, wantL)
		}
		if d := maxRelDiff(flat(p), flat(wantP)); d > 1e-10 {
			t.Errorf("%s: parameters differ by %g relative", name, d)
		}
	}
}

// TestDecayMask: AdamW decays the Linear weights only.
func TestDecayMask(t *testing.T) {
	p := Init(peel.Key(1), tiny(peel.Float32))
	var decayed []string
	for _, path := range tree.Paths(p) {
		if Decayed(path) {
			decayed = append(decayed, path)
		}
	}
	want := []string{".Blocks[0].Attn.QKV.W", ".Blocks[0].Attn.Proj.W", ".Blocks[0].MLP.FC.W", ".Blocks[0].MLP.Proj.W",
		".Blocks[1].Attn.QKV.W", ".Blocks[1].Attn.Proj.W", ".Blocks[1].MLP.FC.W", ".Blocks[1].MLP.Proj.W"}
	if !slices.Equal(decayed, want) {
		t.Errorf("decayed %v, want %v", decayed, want)
	}
}
