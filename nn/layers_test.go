package nn

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// linearRef is x [n, in] · w [in, out] + b by loops.
func linearRef(x, w, b []float64, n, in, out int) []float64 {
	y := make([]float64, n*out)
	for i := range n {
		for o := range out {
			s := 0.0
			if b != nil {
				s = b[o]
			}
			for k := range in {
				s += x[i*in+k] * w[k*out+o]
			}
			y[i*out+o] = s
		}
	}
	return y
}

func TestLinear(t *testing.T) {
	const n, in, out = 5, 4, 3
	p := LinearParams{W: tensor(20, in, out), B: tensor(21, out)}
	x := tensor(22, n, in)
	assertClose(t, "Linear", Linear(p, x), linearRef(x.Float64s(), p.W.Float64s(), p.B.Float64s(), n, in, out), []int{n, out}, fwdTol, 1e-14)
	nb := LinearParams{W: p.W}
	assertClose(t, "Linear no bias", Linear(nb, x), linearRef(x.Float64s(), p.W.Float64s(), nil, n, in, out), []int{n, out}, fwdTol, 1e-14)
	// Leading dimensions and a single vector.
	x3 := tensor(23, 2, n, in)
	assertClose(t, "Linear rank 3", Linear(p, x3), linearRef(x3.Float64s(), p.W.Float64s(), p.B.Float64s(), 2*n, in, out), []int{2, n, out}, fwdTol, 1e-14)
	assertClose(t, "Linear rank 1", Linear(p, peel.Select(x, 0, 1)), linearRef(peel.Select(x, 0, 1).Float64s(), p.W.Float64s(), p.B.Float64s(), 1, in, out), []int{out}, fwdTol, 1e-14)
	loss := func(p LinearParams) *peel.Tensor { return sumAll(peel.Tanh(Linear(p, x))) }
	checkTreeGrad(t, "Linear", loss, p, fdRtol, fdAtol)
	checkGradFD(t, "Linear d/dx", func(x *peel.Tensor) *peel.Tensor { return sumAll(peel.Tanh(Linear(p, x))) }, x, fdRtol, fdAtol)
	checkVmap(t, "Linear", func(x *peel.Tensor) *peel.Tensor { return Linear(p, x) }, x)
	checkCompileTree(t, "Linear", loss, p)
	checkEnsemble(t, "Linear", func(p LinearParams) *peel.Tensor { return Linear(p, x) },
		[]LinearParams{p, {W: tensor(24, in, out), B: tensor(25, out)}, {W: tensor(26, in, out), B: tensor(27, out)}})
	// Init: shapes, dtypes, determinism, options.
	q := InitLinear(peel.Key(1), peel.Float32, in, out)
	if !slices.Equal(q.W.Shape(), []int{in, out}) || !slices.Equal(q.B.Shape(), []int{out}) || q.W.DType() != peel.Float32 {
		t.Fatalf("InitLinear: %v %v", q.W.TypeString(), q.B.TypeString())
	}
	assertSame(t, "InitLinear deterministic", InitLinear(peel.Key(1), peel.Float32, in, out).W, q.W, 0, 0)
	assertClose(t, "InitLinear bias", q.B, make([]float64, out), nil, 0, 0)
	if InitLinear(peel.Key(1), peel.Float64, in, out, NoBias()).B != nil {
		t.Fatal("NoBias left a bias")
	}
	assertClose(t, "InitLinear BiasInit", InitLinear(peel.Key(1), peel.Float64, in, out, BiasInit(Constant(0.5))).B, []float64{0.5, 0.5, 0.5}, nil, 0, 0)
	mustPanic(t, "nn.Linear", func() { Linear(p, tensor(1, n, in+1)) })
	mustPanic(t, "nn.Linear", func() { Linear(LinearParams{W: p.W, B: tensor(1, out+1)}, x) })
	// A bias of one element would broadcast: refused, as is one of rank 2.
	mustPanic(t, "nn.Linear", func() { Linear(LinearParams{W: p.W, B: tensor(1, 1)}, x) })
	mustPanic(t, "nn.Linear", func() { Linear(LinearParams{W: p.W, B: tensor(1, 1, out)}, x) })
	mustPanic(t, "nn.Linear", func() { Linear(LinearParams{}, x) })
	mustPanic(t, "nn.InitLinear", func() { InitLinear(peel.Key(1), peel.Int64, in, out) })
	mustPanic(t, "nn.InitLinear", func() { InitLinear(peel.Key(1), peel.Float64, -1, out) })
}

