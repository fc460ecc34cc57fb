package tree

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/treeimpl"
)

// flat flattens t for op, panicking with *peel.Error on an invalid tree.
func flat(op string, t any) ([]*peel.Tensor, *treeimpl.Def) {
	return treeimpl.Flatten(op, t)
}

// build rebuilds a tree of def's structure (and A's type) from leaves.
func build[A any](op string, def *treeimpl.Def, leaves []*peel.Tensor) A {
	if len(leaves) != def.NumLeaves() {
		treeimpl.Errorf(op, "the tree has %d leaves, got %d", def.NumLeaves(), len(leaves))
	}
	for i, l := range leaves {
		if l == nil {
			treeimpl.Errorf(op, "%s is a nil tensor", def.LeafName("the tree (one tensor)", i))
		}
	}
	return def.Unflatten(leaves).Interface().(A)
}

// Leaves returns the tensor leaves of tree t in tree order (slice and
// array index, sorted map key, struct field order). It panics with
// *peel.Error if t is not a valid tree.
func Leaves(t any) []*peel.Tensor {
	leaves, _ := flat("tree.Leaves", t)
	return leaves
}

// Paths returns the paths of t's leaves in tree order: ".W" for a struct
// field, "[1]" for a slice or array element, `["k"]` for a map entry,
// concatenated from the root ("[0].W"); "" for a tree that is one
// tensor. It panics as Leaves does.
func Paths(t any) []string {
	_, def := flat("tree.Paths", t)
	return append([]string(nil), def.Paths()...)
}

// Unflatten returns a tree with like's structure and static parts whose
// leaves are leaves, in tree order. It panics with *peel.Error if like is
// not a valid tree, or leaves has the wrong length or a nil tensor.
func Unflatten[A any](like A, leaves []*peel.Tensor) A {
	const op = "tree.Unflatten"
	_, def := flat(op, like)
	return build[A](op, def, leaves)
}

// Map returns the tree of f applied to every leaf of t, with t's
// structure and static parts. It panics with *peel.Error if t is not a
// valid tree or f returns nil.
func Map[A any](f func(*peel.Tensor) *peel.Tensor, t A) A {
	const op = "tree.Map"
	leaves, def := flat(op, t)
	out := make([]*peel.Tensor, len(leaves))
	for i, l := range leaves {
		out[i] = f(l)
	}
	return build[A](op, def, out)
}

// Map2 returns the tree of f applied to the corresponding leaves of a
// and b, with a's structure and static parts: tree.Map2(func(p, g
// *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(0.1)) }, params, grads)
// is one SGD step. It panics with *peel.Error if a tree is invalid, the
// two differ in structure, or f returns nil.
func Map2[A any](f func(a, b *peel.Tensor) *peel.Tensor, a, b A) A {
	const op = "tree.Map2"
	all, def := flatAll(op, []A{a, b})
	out := make([]*peel.Tensor, def.NumLeaves())
	for i := range out {
		out[i] = f(all[0][i], all[1][i])
	}
	return build[A](op, def, out)
}

// Map3 is Map2 for three trees of one structure (a, b and c): an
// optimizer's update of params from grads and a state. It panics as Map2
// does.
func Map3[A any](f func(a, b, c *peel.Tensor) *peel.Tensor, a, b, c A) A {
	const op = "tree.Map3"
	all, def := flatAll(op, []A{a, b, c})
	out := make([]*peel.Tensor, def.NumLeaves())
	for i := range out {
		out[i] = f(all[0][i], all[1][i], all[2][i])
	}
	return build[A](op, def, out)
}

