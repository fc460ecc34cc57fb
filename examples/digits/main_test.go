package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// checkRun checks a run's losses and accuracy: the loss falls by more
// than ten times over the epochs and the test accuracy reaches minAcc.
func checkRun(t *testing.T, r Result, minAcc float64) {
	t.Helper()
	if len(r.Losses) != epochs {
		t.Fatalf("%d epoch losses, want %d", len(r.Losses), epochs)
	}
	if first, last := r.Losses[0], r.Losses[len(r.Losses)-1]; !(last < first/10) {
		t.Errorf("train loss went from %v to %v, want a tenth or less", first, last)
	}
	if r.Tests != 360 {
		t.Errorf("%d test rows, want 360", r.Tests)
	}
	if !(r.TestAcc >= minAcc) {
		t.Errorf("test accuracy %.4f (%d of %d), want ≥ %v", r.TestAcc, r.Correct, r.Tests, minAcc)
	}
	t.Logf("final train loss %.4f, test accuracy %.4f (%d of %d)", r.Losses[len(r.Losses)-1], r.TestAcc, r.Correct, r.Tests)
}

// TestSynthetic trains on the synthetic stand-in, which needs no file.
func TestSynthetic(t *testing.T) {
	r, err := run("", resume{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Synthetic {
		t.Fatal("not the synthetic run")
	}
	checkRun(t, r, 0.85)

	// The exported classifier, read back, classifies the test set as the
	// trained model does.
	dir := t.TempDir()
	if err := exportClassifier(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "classify.peel"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := transforms.LoadExported(b)
	if err != nil {
		t.Fatal(err)
	}
	got := transforms.ExportedFunc[*peel.Tensor, Classified](e)(r.xTest)
	correct := int(peel.Sum(peel.AsType(peel.Equal(got.Labels, r.yTest), peel.Int64)).Item())
	if correct != r.Correct {
		t.Fatalf("the exported classifier gets %d of %d right, the model %d", correct, r.Tests, r.Correct)
	}
}

// TestRealData trains on scikit-learn's digits where the file is found
// ($PEEL_DIGITS or Debian's python3-sklearn), and is skipped elsewhere.
func TestRealData(t *testing.T) {
	path, err := findData("")
	if err != nil {
		t.Fatal(err)
	}
	if path == "" {
		t.Skip("digits.csv.gz not found; TestSynthetic covers the run")
	}
	x, y, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Shape(); got[0] != numRows || got[1] != numPixels || y.DType() != peel.Int64 {
		t.Fatalf("data %s, labels %s, want [1797, 64] and i64 [1797]", x.TypeString(), y.TypeString())
	}
	if lo, hi := peel.Min(y).Item(), peel.Max(y).Item(); lo != 0 || hi != 9 {
		t.Fatalf("labels in %v…%v, want 0…9", lo, hi)
	}
	r, err := run(path, resume{})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, r, 0.97)
}

// TestFindData: the flag comes first, then $PEEL_DIGITS; a named file
// that is missing is an error; a corrupt file is an error, not a panic.
func TestFindData(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv.gz"), filepath.Join(dir, "b.csv.gz")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("not gzip"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PEEL_DIGITS", b)
	if p, err := findData(a); p != a || err != nil {
		t.Errorf("findData(flag) = %q, %v, want %q", p, err, a)
	}
	if p, err := findData(""); p != b || err != nil {
		t.Errorf("findData with $PEEL_DIGITS = %q, %v, want %q", p, err, b)
	}
	if _, err := findData(filepath.Join(dir, "missing")); err == nil {
		t.Error("findData of a missing file: no error")
	}
	if _, _, err := load(a); err == nil {
		t.Error("load of a file that is not gzip: no error")
	}
}

// TestSplit: the split is deterministic, 1437 + 360 rows, pixels in [0, 1].
func TestSplit(t *testing.T) {
	x, y := synthetic(numRows)
	xa, ya, xb, yb := split(x, y)
	xa2, _, _, yb2 := split(x, y)
	if xa.Shape()[0] != 1437 || xb.Shape()[0] != 360 || ya.Shape()[0] != 1437 || yb.Shape()[0] != 360 {
		t.Fatalf("split %v/%v, want 1437/360 rows", xa.Shape(), xb.Shape())
	}
	if !slices.Equal(xa.Float32s(), xa2.Float32s()) || !slices.Equal(yb.Int64s(), yb2.Int64s()) {
		t.Error("two splits differ")
	}
	if lo, hi := peel.Min(xa).Item(), peel.Max(xa).Item(); lo < 0 || hi > 1 {
		t.Errorf("pixels in %v…%v, want within [0, 1]", lo, hi)
	}
}

// TestCompiledStepEqualsEager: the compiled step is the eager step, and
// both decrease the loss on a fixed batch.
func TestCompiledStepEqualsEager(t *testing.T) {
	x, y := synthetic(numRows)
	xTrain, yTrain, _, _ := split(x, y)
	bx, by := peel.Narrow(xTrain, 0, 0, batchSize), peel.Narrow(yTrain, 0, 0, batchSize)
	opt := optim.Adam[MLP](lr)
	p := initMLP(peel.Key(1))
	eager, compiled := newStep(opt), transforms.Compile4(newStep(opt))
	pe, se, pc, sc := p, opt.Init(p), p, opt.Init(p)
	var first, last float64
	for i := range 5 {
		oe, oc := eager(pe, se, bx, by), compiled(pc, sc, bx, by)
		pe, se, _ = oe.Unpack()
		pc, sc, _ = oc.Unpack()
		le, lc := tree.Leaves(oe), tree.Leaves(oc)
		for k := range le {
			g, w := peel.AsType(lc[k], peel.Float64).Float64s(), peel.AsType(le[k], peel.Float64).Float64s()
			for j := range w {
				if d := math.Abs(g[j] - w[j]); !(d <= 1e-5*(1+math.Abs(w[j]))) {
					t.Fatalf("step %d, leaf %s[%d]: compiled %v, eager %v", i, tree.Paths(oe)[k], j, g[j], w[j])
				}
			}
		}
		if i == 0 {
			first = oe.V2.Item()
		}
		last = oe.V2.Item()
	}
	if !(last < first) {
		t.Errorf("loss on a fixed batch went from %v to %v over 5 steps", first, last)
	}
}

// TestResume: a run that checkpoints every 3 epochs, is stopped after 7
// (its last checkpoint is epoch 6's) and then after 5 more epochs, and
// is resumed to the end, ends with the parameters and losses of an
// uninterrupted run, bit for bit (synthetic data: same data, same
// keyed batch order, same Adam state).
func TestResume(t *testing.T) {
	x, y := synthetic(numRows)
	xTrain, yTrain, _, _ := split(x, y)
	want, wantLosses, err := train(xTrain, yTrain, epochs, resume{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "digits.safetensors")
	r := resume{path: path, every: 3, stopAfter: 7}
	if _, _, err := train(xTrain, yTrain, epochs, r); err != errStopped {
		t.Fatalf("first run: %v, want errStopped", err)
	}
	r.stopAfter = 5 // resumes at epoch 6, stops after epoch 11 (checkpoint: 9)
	if _, _, err := train(xTrain, yTrain, epochs, r); err != errStopped {
		t.Fatalf("second run: %v, want errStopped", err)
	}
	r.stopAfter = 0
	got, gotLosses, err := train(xTrain, yTrain, epochs, r)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range tree.Leaves(want) {
		g := tree.Leaves(got)[i]
		if !slices.Equal(g.Float32s(), w.Float32s()) {
			t.Fatalf("parameter %s differs from the uninterrupted run's", tree.Paths(want)[i])
		}
	}
	if !slices.Equal(gotLosses, wantLosses) {
		t.Fatalf("losses %v, uninterrupted %v", gotLosses, wantLosses)
	}
}
