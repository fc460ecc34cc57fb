// Package treeimpl is the tree engine shared by the transforms and the
// public tree package: flattening Go values into tensor leaves (with
// paths), rebuilding them, and comparing structures, with one set of
// rules and errors.
package treeimpl

import (
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// Trees. Transforms take and return trees: any Go value built of
// *peel.Tensor leaves, slices, arrays, string-keyed maps, pointers,
// interfaces and structs of exported fields. Leaves are ordered by slice
// and array index, sorted map key and field order.
//
// Other values are static: they are kept as they are, shared with the
// argument, and never differentiated or mapped. They are the values whose
// type cannot hold a tensor (numbers, strings, []float64, configs), the
// unexported fields that hold no tensor, and functions and channels.
//
// A tensor in an unexported field, directly or anywhere below it, is an
// error: transforms cannot read or rebuild unexported fields (JAX
// refuses unregistered leaves the same way), so the tensor would silently
// be a constant and come back as its own derivative.
//
// A tree must be finite: a pointer, slice or map reached again inside
// itself (a cycle) is an error unless its type cannot hold a tensor. A
// node reached twice by different paths (a DAG) is two subtrees, as in
// JAX, which has no sharing: each occurrence has its own leaves and is
// rebuilt as its own copy.

// TensorType is the type of a tree leaf.
var TensorType = reflect.TypeOf((*peel.Tensor)(nil))

// Def records a tree's structure so its leaves can be replaced.
type Def struct {
	typ    reflect.Type
	proto  reflect.Value // the original value, for static parts
	leaves int
	desc   string
	// nilLeaves: the tree was flattened as an AuxTree, whose nil tensors
	// are leaves; elsewhere a nil tensor is an empty subtree.
	nilLeaves bool
	// paths are the leaves' paths (".W", "[1]", `["k"]`; "" for a tree
	// that is one tensor), for error messages.
	paths []string
}

// leafName names leaf i of a tree in errors: "leaf .W", "leaf [1].b", or
// what for the whole tree when it is one tensor ("the argument"). A nil
// def names the leaf by number.
func (d *Def) LeafName(what string, i int) string {
	if d == nil || i >= len(d.paths) {
		return fmt.Sprintf("leaf %d", i)
	}
	if d.paths[i] == "" {
		return what
	}
	return "leaf " + d.paths[i]
}

// Role says what a tree is to the transform, for its error messages.
type Role uint8

const (
	// ArgTree is an argument (or tangent, cotangent) given to a transform.
	ArgTree Role = iota
	// ResultTree is what the user's function returned.
	ResultTree
	// AuxTree is a tree whose nil tensors are leaves, not empty subtrees:
	// GradAux's auxiliary data, a tangent or cotangent whose nil leaves
	// are zeros (ProjectLeaves), a type's zero value.
	AuxTree
)

// Flatten returns the tensor leaves of v, an argument of op's transform,
// in a fixed order (slice and array order, sorted map keys, struct field
// order) and its structure. It panics with *Error naming op for a nil
// tree or leaf, a tensor in an unexported field, a cycle, or an
// unsupported map.
func Flatten(op string, v any) ([]*peel.Tensor, *Def) {
	return FlattenAs(op, v, ArgTree)
}

// FlattenResult is Flatten for the result of the user's function: a nil
// tree or leaf is reported as the function returning nil.
func FlattenResult(op string, v any) ([]*peel.Tensor, *Def) {
	return FlattenAs(op, v, ResultTree)
}

func FlattenAs(op string, v any, role Role) ([]*peel.Tensor, *Def) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		if role == ResultTree {
			Errorf(op, "the function returned nil, not a tree of tensors")
		}
		Errorf(op, "the tree is nil")
	}
	var leaves []*peel.Tensor
	var paths []string
	w := walker{op: op, role: role, leaf: func(p string, t *peel.Tensor) {
		leaves = append(leaves, t)
		paths = append(paths, p)
	}}
	w.walk(rv, "")
	return leaves, &Def{typ: rv.Type(), proto: rv, leaves: len(leaves), desc: Describe(rv.Type()), paths: paths, nilLeaves: role == AuxTree}
}

// Static is a static part of a tree: its path and its value printed
// (%#v), which identifies it in a cache key.
type Static struct{ Path, Value string }

// FlattenStatics is Flatten that also returns the tree's static parts in
// walk order, for keying caches of traced functions by value.
func FlattenStatics(op string, v any) ([]*peel.Tensor, *Def, []Static) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		Errorf(op, "the tree is nil")
	}
	var (
		leaves  []*peel.Tensor
		paths   []string
		statics []Static
	)
	w := walker{op: op, role: ArgTree,
		leaf: func(p string, t *peel.Tensor) {
			leaves = append(leaves, t)
			paths = append(paths, p)
		},
		static: func(p string, v reflect.Value) {
			statics = append(statics, Static{Path: p, Value: fmt.Sprintf("%#v", v)})
		}}
	w.walk(rv, "")
	return leaves, &Def{typ: rv.Type(), proto: rv, leaves: len(leaves), desc: Describe(rv.Type()), paths: paths}, statics
}

