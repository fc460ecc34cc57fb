package bench

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// canonicalMutating writes x into the middle of a zeros tensor it creates
// and scales the result in place: semantically pure, written with
// mutation, so plain Vmap refuses it.
func canonicalMutating(x *peel.Tensor) *peel.Tensor {
	n := x.Shape()[0]
	y := peel.Zeros(x.DType(), n+2)
	peel.CopyInto(peel.Narrow(y, 0, 1, n), x)
	peel.MulInPlace(y, 2.0)
	return y
}

// vmapFunctionalize is Vmap(Functionalize(canonicalMutating)) over x of
// shape 256×128 f64.
func vmapFunctionalize() Workload {
	return Workload{
		Name: "vmap_functionalize_256x128", Impl: "peel",
		Doc:  "Vmap(Functionalize(f)) of zeros + copy into a slice + in-place scale, x f64[256,128]",
		Unit: "µs", Metric: func(ns float64) float64 { return ns / 1e3 },
		Setup: func() (func(), func() error) {
			x := peel.FromFloat64s(randFloats(21, 256*128, -1, 1), 256, 128)
			f := transforms.Vmap(transforms.Functionalize(canonicalMutating))
			var out *peel.Tensor
			run := func() { out = f(x) }
			check := func() error {
				for _, i := range []int{0, 255} {
					if err := compare(peel.Select(out, 0, i).Float64s(), canonicalMutating(peel.Select(x, 0, i)).Float64s(), 0, 0); err != nil {
						return fmt.Errorf("row %d: %v", i, err)
					}
				}
				return nil
			}
			return run, check
		},
	}
}