// sumAll is peel.Sum over every axis (a short name for the tests' losses).
func sumAll(x *peel.Tensor) *peel.Tensor { return peel.Sum(x) }

// conv2DRef is the NCHW/OIHW convolution with stride s and symmetric
// zero padding pad, plus bias b, by loops.
func conv2DRef(x, w, b []float64, n, c, h, wd, o, kh, kw, s, pad int) ([]float64, []int) {
	oh := (h+2*pad-kh)/s + 1
	ow := (wd+2*pad-kw)/s + 1
	y := make([]float64, n*o*oh*ow)
	for ni := range n {
		for oi := range o {
			for i := range oh {
				for j := range ow {
					acc := b[oi]
					for ci := range c {
						for u := range kh {
							for v := range kw {
								r, q := i*s+u-pad, j*s+v-pad
								if r < 0 || r >= h || q < 0 || q >= wd {
									continue
								}
								acc += x[((ni*c+ci)*h+r)*wd+q] * w[((oi*c+ci)*kh+u)*kw+v]
							}
						}
					}
					y[((ni*o+oi)*oh+i)*ow+j] = acc
				}
			}
		}
	}
	return y, []int{n, o, oh, ow}
}

func TestConv2D(t *testing.T) {
	const n, c, h, w, o, k = 2, 3, 5, 6, 4, 3
	p := InitConv2D(peel.Key(3), peel.Float64, c, o, k, BiasInit(Normal(1)))
	x := tensor(30, n, c, h, w)
	opts := []peel.ConvOption{peel.ConvStrides(2, 2), peel.ConvPadding(peel.ExplicitPadding([2]int{1, 1}, [2]int{1, 1}))}
	want, shape := conv2DRef(x.Float64s(), p.W.Float64s(), p.B.Float64s(), n, c, h, w, o, k, k, 2, 1)
	assertClose(t, "Conv2D", Conv2D(p, x, opts...), want, shape, fwdTol, 1e-13)
	loss := func(p Conv2DParams) *peel.Tensor { return sumAll(peel.Square(Conv2D(p, x, opts...))) }
	checkTreeGrad(t, "Conv2D", loss, p, fdRtol, 1e-7)
	checkGradFD(t, "Conv2D d/dx", func(x *peel.Tensor) *peel.Tensor { return sumAll(peel.Square(Conv2D(p, x, opts...))) }, x, fdRtol, 1e-7)
	// Vmap over images (each [C, H, W] gets a batch axis of 1 inside).
	checkVmap(t, "Conv2D", func(x *peel.Tensor) *peel.Tensor { return Conv2D(p, peel.Unsqueeze(x, 0), opts...) }, x)
	checkCompileTree(t, "Conv2D", loss, p)
	// Init: OIHW shape, fan-in c·k·k.
	if !slices.Equal(p.W.Shape(), []int{o, c, k, k}) || !slices.Equal(p.B.Shape(), []int{o}) {
		t.Fatalf("InitConv2D shapes %v %v", p.W.Shape(), p.B.Shape())
	}
	g := InitConv2D(peel.Key(3), peel.Float64, 4, 6, 3, Groups(2))
	if !slices.Equal(g.W.Shape(), []int{6, 2, 3, 3}) {
		t.Fatalf("grouped InitConv2D shape %v", g.W.Shape())
	}
	if r := InitConv2D(peel.Key(3), peel.Float64, 4, 6, 0, KernelSize(3, 5), Groups(2)); !slices.Equal(r.W.Shape(), []int{6, 2, 3, 5}) {
		t.Fatalf("InitConv2D with KernelSize(3, 5): shape %v", r.W.Shape())
	}
	mustPanic(t, "nn.InitConv2D", func() { InitConv2D(peel.Key(3), peel.Float64, 3, 4, 3, Groups(2)) })
	mustPanic(t, "nn.InitLinear", func() { InitLinear(peel.Key(3), peel.Float64, 3, 4, Groups(2)) })
	mustPanic(t, "nn.Conv2D", func() { Conv2D(Conv2DParams{W: p.W, B: tensor(1, o+1)}, x) })
	mustPanic(t, "nn.Conv2D", func() { Conv2D(p, tensor(1, n, c+1, h, w)) })
}

