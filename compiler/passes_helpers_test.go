package compiler_test

import (
	"fmt"
	"math"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

type T = peel.Tensor

// trace stages f at the example arguments.
func trace(f func(xs []*T) []*T, args ...*T) *interp.Graph {
	return interp.Trace(f, args)
}

// count returns the number of equations of g applying the primitive
// named name.
func count(g *interp.Graph, name string) int {
	n := 0
	for _, e := range g.Eqns {
		if e.Prim.Name == name {
			n++
		}
	}
	return n
}

// bits returns a tensor's type and elements, bit for bit, but every NaN
// as "nan": a rewrite may change which operand's NaN a product or a sum
// passes on (a dot whose operands' roles a pass swaps multiplies b·a
// where it multiplied a·b, the same bits for numbers, and an FMA returns
// its first NaN operand, of either sign), and IEEE 754 leaves the sign
// and payload of an operation's NaN result open. (Program.Run against
// Graph.Eval, which run the same kernels on the same operands, is
// compared with every bit, NaNs' too: checkProgram.)
func bits(t *T) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", t.TypeString())
	switch t.DType() {
	case peel.Float64:
		for _, v := range t.Float64s() {
			if math.IsNaN(v) {
				b.WriteString(" nan")
				continue
			}
			fmt.Fprintf(&b, " %x", math.Float64bits(v))
		}
	case peel.Float32:
		for _, v := range t.Float32s() {
			if math.IsNaN(float64(v)) {
				b.WriteString(" nan")
				continue
			}
			fmt.Fprintf(&b, " %x", math.Float32bits(v))
		}
	case peel.Int64:
		for _, v := range t.Int64s() {
			fmt.Fprintf(&b, " %d", v)
		}
	case peel.Bool:
		for _, v := range t.Bools() {
			fmt.Fprintf(&b, " %v", v)
		}
	}
	return b.String()
}

// sameResults reports how the results of evaluating got and want on args
// differ bit for bit, or "".
func sameResults(got, want *interp.Graph, args []*T) string {
	w := want.Eval(args...)
	g := got.Eval(args...)
	if len(g) != len(w) {
		return fmt.Sprintf("%d results, want %d", len(g), len(w))
	}
	for i := range w {
		if gb, wb := bits(g[i]), bits(w[i]); gb != wb {
			return fmt.Sprintf("result %d is %s, want %s", i, gb, wb)
		}
	}
	return ""
}

// graphBuilder builds graphs by hand, for shapes tracing does not make
// (equations whose operands are all constants, for example).
type graphBuilder struct {
	g    *interp.Graph
	next int
}

func newGraph() *graphBuilder { return &graphBuilder{g: &interp.Graph{}} }

func (b *graphBuilder) newVar(a interp.Aval) *interp.Var {
	v := &interp.Var{ID: b.next, Aval: a}
	b.next++
	return v
}

func (b *graphBuilder) input(dt peel.DType, shape ...int) *interp.Var {
	v := b.newVar(interp.Aval{Shape: shape, DType: dt})
	b.g.In = append(b.g.In, v)
	return v
}

func (b *graphBuilder) constant(t *T) *interp.Var {
	v := b.newVar(interp.AvalOf(t))
	b.g.Consts = append(b.g.Consts, v)
	b.g.ConstVals = append(b.g.ConstVals, t)
	return v
}

// eqn appends p applied to in and returns its results.
func (b *graphBuilder) eqn(p *interp.Prim, params any, in ...*interp.Var) []*interp.Var {
	avals := make([]interp.Aval, len(in))
	for i, v := range in {
		avals[i] = v.Aval
	}
	outs := p.Abstract(params, avals)
	e := &interp.Eqn{Prim: p, Params: params, In: in}
	for _, a := range outs {
		e.Out = append(e.Out, b.newVar(a))
	}
	b.g.Eqns = append(b.g.Eqns, e)
	return e.Out
}

func (b *graphBuilder) eqn1(p *interp.Prim, params any, in ...*interp.Var) *interp.Var {
	return b.eqn(p, params, in...)[0]
}

func (b *graphBuilder) output(vs ...*interp.Var) *interp.Graph {
	b.g.Out = append(b.g.Out, vs...)
	return b.g
}

// seq returns a float64 tensor of the given shape holding 0.25·(i+1) - 1.
func seq(shape ...int) *T {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = 0.25*float64(i+1) - 1
	}
	return peel.FromFloat64s(d, shape...)
}
