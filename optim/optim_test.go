package optim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// model is a parameter tree with nested structs, a slice and a map: its
// leaves in tree order are Layers[0].W [2,2], Layers[0].B [2],
// Layers[1].W [2,1], Layers[1].B [1], Extra["scale"] [], Head.V [4]: 14
// elements.
type block struct{ W, B *peel.Tensor }

type head struct{ V *peel.Tensor }

type model struct {
	Layers []block
	Extra  map[string]*peel.Tensor
	Head   head
}

const nElems = 14

// newModel returns the model whose raveled leaves are x.
func newModel(x []float64) model {
	like := model{
		Layers: []block{
			{W: peel.Zeros(peel.Float64, 2, 2), B: peel.Zeros(peel.Float64, 2)},
			{W: peel.Zeros(peel.Float64, 2, 1), B: peel.Zeros(peel.Float64, 1)},
		},
		Extra: map[string]*peel.Tensor{"scale": peel.Zeros(peel.Float64)},
		Head:  head{V: peel.Zeros(peel.Float64, 4)},
	}
	_, unravel := tree.Ravel(like)
	return unravel(peel.FromFloat64s(append([]float64(nil), x...)))
}

// flat returns the raveled leaves of m.
func flat(m model) []float64 {
	v, _ := tree.Ravel(m)
	return v.Float64s()
}

// problem is a smooth objective on nElems variables: its loss on a
// model, built of peel ops, and its gradient on the raveled vector, in
// float64 Go loops (the oracle).
type problem struct {
	name string
	loss func(m model) *peel.Tensor
	grad func(x []float64) []float64
	x0   []float64
}

// quadratic is ½xᵀAx - bᵀx with A = MᵀM/n + ½I, M and b uniform in
// [-1, 1), and x0 in [-2, 2).
func quadratic(seed uint64) problem {
	r := rand.New(rand.NewPCG(seed, 1))
	n := nElems
	m := make([]float64, n*n)
	for i := range m {
		m[i] = 2*r.Float64() - 1
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			s := 0.0
			for k := range n {
				s += m[k*n+i] * m[k*n+j]
			}
			a[i*n+j] = s / float64(n)
			if i == j {
				a[i*n+j] += 0.5
			}
		}
	}
	b := make([]float64, n)
	x0 := make([]float64, n)
	for i := range b {
		b[i] = 2*r.Float64() - 1
		x0[i] = 4*r.Float64() - 2
	}
	at, bt := peel.FromFloat64s(a, n, n), peel.FromFloat64s(b, n)
	return problem{
		name: "quadratic",
		loss: func(p model) *peel.Tensor {
			x, _ := tree.Ravel(p)
			return peel.Sub(peel.Mul(peel.Sum(peel.Mul(x, peel.MatMul(at, x))), 0.5), peel.Sum(peel.Mul(bt, x)))
		},
		grad: func(x []float64) []float64 {
			g := make([]float64, n)
			for i := range n {
				s := -b[i]
				for j := range n {
					s += a[i*n+j] * x[j]
				}
				g[i] = s
			}
			return g
		},
		x0: x0,
	}
}

// rosenbrock is (Σ (1-x[2i])² + 10·(x[2i+1] - x[2i]²)²)/20 over the
// pairs (a milder, scaled Rosenbrock), from x0 in [-1, 1).
func rosenbrock(seed uint64) problem {
	r := rand.New(rand.NewPCG(seed, 2))
	x0 := make([]float64, nElems)
	for i := range x0 {
		x0[i] = 2*r.Float64() - 1
	}
	return problem{
		name: "rosenbrock",
		loss: func(p model) *peel.Tensor {
			x, _ := tree.Ravel(p)
			xs := peel.Reshape(x, nElems/2, 2)
			u, v := peel.Select(xs, 1, 0), peel.Select(xs, 1, 1)
			return peel.Mul(peel.Sum(peel.Add(peel.Square(peel.Sub(1.0, u)), peel.Mul(peel.Square(peel.Sub(v, peel.Square(u))), 10.0))), 0.05)
		},
		grad: func(x []float64) []float64 {
			g := make([]float64, len(x))
			for i := 0; i < len(x); i += 2 {
				u, v := x[i], x[i+1]
				d := v - u*u
				g[i] = 0.05 * (-2*(1-u) - 40*d*u)
				g[i+1] = 0.05 * (20 * d)
			}
			return g
		},
		x0: x0,
	}
}