func Errorf(op, format string, args ...any) {
	e := interp.Errorf(format, args...)
	e.Ops = []string{op}
	panic(e)
}

// walk calls leaf with every tensor leaf of v (the subtree at path) in
// tree order, with the rules and errors of Flatten.
func Walk(op string, v reflect.Value, path string, leaf func(path string, t *peel.Tensor)) {
	w := walker{op: op, leaf: leaf}
	w.walk(v, path)
}

// walker walks a tree's exported part. stack holds the pointers, slices
// and maps on the path from the root to the current node, so a node met
// again below itself is reported as a cycle (a node met again elsewhere,
// in a DAG, is walked again).
type walker struct {
	op    string
	role  Role
	leaf  func(path string, t *peel.Tensor)
	stack []pathNode
	// static, when set, is called for every static part (a value whose
	// type cannot hold a tensor, an unexported field holding none).
	static func(path string, v reflect.Value)
}

type pathNode struct {
	ref  nodeRef
	path string
}

// nodeRef identifies a pointer, map or slice node: a slice is the same
// node only with the same start and length.
type nodeRef struct {
	typ reflect.Type
	ptr uintptr
	n   int
}

func (w *walker) walk(v reflect.Value, path string) {
	t := v.Type()
	if t == TensorType {
		if v.IsNil() {
			// A nil tensor is an empty subtree (JAX's None): no leaf, and
			// rebuilt as nil. A function whose whole result is one nil
			// tensor returned nothing. In an AuxTree it is a leaf (a zero
			// tangent, a nil aux tensor), rebuilt from the leaves.
			switch {
			case w.role == ResultTree && path == "":
				Errorf(w.op, "the function returned a nil tensor at result path %s", PathOr(path))
			case w.role == ArgTree && path == "":
				Errorf(w.op, "tree leaf %s is a nil tensor: inside a tree a nil tensor is an empty subtree, but it is not a tree itself", PathOr(path))
			case w.role == AuxTree:
				w.leaf(path, nil)
			}
			return
		}
		w.leaf(path, v.Interface().(*peel.Tensor))
		return
	}
	if t == TensorType.Elem() {
		Errorf(w.op, "tree node %s is a peel.Tensor value: trees hold *peel.Tensor", PathOr(path))
	}
	if !mayHoldTensor(t) {
		if w.static != nil {
			w.static(path, v)
		}
		return // static
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		tracked := v.Kind() == reflect.Slice && v.Len() > 0
		if tracked {
			w.push(nodeRef{t, v.Pointer(), v.Len()}, path)
		}
		for i := 0; i < v.Len(); i++ {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		if tracked {
			w.pop()
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			Errorf(w.op, "tree node %s is a map with %v keys; only string keys are supported", PathOr(path), t.Key())
		}
		if v.IsNil() {
			return
		}
		w.push(nodeRef{t, v.Pointer(), 0}, path)
		for _, k := range SortedKeys(v) {
			w.walk(v.MapIndex(k), fmt.Sprintf("%s[%q]", path, k.String()))
		}
		w.pop()
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fp := FieldPath(path, f)
			if f.IsExported() {
				w.walk(v.Field(i), fp)
				continue
			}
			at, ok := hiddenTensor(v.Field(i), fp)
			if !ok && w.static != nil {
				w.static(fp, v.Field(i))
			}
			if ok {
				where := "holds a tensor"
				if at != fp {
					where = "holds a tensor at " + at
				}
				Errorf(w.op, "unexported field %s of %v %s, which transforms cannot read or rebuild (it would be a constant, returned as its own derivative): export the field, or pass the tensor outside the struct", fp, t, where)
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		w.push(nodeRef{t, v.Pointer(), 0}, path)
		w.walk(v.Elem(), path)
		w.pop()
	case reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem(), path)
		}
	}
}

// push puts node (at path) on the walker's stack, panicking with *Error
// if it is already there (a cycle). A panic abandons the walker, so pop
// need not be deferred.
func (w *walker) push(node nodeRef, path string) {
	for _, n := range w.stack {
		if n.ref == node {
			Errorf(w.op, "tree node %s is %s again, a %v inside itself (a cycle): trees must be finite", PathOr(path), PathOr(n.path), node.typ)
		}
	}
	w.stack = append(w.stack, pathNode{node, path})
}

func (w *walker) pop() { w.stack = w.stack[:len(w.stack)-1] }

