package nn

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
)

// Tolerances: the oracles are float64 loops over the same formulas, so
// forward values agree to a few ulps (rtol 1e-12); finite differences
// with step 1e-6 agree to about 1e-8 (rtol 1e-6, atol 1e-8).
const (
	fwdTol = 1e-12
	fdRtol = 1e-6
	fdAtol = 1e-8
)

// reduceRef reduces per-element losses as r does.
func reduceRef(l []float64, r Reduction, batch int) []float64 {
	s := 0.0
	for _, v := range l {
		s += v
	}
	switch r {
	case ReduceSum:
		return []float64{s}
	case ReduceNone:
		return l
	case ReduceBatchMean:
		return []float64{s / float64(batch)}
	}
	return []float64{s / float64(len(l))}
}

// elementwise losses and their float64 references, for table tests.
var elementwiseLosses = []struct {
	name string
	f    func(p, t *peel.Tensor, opts ...LossOption) *peel.Tensor
	ref  func(p, t float64) float64
}{
	{"MSE", MSE, func(p, t float64) float64 { return (p - t) * (p - t) }},
	{"L1", L1, func(p, t float64) float64 { return math.Abs(p - t) }},
	{"Huber", func(p, t *peel.Tensor, opts ...LossOption) *peel.Tensor { return Huber(p, t, 0.7, opts...) },
		func(p, t float64) float64 {
			d := math.Abs(p - t)
			if d < 0.7 {
				return 0.5 * d * d
			}
			return 0.7 * (d - 0.35)
		}},
	{"BinaryCrossEntropyWithLogits", BinaryCrossEntropyWithLogits, func(x, y float64) float64 {
		s := 1 / (1 + math.Exp(-x))
		return -y*math.Log(s) - (1-y)*math.Log(1-s)
	}},
	{"KLDiv", KLDiv, func(in, t float64) float64 {
		if t == 0 {
			return 0
		}
		return t * (math.Log(t) - in)
	}},
}

// lossTarget returns a target suitable for the loss: probabilities in
// [0, 1] (with exact zeros) for BCE and KLDiv.
func lossTarget(name string, seed uint64, shape ...int) *peel.Tensor {
	t := tensor(seed, shape...)
	if name == "BinaryCrossEntropyWithLogits" || name == "KLDiv" {
		v := t.Float64s()
		for i := range v {
			v[i] = 1 / (1 + math.Exp(-2*v[i]))
			if i%5 == 0 && name == "KLDiv" {
				v[i] = 0
			}
		}
		t = peel.FromFloat64s(v, shape...)
	}
	return t
}

func TestElementwiseLosses(t *testing.T) {
	for _, c := range elementwiseLosses {
		t.Run(c.name, func(t *testing.T) {
			p := tensor(1, 4, 5)
			y := lossTarget(c.name, 2, 4, 5)
			pv, yv := p.Float64s(), y.Float64s()
			per := make([]float64, len(pv))
			for i := range pv {
				per[i] = c.ref(pv[i], yv[i])
			}
			for _, r := range []Reduction{ReduceMean, ReduceSum, ReduceNone, ReduceBatchMean} {
				var shape []int
				if r == ReduceNone {
					shape = []int{4, 5}
				} else {
					shape = []int{}
				}
				assertClose(t, c.name, c.f(p, y, Reduce(r)), reduceRef(per, r, 4), shape, fwdTol, 1e-14)
			}
			// Default is the mean.
			assertSame(t, c.name+" default", c.f(p, y), c.f(p, y, Reduce(ReduceMean)), 0, 0)
			// float32 agrees to float32 precision.
			p32, y32 := peel.AsType(p, peel.Float32), peel.AsType(y, peel.Float32)
			got := c.f(p32, y32)
			if got.DType() != peel.Float32 {
				t.Fatalf("float32 loss has dtype %v", got.DType())
			}
			assertClose(t, c.name+" f32", got, reduceRef(per, ReduceMean, 4), []int{}, 1e-5, 1e-6)
			// Transforms: Grad vs finite differences in pred and target,
			// Vmap over a batch of rows, Compile.
			checkGradFD(t, c.name+" d/dpred", func(p *peel.Tensor) *peel.Tensor { return c.f(p, y) }, p, fdRtol, fdAtol)
			if c.name != "L1" && c.name != "Huber" && c.name != "KLDiv" {
				checkGradFD(t, c.name+" d/dtarget", func(y *peel.Tensor) *peel.Tensor { return c.f(p, y) }, y, fdRtol, fdAtol)
			}
			checkVmap(t, c.name, func(p *peel.Tensor) *peel.Tensor { return c.f(p, peel.Select(y, 0, 0)) }, p)
			checkCompile(t, c.name, func(p *peel.Tensor) *peel.Tensor { return c.f(p, y, Reduce(ReduceSum)) }, p)
			// Misuse.
			mustPanic(t, "nn."+c.name, func() { c.f(p, peel.Select(y, 0, 0)) })
			mustPanic(t, "nn."+c.name, func() { c.f(nil, y) })
			mustPanic(t, "nn."+c.name, func() { c.f(p, y, Reduce(Reduction(9))) })
			mustPanic(t, "nn."+c.name, func() { c.f(peel.AsType(p, peel.Int64), y) })
		})
	}
}

