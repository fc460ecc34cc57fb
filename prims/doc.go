// Package prims defines peel's primitive set: each primitive's name, kind
// (pure, view or mutation), parameter type and shape/dtype rule. What a
// primitive means lives here, once; backends implement kernels for them and
// transforms give them rules.
//
// Primitives are strict: operands already have the shapes and dtypes the
// rule demands (elementwise operands are equal in shape and dtype), and
// every parameter is explicit (axes are non-negative, permutations and
// slice bounds are complete; only the windowed primitives,
// conv_general_dilated and the window reductions, take nil lists for their
// defaults: see ConvParams and WindowParams). Broadcasting, dtype
// promotion and negative
// axes belong to package peel. A rule rejects bad operands by panicking
// with *interp.Error.
//
// Integer edge cases never panic: integer division by zero gives 0, so
// does remainder by zero, and integer pow with a negative exponent gives 0
// unless the base is ±1. Gather clamps indices into range, scatter drops
// out-of-range indices, and dynamic slices clamp their starts so the slice
// fits, as in XLA.
//
// The primitives are filed by family (elementwise.go, random.go,
// reduce.go, cumulative.go, shape.go, index.go, scatter_reduce.go,
// dot.go, window.go, linalg.go, sort.go, special.go; helpers.go holds
// what they share). A primitive with parameters declares their type at
// its definition, graphio.Params[T](interp.NewPrim(…)), which gives it
// the codec exported programs write them with. Each primitive's
// definition is followed by the init that sets its differentiation
// rules: a JVP rule for every
// differentiable primitive and a transpose rule for every linear one,
// all written with interp.Bind so they are themselves transformable. Primitives marked NonDifferentiable have zero tangents:
// floor, ceil, round, floor_divide, not, and, or, the comparisons, argmax,
// argmin, iota, threefry2x32, searchsorted, shift_left and
// shift_right_arithmetic; sign and stop_gradient have JVP rules whose
// tangent is zero. Integer and bool values never carry tangents.
package prims
