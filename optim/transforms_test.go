package optim_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// stepOut is a training step's result: the next params and state.
type stepOut struct {
	P model
	S optim.State
}

// trainStep returns one step of opt on loss.
func trainStep(opt optim.Transformation[model], loss func(model) *peel.Tensor) func(model, optim.State) stepOut {
	grad := transforms.Grad(loss)
	return func(p model, s optim.State) stepOut {
		u, s := opt.Update(grad(p), s, p)
		return stepOut{optim.ApplyUpdates(p, u), s}
	}
}

// composedOpts are optimizers whose states hold counts, moments, traces
// and empty states, for the transform tests.
func composedOpts() map[string]optim.Transformation[model] {
	return map[string]optim.Transformation[model]{
		"Adam/warmup-cosine+clip": optim.Chain(optim.ClipByGlobalNorm[model](0.5), optim.Adam[model](optim.WarmupCosineDecay(0, 0.1, 3, 20, 0.01))),
		"SGD/nesterov":            optim.SGD[model](0.05, optim.Momentum(0.9), optim.Nesterov()),
		"AdamW":                   optim.AdamW[model](0.05, optim.WeightDecay(0.1)),
		"RMSProp/centered":        optim.RMSProp[model](optim.LinearDecay(0.02, 0.001, 10), optim.Centered(), optim.Momentum(0.3)),
		"Adagrad":                 optim.Adagrad[model](0.2),
		"Lion":                    optim.Lion[model](0.01),
	}
}

func closeTrees(t *testing.T, what string, got, want any, tol float64) {
	t.Helper()
	if ok, msg := tree.SameStructure(got, want); !ok {
		t.Fatalf("%s: the trees differ: %s", what, msg)
	}
	gl, wl := tree.Leaves(got), tree.Leaves(want)
	paths := tree.Paths(want)
	for i := range gl {
		if gl[i].TypeString() != wl[i].TypeString() {
			t.Fatalf("%s: leaf %s is %s, want %s", what, paths[i], gl[i].TypeString(), wl[i].TypeString())
		}
		g, w := peel.AsType(gl[i], peel.Float64).Float64s(), peel.AsType(wl[i], peel.Float64).Float64s()
		for k := range g {
			if d := math.Abs(g[k] - w[k]); !(d <= tol*(1+math.Abs(w[k]))) {
				t.Fatalf("%s: leaf %s[%d] = %.17g, want %.17g", what, paths[i], k, g[k], w[k])
			}
		}
	}
}

// An ensemble of 4 models stepped at once under Vmap, with stacked params
// and stacked states, equals stepping each member on its own.
func TestVmapEnsembleEqualsLoop(t *testing.T) {
	prob := quadratic(3)
	r := rand.New(rand.NewPCG(4, 4))
	const members = 4
	for name, opt := range composedOpts() {
		t.Run(name, func(t *testing.T) {
			step := trainStep(opt, prob.loss)
			ps := make([]model, members)
			ss := make([]optim.State, members)
			for k := range ps {
				x := make([]float64, nElems)
				for i := range x {
					x[i] = 4*r.Float64() - 2
				}
				ps[k] = newModel(x)
				ss[k] = opt.Init(ps[k])
			}
			sp, sst := tree.Stack(ps), tree.Stack(ss)
			vstep := transforms.Vmap2(step)
			for it := range 6 {
				out := vstep(sp, sst)
				sp, sst = out.P, out.S
				for k := range ps {
					o := step(ps[k], ss[k])
					ps[k], ss[k] = o.P, o.S
				}
				got := tree.Unstack(stepOut{sp, sst})
				for k := range ps {
					closeTrees(t, fmt.Sprintf("step %d, member %d", it, k), got[k], stepOut{ps[k], ss[k]}, 1e-13)
				}
			}
		})
	}
}

