package prims_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel/prims"
)

// TestReferencesKnownValues checks every primitive's Reference.F against
// values known from outside it (Reference.Known). F is the oracle of the
// default CPU kernel and of the op registry, so without this check a
// wrong F would pass everything.
func TestReferencesKnownValues(t *testing.T) {
	for _, p := range prims.References() {
		ref, _ := prims.ReferenceOf(p)
		if len(ref.Known) < 2 {
			t.Errorf("%s: Reference has %d known values, want at least 2", p.Name, len(ref.Known))
		}
		for _, k := range ref.Known {
			x, want := k[0], k[1]
			// Within a few ulps of the value, or 1e-15 absolute at a zero
			// (sin(πx) is not exactly 0 in float64 at an integer x).
			if got := ref.F(x); math.Abs(got-want) > 4e-16*math.Abs(want)+1e-15 {
				t.Errorf("%s: F(%g) = %.17g, want %.17g", p.Name, x, got, want)
			}
		}
	}
}
