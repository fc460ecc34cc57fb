package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/internal/testsize"
	"github.com/peel-ml/peel/prims"
)

// TestConvTapsRapid checks convolutions of the tap path (unit strides, no
// input dilation, non-negative padding, eight features and more per
// group) with each micro-kernel width against the loop reference, in
// float64 and float32, at one and two threads: 1 to 3 spatial
// dimensions, kernels of 1 to 4 taps per dimension with dilation, every
// padding from 0 to 3 on each side, feature groups, and feature counts
// around the panel widths. The data are small integers, so every sum is
// exact in float32 too. Spatial sizes go up to 40, 24 and 20 (1, 2 and 3
// dimensions) with PEEL_FULL set, and to 20, 10 and 6 by default, where
// the loop reference's time is what makes the test long.
func TestConvTapsRapid(t *testing.T) {
	sizes := testsize.Pick([]int{0, 20, 10, 6}, []int{0, 40, 24, 20})
	defer cpu.SetWideGEMM(cpu.SetWideGEMM(true))
	defer cpu.SetThreads(cpu.Threads())
	rapid.Check(t, func(rt *rapid.T) {
		cpu.SetWideGEMM(rapid.Bool().Draw(rt, "wide"))
		cpu.SetThreads(rapid.IntRange(1, 2).Draw(rt, "threads"))
		nd := rapid.IntRange(1, 3).Draw(rt, "nd")
		g := rapid.IntRange(1, 2).Draw(rt, "groups")
		cg := rapid.SampledFrom([]int{8, 9, 16, 17, 33}).Draw(rt, "cg")
		og := rapid.SampledFrom([]int{8, 9, 15, 16, 17, 31, 32, 33, 40}).Draw(rt, "og")
		xs := []int{rapid.IntRange(1, 3).Draw(rt, "n"), g * cg}
		ws := []int{g * og, cg}
		p := prims.ConvParams{FeatureGroupCount: g}
		var pads [][2]int
		maxSize := sizes[nd]
		for range nd {
			k := rapid.IntRange(1, 4).Draw(rt, "k")
			d := rapid.IntRange(1, 2).Draw(rt, "dilation")
			lo, hi := rapid.IntRange(0, 3).Draw(rt, "lo"), rapid.IntRange(0, 3).Draw(rt, "hi")
			// At least one output position.
			minSize := max(1, (k-1)*d+1-lo-hi)
			xs = append(xs, rapid.IntRange(minSize, max(minSize, maxSize)).Draw(rt, "size"))
			ws = append(ws, k)
			p.Strides = append(p.Strides, 1)
			p.LhsDilation = append(p.LhsDilation, 1)
			p.RhsDilation = append(p.RhsDilation, d)
			p.PadLo, p.PadHi = append(p.PadLo, lo), append(p.PadHi, hi)
			pads = append(pads, [2]int{lo, hi})
		}
		r := rand.New(rand.NewPCG(uint64(rapid.Uint32().Draw(rt, "seed")), 1))
		xv, wv := smallInts(r, xs...), smallInts(r, ws...)
		opts := []peel.ConvOption{peel.ConvDilation(p.RhsDilation...), peel.ConvPadding(peel.ExplicitPadding(pads...)), peel.ConvGroups(g)}
		checkConvExact(rt, xv, wv, xs, ws, p, opts)
	})
}

// TestConvTapsWide checks the AVX-512 tap kernels (8×32 float32, 8×16
// float64), which take rows of at least two AVX2 panels (32 float32
// positions): rapid's default sizes reach them rarely. One and two
// spatial dimensions, rows of 32 to 70 positions (whole panels and
// edges), output features around the 8-row tiles (one panel, one and a
// row, several and an edge), against the loop reference, exactly.
func TestConvTapsWide(t *testing.T) {
	if !cpu.HasWideGEMM() {
		t.Skip("no AVX-512 here")
	}
	defer cpu.SetWideGEMM(cpu.SetWideGEMM(true))
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		spatial []int
		og, cg  int
	}{
		{[]int{32}, 8, 8}, {[]int{33}, 9, 8}, {[]int{64}, 17, 9}, {[]int{70}, 40, 16},
		{[]int{3, 34}, 8, 8}, {[]int{2, 48}, 15, 9}, {[]int{4, 32}, 33, 8},
	} {
		k := 3
		xs := append([]int{2, c.cg}, c.spatial...)
		ws := []int{c.og, c.cg}
		p := prims.ConvParams{FeatureGroupCount: 1}
		var pads [][2]int
		for range c.spatial {
			ws = append(ws, k)
			p.Strides = append(p.Strides, 1)
			p.LhsDilation = append(p.LhsDilation, 1)
			p.RhsDilation = append(p.RhsDilation, 1)
			p.PadLo, p.PadHi = append(p.PadLo, 1), append(p.PadHi, 1)
			pads = append(pads, [2]int{1, 1})
		}
		opts := []peel.ConvOption{peel.ConvPadding(peel.ExplicitPadding(pads...))}
		checkConvExact(t, smallInts(r, xs...), smallInts(r, ws...), xs, ws, p, opts)
	}
}

