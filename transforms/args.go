package transforms

import (
	"reflect"
	"strings"

	"github.com/peel-ml/peel"
)

// Functions of two to five positional arguments are transformed as
// functions of one tuple: args2 … args5 (arity_gen.go, written by
// genarity) are trees whose leaf paths read args[0].W, args[1], …, and
// whose []any in-axes spec is positional. A transform that
// differentiates some arguments (the first, or those Argnums selects)
// restricts the tuple's leaves to theirs; the others are constants of
// the differentiated function.

// argsTuple marks the positional tuples (see resolveAxes).
type argsTuple interface{ isArgs() }

var argsTupleType = reflect.TypeOf((*argsTuple)(nil)).Elem()

// argPrefixes are the leaf-path prefixes of the positional arguments
// (the tuples' peeltree tags).
var argPrefixes = [...]string{"args[0]", "args[1]", "args[2]", "args[3]", "args[4]"}

// argLeaves returns the indices of the tuple leaves that belong to the
// selected arguments.
func argLeaves(def *treeDef, sel []bool) []int {
	var idx []int
	for i, p := range def.Paths() {
		if k := argOfPath(p); k >= 0 && k < len(sel) && sel[k] {
			idx = append(idx, i)
		}
	}
	return idx
}

// argOfPath returns k for the leaf path of positional argument k
// ("args[k]", "args[k].W", "args[k][0]"), or -1.
func argOfPath(path string) int {
	for k, pre := range argPrefixes {
		if strings.HasPrefix(path, pre) && (len(path) == len(pre) || path[len(pre)] == '.' || path[len(pre)] == '[') {
			return k
		}
	}
	return -1
}

// restricted is a tuple function restricted to some of its leaves: fn
// takes those leaves (at idx in the full list) and fixes the others at
// all's values.
type restricted struct {
	def    *treeDef
	all    []*tensor
	idx    []int
	leaves []*tensor
}

func restrict(op string, tuple any, sel []bool) *restricted {
	all, def := flatten(op, tuple)
	r := &restricted{def: def, all: all, idx: argLeaves(def, sel)}
	r.leaves = make([]*tensor, len(r.idx))
	for j, i := range r.idx {
		r.leaves[j] = all[i]
	}
	return r
}

// fn returns fl (over all leaves) as a function of the restricted ones.
func (r *restricted) fn(fl func([]*tensor) []*tensor) func([]*tensor) []*tensor {
	return func(in []*tensor) []*tensor {
		full := append([]*tensor(nil), r.all...)
		for j, i := range r.idx {
			full[i] = in[j]
		}
		return fl(full)
	}
}

// expand places the restricted leaves' results into a full leaf list,
// the other positions keeping their arguments' values (zeroed later).
func (r *restricted) expand(sub []*tensor) []*tensor {
	full := append([]*tensor(nil), r.all...)
	for j, i := range r.idx {
		full[i] = sub[j]
	}
	return full
}

func (r *restricted) name(j int) string { return r.def.LeafName("the argument", r.idx[j]) }

// tupleFn returns f of a tuple as a function of its leaves.
func tupleFn[P any](def *treeDef, f func(P) *peel.Tensor) func([]*tensor) []*tensor {
	return func(in []*tensor) []*tensor { return []*tensor{f(build[P](def, in))} }
}

// gradTuple is ValueAndGrad of f over the selected arguments of tuple.
func gradTuple[P interface{ zeroed([]bool) P }](op string, f func(P) *peel.Tensor, tuple P, sel []bool, cfg *gradConfig) (*peel.Tensor, P) {
	r := restrict(op, tuple, sel)
	v, g, _ := valueAndGrad(op, r.fn(tupleFn(r.def, f)), r.leaves, r.name, cfg)
	runGradHooks(op, cfg, g, func(j int) string { return pathOr(r.def.Paths()[r.idx[j]]) })
	return v, build[P](r.def, r.expand(g)).zeroed(sel)
}

func gradOptions(op string, n int, opts []GradArgsOption) ([]bool, *gradConfig) {
	c := &gradConfig{}
	for _, o := range opts {
		o.applyGradArgs(c)
	}
	return selected(op, c.argnumsSet, c.argnums, n), c
}

// jacobianTuple is a Jacobian of f over the selected arguments of tuple.
func jacobianTuple[P interface{ zeroed([]bool) P }](op, name string, forward bool, f func(P) *peel.Tensor, tuple P, sel []bool, cfg *jacobianConfig) P {
	r := restrict(op, tuple, sel)
	jac, _ := jacobianFlat(op, name, forward, r.fn(tupleFn(r.def, f)), r.leaves, r.name, 1, cfg)
	return build[P](r.def, r.expand(jac[0])).zeroed(sel)
}

// argOf returns the selection of the one argument argnum of n (a
// negative index counts from the end), after checking that R, the type
// the caller asks for, is that argument's type.
func argOf[R any](op string, argnum int, types ...reflect.Type) ([]bool, int) {
	k := normArgnums(op, "argnum", []int{argnum}, len(types))[0]
	if want := reflect.TypeFor[R](); types[k] != want {
		treeErrorf(op, "argument %d is a %s, but the result type asked for is %s: give the argument's type, %s[%s](f, %d)", k, types[k], want, op, types[k], argnum)
	}
	sel := make([]bool, len(types))
	sel[k] = true
	return sel, k
}

// field returns field k of a positional-argument tuple.
func field[R any](t any, k int) R {
	var r R
	reflect.ValueOf(&r).Elem().Set(reflect.ValueOf(t).Field(k))
	return r
}
