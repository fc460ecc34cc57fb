package transforms

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/peel-ml/peel"
)

// CheckOption configures Check: CheckTolerance, CheckSeed, CheckSkip.
type CheckOption interface{ applyCheck(*checkConfig) }

type checkConfig struct {
	rtol, exact float64
	seed        uint64
	skip        map[string]bool
}

type checkOption func(*checkConfig)

func (o checkOption) applyCheck(c *checkConfig) { o(c) }

// CheckTolerance sets the tolerances of Check: rtol for the derivatives
// against central differences (default 1e-6), exact for the transforms
// that compute what eager evaluation does (Vmap, Compile, Functionalize,
// Jacfwd against Jacrev; default 1e-9). Each is relative to the larger
// of 1 and the oracle's magnitude. It panics when either is not positive.
func CheckTolerance(rtol, exact float64) CheckOption {
	if !(rtol > 0) || !(exact > 0) {
		treeErrorf("transforms.CheckTolerance", "tolerances must be positive, got %v and %v", rtol, exact)
	}
	return checkOption(func(c *checkConfig) { c.rtol, c.exact = rtol, exact })
}

// CheckSeed sets the seed of the random directions, cotangents and
// batch lanes Check draws (default 0): the same seed draws the same.
func CheckSeed(seed uint64) CheckOption {
	return checkOption(func(c *checkConfig) { c.seed = seed })
}

// CheckSkip leaves out the checks of the given names (CheckResult.Name:
// "VJP", "JVP", "Grad", "Jacobians", "Vmap", "Compile",
// "Functionalize"). It panics on an unknown name.
func CheckSkip(names ...string) CheckOption {
	for _, n := range names {
		if !slices.Contains(checkNames, n) {
			treeErrorf("transforms.CheckSkip", "no check is named %q (the names: %s)", n, strings.Join(checkNames, ", "))
		}
	}
	return checkOption(func(c *checkConfig) {
		for _, n := range names {
			c.skip[n] = true
		}
	})
}

var checkNames = []string{"VJP", "JVP", "Grad", "Jacobians", "Vmap", "Compile", "Functionalize"}

// CheckResult is one comparison Check made.
type CheckResult struct {
	// Name is the transform checked: "VJP", "JVP" (each against central
	// differences), "Grad" (against VJP's pullback), "Jacobians"
	// (Jacfwd against Jacrev), "Vmap" (against a loop over the batch),
	// "Compile" (against eager evaluation), "Functionalize" (against
	// eager evaluation on fresh copies, results and mutated arguments).
	Name string
	// Against names the oracle.
	Against string
	// Leaf names where the largest error was: an argument's leaf for
	// the derivatives, a value's leaf for the others ("" when the whole
	// value is one tensor).
	Leaf string
	// Err is the largest error, relative to the larger of 1 and the
	// oracle's magnitude there; Tol the tolerance it was held to.
	Err, Tol float64
	// Failed reports a disagreement past Tol, or a panic (Panic).
	Failed bool
	// Panic is the error the transform (or the oracle) panicked with.
	Panic error
	// Skipped says why the check did not run ("" when it ran).
	Skipped string
}

func (r CheckResult) String() string {
	switch {
	case r.Skipped != "":
		return fmt.Sprintf("%-13s skipped: %s", r.Name, r.Skipped)
	case r.Panic != nil:
		return fmt.Sprintf("%-13s FAILED: panicked: %v", r.Name, r.Panic)
	}
	verdict := "ok"
	if r.Failed {
		verdict = "FAILED"
	}
	where := ""
	if r.Leaf != "" {
		where = " at " + r.Leaf
	}
	return fmt.Sprintf("%-13s %s against %s: error %.3g%s (tolerance %.3g)", r.Name, verdict, r.Against, r.Err, where, r.Tol)
}

// CheckReport is what Check found: one result per check, in the order
// of CheckResult.Name's list.
type CheckReport struct {
	Results []CheckResult
}

// OK reports whether no check failed.
func (r *CheckReport) OK() bool { return len(r.Failures()) == 0 }

