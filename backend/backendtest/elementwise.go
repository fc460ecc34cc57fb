package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// elemShapes are the shapes every elementwise primitive is run on: rank 0,
// size-0 dimensions, size-1 dimensions, odd lengths that leave tails after
// unrolled loops, and ranks up to 4.
var elemShapes = [][]int{{}, {0}, {1}, {5}, {17}, {3, 4}, {4, 1}, {1, 1}, {2, 0, 3}, {2, 3, 4}, {2, 1, 3, 2}}

// bigShape is large enough for a backend to split the work across threads
// (with an odd length).
var bigShape = []int{70001}

// unaryOp is the conformance case of an elementwise unary primitive.
type unaryOp struct {
	prim *interp.Prim
	kind opKind
	f    func(x float64) float64
	// cond is |x·f′(x)| at x, given y = f(x); nil for exact operations.
	cond       func(x, y float64) float64
	i          func(int64) int64
	b          func(bool) bool
	vals       values
	signedZero bool
}

var unaryOps = []unaryOp{
	{prim: prims.Neg, f: func(x float64) float64 { return -x }, i: func(x int64) int64 { return -x }, vals: defaultValues, signedZero: true},
	{prim: prims.Abs, f: math.Abs, i: absI, vals: defaultValues, signedZero: true},
	{prim: prims.Sign, f: signF, i: signI, vals: defaultValues},
	{prim: prims.Floor, f: math.Floor, vals: roundValues},
	{prim: prims.Ceil, f: math.Ceil, vals: roundValues},
	{prim: prims.Round, f: math.Round, vals: roundValues},
	{prim: prims.Exp, kind: transcOp, f: math.Exp, cond: func(x, y float64) float64 { return x * y }, vals: expValues},
	{prim: prims.Log, kind: transcOp, f: refLog, cond: func(x, y float64) float64 { return 1 }, vals: logValues},
	{prim: prims.Log1p, kind: transcOp, f: math.Log1p, cond: func(x, y float64) float64 { return x / (1 + x) }, vals: log1pValues},
	{prim: prims.Expm1, kind: transcOp, f: math.Expm1, cond: func(x, y float64) float64 { return x * (y + 1) }, vals: expm1Values},
	{prim: prims.Sqrt, kind: transcOp, f: math.Sqrt, cond: func(x, y float64) float64 { return y / 2 }, vals: sqrtValues},
	{prim: prims.Rsqrt, kind: transcOp, f: func(x float64) float64 { return 1 / math.Sqrt(x) }, cond: func(x, y float64) float64 { return y / 2 }, vals: sqrtValues},
	{prim: prims.Sin, kind: transcOp, f: math.Sin, cond: func(x, y float64) float64 { return x * math.Cos(x) }, vals: trigValues},
	{prim: prims.Cos, kind: transcOp, f: math.Cos, cond: func(x, y float64) float64 { return x * math.Sin(x) }, vals: trigValues},
	{prim: prims.Tan, kind: transcOp, f: math.Tan, cond: func(x, y float64) float64 { return x * (1 + y*y) }, vals: trigValues},
	{prim: prims.Tanh, kind: transcOp, f: math.Tanh, cond: func(x, y float64) float64 { return x * (1 - y*y) }, vals: saturatingValues},
	{prim: prims.Logistic, kind: transcOp, f: logistic, cond: func(x, y float64) float64 { return x * y * (1 - y) }, vals: logisticValues},
	{prim: prims.Erf, kind: transcOp, f: math.Erf, cond: func(x, y float64) float64 { return x * 2 / math.SqrtPi * math.Exp(-x*x) }, vals: saturatingValues},
	{prim: prims.Not, i: func(x int64) int64 { return ^x }, b: func(x bool) bool { return !x }, vals: bitValues},
	{prim: prims.Copy, f: func(x float64) float64 { return x }, i: func(x int64) int64 { return x }, b: func(x bool) bool { return x }, vals: copyValues, signedZero: true},
	{prim: prims.StopGradient, f: func(x float64) float64 { return x }, i: func(x int64) int64 { return x }, b: func(x bool) bool { return x }, vals: copyValues, signedZero: true},
}

