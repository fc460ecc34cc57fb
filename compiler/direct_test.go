package compiler_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
)

// directValues returns n random values with special ones among them
// (NaN, ±Inf, ±0, a subnormal, extremes).
func directValues(r *rand.Rand, n int) []float64 {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, 1e300, -3, 2}
	d := make([]float64, n)
	for i := range d {
		if r.IntN(5) == 0 {
			d[i] = specials[r.IntN(len(specials))]
		} else {
			d[i] = (r.Float64()*2 - 1) * 4
		}
	}
	return d
}

// TestDirectKernels: programs whose small elementwise calls run as
// direct kernels (resolved at Build) give Graph.Eval's bits (Eval goes
// through backend.Exec), for every size 0..64, in f32, f64 and i64, with
// broadcast scalars, comparisons, a fused group of one block and a lone
// kernel instruction; and on a second run of the pooled state.
func TestDirectKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	chain := func(in []*peel.Tensor) []*peel.Tensor {
		x, y := in[0], in[1]
		a := peel.Mul(x, y)
		b := peel.Sub(peel.Add(a, 2.0), x)
		c := peel.Maximum(peel.Neg(b), y)
		if x.DType().IsFloat() {
			c = peel.Div(peel.Tanh(c), peel.Add(peel.Mul(y, y), 1.0))
			c = peel.Sub(3.0, peel.Exp(peel.Neg(peel.Abs(c))))
		}
		m := peel.Where(peel.Greater(c, x), c, x)
		return []*peel.Tensor{m, b, peel.Less(a, y)}
	}
	single := func(in []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Mul(in[0], in[1])} }
	for _, dt := range []peel.DType{peel.Float32, peel.Float64, peel.Int64} {
		for n := range 65 {
			for _, c := range []struct {
				name string
				f    func([]*peel.Tensor) []*peel.Tensor
			}{{"chain", chain}, {"single", single}} {
				name, f := c.name, c.f
				args := []*peel.Tensor{
					peel.AsType(peel.FromFloat64s(directValues(r, n), n), dt),
					peel.AsType(peel.FromFloat64s(directValues(r, n), n), dt),
				}
				g := interp.Trace(f, args)
				t.Run(fmt.Sprintf("%s/%v/%d", name, dt, n), func(t *testing.T) {
					p := checkProgram(t, g, args)
					if compiler.DirectCalls(p) == 0 {
						t.Fatalf("no direct kernel\n%v", p)
					}
					want := g.Eval(args...)
					got := p.Run(args, nil)
					for i := range want {
						if d := sameBits(got[i], want[i]); d != "" {
							t.Fatalf("second run, output %d: %s", i, d)
						}
					}
				})
			}
		}
	}
}
