package backendtest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Fused kernels of composites. A composite marked Whole (a customop.Define
// op) may have a kernel on a backend, which eval runs instead of the
// decomposition; the kernel must compute what the decomposition computes
// for every operand type the composite accepts. The suite has no
// reference of its own for such a primitive, so the decomposition, run on
// the same backend's kernels of the primitives it is made of, is the
// reference.

// fusedShapes are the shapes tried for the operands of a fused kernel
// (all operands of one shape): rank 0 to 3, a size-0 dimension, and one
// large enough for a backend to split the work.
var fusedShapes = [][]int{{}, {5}, {3, 4}, {2, 3, 4}, {2, 0, 3}, {1001, 7}}

// fusedMaxArity is the largest number of operands tried.
const fusedMaxArity = 4

// fusedRoundoffs is the error allowed between a fused kernel and the
// decomposition, in units of roundoff of max(|result|, 1): the two may
// round differently (fused arithmetic, another evaluation order, a wider
// intermediate type), and operands are drawn from [−3, 3].
const fusedRoundoffs = 64

// runFused checks b's fused kernel for the composite p against p's
// decomposition, on every operand type p's shape rule accepts among n ≤
// fusedMaxArity operands of one dtype and one shape of fusedShapes, in a
// contiguous and a transposed layout. Parameters are nil, as
// customop.Define ops have. Operand types for which the shape rule panics
// in any way are skipped; if there is none, the subtest says so.
func runFused(p *interp.Prim) func(*suite) {
	return func(s *suite) {
		tried := 0
		for n := 0; n <= fusedMaxArity; n++ {
			shapes := fusedShapes
			if n == 0 {
				shapes = [][]int{nil}
			}
			for _, dt := range allDTypes {
				for _, shape := range shapes {
					in := sameAvals(n, shape)(dt)
					if r, _ := caught(func() { p.Abstract(nil, in) }); r != nil {
						continue
					}
					tried++
					for _, l := range fusedLayouts(shape) {
						s.fusedCase(p, n, dt, shape, l)
					}
				}
			}
		}
		if tried == 0 {
			s.t.Logf("%s: its shape rule accepts none of the operand types tried; the fused kernel is not checked", p.Name)
		}
	}
}

// fusedLayouts returns contiguous and, where it differs, transposed.
func fusedLayouts(shape []int) []layout {
	if len(shape) >= 2 {
		return []layout{contiguous, transposed}
	}
	return []layout{contiguous}
}

// fusedCase runs one fused-kernel case: n operands of dtype dt and the
// given shape in layout l.
func (s *suite) fusedCase(p *interp.Prim, n int, dt backend.DType, shape []int, l layout) {
	args := make([]*interp.Tensor, n)
	for k := range args {
		args[k] = s.operand(dt, shape, l, finiteValues).t
	}
	desc := describe(p.Name, dt, shape, fmt.Sprintf("%d operands, %v (fused kernel against the decomposition)", n, l))
	s.try(desc, func() {
		got := interp.Bind(p, nil, args...)
		want := p.Impl(nil, append([]*interp.Tensor(nil), args...))
		if len(got) != len(want) {
			s.failf("%s: %d results, the decomposition has %d", desc, len(got), len(want))
			return
		}
		for i, w := range want {
			wa := readTensor(w)
			c := check{desc: fmt.Sprintf("%s, result %d", desc, i)}
			if wa.dt.IsFloat() {
				u := fusedRoundoffs * unitRoundoff(wa.dt)
				c.allow = make([]float64, wa.size())
				for k := range c.allow {
					c.allow[k] = u * math.Max(math.Abs(wa.f[k]), 1)
				}
			}
			s.expect(c, got[i], wa)
		}
	})
}