// MapN returns the tree of f applied to the corresponding leaves of
// trees ts (f gets one leaf of each, in order), with the first tree's
// structure and static parts: tree.MapN(func(x []*peel.Tensor)
// *peel.Tensor { return peel.Sub(x[0], peel.Mul(x[1], 0.1)) }, params,
// grads) is one SGD step. It panics with *peel.Error if ts is empty, a
// tree is invalid, the trees differ in structure, or f returns nil.
func MapN[A any](f func(leaves []*peel.Tensor) *peel.Tensor, ts ...A) A {
	const op = "tree.MapN"
	if len(ts) == 0 {
		treeimpl.Errorf(op, "no trees")
	}
	all, def := flatAll(op, ts)
	out := make([]*peel.Tensor, def.NumLeaves())
	args := make([]*peel.Tensor, len(ts))
	for i := range out {
		for k := range ts {
			args[k] = all[k][i]
		}
		out[i] = f(args)
	}
	return build[A](op, def, out)
}

// flatAll flattens trees of one structure.
func flatAll[A any](op string, ts []A) ([][]*peel.Tensor, *treeimpl.Def) {
	all := make([][]*peel.Tensor, len(ts))
	var def *treeimpl.Def
	for k, t := range ts {
		leaves, d := flat(op, t)
		if k == 0 {
			def = d
		} else if msg := treeimpl.StructureDiff(ts[0], t); msg != "" {
			treeimpl.Errorf(op, "tree %d differs in structure from tree 0: %s", k, msg)
		}
		all[k] = leaves
	}
	return all, def
}

// Stack returns one tree whose every leaf is the corresponding leaves of
// ts stacked along a new leading axis (JAX's tree_map(jnp.stack)): the
// parameters of an ensemble of models, to Vmap over. It panics with
// *peel.Error if ts is empty, the trees differ in structure, or the
// corresponding leaves differ in shape or dtype.
func Stack[A any](ts []A) A {
	const op = "tree.Stack"
	if len(ts) == 0 {
		treeimpl.Errorf(op, "no trees to stack")
	}
	all, def := flatAll(op, ts)
	out := make([]*peel.Tensor, def.NumLeaves())
	for i := range out {
		col := make([]*peel.Tensor, len(ts))
		for k := range ts {
			col[k] = all[k][i]
			if col[k].DType() != col[0].DType() || !slices.Equal(col[k].Shape(), col[0].Shape()) {
				treeimpl.Errorf(op, "%s is %s in tree %d but %s in tree 0", def.LeafName("the tree (one tensor)", i), col[k].TypeString(), k, col[0].TypeString())
			}
		}
		out[i] = peel.Stack(col, 0)
	}
	return build[A](op, def, out)
}

// Unstack is the inverse of Stack: the trees whose leaves are t's leaves
// indexed along their leading axis, one tree per index. It panics with
// *peel.Error if t is not a valid tree, has no leaves, or its leaves are
// rank 0 or differ in their leading size.
func Unstack[A any](t A) []A {
	const op = "tree.Unstack"
	leaves, def := flat(op, t)
	if len(leaves) == 0 {
		treeimpl.Errorf(op, "the tree has no leaves to unstack")
	}
	n := -1
	for i, l := range leaves {
		if l.Rank() == 0 {
			treeimpl.Errorf(op, "%s is a scalar (%s): it has no leading axis", def.LeafName("the tree (one tensor)", i), l.TypeString())
		}
		if n >= 0 && l.Shape()[0] != n {
			treeimpl.Errorf(op, "%s has leading size %d, but %s has %d", def.LeafName("the tree (one tensor)", i), l.Shape()[0], def.LeafName("the tree (one tensor)", 0), n)
		}
		n = l.Shape()[0]
	}
	out := make([]A, n)
	for j := range out {
		row := make([]*peel.Tensor, len(leaves))
		for i, l := range leaves {
			row[i] = peel.Select(l, 0, j)
		}
		out[j] = build[A](op, def, row)
	}
	return out
}

