package compiler_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// passCase is a targeted test of a pass: a graph and its arguments, and
// the number of equations of some primitives the pass must leave.
type passCase struct {
	name  string
	graph func() (*interp.Graph, []*T)
	// before and after are equation counts by primitive name, checked
	// on the graph given to the pass and on its result.
	before, after map[string]int
	// consts, when not negative, is the number of constants after.
	consts int
	check  func(t *testing.T, g *interp.Graph)
}

func runPassCases(t *testing.T, pass func(*interp.Graph) *interp.Graph, cases []passCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, args := c.graph()
			for p, n := range c.before {
				if got := count(g, p); got != n {
					t.Fatalf("before the pass: %d %s equations, want %d\n%v", got, p, n, g)
				}
			}
			before := g.String()
			ng := pass(g)
			if g.String() != before {
				t.Fatalf("the pass modified its argument:\n%s\nnow\n%v", before, g)
			}
			for p, n := range c.after {
				if got := count(ng, p); got != n {
					t.Errorf("%d %s equations, want %d\nbefore:\n%v\nafter:\n%v", got, p, n, g, ng)
				}
			}
			if c.consts >= 0 && len(ng.Consts) != c.consts {
				t.Errorf("%d constants, want %d\n%v", len(ng.Consts), c.consts, ng)
			}
			if c.check != nil {
				c.check(t, ng)
			}
			if msg := sameResults(ng, g, args); msg != "" {
				t.Errorf("results differ: %s\nbefore:\n%v\nafter:\n%v", msg, g, ng)
			}
			if again := pass(ng); again.String() != ng.String() {
				t.Errorf("not idempotent:\n%v\nthen\n%v", ng, again)
			}
		})
	}
}

func traced(f func(xs []*T) []*T, args ...*T) func() (*interp.Graph, []*T) {
	return func() (*interp.Graph, []*T) { return trace(f, args...), args }
}

func TestCSE(t *testing.T) {
	x, y := seq(2, 3), peel.Cos(seq(2, 3))
	key := peel.Key(7)
	runPassCases(t, compiler.CSE, []passCase{
		{name: "same op same input", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Add(peel.Exp(xs[0]), peel.Exp(xs[0]))}
		}, x), before: map[string]int{"exp": 2}, after: map[string]int{"exp": 1, "add": 1}, consts: -1},
		{name: "commutative operands swapped", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Sub(peel.Mul(xs[0], xs[1]), peel.Mul(xs[1], xs[0])), peel.Add(xs[1], xs[0]), peel.Add(xs[0], xs[1])}
		}, x, y), before: map[string]int{"mul": 2, "add": 2}, after: map[string]int{"mul": 1, "add": 1}, consts: -1},
		{name: "non-commutative operands swapped", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Sub(xs[0], xs[1]), peel.Sub(xs[1], xs[0]), peel.Maximum(xs[0], xs[1]), peel.Maximum(xs[1], xs[0])}
		}, x, y), after: map[string]int{"sub": 2, "max": 2}, consts: -1},
		{name: "same op different inputs", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Add(peel.Exp(xs[0]), peel.Exp(xs[1]))}
		}, x, y), before: map[string]int{"exp": 2}, after: map[string]int{"exp": 2}, consts: -1},
		{name: "different params", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Sum(xs[0], 0), peel.Sum(xs[0], 1), peel.Sum(xs[0], 1)}
		}, x), before: map[string]int{"reduce_sum": 3}, after: map[string]int{"reduce_sum": 2}, consts: -1},
		{name: "views are pure", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Add(peel.Transpose(xs[0]), peel.Transpose(xs[0]))}
		}, x), before: map[string]int{"transpose": 2}, after: map[string]int{"transpose": 1}, consts: -1},
		{name: "chains merge", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Sin(peel.Exp(xs[0])), peel.Sin(peel.Exp(xs[0]))}
		}, x), after: map[string]int{"exp": 1, "sin": 1}, consts: -1, check: func(t *testing.T, g *interp.Graph) {
			if g.Out[0] != g.Out[1] {
				t.Errorf("the outputs should be one var:\n%v", g)
			}
		}},
		{name: "random draws with different keys", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Add(peel.Uniform(xs[0], peel.Float64, 4), peel.Uniform(xs[1], peel.Float64, 4))}
		}, key, peel.Key(8)), before: map[string]int{"threefry2x32": 2}, after: map[string]int{"threefry2x32": 2}, consts: -1},
		{name: "random draws with one key", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Sub(peel.Uniform(xs[0], peel.Float64, 4), peel.Uniform(xs[0], peel.Float64, 4))}
		}, key), before: map[string]int{"threefry2x32": 2}, after: map[string]int{"threefry2x32": 1}, consts: -1},
		{name: "split keys differ", graph: traced(func(xs []*T) []*T {
			ks := peel.SplitKeys(xs[0], 2)
			return []*T{peel.Sub(peel.Normal(ks[0], peel.Float64, 3), peel.Normal(ks[1], peel.Float64, 3))}
		}, key), after: map[string]int{}, consts: -1, check: func(t *testing.T, g *interp.Graph) {
			r := g.Eval(key)[0].Float64s()
			if r[0] == 0 && r[1] == 0 && r[2] == 0 {
				t.Errorf("draws with different keys were merged:\n%v", g)
			}
		}},
		{name: "equal constants", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c1, c2, c3 := b.constant(seq(2, 3)), b.constant(seq(2, 3)), b.constant(peel.Cos(seq(2, 3)))
			s := b.eqn1(prims.Add, nil, in, c1)
			s2 := b.eqn1(prims.Add, nil, in, c2)
			s3 := b.eqn1(prims.Add, nil, in, c3)
			return b.output(s, s2, s3), []*T{x}
		}, after: map[string]int{"add": 2}, consts: 2},
		{name: "signed zeros differ", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 1)
			c1, c2 := b.constant(peel.FromFloat64s([]float64{0}, 1)), b.constant(peel.Neg(peel.FromFloat64s([]float64{0}, 1)))
			return b.output(b.eqn1(prims.Div, nil, in, c1), b.eqn1(prims.Div, nil, in, c2)), []*T{peel.FromFloat64s([]float64{1}, 1)}
		}, after: map[string]int{"div": 2}, consts: 2},
		{name: "no merge into a value written in place", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			e1 := b.eqn1(prims.Exp, nil, in)
			e2 := b.eqn1(prims.Exp, nil, in)
			m := b.eqn1(prims.AddInPlace, nil, e1, in)
			return b.output(m, e2), []*T{x}
		}, after: map[string]int{"exp": 2, "add_": 1}, consts: -1},
	})
}

