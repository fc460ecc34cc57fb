package transforms_test

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// The autodiff sweep checks every registry op marked Differentiable, on
// every sample, in float64: f32 operands are converted to f64 with
// peel.AsType, integer and bool operands (indices, predicates, the integer
// side of a mixed-dtype sample) are held fixed by closing over them, and
// f is op.F as a function of the float operands ([]*peel.Tensor tree).
// For each sample it checks
//
//   - shapes: the JVP tangent has the output's shape and dtype, the VJP
//     cotangents have the inputs' (this is the whole check for size-0
//     operands, where every numeric check below is vacuous but still run);
//   - the primal returned by JVP and VJP equals eval (1e-12 relative);
//   - JVP along a random v ∈ [-1,1)ⁿ against the central difference
//     (f(x+εv) − f(x−εv))/2ε, ε = 1e-6, tolerance fdRtol·|want| + fdAtol·s
//     where s = max(1, ‖f(x)‖∞): the rounding error of the difference
//     quotient grows like 1e-16·‖f(x)‖/ε, so the absolute part scales with
//     the output's magnitude (1e-6 absolute for outputs up to 1);
//   - the inner-product identity ⟨u, J v⟩ = ⟨Jᵀu, v⟩ for random u, v,
//     to 1e-9 relative to Σ|u·Jv| + Σ|Jᵀu·v|;
//   - Jᵀu against the coordinate-wise central differences of ⟨u, f(x)⟩
//     (tolerances as for the JVP, s = max(1, ‖u·f(x)‖₁));
//   - Linearize: the linear map at v equals the JVP (1e-12 relative);
//   - second order, forward-over-reverse: the JVP along v of
//     x ↦ pullback_x(u) against the central difference of the pullback
//     along v (tolerances as for the JVP, s = max(1, ‖pullback(u)‖∞));
//   - Jacobians, for samples with one float operand: Jacrev equals Jacfwd
//     and has shape f(x).shape + x.shape, and J·v equals the JVP (both
//     1e-12 relative to max(1, ‖J‖∞));
//   - float32, for samples with an f32 operand: JVP and VJP on the
//     operands as they are give tangents and cotangents of their primals'
//     dtypes, equal to the float64 ones to 1e-4 relative to
//     max(1, ‖result‖∞) (the f64 operands hold the same values).
//
// Ops whose results are bool or integer (comparisons) have no tangent:
// the check is that JVP gives a zero tangent and VJP zero cotangents.
//
// Samples skipped, and why (counted per reason in the test log):
//
//   - no float operand (the integer and bool samples): nothing to
//     differentiate;
//   - a non-finite input (every "edges" sample holds ±Inf and NaN) or a
//     non-finite output: finite differences are meaningless there;
//   - a point within kinkGap = 1e-3 of a kink or discontinuity of the op
//     (the predicates in kinks): the derivative does not exist there and
//     the difference quotient straddles it. Away from kinks, kinked and
//     piecewise-constant ops (Abs, ReLU, Clip, Maximum, Max, Sign, Floor,
//     Rem, ...) are checked like smooth ones, second order included: their
//     derivatives are locally constant, so the checks are valid there.
//
// Two tables name what is not checked, each entry with its reason:
// unswept lists the Differentiable ops that end the sweep with no sample
// checked (TestAutodiffSweep fails for any other such op, and for an
// entry that has become stale), and sweepExclusions removes single ops,
// samples or checks from the run (known bugs, marked "BUG:").

const (
	fdEps     = 1e-6
	fdRtol    = 1e-6
	fdAtol    = 1e-6
	dotRtol   = 1e-9
	primalTol = 1e-12
	kinkGap   = 1e-3
	f32Tol    = 1e-4
	// maxJacobian bounds the Jacobians the sweep builds (elements).
	maxJacobian = 1000
)

// unswept lists, by registry name, the ops marked Differentiable of which
// the sweep checks no sample, and why.
var unswept = map[string]string{}

// exclusion removes an op (or one sample of it, or one check) from the
// sweep. op is a registry name, the base name before '/' to match every
// variant ("peel.Max" matches "peel.Max/axes=[0],keep=false"), or "*" for
// every op. sample "" matches every sample; check "" matches every check,
// otherwise one of "jvp", "vjp", "second", "jacobian", "f32". A reason
// starting "BUG:" is a known defect of a rule or an interpreter, to be
// removed when it is fixed.
type exclusion struct {
	op, sample, check, reason string
	// when, if not nil, limits the exclusion to the cases it accepts.
	when func(c sweepCase) bool
}