// Failures returns the checks that failed.
func (r *CheckReport) Failures() []CheckResult {
	var fs []CheckResult
	for _, c := range r.Results {
		if c.Failed {
			fs = append(fs, c)
		}
	}
	return fs
}

// String prints one line per check.
func (r *CheckReport) String() string {
	var b strings.Builder
	for _, c := range r.Results {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Check runs f at args under each transform and compares it with an
// oracle (JAX's check_grads and torch's gradcheck check derivatives
// only): VJP and JVP against central differences along random
// directions, one argument leaf at a time; Grad against VJP's pullback;
// Jacfwd against Jacrev; Vmap against a loop over a batch of three
// perturbed copies of args; Compile against eager evaluation; and
// Functionalize against eager evaluation on fresh copies of args, results
// and the arguments f writes into. Float leaves of args are converted to
// float64 first; other leaves are carried as they are and get no
// derivative, nor do integer leaves of the value. f runs on copies of
// args, never on the caller's tensors, so a function that writes into
// its argument is checked too. A float leaf of the
// value narrower than float64 (f casts) makes the differences' step
// 1e-3 of the leaf's scale rather than 1e-6, and their error about
// 1e-4: set CheckTolerance to match. A transform that panics is a failure whose error the
// report keeps; Check itself panics with *peel.Error only when f is nil
// or panics at args eagerly. Use it on a model or a custom op:
//
//	rep := transforms.Check(loss, params)
//	if !rep.OK() {
//		log.Fatal(rep)
//	}
func Check[A, B any](f func(A) B, args A, opts ...CheckOption) *CheckReport {
	const op = "transforms.Check"
	needFunc(op, f)
	cfg := &checkConfig{rtol: 1e-6, exact: 1e-9, skip: map[string]bool{}}
	for _, o := range opts {
		o.applyCheck(cfg)
	}
	leaves, def := flatten(op, args)
	x := make([]*tensor, len(leaves))
	for i, l := range leaves {
		x[i] = l
		if l != nil && l.DType().IsFloat() {
			x[i] = peel.AsType(l, peel.Float64)
		}
	}
	c := &checker[A, B]{op: op, f: f, def: def, x: x, cfg: cfg, key: cfg.seed}
	c.y, c.outDef = c.eval(c.point())
	rep := &CheckReport{}
	for _, name := range checkNames {
		if cfg.skip[name] {
			rep.Results = append(rep.Results, CheckResult{Name: name, Skipped: "CheckSkip"})
			continue
		}
		rep.Results = append(rep.Results, c.run(name))
	}
	return rep
}

// checker holds one Check's function, point and draws.
type checker[A, B any] struct {
	op     string
	f      func(A) B
	def    *treeDef
	x      []*tensor // args' leaves, floats in float64
	y      []*tensor // f's value's leaves at x
	outDef *treeDef
	cfg    *checkConfig
	key    uint64
	step   float64 // the central differences' relative step
}

// floats returns the indices of the float leaves of args, and g: f as a
// function of those leaves alone, the others held at their values (Grad
// and the Jacobians refuse to differentiate an integer leaf).
func (c *checker[A, B]) floats() ([]int, func([]*tensor) B) {
	var fl []int
	for i, x := range c.x {
		if diff(x) {
			fl = append(fl, i)
		}
	}
	return fl, func(fs []*tensor) B {
		full := c.point()
		for j, i := range fl {
			full[i] = fs[j]
		}
		return c.f(build[A](c.def, full))
	}
}

// pick returns the leaves of x at the indices fl.
func pick(x []*tensor, fl []int) []*tensor {
	out := make([]*tensor, len(fl))
	for j, i := range fl {
		out[j] = x[i]
	}
	return out
}

// point returns fresh copies of args' leaves: f may write into its
// argument, and every evaluation starts from the same values (the
// caller's tensors are never given to f).
func (c *checker[A, B]) point() []*tensor { return cloneLeaves(c.x) }

// eval runs f on leaves, returning its value's leaves and definition.
func (c *checker[A, B]) eval(leaves []*tensor) ([]*tensor, *treeDef) {
	return flatten(c.op, c.f(build[A](c.def, leaves)))
}

// normal draws a tensor shaped like t, of its dtype, standard normal.
func (c *checker[A, B]) normal(t *tensor) *tensor {
	c.key++
	return peel.AsType(peel.Normal(peel.Key(int64(c.key)), peel.Float64, t.Shape()...), t.DType())
}

// diff is a float leaf: a derivative is checked for it (the argument's
// are float64; the value's are what f makes of them).
func diff(t *tensor) bool { return t != nil && t.DType().IsFloat() }

func (c *checker[A, B]) argName(i int) string   { return c.def.LeafName("the argument", i) }
func (c *checker[A, B]) valueName(k int) string { return c.outDef.LeafName("the value", k) }

// inner is ⟨u, y⟩ over the float leaves.
func inner(u, y []*tensor) float64 {
	s := 0.0
	for k := range u {
		if u[k] != nil && diff(y[k]) {
			s += peel.Sum(peel.Mul(u[k], y[k])).Item()
		}
	}
	return s
}

func (c *checker[A, B]) run(name string) (res CheckResult) {
	res.Name = name
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*peel.Error)
			if !ok {
				panic(r)
			}
			res.Failed, res.Panic = true, e
		}
	}()
	switch name {
	case "VJP", "JVP":
		res = c.directional(name)
	case "Grad":
		res = c.grad()
	case "Jacobians":
		res = c.jacobians()
	case "Vmap":
		res = c.vmap()
	}
	res.Name = name
	switch name {
	case "VJP", "JVP", "Grad", "Jacobians", "Vmap":
		return res
	case "Compile":
		res.Against, res.Tol = "eager evaluation", c.cfg.exact
		got, _ := flatten(c.op, Compile(c.f)(build[A](c.def, c.point())))
		res.Err, res.Leaf = c.compare(got, c.y, c.valueName)
	case "Functionalize":
		res.Against, res.Tol = "eager evaluation on fresh copies", c.cfg.exact
		xa, xb := cloneLeaves(c.x), cloneLeaves(c.x)
		got, _ := flatten(c.op, Functionalize(c.f)(build[A](c.def, xa)))
		want, _ := c.eval(xb)
		res.Err, res.Leaf = c.compare(got, want, c.valueName)
		// The arguments f wrote into, written the same.
		if e, l := c.compare(xa, xb, c.argName); e > res.Err {
			res.Err, res.Leaf = e, l
		}
	}
	res.Failed = !(res.Err <= res.Tol)
	return res
}

