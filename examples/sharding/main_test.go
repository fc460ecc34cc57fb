package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// closeTree checks that two trees of one structure have the same leaf
// shapes and agree to tol (absolute), naming the leaf that does not.
func closeTree[T any](t *testing.T, what string, got, want T, tol float64) {
	t.Helper()
	if ok, why := tree.SameStructure(got, want); !ok {
		t.Fatalf("%s: %s", what, why)
	}
	paths, lw := tree.Paths(want), tree.Leaves(want)
	for i, g := range tree.Leaves(got) {
		if g.TypeString() != lw[i].TypeString() {
			t.Errorf("%s%s: %s, want %s", what, paths[i], g.TypeString(), lw[i].TypeString())
			continue
		}
		if d := g.Sub(lw[i]).Abs().Max().Item(); !(d <= tol) {
			t.Errorf("%s%s: max |diff| %.3g, want ≤ %g", what, paths[i], d, tol)
		}
	}
}

// TestDataParallel: the parameters after every step of the data-parallel
// training on 2 devices are those of training on the full batch on one
// device, so are the losses, and the loss falls. The tolerance matters:
// Adam's update hardly depends on the gradient's scale, so a step that
// summed the gradients (dist.Psum) instead of averaging them would still
// train, its parameters off by only about 1e-5 after 20 steps.
func TestDataParallel(t *testing.T) {
	mesh, sharded, single := dataParallel()
	if mesh.Size() != 2 {
		t.Fatalf("%d devices, want 2", mesh.Size())
	}
	if len(sharded.Params) != steps || len(single.Params) != steps {
		t.Fatalf("%d and %d steps recorded, want %d", len(sharded.Params), len(single.Params), steps)
	}
	worst := 0.0
	for i := range steps {
		closeTree(t, fmt.Sprintf("step %d params", i+1), sharded.Params[i], single.Params[i], 1e-12)
		worst = max(worst, maxDiff(sharded.Params[i], single.Params[i]))
		if d := sharded.Losses[i] - single.Losses[i]; !(d <= 1e-12 && d >= -1e-12) {
			t.Errorf("step %d: loss %v on 2 devices, %v on one", i, sharded.Losses[i], single.Losses[i])
		}
	}
	if first, last := sharded.Losses[0], sharded.Losses[steps-1]; !(last < first/4) {
		t.Errorf("loss went from %v to %v in %d steps, want a quarter or less", first, last, steps)
	}
	t.Logf("loss %.4f → %.4f; params vs one device: max |diff| %.2g", sharded.Losses[0], sharded.Losses[steps-1], worst)
}

// TestShardedStepCompiledOnce: the data-parallel step is traced once and
// runs as one compiled program that keeps the shard_map.
func TestShardedStepCompiledOnce(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	opt := optim.Adam[MLP](lr)
	var ins transforms.Inspector
	step := shardedStep(opt, mesh, transforms.Inspect(&ins))
	bs := batches()[:3]
	p := initMLP(peel.Key(7))
	s := opt.Init(p)
	for _, b := range bs {
		p, s, _ = step(p, s, b).Unpack()
	}
	if st := ins.Stats(); st.Calls != 3 || st.Misses != 1 {
		t.Errorf("%d calls, %d traces, want 3 and 1", st.Calls, st.Misses)
	}
	if e := ins.Explain(p, s, bs[0]); !strings.Contains(e, "shard_map") {
		t.Errorf("the compiled step has no shard_map:\n%s", e)
	}
}

// TestForgottenPmean: a step that does not average the gradients over
// "data" gives each device its own update, and ShardMap refuses to return
// the parameters as replicated.
func TestForgottenPmean(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	opt := optim.Adam[MLP](lr)
	inSpecs := []any{dist.P(), dist.P(), map[string]any{"X": dist.P("data", nil), "Y": dist.P("data")}}
	step := transforms.ShardMap3(newStep(opt, ""), mesh, inSpecs, dist.P())
	p := initMLP(peel.Key(7))
	err := peel.Catch(func() { step(p, opt.Init(p), batches()[0]) })
	if err == nil || !strings.Contains(err.Error(), "claimed equal") {
		t.Errorf("a step without Pmean: error %v, want one saying the copies differ", err)
	}
}

// TestTensorParallel: the Megatron-style block on the 2-D mesh gives the
// plain block's output, and Grad through it gives the plain gradient of
// every parameter, each split one included.
func TestTensorParallel(t *testing.T) {
	mesh, tp := tensorParallel()
	if mesh.Size() != 4 {
		t.Fatalf("%d devices, want 4", mesh.Size())
	}
	closeTree(t, "output", tp.Y, tp.WantY, 1e-12)
	closeTree(t, "grad", tp.Grads, tp.WantGrads, 1e-12)
	for i, g := range tree.Leaves(tp.WantGrads) {
		if g.Abs().Max().Item() == 0 {
			t.Errorf("grad%s is zero: the check says nothing", tree.Paths(tp.WantGrads)[i])
		}
	}
	t.Logf("output max |diff| %.2g, gradient max |diff| %.2g", maxDiff(tp.Y, tp.WantY), maxDiff(tp.Grads, tp.WantGrads))
}

// TestPerSample: the per-sample gradients computed on 2 devices are those
// of Vmap(Grad) on one, one per sample, and their mean over the samples is
// the gradient of the batch's mean loss.
func TestPerSample(t *testing.T) {
	mesh, got, want := perSample()
	if mesh.Size() != 2 {
		t.Fatalf("%d devices, want 2", mesh.Size())
	}
	closeTree(t, "per-sample grad", got, want, 1e-13)
	for i, g := range tree.Leaves(got) {
		if g.Shape()[0] != numSamples {
			t.Errorf("per-sample grad%s: %s, want a leading axis of %d samples", tree.Paths(got)[i], g.TypeString(), numSamples)
		}
	}
	p := initMLP(peel.Key(3))
	x, y := synthetic(peel.Key(4), numSamples)
	batch := transforms.Grad(func(p MLP) *peel.Tensor { return nn.CrossEntropy(predict(p, x), y) })(p)
	mean := tree.Map(func(g *peel.Tensor) *peel.Tensor { return g.Mean(0) }, got)
	closeTree(t, "mean per-sample grad", mean, batch, 1e-13)
	t.Logf("max |diff| vs one device %.2g", maxDiff(got, want))
}