// sweepExclusions lists the ops, samples and checks the sweep does not
// run.
var sweepExclusions = []exclusion{}

func opBaseName(name string) string {
	b, _, _ := strings.Cut(name, "/")
	return b
}

// exclusionFor returns the reason the check of case c is excluded, or "".
func exclusionFor(c sweepCase, check string) string {
	for _, e := range sweepExclusions {
		if (e.op == "*" || e.op == c.op || e.op == opBaseName(c.op)) && (e.sample == "" || e.sample == c.sample) &&
			(e.check == "" || e.check == check) && (e.when == nil || e.when(c)) {
			return e.reason
		}
	}
	return ""
}

// kinks gives, for every op with kinks or discontinuities (by registry
// name, or base name for every variant), a predicate telling whether the
// sample point (all operands, floats in f64, and the output) lies within
// kinkGap of one.
var kinks = map[string]func(a []*T, y *T) bool{
	"peel.Abs":         func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
	"peel.ReLU":        func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
	"peel.Sign":        func(a []*T, _ *T) bool { return nearValues(a[0], 0) },
	"peel.Floor":       func(a []*T, _ *T) bool { return nearInteger(a[0], 1) },
	"peel.Ceil":        func(a []*T, _ *T) bool { return nearInteger(a[0], 1) },
	"peel.Round":       func(a []*T, _ *T) bool { return nearInteger(a[0], 0.5) }, // jumps at k+½; integers too, conservatively
	"peel.Clip/[-1,2]": func(a []*T, _ *T) bool { return nearValues(a[0], -1, 2) },
	"peel.Maximum":     func(a []*T, _ *T) bool { return anyPair(a, func(x, y float64) bool { return math.Abs(x-y) < kinkGap }) },
	"peel.Minimum":     func(a []*T, _ *T) bool { return anyPair(a, func(x, y float64) bool { return math.Abs(x-y) < kinkGap }) },
	// math.Mod(x, y) = x − y·trunc(x/y) jumps where x/y is an integer,
	// that is where the remainder is 0 or ±|y|.
	"peel.Rem": func(a []*T, _ *T) bool {
		return anyPair(a, func(x, y float64) bool {
			r := math.Abs(math.Mod(x, y))
			return r < kinkGap || math.Abs(y)-r < kinkGap
		})
	},
	// atan2(a, b) has its branch cut on a = 0, b < 0, and a singularity
	// at the origin.
	"peel.Atan2": func(a []*T, _ *T) bool {
		return anyPair(a, func(y, x float64) bool { return math.Abs(y) < kinkGap && x < kinkGap })
	},
	// Ties in a reduced group: conservatively, any two values of the
	// operand within kinkGap (the groups depend on the axes).
	"peel.Max": func(a []*T, _ *T) bool { return anyTie(a[0]) },
	"peel.Min": func(a []*T, _ *T) bool { return anyTie(a[0]) },
	// √ is not differentiable at 0: a group of one element (axes=[]) or
	// of equal elements has zero variance.
	"peel.Std": func(_ []*T, y *T) bool { return nearValues(y, 0) },
}

func hostData(t *T) []float64 { return optest.ToHost(t).Data }

func nearValues(t *T, vs ...float64) bool {
	for _, x := range hostData(t) {
		for _, v := range vs {
			if math.Abs(x-v) < kinkGap {
				return true
			}
		}
	}
	return false
}

// nearInteger reports whether some element is within kinkGap of a
// multiple of step.
func nearInteger(t *T, step float64) bool {
	for _, x := range hostData(t) {
		q := x / step
		if math.Abs(q-math.Round(q))*step < kinkGap {
			return true
		}
	}
	return false
}

// anyPair applies kink to the broadcast pairs of a binary op's operands.
func anyPair(a []*T, kink func(x, y float64) bool) bool {
	h := optest.Map(peel.Float64, []optest.Host{optest.ToHost(a[0]), optest.ToHost(a[1])}, func(v []float64) float64 {
		if kink(v[0], v[1]) {
			return 1
		}
		return 0
	})
	for _, v := range h.Data {
		if v != 0 {
			return true
		}
	}
	return false
}