// A compiled training step equals the eager one, and is traced once: the
// step counts are data, not constants of the trace.
func TestCompiledStepEqualsEager(t *testing.T) {
	prob := rosenbrock(5)
	for name, opt := range composedOpts() {
		t.Run(name, func(t *testing.T) {
			step := trainStep(opt, prob.loss)
			var cstepIns transforms.Inspector
			cstep := transforms.Compile2(step, transforms.Inspect(&cstepIns))
			p := newModel(prob.x0)
			s := opt.Init(p)
			cp, cs := p, s
			for it := range 8 {
				o := step(p, s)
				p, s = o.P, o.S
				co := cstep(cp, cs)
				cp, cs = co.P, co.S
				closeTrees(t, fmt.Sprintf("step %d", it), stepOut{cp, cs}, stepOut{p, s}, 1e-13)
			}
			if st := cstepIns.Stats(); st.Misses != 1 || st.Hits != 7 {
				t.Errorf("compiled step: %d misses and %d hits, want 1 and 7 (last miss: %s)", st.Misses, st.Hits, st.LastMiss)
			}
		})
	}
}

// The gradient of a loss after inner optimizer steps (MAML's
// meta-gradient, through the optimizer's update) matches central finite
// differences in float64.
func TestGradThroughInnerSteps(t *testing.T) {
	support, query := quadratic(6), rosenbrock(7)
	cases := []struct {
		name  string
		opt   optim.Transformation[model]
		steps int
	}{
		{"SGD", optim.SGD[model](0.1), 1},
		{"SGD/momentum", optim.SGD[model](0.1, optim.Momentum(0.9)), 2},
		{"Adam", optim.Adam[model](0.1), 1},
		{"Adam/eps", optim.Adam[model](0.1, optim.Eps(0.1), optim.EpsRoot(1e-8)), 2},
		{"AdamW/cosine", optim.AdamW[model](optim.CosineDecay(0.1, 3, 0), optim.Eps(0.05), optim.WeightDecay(0.2)), 2},
		{"clip-norm+RMSProp", optim.Chain(optim.ClipByGlobalNorm[model](0.5), optim.RMSProp[model](0.05, optim.Eps(0.01))), 2},
		{"Adagrad", optim.Adagrad[model](0.1), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inner := transforms.Grad(support.loss)
			meta := func(p model) *peel.Tensor {
				s := c.opt.Init(p)
				for range c.steps {
					var u model
					u, s = c.opt.Update(inner(p), s, p)
					p = optim.ApplyUpdates(p, u)
				}
				return query.loss(p)
			}
			x0 := append([]float64(nil), query.x0...)
			got := flat(transforms.Grad(meta)(newModel(x0)))
			const h = 1e-5
			for i := range x0 {
				xp, xm := append([]float64(nil), x0...), append([]float64(nil), x0...)
				xp[i] += h
				xm[i] -= h
				fd := (meta(newModel(xp)).Item() - meta(newModel(xm)).Item()) / (2 * h)
				if d := math.Abs(got[i] - fd); !(d <= 1e-6*(1+math.Abs(fd))) {
					t.Errorf("d/dx[%d]: Grad %.12g, finite differences %.12g", i, got[i], fd)
				}
			}
		})
	}
}

// An optimizer is safe for concurrent use: goroutines sharing one (its
// hyperparameters read-only) each run their own steps and get what one
// goroutine alone gets. Run with -race.
func TestConcurrentUpdates(t *testing.T) {
	prob := quadratic(8)
	for name, opt := range composedOpts() {
		t.Run(name, func(t *testing.T) {
			step := trainStep(opt, prob.loss)
			run := func() stepOut {
				p := newModel(prob.x0)
				o := stepOut{p, opt.Init(p)}
				for range 5 {
					o = step(o.P, o.S)
				}
				return o
			}
			want := run()
			const workers = 6
			outs := make([]stepOut, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outs[w] = run()
				}()
			}
			wg.Wait()
			for w, o := range outs {
				closeTrees(t, fmt.Sprintf("goroutine %d", w), o, want, 0)
			}
		})
	}
}