// hiddenTensor reports whether a non-nil tensor is reachable from v, the
// value of an unexported field at path (including through further
// unexported fields, map keys and interfaces), and the path of the first
// one. Values are visited once, so cycles and sharing are harmless.
func hiddenTensor(v reflect.Value, path string) (string, bool) {
	var seen map[nodeRef]bool
	var find func(v reflect.Value, path string) (string, bool)
	visit := func(n nodeRef) bool {
		if seen[n] {
			return false
		}
		if seen == nil {
			seen = map[nodeRef]bool{}
		}
		seen[n] = true
		return true
	}
	find = func(v reflect.Value, path string) (string, bool) {
		t := v.Type()
		if t == TensorType {
			return path, !v.IsNil()
		}
		if t == TensorType.Elem() || !mayHoldTensor(t) {
			return path, t == TensorType.Elem()
		}
		switch v.Kind() {
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && (v.Len() == 0 || !visit(nodeRef{t, v.Pointer(), v.Len()})) {
				return "", false
			}
			for i := 0; i < v.Len(); i++ {
				if p, ok := find(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); ok {
					return p, true
				}
			}
		case reflect.Map:
			if v.IsNil() || !visit(nodeRef{t, v.Pointer(), 0}) {
				return "", false
			}
			it := v.MapRange()
			for it.Next() {
				kp := fmt.Sprintf("%s[%v]", path, it.Key())
				if it.Key().Kind() == reflect.String {
					kp = fmt.Sprintf("%s[%q]", path, it.Key().String())
				}
				if p, ok := find(it.Key(), kp+" (a key)"); ok {
					return p, true
				}
				if p, ok := find(it.Value(), kp); ok {
					return p, true
				}
			}
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				if p, ok := find(v.Field(i), FieldPath(path, t.Field(i))); ok {
					return p, true
				}
			}
		case reflect.Pointer:
			if v.IsNil() || !visit(nodeRef{t, v.Pointer(), 0}) {
				return "", false
			}
			return find(v.Elem(), path)
		case reflect.Interface:
			if !v.IsNil() {
				return find(v.Elem(), path)
			}
		}
		return "", false
	}
	return find(v, path)
}

// holders caches mayHoldTensor by type.
var holders sync.Map // reflect.Type → bool

// mayHoldTensor reports whether a value of type t can reach a
// *peel.Tensor: t is the tensor type, an interface, or is built of such
// types (through pointers, slices, arrays, maps and struct fields,
// exported or not). Values of other types are static.
func mayHoldTensor(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String,
		reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return false
	case reflect.Interface:
		return true
	}
	if t == TensorType {
		return true
	}
	if v, ok := holders.Load(t); ok {
		return v.(bool)
	}
	// Reachability in the type graph; a type met again adds nothing (a
	// true anywhere returns at once).
	seen := map[reflect.Type]bool{}
	var reach func(t reflect.Type) bool
	reach = func(t reflect.Type) bool {
		if t == TensorType || t.Kind() == reflect.Interface {
			return true
		}
		if seen[t] {
			return false
		}
		seen[t] = true
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			return reach(t.Elem())
		case reflect.Map:
			return reach(t.Key()) || reach(t.Elem())
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				if reach(t.Field(i).Type) {
					return true
				}
			}
		}
		return false
	}
	r := reach(t)
	holders.Store(t, r)
	return r
}

func PathOr(p string) string {
	if p == "" {
		return "(the root)"
	}
	return p
}

