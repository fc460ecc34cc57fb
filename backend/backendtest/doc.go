// Package backendtest is the conformance suite every peel backend passes:
// one call,
//
//	func TestConformance(t *testing.T) { backendtest.Run(t, mybackend.New()) }
//
// checks a backend against plain-Go reference implementations of every
// registered primitive, in the spirit of gonum's testblas.
//
// Run has one subtest per primitive that needs a kernel, named after it,
// and fails when such a registered primitive (pure, view or mutation) has
// no case here, so a new primitive cannot land without one. Whether a
// primitive needs a kernel is a property of the primitive, not a list of
// names: a composite (Prim.Impl set, such as transforms' composite_lin
// and custom-derivative calls, and customop.Define ops) is evaluated as its
// decomposition, and a primitive with Prim.NoEval (custom_vjp_lin) is
// never evaluated, so neither needs one. A composite marked Whole for
// which the backend has a fused kernel is checked against its own
// decomposition instead, on every operand type its shape rule accepts
// among a few arities, dtypes and shapes. For each primitive it sweeps
//
//   - every dtype the primitive's shape rule accepts (found by asking the
//     rule, so a widened dtype class is covered at once);
//   - edge shapes: rank 0, a size-0 dimension, size-1 dimensions and shapes
//     up to rank 4, plus one array large enough to make a backend split its
//     work;
//   - operand layouts: contiguous, a transpose view, a stride-2 slice view
//     with an offset, a broadcast scalar, a broadcast along one dimension,
//     and a raw array with negative strides;
//   - edge values: ±0, ±Inf, NaN, huge, tiny and subnormal floats, ties
//     for rounding, extreme integers, out-of-range indices;
//   - error behaviour: operands a rule rejects must panic with
//     *interp.Error, never with a runtime error.
//
// View primitives are checked through the eval interpreter: a view must
// read the right elements of the backend's buffer, and a copy_ through it
// must change exactly the base elements it aliases. The Backend subtest
// checks Alloc, FromHost, ToHost and Copy (with aliasing operands) directly.
//
// Tolerances: integer, bool and data-movement results are exact (and keep
// the sign of zero); float64 arithmetic may differ by 1e-12 relative;
// float32 arithmetic by 2 ulps; transcendental functions by 4e-6 relative
// for float32 (1e-12 for float64) plus two ulps of the argument times the
// function's condition number |x·f′(x)|, which gives the absolute floor
// near zeros of the function. The references of log and pow bring
// subnormal arguments into the normal range first (math.Frexp, scaling
// by 2^54), since math.Log on amd64 reads their exponent as if they were
// normal (golang/go#56600) and math.Pow uses it. Sums and products allow the usual
// (n+1)·u·Σ|terms| of a reordered accumulation. NaN equals NaN, and an
// infinite result must match exactly.
//
// Decided edge semantics the suite enforces: integer division and
// remainder by zero give 0; integer pow with a negative exponent gives 0
// unless the base is ±1; round is half away from zero; max, min and their
// reductions propagate NaN; argmax and argmin return the first occurrence
// and count NaN as the extreme; gather clamps indices, scatter drops
// out-of-range ones (the last write wins on duplicates); dynamic slices
// clamp their starts; float → i64 conversion truncates toward zero, maps
// NaN to 0 and saturates; threefry2x32 matches the Random123 known answers.
package backendtest