// Float32 parameters keep float32 moments and updates; the schedules and
// counts stay f64 and i64.
func TestFloat32Params(t *testing.T) {
	p := []*peel.Tensor{peel.FromFloat32s([]float32{1, -2, 3}), peel.FromFloat32s([]float32{0.5})}
	g := []*peel.Tensor{peel.FromFloat32s([]float32{0.1, 0.2, -0.3}), peel.FromFloat32s([]float32{1})}
	for _, opt := range []optim.Transformation[[]*peel.Tensor]{
		optim.Adam[[]*peel.Tensor](optim.CosineDecay(0.1, 10, 0)),
		optim.AdamW[[]*peel.Tensor](0.1),
		optim.SGD[[]*peel.Tensor](0.1, optim.Momentum(0.9)),
		optim.Chain(optim.ClipByGlobalNorm[[]*peel.Tensor](0.1), optim.Lion[[]*peel.Tensor](optim.Constant(0.1))),
		optim.RMSProp[[]*peel.Tensor](0.1, optim.Centered()),
		optim.Adagrad[[]*peel.Tensor](0.1),
	} {
		s := opt.Init(p)
		_, s = opt.Update(g, s, p)
		u, s := opt.Update(g, s, p)
		for i, l := range u {
			if l.DType() != peel.Float32 || l.TypeString() != p[i].TypeString() {
				t.Errorf("update %d is %s, want %s", i, l.TypeString(), p[i].TypeString())
			}
		}
		for _, l := range tree.Leaves(s) {
			if l.DType() != peel.Float32 && !(l.DType() == peel.Int64 && l.Rank() == 0) {
				t.Errorf("a state leaf is %s", l.TypeString())
			}
		}
		if a := optim.ApplyUpdates(p, u); a[0].DType() != peel.Float32 {
			t.Errorf("ApplyUpdates gave %s", a[0].TypeString())
		}
	}
}

// Update never writes to its inputs.
func TestUpdateIsPure(t *testing.T) {
	prob := quadratic(9)
	for name, opt := range composedOpts() {
		t.Run(name, func(t *testing.T) {
			p := newModel(prob.x0)
			s := opt.Init(p)
			g := transforms.Grad(prob.loss)(p)
			for range 2 {
				_, s = opt.Update(g, s, p)
			}
			before := func() []float64 {
				var all []float64
				for _, tr := range []any{p, s, g} {
					for _, l := range tree.Leaves(tr) {
						all = append(all, peel.AsType(l, peel.Float64).Float64s()...)
					}
				}
				return all
			}
			b := before()
			u1, s1 := opt.Update(g, s, p)
			u2, s2 := opt.Update(g, s, p)
			if a := before(); len(a) != len(b) {
				t.Fatal("the inputs changed shape")
			} else {
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("Update wrote to an input: element %d %v → %v", i, b[i], a[i])
					}
				}
			}
			closeTrees(t, "a second update of the same inputs", stepOut{u2, s2}, stepOut{u1, s1}, 0)
		})
	}
}

// ClipByGlobalNorm clips the norm of all leaves together to maxNorm and
// leaves updates below it as they are; its derivative at a zero gradient
// is finite.
func TestClipByGlobalNorm(t *testing.T) {
	clip := optim.ClipByGlobalNorm[[]*peel.Tensor](1)
	g := []*peel.Tensor{peel.FromFloat64s([]float64{3, 0}), peel.FromFloat64s([]float64{4})}
	u, _ := clip.Update(g, clip.Init(g), nil)
	if got := []float64{u[0].Float64s()[0], u[0].Float64s()[1], u[1].Item()}; math.Abs(got[0]-0.6) > 1e-15 || got[1] != 0 || math.Abs(got[2]-0.8) > 1e-15 {
		t.Errorf("clipped to %v, want [0.6 0 0.8]", got)
	}
	small := []*peel.Tensor{peel.FromFloat64s([]float64{0.3, 0}), peel.FromFloat64s([]float64{0.4})}
	if u, _ := clip.Update(small, clip.Init(small), nil); u[0].Float64s()[0] != 0.3 || u[1].Item() != 0.4 {
		t.Errorf("a small update changed: %v %v", u[0], u[1])
	}
	f := func(x *peel.Tensor) *peel.Tensor {
		u, _ := clip.Update([]*peel.Tensor{x}, optim.EmptyState{}, nil)
		return peel.Sum(u[0])
	}
	for _, x := range []*peel.Tensor{peel.Zeros(peel.Float64, 2), peel.FromFloat64s([]float64{3, 4})} {
		d := transforms.Grad(f)(x).Float64s()
		for _, v := range d {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("d/dx at %v is %v", x, d)
			}
		}
	}
	// Above the norm: d/dx sum(x/|x|) = (1 - x·sum(x)/|x|²)/|x|.
	d := transforms.Grad(f)(peel.FromFloat64s([]float64{3, 4})).Float64s()
	want := []float64{(1 - 3*7.0/25) / 5, (1 - 4*7.0/25) / 5}
	for i := range d {
		if math.Abs(d[i]-want[i]) > 1e-15 {
			t.Errorf("d/dx = %v, want %v", d, want)
		}
	}
}

