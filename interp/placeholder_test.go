package interp_test

import (
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestPlaceholderNeverReachesAKernel: a placeholder is not concrete, and
// binding it (alone or with concrete operands) or reading it panics with
// *Error, never a nil dereference in a kernel (issue 11, item 11).
func TestPlaceholderNeverReachesAKernel(t *testing.T) {
	ph := interp.Placeholder(interptest.Aval(backend.Float64, 3))
	if ph.IsConcrete() || !interp.IsPlaceholder(ph) {
		t.Fatalf("placeholder: IsConcrete %v, IsPlaceholder %v", ph.IsConcrete(), interp.IsPlaceholder(ph))
	}
	x := interptest.Tensor([]float64{1, 2, 3}, 3)
	for name, f := range map[string]func(){
		"unary":          func() { interptest.Bind(prims.Neg, ph) },
		"with concrete":  func() { interptest.Bind(prims.Add, x, ph) },
		"view":           func() { interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{3, 1}}, ph) },
		"mutation":       func() { interp.Bind(prims.CopyInPlace, nil, x, ph) },
		"read":           func() { ph.Float64s() },
		"nil tracer box": func() { interp.NewTracer(interptest.Aval(backend.Float64, 3), nil) },
	} {
		err := interp.Catch(f)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), "placeholder") && !strings.Contains(err.Error(), "Placeholder") && !strings.Contains(err.Error(), "traced") {
			t.Errorf("%s: error %q does not say what went wrong", name, err)
		}
	}
}