func TestSplatConstants(t *testing.T) {
	x := seq(2, 3)
	full := func(v float64) *T { return peel.Full(peel.Float64, v, 2, 3) }
	mulBy := func(c *T) func() (*interp.Graph, []*T) {
		return func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(c.DType(), 2, 3)
			return b.output(b.eqn1(prims.Mul, nil, in, b.constant(c))), []*T{peel.AsType(x, c.DType())}
		}
	}
	nz := math.Copysign(0, -1)
	zeros := peel.FromFloat64s([]float64{0, 0, 0, nz, nz, nz}, 2, 3)
	runPassCases(t, compiler.SplatConstants, []passCase{
		{name: "uniform f64", graph: mulBy(full(0.1)), after: map[string]int{"broadcast_in_dim": 1}, consts: 1,
			check: func(t *testing.T, g *interp.Graph) {
				if n := g.Consts[0].Aval.Size(); n != 1 {
					t.Errorf("the constant has %d elements, want 1", n)
				}
			}},
		{name: "uniform f32", graph: mulBy(peel.Full(peel.Float32, 3, 2, 3)), after: map[string]int{"broadcast_in_dim": 1}, consts: 1},
		{name: "uniform int64", graph: mulBy(peel.Full(peel.Int64, 7, 2, 3)), after: map[string]int{"broadcast_in_dim": 1}, consts: 1},
		{name: "uniform NaN", graph: mulBy(full(math.NaN())), after: map[string]int{"broadcast_in_dim": 1}, consts: 1},
		{name: "large broadcast view", graph: func() (*interp.Graph, []*T) {
			// A scalar broadcast eagerly: a view of one element, past
			// the size up to which constants are read.
			b := newGraph()
			in := b.input(peel.Float64, 300, 300)
			c := b.constant(peel.BroadcastTo(peel.Scalar(2.0), 300, 300))
			return b.output(b.eqn1(prims.Mul, nil, in, c)), []*T{peel.Ones(peel.Float64, 300, 300)}
		}, after: map[string]int{"broadcast_in_dim": 1}, consts: 1},
		{name: "large uniform array stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 300, 300)
			c := b.constant(peel.Add(peel.Zeros(peel.Float64, 300, 300), peel.Zeros(peel.Float64, 300, 300)))
			return b.output(b.eqn1(prims.Mul, nil, in, c)), []*T{peel.Ones(peel.Float64, 300, 300)}
		}, after: map[string]int{"broadcast_in_dim": 0}, consts: 1},
		{name: "not uniform", graph: mulBy(x), after: map[string]int{"broadcast_in_dim": 0}, consts: 1},
		{name: "signed zeros differ", graph: mulBy(zeros), after: map[string]int{"broadcast_in_dim": 0}, consts: 1},
		{name: "one element stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64)
			return b.output(b.eqn1(prims.Mul, nil, in, b.constant(peel.Scalar(2.0)))), []*T{peel.Scalar(3.0)}
		}, after: map[string]int{"broadcast_in_dim": 0}, consts: 1},
		{name: "output stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(full(2))
			return b.output(b.eqn1(prims.Mul, nil, in, c), c), []*T{x}
		}, after: map[string]int{"broadcast_in_dim": 0}, consts: 1},
		{name: "written in place stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(full(2))
			return b.output(b.eqn1(prims.AddInPlace, nil, c, in)), []*T{x}
		}, after: map[string]int{"broadcast_in_dim": 0, "add_": 1}, consts: 1},
	})
}

