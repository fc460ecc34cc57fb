// Package interp is peel's core: the Tensor box every layer passes, the
// primitive type, interpreter levels, Bind, the eval interpreter that runs
// a backend's kernels, and the staging interpreter that records a Graph.
//
// # How a call peels down to a kernel
//
// Every operation is a call Bind(prim, params, args...). Bind looks at the
// arguments only: it finds the highest live Level among their tracers and
// calls that level's Interpreter.Process, whose rule unwraps its own
// tracers and calls Bind again on lower values. When no argument is a
// tracer, Eval runs the backend kernel. Nested transforms therefore resolve
// one level at a time, and there is no global "current transform" state:
// independent computations may run in different goroutines.
//
// # Levels and tracers
//
// A Level is one live invocation of a transform; levels get increasing IDs.
// A tracer belongs to one level; when the level ends (Level.End) its
// tracers are escaped, and Bind refuses them with an *Error. Tensors of
// lower levels met by an interpreter are lifted: treated as constants.
//
// # Views and mutation
//
// View primitives (slice, transpose, reshape, broadcast_in_dim) return a
// tensor that records its base, the view primitive and the base's
// generation (View). At eval level a view shares the base's buffer, so a
// mutation primitive (copy_, add_, …) written through any alias is seen by
// all. Interpreters that cannot share memory replay views from their base.
//
// # Composites
//
// A primitive with Impl is a composite: interpreters without a rule for
// it decompose it. One marked Whole (a user-defined op) is instead
// recorded whole by the staging interpreter and run by a backend's fused
// kernel when it has one.
//
// # Errors
//
// Misuse panics with *Error, which names the user-level op chain (added by
// Annotate), the primitive, the operands' types, the transform and level,
// and the composites being decomposed (added by Decomposing). Catch
// converts such a panic into an error.
package interp