func TestEmbedding(t *testing.T) {
	p := InitEmbedding(peel.Key(4), peel.Float64, 7, 3)
	idx := peel.FromInt64s([]int64{0, 6, 2, 2, -1, 3}, 2, 3)
	tab := p.Table.Float64s()
	var want []float64
	for _, i := range idx.Int64s() {
		if i < 0 {
			i += 7
		}
		want = append(want, tab[i*3:i*3+3]...)
	}
	assertClose(t, "Embedding", Embedding(p, idx), want, []int{2, 3, 3}, 0, 0)
	// The gradient counts repeated rows.
	g := transforms.Grad(func(p EmbeddingParams) *peel.Tensor { return sumAll(Embedding(p, idx)) })(p)
	gw := make([]float64, 21)
	for _, i := range idx.Int64s() {
		if i < 0 {
			i += 7
		}
		for j := range 3 {
			gw[int(i)*3+j]++
		}
	}
	assertClose(t, "Embedding grad", g.Table, gw, []int{7, 3}, 0, 0)
	checkCompileTree(t, "Embedding", func(p EmbeddingParams) *peel.Tensor { return sumAll(peel.Square(Embedding(p, idx))) }, p)
	got := transforms.Vmap(func(i *peel.Tensor) *peel.Tensor { return Embedding(p, i) })(idx)
	assertClose(t, "Embedding vmap", got, want, []int{2, 3, 3}, 0, 0)
	mustPanic(t, "nn.Embedding", func() { Embedding(p, peel.FromInt64s([]int64{7})) })
	mustPanic(t, "nn.Embedding", func() { Embedding(p, peel.FromFloat64s([]float64{1})) })
}

// layerNormRef normalizes each row of x [n, d] and applies scale and
// bias (nil for none); rms selects RMSNorm.
func layerNormRef(x, scale, bias []float64, n, d int, eps float64, rms bool) []float64 {
	y := make([]float64, n*d)
	for i := range n {
		row := x[i*d : (i+1)*d]
		m := 0.0
		if !rms {
			for _, v := range row {
				m += v
			}
			m /= float64(d)
		}
		v := 0.0
		for _, e := range row {
			v += (e - m) * (e - m)
		}
		v /= float64(d)
		for j, e := range row {
			r := (e - m) / math.Sqrt(v+eps)
			if scale != nil {
				r *= scale[j]
			}
			if bias != nil {
				r += bias[j]
			}
			y[i*d+j] = r
		}
	}
	return y
}