// referenceOp is the case of an elementwise primitive that carries its
// float64 meaning as data (prims.Reference) and has no case in unaryOps:
// its kernel is checked against Reference.F, within the error allowed by
// the condition number x·Reference.D(x), on random arguments in [Lo, Hi]
// and the float edge values.
func referenceOp(p *interp.Prim) unaryOp {
	r, _ := prims.ReferenceOf(p)
	return unaryOp{
		prim: p, kind: transcOp, f: r.F,
		cond: func(x, _ float64) float64 { return x * r.D(x) },
		vals: values{lo: r.Lo, hi: r.Hi, special: with(100, -100, 1000.5)},
	}
}

// Value sets of the unary primitives.
var (
	roundValues = values{lo: -10, hi: 10, special: with(0.49999997, -0.49999997, 0.49999999999999994, 1.5, -1.5, 2.5, -0.5, 3, -4,
		8388609, -8388609, 4503599627370497, -4503599627370497, 0.7, -0.3, 1e15+0.5)}
	expValues = values{lo: -10, hi: 10, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, inf, -inf, nan, tiny(dt), -tiny(dt), 1, -1, 88, -87, 89, -100, -104, 700, 709, 710, -745, 1e30, -1e30}
	}}
	logValues = values{lo: 0, hi: 50, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, -1, -inf, inf, nan, tiny(dt), large(dt), 1, 1 + 0x1p-23, 1 - 0x1p-24, 2, 0.5,
			denormal(dt), smallestDenormal(dt), -denormal(dt)}
	}}
	log1pValues = values{lo: -0.99, hi: 10, special: func(dt backend.DType) []float64 {
		return []float64{-1, -2, 0, negZero, tiny(dt), -tiny(dt), inf, -inf, nan, large(dt), 1e-8, -1e-8, -0.5,
			denormal(dt), -denormal(dt)}
	}}
	expm1Values = values{lo: -5, hi: 5, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, tiny(dt), -tiny(dt), 1e-8, -1e-8, inf, -inf, nan, 88, 100, -100, large(dt), -large(dt)}
	}}
	sqrtValues = values{lo: 0, hi: 100, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, -1, inf, -inf, nan, tiny(dt), large(dt), 1, 4, 0.25, 2}
	}}
	trigValues = values{lo: -10, hi: 10, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, tiny(dt), -tiny(dt), inf, -inf, nan, 100, -100, 1000.5, math.Pi / 2, math.Pi, -math.Pi, 3 * math.Pi / 2}
	}}
	saturatingValues = values{lo: -5, hi: 5, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, tiny(dt), -tiny(dt), inf, -inf, nan, large(dt), -large(dt), 20, -20, 6, -6}
	}}
	logisticValues = values{lo: -20, hi: 20, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, inf, -inf, nan, large(dt), -large(dt), 100, -100, 1000, -1000}
	}}
	bitValues  = values{ilo: -1000, ihi: 1000, ispecial: intEdges}
	copyValues = values{lo: -3, hi: 3, special: func(dt backend.DType) []float64 {
		return append(floatEdges(dt), denormal(dt), -denormal(dt))
	}, ilo: -9, ihi: 9, ispecial: intEdges}
)

// apply computes the reference result and the error allowed.
func (u unaryOp) apply(x array) (array, []float64) {
	out := newArray(x.dt, x.shape)
	var allow []float64
	tol := tolFor(u.kind, x.dt)
	if u.kind != exactOp && x.dt.IsFloat() {
		allow = make([]float64, x.size())
	}
	for k := range x.size() {
		switch x.dt {
		case backend.Bool:
			out.b[k] = u.b(x.b[k])
		case backend.Int64:
			out.i[k] = u.i(x.i[k])
		default:
			y := fround(x.dt, u.f(x.f[k]))
			out.f[k] = y
			if allow != nil {
				allow[k] = tol.bound(y, u.cond(x.f[k], y))
			}
		}
	}
	return out, allow
}

func (u unaryOp) has(dt backend.DType) bool {
	switch dt {
	case backend.Bool:
		return u.b != nil
	case backend.Int64:
		return u.i != nil
	}
	return u.f != nil
}