func anyTie(t *T) bool {
	d := append([]float64{}, hostData(t)...)
	sort.Float64s(d)
	for i := 1; i < len(d); i++ {
		if d[i]-d[i-1] < kinkGap {
			return true
		}
	}
	return false
}

// catchAll runs f, turning any panic into an error (with the stack for a
// panic that is not a *peel.Error: a bare runtime panic is a bug itself).
func catchAll(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*peel.Error); ok {
				err = e
				return
			}
			err = fmt.Errorf("panic %v\n%s", r, debug.Stack())
		}
	}()
	f()
	return nil
}

// withinTol reports how got differs from want, or "" if every element is
// within rtol·|want| + atol.
func withinTol(got, want []float64, rtol, atol float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d elements, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !(math.Abs(g-w) <= rtol*math.Abs(w)+atol) {
			return fmt.Sprintf("element %d is %.12g, want %.12g (|diff| %.3g > %.3g·|want| + %.3g)", i, g, w, math.Abs(g-w), rtol, atol)
		}
	}
	return ""
}

func sameType(a, b *T) bool { return interp.AvalOf(a).Equal(interp.AvalOf(b)) }

func magnitude(ts ...*T) float64 { return math.Max(1, optest.MaxAbs(ts...)) }

func concatData(ts []*T) []float64 {
	var out []float64
	for _, t := range ts {
		out = append(out, hostData(t)...)
	}
	return out
}

// sweepCase is one sample prepared for the sweep.
type sweepCase struct {
	op, sample string
	f          func([]*T) *T
	x          []*T // the float operands, in f64
	y          *T   // f(x)
	// f32 is f over the float operands as the sample has them, and x32
	// those operands, when one of them is f32 (nil otherwise).
	f32 func([]*T) *T
	x32 []*T
}

// prepareCase converts the sample and returns the case, or a skip reason.
func prepareCase(op optest.Op, s optest.Sample) (c sweepCase, skip string) {
	args, fl := optest.Float64Args(s.Args)
	if len(fl) == 0 {
		return c, "no float operand"
	}
	if !optest.AllFinite(args...) {
		return c, "non-finite input (edge values)"
	}
	x := make([]*T, len(fl))
	var x32 []*T
	for k, i := range fl {
		x[k] = args[i]
		if s.Args[i].DType() == peel.Float32 {
			x32 = make([]*T, len(fl))
		}
	}
	for k, i := range fl {
		if x32 != nil {
			x32[k] = s.Args[i]
		}
	}
	over := func(args []*T) func([]*T) *T {
		return func(xs []*T) *T {
			a := append([]*T(nil), args...)
			for k, i := range fl {
				a[i] = xs[k]
			}
			return op.F(a)
		}
	}
	f := over(args)
	y := f(x)
	if !optest.AllFinite(y) {
		return c, "non-finite output"
	}
	near := kinks[op.Name]
	if near == nil {
		near = kinks[opBaseName(op.Name)]
	}
	if near != nil && near(args, y) {
		return c, "within 1e-3 of a kink"
	}
	c = sweepCase{op: op.Name, sample: s.Name, f: f, x: x, y: y}
	if x32 != nil {
		c.f32, c.x32 = over(s.Args), x32
	}
	return c, ""
}

// checkZeroDerivative checks an op with an integer or bool result: a
// zero tangent of the result's type and zero cotangents.
func checkZeroDerivative(c sweepCase, v []*T) string {
	_, jv := transforms.JVP(c.f, c.x, v)
	if !sameType(jv, c.y) {
		return fmt.Sprintf("JVP tangent is %s, want %s", jv.TypeString(), c.y.TypeString())
	}
	for i, e := range hostData(jv) {
		if e != 0 {
			return fmt.Sprintf("JVP tangent element %d of a %v result is %v, want 0", i, c.y.DType(), e)
		}
	}
	_, pb := transforms.VJP(c.f, c.x)
	ct := pb(peel.Zeros(c.y.DType(), append([]int{}, c.y.Shape()...)...))
	for k, g := range ct {
		if !sameType(g, c.x[k]) {
			return fmt.Sprintf("cotangent %d is %s, want %s", k, g.TypeString(), c.x[k].TypeString())
		}
		for i, e := range hostData(g) {
			if e != 0 {
				return fmt.Sprintf("cotangent %d element %d is %v, want 0", k, i, e)
			}
		}
	}
	return ""
}

