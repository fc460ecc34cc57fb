package transforms

import (
	"reflect"

	"github.com/peel-ml/peel"
)

// Functions of four and five positional arguments (params, state, x, y,
// key) and the one-argument forms of the gradient and the Jacobians
// (Grad2At, Jacrev2At, …) that differentiate another argument than the
// first and return one value, so that they compose:
// Jacfwd2At[*peel.Tensor](Jacrev2At[*peel.Tensor](u, 1), 1) is the
// Hessian of u(params, x) in x, JAX's jacfwd(jacrev(u, argnums=1),
// argnums=1).

// Vmap4 is Vmap for a function of four arguments; InAxes takes one spec
// per argument (or one int or NoAxis for all).
func Vmap4[A, B, C, D, R any](f func(A, B, C, D) R, opts ...VmapOption) func(A, B, C, D) R {
	g := vmapTree("transforms.Vmap4", 4, func(t args4[A, B, C, D]) R { return f(t.Arg0, t.Arg1, t.Arg2, t.Arg3) }, vmapOptions(opts))
	return func(a A, b B, c C, d D) R { return g(args4[A, B, C, D]{a, b, c, d}) }
}

// Vmap5 is Vmap4 for a function of five arguments.
func Vmap5[A, B, C, D, E, R any](f func(A, B, C, D, E) R, opts ...VmapOption) func(A, B, C, D, E) R {
	g := vmapTree("transforms.Vmap5", 5, func(t args5[A, B, C, D, E]) R { return f(t.Arg0, t.Arg1, t.Arg2, t.Arg3, t.Arg4) }, vmapOptions(opts))
	return func(a A, b B, c C, d D, e E) R { return g(args5[A, B, C, D, E]{a, b, c, d, e}) }
}

// Grad4 is Grad2 for a function of four arguments: the gradient with
// respect to the first, the others held constant.
func Grad4[A, B, C, D any](f func(A, B, C, D) *peel.Tensor, opts ...GradOption) func(A, B, C, D) A {
	vg := valueAndGrad4("transforms.Grad4", f, opts)
	return func(a A, b B, c C, d D) A {
		_, g := vg(a, b, c, d)
		return g
	}
}

// Grad5 is Grad2 for a function of five arguments.
func Grad5[A, B, C, D, E any](f func(A, B, C, D, E) *peel.Tensor, opts ...GradOption) func(A, B, C, D, E) A {
	vg := valueAndGrad5("transforms.Grad5", f, opts)
	return func(a A, b B, c C, d D, e E) A {
		_, g := vg(a, b, c, d, e)
		return g
	}
}

// ValueAndGrad4 is Grad4 that also returns f's value.
func ValueAndGrad4[A, B, C, D any](f func(A, B, C, D) *peel.Tensor, opts ...GradOption) func(A, B, C, D) (*peel.Tensor, A) {
	return valueAndGrad4("transforms.ValueAndGrad4", f, opts)
}

func valueAndGrad4[A, B, C, D any](op string, f func(A, B, C, D) *peel.Tensor, opts []GradOption) func(A, B, C, D) (*peel.Tensor, A) {
	cfg := gradConfigOf(opts)
	tf := func(t args4[A, B, C, D]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2, t.Arg3) }
	return func(a A, b B, c C, d D) (*peel.Tensor, A) {
		v, g := gradTuple(op, tf, args4[A, B, C, D]{a, b, c, d}, first4, cfg)
		return v, g.Arg0
	}
}

// ValueAndGrad5 is Grad5 that also returns f's value.
func ValueAndGrad5[A, B, C, D, E any](f func(A, B, C, D, E) *peel.Tensor, opts ...GradOption) func(A, B, C, D, E) (*peel.Tensor, A) {
	return valueAndGrad5("transforms.ValueAndGrad5", f, opts)
}

