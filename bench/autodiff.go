package bench

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Autodiff workloads: the tiny chain under Grad (per-op overhead of
// reverse mode), and Jacobians and a Hessian of tanh(W v) with W 32×32.

// tinyChainGrad is Grad of Σ chain(x) for the tiny chain: metric is ns
// per forward op, so the ratio to tiny_chain_100 is the cost of reverse
// mode relative to eager evaluation.
func tinyChainGrad() Workload {
	return Workload{
		Name: "tiny_chain_100_grad", Impl: "peel",
		Doc:  "Grad of the 100-op tiny chain on f64[8]: reverse-mode overhead per op",
		Unit: "ns/op", Metric: perOp(tinyChainOps),
		Setup: func() (func(), func() error) {
			xs := randFloats(1, 8, -1, 1)
			as := randFloats(2, 8, 0.5, 1.5)
			bs := randFloats(3, 8, -0.5, 0.5)
			cs := randFloats(4, 8, -0.5, 0.5)
			a, b, c := peel.FromFloat64s(as), peel.FromFloat64s(bs), peel.FromFloat64s(cs)
			x0 := peel.FromFloat64s(xs)
			chain := tinyChainFn(a, b, c)
			grad := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(chain(x)) })
			var out *peel.Tensor
			run := func() { out = grad(x0) }
			check := func() error {
				want := make([]float64, 8)
				for j := range want {
					v, d := xs[j], 1.0
					for i := range tinyChainOps {
						switch i % 4 {
						case 0:
							v *= as[j]
							d *= as[j]
						case 1:
							v += bs[j]
						case 2:
							v = math.Tanh(v)
							d *= 1 - v*v
						case 3:
							v -= cs[j]
						}
					}
					want[j] = d
				}
				return compare(out.Float64s(), want, 1e-10, 1e-12)
			}
			return run, check
		},
	}
}

const jacN = 32

// tanhWv returns W (32×32), v and t = tanh(W v) on the host.
func tanhWv() (w, v, t []float64) {
	w = randFloats(7, jacN*jacN, -0.3, 0.3)
	v = randFloats(8, jacN, -1, 1)
	t = make([]float64, jacN)
	for i := range t {
		s := 0.0
		for k := range jacN {
			s += w[i*jacN+k] * v[k]
		}
		t[i] = math.Tanh(s)
	}
	return w, v, t
}

// jacobian is Jacrev or Jacfwd of tanh(W v): J = diag(1−t²) W.
func jacobian(name string, jac func(func(*peel.Tensor) *peel.Tensor, ...transforms.JacobianOption) func(*peel.Tensor) *peel.Tensor) Workload {
	return Workload{
		Name: name, Impl: "peel",
		Doc:  "Jacobian of tanh(W v), W f64[32,32]",
		Unit: "µs", Metric: func(ns float64) float64 { return ns / 1e3 },
		Setup: func() (func(), func() error) {
			wh, vh, th := tanhWv()
			w, v := peel.FromFloat64s(wh, jacN, jacN), peel.FromFloat64s(vh)
			j := jac(func(v *peel.Tensor) *peel.Tensor { return peel.Tanh(peel.MatMul(w, v)) })
			var out *peel.Tensor
			run := func() { out = j(v) }
			check := func() error {
				want := make([]float64, jacN*jacN)
				for i := range jacN {
					for k := range jacN {
						want[i*jacN+k] = (1 - th[i]*th[i]) * wh[i*jacN+k]
					}
				}
				return compare(out.Float64s(), want, 1e-10, 1e-12)
			}
			return run, check
		},
	}
}

// hessian is the Hessian of Σ tanh(W v)²: Wᵀ diag(2(1−t²)(1−3t²)) W.
func hessian() Workload {
	return Workload{
		Name: "hessian_32", Impl: "peel",
		Doc:  "Hessian of sum(tanh(W v)²), W f64[32,32] (Jacfwd of Jacrev)",
		Unit: "µs", Metric: func(ns float64) float64 { return ns / 1e3 },
		Setup: func() (func(), func() error) {
			wh, vh, th := tanhWv()
			w, v := peel.FromFloat64s(wh, jacN, jacN), peel.FromFloat64s(vh)
			h := transforms.Hessian(func(v *peel.Tensor) *peel.Tensor {
				return peel.Sum(peel.Square(peel.Tanh(peel.MatMul(w, v))))
			})
			var out *peel.Tensor
			run := func() { out = h(v) }
			check := func() error {
				want := make([]float64, jacN*jacN)
				for a := range jacN {
					for b := range jacN {
						s := 0.0
						for i := range jacN {
							t2 := th[i] * th[i]
							s += wh[i*jacN+a] * 2 * (1 - t2) * (1 - 3*t2) * wh[i*jacN+b]
						}
						want[a*jacN+b] = s
					}
				}
				return compare(out.Float64s(), want, 1e-9, 1e-11)
			}
			return run, check
		},
	}
}

func autodiffWorkloads() []Workload {
	return []Workload{
		tinyChainGrad(),
		jacobian("jacrev_32", transforms.Jacrev[*peel.Tensor]),
		jacobian("jacfwd_32", transforms.Jacfwd[*peel.Tensor]),
		hessian(),
	}
}
