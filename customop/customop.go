package customop

import (
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// Aval is a tensor's abstract value: its shape and dtype, what a shape
// rule (WithShapeRule) receives and returns.
type Aval = interp.Aval

// NotMapped is the batch dimension of an operand a batching rule (see
// WithBatchRule) receives unbatched.
const NotMapped = batching.NotMapped

// Op is an operation defined by the user with Define: one primitive
// whose meaning is a composite of peel operations, optionally with fused
// kernels and its own rules. Every transform handles it (see Define).
// An Op is safe for concurrent use.
type Op struct {
	name  string
	arity int
	prim  *interp.Prim
	// impl is the decomposition transforms use (Prim.Impl without the
	// wrapper).
	impl  func(xs ...*peel.Tensor) *peel.Tensor
	shape func(in []Aval) Aval
	// Derived result types, by operand types: the last one looked up,
	// and the maxShapes most recently used.
	last  atomic.Pointer[shapeEntry]
	cache *lru.Cache[string, Aval]
}

// maxShapes bounds each op's cache of derived result types: 1024
// operand signatures (the least recently used are derived again).
const maxShapes = 1024

type shapeEntry struct {
	in  []Aval
	out Aval
}

// DecompositionTraits describe what a decomposition of an Op needs, so
// that each interpreter that decomposes the op can pick one it handles.
// The zero value describes a functional decomposition that eager
// evaluation does not prefer.
type DecompositionTraits uint8

const (
	// Mutates marks a decomposition that writes in place (into tensors
	// it creates, such as Zeros then CopyInto a slice). Vmap, autodiff
	// and functionalize prefer a functional decomposition; when every
	// decomposition mutates, functionalize decomposes the op (answering
	// the writes out of place) and vmap reports an error naming it.
	Mutates DecompositionTraits = 1 << iota
	// Eager marks the decomposition eager evaluation runs when the
	// tensors' backend has no fused kernel for the op (for example a
	// mutating one that allocates less): the first so marked, the
	// composite before those WithDecomposition added. When none is,
	// eager evaluation runs the decomposition the transforms use: the
	// composite, or, when the composite Mutates, the first functional
	// decomposition added (the composite itself if there is none).
	Eager
)

// Option configures Define. Options are made by WithKernel,
// WithShapeRule, WithJVP, WithVJP, WithBatchRule, Elementwise,
// WithDecomposition and CompositeTraits; they are applied in order (a
// later option of the same kind replaces an earlier one, except
// WithKernel and WithDecomposition, which add).
type Option interface {
	apply(*config)
}

// option is an Option given by a function.
type option func(*config)

func (f option) apply(c *config) { f(c) }

type config struct {
	kernels  []opKernel
	shape    func(in []Aval) Aval
	jvp      func(primals []*peel.Tensor, out *peel.Tensor, tangents []*peel.Tensor) *peel.Tensor
	vjp      func(primals []*peel.Tensor, out, ct *peel.Tensor) []*peel.Tensor
	batch    func(size int, xs []*peel.Tensor, dims []int) (*peel.Tensor, int)
	decomps  []decomposition
	traits   DecompositionTraits
	elemwise bool
	// bad is the first invalid option argument, reported by Define.
	bad string
}

// refuse records that an option was given an invalid argument.
func (c *config) refuse(msg string) {
	if c.bad == "" {
		c.bad = msg
	}
}

type opKernel struct {
	b backend.Backend
	k backend.Kernel
}

type decomposition struct {
	f      func(xs ...*peel.Tensor) *peel.Tensor
	traits DecompositionTraits
}

// WithKernel registers k as the op's fused kernel on backend b (which
// must implement backend.KernelRegistry, as backend/cpu does; a CUDA
// backend registers its kernels the same way). Eager evaluation of the
// op on b's tensors runs k instead of a decomposition. The kernel must
// compute what the composite computes, for every dtype the composite
// accepts; its params argument is nil. See cpu.RegisterKernel for the
// layout a CPU kernel receives. Define panics with *peel.Error when b or k
// is nil or b accepts no kernels.
func WithKernel(b backend.Backend, k backend.Kernel) Option {
	return option(func(c *config) {
		switch {
		case isNil(b):
			c.refuse("WithKernel: nil backend")
		case k == nil:
			c.refuse("WithKernel: nil kernel for backend " + b.Name())
		}
		c.kernels = append(c.kernels, opKernel{b, k})
	})
}

// isNil reports whether b is nil or holds a nil pointer.
func isNil(b backend.Backend) bool {
	if b == nil {
		return true
	}
	v := reflect.ValueOf(b)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// WithShapeRule gives the op's result type as a function of its operands'
// types; it must panic with *peel.Error on operands the op does not accept.
// Without it the type is derived by staging the composite, once per
// distinct operand types.
func WithShapeRule(rule func(in []Aval) Aval) Option {
	return option(func(c *config) {
		if rule == nil {
			c.refuse("WithShapeRule: nil rule")
		}
		c.shape = rule
	})
}

// WithJVP gives the op a forward-mode rule: the tangent of the result
// from the operands, the result (computed by the op itself) and the
// operands' tangents (zeros for a float operand with a zero tangent, nil
// for an integer or bool operand). The rule must be linear in the
// tangents (reverse mode transposes it) and written with peel
// operations, so it can itself be differentiated. Without a JVP or a VJP
// rule the derivative is derived from the composite.
func WithJVP(rule func(primals []*peel.Tensor, out *peel.Tensor, tangents []*peel.Tensor) *peel.Tensor) Option {
	return option(func(c *config) {
		if rule == nil {
			c.refuse("WithJVP: nil rule")
		}
		c.jvp = rule
	})
}

// WithVJP gives the op a reverse-mode rule: one cotangent per operand
// (nil for zero) from the operands, the result and the result's
// cotangent. It is used by reverse mode (Grad, VJP, Jacrev) even when a
// JVP rule is also given; forward mode uses the JVP rule, or the
// composite's derivative. The rule is written with peel operations, so
// reverse mode can be nested.
func WithVJP(rule func(primals []*peel.Tensor, out, ct *peel.Tensor) []*peel.Tensor) Option {
	return option(func(c *config) {
		if rule == nil {
			c.refuse("WithVJP: nil rule")
		}
		c.vjp = rule
	})
}

// WithBatchRule gives the op a vmap rule: given the batch size, the
// operands' physical values (with a batch dimension at dims[i], or
// NotMapped) it returns the batched result and its batch dimension.
// Without it vmap decomposes the op.
func WithBatchRule(rule func(size int, xs []*peel.Tensor, dims []int) (out *peel.Tensor, dim int)) Option {
	return option(func(c *config) {
		if rule == nil {
			c.refuse("WithBatchRule: nil rule")
		}
		c.batch = rule
	})
}

// Elementwise declares that the op maps operands of one shape
// elementwise (or, more generally, that it commutes with a batch
// dimension added to every operand at the same position): vmap then
// binds the op itself on the batched operands, aligned at one batch
// dimension, so its fused kernel runs on the whole batch. It is a
// batching rule (WithBatchRule replaces it).
func Elementwise() Option {
	return option(func(c *config) { c.elemwise = true })
}

// WithDecomposition adds an alternative decomposition, which must compute
// what the composite computes. traits say what it needs (Mutates) and
// who should prefer it (Eager); see DecompositionTraits.
func WithDecomposition(f func(xs ...*peel.Tensor) *peel.Tensor, traits DecompositionTraits) Option {
	return option(func(c *config) {
		if f == nil {
			c.refuse("WithDecomposition: nil decomposition")
		}
		c.decomps = append(c.decomps, decomposition{f, traits})
	})
}

// CompositeTraits sets the traits of the composite itself: Mutates when
// it writes in place, Eager when eager evaluation should run it rather
// than a decomposition added with WithDecomposition. Without it the
// composite's traits are zero: functional, with no preference.
func CompositeTraits(t DecompositionTraits) Option {
	return option(func(c *config) { c.traits = t })
}

// Define defines an operation named name (such as "mylib.gelu") of
// arity operands. composite is its meaning: an ordinary function of peel
// operations. The op is one primitive to every interpreter:
//
//   - eager evaluation runs the fused kernel of the operands' backend
//     (WithKernel) if there is one, else a decomposition (Eager);
//   - autodiff with no rule computes the primal with the op itself (so
//     the fused kernel runs, and none of the composite's intermediates
//     are computed or saved) and derives the tangent from the composite:
//     reverse mode recomputes it from the saved operands in the backward
//     pass. Derivatives of every order work. WithJVP and WithVJP rules
//     replace the derivation;
//   - vmap uses the WithBatchRule rule, else decomposes the op;
//   - functionalize passes the op through, or decomposes it when all its
//     decompositions mutate;
//   - staging (transforms.MakeGraph) records it as one equation, or
//     decomposes it when asked to.
//
// An error raised by a primitive while the op is decomposed (under any
// transform, also in a backward pass) names the op ("while decomposing
// mylib.gelu"). Define panics with *peel.Error if the name is empty or
// taken, arity is negative, composite or an option is nil, an option was
// given a nil function, backend or kernel, or a kernel cannot be
// registered; the name stays free then.
func Define(name string, arity int, composite func(xs ...*peel.Tensor) *peel.Tensor, opts ...Option) *Op {
	const op = "customop.Define"
	if name == "" || composite == nil || arity < 0 {
		errorf(op, "an op needs a name, an arity ≥ 0 and a composite (got %q, %d, composite set: %v)", name, arity, composite != nil)
	}
	if interp.PrimByName(name) != nil {
		errorf(op, "a primitive named %q is already defined", name)
	}
	c := &config{}
	for i, o := range opts {
		if o == nil {
			errorf(op, "%s: option %d is nil", name, i)
		}
		o.apply(c)
	}
	if c.bad != "" {
		errorf(op, "%s: %s", name, c.bad)
	}
	regs := make([]backend.KernelRegistry, len(c.kernels))
	for i, k := range c.kernels {
		reg, ok := k.b.(backend.KernelRegistry)
		if !ok {
			errorf(op, "%s: WithKernel: backend %s does not accept kernels for new ops", name, k.b.Name())
		}
		regs[i] = reg
	}
	o := &Op{name: name, arity: arity, shape: c.shape, cache: lru.New[string, Aval](maxShapes)}
	all := append([]decomposition{{composite, c.traits}}, c.decomps...)
	// The decomposition transforms use: the first functional one.
	o.impl = composite
	mutates := c.traits&Mutates != 0
	if mutates {
		for _, d := range c.decomps {
			if d.traits&Mutates == 0 {
				o.impl, mutates = d.f, false
				break
			}
		}
	}
	p := newPrim(op, name, o.abstract)
	p.Whole = true
	p.Impl = o.wrap(o.impl)
	p.ImplMutates = mutates
	for _, d := range all {
		if d.traits&Eager != 0 {
			p.EvalImpl = o.wrap(d.f)
			break
		}
	}
	if c.jvp != nil {
		jvp := c.jvp
		p.JVP = func(params any, primals, tangents []*peel.Tensor) ([]*peel.Tensor, []*peel.Tensor) {
			out := interp.Bind1(p, params, primals...)
			ts := make([]*peel.Tensor, len(tangents))
			for i, t := range tangents {
				if t == nil && primals[i].DType().IsFloat() {
					t = peel.ZerosLike(primals[i])
				}
				ts[i] = t
			}
			t := jvp(primals, out, ts)
			if t == nil || !interp.AvalOf(t).Equal(interp.AvalOf(out)) {
				panic(&peel.Error{Ops: []string{name}, Msg: "the JVP rule must return a tangent of the result's type " + out.TypeString() + " (got " + t.TypeString() + ")"})
			}
			return []*peel.Tensor{out}, []*peel.Tensor{t}
		}
	}
	if c.vjp != nil {
		vjp := c.vjp
		p.VJP = func(params any, primals, outs, cts []*peel.Tensor) []*peel.Tensor {
			return vjp(primals, outs[0], cts[0])
		}
	}
	if c.elemwise && c.batch == nil {
		batching.Register(p, batching.ElementwiseRule(p))
	}
	if c.batch != nil {
		rule := c.batch
		batching.Register(p, func(size int, params any, xs []*peel.Tensor, dims []int) ([]*peel.Tensor, []int) {
			out, d := rule(size, xs, dims)
			if out == nil || d < 0 || d >= out.Rank() || out.Shape()[d] != size {
				panic(&peel.Error{Ops: []string{name}, Msg: "the batching rule must return a result with a batch dimension of size " + strconv.Itoa(size) + " (got " + out.TypeString() + " batched at " + strconv.Itoa(d) + ")"})
			}
			return []*peel.Tensor{out}, []int{d}
		})
	}
	o.prim = p
	for i, k := range c.kernels {
		regs[i].RegisterKernel(p.Op, k.k)
	}
	return o
}

// newPrim registers the op's primitive, turning a lost race for the name
// (another goroutine defining it first) into *peel.Error.
func newPrim(op, name string, abstract func(any, []Aval) []Aval) (p *interp.Prim) {
	defer func() {
		if r := recover(); r != nil {
			errorf(op, "a primitive named %q is already defined", name)
		}
	}()
	return interp.NewPrim(name, interp.Pure, abstract)
}

// wrap turns a decomposition into a Prim.Impl that names the op in
// errors.
func (o *Op) wrap(f func(xs ...*peel.Tensor) *peel.Tensor) func(any, []*peel.Tensor) []*peel.Tensor {
	return func(_ any, args []*peel.Tensor) []*peel.Tensor {
		defer interp.Decomposing(o.name)
		out := f(args...)
		if out == nil {
			panic(&peel.Error{Msg: "the decomposition returned a nil tensor"})
		}
		return []*peel.Tensor{out}
	}
}

// Name returns the op's name.
func (o *Op) Name() string { return o.name }

// Prim returns the op's primitive, as it appears in graphs, or nil for a
// nil op.
func (o *Op) Prim() *interp.Prim {
	if o == nil {
		return nil
	}
	return o.prim
}

// Call applies the op. It panics with *peel.Error when the number of operands
// is not the op's arity, or when the op rejects them.
func (o *Op) Call(xs ...*peel.Tensor) *peel.Tensor {
	defer interp.Annotate(o.name)
	if len(xs) != o.arity {
		panic(&peel.Error{Msg: "takes " + strconv.Itoa(o.arity) + " operands, got " + strconv.Itoa(len(xs))})
	}
	return interp.Bind1(o.prim, nil, xs...)
}

// Composite runs the op's composite directly (no fused kernel, no rule):
// the reference the op's kernels and rules are tested against.
func (o *Op) Composite(xs ...*peel.Tensor) *peel.Tensor {
	defer interp.Annotate(o.name)
	if len(xs) != o.arity {
		panic(&peel.Error{Msg: "takes " + strconv.Itoa(o.arity) + " operands, got " + strconv.Itoa(len(xs))})
	}
	return o.prim.Impl(nil, xs)[0]
}

// abstract is the op's shape rule: the user's, or derived by staging the
// functional decomposition (through functionalize, so a mutating one
// stages too), cached by operand types.
func (o *Op) abstract(_ any, in []Aval) []Aval {
	if len(in) != o.arity {
		panic(&peel.Error{Msg: "takes " + strconv.Itoa(o.arity) + " operands, got " + strconv.Itoa(len(in))})
	}
	if o.shape != nil {
		return []Aval{o.shape(in)}
	}
	if e := o.last.Load(); e != nil && interp.AvalsEqual(e.in, in) {
		return []Aval{e.out}
	}
	key := interp.AvalsKey(in)
	if out, ok := o.cache.Load(key); ok {
		o.last.Store(&shapeEntry{in: append([]Aval(nil), in...), out: out})
		return []Aval{out}
	}
	out := o.derive(in)
	o.cache.Store(key, out)
	o.last.Store(&shapeEntry{in: append([]Aval(nil), in...), out: out})
	return []Aval{out}
}

// derive stages the op's decomposition on operands of types in.
func (o *Op) derive(in []Aval) Aval {
	level := "shape rule of " + o.name
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*peel.Error); ok && e.Transform == level {
				// The staging level is ours, not the caller's.
				e.ForgetLevels()
			}
			panic(r)
		}
	}()
	g := interp.TraceAvals(level, func(xs []*peel.Tensor) []*peel.Tensor {
		f := functionalize.New(false)
		w := make([]*peel.Tensor, len(xs))
		for i, x := range xs {
			w[i] = f.Wrap(x)
		}
		defer f.End(w, xs)
		out := o.prim.Impl(nil, w)
		return []*peel.Tensor{f.Unwrap(out[0])}
	}, in)
	return g.Out[0].Aval
}

// errorf panics with a *peel.Error for the named user-level op.
func errorf(op, format string, args ...any) {
	e := interp.Errorf(format, args...)
	e.Ops = []string{op}
	panic(e)
}
