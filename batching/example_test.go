package batching_test

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// A vmap level sees each lane's logical shape; the rule works on the
// physical, batched value. (Users call transforms.Vmap.)
func Example() {
	be := cpu.New()
	x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{1, 2, 3, 4, 5, 6}), Shape: []int{2, 3}})
	in := batching.New(3)
	defer in.End()
	lane := in.Batched(x, 1) // lanes are the columns of x
	s := interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, lane)
	fmt.Println(lane.Shape(), s.Shape(), in.Unbatched(s, 0).Float64s())
	// Output:
	// [2] [] [5 7 9]
}
