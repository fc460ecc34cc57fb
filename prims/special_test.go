package prims_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// specialJVPCases are the JVP cases of the primitives of special.go, on
// domains away from their poles and branch points.
func specialJVPCases(r *rand.Rand) []jvpCase {
	var cs []jvpCase
	shapes := [][]int{{}, {3}, {2, 3}}
	for _, u := range []struct {
		p      *interp.Prim
		lo, hi float64
	}{
		{prims.Asin, -0.9, 0.9}, {prims.Acos, -0.9, 0.9}, {prims.Atan, -3, 3},
		{prims.Sinh, -2, 2}, {prims.Cosh, -2, 2}, {prims.Asinh, -3, 3},
		{prims.Acosh, 1.2, 4}, {prims.Atanh, -0.9, 0.9}, {prims.Log2, 0.3, 4},
		{prims.Log10, 0.3, 4}, {prims.Exp2, -2, 2}, {prims.Erfc, -2, 2},
		{prims.ErfInv, -0.9, 0.9}, {prims.Lgamma, 0.2, 5},
	} {
		for _, s := range shapes {
			cs = append(cs, jvpCase{name: fmt.Sprint(s), prim: u.p, args: []*T{uniform(r, u.lo, u.hi, s...)}})
		}
	}
	// Lgamma between its poles.
	cs = append(cs, jvpCase{name: "negative", prim: prims.Lgamma, args: []*T{f64([]float64{-0.5, -1.3, -2.7}, 3)}})
	for n := range 4 {
		cs = append(cs,
			jvpCase{name: fmt.Sprintf("n=%d", n), prim: prims.Polygamma, params: prims.PolygammaParams{N: n}, args: []*T{uniform(r, 0.3, 6, 2, 3)}},
			jvpCase{name: fmt.Sprintf("n=%d negative", n), prim: prims.Polygamma, params: prims.PolygammaParams{N: n}, args: []*T{f64([]float64{-0.5, -1.3, -2.7}, 3)}})
	}
	for _, s := range shapes {
		cs = append(cs,
			jvpCase{prim: prims.Hypot, args: []*T{awayFromZero(r, 0.5, 2, s...), uniform(r, -2, 2, s...)}},
			jvpCase{prim: prims.Copysign, args: []*T{awayFromZero(r, 0.5, 2, s...), awayFromZero(r, 0.5, 2, s...)}},
		)
	}
	return cs
}
