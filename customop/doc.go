// Package customop defines operations of the user's own that every peel
// transform handles as one primitive.
//
// An op is defined once, by Define, from a composite: an ordinary
// function of peel operations that is its meaning. Options add what the
// composite alone cannot give:
//
//   - WithKernel: a fused kernel per backend, which eager evaluation runs
//     instead of the composite's many passes over memory;
//   - WithShapeRule: the result type from the operands' types (otherwise
//     derived by staging the composite, once per operand types);
//   - WithJVP, WithVJP: derivative rules (otherwise autodiff derives the
//     derivative from the composite, while the forward still runs the
//     fused kernel);
//   - WithBatchRule, Elementwise: how vmap batches the op (otherwise it
//     decomposes it);
//   - WithDecomposition, CompositeTraits: alternative decompositions and
//     what they need (Mutates) or who prefers them (Eager).
//
// Every option is a value of the interface type Option, made by these
// constructors; Define refuses a nil option, and an option given a nil
// function, backend or kernel, with *peel.Error.
//
// The returned *Op is called with Call; Composite runs the composite
// directly (the reference that kernels and rules are tested against). Graphs
// (transforms.MakeGraph) keep the op as one equation. Errors raised by a
// primitive while the op is decomposed name it ("while decomposing
// mylib.gelu"), under every transform and also in a backward pass.
//
// Define is meant for package-level variables of the library that
// provides the op (see examples/customop/mylib); a name can be defined
// once per process.
package customop