func cloneLeaves(x []*tensor) []*tensor {
	out := make([]*tensor, len(x))
	for i, t := range x {
		if t != nil {
			out[i] = peel.Clone(t)
		}
	}
	return out
}

// directional checks VJP or JVP against central differences of
// ⟨u, f(x + εv)⟩ along a random direction v in one argument leaf at a
// time, u a random cotangent.
func (c *checker[A, B]) directional(name string) (res CheckResult) {
	res.Name, res.Against, res.Tol = name, "central differences", c.cfg.rtol
	u := make([]*tensor, len(c.y))
	// The step: 1e-6 of the leaf's scale where f's value is float64
	// (truncation 1e-12, rounding 1e-10); 1e-3 where a value leaf is
	// narrower, whose rounding would swamp a smaller step.
	c.step = 1e-6
	for k, y := range c.y {
		if diff(y) {
			u[k] = c.normal(y)
			if y.DType() != peel.Float64 {
				c.step = 1e-3
			}
		}
	}
	var pulled []*tensor
	if name == "VJP" {
		_, pb := VJP(func(a A) B { return c.f(a) }, build[A](c.def, c.point()))
		pulled, _ = flatten(c.op, pb(build[B](c.outDef, zerosForNil(u, c.y))))
	}
	ran := false
	for i, xi := range c.x {
		if !diff(xi) || xi.Size() == 0 {
			continue
		}
		ran = true
		v := c.normal(xi)
		eps := c.step * math.Max(1, peel.Max(peel.Abs(xi)).Item())
		shifted := func(s float64) float64 {
			xs := c.point()
			xs[i] = peel.Add(xi, peel.Mul(v, peel.Scalar(s)))
			y, _ := c.eval(xs)
			return inner(u, y)
		}
		fd := (shifted(eps) - shifted(-eps)) / (2 * eps)
		var ad float64
		if name == "VJP" {
			ad = peel.Sum(peel.Mul(pulled[i], v)).Item()
		} else {
			tan := make([]*tensor, len(c.x))
			for j, xj := range c.x {
				tan[j] = peel.ZerosLike(xj)
			}
			tan[i] = v
			_, t := JVP(func(a A) B { return c.f(a) }, build[A](c.def, c.point()), build[A](c.def, tan))
			tl, _ := flatten(c.op, t)
			ad = inner(u, tl)
		}
		// NaN (a derivative or a difference that is) counts as worst.
		if e := math.Abs(ad-fd) / math.Max(1, math.Max(math.Abs(fd), math.Abs(ad))); !(e <= res.Err) || res.Leaf == "" {
			res.Err, res.Leaf = e, c.argName(i)
		}
	}
	if !ran {
		res.Skipped = "no float argument leaf"
		return res
	}
	res.Failed = !(res.Err <= res.Tol)
	return res
}

