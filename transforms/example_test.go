package transforms_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Gradients of any order, Jacobians and Hessians compose.
func Example() {
	f := func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.Square(x), x)) // Σ x³
	}
	x := peel.FromFloat64s([]float64{1, 2})
	fmt.Println(transforms.Grad(f)(x))
	fmt.Println(transforms.Hessian(f)(x))
	// Output:
	// [ 3 12]
	// [[ 6  0]
	//  [ 0 12]]
}

// Gradients with respect to a struct of parameters have its structure.
func ExampleGrad() {
	type params struct{ W, B *peel.Tensor }
	loss := func(p params) *peel.Tensor {
		y := peel.Add(peel.Mul(p.W, 3.0), p.B)
		return peel.Sum(peel.Square(y))
	}
	g := transforms.Grad(loss)(params{W: peel.Scalar(1.0), B: peel.Scalar(0.5)})
	fmt.Println(g.W, g.B)
	// Output:
	// 21 7
}

// Per-sample gradients: Vmap3 of Grad3, the parameters shared (NoAxis),
// inputs and labels mapped along their first axis.
func ExampleVmap3() {
	type params struct{ W, B *peel.Tensor }
	loss := func(p params, x, y *peel.Tensor) *peel.Tensor {
		pred := peel.Add(peel.Sum(peel.Mul(p.W, x)), p.B)
		return peel.Square(peel.Sub(pred, y))
	}
	p := params{W: peel.FromFloat64s([]float64{1, -1}), B: peel.Scalar(0.5)}
	x := peel.FromFloat64s([]float64{1, 2, 3, 1}, 2, 2) // two samples
	y := peel.FromFloat64s([]float64{0, 1})
	g := transforms.Vmap3(transforms.Grad3(loss), transforms.InAxes(transforms.NoAxis, 0, 0))(p, x, y)
	fmt.Println(g.W)
	fmt.Println(g.B)
	// Output:
	// [[-1 -2]
	//  [ 9  3]]
	// [-1  3]
}

// A Jacobian with respect to a struct has the struct's structure: each
// leaf has shape f(p).shape + leaf.shape.
func ExampleJacrev() {
	type params struct{ W, B *peel.Tensor }
	x := peel.FromFloat64s([]float64{1, 2})
	f := func(p params) *peel.Tensor { return peel.Add(peel.MatMul(x, p.W), p.B) } // [3]
	j := transforms.Jacrev(f)(params{W: peel.Ones(peel.Float64, 2, 3), B: peel.Zeros(peel.Float64, 3)})
	fmt.Println(j.W.Shape(), j.B.Shape())
	fmt.Println(j.B)
	// Output:
	// [3 2 3] [3 3]
	// [[1 0 0]
	//  [0 1 0]
	//  [0 0 1]]
}

// GradArgs2 differentiates the arguments Argnums selects (all by
// default), one gradient per argument.
func ExampleGradArgs2() {
	f := func(a, b *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Square(a), b) } // a²b
	da, db := transforms.GradArgs2(f)(peel.Scalar(3.0), peel.Scalar(2.0))
	fmt.Println(da, db)
	_, db = transforms.GradArgs2(f, transforms.Argnums(1))(peel.Scalar(3.0), peel.Scalar(2.0))
	fmt.Println(db)
	// Output:
	// 12 9
	// 9
}

// Compile traces once per signature and runs the optimized program on
// later calls; a call with another shape traces again and says why.
func ExampleCompile() {
	var fIns transforms.Inspector
	f := transforms.Compile(func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.Tanh(x), x))
	}, transforms.Inspect(&fIns))
	fmt.Println(f(peel.FromFloat64s([]float64{0, 1, 2})).Item() > 0)
	f(peel.FromFloat64s([]float64{3, 4, 5}))
	f(peel.FromFloat64s([]float64{1, 2}))
	s := fIns.Stats()
	fmt.Println(s.Calls, s.Hits, s.Misses)
	fmt.Println(s.LastMiss)
	// Output:
	// true
	// 3 1 2
	// the argument changed from f64[3] to f64[2]
}

// Export writes a function as a program that runs without its Go code;
// the loaded program composes with the transforms as a compiled
// function does.
func ExampleExport() {
	w := peel.FromFloat64s([]float64{1, 2, 3})
	predict := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.Tanh(x), w)) }
	data := transforms.Export(predict, peel.Zeros(peel.Float64, 3)).Bytes()

	e, err := transforms.LoadExported(data) // in another process, without predict
	if err != nil {
		panic(err)
	}
	fmt.Println(e.In()[0], "->", e.Out()[0])
	f := transforms.ExportedFunc[*peel.Tensor, *peel.Tensor](e)
	x := peel.FromFloat64s([]float64{0, 0.5, -1})
	fmt.Printf("%.4f\n", f(x).Item())
	fmt.Printf("%.4f\n", transforms.Grad(f)(x).Float64s())
	// Output:
	// (the root) f64[3] -> (the root) f64[]
	// -1.3605
	// [1.0000 1.5729 1.2599]
}

// Checkpoint makes a gradient recompute what its policy does not save:
// with NothingSaveable, the gradient of tanh(x·x) keeps only x (and a
// broadcast 1 of its derivative rule).
func ExampleCheckpoint() {
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Tanh(peel.Mul(x, x))) }
	ck := transforms.Checkpoint(f, transforms.NothingSaveable)
	x := peel.FromFloat64s([]float64{0.5, 1})
	fmt.Printf("%.4f\n", transforms.Grad(ck)(x).Float64s())
	fmt.Println(len(transforms.SavedResiduals(f, x)), "values saved without the checkpoint")
	for _, r := range transforms.SavedResiduals(ck, x) {
		fmt.Println(r)
	}
	// Output:
	// [0.9400 0.8399]
	// 2 values saved without the checkpoint
	// f64[2] checkpoint: argument leaf 0
	// f64[2] checkpoint: constant (one value, broadcast)
}

// VJPAux returns, with the value and the pullback, auxiliary data the
// function computes on the way (JAX's has_aux), as a value that is not
// differentiated.
func ExampleVJPAux() {
	f := func(x *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
		y := peel.Square(x)
		return y, peel.Sum(y) // aux: a statistic of y
	}
	y, pullback, total := transforms.VJPAux(f, peel.FromFloat64s([]float64{1, 2, 3}))
	fmt.Println(y, total)
	fmt.Println(pullback(peel.Ones(peel.Float64, 3)))
	// Output:
	// [1 4 9] 14
	// [2 4 6]
}

// ValueAndGradArgs2 returns the value and one gradient per argument;
// Argnums(-1) selects the last argument.
func ExampleValueAndGradArgs2() {
	f := func(a, b *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Square(a), b) } // a²b
	v, da, db := transforms.ValueAndGradArgs2(f, transforms.Argnums(-1))(peel.Scalar(3.0), peel.Scalar(2.0))
	fmt.Println(v, da == nil, db)
	// Output:
	// 18 true 9
}
