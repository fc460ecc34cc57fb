package transforms

import (
	"reflect"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/treeimpl"
)

// The tree rules live in internal/treeimpl, shared with package tree;
// these are the transforms' short names for them.

type treeDef = treeimpl.Def

const auxTree = treeimpl.AuxTree

var tensorType = treeimpl.TensorType

func flatten(op string, v any) ([]*peel.Tensor, *treeDef) { return treeimpl.Flatten(op, v) }

func flattenResult(op string, v any) ([]*peel.Tensor, *treeDef) {
	return treeimpl.FlattenResult(op, v)
}

func flattenAs(op string, v any, role treeimpl.Role) ([]*peel.Tensor, *treeDef) {
	return treeimpl.FlattenAs(op, v, role)
}

func treeErrorf(op, format string, args ...any) { treeimpl.Errorf(op, format, args...) }

func walk(op string, v reflect.Value, path string, leaf func(path string, t *peel.Tensor)) {
	treeimpl.Walk(op, v, path, leaf)
}

func sameStructure(op string, a, b any) { treeimpl.SameStructure(op, a, b) }

func pathOr(p string) string { return treeimpl.PathOr(p) }

func sortedKeys(v reflect.Value) []reflect.Value { return treeimpl.SortedKeys(v) }

// needFunc panics with *peel.Error naming op when f, the function a
// transform is given, is nil: the transform never calls a nil function
// (a bare runtime panic, later, inside the trace).
func needFunc(op string, f any) {
	if v := reflect.ValueOf(f); !v.IsValid() || (v.Kind() == reflect.Func && v.IsNil()) {
		treeErrorf(op, "the function is nil")
	}
}
