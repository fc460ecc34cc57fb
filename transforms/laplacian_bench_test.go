package transforms_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// BenchmarkLaplacian times the Laplacian of the PINN example's network
// (a tanh MLP, one hidden layer of 32, float64) at one point of d = 2,
// 10 and 100 dimensions, by forward propagation (Laplacian) and as the
// trace of Jacfwd(Jacrev) (the example's), eager and compiled:
//
//	go test ./transforms -run '^$' -bench Laplacian
func BenchmarkLaplacian(b *testing.B) {
	for _, d := range []int{2, 10, 100} {
		ws := []*T{
			peel.Mul(peel.Normal(peel.Key(1), peel.Float64, d, 32), 0.1),
			peel.Mul(peel.Normal(peel.Key(2), peel.Float64, 32, 1), 0.1),
		}
		f := lapMLP(ws)
		x := peel.Normal(peel.Key(3), peel.Float64, d)
		b.Run(fmt.Sprintf("d=%d/forward", d), func(b *testing.B) {
			l := transforms.Laplacian(f)
			for b.Loop() {
				l(x)
			}
		})
		b.Run(fmt.Sprintf("d=%d/hessian", d), func(b *testing.B) {
			for b.Loop() {
				traceHessian(f, x)
			}
		})
		b.Run(fmt.Sprintf("d=%d/forward_compiled", d), func(b *testing.B) {
			l := transforms.Compile(transforms.Laplacian(f))
			l(x)
			for b.Loop() {
				l(x)
			}
		})
		b.Run(fmt.Sprintf("d=%d/hessian_compiled", d), func(b *testing.B) {
			h := transforms.Compile(func(x *T) *T { return traceHessian(f, x) })
			h(x)
			for b.Loop() {
				h(x)
			}
		})
	}
}
