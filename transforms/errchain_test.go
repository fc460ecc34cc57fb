package transforms_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// TestErrorNamesEnclosingTransforms: an error inside Vmap(Grad(f)) names
// the chain of transforms it happened under, innermost first, not just
// the level that raised it.
func TestErrorNamesEnclosingTransforms(t *testing.T) {
	bad := func(x *T) *T { return peel.Sum(peel.MatMul(x, peel.Ones(peel.Float64, 5, 2)), nil, false) }
	xs := peel.Ones(peel.Float64, 4, 3)
	cases := []struct {
		name   string
		run    func()
		within []string
	}{
		{"grad", func() { transforms.Grad(bad)(peel.Ones(peel.Float64, 3)) }, []string{"grad"}},
		{"vmap(grad)", func() { transforms.Vmap(transforms.Grad(bad))(xs) }, []string{"grad", "vmap"}},
		{"grad(vmap)", func() {
			transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(bad)(x), nil, false) })(xs)
		}, []string{"vmap", "grad"}},
	}
	for _, c := range cases {
		err := interp.Catch(c.run)
		var e *interp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: no *peel.Error: %v", c.name, err)
		}
		if strings.Join(e.Within, ",") != strings.Join(c.within, ",") {
			t.Errorf("%s: Within %v, want %v (%v)", c.name, e.Within, c.within, err)
		}
		if len(c.within) > 1 && !strings.Contains(err.Error(), "under "+strings.Join(c.within, " inside ")) {
			t.Errorf("%s: message %q does not name the chain", c.name, err)
		}
	}
}
