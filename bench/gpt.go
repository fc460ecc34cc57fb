package bench

import (
	"fmt"
	"slices"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/gpt/model"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// The GPT of examples/gpt at its default size (2 layers, 4 heads, width
// 64, context 64), a vocabulary of 96, batches of 32 sequences of 64
// tokens (2048 tokens a step); the torch peer runs the same model
// (examples/gpt/testdata/gpt_torch.py).
const (
	gptBatch, gptSampleTokens = 32, 63
	gptDoc                    = "one AdamW training step of examples/gpt's GPT (2 layers, 4 heads, width 64, context 64, vocabulary 96, dropout 0), batch 32×64 tokens, f32"
	gptSampleDoc              = "sampling examples/gpt's GPT (as gpt_step_f32): 63 tokens after a 1-token prompt, batch 1, temperature 1, top-k 10, KV cache in one compiled Scan; metric per token"
)

func gptConfig(dt peel.DType) model.Config {
	c := model.Small(96)
	c.Dropout, c.DType = 0, dt
	return c
}

// gptHyper is a constant learning rate of 1e-3 (the cosine's end equals
// its start), as the torch peer's.
func gptHyper() model.Hyper {
	return model.Hyper{LR: 1e-3, MinLR: 1e-3, DecaySteps: 1, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.99, Clip: 1}
}

// gptInputs are the step's fixed inputs: parameters, optimizer state and
// one batch.
type gptInputs struct {
	c    model.Config
	p    model.Params
	s    optim.State
	x, y *peel.Tensor
}

func gptSetup(dt peel.DType) gptInputs {
	c := gptConfig(peel.Float64)
	p := model.Init(peel.Key(42), c)
	// The same parameters in every dtype: drawn in f64, rounded.
	c.DType = dt
	p = tree.Map(func(l *peel.Tensor) *peel.Tensor { return peel.AsType(l, dt) }, p)
	toks := peel.RandInt(peel.Key(43), 0, int64(c.Vocab), 20000).Int64s()
	x, y := model.Batch(peel.Key(44), toks, gptBatch, c.Context)
	return gptInputs{c, p, model.Optimizer(gptHyper()).Init(p), x, y}
}

// gptCheck compares a step's loss and updated token table with the
// float64 eager step's.
func gptCheck() func(out tree.Tuple3[model.Params, optim.State, *peel.Tensor]) error {
	in := gptSetup(peel.Float64)
	ref := model.NewStep(in.c, model.Optimizer(gptHyper()), nil)(in.p, in.s, in.x, in.y, peel.Key(0))
	wantLoss, wantWTE := ref.V2.Item(), ref.V0.WTE.Float64s()
	return func(out tree.Tuple3[model.Params, optim.State, *peel.Tensor]) error {
		if out.V2 == nil {
			return fmt.Errorf("no step ran")
		}
		if err := compare([]float64{out.V2.Item()}, []float64{wantLoss}, 1e-5, 0); err != nil {
			return fmt.Errorf("loss: %w", err)
		}
		return compare(hostFloats(out.V0.WTE), wantWTE, 1e-4, 1e-6)
	}
}

// gptStepEager is the eager step, with each block checkpointed with
// remat unless it is nil (examples/gpt's -remat). Its live heap's peak
// is measured: what -remat is for.
func gptStepEager(name, doc string, remat *transforms.SavePolicy) Workload {
	return gptStepEagerWith(name, doc, func(gptInputs) *transforms.SavePolicy { return remat })
}

// gptBlockBudget is MemoryBudget at frac of what EverythingSaveable
// saves of one block of the step (RematPlan of the loss with every block
// checkpointed, over the blocks).
func gptBlockBudget(frac float64) func(gptInputs) *transforms.SavePolicy {
	return func(in gptInputs) *transforms.SavePolicy {
		all := transforms.RematPlan(func(p model.Params) *peel.Tensor {
			return model.Loss(in.c, p, in.x, in.y, model.Options{Remat: &transforms.EverythingSaveable})
		}, in.p).SavedBytes
		b := transforms.MemoryBudget(int64(frac * float64(all) / float64(in.c.Layers)))
		return &b
	}
}

func gptStepEagerWith(name, doc string, policy func(gptInputs) *transforms.SavePolicy) Workload {
	return Workload{
		Name: name, Impl: "peel", Doc: gptDoc + ", eager" + doc, Unit: "ms", Metric: perMs, LiveHeap: true,
		Setup: func() (func(), func() error) {
			in := gptSetup(peel.Float32)
			remat := policy(in)
			check := gptCheck()
			step := model.NewStep(in.c, model.Optimizer(gptHyper()), remat)
			var out tree.Tuple3[model.Params, optim.State, *peel.Tensor]
			key := peel.Key(0)
			return func() { out = step(in.p, in.s, in.x, in.y, key) }, func() error { return check(out) }
		},
	}
}

func gptStepCompiled() (func() (func(), func() transforms.CompileStats), func() error) {
	in := gptSetup(peel.Float32)
	check := gptCheck()
	key := peel.Key(0)
	var out tree.Tuple3[model.Params, optim.State, *peel.Tensor]
	compile := func() (func(), func() transforms.CompileStats) {
		var ins transforms.Inspector
		step := transforms.Compile5(model.NewStep(in.c, model.Optimizer(gptHyper()), nil), transforms.Inspect(&ins))
		return func() { out = step(in.p, in.s, in.x, in.y, key) }, ins.Stats
	}
	return compile, func() error { return check(out) }
}

func gptSample() (func() (func(), func() transforms.CompileStats), func() error) {
	in := gptSetup(peel.Float32)
	prompt := peel.FromInt64s([]int64{1}, 1, 1)
	key := peel.Key(5)
	s := model.Sampling{Temperature: 1, TopK: 10}
	var out *peel.Tensor
	want := model.Generate(in.c, in.p, prompt, key, gptSampleTokens, s).Int64s()
	compile := func() (func(), func() transforms.CompileStats) {
		var ins transforms.Inspector
		gen := transforms.Compile3(func(p model.Params, prompt, key *peel.Tensor) *peel.Tensor {
			return model.Generate(in.c, p, prompt, key, gptSampleTokens, s)
		}, transforms.Inspect(&ins))
		return func() { out = gen(in.p, prompt, key) }, ins.Stats
	}
	return compile, func() error {
		if got := out.Int64s(); !slices.Equal(got, want) {
			return fmt.Errorf("compiled sampler drew %v, eager %v", got, want)
		}
		return nil
	}
}

// gptWorkloads are the GPT's eager step and its sampler (compiled
// always: a sampler is a program run many times); the compiled step is
// in compiledWorkloadList.
func gptWorkloads() []Workload {
	ws := []Workload{
		gptStepEager("gpt_step_f32", "", nil),
		gptStepEager("gpt_step_f32_remat_dots", ", each block checkpointed with DotsSaveable", &transforms.DotsSaveable),
		gptStepEager("gpt_step_f32_remat_mincut", ", each block checkpointed with MinCut", &transforms.MinCut),
		gptStepEager("gpt_step_f32_remat_nothing", ", each block checkpointed with NothingSaveable", &transforms.NothingSaveable),
	}
	for _, pct := range []int{25, 50, 75, 100} {
		ws = append(ws, gptStepEagerWith(fmt.Sprintf("gpt_step_f32_remat_budget%d", pct),
			fmt.Sprintf(", each block checkpointed with MemoryBudget at %d%% of what EverythingSaveable saves of a block", pct), gptBlockBudget(float64(pct)/100)))
	}
	return append(ws, compiledWorkloads("gpt_sample_token", gptSampleDoc, "µs/token",
		func(ns float64) float64 { return ns / 1e3 / gptSampleTokens }, gptSample)...)
}

func gptCompiledWorkloads() []Workload {
	return compiledWorkloads("gpt_step_f32_compiled", "Compile of "+gptDoc, "ms", perMs, gptStepCompiled)
}
