package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Control flow (issue 15): the gradient of an Elman RNN,
// h' = tanh(h·Wh + x_t·Wx + b), over a sequence, written with
// transforms.Scan and as a plain Go loop, eager and compiled; and the
// compile times of both for 10, 100 and 1000 steps (a Scan traces one
// step whatever the length; the Go loop traces every step).

const (
	rnnHidden, rnnIn, rnnBatch, rnnSteps = 128, 128, 32, 100
	rnnDoc                               = "Grad (Wh, Wx, b) of Σ h_T² for an Elman RNN h' = tanh(h·Wh + x_t·Wx + b), hidden 128, input 128, batch 32, f32"
)

// rnnParams are the differentiated parameters.
type rnnParams struct{ Wh, Wx, B *peel.Tensor }

// rnnData returns the parameters and the inputs x, [steps, batch, in],
// in dt.
func rnnData(dt peel.DType, steps int) (rnnParams, *peel.Tensor) {
	s := 1 / math.Sqrt(rnnHidden)
	p := rnnParams{
		Wh: fromFloats(randFloats(71, rnnHidden*rnnHidden, -s, s), dt, rnnHidden, rnnHidden),
		Wx: fromFloats(randFloats(72, rnnIn*rnnHidden, -s, s), dt, rnnIn, rnnHidden),
		B:  fromFloats(randFloats(73, rnnHidden, -0.1, 0.1), dt, rnnHidden),
	}
	return p, fromFloats(randFloats(74, steps*rnnBatch*rnnIn, -1, 1), dt, steps, rnnBatch, rnnIn)
}

// rnnCell is one step.
func rnnCell(p rnnParams, h, x *peel.Tensor) *peel.Tensor {
	return peel.Tanh(peel.Add(peel.Add(peel.MatMul(h, p.Wh), peel.MatMul(x, p.Wx)), p.B))
}

// rnnScanLoss is the loss with the steps in a Scan over xs (captured).
func rnnScanLoss(xs *peel.Tensor, opts ...peel.ScanOption) func(rnnParams) *peel.Tensor {
	return func(p rnnParams) *peel.Tensor {
		h0 := peel.Zeros(p.Wh.DType(), rnnBatch, rnnHidden)
		h, _ := transforms.Scan(func(h, x *peel.Tensor) (*peel.Tensor, struct{}) {
			return rnnCell(p, h, x), struct{}{}
		}, h0, xs, opts...)
		return peel.Sum(peel.Mul(h, h))
	}
}

// rnnLoopLoss is the loss with the steps in a Go loop.
func rnnLoopLoss(xs *peel.Tensor) func(rnnParams) *peel.Tensor {
	return func(p rnnParams) *peel.Tensor {
		h := peel.Zeros(p.Wh.DType(), rnnBatch, rnnHidden)
		for t := range xs.Shape()[0] {
			h = rnnCell(p, h, peel.Index(xs, t))
		}
		return peel.Sum(peel.Mul(h, h))
	}
}

// rnnRef is the float64 gradient of the Go loop, from the same inputs.
func rnnRef(steps int) rnnParams {
	p, xs := rnnData(peel.Float64, steps)
	return transforms.Grad(rnnLoopLoss(xs))(p)
}

func rnnCheck(ref rnnParams, g *rnnParams) error {
	for _, c := range []struct {
		name      string
		got, want *peel.Tensor
	}{{"Wh", g.Wh, ref.Wh}, {"Wx", g.Wx, ref.Wx}, {"b", g.B, ref.B}} {
		if c.got == nil {
			return fmt.Errorf("no gradient of %s", c.name)
		}
		if err := compare(hostFloats(c.got), hostFloats(c.want), 2e-3, 1e-4); err != nil {
			return fmt.Errorf("gradient of %s: %v", c.name, err)
		}
	}
	return nil
}

// rnnLosses builds the loss on xs: Scan's or the Go loop's.
type rnnLosses func(xs *peel.Tensor) func(rnnParams) *peel.Tensor

func rnnScan(opts ...peel.ScanOption) rnnLosses {
	return func(xs *peel.Tensor) func(rnnParams) *peel.Tensor { return rnnScanLoss(xs, opts...) }
}

func rnnEager(name, doc string, loss rnnLosses) Workload {
	return Workload{
		Name: name, Impl: "peel", Doc: doc, Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			p, xs := rnnData(peel.Float32, rnnSteps)
			ref := rnnRef(rnnSteps)
			grad := transforms.Grad(loss(xs))
			var out rnnParams
			return func() { out = grad(p) }, func() error { return rnnCheck(ref, &out) }
		},
	}
}

func rnnCompiled(loss rnnLosses, steps int) compiledSetup {
	return func() (func() (func(), func() transforms.CompileStats), func() error) {
		p, xs := rnnData(peel.Float32, steps)
		ref := rnnRef(steps)
		var out rnnParams
		compile := func() (func(), func() transforms.CompileStats) {
			var cIns transforms.Inspector
			c := transforms.Compile(transforms.Grad(loss(xs)), transforms.Inspect(&cIns))
			return func() { out = c(p) }, cIns.Stats
		}
		return compile, func() error { return rnnCheck(ref, &out) }
	}
}

// controlWorkloads are the workloads of this file.
func controlWorkloads() []Workload {
	ws := []Workload{
		rnnEager("rnn_scan_grad_f32", rnnDoc+", 100 steps in a Scan, eager", rnnScan()),
		rnnEager("rnn_unrolled_grad_f32", rnnDoc+", 100 steps in a Go loop, eager", rnnLoopLoss),
	}
	ws = append(ws, compiledWorkloads("rnn_scan_grad_f32_compiled", "Compile of "+rnnDoc+", 100 steps in a Scan",
		"ms", perMs, rnnCompiled(rnnScan(), rnnSteps))...)
	for _, n := range []int{4, 10} {
		ws = append(ws, compiledWorkloads(fmt.Sprintf("rnn_scan_grad_f32_compiled_unroll%d", n),
			fmt.Sprintf("Compile of %s, 100 steps in a Scan with Unroll(%d)", rnnDoc, n),
			"ms", perMs, rnnCompiled(rnnScan(transforms.Unroll(n)), rnnSteps))...)
	}
	ws = append(ws, compiledWorkloads("rnn_unrolled_grad_f32_compiled", "Compile of "+rnnDoc+", 100 steps in a Go loop",
		"ms", perMs, rnnCompiled(rnnLoopLoss, rnnSteps))...)
	// The compile times against the length (the 100-step ones are the
	// rows above): flat for Scan, growing for the Go loop.
	for _, steps := range []int{10, 1000} {
		for _, c := range []struct {
			name string
			loss rnnLosses
			how  string
		}{{"rnn_scan_grad_f32_compiled", rnnScan(), "in a Scan"}, {"rnn_unrolled_grad_f32_compiled", rnnLoopLoss, "in a Go loop"}} {
			name := fmt.Sprintf("%s_%dsteps", c.name, steps)
			doc := fmt.Sprintf("Compile of %s, %d steps %s", rnnDoc, steps, c.how)
			ws = append(ws, compiledWorkloads(name, doc, "ms", perMs, rnnCompiled(c.loss, steps))...)
		}
	}
	return ws
}
