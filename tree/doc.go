// Package tree works on trees of tensors: the Go values transforms take
// and return (structs of exported fields, slices, arrays, string-keyed
// maps, pointers and interfaces, with *peel.Tensor leaves), with the same
// rules and errors the transforms use (see package transforms).
//
//   - Leaves, Paths and Unflatten take a tree apart and put it back.
//   - Map, Map2, Map3 and MapN apply a function leaf by leaf, to one tree
//     or to two, three or n of one structure (an optimizer step over
//     params and grads).
//   - Tuple2, Tuple3 and Tuple4 (Pack2… and Unpack) are trees of several
//     values, the several results of a transformed or compiled function.
//   - GlobalNorm is the 2-norm of all leaves together (optax's
//     global_norm); Keys gives every leaf its own PRNG key.
//   - Stack and Unstack turn a slice of trees into one tree of stacked
//     leaves and back (model ensembles under Vmap).
//   - Ravel flattens a tree into one vector and returns the way back.
//   - ZerosLike, OnesLike and SameStructure.
//
// A nil tensor inside a tree is an empty subtree, as JAX's None: no leaf
// and no path, and nil again where a function rebuilds the tree, so an
// optional field (a layer without bias) needs no struct of its own. Two
// trees have the same structure only with nil tensors at the same
// places. A nil tensor is not a tree by itself.
//
// A tensor in an unexported struct field is an error, never silently a
// constant; so is a cycle. Every function panics with *peel.Error on an
// invalid tree, naming the function and the leaf's path.
package tree
