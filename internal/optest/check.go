package optest

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// Check runs every sample of op eagerly against the reference, then traces
// op with interp.Trace and checks that evaluating the graph gives exactly
// the eager result.
func Check(t *testing.T, op Op) {
	t.Helper()
	for _, s := range op.Samples() {
		in := make([]Host, len(s.Args))
		for i, a := range s.Args {
			in[i] = ToHost(a)
		}
		var got *peel.Tensor
		if err := peel.Catch(func() { got = op.F(s.Args) }); err != nil {
			t.Errorf("%s/%s: %v", op.Name, s.Name, err)
			continue
		}
		gh := ToHost(got)
		if msg := Compare(gh, op.Ref(in), op.Tol); msg != "" {
			t.Errorf("%s/%s: eval: %s", op.Name, s.Name, msg)
			continue
		}
		var staged *peel.Tensor
		err := peel.Catch(func() {
			g := interp.Trace(func(a []*peel.Tensor) []*peel.Tensor {
				return []*peel.Tensor{op.F(a)}
			}, s.Args)
			staged = g.Eval(s.Args...)[0]
		})
		if err != nil {
			t.Errorf("%s/%s: trace: %v", op.Name, s.Name, err)
			continue
		}
		if msg := Compare(ToHost(staged), gh, -1); msg != "" {
			t.Errorf("%s/%s: trace + graph eval differs from eval: %s", op.Name, s.Name, msg)
		}
	}
}
