package peel_test

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Sorting is stable and puts NaN last; Argsort's indices take the sorted
// values out of x.
func ExampleSort() {
	x := peel.FromFloat64s([]float64{3, math.NaN(), 1, 2})
	fmt.Println(peel.Sort(x, 0), peel.Sort(x, 0, peel.Descending()))
	fmt.Println(peel.Argsort(x, 0), peel.TakeAlongAxis(x, peel.Argsort(x, 0), 0))
	// Output:
	// [  1   2   3 NaN] [NaN   3   2   1]
	// [2 3 0 1] [  1   2   3 NaN]
}

// TopK's derivative reaches the elements it selected.
func ExampleTopK() {
	x := peel.FromFloat64s([]float64{0.5, 4, -1, 3})
	v, i := peel.TopK(x, 2)
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
		v, _ := peel.TopK(x, 2)
		return peel.Sum(v)
	})(x)
	fmt.Println(v, i, g)
	// Output:
	// [4 3] [1 3] [0 1 0 1]
}

// Median and Quantile follow numpy: the mean of the middle values, linear
// interpolation between order statistics.
func ExampleQuantile() {
	x := peel.FromFloat64s([]float64{1, 9, 3, 7}, 2, 2)
	fmt.Println(peel.Median(x), peel.Median(x, 1))
	fmt.Println(peel.Quantile(x, peel.FromFloat64s([]float64{0, 0.25, 1})))
	// Output:
	// 5 [5 5]
	// [  1 2.5   9]
}

// Unique has a static length, so it works under Vmap.
func ExampleUnique() {
	x := peel.FromInt64s([]int64{3, 1, 3, 2, 2, 2}, 2, 3)
	fmt.Println(transforms.Vmap(func(r *peel.Tensor) *peel.Tensor { return peel.Unique(r, 3, -1) })(x))
	// Output:
	// [[ 1  3 -1]
	//  [ 2 -1 -1]]
}

// Cumprod's gradient is exact with zeros in the input.
func ExampleCumprod() {
	x := peel.FromFloat64s([]float64{2, 0, 3})
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Cumprod(x, 0)) })(x)
	fmt.Println(peel.Cumprod(x, 0), peel.Cumprod(x, 0, peel.Reverse()), g)
	// Output:
	// [2 0 0] [0 0 3] [1 8 0]
}

// Ddof gives the sample variance; its methods compose with Keep.
func ExampleDdof() {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 6, 8}, 2, 3)
	fmt.Println(peel.Var(x, 1), peel.Ddof(1).Var(x, 1), peel.Keep(peel.Ddof(1).Std, x, 1).Shape())
	// Output:
	// [0.66666667  2.6666667] [1 4] [2 1]
}
