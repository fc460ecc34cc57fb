package bench

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Rematerialization and compiled backward passes (issue 14): the
// gradient of Σ cos(cos(a+b+c+d)) on four 1024×2048 f32 inputs, saving
// what linearization saves or what the min-cut partitioner chooses,
// eager and compiled; and the MLP training step with only its backward
// pass compiled.

const (
	cosRows, cosCols = 1024, 2048
	cosDoc           = "Grad of Σ cos(cos(a+b+c+d)), four f32[1024,2048] inputs"
)

// cosInputs are the four inputs.
type cosInputs struct{ A, B, C, D *peel.Tensor }

func cosLoss(x cosInputs) *peel.Tensor {
	return peel.Sum(peel.Cos(peel.Cos(peel.Add(peel.Add(peel.Add(x.A, x.B), x.C), x.D))))
}

func cosData() (cosInputs, [4][]float64) {
	var h [4][]float64
	for i := range h {
		h[i] = randFloats(uint64(41+i), cosRows*cosCols, -0.5, 0.5)
	}
	t := func(v []float64) *peel.Tensor { return fromFloats(v, peel.Float32, cosRows, cosCols) }
	return cosInputs{t(h[0]), t(h[1]), t(h[2]), t(h[3])}, h
}

// cosCheck compares each gradient with sin(cos(s))·sin(s) in float64
// from the f32 inputs.
func cosCheck(g cosInputs, h [4][]float64) error {
	want := make([]float64, len(h[0]))
	for i := range want {
		s := float64(float32(h[0][i])) + float64(float32(h[1][i])) + float64(float32(h[2][i])) + float64(float32(h[3][i]))
		want[i] = math.Sin(math.Cos(s)) * math.Sin(s)
	}
	for k, t := range []*peel.Tensor{g.A, g.B, g.C, g.D} {
		if err := compare(hostFloats(t), want, 1e-4, 1e-6); err != nil {
			return fmt.Errorf("gradient %d: %v", k, err)
		}
	}
	return nil
}

// cosEager is the eager gradient, with the given options.
func cosEager(name, doc string, opts ...transforms.GradOption) Workload {
	return Workload{
		Name: name, Impl: "peel", Doc: doc, Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			x, h := cosData()
			grad := transforms.Grad(cosLoss, opts...)
			var out cosInputs
			return func() { out = grad(x) }, func() error { return cosCheck(out, h) }
		},
	}
}

// cosCompiled is Compile of the gradient, with the given options.
func cosCompiled(opts ...transforms.CompileOption) compiledSetup {
	return func() (func() (func(), func() transforms.CompileStats), func() error) {
		x, h := cosData()
		var out cosInputs
		compile := func() (func(), func() transforms.CompileStats) {
			var cIns transforms.Inspector
			c := transforms.Compile(transforms.Grad(cosLoss), append(opts, transforms.Inspect(&cIns))...)
			return func() { out = c(x) }, cIns.Stats
		}
		return compile, func() error { return cosCheck(out, h) }
	}
}

// mlpStepWith is the training step with gradient options: its backward
// pass compiled (CompileBackward, the forward eager), or a checkpoint
// policy (Remat), whose live heap it measures.
func mlpStepWith(name, doc string, opts ...transforms.GradOption) Workload {
	return Workload{
		Name: name, Impl: "peel", Doc: mlpStepDoc + ", " + doc,
		Unit: "ms", Metric: perMs, LiveHeap: true,
		Setup: func() (func(), func() error) {
			p, x, onehot := mlpStepData()
			ref, loss := mlpStepRef(p, x, onehot)
			vg := transforms.ValueAndGrad3(mlpStepLoss, opts...)
			var out stepResult
			run := func() {
				l, g := vg(p, x, onehot)
				next := mlpParams{
					W1: peel.Sub(p.W1, peel.Mul(g.W1, stepLR)), B1: peel.Sub(p.B1, peel.Mul(g.B1, stepLR)),
					W2: peel.Sub(p.W2, peel.Mul(g.W2, stepLR)), B2: peel.Sub(p.B2, peel.Mul(g.B2, stepLR)),
				}
				out = stepResult{Params: next, Loss: l}
			}
			return run, func() error { return checkStep(out, ref, loss) }
		},
	}
}