func (u unaryOp) run(s *suite) {
	name := u.prim.Name
	dts := accepted(u.prim, nil, sameAvals(1, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				interp.Bind1(u.prim, nil, s.operand(dt, []int{2}, contiguous, defaultValues).t)
			})
			continue
		}
		if !u.has(dt) {
			s.failf("%s: the shape rule accepts %v but the suite has no reference for it", name, dt)
			continue
		}
		one := func(x operand) {
			desc := describe(name, dt, x.a.shape, "x="+x.l.String())
			s.try(desc, func() {
				got := interp.Bind1(u.prim, nil, x.t)
				want, allow := u.apply(x.a)
				s.expect(check{desc: desc, allow: allow, signedZero: u.signedZero,
					explain: func(k int) string { return fmt.Sprintf("%s(%s)", name, x.a.str(k)) }}, got, want)
			})
		}
		for _, shape := range elemShapes {
			for _, l := range layoutsFor(shape) {
				one(s.operand(dt, shape, l, u.vals))
			}
		}
		if edges := edgeArray(dt, u.vals); edges.size() > 0 {
			one(s.place(edges, contiguous))
			one(s.place(edges, reversed))
		}
		one(s.operand(dt, bigShape, contiguous, u.vals))
		one(s.operand(dt, bigShape, strided, u.vals))
	}
}

// edgeArray returns a 1-D array of every edge value of v for dt.
func edgeArray(dt backend.DType, v values) array {
	switch dt {
	case backend.Bool:
		return array{dt: dt, shape: []int{2}, b: []bool{false, true}}
	case backend.Int64:
		return array{dt: dt, shape: []int{len(v.ispecial)}, i: slices.Clone(v.ispecial)}
	}
	if v.special == nil {
		return newArray(dt, []int{0})
	}
	sp := v.special(dt)
	a := newArray(dt, []int{len(sp)})
	for k, x := range sp {
		a.f[k] = fround(dt, x)
	}
	return a
}

// binaryOp is the conformance case of an elementwise binary primitive.
type binaryOp struct {
	prim *interp.Prim
	kind opKind
	f    func(x, y float64) float64
	// f32, when set, is the float32 reference (an op defined in its
	// operands' arithmetic, not as the rounded float64 result).
	f32 func(x, y float32) float32
	// cond is |x·∂f/∂x| + |y·∂f/∂y| given z = f(x, y); nil for exact ops.
	cond func(x, y, z float64) float64
	i    func(x, y int64) int64
	b    func(x, y bool) bool
	// cmp, for comparisons, gives the result from the sign of x − y;
	// unordered is the result when a NaN is involved.
	cmp       func(c int) bool
	unordered bool
	// vals draws x (and y, unless yvals is set).
	vals  values
	yvals *values
}

var binaryOps = []binaryOp{
	{prim: prims.Add, kind: arithOp, f: func(x, y float64) float64 { return x + y }, i: func(x, y int64) int64 { return x + y }, vals: defaultValues},
	{prim: prims.Sub, kind: arithOp, f: func(x, y float64) float64 { return x - y }, i: func(x, y int64) int64 { return x - y }, vals: defaultValues},
	{prim: prims.Mul, kind: arithOp, f: func(x, y float64) float64 { return x * y }, i: func(x, y int64) int64 { return x * y }, vals: defaultValues},
	{prim: prims.Div, kind: arithOp, f: func(x, y float64) float64 { return x / y }, i: divI, vals: divValues},
	{prim: prims.Rem, kind: arithOp, f: math.Mod, i: remI, vals: divValues},
	{prim: prims.FloorDivide, kind: exactOp, f: refFloorDiv[float64], f32: refFloorDiv[float32], vals: divValues},
	{prim: prims.Pow, kind: transcOp, f: refPow, cond: powCond, i: powI, vals: powBaseValues, yvals: &powExpValues},
	{prim: prims.Max, f: maxF, i: func(x, y int64) int64 { return max(x, y) }, b: func(x, y bool) bool { return x || y }, vals: defaultValues},
	{prim: prims.Min, f: minF, i: func(x, y int64) int64 { return min(x, y) }, b: func(x, y bool) bool { return x && y }, vals: defaultValues},
	{prim: prims.Atan2, kind: transcOp, f: math.Atan2, cond: atan2Cond, vals: atan2Values},
	{prim: prims.And, i: func(x, y int64) int64 { return x & y }, b: func(x, y bool) bool { return x && y }, vals: bitValues},
	{prim: prims.Or, i: func(x, y int64) int64 { return x | y }, b: func(x, y bool) bool { return x || y }, vals: bitValues},
	{prim: prims.Eq, cmp: func(c int) bool { return c == 0 }, vals: cmpValues},
	{prim: prims.Ne, cmp: func(c int) bool { return c != 0 }, unordered: true, vals: cmpValues},
	{prim: prims.Lt, cmp: func(c int) bool { return c < 0 }, vals: cmpValues},
	{prim: prims.Le, cmp: func(c int) bool { return c <= 0 }, vals: cmpValues},
	{prim: prims.Gt, cmp: func(c int) bool { return c > 0 }, vals: cmpValues},
	{prim: prims.Ge, cmp: func(c int) bool { return c >= 0 }, vals: cmpValues},
}

