// Package compiler turns an *interp.Graph into a fast program, in two
// steps that transforms.Compile runs on every traced signature:
//
//   - Optimize runs passes over the graph, each a small function from a
//     graph to an equivalent one: dead-code elimination, common
//     subexpression elimination, constant folding, simplification of
//     reshape/transpose/broadcast/convert chains (rules as data),
//     transposes folded into matrix products' dimension numbers, and
//     user-defined ops recovered from their written-out composites
//     (ReplaceComposites, which takes any Op such as a *customop.Op), so
//     code written with the plain composite gets the fused kernel.
//   - Build turns the optimized graph into a Program: a flat instruction
//     list that Run executes with the backend's kernels directly (no
//     Bind, no levels), elementwise chains fused into blocked loops (with
//     reductions over the last axis, per-row equations and broadcast
//     operands read per block of whole rows, so softmax, layer norm and
//     means are one loop), and
//     intermediates in a planned arena whose buffers are reused once
//     dead. A Program is safe for concurrent use.
package compiler
