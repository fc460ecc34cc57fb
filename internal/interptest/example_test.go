package interptest_test

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

func Example() {
	x := interptest.Tensor([]float64{1, 2, 3}, 3)
	g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{interptest.Bind(prims.Mul, a[0], a[0])}
	}, interptest.Aval(backend.Float64, 3))
	got := g.Eval(x)
	want := interptest.Tensor([]float64{1, 4, 9}, 3)
	fmt.Println(interptest.Diff(interptest.Host(got[0]), interptest.Host(want)) == "")
	// Output: true
}