func SortedKeys(v reflect.Value) []reflect.Value {
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// unflatten builds a value shaped like the tree def with leaves in order.
func (d *Def) Unflatten(leaves []*peel.Tensor) reflect.Value {
	r := rebuilder{leaves: leaves, nilLeaves: d.nilLeaves}
	return r.rebuild(d.proto)
}

// rebuilder puts leaves, in order, where a tree's tensors are.
type rebuilder struct {
	leaves    []*peel.Tensor
	i         int
	nilLeaves bool // nil tensors are leaves (AuxTree), not empty subtrees
}

func (r *rebuilder) rebuild(v reflect.Value) reflect.Value {
	leaves, i := r.leaves, &r.i
	t := v.Type()
	if t == TensorType {
		if v.IsNil() && !r.nilLeaves {
			return v // an empty subtree
		}
		l := leaves[*i]
		*i++
		return reflect.ValueOf(l)
	}
	if !mayHoldTensor(t) {
		return v // static, shared
	}
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for k := 0; k < v.Len(); k++ {
			out.Index(k).Set(r.rebuild(v.Index(k)))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for k := 0; k < v.Len(); k++ {
			out.Index(k).Set(r.rebuild(v.Index(k)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		for _, k := range SortedKeys(v) {
			out.SetMapIndex(k, r.rebuild(v.MapIndex(k)))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v) // static fields, including unexported ones (which hold no tensor)
		for k := 0; k < t.NumField(); k++ {
			if t.Field(k).IsExported() {
				out.Field(k).Set(r.rebuild(v.Field(k)))
			}
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(r.rebuild(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(r.rebuild(v.Elem()))
		return out
	}
	return v
}

func Describe(t reflect.Type) string { return t.String() }

// MayHoldTensor reports whether a value of type t can hold a tensor
// leaf; the others are static parts of a tree.
func MayHoldTensor(t reflect.Type) bool { return mayHoldTensor(t) }

// FieldPath is the path of struct field f below path: path + "." + the
// field's name, or path + the field's `peeltree` tag when it has one (the
// transforms' positional-argument tuples name their fields "args[0]", …).
func FieldPath(path string, f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("peeltree"); ok {
		return path + tag
	}
	return path + "." + f.Name
}

// SameStructure panics with *Error naming op when two trees, both
// flattened already, differ in structure (type, lengths, map keys) in
// their parts that can hold tensors.
// StructureDiff describes the first difference in structure between
// trees a and b ("" when they have the same structure; leaf shapes are
// not compared).
func StructureDiff(a, b any) string {
	return structDiff(reflect.ValueOf(a), reflect.ValueOf(b), "", true)
}

func SameStructure(op string, a, b any) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if msg := structDiff(va, vb, "", true); msg != "" {
		Errorf(op, "trees differ in structure: %s", msg)
	}
}

// ProjectLeaves returns the tensors of v, a tangent or cotangent of ref
// whose nil tensors are zeros, at ref's leaves (nil: zero): v must have
// ref's structure, a nil tensor standing for any tensor, and be nil
// where ref has an empty subtree (a nil tensor). Otherwise it returns
// the first difference, and no leaves.
func ProjectLeaves(op string, ref, v any) ([]*peel.Tensor, string) {
	if d := structDiff(reflect.ValueOf(ref), reflect.ValueOf(v), "", false); d != "" {
		return nil, d
	}
	rl, rdef := FlattenAs(op, ref, AuxTree)
	vl, _ := FlattenAs(op, v, AuxTree)
	out := make([]*peel.Tensor, 0, len(rl))
	for i, l := range rl {
		if l == nil {
			if vl[i] != nil {
				return nil, PathOr(rdef.paths[i]) + " is a nil tensor (an empty subtree) in one tree and a tensor in the other"
			}
			continue
		}
		out = append(out, vl[i])
	}
	return out, ""
}

// structDiff describes the first difference between a and b; strict
// also compares which tensors are nil (empty subtrees).
func structDiff(a, b reflect.Value, path string, strict bool) string {
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			return PathOr(path) + " is nil in one tree"
		}
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s has type %v in one tree and %v in the other", PathOr(path), a.Type(), b.Type())
	}
	if a.Type() == TensorType {
		if strict && a.IsNil() != b.IsNil() {
			return PathOr(path) + " is a nil tensor (an empty subtree) in one tree and a tensor in the other"
		}
		return ""
	}
	if !mayHoldTensor(a.Type()) {
		return ""
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s has length %d in one tree and %d in the other", PathOr(path), a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if m := structDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), strict); m != "" {
				return m
			}
		}
	case reflect.Map:
		ka, kb := SortedKeys(a), SortedKeys(b)
		if len(ka) != len(kb) {
			return fmt.Sprintf("%s has %d keys in one tree and %d in the other", PathOr(path), len(ka), len(kb))
		}
		for i := range ka {
			if ka[i].String() != kb[i].String() {
				return fmt.Sprintf("%s has key %q in one tree and %q in the other", PathOr(path), ka[i].String(), kb[i].String())
			}
			if m := structDiff(a.MapIndex(ka[i]), b.MapIndex(kb[i]), fmt.Sprintf("%s[%q]", path, ka[i].String()), strict); m != "" {
				return m
			}
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if a.Type().Field(i).IsExported() {
				if m := structDiff(a.Field(i), b.Field(i), FieldPath(path, a.Type().Field(i)), strict); m != "" {
					return m
				}
			}
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return PathOr(path) + " is nil in one tree"
		}
		if !a.IsNil() {
			return structDiff(a.Elem(), b.Elem(), path, strict)
		}
	}
	return ""
}

// Proto returns the original value the tree was flattened from (for its
// static parts and structure).
func (d *Def) Proto() reflect.Value { return d.proto }

// Paths returns the leaves' paths in tree order.
func (d *Def) Paths() []string { return d.paths }

// NumLeaves returns the number of tensor leaves.
func (d *Def) NumLeaves() int { return d.leaves }