func TestLayerNorm(t *testing.T) {
	const n, d = 4, 6
	p := LayerNormParams{Scale: tensor(40, d), Bias: tensor(41, d)}
	x := peel.Add(peel.Mul(tensor(42, n, d), 3), 2)
	assertClose(t, "LayerNorm", LayerNorm(p, x), layerNormRef(x.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, d, 1e-5, false), []int{n, d}, 1e-11, 1e-13)
	assertClose(t, "LayerNorm eps", LayerNorm(p, x, Eps(0.5)), layerNormRef(x.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, d, 0.5, false), []int{n, d}, 1e-11, 1e-13)
	assertClose(t, "LayerNorm no bias", LayerNorm(LayerNormParams{Scale: p.Scale}, x), layerNormRef(x.Float64s(), p.Scale.Float64s(), nil, n, d, 1e-5, false), []int{n, d}, 1e-11, 1e-13)
	// Normalizing over the last two dimensions is normalizing the
	// flattened rows.
	p2 := LayerNormParams{Scale: peel.Reshape(p.Scale, 2, 3), Bias: peel.Reshape(p.Bias, 2, 3)}
	assertClose(t, "LayerNorm 2-D shape", LayerNorm(p2, peel.Reshape(x, n, 2, 3)), layerNormRef(x.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, d, 1e-5, false), []int{n, 2, 3}, 1e-11, 1e-13)
	loss := func(p LayerNormParams) *peel.Tensor { return sumAll(peel.Mul(LayerNorm(p, x), tensor(43, n, d))) }
	checkTreeGrad(t, "LayerNorm", loss, p, fdRtol, fdAtol)
	checkGradFD(t, "LayerNorm d/dx", func(x *peel.Tensor) *peel.Tensor { return sumAll(peel.Mul(LayerNorm(p, x), tensor(43, n, d))) }, x, fdRtol, fdAtol)
	checkVmap(t, "LayerNorm", func(x *peel.Tensor) *peel.Tensor { return LayerNorm(p, x) }, x)
	checkCompileTree(t, "LayerNorm", loss, p)
	q := InitLayerNorm(peel.Float32, d)
	assertClose(t, "InitLayerNorm", q.Scale, []float64{1, 1, 1, 1, 1, 1}, []int{d}, 0, 0)
	mustPanic(t, "nn.LayerNorm", func() { LayerNorm(p, tensor(1, n, d+1)) })
	mustPanic(t, "nn.LayerNorm", func() { LayerNorm(LayerNormParams{}, x) })
	mustPanic(t, "nn.LayerNorm", func() { LayerNorm(p, nil) })
	mustPanic(t, "nn.LayerNorm", func() { LayerNorm(p, x, Eps(-1)) })
}

func TestRMSNorm(t *testing.T) {
	const n, d = 3, 5
	p := RMSNormParams{Scale: tensor(44, d)}
	x := tensor(45, n, d)
	assertClose(t, "RMSNorm", RMSNorm(p, x), layerNormRef(x.Float64s(), p.Scale.Float64s(), nil, n, d, 1e-6, true), []int{n, d}, 1e-11, 1e-13)
	loss := func(p RMSNormParams) *peel.Tensor { return sumAll(peel.Mul(RMSNorm(p, x), tensor(46, n, d))) }
	checkTreeGrad(t, "RMSNorm", loss, p, fdRtol, fdAtol)
	checkGradFD(t, "RMSNorm d/dx", func(x *peel.Tensor) *peel.Tensor { return sumAll(peel.Mul(RMSNorm(p, x), tensor(46, n, d))) }, x, fdRtol, fdAtol)
	checkVmap(t, "RMSNorm", func(x *peel.Tensor) *peel.Tensor { return RMSNorm(p, x) }, x)
	checkCompileTree(t, "RMSNorm", loss, p)
	mustPanic(t, "nn.RMSNorm", func() { RMSNorm(RMSNormParams{}, x) })
}

