package interp

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"

	"github.com/peel-ml/peel/backend"
)

// Kind classifies a primitive.
type Kind uint8

const (
	// Pure primitives compute new values from their operands.
	Pure Kind = iota
	// ViewKind primitives return a tensor that aliases their first operand
	// (slice, transpose, reshape, broadcast_in_dim): at eval level the
	// result shares the operand's buffer, and the result records its base
	// so other interpreters can replay it.
	ViewKind
	// Mutation primitives write into their first operand, the destination,
	// and return it. Their other operands have the destination's shape and
	// dtype.
	Mutation
)

func (k Kind) String() string {
	switch k {
	case Pure:
		return "pure"
	case ViewKind:
		return "view"
	case Mutation:
		return "mutation"
	}
	return "kind?"
}

// JVPRule computes the primal outputs and their tangents. tangents[i] is
// nil where operand i has a symbolic zero tangent. A rule is written with
// Bind, so it is itself transformable.
type JVPRule func(params any, primals, tangents []*Tensor) (outs, outTangents []*Tensor)

// TransposeRule maps output cotangents of a linear primitive to operand
// cotangents. linear[i] reports whether operand i is a linear input (its
// value in args is then nil); the others are constants. A nil output
// cotangent is a symbolic zero, and so is a nil result.
type TransposeRule func(params any, cts []*Tensor, args []*Tensor, linear []bool) []*Tensor

// VJPRule maps the cotangents of a primitive's results to cotangents of
// its operands, given the operands and the results; a nil cotangent is a
// symbolic zero.
type VJPRule func(params any, primals, outs, cts []*Tensor) []*Tensor

// ParamCodec is how an exported program writes a primitive's
// parameters (Prim.Codec). Package graphio defines the format and
// implements it; interp only carries it on the Prim. ParamType is the
// type of the parameters the primitive is bound with.
type ParamCodec interface{ ParamType() reflect.Type }

// Prim is a primitive operation: the unit every interpreter has a rule for.
// What a primitive means (its shape and dtype rule, its derivatives) lives
// in package prims; interp only defines the type.
type Prim struct {
	backend.Op
	Kind Kind
	// Elementwise, when set, describes an elementwise primitive as data:
	// Arity operands of equal shape and one dtype that Accepts admits,
	// one result of that shape with dtype Result (the operands' dtype when
	// Result is invalid). Eval checks such operands without calling
	// Abstract; Abstract must agree with it.
	Elementwise *ElementwiseRule
	// Abstract computes the results' shapes and dtypes from the operands'
	// and the parameters. It panics with *Error on operands the primitive
	// does not accept. Operands are strict: broadcasting and promotion are
	// done by the caller.
	Abstract func(params any, in []Aval) []Aval
	// ViewArray, for view primitives, computes the strided array of the
	// result from the operand's, sharing its buffer. ok is false when no
	// strided view exists (a reshape of a non-contiguous array); eval then
	// copies the operand first.
	ViewArray func(params any, a backend.Array) (view backend.Array, ok bool)
	// Impl, when set, defines the primitive as a composite: a function of
	// other primitives applied with Bind. Eval runs it instead of a
	// kernel (unless the operands' backend has a kernel for it: a fused
	// kernel, typed by Abstract), and an interpreter with no rule for the
	// primitive calls it with its own tracers (it decomposes the
	// primitive). Abstract is consulted only for composites with Whole or
	// a kernel.
	Impl func(params any, args []*Tensor) []*Tensor
	// EvalImpl, when set, is the decomposition Eval runs when the
	// operands' backend has no kernel for the primitive (for example one
	// that writes in place, fastest eagerly); Impl otherwise. For a
	// primitive with no Impl, EvalImpl is its evaluation: Go code that
	// Eval runs instead of a kernel (a collective, answered by the
	// device that binds its axis).
	EvalImpl func(params any, args []*Tensor) []*Tensor
	// ImplMutates reports that Impl writes in place into tensors it
	// creates: the functionalize interpreter decomposes such a primitive
	// (answering its writes out of place) instead of binding it below.
	ImplMutates bool
	// Whole, for a composite, makes the staging interpreter record it as
	// one equation typed by Abstract (so a compiler can keep a fused
	// kernel) instead of decomposing it, unless the trace was asked to
	// decompose everything (DecomposeOps).
	Whole bool
	// VJP, for a composite, is an explicit reverse-mode rule: the
	// operands' cotangents (nil for zero) from the operands, the results
	// and the results' cotangents. Autodiff of a composite that has a VJP
	// rule, or no JVP rule, computes the primal by binding the primitive
	// itself and records a linear map whose transpose is VJP (or the VJP
	// of Impl, recomputed from the saved operands) — see package
	// transforms.
	VJP VJPRule
	// Effect marks a primitive whose evaluation acts outside its
	// results (it starts or completes communication with other
	// processes): graph passes neither fold it at compile time, nor merge
	// two of its equations, nor drop one whose results are unused, so it
	// runs exactly where and as often as it was traced.
	Effect bool
	// BorrowsOperands, for an effect, says that it reads its operands
	// only while it is evaluated (what it keeps, it copies): a compiled
	// program then hands it its buffers as they are, instead of copies.
	BorrowsOperands bool
	// Codec writes the primitive's parameters into an exported program
	// and reads them back (see ParamCodec); nil for a primitive whose
	// parameters are always nil, or that cannot be exported (an equation
	// with parameters and no codec makes the export fail). A primitive
	// with parameters sets it where it is defined (graphio.Params).
	Codec ParamCodec
	// NoEval, when set, is why Eval refuses the primitive: it only exists
	// to be transformed (a linear map that only has a transpose rule).
	NoEval string
	// Pure, for mutation primitives, is the out-of-place primitive with
	// the same operands: dst ← Pure(dst, srcs…). When DropsDst is set the
	// destination is not an operand of Pure: dst ← Pure(srcs…).
	Pure     *Prim
	DropsDst bool
	// JVP is the forward-mode rule; nil for primitives with no derivative
	// defined.
	JVP JVPRule
	// Transpose is the rule for linear primitives.
	Transpose TransposeRule
	// TransposeEarly makes the backward sweep transpose the primitive as
	// soon as its results' cotangents are complete (every reader has
	// been transposed) instead of at its place in reverse order: a
	// backward hook, which then sees a parameter's gradient as early as
	// it exists. It applies when every operand is linear.
	TransposeEarly bool
	// Linear reports, for each operand, whether the primitive is linear in
	// it with the others held constant; nil if it is linear in none.
	Linear []bool
	// NonDifferentiable marks primitives whose outputs have zero tangents
	// (comparisons, argmax, floor, …).
	NonDifferentiable bool

	// pkg is the import path of the package that registered the
	// primitive (see Package).
	pkg string
}