func checkJVP(c sweepCase, v []*T) string {
	y, jv := transforms.JVP(c.f, c.x, v)
	if !sameType(y, c.y) || !sameType(jv, c.y) {
		return fmt.Sprintf("JVP gives primal %s and tangent %s, want %s", y.TypeString(), jv.TypeString(), c.y.TypeString())
	}
	if msg := withinTol(hostData(y), hostData(c.y), primalTol, primalTol); msg != "" {
		return "JVP primal differs from eval: " + msg
	}
	fd := optest.CentralDiff(func(x []*T) []*T { return []*T{c.f(x)} }, c.x, v, fdEps)[0]
	if msg := withinTol(hostData(jv), fd.Data, fdRtol, fdAtol*magnitude(c.y)); msg != "" {
		return "JVP vs central differences: " + msg
	}
	_, lin := transforms.Linearize(c.f, c.x)
	lv := lin(v)
	if !sameType(lv, c.y) {
		return fmt.Sprintf("Linearize gives %s, want %s", lv.TypeString(), c.y.TypeString())
	}
	if msg := withinTol(hostData(lv), hostData(jv), 1e-12, 1e-12*magnitude(jv)); msg != "" {
		return "Linearize vs JVP: " + msg
	}
	return ""
}

// checkFloat32 runs JVP and VJP on the sample's own operands (one at
// least f32): tangents and cotangents must have their primals' dtypes and
// agree with the float64 results to f32Tol relative to max(1, ‖result‖∞).
func checkFloat32(c sweepCase, u *T, v []*T) string {
	v32 := make([]*T, len(v))
	for k := range v {
		v32[k] = peel.AsType(v[k], c.x32[k].DType())
	}
	y, jv := transforms.JVP(c.f32, c.x32, v32)
	if !sameType(jv, y) {
		return fmt.Sprintf("JVP tangent is %s for a primal %s", jv.TypeString(), y.TypeString())
	}
	_, jv64 := transforms.JVP(c.f, c.x, v)
	if msg := withinTol(hostData(jv), hostData(jv64), f32Tol, f32Tol*magnitude(jv64)); msg != "" {
		return "f32 JVP vs f64 JVP: " + msg
	}
	_, pb := transforms.VJP(c.f32, c.x32)
	ct := pb(peel.AsType(u, y.DType()))
	_, pb64 := transforms.VJP(c.f, c.x)
	ct64 := pb64(u)
	for k := range ct {
		if !sameType(ct[k], c.x32[k]) {
			return fmt.Sprintf("cotangent %d is %s, want %s", k, ct[k].TypeString(), c.x32[k].TypeString())
		}
		if msg := withinTol(hostData(ct[k]), hostData(ct64[k]), f32Tol, f32Tol*magnitude(ct64[k])); msg != "" {
			return fmt.Sprintf("f32 cotangent %d vs f64: %s", k, msg)
		}
	}
	return ""
}

// checkJacobians compares Jacrev with Jacfwd and J·v with the JVP, for a
// case with one float operand.
func checkJacobians(c sweepCase, v []*T) string {
	f := func(x *T) *T { return c.f([]*T{x}) }
	x := c.x[0]
	jr := transforms.Jacrev(f)(x)
	jf := transforms.Jacfwd(f)(x)
	shape := fmt.Sprint(append(append([]int{}, c.y.Shape()...), x.Shape()...))
	if fmt.Sprint(jr.Shape()) != shape || fmt.Sprint(jf.Shape()) != shape {
		return fmt.Sprintf("Jacrev is %s and Jacfwd %s, want shape %s", jr.TypeString(), jf.TypeString(), shape)
	}
	s := magnitude(jr)
	if msg := withinTol(hostData(jr), hostData(jf), 1e-12, 1e-12*s); msg != "" {
		return "Jacrev vs Jacfwd: " + msg
	}
	_, jv := transforms.JVP(c.f, c.x, v)
	n, m := x.Size(), c.y.Size()
	jd, vd := hostData(jr), hostData(v[0])
	want := make([]float64, m)
	for i := range want {
		for j := 0; j < n; j++ {
			want[i] += jd[i*n+j] * vd[j]
		}
	}
	if msg := withinTol(hostData(jv), want, 1e-12, 1e-12*s*float64(max(n, 1))); msg != "" {
		return "JVP vs Jacrev·v: " + msg
	}
	return ""
}

