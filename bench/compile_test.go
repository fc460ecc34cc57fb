package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestCompiledWorkloadsListed checks that every compiled workload comes
// right after its eager twin (or its twin's other compiled workloads) and
// has a _compile_time twin, and that the workloads are there.
func TestCompiledWorkloadsListed(t *testing.T) {
	ws := Workloads()
	index := map[string]int{}
	for i, w := range ws {
		index[w.Name] = i
	}
	for _, name := range []string{
		"tiny_chain_100_compiled", "chain_1m_f32_compiled", "chain_1m_f64_compiled",
		"gelu_composite_1m_f32_compiled", "gelu_grad_composite_1m_f32_compiled",
		"mlp_step_f32", "mlp_step_f32_compiled", "per_sample_grad_mlp_f32_compiled",
		"maml_step", "maml_step_compiled",
	} {
		if _, ok := index[name]; !ok {
			t.Errorf("no workload %s", name)
		}
	}
	for i, w := range ws {
		twin, _, ok := strings.Cut(w.Name, "_compiled")
		if !ok {
			continue
		}
		if !strings.HasSuffix(w.Name, "_compile_time") {
			if _, ok := index[w.Name+"_compile_time"]; !ok {
				t.Errorf("%s has no _compile_time twin", w.Name)
			}
		}
		j, ok := index[twin]
		if !ok {
			t.Errorf("%s has no eager twin %s", w.Name, twin)
			continue
		}
		for k := j + 1; k < i; k++ {
			if !strings.HasPrefix(ws[k].Name, twin+"_compiled") {
				t.Errorf("%s is not next to %s: %s comes between", w.Name, twin, ws[k].Name)
			}
		}
	}
}

// TestCompiledMeasuredWarm checks that Measure times a compiled workload
// on cache hits only (its first call, the trace, happens in the check
// before the warm-up), and that the _compile_time twin's every run is a
// first call whose trace time is its metric. Never the timing itself.
func TestCompiledMeasuredWarm(t *testing.T) {
	var stats []func() transforms.CompileStats
	setup := func() (func() (func(), func() transforms.CompileStats), func() error) {
		x := peel.FromFloat64s(randFloats(1, 64, -2, 2))
		var out *peel.Tensor
		compile := func() (func(), func() transforms.CompileStats) {
			var cIns transforms.Inspector
			c := transforms.Compile(chainFn, transforms.Inspect(&cIns))
			stats = append(stats, cIns.Stats)
			return func() { out = c(x) }, cIns.Stats
		}
		return compile, chainCheck(x, &out)
	}
	ws := compiledWorkloads("test_compiled", "test", "ns/op", perOp(1), setup)
	opt := Options{Reps: 3, MinTime: 3 * time.Millisecond, Warmup: time.Millisecond, Threads: 1}

	steady, err := Measure(ws[0], opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 {
		t.Fatalf("the steady workload compiled %d times, want once", len(stats))
	}
	s := stats[0]()
	if s.Misses != 1 || s.Hits != s.Calls-1 || s.Calls < 4 || s.Uncompiled != 0 {
		t.Errorf("steady workload: %+v; want one miss, then hits only", s)
	}

	stats = nil
	first, err := Measure(ws[1], opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) < 4 {
		t.Fatalf("the _compile_time workload compiled %d times", len(stats))
	}
	for i, st := range stats {
		if s := st(); s.Calls != 1 || s.Misses != 1 || s.TraceTime <= 0 {
			t.Fatalf("compile %d: %+v; want one call, a miss", i, s)
		}
	}
	if first.Workload != "test_compiled_compile_time" || first.Metric <= 0 || first.Unit != "trace-ms" {
		t.Errorf("compile-time record: %+v", first.Record())
	}
	// A hit allocates less than a trace (allocation counts, not times).
	if !(steady.Allocs < first.Allocs) {
		t.Errorf("allocations: %v per hit, %v per first call", steady.Allocs, first.Allocs)
	}
}

// TestMLPStepCheckCatchesErrors checks that the training step's check
// fails for a step that skips the update of one parameter or gets the
// loss wrong: its tolerances are tighter than one SGD step.
func TestMLPStepCheckCatchesErrors(t *testing.T) {
	p, x, onehot := mlpStepData()
	ref, loss := mlpStepRef(p, x, onehot)
	r := mlpStep(p, x, onehot)
	if err := checkStep(r, ref, loss); err != nil {
		t.Fatal(err)
	}
	for i, bad := range []stepResult{
		{Params: mlpParams{W1: p.W1, B1: r.Params.B1, W2: r.Params.W2, B2: r.Params.B2}, Loss: r.Loss},
		{Params: mlpParams{W1: r.Params.W1, B1: r.Params.B1, W2: r.Params.W2, B2: p.B2}, Loss: r.Loss},
		{Params: r.Params, Loss: peel.Mul(r.Loss, 1.001)},
	} {
		if checkStep(bad, ref, loss) == nil {
			t.Errorf("wrong step %d passed the check", i)
		}
	}
}

// TestCheckHits checks that a compiled function that traced again fails
// the compiled workloads' check.
func TestCheckHits(t *testing.T) {
	var cIns transforms.Inspector
	c := transforms.Compile(chainFn, transforms.Inspect(&cIns))
	c(peel.FromFloat64s(randFloats(1, 4, -1, 1)))
	c(peel.FromFloat64s(randFloats(1, 4, -1, 1)))
	if err := checkHits(cIns.Stats()); err != nil {
		t.Errorf("a function that hit the cache: %v", err)
	}
	c(peel.FromFloat64s(randFloats(1, 5, -1, 1)))
	if err := checkHits(cIns.Stats()); err == nil || !strings.Contains(err.Error(), "2 of 3 calls traced") {
		t.Errorf("a function that traced twice: %v", err)
	}
}
