package interp_test

import (
	"testing"

	"github.com/peel-ml/peel/interp"
)

type levelTag struct{ name string }

// TestFindLevelData checks that FindLevelData finds the data of the
// highest level among its tensors, ignores levels without data of its
// type and concrete tensors, and reports false when none has one.
func TestFindLevelData(t *testing.T) {
	a := interp.Aval{Shape: []int{2}, DType: interp.Float64}
	outer, inner := &levelTag{"outer"}, &levelTag{"inner"}
	var got []string
	find := func(ts ...*interp.Tensor) {
		if d, ok := interp.FindLevelData[*levelTag](ts...); ok {
			got = append(got, d.name)
		} else {
			got = append(got, "none")
		}
	}
	interp.TraceAvals("outer", func(xs []*interp.Tensor) []*interp.Tensor {
		x := xs[0]
		interp.TraceAvals("plain", func(ys []*interp.Tensor) []*interp.Tensor {
			find(ys[0])      // a level without data
			find(ys[0], x)   // the outer level's, below it
			find(nil, ys[0]) // nil tensors are skipped
			interp.TraceAvals("inner", func(zs []*interp.Tensor) []*interp.Tensor {
				find(x, zs[0]) // the higher of two
				return zs
			}, []interp.Aval{a}, interp.LevelData(inner))
			return ys
		}, []interp.Aval{a})
		find(x)
		return xs
	}, []interp.Aval{a}, interp.LevelData(outer))
	want := []string{"none", "outer", "none", "inner", "outer"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("lookup %d: %s, want %s (all %v)", i, got[i], want[i], got)
		}
	}
}