func TestFoldConstants(t *testing.T) {
	x := seq(2, 3)
	runPassCases(t, compiler.FoldConstants, []passCase{
		{name: "chain of constants", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(seq(2, 3))
			e := b.eqn1(prims.Exp, nil, c)
			s := b.eqn1(prims.Sin, nil, e)
			return b.output(b.eqn1(prims.Add, nil, in, s)), []*T{x}
		}, after: map[string]int{"exp": 0, "sin": 0, "add": 1}, consts: 1},
		{name: "iota", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Int64, 4)
			i := b.eqn1(prims.Iota, prims.IotaParams{DType: peel.Int64, Shape: []int{4}, Dim: 0})
			return b.output(b.eqn1(prims.Mul, nil, in, i)), []*T{peel.FromInt64s([]int64{1, 2, 3, 4}, 4)}
		}, after: map[string]int{"iota": 0, "mul": 1}, consts: 1},
		{name: "input operand", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Exp(peel.Mul(xs[0], 2.0))}
		}, x), after: map[string]int{"exp": 1, "mul": 1}, consts: 1},
		{name: "large broadcast stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 1<<9, 1<<9)
			c := b.constant(peel.Scalar(2.0))
			bc := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{1 << 9, 1 << 9}, Dims: []int{}}, c)
			return b.output(b.eqn1(prims.Mul, nil, in, bc)), []*T{peel.Zeros(peel.Float64, 1<<9, 1<<9)}
		}, after: map[string]int{"broadcast_in_dim": 1}, consts: 1},
		{name: "small broadcast of a scalar stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(peel.Scalar(2.0))
			bc := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{}}, c)
			return b.output(b.eqn1(prims.Mul, nil, in, bc)), []*T{x}
		}, after: map[string]int{"broadcast_in_dim": 1}, consts: 1},
		{name: "a uniform folded result is a broadcast of one value", graph: func() (*interp.Graph, []*T) {
			// So that CSE can merge it with the value's other broadcasts,
			// and a second run of the pipeline changes nothing (found by
			// TestPassesRapid).
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(peel.FromFloat64s([]float64{2, 2, 2}))
			bc := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{1}}, c)
			return b.output(b.eqn1(prims.Mul, nil, in, bc)), []*T{x}
		}, after: map[string]int{"broadcast_in_dim": 1}, consts: 1, check: func(t *testing.T, g *interp.Graph) {
			if n := g.Consts[0].Aval.Size(); n != 1 {
				t.Errorf("the constant has %d elements, want 1", n)
			}
		}},
		{name: "small broadcast of a vector folds", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(seq(3))
			bc := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{1}}, c)
			return b.output(b.eqn1(prims.Mul, nil, in, bc)), []*T{x}
		}, after: map[string]int{"broadcast_in_dim": 0}, consts: 1},
		{name: "random with a constant key folds", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Int64, 4)
			k0, k1 := b.constant(peel.FromInt64s([]int64{1, 2, 3, 4}, 4)), b.constant(peel.FromInt64s([]int64{5, 6, 7, 8}, 4))
			r := b.eqn(prims.Threefry2x32, nil, k0, k1, in, in)
			return b.output(r[0], r[1]), []*T{peel.FromInt64s([]int64{9, 10, 11, 12}, 4)}
		}, after: map[string]int{"threefry2x32": 1}, consts: 2},
		{name: "random with constant key and counters", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Int64, 4)
			k0, k1 := b.constant(peel.FromInt64s([]int64{1, 2, 3, 4}, 4)), b.constant(peel.FromInt64s([]int64{5, 6, 7, 8}, 4))
			r := b.eqn(prims.Threefry2x32, nil, k0, k1, k0, k1)
			return b.output(b.eqn1(prims.Add, nil, in, r[0]), r[1]), []*T{peel.FromInt64s([]int64{9, 10, 11, 12}, 4)}
		}, after: map[string]int{"threefry2x32": 0, "add": 1}, consts: 2},
		{name: "mutation stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			c := b.constant(seq(2, 3))
			e := b.eqn1(prims.Exp, nil, c)
			m := b.eqn1(prims.AddInPlace, nil, e, in)
			return b.output(m), []*T{x}
		}, after: map[string]int{"exp": 1, "add_": 1}, consts: 1},
	})
	// The last case cannot be evaluated at all: check only the rewrite.
	g, _ := func() (*interp.Graph, []*T) {
		b := newGraph()
		in := b.input(peel.Float64, 2)
		e := &interp.Eqn{Prim: noEvalPrim, In: []*interp.Var{b.constant(seq(2))}, Out: []*interp.Var{b.newVar(interp.Aval{Shape: []int{2}, DType: peel.Float64})}}
		b.g.Eqns = append(b.g.Eqns, e)
		return b.output(in, e.Out[0]), nil
	}()
	if ng := compiler.FoldConstants(g); count(ng, noEvalPrim.Name) != 1 {
		t.Errorf("a primitive that refuses evaluation was folded:\n%v", ng)
	}
}

