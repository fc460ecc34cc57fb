package transforms_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// A custom VJP over trees: the argument holds a float parameter, int
// labels (not differentiated) and a static option; fwd saves residuals
// of its own shape, and bwd returns the argument's structure.
func ExampleCustomVJP() {
	type batch struct {
		W      *peel.Tensor // f64[3]
		Labels *peel.Tensor // i64[2], indices into W
		Clip   float64      // static: passed through, never differentiated
	}
	type saved struct {
		Labels *peel.Tensor
		Clip   float64
		N      int
	}
	// The sum of W at the labels, with its cotangent clipped.
	picked := transforms.CustomVJP(
		func(b batch) *peel.Tensor { return peel.Sum(peel.Take(b.W, b.Labels, 0)) },
		func(b batch) (*peel.Tensor, saved) {
			return peel.Sum(peel.Take(b.W, b.Labels, 0)), saved{b.Labels, b.Clip, b.W.Shape()[0]}
		},
		func(s saved, ct *peel.Tensor) batch {
			per := peel.Mul(peel.Ones(peel.Float64, s.Labels.Shape()...), peel.Clip(ct, -s.Clip, s.Clip))
			return batch{W: peel.IndexAdd(peel.Zeros(peel.Float64, s.N), s.Labels, per, 0)} // Labels: nil, ignored
		},
	)
	loss := func(w *peel.Tensor) *peel.Tensor {
		b := batch{W: w, Labels: peel.FromInt64s([]int64{0, 2}, 2), Clip: 1}
		return peel.Mul(picked(b), 5.0)
	}
	fmt.Println(transforms.Grad(loss)(peel.FromFloat64s([]float64{1, 2, 3})))
	// Output:
	// [1 0 1]
}

// A custom JVP whose result is a tree: the rule gives the result and its
// tangent, of the result's structure.
func ExampleCustomJVP() {
	type sinCos struct{ Sin, Cos *peel.Tensor }
	sc := transforms.CustomJVP(
		func(x *peel.Tensor) sinCos { return sinCos{peel.Sin(x), peel.Cos(x)} },
		func(x, t *peel.Tensor) (sinCos, sinCos) {
			s, c := peel.Sin(x), peel.Cos(x)
			return sinCos{s, c}, sinCos{peel.Mul(c, t), peel.Neg(peel.Mul(s, t))}
		},
	)
	x := peel.FromFloat64s([]float64{0})
	_, tan := transforms.JVP(sc, x, peel.FromFloat64s([]float64{2}))
	fmt.Println(tan.Sin)
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(sc(x).Sin) })(x)
	fmt.Println(g)
	// Output:
	// [2]
	// [1]
}
