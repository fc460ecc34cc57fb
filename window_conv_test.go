package peel_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// convDraw draws a small random convolution: operands, options and the
// same parameters as the primitive's.
func convDraw(rt *rapid.T) (x, w *peel.Tensor, opts []peel.ConvOption, p prims.ConvParams) {
	nd := rapid.IntRange(1, 3).Draw(rt, "nd")
	g := rapid.IntRange(1, 3).Draw(rt, "groups")
	cg, og := rapid.IntRange(1, 2).Draw(rt, "cg"), rapid.IntRange(1, 2).Draw(rt, "og")
	xs := []int{rapid.IntRange(1, 2).Draw(rt, "n"), g * cg}
	ws := []int{g * og, cg}
	var pads [][2]int
	p.FeatureGroupCount = g
	for range nd {
		xs = append(xs, rapid.IntRange(1, 5).Draw(rt, "size"))
		ws = append(ws, rapid.IntRange(1, 3).Draw(rt, "k"))
		p.Strides = append(p.Strides, rapid.IntRange(1, 3).Draw(rt, "stride"))
		p.RhsDilation = append(p.RhsDilation, rapid.IntRange(1, 2).Draw(rt, "dilation"))
		p.LhsDilation = append(p.LhsDilation, rapid.IntRange(1, 2).Draw(rt, "input dilation"))
		lo, hi := rapid.IntRange(-1, 3).Draw(rt, "lo"), rapid.IntRange(-1, 3).Draw(rt, "hi")
		p.PadLo, p.PadHi = append(p.PadLo, lo), append(p.PadHi, hi)
		pads = append(pads, [2]int{lo, hi})
	}
	r := rand.New(rand.NewPCG(uint64(rapid.Uint32().Draw(rt, "seed")), 1))
	groups := peel.ConvGroups(g)
	if rapid.Bool().Draw(rt, "batch groups") {
		// The groups split the batch instead.
		xs[0], xs[1] = g*xs[0], cg
		p.FeatureGroupCount, p.BatchGroupCount = 1, g
		groups = peel.ConvBatchGroups(g)
	}
	x, w = convRand(r, xs...), convRand(r, ws...)
	opts = []peel.ConvOption{peel.ConvStrides(p.Strides...), peel.ConvDilation(p.RhsDilation...),
		peel.ConvInputDilation(p.LhsDilation...), peel.ConvPadding(peel.ExplicitPadding(pads...)), groups}
	return x, w, opts, p
}

func convRand(r *rand.Rand, shape ...int) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	return peel.FromFloat64s(v, shape...)
}

func convInner(a, b *peel.Tensor) float64 {
	s := 0.0
	bv := b.Float64s()
	for i, v := range a.Float64s() {
		s += v * bv[i]
	}
	return s
}