var noEvalPrim = func() *interp.Prim {
	p := interp.NewPrim("compiler_test.noeval", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval { return in })
	p.NoEval = "only transformed"
	return p
}()

func TestSimplify(t *testing.T) {
	x := seq(2, 3)
	in23 := func(build func(b *graphBuilder, in *interp.Var) []*interp.Var) func() (*interp.Graph, []*T) {
		return func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3)
			return b.output(build(b, in)...), []*T{x}
		}
	}
	rs := func(s ...int) prims.ReshapeParams { return prims.ReshapeParams{Shape: s} }
	tp := func(p ...int) prims.TransposeParams { return prims.TransposeParams{Perm: p} }
	runPassCases(t, compiler.Simplify, []passCase{
		{name: "reshape of reshape", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			r := b.eqn1(prims.Reshape, rs(6), in)
			return []*interp.Var{b.eqn1(prims.Reshape, rs(3, 2), r)}
		}), after: map[string]int{"reshape": 1}, consts: 0, check: func(t *testing.T, g *interp.Graph) {
			if e := g.Eqns[0]; e.In[0] != g.In[0] {
				t.Errorf("the reshape should read the input:\n%v", g)
			}
		}},
		{name: "reshape back", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			r := b.eqn1(prims.Reshape, rs(6), in)
			return []*interp.Var{b.eqn1(prims.Reshape, rs(2, 3), r)}
		}), after: map[string]int{"reshape": 0}, consts: 0},
		{name: "reshape that changes the shape stays", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.Reshape, rs(3, 2), in)}
		}), after: map[string]int{"reshape": 1}, consts: 0},
		{name: "reshape kept for another use", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			r := b.eqn1(prims.Reshape, rs(6), in)
			return []*interp.Var{r, b.eqn1(prims.Reshape, rs(3, 2), r)}
		}), after: map[string]int{"reshape": 2}, consts: 0},
		{name: "transpose of transpose", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 2, 3, 4)
			t1 := b.eqn1(prims.Transpose, tp(1, 2, 0), in)
			return b.output(b.eqn1(prims.Transpose, tp(0, 2, 1), t1)), []*T{seq(2, 3, 4)}
		}, after: map[string]int{"transpose": 1}, consts: 0, check: func(t *testing.T, g *interp.Graph) {
			if p := g.Eqns[0].Params.(prims.TransposeParams).Perm; p[0] != 1 || p[1] != 0 || p[2] != 2 {
				t.Errorf("composed permutation %v, want [1 0 2]", p)
			}
		}},
		{name: "transpose back", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			t1 := b.eqn1(prims.Transpose, tp(1, 0), in)
			return []*interp.Var{b.eqn1(prims.Exp, nil, b.eqn1(prims.Transpose, tp(1, 0), t1))}
		}), after: map[string]int{"transpose": 0, "exp": 1}, consts: 0},
		{name: "identity transpose", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.Transpose, tp(0, 1), in)}
		}), after: map[string]int{"transpose": 0}, consts: 0},
		{name: "transpose stays", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.Transpose, tp(1, 0), in)}
		}), after: map[string]int{"transpose": 1}, consts: 0},
		{name: "broadcast of broadcast", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 3)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{1}}, in)
			b2 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 4, 3}, Dims: []int{0, 2}}, b1)
			return b.output(b2), []*T{seq(3)}
		}, after: map[string]int{"broadcast_in_dim": 1}, consts: 0, check: func(t *testing.T, g *interp.Graph) {
			if p := g.Eqns[0].Params.(prims.BroadcastParams); len(p.Dims) != 1 || p.Dims[0] != 2 {
				t.Errorf("merged broadcast %v, want dims [2]", p)
			}
		}},
		{name: "broadcast of a size-1 dimension", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 1, 3)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{0, 1}}, in)
			b2 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{5, 2, 3}, Dims: []int{1, 2}}, b1)
			return b.output(b2), []*T{seq(1, 3)}
		}, after: map[string]int{"broadcast_in_dim": 1}, consts: 0},
		{name: "identity broadcast", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{0, 1}}, in)}
		}), after: map[string]int{"broadcast_in_dim": 0}, consts: 0},
		{name: "reshape of a broadcast scalar", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 1, 1)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{0, 1}}, in)
			return b.output(b.eqn1(prims.Reshape, rs(6), b1)), []*T{seq(1, 1)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 1}, consts: 0, check: func(t *testing.T, g *interp.Graph) {
			if last := g.Eqns[len(g.Eqns)-1]; last.Prim != prims.BroadcastInDim || !interp.ShapeEqual(last.Out[0].Aval.Shape, []int{6}) {
				t.Errorf("want a broadcast to [6] last:\n%v", g)
			}
		}},
		{name: "transpose of a broadcast scalar", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{}}, in)
			return b.output(b.eqn1(prims.Transpose, tp(1, 0), b1)), []*T{peel.Scalar(1.5)}
		}, after: map[string]int{"broadcast_in_dim": 1, "transpose": 0}, consts: 0},
		{name: "reshape of a broadcast stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 3)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{1}}, in)
			return b.output(b.eqn1(prims.Reshape, rs(6), b1)), []*T{seq(3)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 1}, consts: 0},
		{name: "reshape of a broadcast inserting unit dimensions", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 3)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{2, 3}, Dims: []int{1}}, in)
			return b.output(b.eqn1(prims.Reshape, rs(2, 1, 3, 1), b1)), []*T{seq(3)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 0}, consts: 0, check: func(t *testing.T, g *interp.Graph) {
			if p := g.Eqns[0].Params.(prims.BroadcastParams); len(p.Dims) != 1 || p.Dims[0] != 2 {
				t.Errorf("broadcast %v, want dims [2]", p)
			}
		}},
		{name: "reshape of a broadcast removing a unit dimension", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 3)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{1, 2, 3}, Dims: []int{2}}, in)
			return b.output(b.eqn1(prims.Reshape, rs(2, 3), b1)), []*T{seq(3)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 0}, consts: 0},
		{name: "reshape of a broadcast of a unit dimension stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 1, 3)
			b1 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{1, 3}, Dims: []int{0, 1}}, in)
			b2 := b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{1, 2, 3}, Dims: []int{0, 2}}, b1)
			return b.output(b.eqn1(prims.Reshape, rs(2, 3), b2)), []*T{seq(1, 3)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 1}, consts: 0},
		{name: "broadcast of a reshape inserting unit dimensions", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 5)
			r := b.eqn1(prims.Reshape, rs(5, 1), in)
			return b.output(b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{5, 4}, Dims: []int{0, 1}}, r)), []*T{seq(5)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 0}, consts: 0, check: func(t *testing.T, g *interp.Graph) {
			if p := g.Eqns[0].Params.(prims.BroadcastParams); len(p.Dims) != 1 || p.Dims[0] != 0 || g.Eqns[0].In[0] != g.In[0] {
				t.Errorf("broadcast %v of %v, want dims [0] of the input", p, g.Eqns[0].In[0])
			}
		}},
		{name: "broadcast of a reshape that splits stays", graph: func() (*interp.Graph, []*T) {
			b := newGraph()
			in := b.input(peel.Float64, 6)
			r := b.eqn1(prims.Reshape, rs(2, 3), in)
			return b.output(b.eqn1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{4, 2, 3}, Dims: []int{1, 2}}, r)), []*T{seq(6)}
		}, after: map[string]int{"broadcast_in_dim": 1, "reshape": 1}, consts: 0},
		{name: "traced centering", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Sub(xs[0], peel.Reshape(peel.Sum(xs[0], 1), 2, 1))}
		}, x), before: map[string]int{"reshape": 1, "broadcast_in_dim": 1}, after: map[string]int{"reshape": 0, "broadcast_in_dim": 1}, consts: 0},
		{name: "identity slice", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.Slice, prims.SliceParams{Start: []int{0, 0}, Limit: []int{2, 3}, Stride: []int{1, 1}}, in)}
		}), after: map[string]int{"slice": 0}, consts: 0},
		{name: "slice stays", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.Slice, prims.SliceParams{Start: []int{0, 0}, Limit: []int{2, 3}, Stride: []int{1, 2}}, in)}
		}), after: map[string]int{"slice": 1}, consts: 0},
		{name: "identity conversion", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			return []*interp.Var{b.eqn1(prims.Exp, nil, b.eqn1(prims.ConvertElementType, prims.ConvertParams{DType: peel.Float64}, in))}
		}), after: map[string]int{"convert_element_type": 0}, consts: 0},
		{name: "round trip through f32 stays", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			c := b.eqn1(prims.ConvertElementType, prims.ConvertParams{DType: peel.Float32}, in)
			return []*interp.Var{b.eqn1(prims.ConvertElementType, prims.ConvertParams{DType: peel.Float64}, c)}
		}), after: map[string]int{"convert_element_type": 2}, consts: 0},
		{name: "conversion written in place stays", graph: in23(func(b *graphBuilder, in *interp.Var) []*interp.Var {
			c := b.eqn1(prims.ConvertElementType, prims.ConvertParams{DType: peel.Float64}, in)
			return []*interp.Var{b.eqn1(prims.AddInPlace, nil, c, in), in}
		}), after: map[string]int{"convert_element_type": 1}, consts: 0},
		{name: "traced chain", graph: traced(func(xs []*T) []*T {
			return []*T{peel.Transpose(peel.Transpose(peel.Reshape(peel.Reshape(xs[0], 3, 2), 6, 1)))}
		}, x), before: map[string]int{"reshape": 2, "transpose": 2}, after: map[string]int{"reshape": 1, "transpose": 0}, consts: 0},
	})
}

