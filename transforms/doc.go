// Package transforms holds peel's function transforms: differentiation
// (Grad, VJP, JVP, Linearize, the Jacobians, Hessian, over the
// interpreters of package autodiff), Vmap (package batching),
// Functionalize (package functionalize), MakeGraph and Compile (package
// compiler), and the primitives of control flow, checkpointing, custom
// rules and hooks, whose rules are closures over that machinery.
//
// Transforms take and return trees: a *peel.Tensor, or slices, arrays,
// string-keyed maps, pointers, interfaces and structs (exported fields)
// of them; other values in a tree (numbers, strings, values whose type
// cannot hold a tensor, unexported fields that hold no tensor) are
// static and kept as they are. A nil tensor is an empty subtree (JAX's
// None: no leaf, and nil again in the result's structure). A tensor
// anywhere under an unexported field is an error (a *peel.Error naming
// the field's path), as is a cycle (a pointer, slice or map inside
// itself); a node reached twice is two subtrees, as in JAX. The aux of
// GradAux, VJPAux, JVPAux and LinearizeAux (JAX's has_aux) is a tree
// too, returned with the values of its leaves, never differentiated.
// Every transform given a nil function panics with a *peel.Error naming
// it.
//
// # Several arguments
//
// Every transform that takes a function has forms for functions of two
// to five positional arguments, named by the count (as in iter.Seq2):
// Grad2 … Grad5, and likewise ValueAndGrad, GradAux, GradArgs,
// ValueAndGradArgs, VJP, VJPAux, JVP, JVPAux, Linearize, LinearizeAux,
// Jacrev, Jacfwd, JacrevAux, JacfwdAux, JacrevArgs, JacfwdArgs,
// Hessian, Vmap, Functionalize, Checkpoint, MakeGraph, Compile,
// ShardMap, CustomJVP, CustomVJP, Export and ExportedFunc, and the At
// forms Grad2At … Grad5At, Jacrev, Jacfwd and Hessian. (The forms over
// tree results, JacrevTree, JacfwdTree, HessianTree and HVP, take one
// argument: a struct of several.) They are written once, by a generator
// (arity_gen.go; go generate ./transforms), and all follow one pattern: the arguments are one tuple whose leaf paths
// read args[0].W, args[1], … in errors, and whose options name
// arguments by position (InAxes and Vmap's specs, Donate,
// StaticArgnums, Argnums; a negative index counts from the end). A
// second derivative is Grad(Grad(f)), not Grad2.
//
// The gradient and Jacobian forms differentiate the first argument
// (JAX's default argnums=0) and hold the others constant, which may hold
// integer tensors such as labels; so they compose with the Vmap forms
// directly. The At forms (Grad2At, Jacrev2At, …) differentiate one
// other argument and return its derivative alone, so they compose too
// (the type parameter names the argument's type):
//
//	hess := Jacfwd2At[*peel.Tensor](Jacrev2At[*peel.Tensor](u, 1), 1) // u(params, x): ∂²u/∂x²
//
// The Args forms (GradArgs2, ValueAndGradArgs2, JacrevArgs2, …)
// differentiate the arguments Argnums selects (all by default) and
// return one result per argument, the type's zero value for one not
// selected. VJP's pullback returns one cotangent per argument; JVP
// takes one tangent per argument, a zero value meaning a zero tangent;
// CustomJVP's rule takes the primals and then the tangents, CustomVJP's
// backward pass returns one cotangent per argument. Several results are
// one tree: a struct, or tree.Tuple2 … Tuple4. Per-sample gradients:
//
//	grads := Vmap3(Grad3(loss), InAxes(NoAxis, 0, 0))(params, x, y)
//
// Jacobians take trees: Jacrev(f)(params) has params' structure, each
// leaf of shape f(params).shape + leaf.shape; JacrevTree and JacfwdTree
// take tree results (one such Jacobian per result leaf), JacrevAux and
// JacfwdAux auxiliary data, HessianTree the blocks of a Hessian over a
// tree, and HVP a tree direction.
//
// Custom derivative rules take trees too: CustomJVP gives a function of
// a tree its own forward-mode rule, CustomVJP a forward pass saving
// residuals (any tree) and a backward pass returning a cotangent of the
// argument's structure, and CustomJVP2 … and CustomVJP2 … do so for
// positional arguments. Static fields are arguments that are not
// differentiated, int and bool leaves get no derivatives, and the rules
// apply under every transform (under Vmap, to the batch).
//
// Compile (Compile2 … Compile5) traces a function once per input
// signature, optimizes the graph with package compiler and runs the
// program on later calls. The compiled function is a Go function of the
// same signature; an Inspector (the Inspect option) reads its cache
// statistics and explains its program. A compiled function is one primitive
// (compiled_call) to the transforms above it, so it composes with all of
// them in both orders. A function that reads traced values runs in
// compiled segments (graph breaks; Opaque marks a function to run as Go
// code always).
//
// Export (Export2 …) writes a traced, optimized program as bytes in a
// versioned format (docs/export-format.md); LoadExported reads it back,
// in a process without the function's code, as an Exported program that
// runs compiled and is a compiled call to the transforms above it.
//
// Checkpoint (and the Remat gradient option) choose what a gradient
// saves for its backward pass and what it recomputes, with a SavePolicy
// (MinCut is AOTAutograd's partitioner); SavedResiduals and Recomputed
// report the choice; Compile's GradRemat option sets a policy for every
// gradient traced in a compiled function. CompileBackward compiles only
// the backward pass.
// Hook and OnGradient are backward hooks on values and on final
// gradients.
//
// Cond and Switch are control flow on a tensor predicate or index that
// stays inside a compiled program and under Vmap: each branch is traced
// into a graph held by one cond primitive, which runs only the taken
// branch (with a batched predicate, every branch, selected per lane).
// Scan (JAX's lax.scan) and ForiLoop are loops traced once into one scan
// primitive: compiled, vmapped and differentiated without unrolling (a
// gradient is a forward scan and a reverse scan of the body's
// transpose). WhileLoop (JAX's lax.while_loop) loops while a predicate on
// the carry holds: one while primitive holding the predicate's and the
// body's graphs, so a compiled program decides the number of steps when
// it runs. Forward mode (JVP, Jacfwd) goes through it; reverse mode
// (Grad, VJP, Jacrev, Hessian) is an error that points to ForiLoop or
// Scan. Under Vmap with a batched predicate it runs until every lane is
// done, a finished lane keeping its carry. Map (JAX's lax.map) applies a
// function to each slice of a leading axis, as a Scan, batchSize slices
// per step with Vmap.
//
// Options follow one style: each family has its option interface
// (VmapOption, JacobianOption, GradOption, GradArgsOption,
// FunctionalizeOption, GraphOption, CompileOption), and an option
// meaning the same to several (ChunkSize, Argnums, the GradOptions for
// GradArgs2 …) satisfies each, so an option a transform has no use for
// does not compile. Scan takes peel.ScanOption, the option type of the
// cumulative operations (peel.Cumsum, …): peel.Reverse() serves both,
// and a cumulative operation given one of Scan's own (Length, Unroll,
// StepRemat) panics with *peel.Error.
//
// In-place operations on differentiated tensors, through views too, give
// the gradient of their out-of-place forms: the autodiff interpreters
// answer them out of place at their level, writing through views with the
// views' inverses and recomputing stale aliases from their base (the
// mechanism of package functionalize). Vmap writes batched destinations
// in place and refuses a batched write into an unbatched tensor; wrap
// such code in Functionalize.
//
// Ops defined with customop.Define are primitives to every transform here:
// autodiff runs the op itself for the primal (its fused kernel) and
// derives tangents and cotangents from its composite, staged once per
// operand types and compiled (package autodiff), so the backward pass
// recomputes what it needs from the saved operands; Vmap uses the op's
// batching rule or decomposes it; MakeGraph records it as one equation
// unless given Decompose.
package transforms

//go:generate go run ./internal/genarity