// rematWorkloads are the workloads of this file, eager ones first (the
// compiled ones are placed after their eager twins).
func rematWorkloads() []Workload {
	ws := []Workload{
		cosEager("coscos_grad_f32", cosDoc+", eager (saves what linearization saves)"),
		cosEager("coscos_grad_f32_mincut", cosDoc+", eager with Remat(MinCut)", transforms.Remat(transforms.MinCut)),
		mlpStepWith("mlp_step_f32_compile_backward", "with Grad's backward pass compiled (CompileBackward) and the forward eager", transforms.CompileBackward()),
		mlpStepWith("mlp_step_f32_remat_nothing", "with Remat(NothingSaveable)", transforms.Remat(transforms.NothingSaveable)),
		mlpStepWith("mlp_step_f32_remat_dots", "with Remat(DotsSaveable)", transforms.Remat(transforms.DotsSaveable)),
		mlpStepWith("mlp_step_f32_remat_mincut", "with Remat(MinCut)", transforms.Remat(transforms.MinCut)),
	}
	ws = append(ws, compiledWorkloads("coscos_grad_f32_compiled", "Compile of "+cosDoc,
		"ms", perMs, cosCompiled())...)
	ws = append(ws, compiledWorkloads("coscos_grad_f32_compiled_mincut", "Compile of "+cosDoc+" with GradRemat(MinCut)",
		"ms", perMs, cosCompiled(transforms.GradRemat(transforms.MinCut)))...)
	ws = append(ws, transformerWorkloads()...)
	for i := range ws {
		if !strings.HasSuffix(ws[i].Name, "_compile_time") {
			ws[i].LiveHeap = true
		}
	}
	return ws
}

// A small transformer: 2 blocks of single-head self-attention and a
// GELU MLP (width 128, hidden 512), each with a residual and a layer
// norm, on a sequence of 128; the loss is the mean square of the output.
const (
	tfSeq, tfWidth, tfHidden, tfLayers = 128, 128, 512, 2
	tfDoc                              = "Grad of a 2-block transformer (attention + MLP + layer norm), sequence 128, width 128, f32"
)

type tfLayer struct{ Wq, Wk, Wv, Wo, W1, B1, W2, B2 *peel.Tensor }

type tfParams struct {
	Layers []tfLayer
	X      *peel.Tensor
}

func tfData(dt peel.DType) tfParams {
	w := func(seed uint64, rows, cols int) *peel.Tensor {
		s := 1 / math.Sqrt(float64(rows))
		return fromFloats(randFloats(seed, rows*cols, -s, s), dt, rows, cols)
	}
	var p tfParams
	for l := range tfLayers {
		s := uint64(100 + 10*l)
		p.Layers = append(p.Layers, tfLayer{
			Wq: w(s, tfWidth, tfWidth), Wk: w(s+1, tfWidth, tfWidth), Wv: w(s+2, tfWidth, tfWidth), Wo: w(s+3, tfWidth, tfWidth),
			W1: w(s+4, tfWidth, tfHidden), B1: fromFloats(randFloats(s+5, tfHidden, -0.1, 0.1), dt, tfHidden),
			W2: w(s+6, tfHidden, tfWidth), B2: fromFloats(randFloats(s+7, tfWidth, -0.1, 0.1), dt, tfWidth),
		})
	}
	p.X = fromFloats(randFloats(99, tfSeq*tfWidth, -1, 1), dt, tfSeq, tfWidth)
	return p
}

func layerNorm(x *peel.Tensor) *peel.Tensor {
	mu := peel.Keep(peel.Mean, x, -1)
	d := peel.Sub(x, mu)
	v := peel.Keep(peel.Mean, peel.Mul(d, d), -1)
	return peel.Mul(d, peel.Rsqrt(peel.Add(v, 1e-5)))
}

func tfBlock(l tfLayer, x *peel.Tensor) *peel.Tensor {
	q, k, v := peel.MatMul(x, l.Wq), peel.MatMul(x, l.Wk), peel.MatMul(x, l.Wv)
	a := peel.Softmax(peel.Mul(peel.MatMul(q, peel.Transpose(k)), 1/math.Sqrt(tfWidth)), -1)
	x = layerNorm(peel.Add(x, peel.MatMul(peel.MatMul(a, v), l.Wo)))
	h := peel.GELUTanh(peel.Add(peel.MatMul(x, l.W1), l.B1))
	return layerNorm(peel.Add(x, peel.Add(peel.MatMul(h, l.W2), l.B2)))
}