// grad checks Grad of ⟨u, f⟩ against VJP's pullback of u.
func (c *checker[A, B]) grad() (res CheckResult) {
	res.Against, res.Tol = "VJP's pullback", c.cfg.exact
	u := make([]*tensor, len(c.y))
	for k, y := range c.y {
		if diff(y) {
			u[k] = c.normal(y)
		}
	}
	fl, g := c.floats()
	if len(fl) == 0 {
		res.Skipped = "no float argument leaf"
		return res
	}
	got := Grad(func(fs []*tensor) *peel.Tensor {
		y, _ := flatten(c.op, g(fs))
		s := peel.Scalar(0.0)
		for k := range u {
			if u[k] != nil {
				s = peel.Add(s, peel.Sum(peel.Mul(u[k], y[k])))
			}
		}
		return s
	})(pick(c.point(), fl))
	_, pb := VJP(func(a A) B { return c.f(a) }, build[A](c.def, c.point()))
	want, _ := flatten(c.op, pb(build[B](c.outDef, zerosForNil(u, c.y))))
	res.Err, res.Leaf = c.compareFloat(got, pick(want, fl), func(j int) string { return c.argName(fl[j]) })
	res.Failed = !(res.Err <= res.Tol)
	return res
}

// jacobianLimit is the most Jacobian elements Check computes.
const jacobianLimit = 1 << 20

// jacobians checks JacfwdTree against JacrevTree.
func (c *checker[A, B]) jacobians() (res CheckResult) {
	res.Against, res.Tol = "Jacrev", c.cfg.exact
	in, out := 0, 0
	for _, x := range c.x {
		if diff(x) {
			in += x.Size()
		}
	}
	for _, y := range c.y {
		if diff(y) {
			out += y.Size()
		}
	}
	if in*out > jacobianLimit {
		res.Skipped = fmt.Sprintf("the Jacobian has %d elements, more than %d", in*out, jacobianLimit)
		return res
	}
	if in == 0 || out == 0 {
		res.Skipped = "no float leaf in the argument or the value"
		return res
	}
	// The Jacobians of the float value leaves by the float argument
	// leaves.
	fl, g := c.floats()
	var ko []int
	for k, y := range c.y {
		if diff(y) {
			ko = append(ko, k)
		}
	}
	h := func(fs []*tensor) []*tensor {
		y, _ := flatten(c.op, g(fs))
		return pick(y, ko)
	}
	fw := JacfwdTree(h)(pick(c.point(), fl))
	rv := JacrevTree(h)(pick(c.point(), fl))
	for k := range fw {
		e, l := c.compareFloat(fw[k], rv[k], func(j int) string { return c.valueName(ko[k]) + " by " + c.argName(fl[j]) })
		if e > res.Err || res.Leaf == "" {
			res.Err, res.Leaf = e, l
		}
	}
	res.Failed = !(res.Err <= res.Tol)
	return res
}