// batchNormRef is BatchNorm of x [n, c, l] in training mode by loops:
// the output, and the next running mean and var.
func batchNormRef(x, scale, bias, rm, rv []float64, n, c, l int, eps, mom float64) (y, nm, nv []float64) {
	y = make([]float64, n*c*l)
	nm, nv = make([]float64, c), make([]float64, c)
	cnt := float64(n * l)
	for ci := range c {
		m := 0.0
		for ni := range n {
			for li := range l {
				m += x[(ni*c+ci)*l+li]
			}
		}
		m /= cnt
		v := 0.0
		for ni := range n {
			for li := range l {
				d := x[(ni*c+ci)*l+li] - m
				v += d * d
			}
		}
		v /= cnt
		for ni := range n {
			for li := range l {
				i := (ni*c+ci)*l + li
				y[i] = (x[i]-m)/math.Sqrt(v+eps)*scale[ci] + bias[ci]
			}
		}
		nm[ci] = (1-mom)*rm[ci] + mom*m
		nv[ci] = (1-mom)*rv[ci] + mom*v*cnt/(cnt-1)
	}
	return y, nm, nv
}

func TestBatchNorm(t *testing.T) {
	const n, c, l = 4, 3, 5
	p := BatchNormParams{Scale: tensor(50, c), Bias: tensor(51, c)}
	s := BatchNormState{Mean: tensor(52, c), Var: peel.Exp(tensor(53, c))}
	x := peel.Add(tensor(54, n, c, l), 1.5)
	y, next := BatchNorm(p, s, x, true, Momentum(0.2))
	wy, wm, wv := batchNormRef(x.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), s.Mean.Float64s(), s.Var.Float64s(), n, c, l, 1e-5, 0.2)
	assertClose(t, "BatchNorm train", y, wy, []int{n, c, l}, 1e-11, 1e-13)
	assertClose(t, "BatchNorm running mean", next.Mean, wm, []int{c}, 1e-12, 1e-14)
	assertClose(t, "BatchNorm running var", next.Var, wv, []int{c}, 1e-12, 1e-14)
	// Evaluation mode normalizes with the running state, unchanged.
	ye, same := BatchNorm(p, next, x, false)
	if same != next {
		t.Fatal("BatchNorm eval changed the state")
	}
	xv, mv, vv, sc, bi := x.Float64s(), wm, wv, p.Scale.Float64s(), p.Bias.Float64s()
	we := make([]float64, len(xv))
	for i, e := range xv {
		ci := (i / l) % c
		we[i] = (e-mv[ci])/math.Sqrt(vv[ci]+1e-5)*sc[ci] + bi[ci]
	}
	assertClose(t, "BatchNorm eval", ye, we, []int{n, c, l}, 1e-11, 1e-13)
	// Two values per channel, the fewest training takes: the formula
	// still holds (the running variance's unbiased factor is 2).
	x2 := peel.Add(tensor(56, 2, c), 0.5)
	y2, next2 := BatchNorm(p, s, x2, true, Momentum(0.2))
	wy2, wm2, wv2 := batchNormRef(x2.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), s.Mean.Float64s(), s.Var.Float64s(), 2, c, 1, 1e-5, 0.2)
	assertClose(t, "BatchNorm train, n=2", y2, wy2, []int{2, c}, 1e-11, 1e-13)
	assertClose(t, "BatchNorm running mean, n=2", next2.Mean, wm2, []int{c}, 1e-12, 1e-14)
	assertClose(t, "BatchNorm running var, n=2", next2.Var, wv2, []int{c}, 1e-12, 1e-14)
	mustPanic(t, "nn.BatchNorm", func() { BatchNorm(p, s, tensor(57, 1, c), true) })
	// 4-D input (BatchNorm2d) equals the 3-D one with the spatial axes
	// flattened.
	y4, _ := BatchNorm(p, s, peel.Reshape(x, n, c, 1, l), true, Momentum(0.2))
	assertSame(t, "BatchNorm 4-D", peel.Reshape(y4, n, c, l), y, 1e-13, 1e-14)
	// Gradients in both modes; the running update carries none.
	w := tensor(55, n, c, l)
	for _, train := range []bool{true, false} {
		loss := func(p BatchNormParams) *peel.Tensor {
			y, _ := BatchNorm(p, s, x, train)
			return sumAll(peel.Mul(y, w))
		}
		checkTreeGrad(t, "BatchNorm", loss, p, fdRtol, fdAtol)
		checkGradFD(t, "BatchNorm d/dx", func(x *peel.Tensor) *peel.Tensor {
			y, _ := BatchNorm(p, s, x, train)
			return sumAll(peel.Mul(y, w))
		}, x, fdRtol, fdAtol)
		checkCompileTree(t, "BatchNorm", loss, p)
	}
	gx := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
		_, st := BatchNorm(p, s, x, true)
		return peel.Add(sumAll(st.Mean), sumAll(st.Var))
	})(x)
	assertClose(t, "BatchNorm running stats carry no gradient", gx, make([]float64, n*c*l), nil, 0, 0)
	// Compiled training step returning the new state.
	step := transforms.Compile(func(x *peel.Tensor) BatchNormState {
		_, st := BatchNorm(p, s, x, true, Momentum(0.2))
		return st
	})
	st := step(x)
	assertClose(t, "BatchNorm compiled state", st.Var, wv, []int{c}, 1e-12, 1e-14)
	// Vmap over a leading ensemble axis of inputs: per-member batch
	// statistics.
	xs := tensor(56, 2, n, c, l)
	checkVmap(t, "BatchNorm", func(x *peel.Tensor) *peel.Tensor { y, _ := BatchNorm(p, s, x, true); return y }, xs)
	mustPanic(t, "nn.BatchNorm", func() { BatchNorm(p, s, tensor(1, n), true) })
	mustPanic(t, "nn.BatchNorm", func() { BatchNorm(p, s, tensor(1, 1, c), true) })
	mustPanic(t, "nn.BatchNorm", func() { BatchNorm(p, BatchNormState{Mean: s.Mean}, x, true) })
	mustPanic(t, "nn.BatchNorm", func() { BatchNorm(p, s, tensor(1, n, c+1, l), false) })
	mustPanic(t, "nn.BatchNorm", func() { BatchNorm(p, s, x, true, Momentum(2)) })
	bp, bs := InitBatchNorm(peel.Float64, c)
	assertClose(t, "InitBatchNorm var", bs.Var, []float64{1, 1, 1}, []int{c}, 0, 0)
	assertClose(t, "InitBatchNorm bias", bp.Bias, []float64{0, 0, 0}, []int{c}, 0, 0)
}