// tfLoss runs the blocks, each through block (f itself, or a
// checkpoint of it).
func tfLoss(block func(tfLayer, *peel.Tensor) *peel.Tensor) func(tfParams) *peel.Tensor {
	return func(p tfParams) *peel.Tensor {
		x := p.X
		for _, l := range p.Layers {
			x = block(l, x)
		}
		return peel.Mean(peel.Mul(x, x))
	}
}

// tfCheckpointed checkpoints each block with policy.
func tfCheckpointed(policy transforms.SavePolicy) func(tfLayer, *peel.Tensor) *peel.Tensor {
	type in struct {
		L tfLayer
		X *peel.Tensor
	}
	ck := transforms.Checkpoint(func(a in) *peel.Tensor { return tfBlock(a.L, a.X) }, policy)
	return func(l tfLayer, x *peel.Tensor) *peel.Tensor { return ck(in{l, x}) }
}

// tfBudgeted checkpoints each block with MemoryBudget at frac of the
// bytes EverythingSaveable saves of a block (RematPlan, measured at the
// first block's first call, whatever level its values are on).
func tfBudgeted(frac float64) func(tfLayer, *peel.Tensor) *peel.Tensor {
	var once sync.Once
	var ck func(tfLayer, *peel.Tensor) *peel.Tensor
	return func(l tfLayer, x *peel.Tensor) *peel.Tensor {
		once.Do(func() {
			type in struct {
				L tfLayer
				X *peel.Tensor
			}
			all := transforms.RematPlan(func(a in) *peel.Tensor {
				return peel.Sum(transforms.Checkpoint(func(a in) *peel.Tensor { return tfBlock(a.L, a.X) }, transforms.EverythingSaveable)(a))
			}, in{l, x}).SavedBytes
			ck = tfCheckpointed(transforms.MemoryBudget(int64(frac * float64(all))))
		})
		return ck(l, x)
	}
}

// tfCheck compares the gradient of X with the float64 eager gradient.
func tfCheck(ref []float64) func(g tfParams) error {
	return func(g tfParams) error {
		return compare(hostFloats(g.X), ref, 2e-3, 1e-5)
	}
}

func tfRef() []float64 {
	return hostFloats(transforms.Grad(tfLoss(tfBlock))(tfData(peel.Float64)).X)
}

func tfEager(name, doc string, block func(tfLayer, *peel.Tensor) *peel.Tensor) Workload {
	return Workload{
		Name: name, Impl: "peel", Doc: doc, Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			p, check := tfData(peel.Float32), tfCheck(tfRef())
			grad := transforms.Grad(tfLoss(block))
			var out tfParams
			return func() { out = grad(p) }, func() error { return check(out) }
		},
	}
}

func tfCompiled(block func(tfLayer, *peel.Tensor) *peel.Tensor) compiledSetup {
	return func() (func() (func(), func() transforms.CompileStats), func() error) {
		p, check := tfData(peel.Float32), tfCheck(tfRef())
		var out tfParams
		compile := func() (func(), func() transforms.CompileStats) {
			var cIns transforms.Inspector
			c := transforms.Compile(transforms.Grad(tfLoss(block)), transforms.Inspect(&cIns))
			return func() { out = c(p) }, cIns.Stats
		}
		return compile, func() error { return check(out) }
	}
}

func transformerWorkloads() []Workload {
	ws := []Workload{
		tfEager("transformer_grad_f32", tfDoc+", eager", tfBlock),
		tfEager("transformer_grad_f32_ckpt_dots", tfDoc+", eager, each block checkpointed with DotsSaveable", tfCheckpointed(transforms.DotsSaveable)),
		tfEager("transformer_grad_f32_ckpt_mincut", tfDoc+", eager, each block checkpointed with MinCut", tfCheckpointed(transforms.MinCut)),
		tfEager("transformer_grad_f32_ckpt_nothing", tfDoc+", eager, each block checkpointed with NothingSaveable", tfCheckpointed(transforms.NothingSaveable)),
	}
	for _, pct := range []int{25, 50, 75, 100} {
		ws = append(ws, tfEager(fmt.Sprintf("transformer_grad_f32_ckpt_budget%d", pct),
			fmt.Sprintf("%s, eager, each block checkpointed with MemoryBudget at %d%% of what EverythingSaveable saves", tfDoc, pct),
			tfBudgeted(float64(pct)/100)))
	}
	ws = append(ws, compiledWorkloads("transformer_grad_f32_compiled", "Compile of "+tfDoc, "ms", perMs, tfCompiled(tfBlock))...)
	return ws
}
