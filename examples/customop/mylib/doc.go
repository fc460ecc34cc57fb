// Package mylib is an example library of user-defined peel ops (see
// customop.Define), used by the customop example, its tests and the
// benchmarks:
//
//   - Gelu, the tanh approximation of the Gaussian error linear unit, a
//     composite of seven elementwise ops with a fused CPU kernel. Every
//     transform works on it with no rule written by hand: autodiff
//     derives its derivative from the composite (the forward still runs
//     the fused kernel), vmap binds the op on the whole batch
//     (customop.Elementwise).
//   - Interleave, whose only decomposition writes in place (zeros, then
//     copies into strided slices), as torch composites often do. It works
//     under Grad and under Vmap(Functionalize(f)); plain Vmap reports an
//     error naming mylib.interleave.
package mylib