func TestDropout(t *testing.T) {
	x := peel.Add(peel.Zeros(peel.Float64, 200, 100), 2.0)
	const rate = 0.3
	y := Dropout(peel.Key(5), x, rate, true)
	kept := 0
	for _, v := range y.Float64s() {
		switch {
		case v == 0:
		case math.Abs(v-2/(1-rate)) < 1e-12:
			kept++
		default:
			t.Fatalf("Dropout value %v is neither 0 nor x/(1-rate)", v)
		}
	}
	// 20000 Bernoulli(0.7) draws: 5 standard deviations is ±324.
	if frac := float64(kept) / 20000; math.Abs(frac-0.7) > 5*math.Sqrt(0.7*0.3/20000) {
		t.Fatalf("kept fraction %v, want about 0.7", frac)
	}
	// The mean is preserved in expectation.
	if m := peel.Mean(y).Item(); math.Abs(m-2) > 0.05 {
		t.Fatalf("mean after dropout %v, want about 2", m)
	}
	assertSame(t, "Dropout deterministic", Dropout(peel.Key(5), x, rate, true), y, 0, 0)
	if Dropout(nil, x, rate, false) != x || Dropout(nil, x, 0, true) != x {
		t.Fatal("Dropout in eval mode or at rate 0 is not the identity")
	}
	for _, dt := range floatDTypes {
		// Rate 1 drops everything (no 0/0), in every float dtype.
		d1 := Dropout(peel.Key(5), peel.Ones(dt, 3), 1, true)
		assertClose(t, fmt.Sprintf("Dropout rate 1 %v", dt), d1, []float64{0, 0, 0}, nil, 0, 0)
		g1 := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return sumAll(Dropout(peel.Key(5), x, 1, true)) })(peel.Ones(dt, 3))
		assertClose(t, fmt.Sprintf("Dropout rate 1 grad %v", dt), g1, []float64{0, 0, 0}, nil, 0, 0)
		if d1.DType() != dt {
			t.Fatalf("Dropout of %v gives %v", dt, d1.DType())
		}
	}
	// The gradient is the mask scaled.
	small := tensor(60, 4, 5)
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return sumAll(Dropout(peel.Key(6), x, 0.5, true)) })(small)
	m := Dropout(peel.Key(6), peel.Ones(peel.Float64, 4, 5), 0.5, true)
	assertSame(t, "Dropout grad", g, m, 0, 0)
	checkCompile(t, "Dropout", func(x *peel.Tensor) *peel.Tensor { return Dropout(peel.Key(6), x, 0.5, true) }, small)
	// Vmap over keys draws independent masks.
	keys := peel.SplitKeysStacked(peel.Key(7), 3)
	ms := transforms.Vmap(func(k *peel.Tensor) *peel.Tensor { return Dropout(k, peel.Ones(peel.Float64, 50), 0.5, true) })(keys)
	a, b := peel.Select(ms, 0, 0).Float64s(), peel.Select(ms, 0, 1).Float64s()
	diff := 0
	for i := range a {
		if a[i] != b[i] {
			diff++
		}
	}
	if diff == 0 {
		t.Fatal("vmapped keys gave identical masks")
	}
	mustPanic(t, "nn.Dropout", func() { Dropout(peel.Key(1), x, 1.5, true) })
	mustPanic(t, "nn.Dropout", func() { Dropout(peel.Key(1), peel.Ones(peel.Int64, 2), 0.5, true) })
}

