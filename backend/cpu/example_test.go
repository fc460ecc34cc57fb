package cpu_test

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The CPU backend runs primitives bound on tensors that live on it.
func Example() {
	be := cpu.New()
	x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{1, 2, 3, 4}), Shape: []int{2, 2}})
	y := interp.Bind1(prims.DotGeneral, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}, x, x)
	fmt.Println(be.Name(), y.Float64s())
	// Output:
	// cpu [7 10 15 22]
}

// MeasureLimits measures this machine's limits at a number of threads:
// a benchmark's rate as a fraction of them means the same on any
// machine. (The figures vary by machine; this prints only their sense.)
func ExampleMeasureLimits() {
	l := cpu.MeasureLimits(1)
	fmt.Println(l.Path == cpu.Path(), l.PeakF32 > 0, l.Bandwidth > 0)
	// Output:
	// true true true
}