// ceRef is the float64 loop reference of CrossEntropy per sample for
// logits [n, c] and either labels or probability targets, with
// smoothing eps.
func ceRef(logits []float64, n, c int, lab []int64, probs []float64, eps float64) []float64 {
	out := make([]float64, n)
	for i := range n {
		row := logits[i*c : (i+1)*c]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		lse := m + math.Log(s)
		for j := range c {
			var tj float64
			if lab != nil {
				if int64(j) == lab[i] {
					tj = 1
				}
			} else {
				tj = probs[i*c+j]
			}
			tj = (1-eps)*tj + eps/float64(c)
			out[i] -= tj * (row[j] - lse)
		}
	}
	return out
}

func TestCrossEntropy(t *testing.T) {
	const n, c = 6, 5
	x := peel.Mul(tensor(3, n, c), 3)
	y := labels(4, c, n)
	pr := peel.Softmax(tensor(5, n, c), 1)
	for _, eps := range []float64{0, 0.1} {
		want := ceRef(x.Float64s(), n, c, y.Int64s(), nil, eps)
		assertClose(t, "CE labels", CrossEntropy(x, y, LabelSmoothing(eps), Reduce(ReduceNone)), want, []int{n}, fwdTol, 1e-14)
		assertClose(t, "CE labels mean", CrossEntropy(x, y, LabelSmoothing(eps)), reduceRef(want, ReduceMean, n), []int{}, fwdTol, 1e-14)
		wantP := ceRef(x.Float64s(), n, c, nil, pr.Float64s(), eps)
		assertClose(t, "CE probs", CrossEntropy(x, pr, LabelSmoothing(eps), Reduce(ReduceNone)), wantP, []int{n}, fwdTol, 1e-14)
		// Labels and their one-hot agree.
		assertSame(t, "CE labels vs one-hot", CrossEntropy(x, y, LabelSmoothing(eps)), CrossEntropy(x, peel.OneHot(y, c, peel.Float64), LabelSmoothing(eps)), 1e-12, 1e-14)
		checkGradFD(t, "CE", func(x *peel.Tensor) *peel.Tensor { return CrossEntropy(x, y, LabelSmoothing(eps)) }, x, fdRtol, fdAtol)
		checkGradFD(t, "CE probs", func(p *peel.Tensor) *peel.Tensor { return CrossEntropy(x, p, LabelSmoothing(eps)) }, pr, fdRtol, fdAtol)
	}
	// Large logits stay finite.
	big := peel.FromFloat64s([]float64{1000, -1000, 0, 0, 1000, 999}, 2, 3)
	assertClose(t, "CE large", CrossEntropy(big, peel.FromInt64s([]int64{1, 2}), Reduce(ReduceNone)),
		[]float64{2000, 1 + math.Log(1+math.Exp(-1))}, []int{2}, 1e-12, 1e-9)
	// Per-sample under Vmap: a row of logits and a scalar label.
	got := transformsVmap2(func(x, y *peel.Tensor) *peel.Tensor { return CrossEntropy(x, y) }, x, y)
	assertClose(t, "CE vmap", got, ceRef(x.Float64s(), n, c, y.Int64s(), nil, 0), []int{n}, fwdTol, 1e-14)
	checkCompile(t, "CE", func(x *peel.Tensor) *peel.Tensor { return CrossEntropy(x, y, LabelSmoothing(0.2)) }, x)
	// Leading batch dimensions.
	x3 := tensor(6, 2, 3, c)
	y3 := labels(7, c, 2, 3)
	assertClose(t, "CE rank 3", CrossEntropy(x3, y3, Reduce(ReduceNone)), ceRef(x3.Float64s(), 6, c, y3.Int64s(), nil, 0), []int{2, 3}, fwdTol, 1e-14)
	// Misuse.
	mustPanic(t, "nn.CrossEntropy", func() { CrossEntropy(x, labels(1, c, n, 1)) })
	mustPanic(t, "nn.CrossEntropy", func() { CrossEntropy(x, peel.Ones(peel.Float64, n)) })
	mustPanic(t, "nn.CrossEntropy", func() { CrossEntropy(x, peel.Ones(peel.Bool, n)) })
	mustPanic(t, "nn.CrossEntropy", func() { CrossEntropy(x, y, LabelSmoothing(1.5)) })
	mustPanic(t, "nn.CrossEntropy", func() { CrossEntropy(peel.Scalar(1.0), y) })
	mustPanic(t, "nn.CrossEntropy", func() { CrossEntropy(x, peel.FromInt64s([]int64{0, 1, 2, 3, 4, 5})) })
}

