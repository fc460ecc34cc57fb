package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Conformance of dot_general.

// dotCase is one dot_general configuration.
type dotCase struct {
	name   string
	a, b   []int
	params prims.DotParams
}

func dotCases() []dotCase {
	mm := func(m, k, n int) dotCase {
		return dotCase{fmt.Sprintf("matmul %dx%dx%d", m, k, n), []int{m, k}, []int{k, n}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}}
	}
	cs := []dotCase{
		mm(2, 3, 4), mm(1, 1, 1), mm(5, 1, 3), mm(1, 7, 1), mm(3, 0, 4), mm(0, 3, 4), mm(3, 4, 0), mm(17, 9, 13), mm(33, 31, 29), mm(64, 64, 64),
		{"matvec", []int{4, 3}, []int{3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}},
		{"vecmat", []int{3}, []int{3, 5}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"inner product", []int{6}, []int{6}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"empty inner product", []int{0}, []int{0}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"outer product", []int{3}, []int{4}, prims.DotParams{}},
		{"scalar times matrix", []int{}, []int{2, 3}, prims.DotParams{}},
		{"scalars", []int{}, []int{}, prims.DotParams{}},
		{"lhs transposed", []int{3, 2}, []int{3, 4}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"rhs transposed", []int{2, 3}, []int{4, 3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}}},
		{"both transposed", []int{3, 2}, []int{4, 3}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{1}}},
		{"batched", []int{3, 2, 4}, []int{3, 4, 5}, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"batch in the middle", []int{2, 3, 4}, []int{4, 3, 5}, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{0}, LhsBatch: []int{1}, RhsBatch: []int{1}}},
		{"batch last", []int{2, 4, 3}, []int{5, 4, 3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}, LhsBatch: []int{2}, RhsBatch: []int{2}}},
		{"two batch dims", []int{2, 3, 2, 4}, []int{3, 2, 4, 2}, prims.DotParams{LhsContract: []int{3}, RhsContract: []int{2}, LhsBatch: []int{0, 1}, RhsBatch: []int{1, 0}}},
		{"empty batch", []int{0, 2, 3}, []int{0, 3, 4}, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"two contracting dims", []int{2, 3, 4}, []int{4, 3, 5}, prims.DotParams{LhsContract: []int{1, 2}, RhsContract: []int{1, 0}}},
		{"batch only", []int{3, 4}, []int{3, 4}, prims.DotParams{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 1}}},
		{"batch and outer", []int{3, 2}, []int{3, 4}, prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"rank 4 by rank 3", []int{2, 1, 3, 4}, []int{4, 2, 5}, prims.DotParams{LhsContract: []int{3}, RhsContract: []int{0}, LhsBatch: []int{0}, RhsBatch: []int{1}}},
	}
	return cs
}

// dotValues are finite: 0·∞ in a product is left to the backend (BLAS
// implementations skip zero terms).
var dotValues = values{lo: -2, hi: 2, special: func(backend.DType) []float64 { return []float64{0, negZero, 1, -1, 0.5} }, ilo: -5, ihi: 5, ispecial: []int64{math.MaxInt64, math.MinInt64}}

func runDot(s *suite) {
	p := prims.DotGeneral
	dts := accepted(p, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, sameAvals(2, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				x := s.operand(dt, []int{2}, contiguous, defaultValues).t
				interp.Bind1(p, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, x, x)
			})
			continue
		}
		for _, c := range dotCases() {
			pairs := [][2]layout{{contiguous, contiguous}}
			for _, l := range layouts[1:] {
				la, lb := l, l
				if !la.fits(c.a) {
					la = contiguous
				}
				if !lb.fits(c.b) {
					lb = contiguous
				}
				if la != contiguous || lb != contiguous {
					pairs = append(pairs, [2]layout{la, contiguous}, [2]layout{contiguous, lb})
				}
			}
			if len(c.a) > 0 && c.a[0] > 16 {
				pairs = pairs[:1]
				if transposed.fits(c.a) {
					pairs = append(pairs, [2]layout{transposed, contiguous}, [2]layout{contiguous, transposed})
				}
			}
			for _, pr := range pairs {
				a, b := s.operand(dt, c.a, pr[0], dotValues), s.operand(dt, c.b, pr[1], dotValues)
				desc := describe(p.Name, dt, c.a, c.name, fmtShape(c.b), c.params, "a="+pr[0].String(), "b="+pr[1].String())
				s.try(desc, func() {
					want, allow := refDot(a.a, b.a, c.params)
					s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, c.params, a.t, b.t), want)
				})
			}
		}
		if dt.IsFloat() {
			// NaN and ±Inf propagate through nonzero finite factors.
			a := newArray(dt, []int{3, 2})
			copy(a.f, []float64{nan, 1, inf, 1, -inf, inf})
			b := newArray(dt, []int{2, 2})
			copy(b.f, []float64{1, 2, 3, -4})
			params := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
			desc := describe(p.Name, dt, a.shape, "with NaN and ±Inf")
			s.try(desc, func() {
				want, allow := refDot(a, b, params)
				s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, params, s.tensor(a), s.tensor(b)), want)
			})
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	mm := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	s.expectError("dot_general of [2,3] and [4,5]", func() { interp.Bind1(p, mm, f(backend.Float64, 2, 3), f(backend.Float64, 4, 5)) })
	s.expectError("dot_general of f64 and f32", func() { interp.Bind1(p, mm, f(backend.Float64, 2, 3), f(backend.Float32, 3, 5)) })
	s.expectError("dot_general with a dimension used twice", func() {
		interp.Bind1(p, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}, LhsBatch: []int{0}, RhsBatch: []int{1}}, f(backend.Float64, 3, 3), f(backend.Float64, 3, 3))
	})
	s.expectError("dot_general with unpaired contracting dimensions", func() {
		interp.Bind1(p, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{}}, f(backend.Float64, 2, 3), f(backend.Float64, 3, 5))
	})
	s.expectError("dot_general with batch sizes 2 and 3", func() {
		interp.Bind1(p, prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}, f(backend.Float64, 2), f(backend.Float64, 3))
	})
	s.expectError("dot_general with an axis out of range", func() {
		interp.Bind1(p, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{0}}, f(backend.Float64, 2, 3), f(backend.Float64, 3, 5))
	})
}
