// Command quickstart is a short tour of peel: creating tensors,
// broadcasting arithmetic, reductions, matrix products, views with
// in-place writes, and explicit random numbers.
//
//	go run ./examples/quickstart
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

func section(title string) {
	fmt.Printf("\n== %s ==\n", title)
}

func show(name string, t *peel.Tensor) {
	fmt.Printf("%s %s =\n%v\n", name, t.TypeString(), t)
}

func main() {
	section("Creating tensors")
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	show("x", x)
	r := peel.Arange(peel.Float64, 0, 3, 1)
	show("r = Arange(0, 3)", r)
	show("Ones(f32, 2, 2)", peel.Ones(peel.Float32, 2, 2))

	section("Broadcasting arithmetic")
	// r has shape [3]; it broadcasts against every row of x. Go numbers
	// are weakly typed: 0.5 takes x's dtype.
	y := peel.Add(peel.Mul(x, 0.5), r)
	show("y = x*0.5 + r", y)
	col := peel.FromFloat64s([]float64{10, 20}, 2, 1)
	show("x + [[10], [20]]", peel.Add(x, col))
	// The common operations are methods too, reading left to right.
	show("x.Mul(0.5).Add(r).Square().Sum(1)", x.Mul(0.5).Add(r).Square().Sum(1))

	section("Reductions")
	show("Sum(x) over all axes", peel.Sum(x))
	show("Mean(x, axis 1)", peel.Mean(x, 1))
	show("Softmax(x, axis -1)", peel.Softmax(x, -1))

	section("Matrix product")
	w := peel.FromFloat64s([]float64{1, 0, 0, 1, 1, 1}, 3, 2)
	show("w", w)
	show("MatMul(x, w)", peel.MatMul(x, w))

	section("Views and in-place writes")
	// Narrow returns a view sharing x's memory: writing through it
	// changes x.
	row := peel.Narrow(x, 0, 1, 1)
	show("row = Narrow(x, 0, 1, 1)", row)
	peel.AddInPlace(row, 100.0)
	show("x after AddInPlace(row, 100)", x)
	peel.CopyInto(peel.Select(x, 1, 0), -1.0)
	show("x after CopyInto(Select(x, 1, 0), -1)", x)

	section("Random numbers")
	// Keys are explicit: the same key always gives the same numbers;
	// split a key into new ones for independent draws.
	k := peel.SplitKeys(peel.Key(42), 3)
	show("Normal(k[0], f64, 2, 3)", peel.Normal(k[0], peel.Float64, 2, 3))
	show("Uniform(k[1], f32, 4)", peel.Uniform(k[1], peel.Float32, 4))
	show("Bernoulli(k[2], 0.5, 6)", peel.Bernoulli(k[2], 0.5, 6))

	section("Gradients")
	// Grad differentiates a scalar function of any tree of tensors; here
	// a struct of parameters. Transforms compose: Hessian = Jacfwd(Jacrev).
	type params struct{ W, B *peel.Tensor }
	data := peel.FromFloat64s([]float64{1, 2, 3}, 3, 1)
	loss := func(p params) *peel.Tensor {
		pred := data.MatMul(p.W).Add(p.B)
		return pred.Sub(2.0).Square().Mean()
	}
	p := params{W: peel.FromFloat64s([]float64{0.5}, 1, 1), B: peel.Scalar(0.0)}
	g := transforms.Grad(loss)(p)
	show("dloss/dW", g.W)
	show("dloss/dB", g.B)
	cube := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.Square(x), x)) }
	show("Hessian of sum(x³) at [1 2]", transforms.Hessian(cube)(peel.FromFloat64s([]float64{1, 2})))

	section("Vectorizing")
	// Vmap maps a function over a batch dimension: here per-example
	// gradients of the same loss, one batched computation, no loop.
	// Vmap3 and Grad3 take the loss's three arguments as they are: the
	// parameters shared (NoAxis), inputs and targets mapped on axis 0.
	exLoss := func(p params, x, y *peel.Tensor) *peel.Tensor {
		pred := peel.Add(peel.MatMul(x, p.W), p.B)
		return peel.Sum(peel.Square(peel.Sub(pred, y)))
	}
	perExample := transforms.Vmap3(transforms.Grad3(exLoss), transforms.InAxes(transforms.NoAxis, 0, 0))
	xs := peel.FromFloat64s([]float64{1, 2, 3}, 3, 1, 1)
	show("per-example dloss/dW", perExample(p, xs, xs).W)

	section("Compiling")
	// Compile traces once per signature and runs an optimized program;
	// the result is a Go function of the same signature.
	sgd := transforms.Compile3(func(p params, x, y *peel.Tensor) params {
		g := transforms.Grad3(exLoss)(p, x, y)
		return tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(0.1)) }, p, g)
	})
	for range 20 {
		p = sgd(p, peel.Select(xs, 0, 0), peel.Select(xs, 0, 0))
	}
	show("W after 20 compiled SGD steps on x = y = 1", p.W)

	section("Functionalizing")
	// pad writes into a tensor it creates: semantically pure, written
	// with mutation. Vmap alone refuses it (the zeros are not batched);
	// Vmap(Functionalize(pad)) runs it as one batched computation.
	pad := func(x *peel.Tensor) *peel.Tensor {
		y := peel.Zeros(x.DType(), x.Shape()[0]+2)
		peel.CopyInto(peel.Narrow(y, 0, 1, x.Shape()[0]), x)
		peel.MulInPlace(y, 2.0)
		return y
	}
	rows := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	fmt.Println("Vmap(pad):", peel.Catch(func() { transforms.Vmap(pad)(rows) }))
	show("Vmap(Functionalize(pad))", transforms.Vmap(transforms.Functionalize(pad))(rows))
}
