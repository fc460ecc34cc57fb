package transforms_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Eager loops tier up: a while evaluated on concrete operands runs its
// predicate's and body's programs from its loopTierSteps-th step on, and
// an eager scan of more steps than that runs its body's program at every
// step. The programs must compute exactly the bits of the graphs'
// equation-by-equation evaluation, whenever the switch happens.

// tierLoops are eager computations with loops, each returning its
// results.
var tierLoops = []struct {
	name string
	f    func() []*T
}{
	{"while", func() []*T {
		s := cubeRoot(peel.Scalar(1e6), 1e-12)
		return []*T{s.X, s.K}
	}},
	{"Vmap(while), batched predicate", func() []*T {
		s := transforms.Vmap(func(a *T) newtonState { return cubeRoot(a, 1e-12) })(f64(0.001, 1, 2, 27, 1000, 1e6, 3e5))
		return []*T{s.X, s.K}
	}},
	{"while with a captured tensor and a donated carry", func() []*T {
		w := f64(1.5, 0.5, 2, 1.25)
		return []*T{whileGeo(w, 1e4)(f64(1, 2, 3, 4))}
	}},
	{"JVP(Vmap(while))", func() []*T {
		p, t := transforms.JVP(transforms.Vmap(func(a *T) *T { return cubeRoot(a, 1e-12).X }), f64(2, 7, 300), f64(1, 0.5, -2))
		return []*T{p, t}
	}},
	{"Scan", func() []*T {
		w := f64(0.9, -0.4, 0.3)
		c, ys := transforms.Scan(func(c *T, x *T) (*T, *T) {
			n := peel.Tanh(peel.Add(peel.Mul(c, w), x))
			return n, peel.Mul(n, n)
		}, f64(0.1, 0.2, 0.3), peel.Reshape(peel.Sin(peel.Arange(peel.Float64, 0, 30, 1)), 10, 3))
		return []*T{c, ys}
	}},
	{"Grad(Scan)", func() []*T {
		xs := peel.Reshape(peel.Cos(peel.Arange(peel.Float64, 0, 24, 1)), 8, 3)
		g := transforms.Grad(func(w *T) *T {
			c, ys := transforms.Scan(func(c *T, x *T) (*T, *T) {
				n := peel.Tanh(peel.Add(peel.Mul(c, w), x))
				return n, peel.Sum(peel.Mul(n, x))
			}, f64(0.1, 0.2, 0.3), xs)
			return peel.Add(peel.Sum(c), peel.Sum(ys))
		})(f64(0.9, -0.4, 0.3))
		return []*T{g}
	}},
}

func TestEagerLoopsTierUpSameBits(t *testing.T) {
	for _, c := range tierLoops {
		restore := transforms.SetLoopTierSteps(-1)
		want := c.f()
		restore()
		for _, n := range []int{0, 1, 2, 5} {
			restore := transforms.SetLoopTierSteps(n)
			got := c.f()
			restore()
			if len(got) != len(want) {
				t.Fatalf("%s, tier at %d: %d results, want %d", c.name, n, len(got), len(want))
			}
			for i := range want {
				g, w := peel.AsType(got[i], peel.Float64).Float64s(), peel.AsType(want[i], peel.Float64).Float64s()
				if len(g) != len(w) {
					t.Fatalf("%s, tier at %d: result %d has %d elements, want %d", c.name, n, i, len(g), len(w))
				}
				for j := range w {
					if math.Float64bits(g[j]) != math.Float64bits(w[j]) {
						t.Fatalf("%s, tier at %d: result %d element %d is %v, evaluated %v", c.name, n, i, j, g[j], w[j])
					}
				}
			}
		}
	}
}

func TestEagerLoopsTierOnlyWhenLong(t *testing.T) {
	count := func(name string, want int64, f func()) {
		t.Helper()
		before := transforms.SubProgramsBuilt()
		f()
		if got := transforms.SubProgramsBuilt() - before; got != want {
			t.Fatalf("%s built %d loop programs, want %d", name, got, want)
		}
	}
	countdown := func(n int64) func() {
		return func() {
			transforms.WhileLoop(func(k *T) *T { return k }, func(k *T) *T { return peel.Sub(k, peel.Scalar(int64(1))) }, peel.Scalar(n))
		}
	}
	// A while of one or two steps is evaluated; a longer one builds its
	// predicate's and its body's programs.
	count("a 1-step while", 0, countdown(1))
	count("a 2-step while", 0, countdown(2))
	count("a 10-step while", 2, countdown(10))
	scan := func(n int) func() {
		return func() {
			transforms.Scan(func(c, x *T) (*T, *T) { return peel.Add(c, x), c }, peel.Scalar(0.0), peel.Arange(peel.Float64, 0, float64(n), 1))
		}
	}
	count("a 2-step scan", 0, scan(2))
	count("a 10-step scan", 1, scan(10))
}