// ClipByGlobalNormOver scales each holder's part by the norm of the
// whole: two holders of the parts [3, 0] and [4] of the update, each
// told the other's sum of squares, clip as ClipByGlobalNorm clips the
// whole; a nil sumOver is refused by name.
func TestClipByGlobalNormOver(t *testing.T) {
	parts := [][]*peel.Tensor{{peel.FromFloat64s([]float64{3, 0})}, {peel.FromFloat64s([]float64{4})}}
	sums := []float64{9, 16}
	var got []float64
	for i, part := range parts {
		other := sums[1-i]
		clip := optim.ClipByGlobalNormOver[[]*peel.Tensor](1, func(sq *peel.Tensor) *peel.Tensor { return peel.Add(sq, other) })
		u, _ := clip.Update(part, clip.Init(part), nil)
		got = append(got, u[0].Float64s()...)
	}
	if want := []float64{0.6, 0, 0.8}; math.Abs(got[0]-want[0]) > 1e-15 || got[1] != 0 || math.Abs(got[2]-want[2]) > 1e-15 {
		t.Errorf("the parts clip to %v, want %v", got, want)
	}
	err := peel.Catch(func() { optim.ClipByGlobalNormOver[[]*peel.Tensor](1, nil) })
	if err == nil || !strings.Contains(err.Error(), "optim.ClipByGlobalNormOver") {
		t.Errorf("a nil sumOver gave %v", err)
	}
}

// The initial states, and Vmap of Init over stacked params.
func TestInitStates(t *testing.T) {
	p := newModel(quadratic(1).x0)
	s := optim.Adam[model](0.1).Init(p).(optim.ChainState)
	a := s[0].(optim.AdamState[model])
	if a.Count.DType() != peel.Int64 || a.Count.Rank() != 0 || a.Count.Item() != 0 {
		t.Errorf("Adam's count is %v", a.Count)
	}
	if _, ok := s[1].(optim.EmptyState); !ok {
		t.Errorf("a constant learning rate's state is %T", s[1])
	}
	acc := optim.Adagrad[model](0.1).Init(p).(optim.ChainState)[0].(optim.AdagradState[model])
	for _, v := range flat(acc.SumOfSquares) {
		if v != 0.1 {
			t.Fatalf("Adagrad's accumulator starts at %v", v)
		}
	}
	opt := optim.Adam[model](optim.Constant(0.1))
	ps := tree.Stack([]model{p, p, p})
	vs := transforms.Vmap(opt.Init)(ps)
	closeTrees(t, "Vmap(Init)", vs, tree.Stack([]optim.State{opt.Init(p), opt.Init(p), opt.Init(p)}), 0)
}

// The gradient of a step from a given state (after a few steps), the
// state passed as an argument that is not differentiated, matches finite
// differences; Grad with respect to the state itself is refused (its
// count is int64).
func TestGradFromGivenState(t *testing.T) {
	prob := quadratic(10)
	opt := optim.Chain(optim.ClipByGlobalNorm[model](2), optim.Adam[model](optim.CosineDecay(0.1, 10, 0), optim.Eps(0.1)))
	p := newModel(prob.x0)
	s := opt.Init(p)
	grad := transforms.Grad(prob.loss)
	for range 3 {
		var u model
		u, s = opt.Update(grad(p), s, p)
		p = optim.ApplyUpdates(p, u)
	}
	f := func(p model, s optim.State) *peel.Tensor {
		u, _ := opt.Update(grad(p), s, p)
		return prob.loss(optim.ApplyUpdates(p, u))
	}
	x0 := flat(p)
	got := flat(transforms.Grad2(f)(p, s))
	const h = 1e-5
	for i := range x0 {
		xp, xm := append([]float64(nil), x0...), append([]float64(nil), x0...)
		xp[i] += h
		xm[i] -= h
		fd := (f(newModel(xp), s).Item() - f(newModel(xm), s).Item()) / (2 * h)
		if d := math.Abs(got[i] - fd); !(d <= 1e-6*(1+math.Abs(fd))) {
			t.Errorf("d/dx[%d]: Grad %.12g, finite differences %.12g", i, got[i], fd)
		}
	}
	err := peel.Catch(func() { transforms.Grad(func(s optim.State) *peel.Tensor { return f(p, s) })(s) })
	if err == nil || !strings.Contains(err.Error(), "i64") {
		t.Errorf("Grad with respect to the state: %v, want an error about its i64 count", err)
	}
}

