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

// layer returns a deterministic weight of the given shape and its bias
// (of shape[0] for a convolution, shape[-1] for a linear layer's [in, out]
// weight), both scaled by 1/√fanIn, the bound of torch's default
// initialization; testdata/gen_reference.py builds the same tensors.
func layer(seed float64, fanIn int, shape ...int) (w, b *peel.Tensor) {
	s := 1 / math.Sqrt(float64(fanIn))
	out := shape[len(shape)-1]
	if len(shape) == 4 {
		out = shape[0]
	}
	return synth.Data(seed, shape...).Mul(s), synth.Data(seed+1, out).Mul(s)
}

// testInputs are the deterministic stand-ins for main's random ones.
func testInputs() (params SimpleCNN, data, targets *peel.Tensor) {
	var p SimpleCNN
	p.Conv1.W, p.Conv1.B = layer(2, 9, 4, 1, 3, 3)
	p.Conv2.W, p.Conv2.B = layer(4, 36, 8, 4, 3, 3)
	p.FC1.W, p.FC1.B = layer(6, 72, 72, 16)
	p.FC2.W, p.FC2.B = layer(8, 16, 16, 10)
	return p, synth.Data(1, batchSize, 1, 10, 10), synth.Labels(0, batchSize, 10)
}

// TestAgainstTorch checks the batch-average gradient and both per-sample
// gradients (the loop and Vmap of Grad) against PyTorch's, computed with
// one autograd call on the batch and one per sample
// (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	grads, perSampleGrads, ftPerSampleGrads := run(testInputs())
	reftest.CloseTree(t, "grads", grads, ref, 1e-10, 1e-13)
	reftest.CloseTree(t, "per_sample", perSampleGrads, ref, 1e-10, 1e-13)
	reftest.CloseTree(t, "per_sample", ftPerSampleGrads, ref, 1e-10, 1e-13)
	t.Logf("max rel. error vs torch: grads %.2g, loop %.2g, vmap %.2g",
		maxRelErr(grads, ref, "grads"), maxRelErr(perSampleGrads, ref, "per_sample"), maxRelErr(ftPerSampleGrads, ref, "per_sample"))
}

// TestLoopEqualsVmap is the tutorial's check: the per-sample gradients of
// the loop (computeSampleGrads) and of ftComputeSampleGrad agree, and their
// mean over the samples is the batch-average gradient.
func TestLoopEqualsVmap(t *testing.T) {
	grads, perSampleGrads, ftPerSampleGrads := run(testInputs())
	want, paths := tree.Leaves(perSampleGrads), tree.Paths(perSampleGrads)
	for i, g := range tree.Leaves(ftPerSampleGrads) {
		closeTo(t, "vmap"+paths[i], g, want[i], 1e-12)
		closeTo(t, "mean"+paths[i], want[i].Mean(0), tree.Leaves(grads)[i], 1e-12)
	}
}

// TestNewSimpleCNN: main's randomly initialized model has the test model's
// structure and shapes, and its values lie within torch's bound ±1/√fanIn.
func TestNewSimpleCNN(t *testing.T) {
	got := newSimpleCNN(peel.Key(0))
	want, _, _ := testInputs()
	if ok, why := tree.SameStructure(got, want); !ok {
		t.Fatal(why)
	}
	fanIn := []int{9, 9, 36, 36, 72, 72, 16, 16}
	for i, g := range tree.Leaves(got) {
		w := tree.Leaves(want)[i]
		if g.TypeString() != w.TypeString() {
			t.Errorf("%s: %s, want %s", tree.Paths(got)[i], g.TypeString(), w.TypeString())
		}
		if m := g.Abs().Max().Item(); m > 1/math.Sqrt(float64(fanIn[i])) {
			t.Errorf("%s: |value| up to %g, beyond 1/√%d", tree.Paths(got)[i], m, fanIn[i])
		}
	}
}

func closeTo(t *testing.T, what string, got, want *peel.Tensor, rtol float64) {
	t.Helper()
	if got.TypeString() != want.TypeString() {
		t.Fatalf("%s: %s, want %s", what, got.TypeString(), want.TypeString())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range w {
		if d := math.Abs(g[i] - w[i]); !(d <= rtol*(math.Abs(w[i])+1e-3)) {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, g[i], w[i])
		}
	}
}

// maxRelErr is the largest |got - ref| / max(|ref|, 1e-3) over the leaves.
func maxRelErr(got any, ref map[string]reftest.Value, prefix string) float64 {
	worst := 0.0
	paths := tree.Paths(got)
	for i, l := range tree.Leaves(got) {
		g := l.Float64s()
		for j, w := range ref[prefix+paths[i]].Data {
			worst = max(worst, math.Abs(g[j]-w)/max(math.Abs(w), 1e-3))
		}
	}
	return worst
}

// BenchmarkTutorial times the tutorial's main computation, the per-sample
// gradients by Vmap3(Grad3(computeLoss)) over one batch, at main's sizes:
// a batch of 8 images 1×10×10, float64, the SimpleCNN 1→4→8 channels, fc1
// 72→16, fc2 16→10, from main's random init. testdata/time_torch.py times
// vmap(grad(compute_loss)) in PyTorch at the same sizes.
func BenchmarkTutorial(b *testing.B) {
	keys := peel.SplitKeys(peel.Key(0), 3)
	data := peel.Normal(keys[0], peel.Float64, batchSize, 1, 10, 10)
	targets := peel.RandInt(keys[1], 0, 10, batchSize)
	params := newSimpleCNN(keys[2])
	ftComputeSampleGrad := transforms.Vmap3(transforms.Grad3(computeLoss), transforms.InAxes(transforms.NoAxis, 0, 0))
	for b.Loop() {
		ftComputeSampleGrad(params, data, targets)
	}
}
