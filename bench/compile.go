package bench

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Compiled workloads (issue 13): workloads run through transforms.Compile,
// each named with a _compiled suffix next to its eager twin, and an MLP
// training step and a MAML step with eager and compiled variants.
//
// A compiled workload's Setup compiles once; the first call (trace,
// optimize, run) happens in the check that Measure runs before the
// warm-up, so the timed samples, the allocations per run and the peak
// heap are those of calls that hit the cache, and its check fails (the
// workload shows MISMATCH) when a later call traced again. Its twin
// <name>_compile_time times that first call instead: each run compiles
// afresh and calls once; its metric is the part of it spent tracing and
// optimizing (CompileStats.TraceTime).

// compiledSetup prepares a compiled workload: it makes the inputs and the
// reference and returns compile, which compiles the function afresh (a
// new transforms.Compile) and returns the call that is timed and that
// Compile's statistics, and check, which compares the latest call's
// result with the reference.
type compiledSetup func() (compile func() (call func(), stats func() transforms.CompileStats), check func() error)

// compiledWorkloads returns the workload that times the calls of one
// Compile of setup's function, and its <name>_compile_time twin that
// times a fresh Compile's first call.
func compiledWorkloads(name, doc, unit string, metric func(float64) float64, setup compiledSetup) []Workload {
	steady := Workload{
		Name: name, Impl: "peel", Doc: doc + " (calls after the first)",
		Unit: unit, Metric: metric,
		Setup: func() (func(), func() error) {
			compile, check := setup()
			call, stats := compile()
			return call, func() error {
				if err := check(); err != nil {
					return err
				}
				return checkHits(stats())
			}
		},
	}
	// The mean trace time per first call of the latest Setup's runs.
	var traceNs, firsts atomic.Int64
	first := Workload{
		Name: name + "_compile_time", Impl: "peel",
		Doc:  "first call of a fresh Compile for " + name + ": trace, optimize and one run; metric: trace and optimize alone",
		Unit: "trace-ms",
		Metric: func(float64) float64 {
			if n := firsts.Load(); n > 0 {
				return float64(traceNs.Load()) / float64(n) / 1e6
			}
			return 0
		},
		Setup: func() (func(), func() error) {
			compile, check := setup()
			traceNs.Store(0)
			firsts.Store(0)
			run := func() {
				call, stats := compile()
				call()
				traceNs.Add(int64(stats().TraceTime))
				firsts.Add(1)
			}
			return run, check
		},
	}
	return []Workload{steady, first}
}

// checkHits fails when a compiled function traced more than once: its
// calls after the first must hit the cache, or the workload times
// tracing instead of compiled code.
func checkHits(s transforms.CompileStats) error {
	if s.Misses > 1 || s.Uncompiled > 0 {
		return fmt.Errorf("not compiled code: %d of %d calls traced, %d ran uncompiled (last miss: %s)",
			s.Misses, s.Calls, s.Uncompiled, s.LastMiss)
	}
	return nil
}

func compiledWorkloadList() []Workload {
	var ws []Workload
	for _, g := range [][]Workload{
		compiledWorkloads("tiny_chain_100_compiled",
			"Compile of the 100-op tiny chain on f64[8]: per-op cost of compiled code",
			"ns/op", perOp(tinyChainOps), tinyChainCompiled),
		compiledWorkloads("chain_1m_f32_compiled", "Compile of tanh(2x+1)*x on 1<<20 f32",
			"ns/elem/op", perOp(chainN*chainOps), chainCompiled(peel.Float32)),
		compiledWorkloads("chain_1m_f64_compiled", "Compile of tanh(2x+1)*x on 1<<20 f64",
			"ns/elem/op", perOp(chainN*chainOps), chainCompiled(peel.Float64)),
		compiledWorkloads("gelu_composite_1m_f32_compiled",
			"Compile of mylib.gelu's composite (7 peel ops) on f32[4096,256]",
			"ns/elem", perOp(geluRows*geluCols), geluCompiled(false)),
		compiledWorkloads("gelu_grad_composite_1m_f32_compiled",
			"Compile(Grad) of Σ mylib.gelu's composite on f32[4096,256]",
			"ns/elem", perOp(geluRows*geluCols), geluCompiled(true)),
		{mlpStepEager()},
		compiledWorkloads("mlp_step_f32_compiled", "Compile of "+mlpStepDoc,
			"ms", perMs, mlpStepCompiled),
		compiledWorkloads("per_sample_grad_mlp_f32_compiled",
			"Compile(Vmap(Grad(loss))) of an MLP 784-128-10, batch 64",
			"ms", perMs, perSampleGradCompiled),
		{mamlEager()},
		compiledWorkloads("maml_step_compiled", "Compile of "+mamlDoc,
			"ms", perMs, mamlCompiled),
		rematWorkloads(),
		gptCompiledWorkloads(),
		whileWorkloads(),
		controlWorkloads(),
	} {
		ws = append(ws, g...)
	}
	return ws
}