func checkVJP(c sweepCase, u *T, v []*T) string {
	y, pb := transforms.VJP(c.f, c.x)
	if !sameType(y, c.y) {
		return fmt.Sprintf("VJP primal is %s, want %s", y.TypeString(), c.y.TypeString())
	}
	if msg := withinTol(hostData(y), hostData(c.y), primalTol, primalTol); msg != "" {
		return "VJP primal differs from eval: " + msg
	}
	ct := pb(u)
	if len(ct) != len(c.x) {
		return fmt.Sprintf("pullback gives %d cotangents, want %d", len(ct), len(c.x))
	}
	for k, g := range ct {
		if !sameType(g, c.x[k]) {
			return fmt.Sprintf("cotangent %d is %s, want %s", k, g.TypeString(), c.x[k].TypeString())
		}
	}
	// ⟨u, J v⟩ = ⟨Jᵀu, v⟩.
	_, jv := transforms.JVP(c.f, c.x, v)
	lhs, ls := optest.Dot([]*T{u}, []*T{jv})
	rhs, rs := optest.Dot(ct, v)
	if math.Abs(lhs-rhs) > dotRtol*(ls+rs) {
		return fmt.Sprintf("⟨u, Jv⟩ = %.15g but ⟨Jᵀu, v⟩ = %.15g (tolerance %.3g)", lhs, rhs, dotRtol*(ls+rs))
	}
	// Jᵀu against the coordinate-wise differences of ⟨u, f(x)⟩.
	g := func(x []*T) []*T { return []*T{peel.Sum(peel.Mul(u, c.f(x)))} }
	uf := peel.Mul(u, c.y)
	s := math.Max(1, peel.Sum(peel.Abs(uf)).Item())
	var fd []float64
	for _, e := range optest.Basis(c.x) {
		fd = append(fd, optest.CentralDiff(g, c.x, e, fdEps)[0].Data[0])
	}
	if msg := withinTol(concatData(ct), fd, fdRtol, fdAtol*s); msg != "" {
		return "Jᵀu vs central differences of ⟨u, f⟩: " + msg
	}
	return ""
}

// checkSecondOrder checks forward-over-reverse: the JVP along v of the
// pullback of u.
func checkSecondOrder(c sweepCase, u *T, v []*T) string {
	pull := func(x []*T) []*T {
		_, pb := transforms.VJP(c.f, x)
		return pb(u)
	}
	p, pv := transforms.JVP(pull, c.x, v)
	for k := range pv {
		if !sameType(pv[k], c.x[k]) {
			return fmt.Sprintf("tangent of cotangent %d is %s, want %s", k, pv[k].TypeString(), c.x[k].TypeString())
		}
	}
	fd := optest.CentralDiff(pull, c.x, v, fdEps)
	var want []float64
	for _, h := range fd {
		want = append(want, h.Data...)
	}
	if msg := withinTol(concatData(pv), want, fdRtol, fdAtol*magnitude(p...)); msg != "" {
		return "JVP of the pullback vs central differences: " + msg
	}
	return ""
}

