// Package compiler turns an *interp.Graph into a faster equivalent one:
// optimization passes over graphs (dead-code elimination, common
// subexpression elimination, constant folding, simplification of view
// chains, transposes folded into matrix products, fused user-defined ops
// recovered from their composites), and the pipeline that runs them
// (Optimize).
package compiler
