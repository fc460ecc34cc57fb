package transforms

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// Trees. Transforms take and return trees: any Go value built of
// *peel.Tensor leaves, slices, arrays, string-keyed maps, pointers to
// structs and structs of exported fields. Other values (numbers, strings,
// unexported fields) are static: they are kept as they are and never
// differentiated or mapped.

var tensorType = reflect.TypeOf((*peel.Tensor)(nil))

// treeDef records a tree's structure so its leaves can be replaced.
type treeDef struct {
	typ    reflect.Type
	proto  reflect.Value // the original value, for static parts
	leaves int
	desc   string
}

// flatten returns the tensor leaves of v in a fixed order (slice and
// array order, sorted map keys, struct field order) and its structure.
// It panics with *Error naming op for a nil leaf or an unsupported type.
func flatten(op string, v any) ([]*peel.Tensor, *treeDef) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		treeErrorf(op, "the tree is nil")
	}
	var leaves []*peel.Tensor
	walk(op, rv, "", func(t *peel.Tensor) { leaves = append(leaves, t) })
	return leaves, &treeDef{typ: rv.Type(), proto: rv, leaves: len(leaves), desc: describe(rv.Type())}
}

func treeErrorf(op, format string, args ...any) {
	e := interp.Errorf(format, args...)
	e.Ops = []string{op}
	panic(e)
}

func walk(op string, v reflect.Value, path string, leaf func(*peel.Tensor)) {
	if v.Type() == tensorType {
		if v.IsNil() {
			treeErrorf(op, "tree leaf %s is a nil tensor", pathOr(path))
		}
		leaf(v.Interface().(*peel.Tensor))
		return
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walk(op, v.Index(i), fmt.Sprintf("%s[%d]", path, i), leaf)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			treeErrorf(op, "tree node %s is a map with %v keys; only string keys are supported", pathOr(path), v.Type().Key())
		}
		for _, k := range sortedKeys(v) {
			walk(op, v.MapIndex(k), fmt.Sprintf("%s[%q]", path, k.String()), leaf)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				walk(op, v.Field(i), path+"."+t.Field(i).Name, leaf)
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(op, v.Elem(), path, leaf)
		}
	}
}

func pathOr(p string) string {
	if p == "" {
		return "(the root)"
	}
	return p
}

func sortedKeys(v reflect.Value) []reflect.Value {
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// unflatten builds a value shaped like the tree def with leaves in order.
func (d *treeDef) unflatten(leaves []*peel.Tensor) reflect.Value {
	i := 0
	out := rebuild(d.proto, leaves, &i)
	return out
}

func rebuild(v reflect.Value, leaves []*peel.Tensor, i *int) reflect.Value {
	t := v.Type()
	if t == tensorType {
		l := leaves[*i]
		*i++
		return reflect.ValueOf(l)
	}
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for k := 0; k < v.Len(); k++ {
			out.Index(k).Set(rebuild(v.Index(k), leaves, i))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for k := 0; k < v.Len(); k++ {
			out.Index(k).Set(rebuild(v.Index(k), leaves, i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		for _, k := range sortedKeys(v) {
			out.SetMapIndex(k, rebuild(v.MapIndex(k), leaves, i))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v) // static fields, including unexported ones
		for k := 0; k < t.NumField(); k++ {
			if t.Field(k).IsExported() {
				out.Field(k).Set(rebuild(v.Field(k), leaves, i))
			}
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(rebuild(v.Elem(), leaves, i))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(rebuild(v.Elem(), leaves, i))
		return out
	}
	return v
}

func describe(t reflect.Type) string { return t.String() }

// sameStructure panics with *Error naming op when two trees differ in
// structure (type, lengths, map keys).
func sameStructure(op string, a, b any) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if msg := structDiff(va, vb, ""); msg != "" {
		treeErrorf(op, "trees differ in structure: %s", msg)
	}
}

func structDiff(a, b reflect.Value, path string) string {
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			return pathOr(path) + " is nil in one tree"
		}
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s has type %v in one tree and %v in the other", pathOr(path), a.Type(), b.Type())
	}
	if a.Type() == tensorType {
		return ""
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s has length %d in one tree and %d in the other", pathOr(path), a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if m := structDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); m != "" {
				return m
			}
		}
	case reflect.Map:
		ka, kb := sortedKeys(a), sortedKeys(b)
		if len(ka) != len(kb) {
			return fmt.Sprintf("%s has %d keys in one tree and %d in the other", pathOr(path), len(ka), len(kb))
		}
		for i := range ka {
			if ka[i].String() != kb[i].String() {
				return fmt.Sprintf("%s has key %q in one tree and %q in the other", pathOr(path), ka[i].String(), kb[i].String())
			}
			if m := structDiff(a.MapIndex(ka[i]), b.MapIndex(kb[i]), fmt.Sprintf("%s[%q]", path, ka[i].String())); m != "" {
				return m
			}
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if a.Type().Field(i).IsExported() {
				if m := structDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); m != "" {
					return m
				}
			}
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return pathOr(path) + " is nil in one tree"
		}
		if !a.IsNil() {
			return structDiff(a.Elem(), b.Elem(), path)
		}
	}
	return ""
}