func TestAutodiffSweep(t *testing.T) {
	skips := map[string]int{}
	nempty := 0
	nsamples := 0
	ops := optest.All()
	swept := make([]int, len(ops))
	for oi, op := range ops {
		if !op.Differentiable {
			continue
		}
		gen := optest.NewGen(42)
		for _, s := range op.Samples() {
			name := op.Name + "@" + s.Name
			var c sweepCase
			var skip string
			if err := catchAll(func() { c, skip = prepareCase(op, s) }); err != nil {
				t.Errorf("%s: eval: %v", name, err)
				continue
			}
			if skip != "" {
				skips[skip]++
				continue
			}
			v := gen.Directions(c.x)
			u := gen.Direction(c.y)
			if !c.y.DType().IsFloat() {
				var msg string
				if err := catchAll(func() { msg = checkZeroDerivative(c, v) }); err != nil {
					msg = err.Error()
				}
				if msg != "" {
					t.Errorf("%s: %s", name, msg)
				}
				swept[oi]++
				nsamples++
				continue
			}
			ran := false
			for _, chk := range []struct {
				name string
				run  func() string
			}{
				{"jvp", func() string { return checkJVP(c, v) }},
				{"vjp", func() string { return checkVJP(c, u, v) }},
				{"second", func() string { return checkSecondOrder(c, u, v) }},
				{"jacobian", func() string { return checkJacobians(c, v) }},
				{"f32", func() string { return checkFloat32(c, u, v) }},
			} {
				if chk.name == "f32" && c.x32 == nil {
					continue
				}
				if chk.name == "jacobian" && (len(c.x) != 1 || c.x[0].Size()*c.y.Size() > maxJacobian) {
					continue
				}
				if r := exclusionFor(c, chk.name); r != "" {
					skips["excluded check: "+r]++
					continue
				}
				ran = true
				var msg string
				if err := catchAll(func() { msg = chk.run() }); err != nil {
					msg = err.Error()
				}
				if msg != "" {
					t.Errorf("%s: %s: %s", name, chk.name, msg)
				}
			}
			if ran {
				swept[oi]++
				nsamples++
				if c.y.Size() == 0 || slices.ContainsFunc(c.x, func(x *T) bool { return x.Size() == 0 }) {
					nempty++
				}
			}
		}
	}
	// Every Differentiable entry is swept or listed in unswept, and every
	// name listed there has an entry that is not swept.
	listed := map[string]bool{}
	nops := 0
	for oi, op := range ops {
		if !op.Differentiable {
			continue
		}
		if swept[oi] > 0 {
			nops++
			continue
		}
		if r, ok := unswept[op.Name]; ok {
			listed[op.Name] = true
			t.Logf("not swept: %s: %s", op.Name, r)
			continue
		}
		t.Errorf("%s is Differentiable but no sample was swept and it is not listed in unswept", op.Name)
	}
	for name := range unswept {
		if !listed[name] {
			t.Errorf("unswept lists %s, but every registry entry of that name was swept (or none exists): remove it", name)
		}
	}
	for _, e := range sweepExclusions {
		found := e.op == "*"
		for _, op := range ops {
			found = found || e.op == op.Name || e.op == opBaseName(op.Name)
		}
		if !found {
			t.Errorf("sweepExclusions names %s, which is not in the registry", e.op)
		}
	}
	t.Logf("swept %d samples (%d with a size-0 operand or result) of %d ops; skipped: %v", nsamples, nempty, nops, skips)
}

// TestSweepRegressions holds minimal reproducers of the bugs the sweeps
// found (fixed); each asserts the correct behavior.
func TestSweepRegressions(t *testing.T) {
	t.Run("jacobian-rank0", func(t *testing.T) {
		x := peel.FromFloat64s([]float64{1.5}, []int{}...)
		for name, jac := range map[string]func(func(*T) *T, ...transforms.JacobianOption) func(*T) *T{"Jacfwd": transforms.Jacfwd[*T], "Jacrev": transforms.Jacrev[*T]} {
			var j *T
			if err := catchAll(func() { j = jac(peel.Sin)(x) }); err != nil {
				t.Errorf("%s(Sin) at a rank-0 x: %v", name, err)
				continue
			}
			near(t, name, []float64{j.Item()}, []float64{math.Cos(1.5)}, 1e-12)
		}
		var h *T
		if err := catchAll(func() { h = transforms.Hessian(func(x *T) *T { return peel.Sum(peel.Sin(x)) })(x) }); err != nil {
			t.Errorf("Hessian at a rank-0 x: %v", err)
		} else {
			near(t, "Hessian", []float64{h.Item()}, []float64{-math.Sin(1.5)}, 1e-12)
		}
	})
	t.Run("softplus-second-derivative-at-0", func(t *testing.T) {
		for name, c := range map[string]struct {
			f    func(*T) *T
			want float64
		}{"Softplus": {peel.Softplus, 0.25}, "LogSigmoid": {peel.LogSigmoid, -0.25}} {
			g := transforms.Grad(func(x *T) *T { return peel.Sum(c.f(x)) })
			gg := transforms.Grad(func(x *T) *T { return peel.Sum(g(x)) })(f64(0, math.Copysign(0, -1)))
			near(t, name+"''(±0)", gg.Float64s(), []float64{c.want, c.want}, 1e-12)
		}
	})
}