// BenchmarkConvTaps times the tap path against im2col on the 3×3,
// 64-feature, 32×32 convolution of peelbench's conv2d_3x3_64.
func BenchmarkConvTaps(b *testing.B) {
	x := peel.Normal(peel.Key(1), peel.Float32, 32, 64, 32, 32)
	w := peel.Normal(peel.Key(2), peel.Float32, 64, 64, 3, 3)
	for _, taps := range []bool{true, false} {
		b.Run(fmt.Sprintf("taps=%v", taps), func(b *testing.B) {
			defer cpu.SetConvTaps(cpu.SetConvTaps(taps))
			for range b.N {
				peel.Conv2D(x, w, peel.ConvPadding(peel.SamePadding))
			}
		})
	}
}

// TestConvTapsTRapid checks convolutions of the transposed tap path
// (kernels longer than results, as the kernel gradient's) against the
// loop reference, with each micro-kernel width and thread count (and
// the overlapping padded planes of either kind of dimension), and
// that a lhs with an Inf or NaN gives the reference's result (the path
// then steps aside: its zero rows would turn 0·Inf into NaN).
func TestConvTapsTRapid(t *testing.T) {
	// Its kept buffers hold NaN at every use, so a slot it reads but did
	// not write fails the exact comparison.
	defer cpu.SetScratchPoison(cpu.SetScratchPoison(true))
	defer cpu.SetWideGEMM(cpu.SetWideGEMM(true))
	defer cpu.SetThreads(cpu.Threads())
	rapid.Check(t, func(rt *rapid.T) {
		cpu.SetWideGEMM(rapid.Bool().Draw(rt, "wide"))
		cpu.SetThreads(rapid.IntRange(1, 2).Draw(rt, "threads"))
		nd := rapid.IntRange(1, 2).Draw(rt, "nd")
		g := rapid.IntRange(1, 2).Draw(rt, "groups")
		cg := rapid.IntRange(1, 5).Draw(rt, "cg")
		og := rapid.SampledFrom([]int{8, 9, 16, 17, 33}).Draw(rt, "og")
		n := rapid.SampledFrom([]int{8, 9, 13, 24}).Draw(rt, "n")
		xs := []int{n, g * cg}
		ws := []int{g * og, cg}
		p := prims.ConvParams{FeatureGroupCount: g}
		var pads [][2]int
		for range nd {
			out := rapid.IntRange(1, 4).Draw(rt, "out")
			k := rapid.IntRange(out+1, out+12).Draw(rt, "k")
			d := rapid.IntRange(1, 2).Draw(rt, "dilation")
			lo, hi := rapid.IntRange(0, 2).Draw(rt, "lo"), rapid.IntRange(0, 2).Draw(rt, "hi")
			size := (k-1)*d + out - lo - hi
			if size < 1 {
				size, hi = 1, (k-1)*d+out-lo-1
				if hi < 0 {
					rt.Skip("no geometry")
				}
			}
			xs, ws = append(xs, size), append(ws, k)
			p.Strides = append(p.Strides, 1)
			p.LhsDilation = append(p.LhsDilation, 1)
			p.RhsDilation = append(p.RhsDilation, d)
			p.PadLo, p.PadHi = append(p.PadLo, lo), append(p.PadHi, hi)
			pads = append(pads, [2]int{lo, hi})
		}
		r := rand.New(rand.NewPCG(uint64(rapid.Uint32().Draw(rt, "seed")), 1))
		xv, wv := smallInts(r, xs...), smallInts(r, ws...)
		if rapid.IntRange(0, 4).Draw(rt, "nonfinite") == 0 {
			xv[r.IntN(len(xv))] = []float64{math.Inf(1), math.Inf(-1), math.NaN()}[r.IntN(3)]
		}
		opts := []peel.ConvOption{peel.ConvDilation(p.RhsDilation...), peel.ConvPadding(peel.ExplicitPadding(pads...)), peel.ConvGroups(g)}
		checkConvExact(rt, xv, wv, xs, ws, p, opts)
		// The same operands as views with their leading dimensions
		// swapped, as a kernel gradient passes them: read through their
		// strides by this path, materialized by the others.
		for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
			x := swappedView(xv, xs, dt, rapid.Bool().Draw(rt, "viewx"))
			w := swappedView(wv, ws, dt, rapid.Bool().Draw(rt, "vieww"))
			y := peel.Conv(x, w, opts...)
			want := optest.ConvRef(optest.ToHost(x), optest.ToHost(w), p)
			if msg := optest.Compare(optest.ToHost(y), want, 0); msg != "" {
				rt.Fatalf("%v conv %v of views %v by %v: %s", dt, p, xs, ws, msg)
			}
		}
	})
}