func perMs(ns float64) float64 { return ns / 1e6 }

// tinyChainCompiled compiles the tiny chain (a, b, c captured constants).
func tinyChainCompiled() (func() (func(), func() transforms.CompileStats), func() error) {
	xs, as, bs, cs := tinyChainInputs()
	x0 := peel.FromFloat64s(xs)
	chain := tinyChainFn(peel.FromFloat64s(as), peel.FromFloat64s(bs), peel.FromFloat64s(cs))
	want := tinyChainWant(xs, as, bs, cs)
	var out *peel.Tensor
	compile := func() (func(), func() transforms.CompileStats) {
		var cIns transforms.Inspector
		c := transforms.Compile(chain, transforms.Inspect(&cIns))
		return func() { out = c(x0) }, cIns.Stats
	}
	return compile, func() error { return compare(out.Float64s(), want, 1e-12, 1e-12) }
}

// chainCompiled compiles tanh(2x+1)·x on 2^20 elements.
func chainCompiled(dt peel.DType) compiledSetup {
	return func() (func() (func(), func() transforms.CompileStats), func() error) {
		x := fromFloats(randFloats(5, chainN, -2, 2), dt)
		var out *peel.Tensor
		compile := func() (func(), func() transforms.CompileStats) {
			var cIns transforms.Inspector
			c := transforms.Compile(chainFn, transforms.Inspect(&cIns))
			return func() { out = c(x) }, cIns.Stats
		}
		return compile, chainCheck(x, &out)
	}
}

// geluCompiled compiles mylib.gelu's composite (or Grad of its sum) on
// the gelu workloads' f32 input.
func geluCompiled(grad bool) compiledSetup {
	return func() (func() (func(), func() transforms.CompileStats), func() error) {
		xs := randFloats(11, geluRows*geluCols, -4, 4)
		x := fromFloats(xs, peel.Float32, geluRows, geluCols)
		f := func(x *peel.Tensor) *peel.Tensor { return mylib.GeluComposite(x) }
		if grad {
			f = transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.GeluComposite(x)) })
		}
		var out *peel.Tensor
		compile := func() (func(), func() transforms.CompileStats) {
			var cIns transforms.Inspector
			c := transforms.Compile(f, transforms.Inspect(&cIns))
			return func() { out = c(x) }, cIns.Stats
		}
		return compile, geluCheck(xs, peel.Float32, grad, &out)
	}
}