// TestRapidConv checks random convolutions (every parameter, padding
// possibly negative, groups) in float64 against the loop reference, the
// JVP against central differences, and the VJP against the JVP by the
// transposition identity ⟨u, J v⟩ = ⟨Jᵀu, v⟩.
func TestRapidConv(t *testing.T) {
	var checked, empty int
	defer func() { t.Logf("%d convolutions differentiated, %d with an empty result", checked, empty) }()
	rapid.Check(t, func(rt *rapid.T) {
		x, w, opts, p := convDraw(rt)
		var y *peel.Tensor
		if err := peel.Catch(func() { y = peel.Conv(x, w, opts...) }); err != nil {
			// Padding removing more than a dimension holds.
			if !strings.Contains(err.Error(), "removes more") {
				rt.Fatalf("unexpected error: %v", err)
			}
			return
		}
		want := optest.ConvRef(optest.ToHost(x), optest.ToHost(w), p)
		if msg := optest.Compare(optest.ToHost(y), want, 1e-12); msg != "" {
			rt.Fatalf("conv %v of %v by %v: %s", p, x.Shape(), w.Shape(), msg)
		}
		if y.Size() == 0 {
			empty++
			return
		}
		checked++
		f := func(a, b *peel.Tensor) *peel.Tensor { return peel.Conv(a, b, opts...) }
		r := rand.New(rand.NewPCG(7, uint64(x.Size())))
		dx, dw, u := convRand(r, x.Shape()...), convRand(r, w.Shape()...), convRand(r, y.Shape()...)
		_, jv := transforms.JVP2(f, x, w, dx, dw)
		const h = 1e-6
		fd := peel.Div(peel.Sub(f(peel.Add(x, peel.Mul(dx, h)), peel.Add(w, peel.Mul(dw, h))),
			f(peel.Sub(x, peel.Mul(dx, h)), peel.Sub(w, peel.Mul(dw, h)))), 2*h)
		if msg := optest.Compare(optest.ToHost(jv), optest.ToHost(fd), 1e-6); msg != "" {
			rt.Fatalf("JVP vs central differences: %s", msg)
		}
		_, back := transforms.VJP2(f, x, w)
		gx, gw := back(u)
		lhs, rhs := convInner(u, jv), convInner(gx, dx)+convInner(gw, dw)
		if math.Abs(lhs-rhs) > 1e-10*(1+math.Abs(lhs)) {
			rt.Fatalf("⟨u, J v⟩ = %v, ⟨Jᵀu, v⟩ = %v", lhs, rhs)
		}
	})
}

// TestConvTranspose2DIsConvGradient: ConvTranspose2D is the gradient of
// Conv2D with respect to its input, with the output shapes documented.
func TestConvTranspose2DIsConvGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name      string
		x, w      []int
		opts      []peel.ConvOption
		wantShape []int
	}{
		{"valid", []int{2, 3, 4, 3}, []int{3, 2, 3, 2}, nil, []int{2, 2, 6, 4}},
		{"strided", []int{1, 2, 3, 3}, []int{2, 3, 3, 3}, []peel.ConvOption{peel.ConvStrides(2)}, []int{1, 3, 7, 7}},
		{"same", []int{1, 2, 3, 2}, []int{2, 2, 3, 3}, []peel.ConvOption{peel.ConvStrides(2, 3), peel.ConvPadding(peel.SamePadding)}, []int{1, 2, 6, 6}},
		{"padding 1", []int{1, 4, 3, 3}, []int{4, 1, 3, 3}, []peel.ConvOption{peel.ConvStrides(2), peel.ConvGroups(4), peel.ConvPadding(peel.ExplicitPadding([2]int{1, 1}))}, []int{1, 4, 5, 5}},
		{"dilated", []int{1, 2, 3, 3}, []int{2, 2, 2, 2}, []peel.ConvOption{peel.ConvDilation(2), peel.ConvStrides(2)}, []int{1, 2, 7, 7}},
	} {
		x, w := convRand(r, c.x...), convRand(r, c.w...)
		y := peel.ConvTranspose2D(x, w, c.opts...)
		if !slices.Equal(y.Shape(), c.wantShape) {
			t.Errorf("%s: shape %v, want %v", c.name, y.Shape(), c.wantShape)
			continue
		}
		if got := peel.Conv2D(y, w, c.opts...).Shape(); !slices.Equal(got, c.x) {
			t.Errorf("%s: Conv2D of the result has shape %v, want the input's %v", c.name, got, c.x)
		}
		_, back := transforms.VJP(func(in *peel.Tensor) *peel.Tensor { return peel.Conv2D(in, w, c.opts...) }, y)
		if msg := optest.Compare(optest.ToHost(y), optest.ToHost(back(x)), 1e-12); msg != "" {
			t.Errorf("%s: not the gradient of Conv2D: %s", c.name, msg)
		}
	}
}