// reference is a hand-written optimizer step on the raveled parameters:
// it updates x in place from gradient g at step t (from 1).
type reference func(x, g []float64, t int)

// grow returns s, or when it is nil a slice of n times v (a reference's
// state, sized at its first step).
func grow(s []float64, n int, v float64) []float64 {
	if s != nil {
		return s
	}
	s = make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func constLR(lr float64) func(int) float64 { return func(int) float64 { return lr } }

func refSGD(lr func(int) float64, momentum float64, nesterov bool) reference {
	var tr []float64
	return func(x, g []float64, t int) {
		tr = grow(tr, len(x), 0)
		for i := range x {
			u := g[i]
			if momentum != 0 {
				tr[i] = g[i] + momentum*tr[i]
				u = tr[i]
				if nesterov {
					u = g[i] + momentum*tr[i]
				}
			}
			x[i] += -lr(t-1) * u
		}
	}
}

func refAdam(lr func(int) float64, b1, b2, eps, epsRoot, wd float64) reference {
	var m, v []float64
	return func(x, g []float64, t int) {
		m, v = grow(m, len(x), 0), grow(v, len(x), 0)
		for i := range x {
			m[i] = b1*m[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			mh := m[i] / (1 - math.Pow(b1, float64(t)))
			vh := v[i] / (1 - math.Pow(b2, float64(t)))
			u := mh/(math.Sqrt(vh+epsRoot)+eps) + wd*x[i]
			x[i] += -lr(t-1) * u
		}
	}
}

func refRMSProp(lr func(int) float64, decay, eps float64, centered bool, momentum float64, nesterov bool) reference {
	var mu, nu, tr []float64
	return func(x, g []float64, t int) {
		mu, nu, tr = grow(mu, len(x), 0), grow(nu, len(x), 0), grow(tr, len(x), 0)
		for i := range x {
			nu[i] = decay*nu[i] + (1-decay)*g[i]*g[i]
			d := nu[i]
			if centered {
				mu[i] = decay*mu[i] + (1-decay)*g[i]
				d -= mu[i] * mu[i]
			}
			u := -lr(t-1) * g[i] / math.Sqrt(d+eps)
			if momentum != 0 {
				tr[i] = u + momentum*tr[i]
				u = tr[i]
				if nesterov {
					u = -lr(t-1)*g[i]/math.Sqrt(d+eps) + momentum*tr[i]
				}
			}
			x[i] += u
		}
	}
}

func refAdagrad(lr func(int) float64, init, eps float64) reference {
	var s []float64
	return func(x, g []float64, t int) {
		s = grow(s, len(x), init)
		for i := range x {
			s[i] += g[i] * g[i]
			u := 0.0
			if s[i] > 0 {
				u = g[i] / math.Sqrt(s[i]+eps)
			}
			x[i] += -lr(t-1) * u
		}
	}
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func refLion(lr func(int) float64, b1, b2, wd float64) reference {
	var m []float64
	return func(x, g []float64, t int) {
		m = grow(m, len(x), 0)
		for i := range x {
			u := sign(b1*m[i]+(1-b1)*g[i]) + wd*x[i]
			m[i] = b2*m[i] + (1-b2)*g[i]
			x[i] += -lr(t-1) * u
		}
	}
}

// refClipNorm wraps next with global-norm clipping of the gradient.
func refClipNorm(maxNorm float64, next reference) reference {
	return func(x, g []float64, t int) {
		s := 0.0
		for _, v := range g {
			s += v * v
		}
		n := math.Sqrt(s)
		c := append([]float64(nil), g...)
		if n >= maxNorm {
			for i := range c {
				c[i] = c[i] / n * maxNorm
			}
		}
		next(x, c, t)
	}
}

// refClip wraps next with elementwise clipping of the gradient.
func refClip(maxAbs float64, next reference) reference {
	return func(x, g []float64, t int) {
		c := make([]float64, len(g))
		for i, v := range g {
			c[i] = math.Max(-maxAbs, math.Min(maxAbs, v))
		}
		next(x, c, t)
	}
}

// refCosine is optax's cosine decay at step t.
func refCosine(init float64, steps int, alpha float64) func(int) float64 {
	return func(t int) float64 {
		c := math.Min(float64(t), float64(steps))
		return init * ((1-alpha)*0.5*(1+math.Cos(math.Pi*c/float64(steps))) + alpha)
	}
}

// refPoly is optax's polynomial schedule at step t.
func refPoly(init, end, power float64, steps int) func(int) float64 {
	return func(t int) float64 {
		c := math.Max(0, math.Min(float64(t), float64(steps)))
		return (init-end)*math.Pow(1-c/float64(steps), power) + end
	}
}

// refWarmupCosine is optax's warmup_cosine_decay_schedule at step t.
func refWarmupCosine(init, peak float64, warmup, decay int, end float64) func(int) float64 {
	cos := refCosine(peak, decay-warmup, end/peak)
	lin := refPoly(init, peak, 1, warmup)
	return func(t int) float64 {
		if t < warmup {
			return lin(t)
		}
		return cos(t - warmup)
	}
}

type optCase struct {
	name string
	opt  optim.Transformation[model]
	ref  func() reference
}

func optCases() []optCase {
	return []optCase{
		{"SGD", optim.SGD[model](0.05), func() reference { return refSGD(constLR(0.05), 0, false) }},
		{"SGD/momentum", optim.SGD[model](0.02, optim.Momentum(0.9)), func() reference { return refSGD(constLR(0.02), 0.9, false) }},
		{"SGD/nesterov", optim.SGD[model](0.02, optim.Momentum(0.8), optim.Nesterov()), func() reference { return refSGD(constLR(0.02), 0.8, true) }},
		{"SGD/linear", optim.SGD[model](optim.LinearDecay(0.1, 0.01, 60)), func() reference { return refSGD(refPoly(0.1, 0.01, 1, 60), 0, false) }},
		{"SGD/momentum/exponential", optim.SGD[model](optim.ExponentialDecay(0.03, 20, 0.5, optim.Staircase()), optim.Momentum(0.8)), func() reference {
			return refSGD(func(t int) float64 { return 0.03 * math.Pow(0.5, math.Floor(float64(t)/20)) }, 0.8, false)
		}},
		{"Adam", optim.Adam[model](0.05), func() reference { return refAdam(constLR(0.05), 0.9, 0.999, 1e-8, 0, 0) }},
		{"Adam/options", optim.Adam[model](0.03, optim.Betas(0.8, 0.99), optim.Eps(1e-3), optim.EpsRoot(1e-6)), func() reference {
			return refAdam(constLR(0.03), 0.8, 0.99, 1e-3, 1e-6, 0)
		}},
		{"Adam/cosine", optim.Adam[model](optim.CosineDecay(0.1, 80, 0.1)), func() reference { return refAdam(refCosine(0.1, 80, 0.1), 0.9, 0.999, 1e-8, 0, 0) }},
		{"Adam/warmup-cosine", optim.Adam[model](optim.WarmupCosineDecay(0, 0.1, 10, 90, 0.001)), func() reference {
			return refAdam(refWarmupCosine(0, 0.1, 10, 90, 0.001), 0.9, 0.999, 1e-8, 0, 0)
		}},
		{"AdamW", optim.AdamW[model](0.05), func() reference { return refAdam(constLR(0.05), 0.9, 0.999, 1e-8, 0, 1e-4) }},
		{"AdamW/decay", optim.AdamW[model](0.05, optim.WeightDecay(0.1), optim.Betas(0.85, 0.995)), func() reference {
			return refAdam(constLR(0.05), 0.85, 0.995, 1e-8, 0, 0.1)
		}},
		{"RMSProp", optim.RMSProp[model](0.01), func() reference { return refRMSProp(constLR(0.01), 0.9, 1e-8, false, 0, false) }},
		{"RMSProp/centered", optim.RMSProp[model](0.01, optim.Centered(), optim.Decay(0.95), optim.Eps(1e-4)), func() reference {
			return refRMSProp(constLR(0.01), 0.95, 1e-4, true, 0, false)
		}},
		{"RMSProp/momentum", optim.RMSProp[model](0.005, optim.Momentum(0.5)), func() reference { return refRMSProp(constLR(0.005), 0.9, 1e-8, false, 0.5, false) }},
		{"RMSProp/nesterov", optim.RMSProp[model](0.005, optim.Momentum(0.5), optim.Nesterov()), func() reference {
			return refRMSProp(constLR(0.005), 0.9, 1e-8, false, 0.5, true)
		}},
		{"Adagrad", optim.Adagrad[model](0.3), func() reference { return refAdagrad(constLR(0.3), 0.1, 1e-7) }},
		{"Adagrad/zero-init", optim.Adagrad[model](0.3, optim.InitialAccumulator(0), optim.Eps(1e-10)), func() reference { return refAdagrad(constLR(0.3), 0, 1e-10) }},
		{"Lion", optim.Lion[model](0.01), func() reference { return refLion(constLR(0.01), 0.9, 0.99, 1e-3) }},
		{"Lion/options", optim.Lion[model](0.02, optim.Betas(0.95, 0.98), optim.WeightDecay(0.05)), func() reference {
			return refLion(constLR(0.02), 0.95, 0.98, 0.05)
		}},
		{"Chain/clip-norm+SGD", optim.Chain(optim.ClipByGlobalNorm[model](1), optim.SGD[model](0.1, optim.Momentum(0.5))), func() reference {
			return refClipNorm(1, refSGD(constLR(0.1), 0.5, false))
		}},
		{"Chain/clip+Adam", optim.Chain(optim.Clip[model](0.5), optim.Adam[model](0.05)), func() reference {
			return refClip(0.5, refAdam(constLR(0.05), 0.9, 0.999, 1e-8, 0, 0))
		}},
		{"Chain/handmade AdamW", optim.Chain(
			optim.ScaleByAdam[model](optim.Betas(0.9, 0.99)),
			optim.AddDecayedWeights[model](0.01),
			optim.ScaleByLearningRate[model](optim.PolynomialDecay(0.05, 0.005, 2, 70)),
		), func() reference { return refAdam(refPoly(0.05, 0.005, 2, 70), 0.9, 0.99, 1e-8, 0, 0.01) }},
		{"Chain/trace", optim.Chain(optim.Trace[model](0.7, optim.Nesterov()), optim.ScaleByLearningRate[model](0.02)), func() reference {
			return refSGD(constLR(0.02), 0.7, true)
		}},
	}
}

// The oracle: the reference gets the gradients the optimizer got
// (transforms.Grad's, checked against the problem's hand-written gradient
// to 1e-12), so that the rounding differences of the two (the order of a
// few sums, Pow and Rsqrt) are not amplified by the dynamics (a
// normalized step near a minimum is chaotic), and after each of 100 steps
// every parameter is within 1e-12·(1+|x|) of it.
const oracleTol = 1e-12

func TestOptimizersAgainstReference(t *testing.T) {
	for _, prob := range []problem{quadratic(1), rosenbrock(2)} {
		for _, c := range optCases() {
			t.Run(prob.name+"/"+c.name, func(t *testing.T) {
				params := newModel(prob.x0)
				state := c.opt.Init(params)
				x := append([]float64(nil), prob.x0...)
				ref := c.ref()
				grad := transforms.Grad(prob.loss)
				start := lossAt(prob, x)
				for step := 1; step <= 100; step++ {
					var u model
					g := grad(params)
					gx, want := flat(g), prob.grad(flat(params))
					for i := range gx {
						if d := math.Abs(gx[i] - want[i]); !(d <= 1e-12*(1+math.Abs(want[i]))) {
							t.Fatalf("step %d: the gradient's [%d] is %.17g, want %.17g", step, i, gx[i], want[i])
						}
					}
					u, state = c.opt.Update(g, state, params)
					params = optim.ApplyUpdates(params, u)
					ref(x, gx, step)
					got := flat(params)
					for i := range x {
						if d := math.Abs(got[i] - x[i]); !(d <= oracleTol*(1+math.Abs(x[i]))) {
							t.Fatalf("step %d: x[%d] = %.17g, reference %.17g (diff %.3g)", step, i, got[i], x[i], d)
						}
					}
				}
				if end := lossAt(prob, x); !(end < start) {
					t.Errorf("the loss went from %g to %g", start, end)
				}
			})
		}
	}
}

func lossAt(p problem, x []float64) float64 { return p.loss(newModel(x)).Item() }

func TestScheduleFormulas(t *testing.T) {
	counts := make([]int64, 130)
	for i := range counts {
		counts[i] = int64(i) - 5 // negative counts too: held at the start
	}
	join := optim.Join([]optim.Schedule{optim.Constant(1), optim.LinearDecay(1, 0.5, 20), optim.CosineDecay(0.5, 30, 0)}, []int{10, 40})
	warm := optim.Warmup(0.01, 15, optim.CosineDecay(0.2, 50, 0.05))
	cases := []struct {
		name string
		s    optim.Schedule
		want func(t int) float64
	}{
		{"Constant", optim.Constant(0.3), constLR(0.3)},
		{"LinearDecay", optim.LinearDecay(1, 0.1, 40), refPoly(1, 0.1, 1, 40)},
		{"PolynomialDecay", optim.PolynomialDecay(2, 0.5, 3, 70), refPoly(2, 0.5, 3, 70)},
		{"PolynomialDecay/increasing", optim.PolynomialDecay(0.1, 1, 0.5, 25), refPoly(0.1, 1, 0.5, 25)},
		{"CosineDecay", optim.CosineDecay(0.5, 100, 0), refCosine(0.5, 100, 0)},
		{"ExponentialDecay", optim.ExponentialDecay(0.5, 30, 0.1), func(t int) float64 { return 0.5 * math.Pow(0.1, math.Max(0, float64(t))/30) }},
		{"ExponentialDecay/staircase", optim.ExponentialDecay(2, 25, 0.5, optim.Staircase()), func(t int) float64 { return 2 * math.Pow(0.5, math.Floor(math.Max(0, float64(t))/25)) }},
		{"ExponentialDecay/begin+end", optim.ExponentialDecay(0.5, 30, 0.1, optim.TransitionBegin(20), optim.EndValue(0.1)), func(t int) float64 {
			return math.Max(0.1, 0.5*math.Pow(0.1, math.Max(0, float64(t)-20)/30))
		}},
		{"ExponentialDecay/growth", optim.ExponentialDecay(0.01, 10, 1.5), func(t int) float64 { return 0.01 * math.Pow(1.5, math.Max(0, float64(t))/10) }},
		{"CosineDecay/alpha", optim.CosineDecay(0.5, 60, 0.2), refCosine(0.5, 60, 0.2)},
		{"WarmupCosineDecay", optim.WarmupCosineDecay(0.01, 1, 20, 100, 0.05), refWarmupCosine(0.01, 1, 20, 100, 0.05)},
		{"Join", join, func(t int) float64 {
			switch {
			case t < 10:
				return 1
			case t < 40:
				return refPoly(1, 0.5, 1, 20)(t - 10)
			}
			return refCosine(0.5, 30, 0)(t - 40)
		}},
		{"Warmup", warm, func(t int) float64 {
			if t < 15 {
				f := math.Max(0, float64(t)) / 15
				return 0.01 + f*(0.2-0.01)
			}
			return refCosine(0.2, 50, 0.05)(t - 15)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.s(peel.FromInt64s(counts)).Float64s()
			for i, n := range counts {
				want := c.want(int(n))
				if d := math.Abs(got[i] - want); !(d <= 1e-14*(1+math.Abs(want))) {
					t.Fatalf("at count %d: %.17g, want %.17g", n, got[i], want)
				}
				// A scalar count gives the same value.
				if i%17 == 0 {
					if s := c.s(peel.Scalar(n)); s.Rank() != 0 || s.Item() != got[i] {
						t.Fatalf("at scalar count %d: %v, vector gave %v", n, s, got[i])
					}
				}
			}
		})
	}
}

// TestOptionalParameters: a parameter tree with a nil tensor (a layer
// without bias) steps every optimizer as the same tree without the
// field: the state and the updates have nil there too.
func TestOptionalParameters(t *testing.T) {
	type layer struct{ W, B *peel.Tensor }
	type bare struct{ W *peel.Tensor }
	w := peel.FromFloat64s([]float64{0.5, -1, 2})
	g := peel.FromFloat64s([]float64{0.1, 0.2, -0.3})
	opt := optim.Chain(optim.ClipByGlobalNorm[layer](0.2), optim.AdamW[layer](0.1))
	ref := optim.Chain(optim.ClipByGlobalNorm[bare](0.2), optim.AdamW[bare](0.1))
	p, st := layer{W: w}, opt.Init(layer{W: w})
	q, rst := bare{W: w}, ref.Init(bare{W: w})
	for range 3 {
		var u layer
		u, st = opt.Update(layer{W: g}, st, p)
		if u.B != nil {
			t.Fatalf("the update of the nil bias is %s", u.B.TypeString())
		}
		p = optim.ApplyUpdates(p, u)
		var v bare
		v, rst = ref.Update(bare{W: g}, rst, q)
		q = optim.ApplyUpdates(q, v)
	}
	if p.B != nil || !slices.Equal(p.W.Float64s(), q.W.Float64s()) {
		t.Errorf("with a nil bias: W = %v, B = %v; without the field: W = %v", p.W.Float64s(), p.B, q.W.Float64s())
	}
}

// TestStartInfersTheTree: Start with each optimizer infers the
// parameters' type and steps as the optimizer written with its type
// argument.
func TestStartInfersTheTree(t *testing.T) {
	type mlp struct{ W, B *peel.Tensor }
	p := mlp{W: peel.FromFloat64s([]float64{0.5, -1}), B: peel.FromFloat64s([]float64{2})}
	g := mlp{W: peel.FromFloat64s([]float64{0.1, -0.2}), B: peel.FromFloat64s([]float64{0.3})}
	check := func(name string, opt optim.Transformation[mlp], st optim.State, ref optim.Transformation[mlp]) {
		t.Helper()
		rst := ref.Init(p)
		for range 2 {
			var u, v mlp
			u, st = opt.Update(g, st, p)
			v, rst = ref.Update(g, rst, p)
			if !slices.Equal(u.W.Float64s(), v.W.Float64s()) || !slices.Equal(u.B.Float64s(), v.B.Float64s()) {
				t.Fatalf("%s: Start's update %v differs from the typed optimizer's %v", name, u, v)
			}
		}
	}
	opt, st := optim.Start(p, optim.Adam, 1e-2)
	check("Adam", opt, st, optim.Adam[mlp](1e-2))
	opt, st = optim.Start(p, optim.AdamW, 1e-2, optim.WeightDecay(0.1))
	check("AdamW", opt, st, optim.AdamW[mlp](1e-2, optim.WeightDecay(0.1)))
	opt, st = optim.Start(p, optim.SGD, 0.1, optim.Momentum(0.9))
	check("SGD", opt, st, optim.SGD[mlp](0.1, optim.Momentum(0.9)))
	sched := optim.Schedule(func(c *peel.Tensor) *peel.Tensor {
		return peel.Div(peel.Scalar(0.1), peel.Add(peel.AsType(c, peel.Float64), 1.0))
	})
	opt, st = optim.Start(p, optim.RMSProp, sched)
	check("RMSProp with a schedule", opt, st, optim.RMSProp[mlp](sched))
	opt, st = optim.Start(p, optim.Lion, 1e-3)
	check("Lion", opt, st, optim.Lion[mlp](1e-3))
	opt, st = optim.Start(p, optim.Adagrad, 0.1)
	check("Adagrad", opt, st, optim.Adagrad[mlp](0.1))
}
