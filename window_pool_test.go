package peel_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// TestMaxPool2DGrad: the gradient of ⟨u, MaxPool2D(x)⟩ sends each u
// element to the (first) maximum of its window, overlapping windows
// adding up, checked against a loop.
func TestMaxPool2DGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name            string
		window, strides [2]int
		pad             peel.Padding
		lo              [2]int
	}{
		{"2x2", [2]int{2, 2}, [2]int{}, peel.ValidPadding, [2]int{}},
		{"3x3 stride 2 same", [2]int{3, 3}, [2]int{2, 2}, peel.SamePadding, [2]int{1, 1}},
		{"3x3 stride 1 padded", [2]int{3, 3}, [2]int{1, 1}, peel.ExplicitPadding([2]int{1, 1}), [2]int{1, 1}},
	} {
		x := convRand(r, 2, 2, 5, 5)
		y := peel.MaxPool2D(x, c.window[0], peel.PoolWindow(c.window[0], c.window[1]), peel.ConvStrides(c.strides[0], c.strides[1]), peel.ConvPadding(c.pad))
		u := convRand(r, y.Shape()...)
		g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
			return peel.Sum(peel.Mul(peel.MaxPool2D(x, c.window[0], peel.PoolWindow(c.window[0], c.window[1]), peel.ConvStrides(c.strides[0], c.strides[1]), peel.ConvPadding(c.pad)), u))
		})(x)
		s := c.strides
		if s == [2]int{} {
			s = c.window
		}
		xs, ys := x.Shape(), y.Shape()
		xv, uv := x.Float64s(), u.Float64s()
		want := make([]float64, len(xv))
		for i := range uv {
			o := optest.Unravel(ys, i)
			best, arg := 0.0, -1
			for a := range c.window[0] {
				for b := range c.window[1] {
					h, w := o[2]*s[0]+a-c.lo[0], o[3]*s[1]+b-c.lo[1]
					if h < 0 || h >= xs[2] || w < 0 || w >= xs[3] {
						continue
					}
					k := optest.Index(xs, []int{o[0], o[1], h, w})
					if arg < 0 || xv[k] > best {
						best, arg = xv[k], k
					}
				}
			}
			want[arg] += uv[i]
		}
		if msg := optest.Compare(optest.ToHost(g), optest.Host{Shape: xs, DType: peel.Float64, Data: want}, 1e-12); msg != "" {
			t.Errorf("%s: %s", c.name, msg)
		}
	}
}

// TestPoolVmapIsOnePrimitive: Vmap of a pooling is one window reduction.
func TestPoolVmapIsOnePrimitive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	xs := convRand(r, 2, 3, 2, 6, 6)
	for _, c := range []struct {
		name, prim string
		f          func(*peel.Tensor) *peel.Tensor
	}{
		{"max", "reduce_window_max", func(x *peel.Tensor) *peel.Tensor {
			return peel.MaxPool2D(x, 3, peel.ConvStrides(2), peel.ConvPadding(peel.SamePadding))
		}},
		{"avg", "reduce_window_sum", func(x *peel.Tensor) *peel.Tensor {
			return peel.AvgPool2D(x, 2)
		}},
	} {
		vf := transforms.Vmap(c.f, transforms.InAxes(1))
		got := vf(xs)
		for i := range 3 {
			if msg := optest.Compare(optest.ToHost(peel.Select(got, 0, i)), optest.ToHost(c.f(peel.Select(xs, 1, i))), 1e-12); msg != "" {
				t.Errorf("%s: lane %d: %s", c.name, i, msg)
			}
		}
		if n := strings.Count(transforms.MakeGraph(vf, xs).String(), c.prim); n != 1 {
			t.Errorf("%s: %d %s equations, want 1", c.name, n, c.prim)
		}
	}
}

func TestPoolErrors(t *testing.T) {
	x := peel.Zeros(peel.Float64, 1, 2, 4, 4)
	cases := []struct {
		name  string
		f     func()
		wants []string
	}{
		{"nil", func() { peel.MaxPool2D(nil, 2) }, []string{"peel.MaxPool2D", "nil"}},
		{"rank", func() { peel.AvgPool2D(peel.Zeros(peel.Float64, 2, 4, 4), 2) }, []string{"peel.AvgPool2D", "rank 4", "f64[2,4,4]"}},
		{"bool", func() {
			peel.MaxPool2D(peel.FromBools(make([]bool, 32), 1, 2, 4, 4), 2)
		}, []string{"peel.MaxPool2D", "bool"}},
		{"window", func() { peel.MaxPool2D(x, 2, peel.PoolWindow(0, 2)) }, []string{"peel.MaxPool2D", "window"}},
		{"stride", func() { peel.MaxPool2D(x, 2, peel.ConvStrides(-1, 1)) }, []string{"peel.MaxPool2D", "strides"}},
		{"pairs", func() {
			peel.AvgPool2D(x, 2, peel.ConvPadding(peel.ExplicitPadding([2]int{1, 1}, [2]int{1, 1}, [2]int{0, 0})))
		}, []string{"peel.AvgPool2D", "3 pairs"}},
		{"removes", func() { peel.MaxPool2D(x, 2, peel.ConvPadding(peel.ExplicitPadding([2]int{-3, -2}))) }, []string{"peel.MaxPool2D", "removes more"}},
		{"dilation", func() { peel.MaxPool2D(x, 2, peel.ConvDilation(2)) }, []string{"peel.MaxPool2D", "only ConvStrides, ConvPadding and PoolWindow"}},
		{"3 strides", func() { peel.AvgPool2D(x, 2, peel.ConvStrides(1, 1, 1)) }, []string{"peel.AvgPool2D", "one value or two"}},
		{"nil option", func() { peel.AvgPool2D(x, 2, nil) }, []string{"peel.AvgPool2D", "nil option"}},
		{"window of a conv", func() { peel.Conv2D(x, peel.Zeros(peel.Float64, 1, 2, 1, 1), peel.PoolWindow(2, 2)) }, []string{"peel.Conv2D", "PoolWindow"}},
	}
	for _, c := range cases {
		err := peel.Catch(c.f)
		var pe *peel.Error
		if err == nil || !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a *peel.Error", c.name, err)
			continue
		}
		for _, s := range c.wants {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, s)
			}
		}
	}
}
