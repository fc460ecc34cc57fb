// Package batching is the vmap interpreter: it runs a function once on
// values that each stand for a whole batch of values (lanes), by applying
// every primitive to all lanes at once.
//
// # Batched values
//
// A batched value is a tracer of an Interp's level. Its logical shape (what
// the function sees) hides the batch; its physical value is a tensor of the
// level below with one extra dimension, the batch dimension, which may sit
// at any position. A value the function did not get from the batch (a
// captured tensor, a constant) is not batched at the level: its batch
// dimension is NotMapped (-1) and it is the same in every lane.
//
// # Rules
//
// Each primitive has a Rule (Register, RuleFor). A rule receives the batch
// size, the primitive's parameters, the operands' physical values and
// their batch dimensions (at least one is not NotMapped), and returns the
// physical results and their batch dimensions. Rules never read tensor
// data and never loop over lanes: they rewrite the call into primitives
// applied to the physical values with interp.Bind (so a rule is itself
// transformable, which makes vmap of grad and grad of vmap work), using
// the shared helpers MoveDim, BroadcastBatch, ToFront, AllToFront,
// ShiftAxes, Lane and FirstBatched. For example, elementwise primitives
// align their operands on one batch dimension (ElementwiseRule, which
// user-defined ops declared elementwise share); reductions and shape
// primitives rewrite their axis parameters around it; dot_general turns
// the batch into a dot batch dimension or a free dimension;
// conv_general_dilated folds it into the convolution's batch or its
// feature groups; the window reductions give it a window of size 1;
// gather and
// scatter with batched indices merge the batch into the indexed axis and
// offset each lane's indices.
//
// Mutation primitives are handled by the interpreter itself (the
// destination must be batched at the level), and primitives defined as
// composites (interp.Prim.Impl) are decomposed when they have no rule.
//
// # Fallback
//
// A primitive with neither a rule nor a composite runs through the loop
// fallback: once per lane on the lane's slices (Lane), the results stacked
// along a new batch dimension, with a warning logged the first time per
// primitive (SetLogger). SetFallback(FallbackError) turns this into an
// *interp.Error instead; the package's tests run that way, so every
// built-in primitive is proven to have a vectorized rule.
package batching
