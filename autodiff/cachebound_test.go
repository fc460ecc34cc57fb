package autodiff_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/examples/customop/mylib"
)

// gradOf returns the gradient of sum(f(x)) at x, by linearize and
// transpose.
func gradOf(f func(...*peel.Tensor) *peel.Tensor) func(x *peel.Tensor) []float64 {
	return func(x *peel.Tensor) []float64 {
		lin := autodiff.Linearize("grad", func(in []*peel.Tensor) []*peel.Tensor {
			return []*peel.Tensor{peel.Sum(f(in[0]))}
		}, []*peel.Tensor{x})
		defer lin.Release()
		return lin.Transpose([]*peel.Tensor{peel.OnesLike(lin.Outs[0])})[0].Float64s()
	}
}

// TestCompiledRulesCacheBounded: the compiled JVP rules of a user-defined
// op, keyed by operand types, stay within their bound (issue 25, item
// 16), and every gradient, also for a type seen again after its entry
// was evicted, equals the composite's own.
func TestCompiledRulesCacheBounded(t *testing.T) {
	const bound = 4
	defer autodiff.SetCompiledRulesMax(bound)()
	grad, oracle := gradOf(mylib.Gelu.Call), gradOf(mylib.GeluComposite)
	sizes := []int{}
	for n := 1; n <= 3*bound; n++ {
		sizes = append(sizes, n)
	}
	for _, n := range append(sizes, 1, 2, 3) { // 1, 2, 3 again after eviction
		x := peel.Linspace(peel.Float64, -2, 2, n)
		got, want := grad(x), oracle(x)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("gradient of Gelu on %s: element %d is %v, want %v", x.TypeString(), i, got[i], want[i])
			}
		}
		if got := autodiff.CompiledRulesLen(); got > bound {
			t.Fatalf("after %d elements: %d compiled rules cached, over the bound %d", n, got, bound)
		}
	}
	if autodiff.CompiledRulesLen() == 0 {
		t.Fatal("no compiled rule cached: the test does not exercise the cache")
	}
}
