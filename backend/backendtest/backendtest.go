package backendtest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Run checks backend b against the reference implementations: one subtest
// per registered primitive that needs a kernel (named after it), plus the
// subtests "Backend" (Alloc, FromHost, ToHost and Copy called directly)
// and "Concurrent". It reports an error for every such primitive that has
// no conformance case, and for every pure one b has no kernel for.
//
// Which primitives need a kernel is a property of the primitive, not a
// list of names: a composite (Prim.Impl set) is evaluated as its
// decomposition, and a primitive with Prim.NoEval is never evaluated, so
// neither needs a kernel or a case (package transforms and customop.Define
// register such primitives). A composite marked Whole for which b has a
// fused kernel (a customop.Define op defined WithKernel) gets a subtest
// that checks the kernel against the composite's own decomposition.
func Run(t *testing.T, b backend.Backend) {
	t.Helper()
	cases := registry()
	t.Run("Backend", func(t *testing.T) { runSuite(t, b, "Backend", backendCases) })
	for _, p := range interp.Prims() {
		if !needsKernel(p) {
			if fusedKernel(p, b) {
				t.Run(p.Name, func(t *testing.T) { runSuite(t, b, p.Name, runFused(p)) })
			}
			continue
		}
		fn, ok := cases[p]
		if !ok {
			t.Errorf("no conformance case for primitive %s (a %v primitive): add one to package backendtest", p.Name, p.Kind)
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			if k := kernelOf(p); k != nil && !b.Has(k.Op) {
				t.Errorf("backend %s has no kernel for %s", b.Name(), k.Name)
				return
			}
			runSuite(t, b, p.Name, fn)
		})
	}
	t.Run("Concurrent", func(t *testing.T) { runSuite(t, b, "Concurrent", concurrentCase) })
}

// needsKernel reports whether evaluating p needs a backend to run it
// (with a kernel of its own, a view, or the kernel of its out-of-place
// form), so that every backend must have it and the suite a case for it.
// A composite (Impl set) is evaluated as its decomposition, whose
// primitives are checked on their own, so it needs no kernel: a backend
// may still have a fused kernel for one marked Whole (see fusedKernel).
// A primitive with NoEval is never evaluated, only transformed (a linear
// map that only has a transpose rule).
//
// A primitive whose evaluation is Go code (EvalImpl without Impl: the
// collectives, answered by the device that binds their axis) needs no
// kernel either.
func needsKernel(p *interp.Prim) bool {
	return p.Impl == nil && p.NoEval == "" && p.EvalImpl == nil
}

// fusedKernel reports whether b has a fused kernel for composite p: eval
// then runs the kernel instead of the decomposition.
func fusedKernel(p *interp.Prim, b backend.Backend) bool {
	return p.Impl != nil && p.Whole && b.Has(p.Op)
}

// kernelOf returns the primitive whose kernel p needs: p itself when it
// is pure, the out-of-place form of a mutation, nil for a view.
func kernelOf(p *interp.Prim) *interp.Prim {
	switch p.Kind {
	case interp.Pure:
		return p
	case interp.Mutation:
		return p.Pure
	}
	return nil
}

// suite is the state of one subtest: the backend, a deterministic random
// source seeded from the subtest's name, and the failures reported so far.
type suite struct {
	t     *testing.T
	b     backend.Backend
	rng   *rand.Rand
	fails int
	cases int
}

// maxReports bounds the failures one subtest prints; the rest are counted.
const maxReports = 10

func runSuite(t *testing.T, b backend.Backend, name string, fn func(*suite)) {
	h := fnv.New64a()
	h.Write([]byte(name))
	s := &suite{t: t, b: b, rng: rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))}
	s.try(name, func() { fn(s) })
	t.Logf("%d cases", s.cases-1)
	if s.fails > maxReports {
		t.Errorf("… and %d more failures not shown", s.fails-maxReports)
	}
}

func (s *suite) failf(format string, args ...any) {
	s.t.Helper()
	s.fails++
	if s.fails <= maxReports {
		s.t.Errorf(format, args...)
	}
}

