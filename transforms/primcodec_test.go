package transforms_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// noCodec lists the primitives that are bound with parameters an
// exported program cannot hold, so that they have no codec (Export
// refuses a program holding one, naming it), each with why.
// Mutations and effects are not listed: Export refuses them whatever
// their parameters.
var noCodec = map[string]string{
	"custom_jvp_call": "holds the user's function and JVP rule (Go functions)",
	"custom_vjp_call": "holds the user's function and forward pass (Go functions)",
	"custom_vjp_lin":  "holds the user's backward pass (a Go function)",
	"hook":            "holds the user's function (a Go function)",
	"hook_lin":        "holds the user's function (a Go function)",
	"shard_map":       "holds a mesh of devices and their communicators",
	"checkpoint_lin":  "the linear part of a checkpoint in a derivative being built, whose graph's constants are the forward pass's values: staged derivatives hold its equations or its transpose's, not it",
}

// unreached lists the primitives that can be exported and that no trace
// of TestPrimitiveCodecs records, each with why; their parameters, if
// any, are not checked against their codecs here.
var unreached = map[string]string{
	"iota":       "it takes no operands, so Bind evaluates it at once: a graph holds its result as a constant",
	"checkpoint": "a composite the staging interpreter decomposes (it is not Whole): staged graphs hold its graph's equations, and under a derivative its JVP's",
	"linear":     "a composite the staging interpreter decomposes (it is not Whole): staged graphs hold its dot_general and add",
}