// Package returns the import path of the package whose code registered p
// (the caller of NewPrim): "github.com/peel-ml/peel/prims" for peel's
// primitive set, the package of customop for user-defined ops, "" when
// it is not known.
func (p *Prim) Package() string { return p.pkg }

// ElementwiseRule is the shape and dtype rule of an elementwise primitive,
// as data: Arity operands of one shape and one dtype that Accepts (which
// must be set) admits, and one result of that shape and dtype Result,
// or the operands' dtype when Result is Invalid (the zero value).
type ElementwiseRule struct {
	Arity   int
	Accepts func(DType) bool
	Result  DType
}

// OutOfPlace returns the value mutation primitive p writes into its
// destination args[0], computed out of place with Bind: the source for
// copy_, Pure(dst, srcs…) otherwise. Interpreters that answer mutations
// out of place (functionalize, autodiff) use it.
func OutOfPlace(p *Prim, params any, args []*Tensor) *Tensor {
	if p.DropsDst {
		return args[1]
	}
	return Bind1(p.Pure, params, args...)
}

// String returns the primitive's name.
func (p *Prim) String() string { return p.Name }

var (
	regMu    sync.Mutex
	registry []*Prim
	byName   = map[string]*Prim{}
)

// NewPrim registers a primitive and assigns its ID. It is meant to be
// called from package initialization. It panics if the name is taken.
func NewPrim(name string, kind Kind, abstract func(params any, in []Aval) []Aval) *Prim {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := byName[name]; dup {
		panic(fmt.Sprintf("interp: primitive %q registered twice", name))
	}
	p := &Prim{Op: backend.Op{ID: len(registry), Name: name}, Kind: kind, Abstract: sizedResults(abstract), pkg: callerPackage()}
	registry = append(registry, p)
	byName[name] = p
	return p
}

// sizedResults wraps a shape rule so that every result shape it gives
// passes backend.CheckedSize when an operand has no elements. A rule may
// compute a result from an operand's dimensions without checking (every
// product of the dimensions of a shape with elements fits in an int), but
// an empty operand's other dimensions can multiply past math.MaxInt: the
// sum over the zero axis of a MaxInt×0×2 operand is MaxInt×2. This
// refuses such a result in one place, for every rule, with "too large".
func sizedResults(abstract func(params any, in []Aval) []Aval) func(params any, in []Aval) []Aval {
	if abstract == nil {
		return nil
	}
	return func(params any, in []Aval) []Aval {
		out := abstract(params, in)
		for _, a := range in {
			if !hasZeroDim(a.Shape) {
				continue
			}
			for _, o := range out {
				if _, err := backend.CheckedSize(o.Shape); err != nil {
					panic(&Error{Msg: err.Error()})
				}
			}
			break
		}
		return out
	}
}

func hasZeroDim(shape []int) bool {
	for _, d := range shape {
		if d == 0 {
			return true
		}
	}
	return false
}

// callerPackage returns the import path of the package of NewPrim's
// caller.
func callerPackage() string {
	var pc [1]uintptr
	if runtime.Callers(3, pc[:]) == 0 {
		return ""
	}
	f, _ := runtime.CallersFrames(pc[:]).Next()
	return funcPackage(f.Function)
}

// Prims returns every registered primitive in ID order.
func Prims() []*Prim {
	regMu.Lock()
	defer regMu.Unlock()
	return append([]*Prim(nil), registry...)
}

// PrimByName returns the registered primitive with the given name, or nil.
func PrimByName(name string) *Prim {
	regMu.Lock()
	defer regMu.Unlock()
	return byName[name]
}

// FormatParams formats a parameter value for graphs and errors. A params
// type can implement fmt.Stringer to control it.
func FormatParams(params any) string {
	if params == nil {
		return ""
	}
	if s, ok := params.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%+v", params)
}

// ViewArray returns the strided array that view primitive p makes of a,
// sharing a's buffer, as eval does for a view. ok is false when no
// strided view exists (a reshape of a non-contiguous array): eval then
// applies the view to a contiguous copy of a. It panics with *Error if p
// is not a view primitive.
func ViewArray(p *Prim, params any, a backend.Array) (view backend.Array, ok bool) {
	if p.Kind != ViewKind || p.ViewArray == nil {
		panic(&Error{Prim: p.Name, Msg: "not a view primitive"})
	}
	return p.ViewArray(params, a)
}
