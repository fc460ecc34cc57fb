package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// testModel is a deterministic stand-in for newSimpleMLP: each layer's
// weight [in, out] and bias from synth, scaled by 1/√in, the bound of
// torch's default initialization; testdata/gen_reference.py builds the same.
func testModel(seed float64) SimpleMLP {
	layer := func(seed float64, in, out int) (w, b *peel.Tensor) {
		s := 1 / math.Sqrt(float64(in))
		return synth.Data(seed, in, out).Mul(s), synth.Data(seed+1, out).Mul(s)
	}
	var m SimpleMLP
	m.FC1.W, m.FC1.B = layer(seed, 64, 16)
	m.FC2.W, m.FC2.B = layer(seed+2, 16, 16)
	m.FC3.W, m.FC3.B = layer(seed+4, 16, 10)
	return m
}

// testInputs are the deterministic stand-ins for main's random models and
// data (10 minibatches of 8 images 1×8×8).
func testInputs() ([]SimpleMLP, *peel.Tensor) {
	models := make([]SimpleMLP, numModels)
	for i := range models {
		models[i] = testModel(float64(10 * i))
	}
	return models, synth.Data(1, 10, 8, 1, 8, 8)
}

// TestAgainstTorch checks the loops' and Vmap's predictions against PyTorch
// running the models one by one (testdata/gen_reference.py), to float64
// round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	diffLoop, sameLoop, diffVmap, sameVmap := run(testInputs())
	reftest.Close(t, "diff_minibatch loop", peel.Stack(diffLoop, 0), ref["diff_minibatch"], 1e-11, 1e-13)
	reftest.Close(t, "same_minibatch loop", peel.Stack(sameLoop, 0), ref["same_minibatch"], 1e-11, 1e-13)
	reftest.Close(t, "diff_minibatch vmap", diffVmap, ref["diff_minibatch"], 1e-11, 1e-13)
	reftest.Close(t, "same_minibatch vmap", sameVmap, ref["same_minibatch"], 1e-11, 1e-13)
	t.Logf("max rel. error vs torch: diff vmap %.2g, same vmap %.2g",
		maxRelErr(diffVmap, ref["diff_minibatch"]), maxRelErr(sameVmap, ref["same_minibatch"]))
}

// TestLoopEqualsVmap is the tutorial's check: Vmap's predictions equal the
// loops' (stacked).
func TestLoopEqualsVmap(t *testing.T) {
	diffLoop, sameLoop, diffVmap, sameVmap := run(testInputs())
	closeTo(t, "diff_minibatch", diffVmap, peel.Stack(diffLoop, 0), 1e-12)
	closeTo(t, "same_minibatch", sameVmap, peel.Stack(sameLoop, 0), 1e-12)
}

// TestNewSimpleMLP: main's randomly initialized model has the test model's
// structure and shapes, its values lie within torch's bound ±1/√in, and
// its layers differ.
func TestNewSimpleMLP(t *testing.T) {
	got, want := newSimpleMLP(peel.Key(0)), testModel(0)
	if ok, why := tree.SameStructure(got, want); !ok {
		t.Fatal(why)
	}
	fanIn := []int{64, 64, 16, 16, 16, 16}
	paths := tree.Paths(got)
	for i, g := range tree.Leaves(got) {
		if w := tree.Leaves(want)[i]; g.TypeString() != w.TypeString() {
			t.Errorf("%s: %s, want %s", paths[i], g.TypeString(), w.TypeString())
		}
		if m := g.Abs().Max().Item(); m > 1/math.Sqrt(float64(fanIn[i])) {
			t.Errorf("%s: |value| up to %g, beyond 1/√%d", paths[i], m, fanIn[i])
		}
	}
	if peel.Index(got.FC2.W, 0, 0).Item() == peel.Index(got.FC3.W, 0, 0).Item() {
		t.Error("fc2 and fc3 start alike: their keys are not independent")
	}
}

func closeTo(t *testing.T, what string, got, want *peel.Tensor, rtol float64) {
	t.Helper()
	if got.TypeString() != want.TypeString() {
		t.Fatalf("%s: %s, want %s", what, got.TypeString(), want.TypeString())
	}
	g, w := peel.AsType(got, peel.Float64).Float64s(), peel.AsType(want, peel.Float64).Float64s()
	for i := range w {
		if d := math.Abs(g[i] - w[i]); !(d <= rtol*(1+math.Abs(w[i]))) {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, g[i], w[i])
		}
	}
}

// maxRelErr is the largest |got - ref| / max(|ref|, 1e-3).
func maxRelErr(got *peel.Tensor, ref reftest.Value) float64 {
	worst := 0.0
	for j, g := range got.Float64s() {
		w := ref.Data[j]
		worst = max(worst, math.Abs(g-w)/max(math.Abs(w), 1e-3))
	}
	return worst
}

// BenchmarkTutorial times the tutorial's two vmapped predictions as run
// makes them, at main's sizes, in float64: 4 SimpleMLPs 64→16→16→10
// (stacked beforehand by tree.Stack, as stack_module_state is a setup step
// in the tutorial), each on its own minibatch of 8 images 1×8×8, then all
// on one shared minibatch. testdata/time_torch.py times vmap(fmodel) at
// the same sizes.
func BenchmarkTutorial(b *testing.B) {
	keys := peel.SplitKeys(peel.Key(0), numModels+1)
	data := peel.Normal(keys[0], peel.Float64, 10, 8, 1, 8, 8)
	models := make([]SimpleMLP, numModels)
	for i := range models {
		models[i] = newSimpleMLP(keys[i+1])
	}
	params := tree.Stack(models)
	minibatches := peel.Narrow(data, 0, 0, numModels)
	minibatch := peel.Index(data, 0)
	for b.Loop() {
		transforms.Vmap2(fmodel)(params, minibatches)
		transforms.Vmap2(fmodel, transforms.InAxes(0, transforms.NoAxis))(params, minibatch)
	}
}
