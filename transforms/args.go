package transforms

import (
	"reflect"
	"strings"

	"github.com/peel-ml/peel"
)

// Functions of two and three positional arguments are transformed as
// functions of one tuple: args2 and args3 are trees whose leaf paths
// read args[0].W, args[1], …, and whose []any in-axes spec is
// positional. A transform that differentiates some arguments (the first,
// or those Argnums selects) restricts the tuple's leaves to theirs; the
// others are constants of the differentiated function.

type args2[A, B any] struct {
	Arg0 A `peeltree:"args[0]"`
	Arg1 B `peeltree:"args[1]"`
}

type args3[A, B, C any] struct {
	Arg0 A `peeltree:"args[0]"`
	Arg1 B `peeltree:"args[1]"`
	Arg2 C `peeltree:"args[2]"`
}

type args4[A, B, C, D any] struct {
	Arg0 A `peeltree:"args[0]"`
	Arg1 B `peeltree:"args[1]"`
	Arg2 C `peeltree:"args[2]"`
	Arg3 D `peeltree:"args[3]"`
}

type args5[A, B, C, D, E any] struct {
	Arg0 A `peeltree:"args[0]"`
	Arg1 B `peeltree:"args[1]"`
	Arg2 C `peeltree:"args[2]"`
	Arg3 D `peeltree:"args[3]"`
	Arg4 E `peeltree:"args[4]"`
}

func (args2[A, B]) isArgs()          {}
func (args3[A, B, C]) isArgs()       {}
func (args4[A, B, C, D]) isArgs()    {}
func (args5[A, B, C, D, E]) isArgs() {}

// argsTuple marks the positional tuples (see resolveAxes).
type argsTuple interface{ isArgs() }

var argsTupleType = reflect.TypeOf((*argsTuple)(nil)).Elem()

// zeroed returns t with the arguments not in sel set to their zero value.
//
//lint:ignore U1000 called through gradTuple's and jacobianTuple's type constraint, which staticcheck does not follow
func (t args2[A, B]) zeroed(sel []bool) args2[A, B] {
	if !sel[0] {
		t.Arg0 = *new(A)
	}
	if !sel[1] {
		t.Arg1 = *new(B)
	}
	return t
}

//lint:ignore U1000 called through gradTuple's and jacobianTuple's type constraint
func (t args3[A, B, C]) zeroed(sel []bool) args3[A, B, C] {
	if !sel[0] {
		t.Arg0 = *new(A)
	}
	if !sel[1] {
		t.Arg1 = *new(B)
	}
	if !sel[2] {
		t.Arg2 = *new(C)
	}
	return t
}

//lint:ignore U1000 called through gradTuple's type constraint
func (t args4[A, B, C, D]) zeroed(sel []bool) args4[A, B, C, D] {
	return zeroedArgs(t, sel)
}

//lint:ignore U1000 called through gradTuple's type constraint
func (t args5[A, B, C, D, E]) zeroed(sel []bool) args5[A, B, C, D, E] {
	return zeroedArgs(t, sel)
}

// zeroedArgs sets the fields of tuple t whose arguments sel does not
// select to their zero values.
func zeroedArgs[T any](t T, sel []bool) T {
	v := reflect.ValueOf(&t).Elem()
	for i, ok := range sel {
		if !ok {
			f := v.Field(i)
			f.SetZero()
		}
	}
	return t
}

var (
	first2 = []bool{true, false}
	first3 = []bool{true, false, false}
	first4 = []bool{true, false, false, false}
	first5 = []bool{true, false, false, false, false}
)

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

// Grad2 is Grad for a function of two arguments (the 2 counts arguments,
// as in iter.Seq2; a second derivative is Grad(Grad(f))): it
// differentiates with respect to the first argument, JAX's default
// argnums=0, and holds the second constant; the second may hold integer
// tensors such as labels. For other choices use GradArgs2. It panics as
// Grad does; leaf paths in its errors read args[0].W, args[1].
//
//	perSample := Vmap3(Grad3(loss), InAxes(NoAxis, 0, 0))(params, x, y)
func Grad2[A, B any](f func(A, B) *peel.Tensor, opts ...GradOption) func(A, B) A {
	vg := valueAndGrad2("transforms.Grad2", f, opts)
	return func(a A, b B) A {
		_, g := vg(a, b)
		return g
	}
}

// Grad3 is Grad2 for a function of three arguments.
func Grad3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...GradOption) func(A, B, C) A {
	vg := valueAndGrad3("transforms.Grad3", f, opts)
	return func(a A, b B, c C) A {
		_, g := vg(a, b, c)
		return g
	}
}