func TestFoldTransposeIntoDot(t *testing.T) {
	a, w := seq(4, 3), peel.Cos(seq(5, 3))
	ba, bw := seq(2, 4, 3), peel.Cos(seq(2, 5, 3))
	contract := func(l, r int) func(t *testing.T, g *interp.Graph) {
		return func(t *testing.T, g *interp.Graph) {
			for _, e := range g.Eqns {
				if e.Prim == prims.DotGeneral {
					p := e.Params.(prims.DotParams)
					if p.LhsContract[0] != l || p.RhsContract[0] != r {
						t.Errorf("dot %v, want contract=([%d],[%d])", p, l, r)
					}
				}
			}
		}
	}
	runPassCases(t, compiler.FoldTransposeIntoDot, []passCase{
		{name: "x·wᵀ", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(xs[0], peel.Transpose(xs[1]))}
		}, a, w), before: map[string]int{"transpose": 1}, after: map[string]int{"transpose": 0, "dot_general": 1}, consts: 0, check: contract(1, 1)},
		{name: "xᵀ·w", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(peel.Transpose(xs[0]), xs[1])}
		}, peel.Clone(peel.Transpose(a)), peel.Clone(peel.Transpose(w))), before: map[string]int{"transpose": 1}, after: map[string]int{"transpose": 0}, consts: 0, check: contract(0, 0)},
		{name: "xᵀ·wᵀ", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(peel.Transpose(xs[0]), peel.Transpose(xs[1]))}
		}, peel.Transpose(a), w), before: map[string]int{"transpose": 2}, after: map[string]int{"transpose": 0}, consts: 0, check: contract(0, 1)},
		{name: "batched", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(xs[0], peel.Transpose(xs[1], 0, 2, 1))}
		}, ba, bw), before: map[string]int{"transpose": 1}, after: map[string]int{"transpose": 0}, consts: 0, check: contract(2, 2)},
		{name: "matrix-vector", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(peel.Transpose(xs[0]), xs[1])}
		}, peel.Transpose(a), seq(3)), after: map[string]int{"transpose": 0}, consts: 0},
		{name: "batch dimension moved", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(peel.Transpose(xs[0], 1, 0, 2), xs[1])}
		}, peel.Transpose(ba, 1, 0, 2), peel.Transpose(bw, 0, 2, 1)), before: map[string]int{"transpose": 1}, after: map[string]int{"transpose": 0}, consts: 0},
		{name: "free dimensions reordered stays", graph: traced(func(xs []*T) []*T {
			// [2,4,3] → [4,2,3]: the free dimensions 0 and 1 swap.
			return []*T{peel.MatMul(peel.Transpose(xs[0], 1, 0, 2), xs[1])}
		}, ba, peel.Transpose(w)), before: map[string]int{"transpose": 1}, after: map[string]int{"transpose": 1}, consts: 0},
		{name: "transpose kept for another use", graph: traced(func(xs []*T) []*T {
			wt := peel.Transpose(xs[1])
			return []*T{peel.MatMul(xs[0], wt), peel.Exp(wt)}
		}, a, w), after: map[string]int{"transpose": 1, "dot_general": 1}, consts: 0, check: contract(1, 1)},
		{name: "int64", graph: traced(func(xs []*T) []*T {
			return []*T{peel.MatMul(xs[0], peel.Transpose(xs[1]))}
		}, peel.AsType(peel.Mul(a, 4.0), peel.Int64), peel.AsType(peel.Mul(w, 4.0), peel.Int64)), after: map[string]int{"transpose": 0}, consts: 0},
	})
}

