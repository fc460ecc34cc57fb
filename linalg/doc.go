// Package linalg is peel's linear algebra, in the manner of
// numpy.linalg, jax.numpy.linalg and torch.linalg: factorizations
// (Cholesky, LU, QR, Eigh, SVD), solves (TriangularSolve, Solve, Inv,
// Lstsq, Pinv), determinants (Det, Slogdet), MatrixExp and the vector
// and matrix norms. Every function acts on the last two dimensions of
// its operands (the last one for vectors) and is batched over the
// leading ones, which broadcast where two operands meet.
//
// The factorizations are primitives of package prims with CPU kernels
// from gonum's LAPACK, which computes in float64: float32 operands are
// converted at the kernel's edge and the results rounded back to
// float32. Integer and bool operands are converted to float64 first, as
// numpy does. Every function is differentiable (JVP rules for the
// factorizations, Det and Pinv, a transpose rule for the triangular
// solve, linear in its right-hand side; the others are composites of
// these), and each works under Vmap, Grad, Jacobians and Compile like
// any op.
//
// Degenerate operands give values, never panics, as in JAX: a singular
// matrix makes Solve and Inv return ±Inf or NaN and Det 0 (or a
// rounding-sized value); a matrix that is not positive definite makes
// Cholesky return NaN; derivatives at points where the result is not
// differentiable (repeated eigenvalues or singular values for the
// vectors of Eigh and SVD, singular matrices for Solve, Inv and
// Slogdet) are ±Inf or NaN; Det's derivative stays finite at singular
// matrices and Pinv's at repeated singular values. Size-0 matrices give
// size-0 results (the determinant of a 0×0 matrix is 1, its Slogdet
// (1, 0)). Misuse (a nil operand, a rank below 2, a non-square matrix
// where one is needed, shapes that do not fit) panics with *peel.Error
// naming the function.
//
// The package sits above peel (it imports peel, interp and prims), like
// customop; the kernels live in backend/cpu with every other kernel.
package linalg