// ValueAndGrad2 is Grad2 that also returns f's value.
func ValueAndGrad2[A, B any](f func(A, B) *peel.Tensor, opts ...GradOption) func(A, B) (*peel.Tensor, A) {
	return valueAndGrad2("transforms.ValueAndGrad2", f, opts)
}

func valueAndGrad2[A, B any](op string, f func(A, B) *peel.Tensor, opts []GradOption) func(A, B) (*peel.Tensor, A) {
	cfg := gradConfigOf(opts)
	tf := func(t args2[A, B]) *peel.Tensor { return f(t.Arg0, t.Arg1) }
	return func(a A, b B) (*peel.Tensor, A) {
		v, g := gradTuple(op, tf, args2[A, B]{a, b}, first2, cfg)
		return v, g.Arg0
	}
}

// ValueAndGrad3 is Grad3 that also returns f's value.
func ValueAndGrad3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...GradOption) func(A, B, C) (*peel.Tensor, A) {
	return valueAndGrad3("transforms.ValueAndGrad3", f, opts)
}

func valueAndGrad3[A, B, C any](op string, f func(A, B, C) *peel.Tensor, opts []GradOption) func(A, B, C) (*peel.Tensor, A) {
	cfg := gradConfigOf(opts)
	tf := func(t args3[A, B, C]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2) }
	return func(a A, b B, c C) (*peel.Tensor, A) {
		v, g := gradTuple(op, tf, args3[A, B, C]{a, b, c}, first3, cfg)
		return v, g.Arg0
	}
}

// GradAux2 is GradAux for a function of two arguments, differentiated
// with respect to the first (see Grad2).
func GradAux2[A, B, X any](f func(A, B) (*peel.Tensor, X), opts ...GradOption) func(A, B) (A, X) {
	return func(a A, b B) (A, X) {
		return GradAux(func(a A) (*peel.Tensor, X) { return f(a, b) }, opts...)(a)
	}
}

// GradAux3 is GradAux2 for a function of three arguments.
func GradAux3[A, B, C, X any](f func(A, B, C) (*peel.Tensor, X), opts ...GradOption) func(A, B, C) (A, X) {
	return func(a A, b B, c C) (A, X) {
		return GradAux(func(a A) (*peel.Tensor, X) { return f(a, b, c) }, opts...)(a)
	}
}

func gradOptions(op string, n int, opts []GradArgsOption) ([]bool, *gradConfig) {
	c := &gradConfig{}
	for _, o := range opts {
		o.applyGradArgs(c)
	}
	return selected(op, c.argnumsSet, c.argnums, n), c
}

// GradArgs2 differentiates a function of two arguments with respect to
// the arguments Argnums selects (JAX's argnums=(0, 1); the default is
// both; a negative index counts from the end) and returns one gradient
// per argument; an argument not selected is held constant and its
// gradient is its type's zero value. It panics as Grad does, and for an
// invalid Argnums.
//
//	gw, gb := GradArgs2(loss)(w, b)
func GradArgs2[A, B any](f func(A, B) *peel.Tensor, opts ...GradArgsOption) func(A, B) (A, B) {
	vg := valueAndGradArgs2("transforms.GradArgs2", f, opts)
	return func(a A, b B) (A, B) {
		_, ga, gb := vg(a, b)
		return ga, gb
	}
}

// GradArgs3 is GradArgs2 for a function of three arguments.
func GradArgs3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...GradArgsOption) func(A, B, C) (A, B, C) {
	vg := valueAndGradArgs3("transforms.GradArgs3", f, opts)
	return func(a A, b B, c C) (A, B, C) {
		_, ga, gb, gc := vg(a, b, c)
		return ga, gb, gc
	}
}

// ValueAndGradArgs2 is GradArgs2 that also returns f's value (JAX's
// value_and_grad(f, argnums=…)): the value, then one gradient per
// argument, the type's zero value for the arguments Argnums does not
// select. It panics as GradArgs2 does.
//
//	loss, gw, gb := ValueAndGradArgs2(lossFn, Argnums(0, -1))(w, b)
func ValueAndGradArgs2[A, B any](f func(A, B) *peel.Tensor, opts ...GradArgsOption) func(A, B) (*peel.Tensor, A, B) {
	return valueAndGradArgs2("transforms.ValueAndGradArgs2", f, opts)
}

func valueAndGradArgs2[A, B any](op string, f func(A, B) *peel.Tensor, opts []GradArgsOption) func(A, B) (*peel.Tensor, A, B) {
	sel, cfg := gradOptions(op, 2, opts)
	tf := func(t args2[A, B]) *peel.Tensor { return f(t.Arg0, t.Arg1) }
	return func(a A, b B) (*peel.Tensor, A, B) {
		v, g := gradTuple(op, tf, args2[A, B]{a, b}, sel, cfg)
		return v, g.Arg0, g.Arg1
	}
}