// perSampleGradCompiled compiles per_sample_grad_mlp_f32's Vmap(Grad)
// (the parameters captured constants), checked like it against an eager
// Grad of single examples.
func perSampleGradCompiled() (func() (func(), func() transforms.CompileStats), func() error) {
	p, x, onehot := mlpSetup(peel.Float32)
	type ex struct{ X, Y *peel.Tensor }
	grad := func(e ex) mlpParams {
		return transforms.Grad(func(p mlpParams) *peel.Tensor { return mlpLoss(p, e.X, e.Y) })(p)
	}
	vgrad := transforms.Vmap(grad)
	var w1 *peel.Tensor
	compile := func() (func(), func() transforms.CompileStats) {
		var cIns transforms.Inspector
		c := transforms.Compile(vgrad, transforms.Inspect(&cIns))
		return func() { w1 = c(ex{X: x, Y: onehot}).W1 }, cIns.Stats
	}
	check := func() error {
		for _, i := range []int{0, mlpBatch - 1} {
			want := grad(ex{X: peel.Select(x, 0, i), Y: peel.Select(onehot, 0, i)}).W1
			if err := compare(hostFloats(peel.Select(w1, 0, i)), hostFloats(want), 1e-4, 1e-6); err != nil {
				return fmt.Errorf("example %d: %v", i, err)
			}
		}
		return nil
	}
	return compile, check
}

// The MLP training step: 784-256-10, tanh hidden layer, batch 128, f32,
// mean softmax cross-entropy, one SGD step of the four parameters.
const (
	stepIn, stepHidden, stepOut, stepBatch = 784, 256, 10, 128
	stepLR                                 = 0.1
)

const mlpStepDoc = "an MLP training step 784-256-10, batch 128, f32: forward, softmax cross-entropy, Grad, SGD update"

// stepResult is what one training step returns: the updated parameters
// and the loss before the update.
type stepResult struct {
	Params mlpParams
	Loss   *peel.Tensor
}

// mlpStepLoss is the mean softmax cross-entropy of the MLP on the batch.
func mlpStepLoss(p mlpParams, x, onehot *peel.Tensor) *peel.Tensor {
	h := peel.Tanh(peel.Add(peel.MatMul(x, p.W1), p.B1))
	logits := peel.Add(peel.MatMul(h, p.W2), p.B2)
	return peel.Div(peel.Neg(peel.Sum(peel.Mul(peel.LogSoftmax(logits, -1), onehot))), float64(x.Shape()[0]))
}

// mlpStep is one SGD step: p − lr·∇loss(p).
func mlpStep(p mlpParams, x, onehot *peel.Tensor) stepResult {
	loss, g := transforms.ValueAndGrad3(mlpStepLoss)(p, x, onehot)
	next := tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(stepLR)) }, p, g)
	return stepResult{Params: next, Loss: loss}
}

// mlpStepData is the step's deterministic parameters and batch (labels
// i mod 10, one-hot).
func mlpStepData() (p mlpParams, x, onehot *peel.Tensor) {
	s1, s2 := 1/math.Sqrt(stepIn), 1/math.Sqrt(stepHidden)
	p = mlpParams{
		W1: fromFloats(randFloats(31, stepIn*stepHidden, -s1, s1), peel.Float32, stepIn, stepHidden),
		B1: fromFloats(randFloats(32, stepHidden, -0.1, 0.1), peel.Float32, stepHidden),
		W2: fromFloats(randFloats(33, stepHidden*stepOut, -s2, s2), peel.Float32, stepHidden, stepOut),
		B2: fromFloats(randFloats(34, stepOut, -0.1, 0.1), peel.Float32, stepOut),
	}
	x = fromFloats(randFloats(35, stepBatch*stepIn, 0, 1), peel.Float32, stepBatch, stepIn)
	labels := make([]int64, stepBatch)
	for i := range labels {
		labels[i] = int64(i % stepOut)
	}
	return p, x, peel.OneHot(peel.FromInt64s(labels), stepOut, peel.Float32)
}

