// Command customop shows user-defined ops (customop.Define) from package
// mylib under every transform: an op with a fused CPU kernel whose
// derivatives of any order come from its composite, per-sample gradients
// that keep the fused forward, and an op whose only decomposition writes
// in place, which works under Grad and Vmap(Functionalize) and is named
// in the error plain Vmap gives.
//
//	go run ./examples/customop
package main

import (
	"fmt"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

func section(title string) { fmt.Printf("\n== %s ==\n", title) }

func show(name string, t *peel.Tensor) { fmt.Printf("%s %s =\n%v\n", name, t.TypeString(), t) }

func main() {
	gelu := func(x *peel.Tensor) *peel.Tensor { return mylib.Gelu.Call(x) }
	// A small model: loss(w) = Σ gelu(W x)² over a fixed input.
	x := peel.FromFloat64s([]float64{0.5, -1, 2}, 3)
	loss := func(w *peel.Tensor) *peel.Tensor {
		h := gelu(peel.MatMul(w, x))
		return peel.Sum(peel.Mul(h, h))
	}
	w := peel.Reshape(peel.Linspace(peel.Float64, -1, 1, 6), 2, 3)

	section("The op: fused kernel eagerly, one equation in a graph")
	show("gelu(x)", gelu(x))
	show("composite(x)", mylib.GeluComposite(x))
	fmt.Println(transforms.MakeGraph(gelu, x))

	section("Grad: the fused kernel runs forward, the backward comes from the composite")
	show("Grad(loss)(W)", transforms.Grad(loss)(w))
	composite := func(w *peel.Tensor) *peel.Tensor {
		h := mylib.GeluComposite(peel.MatMul(w, x))
		return peel.Sum(peel.Mul(h, h))
	}
	show("same through the composite", transforms.Grad(composite)(w))

	section("Hessian of Σ gelu(v) (derivatives of any order)")
	show("Hessian", transforms.Hessian(func(v *peel.Tensor) *peel.Tensor {
		return peel.Sum(gelu(v))
	})(x))

	section("Vmap(Grad): per-sample gradients, one fused kernel call per batch")
	batch := peel.Reshape(peel.Linspace(peel.Float64, -2, 2, 12), 4, 3)
	perSample := transforms.Vmap(transforms.Grad(func(v *peel.Tensor) *peel.Tensor {
		return peel.Sum(gelu(v))
	}))
	show("per-sample gradients", perSample(batch))

	section("An op whose only decomposition mutates")
	a := peel.Reshape(peel.Arange(peel.Float64, 0, 8, 1), 2, 2, 2)
	b := peel.Neg(a)
	pair := func(xs []*peel.Tensor) *peel.Tensor { return mylib.Interleave.Call(xs[0], xs[1]) }
	show("Vmap(Functionalize(interleave))", transforms.Vmap(transforms.Functionalize(pair))([]*peel.Tensor{a, b}))
	fmt.Println("plain Vmap:", peel.Catch(func() { transforms.Vmap(pair)([]*peel.Tensor{a, b}) }))

	section("Speed on 4096×256 float32 (one run each; see bench/ for measurements)")
	big := peel.AsType(peel.Reshape(peel.Linspace(peel.Float64, -4, 4, 4096*256), 4096, 256), peel.Float32)
	timeIt := func(name string, f func()) {
		f() // warm up
		start := time.Now()
		for range 5 {
			f()
		}
		fmt.Printf("%-34s %v\n", name, time.Since(start)/5)
	}
	timeIt("fused forward", func() { gelu(big) })
	timeIt("composite forward", func() { mylib.GeluComposite(big) })
	sumGelu := func(v *peel.Tensor) *peel.Tensor { return peel.Sum(gelu(v)) }
	sumComposite := func(v *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.GeluComposite(v)) }
	timeIt("Grad, fused + derived backward", func() { transforms.Grad(sumGelu)(big) })
	timeIt("Grad through the composite", func() { transforms.Grad(sumComposite)(big) })
}