func TestNLL(t *testing.T) {
	const n, c = 7, 4
	lp := peel.LogSoftmax(tensor(8, n, c), 1)
	y := labels(9, c, n)
	lv, yv := lp.Float64s(), y.Int64s()
	per := make([]float64, n)
	for i := range n {
		per[i] = -lv[i*c+int(yv[i])]
	}
	for _, r := range []Reduction{ReduceMean, ReduceSum, ReduceNone} {
		var shape []int
		if r == ReduceNone {
			shape = []int{n}
		} else {
			shape = []int{}
		}
		assertClose(t, "NLL", NLL(lp, y, Reduce(r)), reduceRef(per, r, n), shape, fwdTol, 1e-14)
	}
	// NLL of LogSoftmax is CrossEntropy.
	x := tensor(10, n, c)
	assertSame(t, "NLL∘LogSoftmax vs CE", NLL(peel.LogSoftmax(x, -1), y), CrossEntropy(x, y), 1e-12, 1e-14)
	checkGradFD(t, "NLL", func(lp *peel.Tensor) *peel.Tensor { return NLL(lp, y) }, lp, fdRtol, fdAtol)
	got := transformsVmap2(func(x, y *peel.Tensor) *peel.Tensor { return NLL(x, y) }, lp, y)
	assertClose(t, "NLL vmap", got, per, []int{n}, fwdTol, 1e-14)
	checkCompile(t, "NLL", func(lp *peel.Tensor) *peel.Tensor { return NLL(lp, y) }, lp)
	mustPanic(t, "nn.NLL", func() { NLL(lp, peel.AsType(y, peel.Float64)) })
	mustPanic(t, "nn.NLL", func() { NLL(lp, y, LabelSmoothing(0.1)) })
}