// Ravel returns every leaf of t flattened and concatenated in tree order
// into one vector (of the leaves' promoted dtype), and the function that
// maps such a vector back to a tree of t's structure, shapes and dtypes
// (JAX's ravel_pytree): for optimizers and solvers that work on one
// flat vector. It panics with *peel.Error if t is not a valid tree or has
// no leaves; the returned function panics with *peel.Error for a vector
// of another shape.
func Ravel[A any](t A) (*peel.Tensor, func(*peel.Tensor) A) {
	const op = "tree.Ravel"
	leaves, def := flat(op, t)
	if len(leaves) == 0 {
		treeimpl.Errorf(op, "the tree has no leaves to ravel")
	}
	parts := make([]*peel.Tensor, len(leaves))
	type leafType struct {
		shape []int
		dtype peel.DType
		off   int
	}
	types := make([]leafType, len(leaves))
	off := 0
	for i, l := range leaves {
		parts[i] = peel.Reshape(l, l.Size())
		types[i] = leafType{l.Shape(), l.DType(), off}
		off += l.Size()
	}
	vec := peel.Concat(parts, 0)
	n, dt := off, vec.DType()
	unravel := func(v *peel.Tensor) A {
		if v == nil || v.Rank() != 1 || v.Shape()[0] != n {
			treeimpl.Errorf("tree.Ravel", "unravel takes a vector of %d elements, got %s", n, typeString(v))
		}
		if v.DType() != dt {
			treeimpl.Errorf("tree.Ravel", "unravel takes a %v vector, got %s", dt, v.TypeString())
		}
		out := make([]*peel.Tensor, len(types))
		for i, lt := range types {
			size := 1
			for _, d := range lt.shape {
				size *= d
			}
			out[i] = peel.AsType(peel.Reshape(peel.Slice(v, 0, lt.off, lt.off+size, 1), lt.shape...), lt.dtype)
		}
		return build[A]("tree.Ravel", def, out)
	}
	return vec, unravel
}

func typeString(v *peel.Tensor) string {
	if v == nil {
		return "a nil tensor"
	}
	return v.TypeString()
}

// ZerosLike returns a tree of t's structure whose leaves are zeros of
// t's leaves' shapes and dtypes. It panics as Leaves does.
func ZerosLike[A any](t A) A { return Map(peel.ZerosLike, t) }

// OnesLike returns a tree of t's structure whose leaves are ones of t's
// leaves' shapes and dtypes. It panics as Leaves does.
func OnesLike[A any](t A) A { return Map(peel.OnesLike, t) }

// SameStructure reports whether trees a and b have the same structure:
// types, lengths, map keys and nil-ness of every node (not the leaves'
// shapes). When they differ, the string says where. It panics with
// *peel.Error if either is not a valid tree.
func SameStructure(a, b any) (bool, string) {
	flat("tree.SameStructure", a)
	flat("tree.SameStructure", b)
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false, fmt.Sprintf("the trees have types %T and %T", a, b)
	}
	msg := treeimpl.StructureDiff(a, b)
	return msg == "", msg
}

// GlobalNorm returns the Euclidean norm of all of t's leaves together,
// √(Σ over leaves of Σ x²), as optax.global_norm does: a scalar of the
// leaves' promoted dtype (float32 for a tree without leaves, whose norm
// is 0). Gradient clipping by global norm scales every leaf by
// min(1, c/GlobalNorm(grads)). It panics with *peel.Error if t is not a
// valid tree.
func GlobalNorm[A any](t A) *peel.Tensor {
	leaves, _ := flat("tree.GlobalNorm", t)
	if len(leaves) == 0 {
		return peel.Zeros(peel.Float32)
	}
	var sq *peel.Tensor
	for _, l := range leaves {
		s := peel.Sum(peel.Square(l))
		if sq == nil {
			sq = s
		} else {
			sq = peel.Add(sq, s)
		}
	}
	return peel.Sqrt(sq)
}

// Keys returns a tree with t's structure whose leaves are independent
// PRNG keys split from key, one per leaf in tree order (leaf i gets row
// i of peel.SplitKeysStacked(key, n)): JAX's random.split(key, n) zipped with
// the leaves, for initializing or perturbing every parameter with a key
// of its own. It panics with *peel.Error if t is not a valid tree or key
// is not a key.
func Keys[A any](key *peel.Tensor, t A) A {
	const op = "tree.Keys"
	leaves, def := flat(op, t)
	return build[A](op, def, peel.SplitKeys(key, len(leaves)))
}