// Value sets of the binary primitives.
var (
	divValues = values{lo: -10, hi: 10, special: floatEdges, ilo: -20, ihi: 20,
		ispecial: []int64{0, 0, 1, -1, 7, -7, math.MaxInt64, math.MinInt64}}
	powBaseValues = values{lo: 0, hi: 4, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, -2, -0.5, 2, inf, -inf, nan, tiny(dt), large(dt),
			denormal(dt), smallestDenormal(dt), -denormal(dt)}
	}, ilo: -6, ihi: 6, ispecial: []int64{0, 1, -1, 2, -2, 3}}
	powExpValues = values{lo: -3, hi: 3, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, 2, 3, -1, -2, -3, 0.5, -0.5, inf, -inf, nan}
	}, ilo: -3, ihi: 15, ispecial: []int64{0, -1, -2, -7, 62, 63, 64, 100}}
	atan2Values = values{lo: -5, hi: 5, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, inf, -inf, nan, tiny(dt), large(dt), -large(dt)}
	}}
	cmpValues = values{lo: -2, hi: 2, special: func(dt backend.DType) []float64 {
		return append(floatEdges(dt), denormal(dt))
	}, ilo: -3, ihi: 3, ispecial: intEdges}
)

func powCond(x, y, z float64) float64 {
	return math.Abs(y*z) + math.Abs(y*refLog(math.Abs(x))*z)
}

func atan2Cond(y, x, _ float64) float64 {
	return 2 * math.Abs(x*y) / (x*x + y*y)
}

func (o binaryOp) resultDType(dt backend.DType) backend.DType {
	if o.cmp != nil {
		return backend.Bool
	}
	return dt
}

func (o binaryOp) has(dt backend.DType) bool {
	switch {
	case o.cmp != nil:
		return true
	case dt == backend.Bool:
		return o.b != nil
	case dt == backend.Int64:
		return o.i != nil
	}
	return o.f != nil
}

func (o binaryOp) compare(x, y array, k int) bool {
	c := 0
	switch x.dt {
	case backend.Bool:
		c = int(b2i(x.b[k]) - b2i(y.b[k]))
	case backend.Int64:
		switch {
		case x.i[k] < y.i[k]:
			c = -1
		case x.i[k] > y.i[k]:
			c = 1
		}
	default:
		switch a, b := x.f[k], y.f[k]; {
		case math.IsNaN(a) || math.IsNaN(b):
			return o.unordered
		case a < b:
			c = -1
		case a > b:
			c = 1
		}
	}
	return o.cmp(c)
}

// apply computes the reference result and the error allowed.
func (o binaryOp) apply(x, y array) (array, []float64) {
	out := newArray(o.resultDType(x.dt), x.shape)
	var allow []float64
	tol := tolFor(o.kind, x.dt)
	if o.kind != exactOp && x.dt.IsFloat() {
		allow = make([]float64, x.size())
	}
	for k := range x.size() {
		switch {
		case o.cmp != nil:
			out.b[k] = o.compare(x, y, k)
		case x.dt == backend.Bool:
			out.b[k] = o.b(x.b[k], y.b[k])
		case x.dt == backend.Int64:
			out.i[k] = o.i(x.i[k], y.i[k])
		case x.dt == backend.Float32 && o.f32 != nil:
			out.f[k] = float64(o.f32(float32(x.f[k]), float32(y.f[k])))
		default:
			z := fround(x.dt, o.f(x.f[k], y.f[k]))
			out.f[k] = z
			if allow != nil {
				c := 0.0
				if o.cond != nil {
					c = o.cond(x.f[k], y.f[k], z)
				}
				allow[k] = tol.bound(z, c)
			}
		}
	}
	return out, allow
}

func (o binaryOp) yValues() values {
	if o.yvals != nil {
		return *o.yvals
	}
	return o.vals
}

// layoutPairs returns the operand layouts a binary case runs with.
func layoutPairs(shape []int) [][2]layout {
	pairs := [][2]layout{{contiguous, contiguous}}
	for _, l := range layoutsFor(shape) {
		if l != contiguous {
			pairs = append(pairs, [2]layout{l, contiguous}, [2]layout{contiguous, l}, [2]layout{l, l})
		}
	}
	return pairs
}