func TestDCE(t *testing.T) {
	b := newGraph()
	in := b.input(peel.Float64, 2)
	dead := b.eqn1(prims.Exp, nil, in)
	_ = b.eqn1(prims.Sin, nil, dead)
	c := b.constant(seq(2))
	_ = c
	m := b.eqn1(prims.Exp, nil, in)
	_ = b.eqn1(prims.AddInPlace, nil, m, in)
	g := b.output(in)
	ng := compiler.DCE(g)
	if count(ng, "exp") != 1 || count(ng, "sin") != 0 || count(ng, "add_") != 1 || len(ng.Consts) != 0 {
		t.Errorf("DCE left:\n%v", ng)
	}
}

func TestOptimize(t *testing.T) {
	x, w := seq(4, 3), peel.Cos(seq(5, 3))
	g := trace(func(xs []*T) []*T {
		y := peel.MatMul(xs[0], peel.Transpose(xs[1]))
		z := peel.MatMul(xs[0], peel.Transpose(xs[1]))
		return []*T{peel.Add(peel.Reshape(peel.Reshape(y, 20), 4, 5), z)}
	}, x, w)
	opt, stages := compiler.Optimize(g, compiler.DefaultPasses(), true)
	if len(stages) != len(compiler.DefaultPasses()) {
		t.Fatalf("%d stages, want one per pass", len(stages))
	}
	for i, p := range compiler.DefaultPasses() {
		if stages[i].Pass != p.Name || stages[i].Graph == nil {
			t.Errorf("stage %d is %q, want %q", i, stages[i].Pass, p.Name)
		}
	}
	if stages[len(stages)-1].Graph != opt {
		t.Errorf("the last stage is not the result")
	}
	if n := len(opt.Eqns); n != 2 || count(opt, "dot_general") != 1 || count(opt, "add") != 1 {
		t.Errorf("optimized graph:\n%v\nwant one dot and one add", opt)
	}
	if msg := sameResults(opt, g, []*T{x, w}); msg != "" {
		t.Error(msg)
	}
	if _, s := compiler.Optimize(g, compiler.DefaultPasses(), false); s != nil {
		t.Errorf("stages recorded without record")
	}
}