// TestConvVmapIsOneConv: Vmap of a convolution over the kernel, the input
// or both is one conv_general_dilated (folded into groups or the batch),
// with the per-lane results.
func TestConvVmapIsOneConv(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const b = 3
	xs, ws := convRand(r, b, 2, 4, 5, 5), convRand(r, b, 6, 2, 3, 3)
	f := func(x, w *peel.Tensor) *peel.Tensor {
		return peel.Conv2D(x, w, peel.ConvGroups(2), peel.ConvPadding(peel.SamePadding))
	}
	lane := func(t *peel.Tensor, i int) *peel.Tensor { return peel.Select(t, 0, i) }
	for _, c := range []struct {
		name string
		axes transforms.VmapOption
		x, w func(i int) *peel.Tensor
		args [2]*peel.Tensor
	}{
		{"input", transforms.InAxes(0, transforms.NoAxis), func(i int) *peel.Tensor { return lane(xs, i) }, func(int) *peel.Tensor { return lane(ws, 0) }, [2]*peel.Tensor{xs, lane(ws, 0)}},
		{"kernel", transforms.InAxes(transforms.NoAxis, 0), func(int) *peel.Tensor { return lane(xs, 0) }, func(i int) *peel.Tensor { return lane(ws, i) }, [2]*peel.Tensor{lane(xs, 0), ws}},
		{"both", transforms.InAxes(0, 0), func(i int) *peel.Tensor { return lane(xs, i) }, func(i int) *peel.Tensor { return lane(ws, i) }, [2]*peel.Tensor{xs, ws}},
	} {
		vf := transforms.Vmap2(f, c.axes)
		got := vf(c.args[0], c.args[1])
		for i := range b {
			if msg := optest.Compare(optest.ToHost(lane(got, i)), optest.ToHost(f(c.x(i), c.w(i))), 1e-12); msg != "" {
				t.Errorf("%s: lane %d: %s", c.name, i, msg)
			}
		}
		g := transforms.MakeGraph(func(a [2]*peel.Tensor) *peel.Tensor { return vf(a[0], a[1]) }, c.args)
		if n := strings.Count(g.String(), "conv_general_dilated"); n != 1 {
			t.Errorf("%s: %d conv_general_dilated equations, want 1:\n%v", c.name, n, g)
		}
	}
}