func (o binaryOp) run(s *suite) {
	name := o.prim.Name
	dts := accepted(o.prim, nil, sameAvals(2, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				x := s.operand(dt, []int{2}, contiguous, defaultValues).t
				interp.Bind1(o.prim, nil, x, x)
			})
			continue
		}
		if !o.has(dt) {
			s.failf("%s: the shape rule accepts %v but the suite has no reference for it", name, dt)
			continue
		}
		one := func(x, y operand) {
			desc := describe(name, dt, x.a.shape, "x="+x.l.String(), "y="+y.l.String())
			s.try(desc, func() {
				got := interp.Bind1(o.prim, nil, x.t, y.t)
				want, allow := o.apply(x.a, y.a)
				s.expect(check{desc: desc, allow: allow,
					explain: func(k int) string { return fmt.Sprintf("%s(%s, %s)", name, x.a.str(k), y.a.str(k)) }}, got, want)
			})
		}
		for _, shape := range elemShapes {
			for _, p := range layoutPairs(shape) {
				one(s.operand(dt, shape, p[0], o.vals), s.operand(dt, shape, p[1], o.yValues()))
			}
		}
		// Every pair of edge values.
		xs, ys := edgeArray(dt, o.vals), edgeArray(dt, o.yValues())
		if dt == backend.Int64 {
			xs.i = append(xs.i, -2, 2, 3, -3, 5)
			xs.shape = []int{len(xs.i)}
		}
		x, y := allPairs(xs, ys)
		one(s.place(x, contiguous), s.place(y, contiguous))
		one(s.place(x, reversed), s.place(y, strided))
		// Large operands, also with a broadcast scalar.
		one(s.operand(dt, bigShape, contiguous, o.vals), s.operand(dt, bigShape, contiguous, o.yValues()))
		one(s.operand(dt, bigShape, contiguous, o.vals), s.operand(dt, bigShape, splat, o.yValues()))
		one(s.operand(dt, bigShape, splat, o.vals), s.operand(dt, bigShape, strided, o.yValues()))
	}
	// Operands the rule rejects.
	f64 := func(shape ...int) *interp.Tensor { return s.operand(dts[0], shape, contiguous, finiteValues).t }
	s.expectError(name+" with shapes [2,3] and [3,2]", func() { interp.Bind1(o.prim, nil, f64(2, 3), f64(3, 2)) })
	s.expectError(name+" with shapes [3] and []", func() { interp.Bind1(o.prim, nil, f64(3), f64()) })
	s.expectError(name+" with one operand", func() { interp.Bind1(o.prim, nil, f64(3)) })
	if len(dts) > 1 {
		s.expectError(name+" with mixed dtypes", func() {
			interp.Bind1(o.prim, nil, f64(3), s.operand(dts[1], []int{3}, contiguous, finiteValues).t)
		})
	}
}

// allPairs returns x and y such that (x[k], y[k]) runs over every pair of
// elements of xs and ys.
func allPairs(xs, ys array) (array, array) {
	n, m := xs.size(), ys.size()
	x, y := newArray(xs.dt, []int{n * m}), newArray(ys.dt, []int{n * m})
	for i := range n {
		for j := range m {
			x.set(i*m+j, xs, i)
			y.set(i*m+j, ys, j)
		}
	}
	return x, y
}

// runMutation checks an in-place primitive dst ← o(dst, src): through
// every writable destination layout, the result must be the destination
// box, hold the reference value, and the base the destination aliases
// must change at exactly the aliased elements.
func (o binaryOp) runMutation(s *suite, p *interp.Prim) {
	name := p.Name
	dts := accepted(p, nil, sameAvals(2, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				x := s.operand(dt, []int{2}, contiguous, defaultValues).t
				interp.Bind1(p, nil, x, s.operand(dt, []int{2}, contiguous, defaultValues).t)
			})
			continue
		}
		if !o.has(dt) {
			s.failf("%s: the shape rule accepts %v but the suite has no reference for it", name, dt)
			continue
		}
		s.mutationCases(p, dt, o.vals, o.yValues(), o.apply, false)
	}
}

