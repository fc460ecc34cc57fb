package nn

import (
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// moments returns the mean and population variance of v.
func moments(v []float64) (m, variance float64) {
	for _, e := range v {
		m += e
	}
	m /= float64(len(v))
	for _, e := range v {
		variance += (e - m) * (e - m)
	}
	return m, variance / float64(len(v))
}

func TestVarianceScalingStatistics(t *testing.T) {
	// [in, out] = [400, 200]: fan_in 400, fan_out 200, avg 300; conv
	// OIHW [64, 32, 3, 3]: fan_in 288, fan_out 576.
	cases := []struct {
		name  string
		init  Initializer
		shape []int
		v     float64 // the target variance
		bound float64 // the support bound for uniforms (0: none)
	}{
		{"GlorotUniform", GlorotUniform(), []int{400, 200}, 2.0 / 600, math.Sqrt(6.0 / 600)},
		{"GlorotNormal", GlorotNormal(), []int{400, 200}, 2.0 / 600, 0},
		{"HeUniform fan_in", HeUniform(FanIn), []int{400, 200}, 2.0 / 400, math.Sqrt(6.0 / 400)},
		{"HeNormal fan_in", HeNormal(FanIn), []int{400, 200}, 2.0 / 400, 0},
		{"HeNormal fan_out", HeNormal(FanOut), []int{400, 200}, 2.0 / 200, 0},
		{"HeNormal conv", HeNormal(FanIn, ConvAxes), []int{64, 32, 3, 3}, 2.0 / 288, 0},
		{"HeUniform conv fan_out", HeUniform(FanOut, ConvAxes), []int{64, 32, 3, 3}, 2.0 / 576, math.Sqrt(6.0 / 576)},
		{"LecunNormal", LecunNormal(), []int{400, 200}, 1.0 / 400, 0},
		{"LecunUniform", LecunUniform(), []int{400, 200}, 1.0 / 400, math.Sqrt(3.0 / 400)},
		{"TruncatedNormal scaling", VarianceScaling(1, FanAvg, DistTruncatedNormal), []int{400, 200}, 1.0 / 300, 2 * math.Sqrt(1.0/300) / truncatedStd},
		{"gain² leaky", VarianceScaling(LeakyReLUGain(0.1)*LeakyReLUGain(0.1), FanIn, DistNormal), []int{400, 200}, 2 / (1.01 * 400), 0},
		{"Normal", Normal(0.05), []int{300, 300}, 0.0025, 0},
		{"Uniform", Uniform(-1, 3), []int{300, 300}, 16.0 / 12, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
				x := c.init(peel.Key(11), dt, c.shape...)
				if x.DType() != dt || !slices.Equal(x.Shape(), c.shape) {
					t.Fatalf("got %v", x.TypeString())
				}
				v := peel.AsType(x, peel.Float64).Float64s()
				m, variance := moments(v)
				n := float64(len(v))
				wantMean := 0.0
				if c.name == "Uniform" {
					wantMean = 1
				}
				// The sample mean has standard deviation sqrt(v/n), the
				// sample variance about v·sqrt(2/n) (normal; smaller for
				// uniforms): 6 standard deviations.
				if math.Abs(m-wantMean) > 6*math.Sqrt(c.v/n) {
					t.Errorf("%v: mean %v, want %v", dt, m, wantMean)
				}
				if math.Abs(variance-c.v) > 6*c.v*math.Sqrt(2/n) {
					t.Errorf("%v: variance %v, want %v", dt, variance, c.v)
				}
				if c.bound > 0 {
					for _, e := range v {
						if math.Abs(e) > c.bound*(1+1e-6) {
							t.Fatalf("%v: value %v outside ±%v", dt, e, c.bound)
						}
					}
				}
			}
			assertSame(t, c.name+" deterministic", c.init(peel.Key(11), peel.Float64, c.shape...), c.init(peel.Key(11), peel.Float64, c.shape...), 0, 0)
			a := c.init(peel.Key(11), peel.Float64, c.shape...).Float64s()
			b := c.init(peel.Key(12), peel.Float64, c.shape...).Float64s()
			if a[0] == b[0] && a[1] == b[1] {
				t.Fatal("different keys gave the same draws")
			}
		})
	}
}

func TestFans(t *testing.T) {
	for _, c := range []struct {
		shape   []int
		ax      FanAxes
		in, out float64
	}{
		{[]int{}, DenseAxes, 1, 1},
		{[]int{5}, DenseAxes, 5, 5},
		{[]int{3, 4}, DenseAxes, 3, 4},
		{[]int{2, 3, 4}, DenseAxes, 6, 8},
		{[]int{8, 4, 3, 3}, ConvAxes, 36, 72},
	} {
		in, out := Fans(c.shape, c.ax)
		if in != c.in || out != c.out {
			t.Errorf("Fans(%v, %v) = %v, %v; want %v, %v", c.shape, c.ax, in, out, c.in, c.out)
		}
	}
	mustPanic(t, "nn.Fans", func() { Fans([]int{2, 3}, FanAxes{0, 0}) })
	mustPanic(t, "nn.Fans", func() { Fans([]int{2, 3}, FanAxes{0, 5}) })
	mustPanic(t, "nn.Fans", func() { Fans([]int{2, 3}, FanAxes{5, 0}) })
	mustPanic(t, "nn.Fans", func() { Fans([]int{2, 3}, FanAxes{-3, 1}) })
	mustPanic(t, "nn.Fans", func() { Fans([]int{2, 3}, FanAxes{1, -3}) })
}