// TestPrimitiveCodecs checks that every primitive bound with parameters
// declares their type where it is defined (graphio.Params,
// graphio.ParamsWith), which gives it the codec exported programs write
// them with. It traces every op of the registry (optest.All) at every
// sample, and the gradients and vmaps of a few samples of each, and the
// control-flow, checkpoint, compiled-call, user-defined-op and
// collective primitives under JVP, Linearize and Grad: every equation
// whose parameters are not nil must have a codec of exactly their type
// (unless its primitive is in noCodec, or cannot be exported at all: a
// mutation, an effect, a primitive that cannot be evaluated). Every
// registered primitive that can be exported must be met by a trace (or
// be listed in unreached, with why), and every codec must be graphio's,
// of a struct or a pointer to one.
func TestPrimitiveCodecs(t *testing.T) {
	const customopPkg = modulePath + "/customop"
	seen, reported := map[*interp.Prim]bool{}, map[*interp.Prim]bool{}
	exportable := func(p *interp.Prim) bool {
		return p.Kind != interp.Mutation && !p.Effect && p.NoEval == ""
	}
	checkGraph := func(what string, g *interp.Graph) {
		for _, e := range g.Eqns {
			p := e.Prim
			seen[p] = true
			if e.Params == nil || !exportable(p) || noCodec[p.Name] != "" || reported[p] {
				continue
			}
			switch {
			case p.Codec == nil:
				reported[p] = true // once, where first met
				t.Errorf("%s: %s is bound with parameters (%T) and has no codec: declare their type where it is defined (graphio.Params or graphio.ParamsWith), or list it in noCodec", what, p.Name, e.Params)
			case p.Codec.ParamType() != reflect.TypeOf(e.Params):
				reported[p] = true
				t.Errorf("%s: %s's codec writes %v, but it is bound with %T", what, p.Name, p.Codec.ParamType(), e.Params)
			}
		}
	}
	trace := func(what string, f func([]*peel.Tensor) []*peel.Tensor, args []*peel.Tensor) bool {
		var g *interp.Graph
		if peel.Catch(func() { g = interp.Trace(f, args) }) != nil {
			return false // not traceable (reads values, or refused)
		}
		checkGraph(what, g)
		return true
	}

	// Every op of the registry, its gradient and its vmap.
	const transformed = 3 // samples per op traced under Grad and under Vmap
	for _, op := range optest.All() {
		grads, vmaps := 0, 0
		for _, s := range op.Samples() {
			what := op.Name + "@" + s.Name
			f := func(xs []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{op.F(xs)} }
			if !trace(what, f, s.Args) {
				continue
			}
			if op.Differentiable && grads < transformed && !slices.ContainsFunc(s.Args, func(x *peel.Tensor) bool { return !x.DType().IsFloat() }) {
				grad := transforms.Grad(func(xs []*peel.Tensor) *peel.Tensor { return peel.Sum(op.F(xs)) })
				if trace(what+" grad", grad, s.Args) {
					grads++
				}
			}
			if vmaps < transformed {
				vf := func(xs []*peel.Tensor) []*peel.Tensor {
					stacked := make([]*peel.Tensor, len(xs))
					for i, x := range xs {
						stacked[i] = peel.Stack([]*peel.Tensor{x, x}, 0)
					}
					return []*peel.Tensor{transforms.Vmap(op.F)(stacked)}
				}
				if trace(what+" vmap", vf, s.Args) {
					vmaps++
				}
			}
		}
	}

	// Primitives no op of the registry binds, and their derivatives.
	extras := map[string]func(x, key *peel.Tensor) *peel.Tensor{
		"peel.GELUTanh":     func(x, _ *peel.Tensor) *peel.Tensor { return peel.GELUTanh(x) },
		"peel.FloorDiv":     func(x, _ *peel.Tensor) *peel.Tensor { return peel.FloorDiv(x, 0.5) },
		"peel.StopGradient": func(x, _ *peel.Tensor) *peel.Tensor { return peel.Mul(peel.StopGradient(x), x) },
		"peel.DynamicSlice": func(x, _ *peel.Tensor) *peel.Tensor {
			return peel.DynamicSlice(x, []*peel.Tensor{peel.Scalar(int64(1))}, []int{2})
		},
		"peel.DynamicUpdateSlice": func(x, _ *peel.Tensor) *peel.Tensor {
			return peel.DynamicUpdateSlice(x, peel.Sin(peel.Slice(x, 0, 0, 2, 1)), []*peel.Tensor{peel.Scalar(int64(1))})
		},
		"peel.Normal": func(x, key *peel.Tensor) *peel.Tensor { return peel.Mul(x, peel.Normal(key, peel.Float64, 3)) },
	}
	for name, f := range extras {
		args := []*peel.Tensor{peel.Normal(peel.Key(30), peel.Float64, 3), peel.Key(29)}
		if !trace(name, func(xs []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{f(xs[0], xs[1])} }, args) {
			t.Errorf("%s: not traceable", name)
		}
		grad := func(xs []*peel.Tensor) []*peel.Tensor {
			return []*peel.Tensor{transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f(x, xs[1])) })(xs[0])}
		}
		if !trace(name+" grad", grad, args) {
			t.Errorf("%s: its gradient is not traceable", name)
		}
	}

	// The transform-local primitives, and their derivative forms.
	w := peel.Normal(peel.Key(31), peel.Float64, 3, 3)
	v := peel.Normal(peel.Key(32), peel.Float64, 3)
	inner := transforms.Compile(func(x *peel.Tensor) *peel.Tensor { return peel.Sin(peel.MatMul(x, w)) })
	forms := map[string]func(*peel.Tensor) *peel.Tensor{
		"scan": func(x *peel.Tensor) *peel.Tensor {
			c, ys := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
				n := peel.Tanh(peel.Add(peel.Reshape(peel.MatMul(peel.Reshape(c, 1, 3), w), 3), peel.Mul(xi, v)))
				return n, peel.Sum(peel.Mul(n, xi))
			}, peel.Zeros(peel.Float64, 3), x)
			return peel.Add(peel.Sum(c), peel.Sum(ys))
		},
		"cond": func(x *peel.Tensor) *peel.Tensor {
			return peel.Sum(transforms.Cond(peel.Greater(peel.Sum(x), 0.0),
				func(a *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Sin(a), v) },
				func(a *peel.Tensor) *peel.Tensor { return peel.Exp(a) }, x))
		},
		"while": func(x *peel.Tensor) *peel.Tensor {
			type st struct{ I, V *peel.Tensor }
			s := transforms.WhileLoop(func(s st) *peel.Tensor { return peel.Less(s.I, 4.0) },
				func(s st) st { return st{peel.Add(s.I, 1.0), peel.Sin(peel.Mul(s.V, v))} },
				st{peel.Scalar(0.0), x})
			return peel.Sum(s.V)
		},
		"checkpoint": func(x *peel.Tensor) *peel.Tensor {
			return peel.Sum(transforms.Checkpoint(func(a *peel.Tensor) *peel.Tensor {
				return transforms.Name(peel.Exp(peel.Cos(peel.Mul(a, v))), "e")
			}, transforms.SaveOnlyNames("e"))(x))
		},
		"compiled call": func(x *peel.Tensor) *peel.Tensor { return peel.Sum(inner(peel.Reshape(x, 1, 3))) },
		"composite":     func(x *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.Gelu.Call(x)) },
	}
	x := peel.Normal(peel.Key(33), peel.Float64, 3)
	for name, f := range forms {
		fs := map[string]func(*peel.Tensor) *peel.Tensor{
			"":           f,
			" JVP":       func(x *peel.Tensor) *peel.Tensor { _, t := transforms.JVP(f, x, peel.OnesLike(x)); return t },
			" Linearize": func(x *peel.Tensor) *peel.Tensor { _, l := transforms.Linearize(f, x); return l(peel.OnesLike(x)) },
		}
		if name != "while" { // reverse mode through WhileLoop is refused
			fs[" Grad"] = transforms.Grad(f)
		}
		for form, g := range fs {
			what := name + form
			gr := transforms.MakeGraph(g, x)
			checkGraph(what, gr)
			// The graphs nested in the equations' parameters are checked
			// by writing them: an equation there with parameters and no
			// codec fails.
			if _, err := graphio.Encode(gr, false); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
	}

	// The collectives, traced where their axis is bound.
	collectives := map[string]func(x *peel.Tensor) *peel.Tensor{
		"psum":         func(x *peel.Tensor) *peel.Tensor { return dist.Psum(x, "i") },
		"pmax":         func(x *peel.Tensor) *peel.Tensor { return dist.Pmax(x, "i") },
		"pmin":         func(x *peel.Tensor) *peel.Tensor { return dist.Pmin(x, "i") },
		"all_gather":   func(x *peel.Tensor) *peel.Tensor { return dist.AllGather(x, "i") },
		"psum_scatter": func(x *peel.Tensor) *peel.Tensor { return dist.PsumScatter(x, "i") },
		"all_to_all":   func(x *peel.Tensor) *peel.Tensor { return dist.AllToAll(x, "i", 0, 0) },
		"ppermute":     func(x *peel.Tensor) *peel.Tensor { return dist.Ppermute(x, "i", [][2]int{{0, 1}, {1, 0}}) },
	}
	for name, f := range collectives {
		transforms.Vmap(func(x *peel.Tensor) *peel.Tensor {
			if !trace(name, func(xs []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{f(xs[0])} }, []*peel.Tensor{x}) {
				t.Errorf("%s: not traceable under Vmap with its axis", name)
			}
			return x
		}, transforms.AxisName("i"))(peel.Normal(peel.Key(34), peel.Float64, 2, 2))
	}

	// Every primitive that can be exported was met (or is listed), and
	// every codec is graphio's.
	for _, p := range interp.Prims() {
		if p.Codec != nil {
			c, ok := p.Codec.(*graphio.Codec)
			switch {
			case !ok:
				t.Errorf("%s: its codec is a %T, not a *graphio.Codec: Export would not use it", p.Name, p.Codec)
			case c.ParamType() == nil:
				t.Errorf("%s: its codec has no parameter type", p.Name)
			default:
				if pt := c.ParamType(); pt.Kind() != reflect.Struct && (pt.Kind() != reflect.Pointer || pt.Elem().Kind() != reflect.Struct) {
					t.Errorf("%s: its parameters are a %v, not a struct or a pointer to one", p.Name, pt)
				}
			}
		}
		if why, ok := noCodec[p.Name]; ok {
			if p.Codec != nil {
				t.Errorf("noCodec lists %s (%s), but it has a codec: remove it", p.Name, why)
			}
			continue
		}
		if !exportable(p) || p.Package() == customopPkg || strings.HasSuffix(p.Package(), "_test") {
			continue // user-defined ops are bound without parameters
		}
		if why, ok := unreached[p.Name]; ok {
			if seen[p] {
				t.Errorf("unreached lists %s (%s), but a trace met it: remove it", p.Name, why)
			}
			continue
		}
		if !seen[p] {
			t.Errorf("%s can be exported, but no trace here met it: add one that binds it, or list it in unreached with why", p.Name)
		}
	}
	for _, list := range []map[string]string{noCodec, unreached} {
		for name := range list {
			if interp.PrimByName(name) == nil {
				t.Errorf("%s is listed, but no primitive of that name is registered", name)
			}
		}
	}
}