// mutationCases runs the in-place primitive p on dtype dt over every shape
// and destination layout; apply is the reference of the new destination
// value.
func (s *suite) mutationCases(p *interp.Prim, dt backend.DType, dv, sv values, apply func(dst, src array) (array, []float64), signedZero bool) {
	name := p.Name
	for _, shape := range elemShapes {
		for _, ld := range layoutsFor(shape) {
			srcLayouts := []layout{contiguous}
			if ld != contiguous {
				srcLayouts = append(srcLayouts, ld)
			}
			if splat.fits(shape) {
				srcLayouts = append(srcLayouts, splat)
			}
			for _, ls := range srcLayouts {
				dst, src := s.operand(dt, shape, ld, dv), s.operand(dt, shape, ls, sv)
				desc := describe(name, dt, shape, "dst="+ld.String(), "src="+ls.String())
				if hasDuplicates(dst.m) {
					s.expectError(desc+" (the destination is a broadcast)", func() { interp.Bind1(p, nil, dst.t, src.t) })
					continue
				}
				s.try(desc, func() {
					want, allow := apply(dst.a, src.a)
					s.checkWrite(desc, dst, want, allow, signedZero, func() *interp.Tensor { return interp.Bind1(p, nil, dst.t, src.t) })
				})
			}
		}
	}
	// The source is the destination itself, or overlaps it.
	x := s.operand(dt, []int{3, 4}, contiguous, dv)
	s.try(describe(name, dt, x.a.shape, "src=dst"), func() {
		want, allow := apply(x.a, x.a)
		s.checkWrite(describe(name, dt, x.a.shape, "src=dst"), x, want, allow, signedZero,
			func() *interp.Tensor { return interp.Bind1(p, nil, x.t, x.t) })
	})
	for _, shift := range []int{1, -1} {
		base := s.operand(dt, []int{9}, contiguous, dv)
		lo, hi := 0, 1
		if shift < 0 {
			lo, hi = 1, 0
		}
		dst := s.viewOf(contiguous, base.t, base.a, prims.Slice, prims.SliceParams{Start: []int{lo}, Limit: []int{lo + 8}, Stride: []int{1}})
		src := s.viewOf(contiguous, base.t, base.a, prims.Slice, prims.SliceParams{Start: []int{hi}, Limit: []int{hi + 8}, Stride: []int{1}})
		desc := describe(name, dt, []int{8}, fmt.Sprintf("dst=x[%d:%d] src=x[%d:%d] (overlapping)", lo, lo+8, hi, hi+8))
		s.try(desc, func() {
			want, allow := apply(dst.a, src.a)
			s.checkWrite(desc, dst, want, allow, signedZero, func() *interp.Tensor { return interp.Bind1(p, nil, dst.t, src.t) })
		})
	}
	// Operands the rule rejects.
	mk := func(shape ...int) *interp.Tensor { return s.operand(dt, shape, contiguous, finiteValues).t }
	s.expectError(describe(name, dt, []int{2, 3}, "with a [3,2] source"), func() { interp.Bind1(p, nil, mk(2, 3), mk(3, 2)) })
	s.expectError(describe(name, dt, []int{3}, "with a [] source"), func() { interp.Bind1(p, nil, mk(3), mk()) })
}

// checkWrite runs a mutation of dst and checks that it returns the box
// dst, that dst holds want, and that dst's base changed at the aliased
// elements only.
func (s *suite) checkWrite(desc string, dst operand, want array, allow []float64, signedZero bool, run func() *interp.Tensor) {
	s.t.Helper()
	if got := run(); got != dst.t {
		s.failf("%s: the result is not the destination box", desc)
	}
	s.expect(check{desc: desc, allow: allow, signedZero: signedZero}, dst.t, want)
	if dst.base == dst.t {
		return
	}
	wantBase := dst.baseA.clone()
	var baseAllow []float64
	if allow != nil {
		baseAllow = make([]float64, wantBase.size())
	}
	for k, j := range dst.m {
		wantBase.set(j, want, k)
		if allow != nil {
			baseAllow[j] = allow[k]
		}
	}
	s.expect(check{desc: desc + ", read through the base", allow: baseAllow, signedZero: signedZero}, dst.base, wantBase)
}

func hasDuplicates(m []int) bool {
	seen := make(map[int]bool, len(m))
	for _, j := range m {
		if seen[j] {
			return true
		}
		seen[j] = true
	}
	return false
}