func TestBinaryCrossEntropyStable(t *testing.T) {
	for _, dt := range floatDTypes {
		x := peel.AsType(peel.FromFloat64s([]float64{-800, -40, 0, 40, 800}), dt)
		y := peel.AsType(peel.FromFloat64s([]float64{1, 0.5, 0.5, 0, 1}), dt)
		want := []float64{800, 40 * 0.5, math.Ln2, 40, 0}
		// softplus(-40) ≈ 4.2e-18 is below the tolerance.
		assertClose(t, fmt.Sprintf("BCE large %v", dt), BinaryCrossEntropyWithLogits(x, y, Reduce(ReduceNone)), want, []int{5}, epsOf(dt), 1e-15)
		// The derivative is σ(x) - y, exact at 0 and in the tails.
		g := transformsGrad(func(x *peel.Tensor) *peel.Tensor {
			return BinaryCrossEntropyWithLogits(x, y, Reduce(ReduceSum))
		}, x)
		assertClose(t, fmt.Sprintf("BCE grad %v", dt), g, []float64{-1, -0.5, 0, 1, 0}, []int{5}, epsOf(dt), 1e-15)
	}
}

func TestKLDiv(t *testing.T) {
	lq := peel.LogSoftmax(tensor(11, 3, 4), 1)
	p := peel.Softmax(tensor(12, 3, 4), 1)
	pv, qv := p.Float64s(), lq.Float64s()
	per := make([]float64, len(pv))
	for i := range pv {
		per[i] = pv[i] * (math.Log(pv[i]) - qv[i])
	}
	assertClose(t, "KLDiv batchmean", KLDiv(lq, p, Reduce(ReduceBatchMean)), reduceRef(per, ReduceBatchMean, 3), []int{}, fwdTol, 1e-14)
	// LogTarget gives the same divergence from log p.
	assertSame(t, "KLDiv log target", KLDiv(lq, peel.Log(p), LogTarget(), Reduce(ReduceNone)), KLDiv(lq, p, Reduce(ReduceNone)), 1e-12, 1e-14)
	checkGradFD(t, "KLDiv log target d/dtarget", func(lp *peel.Tensor) *peel.Tensor {
		return KLDiv(lq, lp, LogTarget())
	}, peel.Log(p), fdRtol, fdAtol)
	for _, dt := range floatDTypes {
		// A zero target contributes 0 and has a zero (not NaN) derivative
		// with respect to the input.
		zt := peel.AsType(peel.FromFloat64s([]float64{0, 1}), dt)
		in := peel.AsType(peel.FromFloat64s([]float64{-1, -2}), dt)
		assertClose(t, fmt.Sprintf("KLDiv zero target %v", dt), KLDiv(in, zt, Reduce(ReduceNone)), []float64{0, 2}, []int{2}, 0, 0)
		g := transformsGrad(func(in *peel.Tensor) *peel.Tensor { return KLDiv(in, zt, Reduce(ReduceSum)) }, in)
		assertClose(t, fmt.Sprintf("KLDiv zero target grad %v", dt), g, []float64{0, -1}, []int{2}, 0, 0)
		// A negative target gives NaN, as torch.
		neg := peel.AsType(peel.FromFloat64s([]float64{-1, 1}), dt)
		assertClose(t, fmt.Sprintf("KLDiv negative target %v", dt), KLDiv(in, neg, Reduce(ReduceNone)), []float64{math.NaN(), 2}, []int{2}, 0, 0)
	}
}

// At their kinks L1 has derivative 0 (as torch's sign(0) = 0) and Huber
// is continuously differentiable: at |d| = delta its derivative is d.
func TestLossKinks(t *testing.T) {
	for _, dt := range floatDTypes {
		p := peel.AsType(peel.FromFloat64s([]float64{1, 2, -3}), dt)
		y := peel.AsType(peel.FromFloat64s([]float64{1, 1.5, -2.5}), dt)
		g := transformsGrad(func(p *peel.Tensor) *peel.Tensor { return L1(p, y, Reduce(ReduceSum)) }, p)
		assertClose(t, fmt.Sprintf("L1 grad at 0 %v", dt), g, []float64{0, 1, -1}, []int{3}, 0, 0)
		g = transformsGrad(func(p *peel.Tensor) *peel.Tensor { return Huber(p, y, 0.5, Reduce(ReduceSum)) }, p)
		assertClose(t, fmt.Sprintf("Huber grad at delta %v", dt), g, []float64{0, 0.5, -0.5}, []int{3}, 0, 0)
		mustPanic(t, "nn.Huber", func() { Huber(p, y, 0) })
	}
}