// mlpStepRef recomputes the step with float64 loops from the f32 values
// of the parameters and the batch: the updated W1, b1, W2, b2 and the
// loss.
func mlpStepRef(p mlpParams, xt, onehot *peel.Tensor) (next [4][]float64, loss float64) {
	w1, b1, w2, b2 := hostFloats(p.W1), hostFloats(p.B1), hostFloats(p.W2), hostFloats(p.B2)
	x, y := hostFloats(xt), hostFloats(onehot)
	const n, d, hd, k = stepBatch, stepIn, stepHidden, stepOut
	h := make([]float64, n*hd)
	for i := range n {
		row := h[i*hd : (i+1)*hd]
		copy(row, b1)
		for j := range d {
			if v := x[i*d+j]; v != 0 {
				for m, w := range w1[j*hd : (j+1)*hd] {
					row[m] += v * w
				}
			}
		}
		for m := range row {
			row[m] = math.Tanh(row[m])
		}
	}
	// dlogits = (softmax − onehot)/n.
	dl := make([]float64, n*k)
	for i := range n {
		z := dl[i*k : (i+1)*k]
		copy(z, b2)
		for m := range hd {
			for c := range k {
				z[c] += h[i*hd+m] * w2[m*k+c]
			}
		}
		mx := math.Inf(-1)
		for _, v := range z {
			mx = math.Max(mx, v)
		}
		s := 0.0
		for _, v := range z {
			s += math.Exp(v - mx)
		}
		lse := mx + math.Log(s)
		for c := range k {
			loss -= y[i*k+c] * (z[c] - lse) / n
			z[c] = (math.Exp(z[c]-lse) - y[i*k+c]) / n
		}
	}
	gw2, gb2 := make([]float64, hd*k), make([]float64, k)
	dz := make([]float64, n*hd) // through tanh
	for i := range n {
		for c := range k {
			gb2[c] += dl[i*k+c]
		}
		for m := range hd {
			dh := 0.0
			for c := range k {
				gw2[m*k+c] += h[i*hd+m] * dl[i*k+c]
				dh += dl[i*k+c] * w2[m*k+c]
			}
			dz[i*hd+m] = dh * (1 - h[i*hd+m]*h[i*hd+m])
		}
	}
	gw1, gb1 := make([]float64, d*hd), make([]float64, hd)
	for i := range n {
		for m := range hd {
			gb1[m] += dz[i*hd+m]
		}
		for j := range d {
			if v := x[i*d+j]; v != 0 {
				g := gw1[j*hd : (j+1)*hd]
				for m, z := range dz[i*hd : (i+1)*hd] {
					g[m] += v * z
				}
			}
		}
	}
	for i, pg := range [4][2][]float64{{w1, gw1}, {b1, gb1}, {w2, gw2}, {b2, gb2}} {
		next[i] = make([]float64, len(pg[0]))
		for j := range pg[0] {
			next[i][j] = pg[0][j] - stepLR*pg[1][j]
		}
	}
	return next, loss
}

// checkStep compares a step's result with the float64 recomputation.
func checkStep(r stepResult, ref [4][]float64, loss float64) error {
	for i, t := range []*peel.Tensor{r.Params.W1, r.Params.B1, r.Params.W2, r.Params.B2} {
		if err := compare(hostFloats(t), ref[i], 1e-5, 1e-7); err != nil {
			return fmt.Errorf("%s: %v", [4]string{"W1", "b1", "W2", "b2"}[i], err)
		}
	}
	if err := compare(hostFloats(r.Loss), []float64{loss}, 1e-5, 0); err != nil {
		return fmt.Errorf("loss: %v", err)
	}
	return nil
}

// mlpStepEager is the training step, eager.
func mlpStepEager() Workload {
	return Workload{
		Name: "mlp_step_f32", Impl: "peel", Doc: mlpStepDoc, LiveHeap: true,
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			p, x, onehot := mlpStepData()
			ref, loss := mlpStepRef(p, x, onehot)
			var out stepResult
			run := func() { out = mlpStep(p, x, onehot) }
			return run, func() error { return checkStep(out, ref, loss) }
		},
	}
}