func runCopyInPlace(s *suite) {
	p := prims.CopyInPlace
	for _, dt := range accepted(p, nil, sameAvals(2, []int{2})) {
		s.mutationCases(p, dt, copyValues, copyValues, func(_, src array) (array, []float64) { return src.clone(), nil }, true)
		// An in-place transpose: the source is a view of the destination.
		x := s.operand(dt, []int{4, 4}, contiguous, copyValues)
		desc := describe(p.Name, dt, x.a.shape, "src=transpose(dst)")
		s.try(desc, func() {
			xt := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, x.t)
			shape, m := transposeMap(x.a.shape, []int{1, 0})
			s.checkWrite(desc, x, x.a.take(shape, m, array{}), nil, true, func() *interp.Tensor { return interp.Bind1(p, nil, x.t, xt) })
		})
	}
	s.expectError("copy_ f64[3] from f32[3]", func() {
		interp.Bind1(p, nil, s.operand(backend.Float64, []int{3}, contiguous, finiteValues).t, s.operand(backend.Float32, []int{3}, contiguous, finiteValues).t)
	})
}

// runSelect checks select(pred, onTrue, onFalse).
func runSelect(s *suite) {
	p := prims.Where
	dts := accepted(p, nil, func(dt backend.DType) []interp.Aval {
		return []interp.Aval{{Shape: []int{2}, DType: backend.Bool}, {Shape: []int{2}, DType: dt}, {Shape: []int{2}, DType: dt}}
	})
	for _, dt := range dts {
		for _, shape := range elemShapes {
			combos := [][3]layout{{contiguous, contiguous, contiguous}}
			for _, l := range layoutsFor(shape) {
				if l != contiguous {
					combos = append(combos, [3]layout{l, contiguous, contiguous}, [3]layout{contiguous, l, contiguous},
						[3]layout{contiguous, contiguous, l}, [3]layout{l, l, l})
				}
			}
			for _, c := range combos {
				pr := s.operand(backend.Bool, shape, c[0], copyValues)
				x, y := s.operand(dt, shape, c[1], copyValues), s.operand(dt, shape, c[2], copyValues)
				desc := describe(p.Name, dt, shape, "pred="+c[0].String(), "x="+c[1].String(), "y="+c[2].String())
				s.try(desc, func() {
					got := interp.Bind1(p, nil, pr.t, x.t, y.t)
					want := newArray(dt, shape)
					for k := range want.size() {
						if pr.a.b[k] {
							want.set(k, x.a, k)
						} else {
							want.set(k, y.a, k)
						}
					}
					s.expect(check{desc: desc, signedZero: true}, got, want)
				})
			}
		}
		pr := s.operand(backend.Bool, bigShape, contiguous, copyValues)
		x, y := s.operand(dt, bigShape, contiguous, copyValues), s.operand(dt, bigShape, splat, copyValues)
		desc := describe(p.Name, dt, bigShape, "y=splat")
		s.try(desc, func() {
			want := y.a.clone()
			for k := range want.size() {
				if pr.a.b[k] {
					want.set(k, x.a, k)
				}
			}
			s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, nil, pr.t, x.t, y.t), want)
		})
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	s.expectError("select with an f64 predicate", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3), f(backend.Float64, 3), f(backend.Float64, 3))
	})
	s.expectError("select with a [2] predicate and [3] branches", func() {
		interp.Bind1(p, nil, f(backend.Bool, 2), f(backend.Float64, 3), f(backend.Float64, 3))
	})
	s.expectError("select with branches of two dtypes", func() {
		interp.Bind1(p, nil, f(backend.Bool, 3), f(backend.Float64, 3), f(backend.Float32, 3))
	})
}

// convertValues holds the conversion edge cases: saturation, truncation,
// NaN, rounding to float32, and integers that float32 cannot represent.
var convertValues = values{lo: -10, hi: 10, special: func(dt backend.DType) []float64 {
	return append(floatEdges(dt), 0x1p63, -0x1p63, 0x1p62, -0x1p64, 1e300, -1e300, 2.9, -2.9, 0.5, -0.5, 0.9999,
		3.5e38, -3.5e38, 1e-50, denormal(dt), 16777217, 1+0x1p-30)
}, ilo: -100, ihi: 100, ispecial: append(slices.Clone(intEdges), 1<<24+1, -(1<<24 + 1), 1<<53+1)}

func runConvert(s *suite) {
	p := prims.ConvertElementType
	for _, from := range allDTypes {
		for _, to := range allDTypes {
			params := prims.ConvertParams{DType: to}
			one := func(x operand) {
				desc := describe(p.Name, from, x.a.shape, "to "+to.String(), "x="+x.l.String())
				s.try(desc, func() {
					got := interp.Bind1(p, params, x.t)
					s.expect(check{desc: desc, signedZero: true,
						explain: func(k int) string { return fmt.Sprintf("convert(%s)", x.a.str(k)) }}, got, refConvert(x.a, to))
				})
			}
			for _, shape := range elemShapes {
				for _, l := range layoutsFor(shape) {
					one(s.operand(from, shape, l, convertValues))
				}
			}
			one(s.place(edgeArray(from, convertValues), contiguous))
			one(s.operand(from, bigShape, contiguous, convertValues))
		}
	}
	s.expectError("convert_element_type to an invalid dtype", func() {
		interp.Bind1(p, prims.ConvertParams{DType: backend.Invalid}, s.operand(backend.Float64, []int{2}, contiguous, finiteValues).t)
	})
}

