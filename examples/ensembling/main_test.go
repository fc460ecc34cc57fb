package main

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/tree"
)

// TestAgainstTorch checks both vmapped ensembles against PyTorch running the
// models one by one in a loop (testdata/gen_reference.py), to float64
// round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	diff, same := run()
	reftest.Close(t, "diff_minibatch", diff, ref["diff_minibatch"], 1e-11, 1e-13)
	reftest.Close(t, "same_minibatch", same, ref["same_minibatch"], 1e-11, 1e-13)
}

// TestTrainEnsembleEqualsLoop: the ensemble trained by one compiled,
// vmapped step over stacked params and stacked Adam states equals each
// member trained alone in a loop (params, Adam moments and counts, losses),
// to 1e-10 in float64; the step is traced once, and the losses fall.
func TestTrainEnsembleEqualsLoop(t *testing.T) {
	ens, losses, stats := trainEnsemble()
	if stats.Misses != 1 || stats.Hits != trainSteps-1 {
		t.Errorf("compiled step: %d misses, %d hits, want 1 and %d (last miss: %s)", stats.Misses, stats.Hits, trainSteps-1, stats.LastMiss)
	}
	members, wantLosses := trainLoop()
	closeTo(t, "losses", losses, wantLosses)
	got := tree.Unstack(ens)
	if len(got) != len(members) {
		t.Fatalf("%d members, want %d", len(got), len(members))
	}
	for k := range members {
		gl, wl, paths := tree.Leaves(got[k]), tree.Leaves(members[k]), tree.Paths(members[k])
		if len(gl) != len(wl) {
			t.Fatalf("member %d: %d leaves, want %d", k, len(gl), len(wl))
		}
		for i := range wl {
			closeTo(t, fmt.Sprintf("member %d %s", k, paths[i]), gl[i], wl[i])
		}
	}
	for k := range trainMembers {
		// Steps 0 and trainSteps-2 see the same minibatch.
		first, last := peel.Index(losses, 0, k).Item(), peel.Index(losses, trainSteps-2, k).Item()
		if !(last < first) {
			t.Errorf("member %d: loss went from %v to %v", k, first, last)
		}
	}
}

func closeTo(t *testing.T, what string, got, want *peel.Tensor) {
	t.Helper()
	if got.TypeString() != want.TypeString() {
		t.Fatalf("%s: %s, want %s", what, got.TypeString(), want.TypeString())
	}
	g, w := peel.AsType(got, peel.Float64).Float64s(), peel.AsType(want, peel.Float64).Float64s()
	for i := range w {
		if d := math.Abs(g[i] - w[i]); !(d <= 1e-10*(1+math.Abs(w[i]))) {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, g[i], w[i])
		}
	}
}