// vmapLanes is the batch Check's Vmap runs.
const vmapLanes = 3

// vmap checks Vmap(f) on a batch of perturbed copies of args against a
// loop over the lanes.
func (c *checker[A, B]) vmap() (res CheckResult) {
	res.Against, res.Tol = "a loop over the batch", c.cfg.exact
	lanes := make([][]*tensor, vmapLanes)
	for b := range lanes {
		lanes[b] = make([]*tensor, len(c.x))
		for i, x := range c.x {
			switch {
			case x == nil:
			case diff(x) && b > 0:
				lanes[b][i] = peel.Add(x, peel.Mul(c.normal(x), peel.Scalar(0.1)))
			default:
				lanes[b][i] = peel.Clone(x)
			}
		}
	}
	stacked := make([]*tensor, len(c.x))
	for i, x := range c.x {
		if x == nil {
			continue
		}
		col := make([]*tensor, vmapLanes)
		for b := range lanes {
			col[b] = lanes[b][i]
		}
		stacked[i] = peel.Stack(col, 0)
	}
	got, _ := flatten(c.op, Vmap(c.f)(build[A](c.def, stacked)))
	for b := range lanes {
		want, _ := c.eval(lanes[b])
		lane := make([]*tensor, len(got))
		for k, g := range got {
			if g != nil {
				lane[k] = peel.Index(g, b)
			}
		}
		if e, l := c.compare(lane, want, c.valueName); e > res.Err || res.Leaf == "" {
			res.Err, res.Leaf = e, fmt.Sprintf("lane %d of %s", b, l)
		}
	}
	res.Failed = !(res.Err <= res.Tol)
	return res
}

// compare returns the largest error between got and want, leaf by leaf
// (any dtype; non-float leaves must be equal), and the name of its leaf.
func (c *checker[A, B]) compare(got, want []*tensor, name func(int) string) (float64, string) {
	worst, leaf := 0.0, ""
	if len(got) != len(want) {
		return math.Inf(1), fmt.Sprintf("(%d leaves against %d)", len(got), len(want))
	}
	for k := range got {
		e := leafError(got[k], want[k], true)
		if e > worst || leaf == "" {
			worst, leaf = e, name(k)
		}
	}
	return worst, leaf
}

// compareFloat is compare over the float leaves of want, by value: a
// Jacobian by forward mode has the value's dtype, by reverse mode the
// argument's.
func (c *checker[A, B]) compareFloat(got, want []*tensor, name func(int) string) (float64, string) {
	worst, leaf := 0.0, ""
	for k := range want {
		if !diff(want[k]) || k >= len(got) {
			continue
		}
		if e := leafError(got[k], want[k], false); e > worst || leaf == "" {
			worst, leaf = e, name(k)
		}
	}
	return worst, leaf
}

// leafError is the largest |got − want| over want's elements, relative
// to the larger of 1 and |want| there; NaN where want is NaN is no
// error, and a shape differing (or, with sameDType, a dtype) is an
// infinite one.
func leafError(got, want *tensor, sameDType bool) float64 {
	switch {
	case got == nil && want == nil:
		return 0
	case got == nil || want == nil || !slices.Equal(got.Shape(), want.Shape()) || sameDType && got.DType() != want.DType():
		return math.Inf(1)
	}
	g := peel.AsType(got, peel.Float64).Float64s()
	w := peel.AsType(want, peel.Float64).Float64s()
	worst := 0.0
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) || g[i] == w[i] {
			continue
		}
		e := math.Abs(g[i]-w[i]) / math.Max(1, math.Abs(w[i]))
		if !(e <= worst) {
			worst = e
			if math.IsNaN(e) {
				return math.Inf(1)
			}
		}
	}
	return worst
}
