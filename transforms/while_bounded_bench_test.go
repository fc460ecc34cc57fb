package transforms_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// BenchmarkWhileMaxTrips times the gradient of a loop of n steps on a
// 512-element float64 carry (4 KiB), as a WhileLoop bounded by
// MaxTrips(n) and as a ForiLoop (a Scan) of n steps, and reports what
// each backward pass stores (SavedResiduals: bytes, and carries of 4 KiB)
// and the caching allocator's peak over a gradient:
//
//	go test ./transforms -run '^$' -bench WhileMaxTrips -benchtime 3x
func BenchmarkWhileMaxTrips(b *testing.B) {
	x := peel.Mul(peel.Normal(peel.Key(1), peel.Float64, 512), 0.1)
	step := func(v *T) *T { return peel.Add(v, peel.Mul(peel.Sin(v), 0.001)) }
	for _, n := range []int{10, 1000, 100000} {
		loops := map[string]func(*T) *T{
			"while": func(x *T) *T {
				return transforms.WhileLoop(func(*T) *T { return peel.Scalar(true) }, step, x, transforms.MaxTrips(n))
			},
			"scan": func(x *T) *T {
				return transforms.ForiLoop(0, n, func(_ *T, v *T) *T { return step(v) }, x)
			},
		}
		for _, kind := range []string{"while", "scan"} {
			loss := func(x *T) *T { return peel.Sum(loops[kind](x)) }
			b.Run(fmt.Sprintf("n=%d/%s", n, kind), func(b *testing.B) {
				var saved int64
				for _, r := range transforms.SavedResiduals(loss, x) {
					k := int64(r.DType.Size())
					for _, d := range r.Shape {
						k *= int64(d)
					}
					saved += k
				}
				g := transforms.Grad(loss)
				for b.Loop() {
					g(x)
				}
				b.ReportMetric(float64(saved)/1024, "savedKiB")
				b.ReportMetric(float64(saved)/4096, "carries")
			})
		}
	}
}