// ValueAndGradArgs3 is ValueAndGradArgs2 for a function of three
// arguments.
func ValueAndGradArgs3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...GradArgsOption) func(A, B, C) (*peel.Tensor, A, B, C) {
	return valueAndGradArgs3("transforms.ValueAndGradArgs3", f, opts)
}

func valueAndGradArgs3[A, B, C any](op string, f func(A, B, C) *peel.Tensor, opts []GradArgsOption) func(A, B, C) (*peel.Tensor, A, B, C) {
	sel, cfg := gradOptions(op, 3, opts)
	tf := func(t args3[A, B, C]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2) }
	return func(a A, b B, c C) (*peel.Tensor, A, B, C) {
		v, g := gradTuple(op, tf, args3[A, B, C]{a, b, c}, sel, cfg)
		return v, g.Arg0, g.Arg1, g.Arg2
	}
}

// Vmap2 is Vmap for a function of two arguments; InAxes takes one spec
// per argument (or one int or NoAxis for both).
//
//	predict := Vmap2(model, InAxes(NoAxis, 0)) // shared params, batched x
func Vmap2[A, B, R any](f func(A, B) R, opts ...VmapOption) func(A, B) R {
	g := vmapTree("transforms.Vmap2", 2, func(t args2[A, B]) R { return f(t.Arg0, t.Arg1) }, vmapOptions(opts))
	return func(a A, b B) R { return g(args2[A, B]{a, b}) }
}

// Vmap3 is Vmap for a function of three arguments.
func Vmap3[A, B, C, R any](f func(A, B, C) R, opts ...VmapOption) func(A, B, C) R {
	g := vmapTree("transforms.Vmap3", 3, func(t args3[A, B, C]) R { return f(t.Arg0, t.Arg1, t.Arg2) }, vmapOptions(opts))
	return func(a A, b B, c C) R { return g(args3[A, B, C]{a, b, c}) }
}

// VJP2 is VJP for a function of two arguments: the pullback returns the
// cotangent of each (zeros for their non-float leaves).
func VJP2[A, B, R any](f func(A, B) R, a A, b B) (R, func(R) (A, B)) {
	out, pb := vjpAs("transforms.VJP2", func(t args2[A, B]) R { return f(t.Arg0, t.Arg1) }, args2[A, B]{a, b})
	return out, func(ct R) (A, B) {
		g := pb(ct)
		return g.Arg0, g.Arg1
	}
}

// VJP3 is VJP2 for a function of three arguments.
func VJP3[A, B, C, R any](f func(A, B, C) R, a A, b B, c C) (R, func(R) (A, B, C)) {
	out, pb := vjpAs("transforms.VJP3", func(t args3[A, B, C]) R { return f(t.Arg0, t.Arg1, t.Arg2) }, args3[A, B, C]{a, b, c})
	return out, func(ct R) (A, B, C) {
		g := pb(ct)
		return g.Arg0, g.Arg1, g.Arg2
	}
}

// JVP2 is JVP for a function of two arguments, with a tangent for each;
// a tangent that is its type's zero value (a nil tensor, a zero struct)
// means a zero tangent for that argument, so JVP2(f, x, y, tx, nil)
// differentiates along x only.
func JVP2[A, B, R any](f func(A, B) R, a A, b B, ta A, tb B) (R, R) {
	return jvpTuple("transforms.JVP2", func(t args2[A, B]) R { return f(t.Arg0, t.Arg1) },
		args2[A, B]{a, b}, []any{a, b}, []any{ta, tb})
}

// JVP3 is JVP2 for a function of three arguments.
func JVP3[A, B, C, R any](f func(A, B, C) R, a A, b B, c C, ta A, tb B, tc C) (R, R) {
	return jvpTuple("transforms.JVP3", func(t args3[A, B, C]) R { return f(t.Arg0, t.Arg1, t.Arg2) },
		args3[A, B, C]{a, b, c}, []any{a, b, c}, []any{ta, tb, tc})
}

// jacobianTuple is a Jacobian of f over the selected arguments of tuple.
func jacobianTuple[P interface{ zeroed([]bool) P }](op, name string, forward bool, f func(P) *peel.Tensor, tuple P, sel []bool, cfg *jacobianConfig) P {
	r := restrict(op, tuple, sel)
	jac, _ := jacobianFlat(op, name, forward, r.fn(tupleFn(r.def, f)), r.leaves, r.name, 1, cfg)
	return build[P](r.def, r.expand(jac[0])).zeroed(sel)
}