// threefryKAT are known answers of Threefry-2x32-20: key, counter, result.
var threefryKAT = [][6]uint32{
	{0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
	{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
	{0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
}

func runThreefry(s *suite) {
	p := prims.Threefry2x32
	// The reference itself must reproduce the known answers.
	for _, c := range threefryKAT {
		if y0, y1 := threefry2x32(c[0], c[1], c[2], c[3]); y0 != c[4] || y1 != c[5] {
			s.failf("backendtest's threefry2x32 reference is wrong for %#x: got %#x %#x", c[:4], y0, y1)
		}
	}
	kat := [4]array{}
	for j := range kat {
		kat[j] = newArray(backend.Int64, []int{len(threefryKAT)})
		for k, c := range threefryKAT {
			kat[j].i[k] = int64(c[j])
		}
	}
	words := values{ilo: 0, ihi: math.MaxUint32, ispecial: []int64{0, 1, math.MaxUint32, 0x80000000}}
	one := func(desc string, ops [4]operand) {
		s.try(desc, func() {
			outs := interp.Bind(p, nil, ops[0].t, ops[1].t, ops[2].t, ops[3].t)
			if len(outs) != 2 {
				s.failf("%s: %d results, want 2", desc, len(outs))
				return
			}
			w0, w1 := newArray(backend.Int64, ops[0].a.shape), newArray(backend.Int64, ops[0].a.shape)
			for k := range w0.size() {
				y0, y1 := threefry2x32(uint32(ops[0].a.i[k]), uint32(ops[1].a.i[k]), uint32(ops[2].a.i[k]), uint32(ops[3].a.i[k]))
				w0.i[k], w1.i[k] = int64(y0), int64(y1)
			}
			explain := func(k int) string {
				return fmt.Sprintf("threefry2x32(key %#x %#x, counter %#x %#x)", ops[0].a.i[k], ops[1].a.i[k], ops[2].a.i[k], ops[3].a.i[k])
			}
			s.expect(check{desc: desc + " y0", explain: explain}, outs[0], w0)
			s.expect(check{desc: desc + " y1", explain: explain}, outs[1], w1)
		})
	}
	one("threefry2x32 known answers", [4]operand{s.place(kat[0], contiguous), s.place(kat[1], contiguous), s.place(kat[2], contiguous), s.place(kat[3], contiguous)})
	for _, shape := range append(slices.Clone(elemShapes), bigShape) {
		ls := layoutsFor(shape)
		for r := range ls {
			var ops [4]operand
			for j := range ops {
				ops[j] = s.operand(backend.Int64, shape, ls[(r+j)%len(ls)], words)
			}
			one(describe(p.Name, backend.Int64, shape, "layouts", ops[0].l, ops[1].l, ops[2].l, ops[3].l), ops)
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	s.expectError("threefry2x32 with f64 operands", func() {
		x := f(backend.Float64, 2)
		interp.Bind(p, nil, x, x, x, x)
	})
	s.expectError("threefry2x32 with operands of two shapes", func() {
		interp.Bind(p, nil, f(backend.Int64, 2), f(backend.Int64, 2), f(backend.Int64, 3), f(backend.Int64, 2))
	})
	s.expectError("threefry2x32 with three operands", func() {
		x := f(backend.Int64, 2)
		interp.Bind(p, nil, x, x, x)
	})
}

// refFloorDiv is numpy's floor_divide of floats in F's arithmetic, from
// math.Mod's exact remainder.
func refFloorDiv[F float32 | float64](a, b F) F {
	if b == 0 {
		return F(math.Floor(float64(a / b)))
	}
	r := F(math.Mod(float64(a), float64(b)))
	q := (a - r) / b
	if r != 0 && (r < 0) != (b < 0) {
		q--
	}
	if q == 0 {
		return F(math.Floor(float64(a / b)))
	}
	fl := F(math.Floor(float64(q)))
	if q-fl > 0.5 {
		fl++
	}
	return fl
}
