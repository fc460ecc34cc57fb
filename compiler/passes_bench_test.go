package compiler_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// BenchmarkFoldTransposeIntoDot evaluates MatMul(x, Transpose(w)) as
// traced ("traced": a transpose view, then the dot), after
// FoldTransposeIntoDot ("folded": the dot reads w with renumbered
// dimensions), and with the transpose materialized by a copy
// ("materialized": what an executor that gives every value its own
// contiguous buffer pays without the pass).
//
//	go test -run '^$' -bench FoldTransposeIntoDot -benchmem ./compiler/
func BenchmarkFoldTransposeIntoDot(b *testing.B) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, n := range []int{16, 128, 512} {
			x := peel.AsType(peel.Sin(seq(n, n)), dt)
			w := peel.AsType(peel.Cos(seq(n, n)), dt)
			g := trace(func(xs []*T) []*T { return []*T{peel.MatMul(xs[0], peel.Transpose(xs[1]))} }, x, w)
			folded := compiler.FoldTransposeIntoDot(g)
			if count(g, "transpose") != 1 || count(folded, "transpose") != 0 {
				b.Fatalf("graphs:\n%v\n%v", g, folded)
			}
			mat := materialized(g)
			for _, c := range []struct {
				name string
				g    *interp.Graph
			}{{"traced", g}, {"folded", folded}, {"materialized", mat}} {
				b.Run(fmt.Sprintf("%v/%d/%s", dt, n, c.name), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						c.g.Eval(x, w)
					}
				})
			}
		}
	}
}

// materialized returns g with a copy after each transpose.
func materialized(g *interp.Graph) *interp.Graph {
	out := &interp.Graph{In: g.In, Consts: g.Consts, ConstVals: g.ConstVals, Out: g.Out}
	sub := map[*interp.Var]*interp.Var{}
	id := 1 << 20
	for _, e := range g.Eqns {
		in := make([]*interp.Var, len(e.In))
		for i, v := range e.In {
			in[i] = v
			if w, ok := sub[v]; ok {
				in[i] = w
			}
		}
		out.Eqns = append(out.Eqns, &interp.Eqn{Prim: e.Prim, Params: e.Params, In: in, Out: e.Out})
		if e.Prim == prims.Transpose {
			c := &interp.Var{ID: id, Aval: e.Out[0].Aval}
			id++
			out.Eqns = append(out.Eqns, &interp.Eqn{Prim: prims.Copy, In: []*interp.Var{e.Out[0]}, Out: []*interp.Var{c}})
			sub[e.Out[0]] = c
		}
	}
	return out
}

// BenchmarkOptimize measures the default pipeline (with
// ReplaceComposites) on the gradient graph of a two-layer perceptron:
// the compile-time cost of the passes.
func BenchmarkOptimize(b *testing.B) {
	w1, w2, x := peel.Sin(seq(4, 3)), peel.Cos(seq(2, 4)), seq(5, 3)
	grad := transforms.Grad(func(p []*T) *T { return mlpLoss(p) })
	g := trace(func(xs []*T) []*T { return grad(xs) }, w1, w2, x)
	passes := append([]compiler.Pass{compiler.ReplaceComposites(mylib.Gelu)}, compiler.DefaultPasses()...)
	b.ReportAllocs()
	for b.Loop() {
		compiler.Optimize(g, passes, false)
	}
}