// Jacrev2 is Jacrev for a function of two arguments, with respect to
// the first (see Grad2); the result has the first argument's structure.
func Jacrev2[A, B any](f func(A, B) *peel.Tensor, opts ...JacobianOption) func(A, B) A {
	return jacobian2("transforms.Jacrev2", "jacrev", false, f, opts)
}

// Jacfwd2 is Jacrev2 in forward mode.
func Jacfwd2[A, B any](f func(A, B) *peel.Tensor, opts ...JacobianOption) func(A, B) A {
	return jacobian2("transforms.Jacfwd2", "jacfwd", true, f, opts)
}

// Jacrev3 is Jacrev2 for a function of three arguments.
func Jacrev3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...JacobianOption) func(A, B, C) A {
	return jacobian3("transforms.Jacrev3", "jacrev", false, f, opts)
}

// Jacfwd3 is Jacrev3 in forward mode.
func Jacfwd3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...JacobianOption) func(A, B, C) A {
	return jacobian3("transforms.Jacfwd3", "jacfwd", true, f, opts)
}

func jacobian2[A, B any](op, name string, forward bool, f func(A, B) *peel.Tensor, opts []JacobianOption) func(A, B) A {
	cfg := jacobianOptions(opts)
	tf := func(t args2[A, B]) *peel.Tensor { return f(t.Arg0, t.Arg1) }
	return func(a A, b B) A {
		cfg.noArgnums(op)
		return jacobianTuple(op, name, forward, tf, args2[A, B]{a, b}, first2, cfg).Arg0
	}
}

func jacobian3[A, B, C any](op, name string, forward bool, f func(A, B, C) *peel.Tensor, opts []JacobianOption) func(A, B, C) A {
	cfg := jacobianOptions(opts)
	tf := func(t args3[A, B, C]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2) }
	return func(a A, b B, c C) A {
		cfg.noArgnums(op)
		return jacobianTuple(op, name, forward, tf, args3[A, B, C]{a, b, c}, first3, cfg).Arg0
	}
}

// JacrevArgs2 is Jacrev for a function of two arguments with respect to
// the arguments Argnums selects (JAX's jacrev(f, argnums=(0, 1)); the
// default is both): one Jacobian per argument, each with its argument's
// structure and leaves of shape f.shape + leaf.shape; an argument not
// selected gets its type's zero value.
//
//	jw, jb := JacrevArgs2(predict)(w, b)
func JacrevArgs2[A, B any](f func(A, B) *peel.Tensor, opts ...JacobianOption) func(A, B) (A, B) {
	return jacobianArgs2("transforms.JacrevArgs2", "jacrev", false, f, opts)
}

// JacfwdArgs2 is JacrevArgs2 in forward mode.
func JacfwdArgs2[A, B any](f func(A, B) *peel.Tensor, opts ...JacobianOption) func(A, B) (A, B) {
	return jacobianArgs2("transforms.JacfwdArgs2", "jacfwd", true, f, opts)
}

// JacrevArgs3 is JacrevArgs2 for a function of three arguments.
func JacrevArgs3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...JacobianOption) func(A, B, C) (A, B, C) {
	return jacobianArgs3("transforms.JacrevArgs3", "jacrev", false, f, opts)
}

// JacfwdArgs3 is JacrevArgs3 in forward mode.
func JacfwdArgs3[A, B, C any](f func(A, B, C) *peel.Tensor, opts ...JacobianOption) func(A, B, C) (A, B, C) {
	return jacobianArgs3("transforms.JacfwdArgs3", "jacfwd", true, f, opts)
}

func jacobianArgs2[A, B any](op, name string, forward bool, f func(A, B) *peel.Tensor, opts []JacobianOption) func(A, B) (A, B) {
	cfg := jacobianOptions(opts)
	sel := selected(op, cfg.argnumsSet, cfg.argnums, 2)
	tf := func(t args2[A, B]) *peel.Tensor { return f(t.Arg0, t.Arg1) }
	return func(a A, b B) (A, B) {
		j := jacobianTuple(op, name, forward, tf, args2[A, B]{a, b}, sel, cfg)
		return j.Arg0, j.Arg1
	}
}

func jacobianArgs3[A, B, C any](op, name string, forward bool, f func(A, B, C) *peel.Tensor, opts []JacobianOption) func(A, B, C) (A, B, C) {
	cfg := jacobianOptions(opts)
	sel := selected(op, cfg.argnumsSet, cfg.argnums, 3)
	tf := func(t args3[A, B, C]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2) }
	return func(a A, b B, c C) (A, B, C) {
		j := jacobianTuple(op, name, forward, tf, args3[A, B, C]{a, b, c}, sel, cfg)
		return j.Arg0, j.Arg1, j.Arg2
	}
}