// mlpStepCompiled is the training step under Compile3, checked against
// the float64 recomputation and against the eager step.
func mlpStepCompiled() (func() (func(), func() transforms.CompileStats), func() error) {
	p, x, onehot := mlpStepData()
	ref, loss := mlpStepRef(p, x, onehot)
	eager := mlpStep(p, x, onehot)
	var out stepResult
	compile := func() (func(), func() transforms.CompileStats) {
		var cIns transforms.Inspector
		c := transforms.Compile3(mlpStep, transforms.Inspect(&cIns))
		return func() { out = c(p, x, onehot) }, cIns.Stats
	}
	check := func() error {
		if err := checkStep(out, ref, loss); err != nil {
			return err
		}
		for i, pair := range [][2]*peel.Tensor{
			{out.Params.W1, eager.Params.W1}, {out.Params.B1, eager.Params.B1},
			{out.Params.W2, eager.Params.W2}, {out.Params.B2, eager.Params.B2}, {out.Loss, eager.Loss},
		} {
			if err := compare(hostFloats(pair[0]), hostFloats(pair[1]), 1e-5, 1e-7); err != nil {
				return fmt.Errorf("against eager, %s: %v", [5]string{"W1", "b1", "W2", "b2", "loss"}[i], err)
			}
		}
		return nil
	}
	return compile, check
}

// The MAML step: examples/maml's sine-regression MLP 1-40-40-1 (ReLU,
// f64), 4 tasks of 20 support and 20 query points; the meta-loss is the
// mean over tasks (Vmap) of the query loss after one inner SGD step on
// the support points (Grad inside), and the step computes it and its
// gradient (Grad through the inner step).
const (
	mamlTasks, mamlK, mamlHidden = 4, 20, 40
	mamlAlpha                    = 0.1
)

const mamlDoc = "a MAML step: ValueAndGrad of the mean over 4 tasks (Vmap) of the loss after an inner SGD step (Grad), MLP 1-40-40-1 f64"

// mamlResult is the meta-loss and its gradient.
type mamlResult struct {
	Loss  *peel.Tensor
	Grads []*peel.Tensor
}

func mamlNet(params []*peel.Tensor, x *peel.Tensor) *peel.Tensor {
	x = peel.ReLU(peel.Add(peel.MatMul(x, params[0]), params[1]))
	x = peel.ReLU(peel.Add(peel.MatMul(x, params[2]), params[3]))
	return peel.Add(peel.MatMul(x, params[4]), params[5])
}

func mamlMSE(x, y *peel.Tensor) *peel.Tensor { return peel.Mean(peel.Square(peel.Sub(x, y))) }

// mamlTaskLoss adapts params to one task [x1, y1, x2, y2] with an SGD step
// on its support points and returns the query loss.
func mamlTaskLoss(params, task []*peel.Tensor) *peel.Tensor {
	inner := func(p []*peel.Tensor, x, y *peel.Tensor) *peel.Tensor { return mamlMSE(mamlNet(p, x), y) }
	g := transforms.Grad3(inner)(params, task[0], task[1])
	adapted := tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(mamlAlpha)) }, params, g)
	return mamlMSE(mamlNet(adapted, task[2]), task[3])
}

// mamlMetaLoss is the mean of the tasks' adapted losses.
func mamlMetaLoss(params, tasks []*peel.Tensor) *peel.Tensor {
	return peel.Mean(transforms.Vmap2(mamlTaskLoss, transforms.InAxes(transforms.NoAxis, 0))(params, tasks))
}

// mamlStep is the meta-loss and its gradient with respect to params.
func mamlStep(params, tasks []*peel.Tensor) mamlResult {
	loss, g := transforms.ValueAndGrad2(mamlMetaLoss)(params, tasks)
	return mamlResult{Loss: loss, Grads: g}
}

