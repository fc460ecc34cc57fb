// Package peel is the array API of peel, a library of composable function
// transforms (Grad, Vmap, Functionalize, JVP/VJP, Jacobians, Hessians)
// built as interpreters over one set of primitives.
//
// Tensors are *Tensor values with a dtype (Bool, Int64, Float32, Float64,
// and the storage dtypes Int32, Uint8, Float16, BFloat16, which are
// computed in i64 or f32 and rounded back after every operation) and a
// shape. Functions follow numpy: binary operations broadcast their
// operands and promote dtypes along JAX's lattice (bool < u8 < i32 < i64
// < f16, bf16 < f32 < f64; see PromoteTypes), and Go scalars are weakly
// typed as Python scalars are in JAX, so Add(x32, 2.0) stays float32.
// Negative axes and indices count from the end.
//
// View functions (Reshape, Transpose, Slice, Narrow, Select, Squeeze,
// BroadcastTo, …) return aliases of their operand, and in-place functions
// (CopyInto, AddInPlace, …) write through them: a write through a view is
// visible through the base and every other alias.
//
// Every function is built only from primitives (package prims) through
// interp.Bind, so it works unchanged under every transform. Misuse panics
// with *Error, which names the function, the operands' shapes and dtypes,
// and the transform and level; Catch turns such a panic into an error.
//
// Tensors live on a backend. The default one, which constructors use, is
// the CPU backend (backend/cpu, imported by this package, so there is
// nothing to set up); UseBackend replaces it for the tensors made
// afterwards, and DefaultBackend reports it.
//
// Ops of the user's own (a composite of peel functions with fused
// kernels and rules, one primitive to every transform) are defined with
// package customop; the transforms are in package transforms.
package peel
