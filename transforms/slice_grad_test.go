package transforms_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// sliceDraw is one slice of the operand of TestGradOfSlicesRapid: its
// region and strides, and the weights its tanh is multiplied by.
type sliceDraw struct {
	p prims.SliceParams
	w []float64
}

// TestGradOfSlicesRapid checks the gradient of Σᵢ sum(wᵢ·tanh(sliceᵢ(x)))
// (+ sum(u·x) when drawn) against the loops that place each slice's
// derivative back where it came from: slices that split x along one axis
// with gaps (whose backward pass concatenates their cotangents), that
// overlap, that cut several axes or stride (each padded and summed), in
// any mix, eagerly, compiled and under Vmap (float64, within 1e-13).
func TestGradOfSlicesRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rapid.IntRange(1, 3).Draw(rt, "rank")
		shape := make([]int, r)
		for d := range shape {
			shape[d] = rapid.IntRange(1, 6).Draw(rt, "dim")
		}
		size := 1
		for _, n := range shape {
			size *= n
		}
		whole := func() prims.SliceParams {
			p := prims.SliceParams{Start: make([]int, r), Limit: append([]int{}, shape...), Stride: make([]int, r)}
			for d := range p.Stride {
				p.Stride[d] = 1
			}
			return p
		}
		var draws []prims.SliceParams
		if rapid.Bool().Draw(rt, "split") {
			// Cuts along one axis, some parts kept.
			a := rapid.IntRange(0, r-1).Draw(rt, "axis")
			at := 0
			for at < shape[a] {
				hi := rapid.IntRange(at+1, shape[a]).Draw(rt, "cut")
				if rapid.IntRange(0, 3).Draw(rt, "keep") > 0 {
					p := whole()
					p.Start[a], p.Limit[a] = at, hi
					draws = append(draws, p)
				}
				at = hi
			}
		}
		for range rapid.IntRange(0, 3).Draw(rt, "extra") {
			p := whole()
			for d := range shape {
				lo := rapid.IntRange(0, shape[d]).Draw(rt, "start")
				p.Start[d], p.Limit[d] = lo, rapid.IntRange(lo, shape[d]).Draw(rt, "limit")
				p.Stride[d] = rapid.IntRange(1, 2).Draw(rt, "stride")
			}
			draws = append(draws, p)
		}
		ws := make([]sliceDraw, len(draws))
		for i, p := range draws {
			n := 1
			for _, m := range prims.SliceShape(p, shape) {
				n *= m
			}
			w := make([]float64, n)
			for j := range w {
				w[j] = float64(rapid.IntRange(-3, 3).Draw(rt, "w"))
			}
			ws[i] = sliceDraw{p, w}
		}
		var u []float64
		if rapid.Bool().Draw(rt, "whole") {
			u = make([]float64, size)
			for j := range u {
				u[j] = float64(j%5) - 2
			}
		}
		xs := make([]float64, size)
		for j := range xs {
			xs[j] = math.Sin(float64(3*j + 1))
		}
		f := func(x *T) *T {
			y := peel.Sum(peel.Mul(x, 0.0))
			for _, s := range ws {
				v := interp.Bind1(prims.Slice, s.p, x)
				y = peel.Add(y, peel.Sum(peel.Mul(peel.Tanh(v), peel.FromFloat64s(s.w, v.Shape()...))))
			}
			if u != nil {
				y = peel.Add(y, peel.Sum(peel.Mul(x, peel.FromFloat64s(u, shape...))))
			}
			return y
		}
		// The loops: each slice's element at position pos of its region
		// is x's element start + pos·stride.
		want := make([]float64, size)
		copy(want, u)
		for _, s := range ws {
			sh := prims.SliceShape(s.p, shape)
			pos := make([]int, r)
			for j := range s.w {
				rem := j
				for d := r - 1; d >= 0; d-- {
					pos[d] = rem % sh[d]
					rem /= sh[d]
				}
				at := 0
				for d := range shape {
					at = at*shape[d] + s.p.Start[d] + pos[d]*s.p.Stride[d]
				}
				th := math.Tanh(xs[at])
				want[at] += s.w[j] * (1 - th*th)
			}
		}
		x := peel.FromFloat64s(xs, shape...)
		check := func(name string, got []float64) {
			for j := range want {
				if math.Abs(got[j]-want[j]) > 1e-13 {
					rt.Fatalf("%s: element %d is %v, want %v (slices %v)", name, j, got[j], want[j], draws)
				}
			}
		}
		g := transforms.Grad(f)
		check("Grad", g(x).Float64s())
		check("Compile(Grad)", transforms.Compile(g)(x).Float64s())
		b := transforms.Vmap(g)(peel.Stack([]*T{x, x}, 0)).Float64s()
		check("Vmap(Grad)[0]", b[:size])
		check("Vmap(Grad)[1]", b[size:])
	})
}

// TestSplitGradConcatenates checks that the backward pass of a tensor
// split into query, key and value (a transformer's heads) concatenates
// their cotangents: no pad, one concatenation. It padded each into zeros
// of the whole and summed them.
func TestSplitGradConcatenates(t *testing.T) {
	x := peel.Normal(peel.Key(3), peel.Float64, 4, 3, 8)
	loss := func(x *T) *T {
		q, k, v := peel.Select(x, 1, 0), peel.Select(x, 1, 1), peel.Select(x, 1, 2)
		return peel.Sum(peel.Mul(peel.Tanh(q), peel.Mul(k, v)))
	}
	g := transforms.MakeGraph(transforms.Grad(loss), x)
	count := map[string]int{}
	for _, e := range g.Eqns {
		count[e.Prim.Name]++
	}
	if count["pad"] != 0 || count["concatenate"] != 1 {
		t.Errorf("the gradient has %d pads and %d concatenations, want 0 and 1:\n%s", count["pad"], count["concatenate"], g)
	}
}