func valueAndGrad5[A, B, C, D, E any](op string, f func(A, B, C, D, E) *peel.Tensor, opts []GradOption) func(A, B, C, D, E) (*peel.Tensor, A) {
	cfg := gradConfigOf(opts)
	tf := func(t args5[A, B, C, D, E]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2, t.Arg3, t.Arg4) }
	return func(a A, b B, c C, d D, e E) (*peel.Tensor, A) {
		v, g := gradTuple(op, tf, args5[A, B, C, D, E]{a, b, c, d, e}, first5, cfg)
		return v, g.Arg0
	}
}

// GradAux4 is GradAux2 for a function of four arguments.
func GradAux4[A, B, C, D, X any](f func(A, B, C, D) (*peel.Tensor, X), opts ...GradOption) func(A, B, C, D) (A, X) {
	return func(a A, b B, c C, d D) (A, X) {
		return GradAux(func(a A) (*peel.Tensor, X) { return f(a, b, c, d) }, opts...)(a)
	}
}

// GradAux5 is GradAux2 for a function of five arguments.
func GradAux5[A, B, C, D, E, X any](f func(A, B, C, D, E) (*peel.Tensor, X), opts ...GradOption) func(A, B, C, D, E) (A, X) {
	return func(a A, b B, c C, d D, e E) (A, X) {
		return GradAux(func(a A) (*peel.Tensor, X) { return f(a, b, c, d, e) }, opts...)(a)
	}
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

// Grad2At is Grad2 with respect to argument argnum (0 or 1; -1 is the
// last) instead of the first, JAX's grad(f, argnums=argnum): R, given
// explicitly, is that argument's type, and the result is its gradient
// alone, so Grad2At forms compose. It panics with *peel.Error when
// argnum is out of range or R is not its type, and as Grad does.
//
//	dx := Grad2At[*peel.Tensor](u, 1)(params, x)
func Grad2At[R, A, B any](f func(A, B) *peel.Tensor, argnum int, opts ...GradOption) func(A, B) R {
	const op = "transforms.Grad2At"
	sel, k := argOf[R](op, argnum, reflect.TypeFor[A](), reflect.TypeFor[B]())
	cfg := gradConfigOf(opts)
	tf := func(t args2[A, B]) *peel.Tensor { return f(t.Arg0, t.Arg1) }
	return func(a A, b B) R {
		_, g := gradTuple(op, tf, args2[A, B]{a, b}, sel, cfg)
		return field[R](g, k)
	}
}

// Grad3At is Grad2At for a function of three arguments.
func Grad3At[R, A, B, C any](f func(A, B, C) *peel.Tensor, argnum int, opts ...GradOption) func(A, B, C) R {
	const op = "transforms.Grad3At"
	sel, k := argOf[R](op, argnum, reflect.TypeFor[A](), reflect.TypeFor[B](), reflect.TypeFor[C]())
	cfg := gradConfigOf(opts)
	tf := func(t args3[A, B, C]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2) }
	return func(a A, b B, c C) R {
		_, g := gradTuple(op, tf, args3[A, B, C]{a, b, c}, sel, cfg)
		return field[R](g, k)
	}
}

// field returns field k of a positional-argument tuple.
func field[R any](t any, k int) R {
	var r R
	reflect.ValueOf(&r).Elem().Set(reflect.ValueOf(t).Field(k))
	return r
}

// Jacrev2At is Jacrev2 with respect to argument argnum (0 or 1; -1 is
// the last), JAX's jacrev(f, argnums=argnum): R, given explicitly, is
// that argument's type, and the result is its Jacobian alone (its
// structure, leaves of shape f.shape + leaf.shape), so the At forms
// compose: the Hessian of u(params, x) in x is
//
//	Jacfwd2At[*peel.Tensor](Jacrev2At[*peel.Tensor](u, 1), 1)(params, x)
//
// It panics with *peel.Error when argnum is out of range or R is not
// its type, and as Jacrev does.
func Jacrev2At[R, A, B any](f func(A, B) *peel.Tensor, argnum int, opts ...JacobianOption) func(A, B) R {
	return jacobian2At[R]("transforms.Jacrev2At", "jacrev", false, f, argnum, opts)
}

