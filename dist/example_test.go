package dist_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

// Each row of xs is a lane of a Vmap that names its axis "i": a
// collective over "i" sees every lane.
func Example() {
	xs := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	normalize := func(x *peel.Tensor) *peel.Tensor { return x.Div(dist.Psum(x, "i")) }
	fmt.Println(transforms.Vmap(normalize, transforms.AxisName("i"))(xs))

	// Each lane's value goes to the next lane (a ring), and every lane
	// learns its index.
	shift := func(x *peel.Tensor) *peel.Tensor { return dist.Ppermute(x, "i", [][2]int{{0, 1}, {1, 2}, {2, 0}}) }
	fmt.Println(transforms.Vmap(shift, transforms.AxisName("i"))(xs))
	fmt.Println(transforms.Vmap(func(x *peel.Tensor) *peel.Tensor { return dist.AxisIndex("i") }, transforms.AxisName("i"))(xs))

	// Gradients go through collectives: here of Σ_lanes Σ psum(x²).
	loss := func(xs *peel.Tensor) *peel.Tensor {
		f := func(x *peel.Tensor) *peel.Tensor { return dist.Psum(x.Square(), "i").Sum() }
		return transforms.Vmap(f, transforms.AxisName("i"))(xs).Sum()
	}
	fmt.Println(transforms.Grad(loss)(xs))
	// Output:
	// [[0.11111111 0.16666667]
	//  [0.33333333 0.33333333]
	//  [0.55555556        0.5]]
	// [[5 6]
	//  [1 2]
	//  [3 4]]
	// [0 1 2]
	// [[ 6 12]
	//  [18 24]
	//  [30 36]]
}

// A mesh of two in-process devices: each runs the function on its half
// of the rows, and Psum over the mesh axis adds their partial sums.
func ExampleMesh() {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2)
	total := transforms.ShardMap(func(x *peel.Tensor) *peel.Tensor {
		return dist.Psum(x.Sum(0), "data") // x is this device's 2 rows
	}, mesh, dist.P("data", nil), dist.P())(x)
	fmt.Println(mesh, total)

	// The gradient runs on the devices too.
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
		return transforms.ShardMap(func(x *peel.Tensor) *peel.Tensor {
			return dist.Psum(x.Square().Sum(), "data")
		}, mesh, dist.P("data", nil), dist.P())(x)
	})(x)
	fmt.Println(g)
	// Output:
	// Mesh{"data": 2} [16 20]
	// [[ 2  4]
	//  [ 6  8]
	//  [10 12]
	//  [14 16]]
}

// A lane's work split over goroutines: a collective on a value of the
// lane finds the axis through the value; AxisIndex, which has no
// operand, needs the goroutine started through WithAxes.
func ExampleWithAxes() {
	xs := peel.FromFloat64s([]float64{1, 2, 3}, 3)
	f := func(x *peel.Tensor) *peel.Tensor {
		var total, index *peel.Tensor
		done := make(chan struct{}, 2)
		go func() { total = dist.Psum(x, "i"); done <- struct{}{} }()
		go dist.WithAxes(func() { index = dist.AxisIndex("i"); done <- struct{}{} })()
		<-done
		<-done
		return total.Mul(10).Add(index)
	}
	fmt.Println(transforms.Vmap(f, transforms.AxisName("i"))(xs))
	// Output: [60 61 62]
}