// A grouped Conv2D is the concatenation of the groups' convolutions.
func TestConv2DGroups(t *testing.T) {
	p := InitConv2D(peel.Key(12), peel.Float64, 4, 6, 3, Groups(2), BiasInit(Normal(1)))
	x := tensor(31, 2, 4, 5, 5)
	got := Conv2D(p, x, peel.ConvGroups(2))
	var parts []*peel.Tensor
	for g := range 2 {
		pg := Conv2DParams{W: peel.Narrow(p.W, 0, 3*g, 3), B: peel.Narrow(p.B, 0, 3*g, 3)}
		parts = append(parts, Conv2D(pg, peel.Narrow(x, 1, 2*g, 2)))
	}
	assertSame(t, "grouped Conv2D", got, peel.Concat(parts, 1), 1e-12, 1e-13)
}

// cnn is a small convolutional network of this package's layers.
type cnn struct {
	Conv Conv2DParams
	BN   BatchNormParams
	Out  LinearParams
}

func (m cnn) logits(s BatchNormState, x *peel.Tensor) *peel.Tensor {
	h := Conv2D(m.Conv, x, peel.ConvPadding(peel.SamePadding))
	h, _ = BatchNorm(m.BN, s, h, false)
	h = peel.MaxPool2D(peel.ReLU(h), 2)
	return Linear(m.Out, peel.Flatten(h, 1))
}