// Jacfwd2At is Jacrev2At in forward mode.
func Jacfwd2At[R, A, B any](f func(A, B) *peel.Tensor, argnum int, opts ...JacobianOption) func(A, B) R {
	return jacobian2At[R]("transforms.Jacfwd2At", "jacfwd", true, f, argnum, opts)
}

// Jacrev3At is Jacrev2At for a function of three arguments:
// jacrev(predict, argnums=2)(w, b, x) is Jacrev3At[*peel.Tensor](predict,
// 2)(w, b, x).
func Jacrev3At[R, A, B, C any](f func(A, B, C) *peel.Tensor, argnum int, opts ...JacobianOption) func(A, B, C) R {
	return jacobian3At[R]("transforms.Jacrev3At", "jacrev", false, f, argnum, opts)
}

// Jacfwd3At is Jacrev3At in forward mode.
func Jacfwd3At[R, A, B, C any](f func(A, B, C) *peel.Tensor, argnum int, opts ...JacobianOption) func(A, B, C) R {
	return jacobian3At[R]("transforms.Jacfwd3At", "jacfwd", true, f, argnum, opts)
}

func jacobian2At[R, A, B any](op, name string, forward bool, f func(A, B) *peel.Tensor, argnum int, opts []JacobianOption) func(A, B) R {
	sel, k := argOf[R](op, argnum, reflect.TypeFor[A](), reflect.TypeFor[B]())
	cfg := jacobianOptions(opts)
	cfg.noArgnums(op)
	tf := func(t args2[A, B]) *peel.Tensor { return f(t.Arg0, t.Arg1) }
	return func(a A, b B) R {
		return field[R](jacobianTuple(op, name, forward, tf, args2[A, B]{a, b}, sel, cfg), k)
	}
}

func jacobian3At[R, A, B, C any](op, name string, forward bool, f func(A, B, C) *peel.Tensor, argnum int, opts []JacobianOption) func(A, B, C) R {
	sel, k := argOf[R](op, argnum, reflect.TypeFor[A](), reflect.TypeFor[B](), reflect.TypeFor[C]())
	cfg := jacobianOptions(opts)
	cfg.noArgnums(op)
	tf := func(t args3[A, B, C]) *peel.Tensor { return f(t.Arg0, t.Arg1, t.Arg2) }
	return func(a A, b B, c C) R {
		return field[R](jacobianTuple(op, name, forward, tf, args3[A, B, C]{a, b, c}, sel, cfg), k)
	}
}

// Hessian2At is the Hessian of a function of two arguments with respect
// to argument argnum, which must be a tensor x, JAX's hessian(f,
// argnums=argnum): the result has shape f.shape + x.shape + x.shape
// (x.shape + x.shape for a scalar f). It is
// Jacfwd2At[*peel.Tensor](Jacrev2At[*peel.Tensor](f, argnum), argnum)
// and panics as they do.
func Hessian2At[A, B any](f func(A, B) *peel.Tensor, argnum int, opts ...JacobianOption) func(A, B) *peel.Tensor {
	return Jacfwd2At[*peel.Tensor](Jacrev2At[*peel.Tensor](f, argnum, opts...), argnum, opts...)
}

// Hessian3At is Hessian2At for a function of three arguments:
// hessian(predict, argnums=2)(w, b, x) is Hessian3At(predict, 2)(w, b, x).
func Hessian3At[A, B, C any](f func(A, B, C) *peel.Tensor, argnum int, opts ...JacobianOption) func(A, B, C) *peel.Tensor {
	return Jacfwd3At[*peel.Tensor](Jacrev3At[*peel.Tensor](f, argnum, opts...), argnum, opts...)
}