// swappedView returns the tensor of dtype dt, shape and values v (row-
// major), as a view with its first two dimensions transposed (their
// strides exchanged) when view is set, else contiguous.
func swappedView(v []float64, shape []int, dt peel.DType, view bool) *peel.Tensor {
	if !view {
		return peel.AsType(peel.FromFloat64s(v, shape...), dt)
	}
	a, b := shape[0], shape[1]
	inner := len(v) / (a * b)
	sw := make([]float64, len(v))
	for i := range a {
		for j := range b {
			copy(sw[(j*a+i)*inner:(j*a+i+1)*inner], v[(i*b+j)*inner:(i*b+j+1)*inner])
		}
	}
	perm := make([]int, len(shape))
	for i := range perm {
		perm[i] = i
	}
	perm[0], perm[1] = 1, 0
	swShape := append([]int{b, a}, shape[2:]...)
	return peel.Transpose(peel.AsType(peel.FromFloat64s(sw, swShape...), dt), perm...)
}

// BenchmarkConvTapsT times the transposed tap path against the packed
// one on conv2d_3x3_64_grad's kernel gradient: the input, batch and
// features exchanged, convolved with the result's cotangent.
func BenchmarkConvTapsT(b *testing.B) {
	x := peel.Normal(peel.Key(1), peel.Float32, 64, 32, 32, 32)
	dy := peel.Normal(peel.Key(2), peel.Float32, 64, 32, 32, 32)
	for _, taps := range []bool{true, false} {
		b.Run(fmt.Sprintf("taps=%v", taps), func(b *testing.B) {
			defer cpu.SetConvTaps(cpu.SetConvTaps(taps))
			for range b.N {
				peel.Conv2D(x, dy, peel.ConvPadding(peel.ExplicitPadding([2]int{1, 1}, [2]int{1, 1})))
			}
		})
	}
}

// smallInts returns the elements of a tensor of the given shape: small
// integers, so every sum of products is exact in float32 too.
func smallInts(r *rand.Rand, shape ...int) []float64 {
	m := 1
	for _, d := range shape {
		m *= d
	}
	v := make([]float64, m)
	for i := range v {
		v[i] = float64(r.IntN(7) - 3)
	}
	return v
}

// checkConvExact compares Conv of x and w (values xv, wv) with opts, in
// float64 and float32, with the loop reference of p, exactly.
func checkConvExact(rt interface{ Fatalf(string, ...any) }, xv, wv []float64, xs, ws []int, p prims.ConvParams, opts []peel.ConvOption) {
	for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
		x := peel.AsType(peel.FromFloat64s(xv, xs...), dt)
		w := peel.AsType(peel.FromFloat64s(wv, ws...), dt)
		y := peel.Conv(x, w, opts...)
		want := optest.ConvRef(optest.ToHost(x), optest.ToHost(w), p)
		if msg := optest.Compare(optest.ToHost(y), want, 0); msg != "" {
			rt.Fatalf("%v conv %v of %v by %v: %s", dt, p, xs, ws, msg)
		}
	}
}