// caught runs f and returns what it panicked with, or nil.
func caught(f func()) (r any, stack string) {
	defer func() {
		if r = recover(); r != nil {
			if _, ok := r.(*interp.Error); !ok {
				stack = shortStack()
			}
		}
	}()
	f()
	return nil, ""
}

// shortStack returns the frames of the current panic below the runtime's
// own, enough to find the failing kernel line.
func shortStack() string {
	lines := strings.Split(string(debug.Stack()), "\n")
	var out []string
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "panic(") {
			out = lines[i+2:]
			break
		}
	}
	if len(out) > 12 {
		out = out[:12]
	}
	return strings.Join(out, "\n")
}

// try runs one case, reporting a panic as a failure of the case.
func (s *suite) try(desc string, f func()) {
	s.t.Helper()
	s.cases++
	r, stack := caught(f)
	switch e := r.(type) {
	case nil:
	case *interp.Error:
		s.failf("%s: panicked with *interp.Error: %v", desc, e)
	default:
		s.failf("%s: runtime panic (a backend must return a result or panic with *interp.Error): %v\n%s", desc, r, stack)
	}
}

// expectError checks that f panics with *interp.Error.
func (s *suite) expectError(desc string, f func()) {
	s.t.Helper()
	s.cases++
	r, stack := caught(f)
	switch r.(type) {
	case nil:
		s.failf("%s: no panic, want one with *interp.Error", desc)
	case *interp.Error:
	default:
		s.failf("%s: panicked with %T (%v), want *interp.Error\n%s", desc, r, r, stack)
	}
}

// robust checks that f either returns or panics with *interp.Error: used
// where the shape rule accepts operands for which no answer exists.
func (s *suite) robust(desc string, f func()) {
	s.t.Helper()
	s.cases++
	r, stack := caught(f)
	switch r.(type) {
	case nil, *interp.Error:
	default:
		s.failf("%s: runtime panic (want a result or *interp.Error): %v\n%s", desc, r, stack)
	}
}

// tensor makes a contiguous tensor on the backend holding a.
func (s *suite) tensor(a array) *interp.Tensor {
	shape := append([]int{}, a.shape...)
	return interp.NewConcrete(s.b, backend.Array{Buf: s.b.FromHost(a.host()), Shape: shape})
}

// forUnaryDTypes runs each for every dtype whose [2] operand p's rule
// accepts with params0, and expects the rule's error for the others; it
// returns the accepted dtypes.
func (s *suite) forUnaryDTypes(p *interp.Prim, params0 any, each func(dt backend.DType)) []backend.DType {
	dts := accepted(p, params0, sameAvals(1, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				interp.Bind(p, params0, s.operand(dt, []int{2}, contiguous, finiteValues).t)
			})
			continue
		}
		each(dt)
	}
	return dts
}

// accepted returns the dtypes for which p's shape rule accepts the
// operands avals(dt) with params.
func accepted(p *interp.Prim, params any, avals func(dt backend.DType) []interp.Aval) []backend.DType {
	var out []backend.DType
	for _, dt := range allDTypes {
		if interp.Catch(func() { p.Abstract(params, avals(dt)) }) == nil {
			out = append(out, dt)
		}
	}
	return out
}

var allDTypes = []backend.DType{backend.Bool, backend.Int64, backend.Float32, backend.Float64}

// sameAvals returns n operands of one shape and dtype.
func sameAvals(n int, shape []int) func(dt backend.DType) []interp.Aval {
	return func(dt backend.DType) []interp.Aval {
		in := make([]interp.Aval, n)
		for k := range in {
			in[k] = interp.Aval{Shape: shape, DType: dt}
		}
		return in
	}
}

func describe(prim string, dt backend.DType, shape []int, extra ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v%s", prim, dt, fmtShape(shape))
	for _, e := range extra {
		fmt.Fprintf(&b, " %v", e)
	}
	return b.String()
}
