package peel

import (
	"reflect"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// The default backend. peel is written against the backend.Backend
// interface; which implementation new tensors get is one process-wide
// choice, as gonum's blas64.Use chooses the BLAS implementation. The
// choice lives here, in the array API users import, rather than in
// package backend, which only defines the interface (and cannot name
// the interpreter that reads the choice), or in backend/cpu, which is one
// implementation among others.

// UseBackend makes b the default backend: the one on which constructors
// (Zeros, FromFloat64s, Arange, Key, …), operations whose operands are
// all Go scalars, and the constants the transforms make (zero tangents,
// the constants of derivative rules) allocate their tensors. Until it is
// called the default is the CPU backend (backend/cpu, which package peel
// imports), so a program that imports only peel needs no setup.
//
// Call UseBackend before making tensors: at the start of main, or in an
// init function of a package that imports peel (those run after
// backend/cpu has installed itself). The switch is not retroactive. A
// tensor made before it keeps the backend it was made on, and operations
// whose operands all live there still run there (results live with their
// operands, and Go scalars combined with a tensor are put on the
// tensor's backend). An operation that mixes tensors of two backends
// panics with *Error ("operands live on different backends"), and so may
// a transform of a function of old tensors, since the transform's own
// constants are made on the new default; nothing is ever copied between
// backends implicitly. To move a tensor, rebuild it from its elements,
// e.g. FromFloat64s(x.Float64s(), x.Shape()...). Fused kernels of
// user-defined ops are registered per backend (customop.WithKernel): on a
// backend without one, the op runs its decomposition.
//
// UseBackend is safe to call concurrently with computations, which each
// see the old or the new default for each tensor they make; switching
// while they run is rarely what is meant. It panics with *Error if b is
// nil.
func UseBackend(b backend.Backend) {
	if isNilBackend(b) {
		errorf("peel.UseBackend", "nil backend")
	}
	interp.SetDefaultBackend(b)
}

// DefaultBackend returns the backend new tensors are made on: the one
// last given to UseBackend, or the CPU backend.
func DefaultBackend() backend.Backend { return interp.DefaultBackend() }

// isNilBackend reports whether b is nil or holds a nil pointer, map,
// slice, function, channel or interface.
func isNilBackend(b backend.Backend) bool {
	if b == nil {
		return true
	}
	switch v := reflect.ValueOf(b); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}
