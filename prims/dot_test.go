package prims_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestDotTransposeLayout checks that dot_general's transpose rule gives
// the cotangent of a weight laid out as the weight is, with no
// transpose after the product (h·W's W: its contracting dimension
// first), where one of the two orders of the product does: a transposed
// view would be copied by every sum of cotangents. Where neither order
// does (a batch dimension not first), the transpose stays.
func TestDotTransposeLayout(t *testing.T) {
	for _, c := range []struct {
		name       string
		x, y       []int // lhs, rhs shapes
		p          prims.DotParams
		linear     int // the operand transposed to
		transposes int // transposes in the rule's graph
	}{
		{"h·W, W", []int{4, 3}, []int{3, 5}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}, 1, 0},
		{"h·W, h", []int{4, 3}, []int{3, 5}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}, 0, 0},
		{"Aᵀ·B, A", []int{3, 4}, []int{3, 5}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, 0, 0},
		{"A·Bᵀ, B", []int{4, 3}, []int{5, 3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}}, 1, 0},
		{"batched h·W, W", []int{2, 4, 3}, []int{2, 3, 5}, prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContract: []int{2}, RhsContract: []int{1}}, 1, 0},
		{"batch in the middle, W", []int{4, 2, 3}, []int{3, 2, 5}, prims.DotParams{LhsBatch: []int{1}, RhsBatch: []int{1}, LhsContract: []int{2}, RhsContract: []int{0}}, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := zeros(c.x...)
			y := zeros(c.y...)
			out := interp.Bind1(prims.DotGeneral, c.p, x, y)
			ct := zeros(out.Shape()...)
			linear := []bool{c.linear == 0, c.linear == 1}
			g := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				args := []*interp.Tensor{a[1], a[2]}
				r := prims.DotGeneral.Transpose(c.p, []*interp.Tensor{a[0]}, args, linear)
				return []*interp.Tensor{r[c.linear]}
			}, []*interp.Tensor{ct, x, y})
			n := 0
			for _, e := range g.Eqns {
				if e.Prim == prims.Transpose {
					n++
				}
			}
			want := [][]int{c.x, c.y}[c.linear]
			if n != c.transposes || !slices.Equal(g.Out[0].Aval.Shape, want) {
				t.Errorf("%d transposes (want %d), cotangent of shape %v (want %v):\n%v", n, c.transposes, g.Out[0].Aval.Shape, want, g)
			}
		})
	}
}

// TestDotShapeAllocs: DotShape, which every product's abstract
// evaluation runs, allocates its result only (it allocated four times:
// two lists of the dimensions used and the result grown twice).
func TestDotShapeAllocs(t *testing.T) {
	p := prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}
	var got []int
	if n := testing.AllocsPerRun(100, func() { got = prims.DotShape(p, []int{8, 3, 4}, []int{8, 4, 5}) }); n > 1 {
		t.Errorf("DotShape allocates %.0f times, want 1", n)
	}
	if want := []int{8, 3, 5}; !slices.Equal(got, want) {
		t.Errorf("DotShape = %v, want %v", got, want)
	}
}

// TestDotShapeRefusesBadLists checks DotShape's refusals, each with an
// *interp.Error naming what is wrong: contracting or batch lists of
// different lengths (either kind alone), a dimension out of range or
// named twice, contracting or batch sizes that differ.
func TestDotShapeRefusesBadLists(t *testing.T) {
	cases := []struct {
		name string
		p    prims.DotParams
		a, b []int
		want string
	}{
		{"contract lists only", prims.DotParams{LhsContract: []int{2}, RhsContract: []int{}, LhsBatch: []int{0}, RhsBatch: []int{0}}, []int{8, 3, 4}, []int{8, 4, 5}, "pair up"},
		{"batch lists only", prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{}}, []int{8, 3, 4}, []int{8, 4, 5}, "pair up"},
		{"out of range", prims.DotParams{LhsContract: []int{3}, RhsContract: []int{0}}, []int{3, 4}, []int{4, 5}, "3"},
		{"used twice", prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}, LhsBatch: []int{1}, RhsBatch: []int{0}}, []int{3, 4}, []int{4, 4}, "used twice"},
		{"contract sizes", prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}, []int{3, 4}, []int{5, 6}, "4"},
		{"batch sizes", prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}, []int{8, 3, 4}, []int{7, 4, 5}, "batch dimensions"},
	}
	for _, c := range cases {
		msg := ruleError(t, c.name, func() { prims.DotShape(c.p, c.a, c.b) })
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, msg, c.want)
		}
	}
}
