// Package autodiff holds the automatic-differentiation interpreters on
// which package transforms builds its public transforms (Grad, VJP, JVP,
// Linearize, the Jacobians, Hessian) and its control-flow, checkpoint
// and custom-rule primitives.
//
// Forward mode (JVP) is an interpreter level whose tracers carry a
// primal and a tangent (nil for a symbolic zero, never materialized;
// integer and bool values carry none). Each primitive's JVP rule
// (package prims) computes both with Bind, so rules are themselves
// transformable.
//
// Reverse mode is linearize + transpose. Linearize enters a staging
// level and a forward-mode level inside it, with the staging level's
// inputs as tangents: every primal operation involves no staging tracer
// and runs eagerly on the level below, while every tangent operation is
// recorded into a linear interp.Graph (Linearized.Graph). Transposing
// that graph (TransposeGraph, Linearized.Transpose: walking it backward,
// accumulating cotangents, applying each linear primitive's transpose
// rule with Bind) gives the VJP. Because everything is bound, a gradient
// of a gradient needs no special case, and levels keep nested
// perturbations apart.
//
// In-place operations on differentiated tensors, through views too, are
// answered out of place at the forward-mode level, with the aliasing
// mechanism of package functionalize, so they have the derivatives of
// their out-of-place forms; the function's inputs and captured tensors
// it wrote get their final values when it returns.
//
// A composite primitive (a user-defined op, customop.Define) with no JVP
// rule, or with a VJP rule, is differentiated as a whole: its primal is
// the op itself (its fused kernel runs) and its tangent one linear
// primitive, composite_lin (CompositeLin), whose forward map and
// transpose are the op's rules or the composite's own JVP and VJP,
// staged once per operand types and compiled (blocked evaluation of
// elementwise graphs), so the backward pass recomputes what it needs
// from the saved operands.
package autodiff
