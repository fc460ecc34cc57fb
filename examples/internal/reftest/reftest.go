// Package reftest loads the stored reference numbers of the tutorial
// examples (testdata/reference.json, written by each example's
// gen_reference.py with PyTorch) and compares peel results against them.
package reftest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/tree"
)

// Value is one stored tensor: its shape and its row-major float64 data.
type Value struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// Load reads a reference file: a JSON object from names to Values.
func Load(t testing.TB, path string) map[string]Value {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]Value
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// Close reports an error unless got has want's shape and every element
// satisfies |got - want| <= atol + rtol·|want|.
func Close(t testing.TB, name string, got *peel.Tensor, want Value, rtol, atol float64) {
	t.Helper()
	if want.Data == nil {
		t.Errorf("%s: no reference value", name)
		return
	}
	shape := got.Shape()
	if !slices.Equal(shape, want.Shape) && !(len(shape) == 0 && len(want.Shape) == 0) {
		t.Errorf("%s: shape %v, reference %v", name, shape, want.Shape)
		return
	}
	g := peel.AsType(got, peel.Float64).Float64s()
	worst, at := 0.0, -1
	for i, w := range want.Data {
		d := math.Abs(g[i] - w)
		if !(d <= atol+rtol*math.Abs(w)) && (at < 0 || d > worst) {
			worst, at = d, i
		}
	}
	if at >= 0 {
		t.Errorf("%s: element %d is %.17g, reference %.17g (|diff| %.3g > atol %g + rtol %g·|ref|)",
			name, at, g[at], want.Data[at], worst, atol, rtol)
	}
}

// CloseTree compares every leaf of got with the reference named
// prefix + the leaf's path (tree.Paths), e.g. "grads.W1".
func CloseTree(t testing.TB, prefix string, got any, ref map[string]Value, rtol, atol float64) {
	t.Helper()
	leaves, paths := tree.Leaves(got), tree.Paths(got)
	if len(leaves) == 0 {
		t.Errorf("%s: no leaves", prefix)
	}
	for i, l := range leaves {
		name := prefix + paths[i]
		Close(t, name, l, ref[name], rtol, atol)
	}
}

// Name joins a prefix and an index, as the generators name list entries.
func Name(prefix string, i int) string { return fmt.Sprintf("%s%d", prefix, i) }
