package bench

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

// Custom-op workloads: mylib.gelu (a customop.Define op with a fused CPU
// kernel and a derivative derived from its composite) against the same
// composite written as plain peel ops, on a 4096×256 input, eager and
// under Grad.

const geluRows, geluCols = 4096, 256

func customOpWorkloads() []Workload {
	var ws []Workload
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		ws = append(ws,
			geluWorkload(dt, "fused", false),
			geluWorkload(dt, "composite", false),
			geluWorkload(dt, "fused", true),
			geluWorkload(dt, "composite", true),
		)
	}
	return ws
}

// geluWorkload times gelu (or Grad of Σgelu) on 4096×256 values in
// [-4, 4], through the op (fused kernel, derived backward) or through the
// composite.
func geluWorkload(dt peel.DType, how string, grad bool) Workload {
	name := "gelu_" + how + "_1m_" + dt.String()
	doc := "mylib.gelu on " + dt.String() + "[4096,256], "
	if grad {
		name = "gelu_grad_" + how + "_1m_" + dt.String()
		doc = "Grad of Σ mylib.gelu on " + dt.String() + "[4096,256], "
	}
	if how == "fused" {
		doc += "as the op (fused kernel"
		if grad {
			doc += ", backward derived from the composite"
		}
		doc += ")"
	} else {
		doc += "as its composite (7 peel ops)"
	}
	n := geluRows * geluCols
	return Workload{
		Name: name, Impl: "peel", Doc: doc,
		Unit: "ns/elem", Metric: perOp(float64(n)),
		Setup: func() (func(), func() error) {
			xs := randFloats(11, n, -4, 4)
			x := fromFloats(xs, dt, geluRows, geluCols)
			f := mylib.Gelu.Call
			if how == "composite" {
				f = func(xs ...*peel.Tensor) *peel.Tensor { return mylib.GeluComposite(xs...) }
			}
			var out *peel.Tensor
			run := func() { out = f(x) }
			if grad {
				g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f(x)) })
				run = func() { out = g(x) }
			}
			check := geluCheck(xs, dt, grad, &out)
			return run, check
		},
	}
}

// geluCheck returns the check of gelu (or, with grad, its derivative) at
// xs: it compares *out with float64 values.
func geluCheck(xs []float64, dt peel.DType, grad bool, out **peel.Tensor) func() error {
	want := make([]float64, len(xs))
	for i, v := range xs {
		if grad {
			want[i] = geluDeriv(v)
		} else {
			want[i] = mylib.GeluFloat64(v)
		}
	}
	tol := 1e-12
	if dt == peel.Float32 {
		tol = 1e-5
	}
	return func() error { return compare(hostFloats(*out), want, tol, tol) }
}

// geluDeriv is the derivative of the tanh approximation of GELU.
func geluDeriv(x float64) float64 {
	const k, c = 0.7978845608028654, 0.044715
	t := math.Tanh(k * (x + c*x*x*x))
	return 0.5*(1+t) + 0.5*x*(1-t*t)*k*(1+3*c*x*x)
}