func TestOrthogonal(t *testing.T) {
	for _, shape := range [][]int{{6, 6}, {9, 4}, {3, 7}, {2, 3, 5}, {1, 1}} {
		for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
			const gain = 1.5
			x := Orthogonal(gain)(peel.Key(13), dt, shape...)
			if x.DType() != dt || !slices.Equal(x.Shape(), shape) {
				t.Fatalf("Orthogonal: %v", x.TypeString())
			}
			cols := shape[len(shape)-1]
			rows := x.Size() / cols
			v := peel.AsType(x, peel.Float64).Float64s()
			tol := 1e-12
			if dt == peel.Float32 {
				tol = 1e-5
			}
			// QᵀQ = gain²·I over the short side.
			short, long := cols, rows
			at := func(i, j int) float64 { return v[i*cols+j] } // row i, column j
			if rows < cols {
				short, long = rows, cols
				at = func(i, j int) float64 { return v[j*cols+i] }
			}
			for a := range short {
				for b := range short {
					s := 0.0
					for i := range long {
						s += at(i, a) * at(i, b)
					}
					want := 0.0
					if a == b {
						want = gain * gain
					}
					if math.Abs(s-want) > tol*float64(long) {
						t.Fatalf("%v %v: (QᵀQ)[%d][%d] = %v, want %v", shape, dt, a, b, s, want)
					}
				}
			}
		}
	}
	// The QR of a known matrix: Q's columns are the Gram–Schmidt
	// basis with R's diagonal positive.
	a := []float64{3, 1, 4, 2, 0, 5} // 3×2
	q := householderQ(append([]float64{}, a...), 3, 2)
	n0 := math.Sqrt(9 + 16 + 0)
	e0 := []float64{3 / n0, 4 / n0, 0}
	d := 1*e0[0] + 2*e0[1] + 5*e0[2]
	u := []float64{1 - d*e0[0], 2 - d*e0[1], 5 - d*e0[2]}
	n1 := math.Sqrt(u[0]*u[0] + u[1]*u[1] + u[2]*u[2])
	for i := range 3 {
		if math.Abs(q[i*2]-e0[i]) > 1e-14 || math.Abs(q[i*2+1]-u[i]/n1) > 1e-14 {
			t.Fatalf("householderQ row %d = %v, %v; want %v, %v", i, q[i*2], q[i*2+1], e0[i], u[i]/n1)
		}
	}
	assertSame(t, "Orthogonal deterministic", Orthogonal(1)(peel.Key(2), peel.Float64, 4, 4), Orthogonal(1)(peel.Key(2), peel.Float64, 4, 4), 0, 0)
	mustPanic(t, "nn.Orthogonal", func() { Orthogonal(1)(peel.Key(2), peel.Float64, 4) })
	// Under a transform the drawn values cannot be read.
	mustPanic(t, "nn.Orthogonal", func() {
		transforms.Vmap(func(k *peel.Tensor) *peel.Tensor { return Orthogonal(1)(k, peel.Float64, 2, 2) })(peel.SplitKeysStacked(peel.Key(1), 2))
	})
}

func TestSimpleInitializers(t *testing.T) {
	assertClose(t, "Zeros", Zeros(nil, peel.Float32, 2), []float64{0, 0}, []int{2}, 0, 0)
	assertClose(t, "Ones", Ones(nil, peel.Float64, 2), []float64{1, 1}, []int{2}, 0, 0)
	assertClose(t, "Constant", Constant(-2.5)(nil, peel.Float64, 1, 2), []float64{-2.5, -2.5}, []int{1, 2}, 0, 0)
	tn := TruncatedNormal(0.1)(peel.Key(3), peel.Float64, 10000).Float64s()
	for _, v := range tn {
		if math.Abs(v) > 0.2 {
			t.Fatalf("TruncatedNormal(0.1) value %v outside ±0.2", v)
		}
	}
	if _, v := moments(tn); math.Abs(math.Sqrt(v)-0.1*truncatedStd) > 0.005 {
		t.Fatalf("TruncatedNormal(0.1) std %v, want %v", math.Sqrt(v), 0.1*truncatedStd)
	}
	// Empty shapes give empty tensors.
	if x := GlorotUniform()(peel.Key(1), peel.Float64, 0, 5); x.Size() != 0 {
		t.Fatal("empty GlorotUniform is not empty")
	}
	// Initializers run under Vmap over keys (an ensemble).
	keys := peel.SplitKeysStacked(peel.Key(4), 3)
	ens := transforms.Vmap(func(k *peel.Tensor) *peel.Tensor { return HeNormal(FanIn)(k, peel.Float64, 4, 5) })(keys)
	if !slices.Equal(ens.Shape(), []int{3, 4, 5}) {
		t.Fatalf("ensemble init shape %v", ens.Shape())
	}
	assertSame(t, "vmapped init member", peel.Select(ens, 0, 1), HeNormal(FanIn)(peel.SplitKeys(peel.Key(4), 3)[1], peel.Float64, 4, 5), 0, 0)
	mustPanic(t, "nn.Zeros", func() { Zeros(nil, peel.Int64, 2) })
	mustPanic(t, "nn.VarianceScaling", func() { VarianceScaling(-1, FanIn, DistNormal)(peel.Key(1), peel.Float64, 2, 2) })
	mustPanic(t, "nn.VarianceScaling", func() { VarianceScaling(1, FanMode(7), DistNormal)(peel.Key(1), peel.Float64, 2, 2) })
	mustPanic(t, "nn.VarianceScaling", func() { VarianceScaling(1, FanIn, Distribution(7))(peel.Key(1), peel.Float64, 2, 2) })
	mustPanic(t, "nn.Uniform", func() { Uniform(1, 0)(peel.Key(1), peel.Float64, 2) })
	mustPanic(t, "nn.Normal", func() { Normal(1)(peel.FromInt64s([]int64{1}), peel.Float64, 2) })
}
