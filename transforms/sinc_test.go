package transforms_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestSincHigherDerivatives checks sinc's derivatives of order 1 to 4,
// at 0 against its Maclaurin series (sinc = 1 − (πx)²/6 + (πx)⁴/120 − …)
// and away from 0 against the closed form of sinc″. The JVP rule
// special-cases x = 0; a constant tangent there would make sinc″(0) = 0.
func TestSincHigherDerivatives(t *testing.T) {
	d := func(f func(*T) *T) func(*T) *T { return transforms.Grad(f) }
	d1 := d(peel.Sinc)
	d2 := d(d1)
	d3 := d(d2)
	d4 := d(d3)
	pi2 := math.Pi * math.Pi
	at0 := []struct {
		name string
		f    func(*T) *T
		want float64
	}{
		{"sinc′(0)", d1, 0},
		{"sinc″(0)", d2, -pi2 / 3},
		{"sinc‴(0)", d3, 0},
		{"sinc⁗(0)", d4, pi2 * pi2 / 5},
	}
	for _, c := range at0 {
		if got := c.f(peel.Scalar(0.0)).Item(); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s = %.17g, want %.17g", c.name, got, c.want)
		}
	}
	// sinc″(x) = ((−π sin(πx) − sinc′(x)) x − (cos(πx) − sinc(x))) / x².
	for _, x := range []float64{0.3, -1.7, 2.5} {
		p := math.Pi * x
		s := math.Sin(p) / p
		s1 := (math.Cos(p) - s) / x
		want := ((-math.Pi*math.Sin(p)-s1)*x - (math.Cos(p) - s)) / (x * x)
		if got := d2(peel.Scalar(x)).Item(); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("sinc″(%g) = %.17g, want %.17g", x, got, want)
		}
	}
}