// Per-sample gradients of a CNN (Vmap of Grad) agree with a loop of
// Grads, and Compile of Grad with Grad; the pooling wrappers are peel's.
func TestCNNPerSampleGrads(t *testing.T) {
	ks := peel.SplitKeys(peel.Key(20), 2)
	bp, bs := InitBatchNorm(peel.Float64, 3)
	m := cnn{Conv: InitConv2D(ks[0], peel.Float64, 2, 3, 3), BN: bp, Out: InitLinear(ks[1], peel.Float64, 3*2*2, 4)}
	x := tensor(90, 5, 2, 4, 4)
	y := labels(91, 4, 5)
	loss := func(m cnn, x, y *peel.Tensor) *peel.Tensor { return CrossEntropy(m.logits(bs, x), y) }
	one := func(m cnn, x, y *peel.Tensor) *peel.Tensor {
		return loss(m, peel.Unsqueeze(x, 0), peel.Unsqueeze(y, 0))
	}
	per := transforms.Vmap3(transforms.Grad3(one), transforms.InAxes(transforms.NoAxis, 0, 0))(m, x, y)
	for i := range 5 {
		g := transforms.Grad3(one)(m, peel.Select(x, 0, i), peel.Select(y, 0, i))
		assertSame(t, "per-sample conv grad", peel.Select(per.Conv.W, 0, i), g.Conv.W, 1e-12, 1e-13)
		assertSame(t, "per-sample linear grad", peel.Select(per.Out.W, 0, i), g.Out.W, 1e-12, 1e-13)
	}
	// The mean of the per-sample gradients is the batch gradient.
	avg := transforms.Grad3(loss)(m, x, y)
	assertSame(t, "mean of per-sample grads", peel.Mean(per.BN.Scale, 0), avg.BN.Scale, 1e-12, 1e-13)
	compiled := transforms.Compile3(transforms.Grad3(loss))(m, x, y)
	assertSame(t, "compiled grad", compiled.Conv.W, avg.Conv.W, 1e-12, 1e-13)
	checkTreeGrad(t, "CNN", func(m cnn) *peel.Tensor { return loss(m, x, y) }, m, fdRtol, fdAtol)
	pad := peel.ValidPadding
	// The pooling a model of this package uses is peel's (nn has no alias
	// of it): a 2×2 mean at stride 1 is the mean of four shifted windows.
	shifted := func(i, j int) *peel.Tensor { return peel.Narrow(peel.Narrow(x, 2, i, 3), 3, j, 3) }
	want := peel.Div(peel.Add(peel.Add(shifted(0, 0), shifted(0, 1)), peel.Add(shifted(1, 0), shifted(1, 1))), 4.0)
	assertSame(t, "AvgPool2D", peel.AvgPool2D(x, 2, peel.ConvStrides(1), peel.ConvPadding(pad)), want, 1e-12, 1e-13)
}

// TestTorchInit: TorchInit draws weight and bias uniform in ±1/√fan_in
// (torch's kaiming_uniform_(a=√5) and its bias rule), with fan_in the
// inputs of one unit: in for Linear, in/groups·kh·kw for Conv2D; a
// WeightInit after it wins.
func TestTorchInit(t *testing.T) {
	check := func(name string, x *peel.Tensor, fanIn int) {
		t.Helper()
		b := 1 / math.Sqrt(float64(fanIn))
		v := x.Float64s()
		lo, hi, sq := math.Inf(1), math.Inf(-1), 0.0
		for _, e := range v {
			lo, hi, sq = min(lo, e), max(hi, e), sq+e*e
		}
		std := math.Sqrt(sq / float64(len(v)))
		if lo < -b || hi >= b || lo > -0.9*b || hi < 0.9*b || math.Abs(std-b/math.Sqrt(3)) > 0.1*b {
			t.Errorf("%s: range [%v, %v], std %v; want uniform in ±%v (std %v)", name, lo, hi, std, b, b/math.Sqrt(3))
		}
	}
	l := InitLinear(peel.Key(1), peel.Float64, 400, 300, TorchInit())
	check("Linear W", l.W, 400)
	check("Linear B", l.B, 400)
	c := InitConv2D(peel.Key(2), peel.Float64, 8, 64, 5, Groups(2), TorchInit())
	check("Conv2D W", c.W, 8/2*5*5)
	check("Conv2D B", c.B, 8/2*5*5)
	z := InitLinear(peel.Key(1), peel.Float64, 4, 3, TorchInit(), WeightInit(Zeros))
	if s := peel.Sum(peel.Abs(z.W)).Float64s()[0]; s != 0 {
		t.Errorf("WeightInit after TorchInit: |W| sums to %v", s)
	}
}