func TestConvErrors(t *testing.T) {
	x := peel.Zeros(peel.Float64, 1, 4, 5, 5)
	w := peel.Zeros(peel.Float64, 2, 4, 3, 3)
	cases := []struct {
		name  string
		f     func()
		wants []string
	}{
		{"nil", func() { peel.Conv2D(nil, w) }, []string{"peel.Conv2D", "nil"}},
		{"rank", func() { peel.Conv2D(peel.Zeros(peel.Float64, 4, 5, 5), w) }, []string{"peel.Conv2D", "rank 4", "f64[4,5,5]"}},
		{"kernel rank", func() { peel.Conv(x, peel.Zeros(peel.Float64, 2, 4, 3)) }, []string{"peel.Conv", "kernel"}},
		{"channels", func() { peel.Conv2D(x, peel.Zeros(peel.Float64, 2, 3, 3, 3)) }, []string{"peel.Conv2D", "4 features", "3 per group"}},
		{"groups", func() { peel.Conv2D(x, peel.Zeros(peel.Float64, 3, 2, 3, 3), peel.ConvGroups(2)) }, []string{"peel.Conv2D", "3 output features", "2 groups"}},
		{"strides", func() { peel.Conv2D(x, w, peel.ConvStrides(1, 2, 3)) }, []string{"peel.Conv2D", "strides", "one value or 2"}},
		{"stride 0", func() { peel.Conv2D(x, w, peel.ConvStrides(0)) }, []string{"peel.Conv2D", "≥ 1"}},
		{"negative groups", func() { peel.Conv2D(x, w, peel.ConvGroups(-1)) }, []string{"peel.Conv2D", "groups"}},
		{"negative batch groups", func() { peel.Conv2D(x, w, peel.ConvBatchGroups(-2)) }, []string{"peel.Conv2D", "batch groups"}},
		{"padding pairs", func() {
			peel.Conv2D(x, w, peel.ConvPadding(peel.ExplicitPadding([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})))
		}, []string{"peel.Conv2D", "3 pairs"}},
		{"padding removes", func() { peel.Conv2D(x, w, peel.ConvPadding(peel.ExplicitPadding([2]int{-3, -3}))) }, []string{"peel.Conv2D", "removes more"}},
		{"huge padding", func() {
			peel.Conv2D(x, w, peel.ConvPadding(peel.ExplicitPadding([2]int{math.MaxInt / 2, math.MaxInt / 2})))
		}, []string{"peel.Conv2D", "too large"}},
		{"huge dilation", func() { peel.Conv2D(x, w, peel.ConvDilation(math.MaxInt)) }, []string{"peel.Conv2D", "too large"}},
		{"bool", func() {
			peel.Conv2D(peel.FromBools(make([]bool, 100), 1, 4, 5, 5), peel.FromBools(make([]bool, 72), 2, 4, 3, 3))
		}, nil},
		{"transpose kernel", func() { peel.ConvTranspose2D(x, peel.Zeros(peel.Float64, 3, 2, 3, 3)) }, []string{"peel.ConvTranspose2D", "Cin = 4"}},
		{"transpose input dilation", func() { peel.ConvTranspose2D(x, w, peel.ConvInputDilation(2)) }, []string{"peel.ConvTranspose2D", "ConvInputDilation"}},
		{"transpose negative padding", func() {
			peel.ConvTranspose2D(x, peel.Zeros(peel.Float64, 4, 2, 3, 3), peel.ConvPadding(peel.ExplicitPadding([2]int{-1, 0})))
		}, []string{"peel.ConvTranspose2D", "padding"}},
		{"nil option", func() { peel.Conv2D(x, w, nil) }, []string{"peel.Conv2D", "nil option"}},
		{"batch and feature groups", func() {
			peel.Conv2D(peel.Zeros(peel.Float64, 2, 4, 5, 5), peel.Zeros(peel.Float64, 4, 2, 3, 3), peel.ConvGroups(2), peel.ConvBatchGroups(2))
		}, []string{"peel.Conv2D", "at most one"}},
		{"batch groups of the batch", func() { peel.Conv2D(x, peel.Zeros(peel.Float64, 2, 4, 3, 3), peel.ConvBatchGroups(2)) }, []string{"peel.Conv2D", "batch group count 2", "batch 1"}},
		{"transpose batch groups", func() { peel.ConvTranspose2D(x, peel.Zeros(peel.Float64, 4, 2, 3, 3), peel.ConvBatchGroups(2)) }, []string{"peel.ConvTranspose2D", "ConvBatchGroups"}},
	}
	for _, c := range cases {
		err := peel.Catch(c.f)
		if c.wants == nil {
			// Accepted: bool operands convert to f64.
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		var pe *peel.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v is not a *peel.Error", c.name, err)
			continue
		}
		for _, s := range c.wants {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, s)
			}
		}
	}
}

// TestConvHugeStride: strides near MaxInt leave one window per dimension
// (SAME or explicit padding), computed without overflow.
func TestConvHugeStride(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x, w := convRand(r, 1, 2, 5, 4), convRand(r, 3, 2, 2, 2)
	for _, c := range []struct {
		name string
		pad  peel.Padding
		p    prims.ConvParams
	}{
		{"same", peel.SamePadding, prims.ConvParams{Strides: []int{math.MaxInt, math.MaxInt}, PadLo: []int{0, 0}, PadHi: []int{0, 0}}},
		{"explicit", peel.ExplicitPadding([2]int{3, 9}), prims.ConvParams{Strides: []int{math.MaxInt, math.MaxInt}, PadLo: []int{3, 3}, PadHi: []int{9, 9}}},
	} {
		y := peel.Conv2D(x, w, peel.ConvStrides(math.MaxInt), peel.ConvPadding(c.pad))
		if msg := optest.Compare(optest.ToHost(y), optest.ConvRef(optest.ToHost(x), optest.ToHost(w), c.p), 1e-12); msg != "" {
			t.Errorf("%s: %s", c.name, msg)
		}
	}
}
