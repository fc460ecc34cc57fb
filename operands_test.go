package peel_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
)

// TestBroadcastProperty draws pairs of shapes: compatible pairs (each
// dimension equal, or 1 on one side, with ranks differing) broadcast to
// the numpy shape and values, and incompatible pairs give *peel.Error.
func TestBroadcastProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out := rapid.SliceOfN(rapid.IntRange(0, 4), 0, 4).Draw(t, "out")
		shape := func(label string) []int {
			drop := rapid.IntRange(0, len(out)).Draw(t, label+"-drop")
			s := append([]int{}, out[drop:]...)
			for k := range s {
				if rapid.Bool().Draw(t, label+"-one") {
					s[k] = 1
				}
			}
			return s
		}
		a, b := shape("a"), shape("b")
		g := optest.NewGen(uint64(len(a)*7 + len(b)))
		x, y := g.Tensor(peel.Float64, -5, 5, a...), g.Tensor(peel.Float32, -5, 5, b...)
		got := optest.ToHost(peel.Sub(x, y))
		want := optest.Map(peel.Float64, []optest.Host{optest.ToHost(x), optest.ToHost(y)}, func(v []float64) float64 { return v[0] - v[1] })
		if msg := optest.Compare(got, want, -1); msg != "" {
			t.Fatalf("Sub(%v, %v): %s", a, b, msg)
		}
		// Make b incompatible in one dimension where both are > 1.
		for k := 1; k <= min(len(a), len(b)); k++ {
			da, db := a[len(a)-k], b[len(b)-k]
			if da > 1 && db == da {
				b2 := append([]int{}, b...)
				b2[len(b)-k] = da + 1
				err := peel.Catch(func() { peel.Add(x, peel.Zeros(peel.Float64, b2...)) })
				var e *peel.Error
				if !errors.As(err, &e) {
					t.Fatalf("Add(%v, %v): got %v, want *peel.Error", a, b2, err)
				}
				break
			}
		}
	})
}