// A compiled ensemble step (Compile of Vmap) equals the eager one.
func TestCompiledEnsembleStep(t *testing.T) {
	prob := rosenbrock(11)
	opt := optim.Chain(optim.ClipByGlobalNorm[model](1), optim.AdamW[model](optim.Warmup(0, 3, optim.CosineDecay(0.05, 10, 0.1))))
	r := rand.New(rand.NewPCG(12, 12))
	ps := make([]model, 3)
	for k := range ps {
		x := make([]float64, nElems)
		for i := range x {
			x[i] = 2*r.Float64() - 1
		}
		ps[k] = newModel(x)
	}
	vstep := transforms.Vmap2(trainStep(opt, prob.loss))
	var cstepIns transforms.Inspector
	cstep := transforms.Compile2(vstep, transforms.Inspect(&cstepIns))
	p := tree.Stack(ps)
	s := transforms.Vmap(opt.Init)(p)
	cp, cs := p, s
	for it := range 5 {
		o := vstep(p, s)
		p, s = o.P, o.S
		co := cstep(cp, cs)
		cp, cs = co.P, co.S
		closeTrees(t, fmt.Sprintf("step %d", it), stepOut{cp, cs}, stepOut{p, s}, 1e-13)
	}
	if st := cstepIns.Stats(); st.Misses != 1 {
		t.Errorf("%d misses, want 1 (last: %s)", st.Misses, st.LastMiss)
	}
}

// WeightDecayMask: the masked-out leaves (the biases) step exactly as
// without weight decay, the others exactly as with it everywhere.
func TestWeightDecayMask(t *testing.T) {
	prob := quadratic(13)
	notBias := func(path string) bool { return !strings.HasSuffix(path, ".B") }
	for _, c := range []struct {
		name              string
		masked, all, none optim.Transformation[model]
	}{
		{"AdamW", optim.AdamW[model](0.05, optim.WeightDecay(0.3), optim.WeightDecayMask(notBias)), optim.AdamW[model](0.05, optim.WeightDecay(0.3)), optim.AdamW[model](0.05, optim.WeightDecay(0))},
		{"Lion", optim.Lion[model](0.01, optim.WeightDecay(0.3), optim.WeightDecayMask(notBias)), optim.Lion[model](0.01, optim.WeightDecay(0.3)), optim.Lion[model](0.01, optim.WeightDecay(0))},
		{"AddDecayedWeights", optim.Chain(optim.AddDecayedWeights[model](0.3, optim.WeightDecayMask(notBias)), optim.SGD[model](0.05)),
			optim.Chain(optim.AddDecayedWeights[model](0.3), optim.SGD[model](0.05)), optim.SGD[model](0.05)},
	} {
		t.Run(c.name, func(t *testing.T) {
			grad := transforms.Grad(prob.loss)
			p := newModel(prob.x0)
			sm, sa, sn := c.masked.Init(p), c.all.Init(p), c.none.Init(p)
			for range 20 {
				g := grad(p)
				var um, ua, un model
				um, sm = c.masked.Update(g, sm, p)
				ua, sa = c.all.Update(g, sa, p)
				un, sn = c.none.Update(g, sn, p)
				for i, path := range tree.Paths(p) {
					want := tree.Leaves(ua)[i]
					if !notBias(path) {
						want = tree.Leaves(un)[i]
					}
					closeTrees(t, path, tree.Leaves(um)[i], want, 0)
				}
				p = optim.ApplyUpdates(p, um)
			}
		})
	}
}
