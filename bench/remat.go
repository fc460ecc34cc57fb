package bench

import (
	"fmt"
	"math"

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
func cosCompiled(opts ...transforms.GradOption) compiledSetup {
	return func() (func() (func(), func() transforms.CompileStats), func() error) {
		x, h := cosData()
		var out cosInputs
		compile := func() (func(), func() transforms.CompileStats) {
			c := transforms.Compile(transforms.Grad(cosLoss, opts...))
			return func() { out = c.Call(x) }, c.Stats
		}
		return compile, func() error { return cosCheck(out, h) }
	}
}

// mlpStepBackward is the training step with its backward pass compiled
// (CompileBackward): the forward runs eagerly.
func mlpStepBackward() Workload {
	return Workload{
		Name: "mlp_step_f32_compile_backward", Impl: "peel",
		Doc:  mlpStepDoc + ", with Grad's backward pass compiled (CompileBackward) and the forward eager",
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			p, x, onehot := mlpStepData()
			ref, loss := mlpStepRef(p, x, onehot)
			vg := transforms.ValueAndGrad3(mlpStepLoss, transforms.CompileBackward())
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
		mlpStepBackward(),
	}
	ws = append(ws, compiledWorkloads("coscos_grad_f32_compiled", "Compile of "+cosDoc,
		"ms", perMs, cosCompiled())...)
	ws = append(ws, compiledWorkloads("coscos_grad_f32_compiled_mincut", "Compile of "+cosDoc+" with Remat(MinCut)",
		"ms", perMs, cosCompiled(transforms.Remat(transforms.MinCut)))...)
	return ws
}
