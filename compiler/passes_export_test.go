package compiler_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/transforms"
)

// Exported programs (transforms.Export) on the random programs of this
// package's generators: exported, written, read back and run, each
// equals the compiled function bit for bit (both are the same optimized
// graph run by a Program), on the same arguments.

// exportRoundTrip exports f at args, checks that the graph's encoding
// survives decoding, loads the bytes and compares the loaded program's
// results with Compile(f)'s.
func exportRoundTrip(t tb, what string, f func([]*T) []*T, args []*T) {
	t.Helper()
	want := transforms.Compile(f)(args)
	var e *transforms.Exported
	if err := peel.Catch(func() { e = transforms.Export(f, args) }); err != nil {
		t.Fatalf("%s: Export: %v", what, err)
	}
	if d := interptest.Reencodes(e.Graph()); d != "" {
		t.Fatalf("%s: re-encoding: %s\n%v", what, d, e.Graph())
	}
	l, err := transforms.LoadExported(e.Bytes())
	if err != nil {
		t.Fatalf("%s: LoadExported: %v\n%v", what, err, e.Graph())
	}
	got := l.Call(args...)
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("%s: result %d: %s\n%v", what, i, d, l.Graph())
		}
	}
}

// TestExportEveryOp exports every registry op at each of its samples
// (allEntries): every primitive they reach has its parameters written
// and read back. Under the race detector (which this test, with no
// goroutines of its own, does not need) every 16th sample is enough.
func TestExportEveryOp(t *testing.T) {
	exported, skipped := 0, 0
	prims := map[string]bool{}
	step := 1
	if raceEnabled {
		step = 16
	}
	for i, e := range allEntries() {
		if i%step != 0 {
			continue
		}
		f := func(xs []*T) []*T { return []*T{e.f(xs)} }
		if peel.Catch(func() { transforms.Compile(f)(e.args) }) != nil {
			skipped++ // not traceable (reads values): not one program
			continue
		}
		exportRoundTrip(t, e.name, f, e.args)
		for _, q := range transforms.Export(f, e.args).Graph().Eqns {
			prims[q.Prim.Name] = true
		}
		exported++
	}
	t.Logf("%d samples exported (%d primitives in their graphs), %d not traceable", exported, len(prims), skipped)
	if exported < 5000/step || len(prims) < 60/step {
		t.Fatalf("only %d samples, %d primitives exported", exported, len(prims))
	}
}

// TestExportRapid: random programs over the registry, and their
// gradients.
func TestExportRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProgram(t)
		if p == nil || len(p.inputs) == 0 {
			return
		}
		if peel.Catch(func() { transforms.Compile(p.run)(p.inputs) }) != nil {
			return // staging refuses some programs eager runs
		}
		exportRoundTrip(t, "program", p.run, p.inputs)
		loss := func(xs []*T) *T {
			s := peel.Scalar(0.0)
			for _, o := range p.run(xs) {
				if o.DType().IsFloat() {
					s = peel.Add(s, peel.Sum(peel.Square(peel.AsType(o, peel.Float64))))
				}
			}
			return s
		}
		for _, x := range p.inputs {
			if !x.DType().IsFloat() {
				return
			}
		}
		grad := func(xs []*T) []*T { return transforms.Grad(loss)(xs) }
		if peel.Catch(func() { transforms.Compile(grad)(p.inputs) }) != nil {
			return
		}
		exportRoundTrip(t, "gradient", grad, p.inputs)
	})
}

// TestExportRapidFused: the fusion-heavy programs of TestRandomPrograms,
// at their larger sizes.
func TestExportRapidFused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawExecProgram(t)
		c0 := peel.AsType(peel.Scalar(0.25), p.dt)
		exportRoundTrip(t, "program", p.build(c0), rgInputs(p, 1))
	})
}