// mamlData is deterministic parameters and tasks: y = A·sin(x + φ), A in
// [0.1, 0.5], φ in [0, π], x in [-5, 5], each task tensor [4, 20, 1].
func mamlData() (params, tasks []*peel.Tensor) {
	s := 1 / math.Sqrt(mamlHidden)
	params = []*peel.Tensor{
		peel.FromFloat64s(randFloats(41, mamlHidden, -1, 1), 1, mamlHidden),
		peel.FromFloat64s(randFloats(42, mamlHidden, -0.1, 0.1), mamlHidden),
		peel.FromFloat64s(randFloats(43, mamlHidden*mamlHidden, -s, s), mamlHidden, mamlHidden),
		peel.FromFloat64s(randFloats(44, mamlHidden, -0.1, 0.1), mamlHidden),
		peel.FromFloat64s(randFloats(45, mamlHidden, -s, s), mamlHidden, 1),
		peel.FromFloat64s(randFloats(46, 1, -0.1, 0.1), 1),
	}
	amp, phase := randFloats(47, mamlTasks, 0.1, 0.5), randFloats(48, mamlTasks, 0, math.Pi)
	for seed := uint64(49); seed < 51; seed++ {
		xs := randFloats(seed, mamlTasks*mamlK, -5, 5)
		ys := make([]float64, len(xs))
		for i, v := range xs {
			t := i / mamlK
			ys[i] = amp[t] * math.Sin(v+phase[t])
		}
		tasks = append(tasks, peel.FromFloat64s(xs, mamlTasks, mamlK, 1), peel.FromFloat64s(ys, mamlTasks, mamlK, 1))
	}
	return params, tasks
}

// mamlRef checks the eager meta-gradient against central differences of
// the eager meta-loss along two fixed directions, and returns a check of
// a step's result against that eager step.
func mamlRef(params, tasks []*peel.Tensor) (check func(mamlResult) error, err error) {
	eager := mamlStep(params, tasks)
	// The meta-loss jumps where a ReLU of the inner step switches (the
	// inner gradient does): a small step keeps the differences off them.
	const eps = 1e-7
	for seed := uint64(60); seed < 62; seed++ {
		var dirs, plus, minus []*peel.Tensor
		dot := 0.0
		for i, p := range params {
			ps := p.Float64s()
			d := randFloats(seed*10+uint64(i), len(ps), -1, 1)
			dirs = append(dirs, peel.FromFloat64s(d, p.Shape()...))
			g := eager.Grads[i].Float64s()
			for j := range d {
				dot += d[j] * g[j]
			}
			plus = append(plus, peel.Add(p, peel.Mul(dirs[i], eps)))
			minus = append(minus, peel.Sub(p, peel.Mul(dirs[i], eps)))
		}
		fd := (mamlMetaLoss(plus, tasks).Item() - mamlMetaLoss(minus, tasks).Item()) / (2 * eps)
		if math.Abs(fd-dot) > 1e-6*(math.Abs(fd)+1e-3) {
			return nil, fmt.Errorf("meta-gradient along direction %d: %v, central differences %v", seed-60, dot, fd)
		}
	}
	want := append([]*peel.Tensor{eager.Loss}, eager.Grads...)
	return func(r mamlResult) error {
		got := append([]*peel.Tensor{r.Loss}, r.Grads...)
		if len(got) != len(want) {
			return fmt.Errorf("%d gradients, want %d", len(got)-1, len(want)-1)
		}
		for i := range got {
			if err := compare(hostFloats(got[i]), hostFloats(want[i]), 1e-10, 1e-12); err != nil {
				if i == 0 {
					return fmt.Errorf("meta-loss: %v", err)
				}
				return fmt.Errorf("gradient %d: %v", i-1, err)
			}
		}
		return nil
	}, nil
}

// mamlEager is the MAML step, eager, checked against central differences.
func mamlEager() Workload {
	return Workload{
		Name: "maml_step", Impl: "peel", Doc: mamlDoc,
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			params, tasks := mamlData()
			check, err := mamlRef(params, tasks)
			var out mamlResult
			run := func() { out = mamlStep(params, tasks) }
			return run, func() error {
				if err != nil {
					return err
				}
				return check(out)
			}
		},
	}
}

// mamlCompiled is the MAML step under Compile2, checked against the eager
// step (itself checked against central differences).
func mamlCompiled() (func() (func(), func() transforms.CompileStats), func() error) {
	params, tasks := mamlData()
	check, err := mamlRef(params, tasks)
	var out mamlResult
	compile := func() (func(), func() transforms.CompileStats) {
		var cIns transforms.Inspector
		c := transforms.Compile2(mamlStep, transforms.Inspect(&cIns))
		return func() { out = c(params, tasks) }, cIns.Stats
	}
	return compile, func() error {
		if err != nil {
			return err
		}
		return check(out)
	}
}