func TestOptimizeErrors(t *testing.T) {
	g := trace(func(xs []*T) []*T { return []*T{peel.Exp(xs[0])} }, seq(2))
	cases := []struct {
		name   string
		g      *interp.Graph
		passes []compiler.Pass
		want   string
	}{
		{"nil graph", nil, nil, "nil graph"},
		{"no run", g, []compiler.Pass{{Name: "x"}}, "no Run"},
		{"nil result", g, []compiler.Pass{{Name: "x", Run: func(*interp.Graph) *interp.Graph { return nil }}}, "nil graph"},
		{"changed outputs", g, []compiler.Pass{{Name: "x", Run: func(g *interp.Graph) *interp.Graph {
			return &interp.Graph{In: g.In}
		}}}, "number of inputs or outputs"},
		{"changed input type", g, []compiler.Pass{{Name: "x", Run: func(g *interp.Graph) *interp.Graph {
			return &interp.Graph{In: []*interp.Var{{Aval: interp.Aval{Shape: []int{3}, DType: peel.Float64}}}, Out: g.Out}
		}}}, "type of input 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := interp.Catch(func() { compiler.Optimize(c.g, c.passes, false) })
			var pe *peel.Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want a *peel.Error containing %q", err, c.want)
			}
		})
	}
}

// TestFoldTransposeIntoDotNumerics checks products large enough for the
// GEMM path, where the kernel reads the folded operand with a transpose
// flag instead of a contiguous copy and the BLAS may accumulate in
// another order: both the traced and the folded graph must be within the
// GEMM's rounding bound of a float64 reference, 2·K·ε·Σ_k |x_ik|·|w_jk|
// (plus the rounding of the reference into the dtype); integer products
// must agree exactly.
func TestFoldTransposeIntoDotNumerics(t *testing.T) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64, peel.Int64} {
		for _, n := range []int{9, 40, 100} {
			m, k := n+3, n+1
			x := peel.Sub(peel.Mul(peel.Sin(peel.Mul(seq(m, k), 7.0)), 3.0), 0.25)
			w := peel.Mul(peel.Cos(peel.Mul(seq(n, k), 5.0)), 2.0)
			if dt == peel.Int64 {
				x, w = peel.Round(x), peel.Round(w)
			}
			xd, wd := x.Float64s(), w.Float64s()
			x, w = peel.AsType(x, dt), peel.AsType(w, dt)
			g := trace(func(xs []*T) []*T { return []*T{peel.MatMul(xs[0], peel.Transpose(xs[1]))} }, x, w)
			folded := compiler.FoldTransposeIntoDot(g)
			if count(folded, "transpose") != 0 {
				t.Fatalf("not folded:\n%v", folded)
			}
			eps := 0.0
			switch dt {
			case peel.Float32:
				eps = 0x1p-24
			case peel.Float64:
				eps = 0x1p-53
			}
			for name, gr := range map[string]*interp.Graph{"traced": g, "folded": folded} {
				got := peel.AsType(gr.Eval(x, w)[0], peel.Float64).Float64s()
				for i := range m {
					for j := range n {
						ref, mag := 0.0, 0.0
						for l := range k {
							ref += xd[i*k+l] * wd[j*k+l]
							mag += math.Abs(xd[i*k+l] * wd[j*k+l])
						}
						bound := 2*float64(k)*eps*mag + eps*math.Abs(ref)
						if d := math.Abs(got[i*n+j] - ref); d > bound {
							t.Fatalf("%v n=%d %s: element [%d,%d] = %v, want %v within %g", dt, n, name, i, j, got[i*n+j], ref, bound)
						}
					}
				}
			}
		}
	}
}

// TestSimplifyTransposeTransposeValues: every pair of permutations of a
// cube's axes, composed by the transpose∘transpose rule into one
// transpose, gives the values of the two (on a cube every wrong
// composition has the right shape, so only the values tell).
func TestSimplifyTransposeTransposeValues(t *testing.T) {
	perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	x := seq(3, 3, 3)
	for _, p1 := range perms {
		for _, p2 := range perms {
			g := trace(func(xs []*T) []*T { return []*T{peel.Transpose(peel.Transpose(xs[0], p1...), p2...)} }, x)
			sg := compiler.Simplify(g)
			if n := count(sg, "transpose"); n > 1 {
				t.Fatalf("%v then %v: %d transposes left\n%v", p1, p2, n, sg)
			}
			if msg := sameResults(sg, g, []*T{x}); msg != "" {
				t.Fatalf("%v then %v: %s\nbefore:\n%v\nafter:\n%v", p1, p2, msg, g, sg)
			}
		}
	}
}
