package transforms_test

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// The Vmap sweep checks every registry op, on every sample, against the
// loop oracle: for a choice of batch dimension per operand (NoAxis, 0,
// the last, a middle one; at most vmapMaxCombos per sample, always all 0
// and, with two or more operands, one with an unmapped operand), batch
// sizes 3 and 1 and out axes 0, -1 and a middle one, the batched operands
// are the sample's operands stacked with their lane variants
// (optest.LaneVariant) along the chosen axes, and
//
//	Vmap(op.F, InAxes(axes), OutAxes(out))(batched)
//
// must equal op.F applied lane by lane and stacked along out: exactly
// for integer and bool results and data-movement ops, within 1e-12
// relative for f64 and 1e-5 for f32 (optest.VmapTol). Some mapped axes
// are given negative, half the cases pass strided views instead of
// contiguous operands, and some run with ChunkSize(2). Public ops the
// registry does not list yet are swept too (vmapExtraOps). TestMain runs
// it with the loop fallback disabled, so every primitive an op binds
// needs a real batching rule.

// vmapMaxCombos caps the batch-dimension choices per sample.
const vmapMaxCombos = 12

// vmapSkip excludes the cases of op (a registry name) — of one sample,
// or those for which when reports true — from the Vmap sweeps. A reason
// starting with "BUG:" is a wrong or missing batching rule to fix.
type vmapSkip struct {
	op, sample string // sample "" for every sample
	when       func(c *vmapCase) bool
	why        string
}

// vmapExclusions lists the ops the Vmap sweeps cannot check. Every
// registry op is expected to vectorize, so it should stay empty.
var vmapExclusions = []vmapSkip{}

// vmapRefusals gives, for ops that Vmap must legitimately refuse for
// some batch dimensions, the text the error must contain ("" where the
// case must succeed).
var vmapRefusals = map[string]func(axes []int) string{
	// The op writes its second operand in place into a clone of its
	// first: with the first unmapped the destination is not batched.
	"peel.AddInPlace/clone":            refuseUnbatchedDst,
	"peel.CopyInto/narrow":             refuseUnbatchedDst,
	"peel.SubInPlace+DivInPlace/clone": refuseUnbatchedDst,
	"peel.IndexPutInPlace/clone":       refuseUnbatchedDstAny,
	"peel.MaskedFillInPlace/clone":     refuseUnbatchedDstAny,
}

// refuseUnbatchedDstAny is refuseUnbatchedDst for an op that writes
// values computed from all its other operands (indices and masks
// included) into a copy of operand 0.
func refuseUnbatchedDstAny(axes []int) string {
	for _, a := range axes[1:] {
		if axes[0] == optest.NoBatch && a != optest.NoBatch {
			return "not batched at this level"
		}
	}
	return ""
}

// refuseUnbatchedDst is the refusal of an op that writes operand 1 in
// place into a copy of operand 0: a batched value cannot be written into
// an unbatched destination.
func refuseUnbatchedDst(axes []int) string {
	if axes[0] == optest.NoBatch && axes[1] != optest.NoBatch {
		return "not batched at this level"
	}
	return ""
}

func vmapSkipped(c *vmapCase) string {
	for _, s := range vmapExclusions {
		if s.op == c.op.Name && (s.sample == "" || s.sample == c.sample.Name) && (s.when == nil || s.when(c)) {
			return s.why
		}
	}
	return ""
}

// vmapCase is one check of an op under Vmap.
type vmapCase struct {
	op     optest.Op
	sample optest.Sample
	axes   []int // batch dimension per operand, optest.NoBatch if unmapped
	spec   []any // what InAxes is given: axes, some negative, NoAxis
	size   int
	out    int
	// strided builds the mapped operands as strided views (stacked
	// along 0, then moved), not contiguous arrays.
	strided bool
	chunk   int // ChunkSize, or 0
}

func (c *vmapCase) String() string {
	view := ""
	if c.strided {
		view = " (operands are strided views)"
	}
	if c.chunk > 0 {
		view += fmt.Sprintf(" ChunkSize(%d)", c.chunk)
	}
	return fmt.Sprintf("%s/%s (%s): InAxes(%v) OutAxes(%d) size %d%s", c.op.Name, c.sample.Name, optest.Describe(c.sample.Args), c.spec, c.out, c.size, view)
}

// vmapCatch runs f, turning any panic into an error (with the stack for
// a panic that is not a *peel.Error: that is a bug itself).
func vmapCatch(f func()) (err error) {
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

// vmapSpec gives InAxes for axes: every k-th mapped axis (by parity of
// salt+k) negative.
func vmapSpec(axes, ranks []int, salt int) []any {
	spec := make([]any, len(axes))
	for k, a := range axes {
		switch {
		case a == optest.NoBatch:
			spec[k] = transforms.NoAxis
		case (salt+k)%2 == 1:
			spec[k] = a - (ranks[k] + 1)
		default:
			spec[k] = a
		}
	}
	return spec
}

// batchArgs stacks the lane variants of args along axes (strided: along 0,
// then moved to axes as a strided view); lanes[i] are lane i's operands.
func batchArgs(args []*T, axes []int, size int, strided bool) (batched []*T, lanes [][]*T) {
	batched = make([]*T, len(args))
	lanes = make([][]*T, size)
	for i := range lanes {
		lanes[i] = make([]*T, len(args))
	}
	for k, x := range args {
		a := axes[k]
		if strided && a != optest.NoBatch {
			a = 0
		}
		b, ls := optest.Batch(x, size, a)
		if a != axes[k] {
			b = peel.MoveAxis(b, 0, axes[k])
		}
		batched[k] = b
		for i := range ls {
			lanes[i][k] = ls[i]
		}
	}
	return batched, lanes
}

// run checks the case and returns "" or what went wrong.
func (c *vmapCase) run() string {
	batched, lanes := batchArgs(c.sample.Args, c.axes, c.size, c.strided)
	var want *T
	if err := vmapCatch(func() { want = optest.LoopOracle(c.op.F, lanes, c.out) }); err != nil {
		return fmt.Sprintf("loop oracle: %v", err)
	}
	var got *T
	err := vmapCatch(func() {
		opts := []transforms.VmapOption{transforms.InAxes(c.spec), transforms.OutAxes(c.out)}
		if c.chunk > 0 {
			opts = append(opts, transforms.ChunkSize(c.chunk))
		}
		got = transforms.Vmap(func(xs []*T) *T { return c.op.F(xs) }, opts...)(batched)
	})
	if refusal := vmapRefusals[c.op.Name]; refusal != nil {
		if sub := refusal(c.axes); sub != "" {
			if err == nil || !strings.Contains(err.Error(), sub) {
				return fmt.Sprintf("vmap must refuse with %q, got error %v", sub, err)
			}
			return ""
		}
	}
	if err != nil {
		return fmt.Sprintf("vmap: %v", err)
	}
	if msg := optest.Compare(optest.ToHost(got), optest.ToHost(want), optest.VmapTol(c.op.Name, want.DType())); msg != "" {
		return "differs from the loop: " + msg
	}
	return ""
}

func ranksOf(args []*T) []int {
	r := make([]int, len(args))
	for i, a := range args {
		r[i] = a.Rank()
	}
	return r
}

// vmapCases returns the cases of one sample.
func vmapCases(op optest.Op, s optest.Sample) ([]*vmapCase, error) {
	var y *T
	if err := vmapCatch(func() { y = op.F(s.Args) }); err != nil {
		return nil, err
	}
	ranks := ranksOf(s.Args)
	var cases []*vmapCase
	for ci, axes := range optest.AxisCombos(ranks, vmapMaxCombos, op.Name+"|"+s.Name) {
		outs := []int{0, -1, (y.Rank() + 1) / 2}
		c := &vmapCase{op: op, sample: s, axes: axes, spec: vmapSpec(axes, ranks, ci), size: 3, out: outs[ci%3]}
		c.strided = ci%2 == 1
		if ci%5 == 4 {
			c.chunk = 2
		}
		c1 := *c
		c1.size = 1
		c1.out = outs[(ci+1)%3]
		cases = append(cases, c, &c1)
	}
	return cases, nil
}

// TestVmapRegistrySweep is the sweep described at the top of the file.
// Excluded cases are not checked, except those excluded as "BUG:", which
// run anyway: if they all pass, the exclusion is stale and the test fails.
func TestVmapRegistrySweep(t *testing.T) {
	ops := append(optest.All(), vmapExtraOps()...)
	names := map[string]bool{}
	total := 0
	for _, op := range ops {
		names[op.Name] = true
		t.Run(op.Name, func(t *testing.T) {
			swept, fails := 0, 0
			skipped := map[string]bool{} // reason → some case still fails
			for _, s := range op.Samples() {
				cases, err := vmapCases(op, s)
				if err != nil {
					t.Errorf("%s/%s: eval: %v", op.Name, s.Name, err)
					continue
				}
				for _, c := range cases {
					if why := vmapSkipped(c); why != "" {
						skipped[why] = skipped[why] || !strings.HasPrefix(why, "BUG:") || c.run() != ""
						continue
					}
					swept++
					if msg := c.run(); msg != "" {
						fails++
						if fails <= 4 {
							t.Errorf("%v: %s", c, msg)
						}
					}
				}
			}
			if fails > 4 {
				t.Errorf("%s: %d more failing cases", op.Name, fails-4)
			}
			for why, failing := range skipped {
				if failing {
					t.Logf("excluded cases: %s", why)
				} else {
					t.Errorf("every case excluded as %q passes now: remove the exclusion", why)
				}
			}
			if swept == 0 && len(skipped) == 0 {
				t.Errorf("%s is never swept: no sample gives a case", op.Name)
			}
			if swept == 0 && len(skipped) > 0 {
				t.Logf("%s: every case is excluded", op.Name)
			}
			total += swept
		})
	}
	for _, s := range vmapExclusions {
		if !names[s.op] {
			t.Errorf("exclusion for %q, which is not a registry op: remove it", s.op)
		}
		if s.why == "" {
			t.Errorf("exclusion for %q gives no reason", s.op)
		}
	}
	t.Logf("%d ops, %d cases", len(ops), total)
}

// TestVmapSweepCoverage fails when a registry op has no case at all that
// the sweep would run — it is neither swept nor excluded with a reason.
func TestVmapSweepCoverage(t *testing.T) {
	for _, op := range append(optest.All(), vmapExtraOps()...) {
		n, excluded := 0, 0
		for _, s := range op.Samples() {
			cases, err := vmapCases(op, s)
			if err != nil {
				continue
			}
			for _, c := range cases {
				if vmapSkipped(c) != "" {
					excluded++
				} else {
					n++
				}
			}
		}
		switch {
		case n == 0 && excluded == 0:
			t.Errorf("%s is never swept by Vmap", op.Name)
		case n == 0:
			t.Logf("%s: every Vmap case excluded", op.Name)
		}
	}
}

// rapid: random elementwise and reduction programs under Vmap.

type vmapRapidOp struct {
	name string
	f1   func(*T) *T
	f2   func(a, b *T) *T
}

var vmapRapidUnary = []vmapRapidOp{
	{name: "exp", f1: peel.Exp}, {name: "sin", f1: peel.Sin}, {name: "tanh", f1: peel.Tanh},
	{name: "neg", f1: peel.Neg}, {name: "abs", f1: peel.Abs}, {name: "square", f1: peel.Square},
	{name: "sigmoid", f1: peel.Sigmoid}, {name: "relu", f1: peel.ReLU}, {name: "sqrt∘abs", f1: func(x *T) *T { return peel.Sqrt(peel.Abs(x)) }},
	{name: "floor", f1: peel.Floor}, {name: "sign", f1: peel.Sign}, {name: "gelu", f1: peel.GELU},
}

var vmapRapidBinary = []vmapRapidOp{
	{name: "add", f2: func(a, b *T) *T { return peel.Add(a, b) }},
	{name: "sub", f2: func(a, b *T) *T { return peel.Sub(a, b) }},
	{name: "mul", f2: func(a, b *T) *T { return peel.Mul(a, b) }},
	{name: "div", f2: func(a, b *T) *T { return peel.Div(a, peel.Add(peel.Abs(b), 0.5)) }},
	{name: "maximum", f2: func(a, b *T) *T { return peel.Maximum(a, b) }},
	{name: "minimum", f2: func(a, b *T) *T { return peel.Minimum(a, b) }},
	{name: "atan2", f2: func(a, b *T) *T { return peel.Atan2(a, b) }},
	{name: "less", f2: func(a, b *T) *T { return peel.Less(a, b) }},
	{name: "where(a>b,a,b²)", f2: func(a, b *T) *T { return peel.Where(peel.Greater(a, b), a, peel.Square(b)) }},
}

var vmapRapidReductions = []struct {
	name string
	f    func(x *T, axes ...int) *T
}{
	{"sum", peel.Sum}, {"prod", peel.Prod}, {"max", peel.Max}, {"min", peel.Min},
	{"mean", peel.Mean}, {"var", peel.Var}, {"logsumexp", peel.LogSumExp},
}

// vmapDrawAxis draws a batch dimension for a value of logical rank r:
// -(r+1)..r, or with none allowed also unmapped.
func vmapDrawAxis(rt *rapid.T, name string, r int, none bool) (phys int, spec any) {
	lo := -(r + 1)
	if none {
		lo--
	}
	a := rapid.IntRange(lo, r).Draw(rt, name)
	switch {
	case a < -(r + 1):
		return optest.NoBatch, transforms.NoAxis
	case a < 0:
		return a + r + 1, a
	}
	return a, a
}

// vmapInsert returns shape with n inserted at axis (NoBatch: shape).
func vmapInsert(shape []int, axis, n int) []int {
	if axis == optest.NoBatch {
		return append([]int{}, shape...)
	}
	out := append([]int{}, shape[:axis]...)
	out = append(out, n)
	return append(out, shape[axis:]...)
}

func vmapLane(x *T, axis, i int) *T {
	if axis == optest.NoBatch {
		return x
	}
	return peel.Select(x, axis, i)
}

func TestVmapRapidElementwiseAndReductions(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(1, 4).Draw(rt, "size")
		rank := rapid.IntRange(1, 3).Draw(rt, "rank")
		shape := rapid.SliceOfN(rapid.IntRange(1, 4), rank, rank).Draw(rt, "shape")
		g := optest.NewGen(rapid.Uint64().Draw(rt, "seed"))
		dt := rapid.SampledFrom([]peel.DType{peel.Float64, peel.Float32}).Draw(rt, "dtype")

		// The elementwise part: unary of x, or binary of x and y, whose
		// shape broadcasts to x's.
		ax, sx := vmapDrawAxis(rt, "x axis", rank, true)
		x := g.Tensor(dt, -2, 2, vmapInsert(shape, ax, size)...)
		args, axes, spec := []*T{x}, []int{ax}, []any{sx}
		var elem func(xs []*T) *T
		desc := ""
		if rapid.Bool().Draw(rt, "binary") {
			op := rapid.SampledFrom(vmapRapidBinary).Draw(rt, "binary op")
			drop := rapid.IntRange(0, rank).Draw(rt, "y drops")
			ys := append([]int{}, shape[drop:]...)
			for i := range ys {
				if rapid.Bool().Draw(rt, fmt.Sprintf("y dim %d is 1", i)) {
					ys[i] = 1
				}
			}
			ay, sy := vmapDrawAxis(rt, "y axis", len(ys), ax != optest.NoBatch)
			args = append(args, g.Tensor(dt, -2, 2, vmapInsert(ys, ay, size)...))
			axes, spec = append(axes, ay), append(spec, sy)
			elem = func(xs []*T) *T { return op.f2(xs[0], xs[1]) }
			desc = fmt.Sprintf("%s(x, y%v)", op.name, ys)
		} else {
			if ax == optest.NoBatch { // something must be mapped
				ax, spec[0] = 0, 0
				args[0] = g.Tensor(dt, -2, 2, vmapInsert(shape, 0, size)...)
				axes[0] = 0
			}
			op := rapid.SampledFrom(vmapRapidUnary).Draw(rt, "unary op")
			elem = func(xs []*T) *T { return op.f1(xs[0]) }
			desc = op.name + "(x)"
		}

		// Then maybe a reduction over random axes of the result, or an
		// op along one axis.
		f := elem
		if kind := rapid.IntRange(0, 2).Draw(rt, "reduction"); kind > 0 {
			r := rank
			switch kind {
			case 1: // a full reduction with a random set of axes
				red := rapid.SampledFrom(vmapRapidReductions).Draw(rt, "reduction op")
				keep := rapid.Bool().Draw(rt, "keepDims")
				var raxes []int
				if !rapid.Bool().Draw(rt, "all axes") {
					perm := rapid.Permutation(seqInts(r)).Draw(rt, "axes order")
					n := rapid.IntRange(0, r).Draw(rt, "number of axes")
					for _, a := range perm[:n] {
						if rapid.Bool().Draw(rt, fmt.Sprintf("axis %d negative", a)) {
							a -= r
						}
						raxes = append(raxes, a)
					}
					if raxes == nil {
						raxes = []int{}
					}
				}
				f = func(xs []*T) *T {
					if keep {
						return peel.Keep(red.f, elem(xs), raxes...)
					}
					return red.f(elem(xs), raxes...)
				}
				desc = fmt.Sprintf("%s(%s, axes=%v, keep=%v)", red.name, desc, raxes, keep)
			default: // an axis op
				a := rapid.IntRange(-r, r-1).Draw(rt, "axis")
				names := []string{"argmax", "cumsum", "softmax"}
				which := rapid.IntRange(0, 2).Draw(rt, "axis op")
				keep := rapid.Bool().Draw(rt, "keepDims")
				f = func(xs []*T) *T {
					y := elem(xs)
					if y.DType() == peel.Bool {
						y = peel.AsType(y, peel.Float64)
					}
					switch which {
					case 0:
						if keep {
							return peel.Keep(peel.ArgMax, y, a)
						}
						return peel.ArgMax(y, a)
					case 1:
						return peel.Cumsum(y, a)
					}
					return peel.Softmax(y, a)
				}
				desc = fmt.Sprintf("%s(%s, axis=%d)", names[which], desc, a)
			}
		}

		lane := func(i int) []*T {
			l := make([]*T, len(args))
			for k := range args {
				l[k] = vmapLane(args[k], axes[k], i)
			}
			return l
		}
		outRank := f(lane(0)).Rank()
		out := rapid.IntRange(-(outRank+1), outRank).Draw(rt, "out axis")
		lanes := make([][]*T, size)
		for i := range lanes {
			lanes[i] = lane(i)
		}
		want := optest.LoopOracle(f, lanes, out)
		var got *T
		if err := vmapCatch(func() {
			got = transforms.Vmap(func(xs []*T) *T { return f(xs) }, transforms.InAxes(spec), transforms.OutAxes(out))(args)
		}); err != nil {
			rt.Fatalf("%s, in axes %v, out %d, operands %s: %v", desc, spec, out, optest.Describe(args), err)
		}
		if msg := optest.Compare(optest.ToHost(got), optest.ToHost(want), optest.VmapTol("", want.DType())); msg != "" {
			rt.Fatalf("%s, in axes %v, out %d, operands %s: %s", desc, spec, out, optest.Describe(args), msg)
		}
	})
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// registrySample returns the named sample of the named registry op.
func registrySample(t *testing.T, op, sample string) (optest.Op, optest.Sample) {
	t.Helper()
	for _, o := range append(optest.All(), vmapExtraOps()...) {
		if o.Name != op {
			continue
		}
		for _, s := range o.Samples() {
			if s.Name == sample {
				return o, s
			}
		}
		t.Fatalf("registry op %s has no sample %s", op, sample)
	}
	t.Fatalf("no registry op %s", op)
	return optest.Op{}, optest.Sample{}
}

// vmapComposeSamples are the registry ops and samples the nested and
// autodiff compositions are checked on.
var vmapComposeSamples = [][2]string{
	{"peel.MatMul", "f64[2 3]@[3 4]"},
	{"peel.MatMul", "f64[3]@[3 2]"},
	{"peel.MatMul", "f64[2 1 3 4]@[5 4 2]"},
	{"peel.Softmax/axis=-1", "f64[2 3 4]"},
	{"peel.Softmax/axis=0", "f64[3 1]"},
	{"peel.Take/axis=1", "f64"},
	{"peel.Take/axis=1", "f64/scalar-index"},
	{"peel.TakeAlongAxis/axis=0", "f64"},
	{"peel.IndexAdd/axis=0", "f64"},
	{"peel.Where", "f64"},
	{"peel.Concat/axis=1", "f64"},
	{"peel.LogSumExp/axes=[0 2],keep=false", "f64[2 3 4]"},
	{"peel.Cumsum/axis=-1", "f64[2 3 4]"},
	{"peel.Pad/[1,2],[-1,0]", "f64[2 3]"},
	{"peel.Slice/1,-4,5,2", "f64[2 5 3]"},
	{"peel.Einsum/bij,bjk->bik", "f64"},
}

// vmapBroadSamples returns every sample of every registry op (and of
// vmapExtraOps) that Vmap must never refuse, for the broad passes of the
// composition tests; with differentiable, only the float64 samples with a
// float result of the Differentiable ops.
func vmapBroadSamples(differentiable bool) (ops []optest.Op, samples []optest.Sample) {
	for _, op := range append(optest.All(), vmapExtraOps()...) {
		if vmapRefusals[op.Name] != nil || (differentiable && !op.Differentiable) {
			continue
		}
		for _, s := range op.Samples() {
			if differentiable {
				if !strings.HasPrefix(s.Name, "f64") || !op.F(s.Args).DType().IsFloat() {
					continue
				}
			}
			ops, samples = append(ops, op), append(samples, s)
		}
	}
	return ops, samples
}

// TestVmapNested checks Vmap(Vmap(f)) with different in axes at the two
// levels and out axes other than 0 against nested loops: on
// vmapComposeSamples with up to 12 axis choices, and on every sample of
// the registry with up to 4.
func TestVmapNested(t *testing.T) {
	for _, name := range vmapComposeSamples {
		op, s := registrySample(t, name[0], name[1])
		checkNested(t, op, s, 4, 3)
	}
	ops, samples := vmapBroadSamples(false)
	for i := range ops {
		checkNested(t, ops[i], samples[i], 2, 2)
	}
}

// checkNested checks one sample under Vmap(Vmap(f)) for up to inLimit
// inner and outLimit outer axis choices.
func checkNested(t *testing.T, op optest.Op, s optest.Sample, inLimit, outLimit int) {
	t.Helper()
	const n1, n2 = 2, 3 // outer and inner batch sizes
	ranks := ranksOf(s.Args)
	ro := op.F(s.Args).Rank()
	for ci, inner := range optest.AxisCombos(ranks, inLimit, "inner|"+op.Name+"|"+s.Name) {
		mid := make([]int, len(ranks))
		for k, r := range ranks {
			mid[k] = r
			if inner[k] != optest.NoBatch {
				mid[k]++
			}
		}
		for cj, outer := range optest.AxisCombos(mid, outLimit, fmt.Sprint("outer|", op.Name, "|", s.Name, ci)) {
			o2 := []int{-1, min(1, ro)}[(ci+cj)%2]
			o1 := []int{1, -1, ro + 1}[cj%3]
			// Operand k of lane (i, j) is variant idx(k, i, j).
			phys := make([]*T, len(s.Args))
			laneArgs := func(i, j int) []*T {
				a := make([]*T, len(s.Args))
				for k, x := range s.Args {
					v := 0
					if outer[k] != optest.NoBatch {
						v += i * n2
					}
					if inner[k] != optest.NoBatch {
						v += j
					}
					a[k] = optest.LaneVariant(x, v)
				}
				return a
			}
			for k := range s.Args {
				mids := make([]*T, n1)
				for i := range mids {
					if inner[k] == optest.NoBatch {
						mids[i] = laneArgs(i, 0)[k]
						continue
					}
					js := make([]*T, n2)
					for j := range js {
						js[j] = laneArgs(i, j)[k]
					}
					mids[i] = peel.Stack(js, inner[k])
				}
				phys[k] = mids[0]
				if outer[k] != optest.NoBatch {
					phys[k] = peel.Stack(mids, outer[k])
				}
			}
			outs := make([]*T, n1)
			for i := range outs {
				ls := make([][]*T, n2)
				for j := range ls {
					ls[j] = laneArgs(i, j)
				}
				outs[i] = optest.LoopOracle(op.F, ls, o2)
			}
			want := peel.Stack(outs, o1)
			innerSpec, outerSpec := vmapSpec(inner, ranks, ci), vmapSpec(outer, mid, cj+1)
			var got *T
			err := vmapCatch(func() {
				f := transforms.Vmap(func(xs []*T) *T { return op.F(xs) }, transforms.InAxes(innerSpec), transforms.OutAxes(o2))
				got = transforms.Vmap(f, transforms.InAxes(outerSpec), transforms.OutAxes(o1))(phys)
			})
			what := fmt.Sprintf("%s/%s: Vmap(Vmap(f, InAxes(%v), OutAxes(%d)), InAxes(%v), OutAxes(%d))", op.Name, s.Name, innerSpec, o2, outerSpec, o1)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			if msg := optest.Compare(optest.ToHost(got), optest.ToHost(want), optest.VmapTol(op.Name, want.DType())); msg != "" {
				t.Errorf("%s: differs from nested loops: %s", what, msg)
			}
		}
	}
}

// floatPositions returns the positions of args's float operands.
func floatPositions(args []*T) []int {
	var p []int
	for i, a := range args {
		if a.DType().IsFloat() {
			p = append(p, i)
		}
	}
	return p
}

func pick(xs []*T, pos []int) []*T {
	out := make([]*T, len(pos))
	for n, p := range pos {
		out[n] = xs[p]
	}
	return out
}

func merge(xs []*T, pos []int, fs []*T) []*T {
	a := append([]*T{}, xs...)
	for n, p := range pos {
		a[p] = fs[n]
	}
	return a
}

// TestVmapAutodiffCompositions checks Vmap(Grad(Σ op)) against a loop of
// Grad and Grad(Σ Vmap(op)) against Grad of the loop, differentiating
// the float operands (integer operands are batched too, not
// differentiated): on vmapComposeSamples with up to 4 axis choices, and
// on every float64 sample of the registry's differentiable ops with 2.
func TestVmapAutodiffCompositions(t *testing.T) {
	for _, name := range vmapComposeSamples {
		op, s := registrySample(t, name[0], name[1])
		checkVmapGrad(t, op, s, 4)
	}
	ops, samples := vmapBroadSamples(true)
	for i := range ops {
		checkVmapGrad(t, ops[i], samples[i], 2)
	}
}

// checkVmapGrad checks one sample under Vmap(Grad) and Grad(Vmap) for up
// to limit axis choices.
func checkVmapGrad(t *testing.T, op optest.Op, s optest.Sample, limit int) {
	t.Helper()
	const size = 3
	pos := floatPositions(s.Args)
	ranks := ranksOf(s.Args)
	sumOf := func(a []*T) *T { return peel.Sum(op.F(a)) }
	for ci, axes := range optest.AxisCombos(ranks, limit, "grad|"+op.Name+"|"+s.Name) {
		spec := vmapSpec(axes, ranks, ci)
		batched, lanes := batchArgs(s.Args, axes, size, ci%2 == 0)
		what := fmt.Sprintf("%s/%s InAxes(%v)", op.Name, s.Name, spec)

		// Vmap(Grad(Σ op)) vs a loop of Grad.
		var got []*T
		err := vmapCatch(func() {
			got = transforms.Vmap(func(xs []*T) []*T {
				return transforms.Grad(func(fs []*T) *T { return sumOf(merge(xs, pos, fs)) })(pick(xs, pos))
			}, transforms.InAxes(spec))(batched)
		})
		if err != nil {
			t.Errorf("%s: Vmap(Grad): %v", what, err)
		} else {
			for n := range pos {
				per := make([]*T, size)
				for i := range per {
					per[i] = transforms.Grad(func(fs []*T) *T { return sumOf(merge(lanes[i], pos, fs)) })(pick(lanes[i], pos))[n]
				}
				want := peel.Stack(per, 0)
				if msg := optest.Compare(optest.ToHost(got[n]), optest.ToHost(want), 1e-12); msg != "" {
					t.Errorf("%s: Vmap(Grad) operand %d differs from the loop of Grad: %s", what, pos[n], msg)
				}
			}
		}

		// Grad(Σ Vmap(op)) vs Grad of the loop.
		var gotG []*T
		err = vmapCatch(func() {
			gotG = transforms.Grad(func(fs []*T) *T {
				v := transforms.Vmap(func(xs []*T) *T { return op.F(xs) }, transforms.InAxes(spec))(merge(batched, pos, fs))
				return peel.Sum(v)
			})(pick(batched, pos))
		})
		if err != nil {
			t.Errorf("%s: Grad(Vmap): %v", what, err)
			continue
		}
		wantG := transforms.Grad(func(fs []*T) *T {
			a := merge(batched, pos, fs)
			var total *T
			for i := 0; i < size; i++ {
				l := make([]*T, len(a))
				for k := range a {
					l[k] = vmapLane(a[k], axes[k], i)
				}
				if total == nil {
					total = sumOf(l)
				} else {
					total = peel.Add(total, sumOf(l))
				}
			}
			return total
		})(pick(batched, pos))
		for n := range pos {
			if msg := optest.Compare(optest.ToHost(gotG[n]), optest.ToHost(wantG[n]), 1e-12); msg != "" {
				t.Errorf("%s: Grad(Vmap) operand %d differs from Grad of the loop: %s", what, pos[n], msg)
			}
		}
	}
}

// vmapRuleless are the registered primitives that need no batching rule.
var vmapRuleless = map[string]string{
	"iota": "it takes no operands, so vmap never sees it with a batched one",
	// The effects of a data-parallel step: ddp.ValueAndGrad documents
	// that it is not vmappable (a batched bucket would need its wait to
	// know the batch, and a lane-wise all-reduce is one all-reduce of the
	// batch anyway).
	"allreduce_start": "dist/ddp's step is not vmappable",
	"allreduce_wait":  "dist/ddp's step is not vmappable",
	// ZeRO-1's collectives act on a member's flattened parameters and
	// gradients, after differentiation.
	"ddp_reduce_scatter": "dist/ddp's sharded optimizer step is not vmappable",
	"ddp_all_gather":     "dist/ddp's sharded optimizer step is not vmappable",
	// ZeRO-3's gather acts on a member's shards: a Vmap inside the loss
	// sees the gathered parts unbatched; batched shards (an ensemble of
	// sharded models) are refused.
	"fsdp_gather":       "ddp.Gather of batched shards is not vmappable",
	"fsdp_all_gather":   "ddp.Gather of batched shards is not vmappable",
	"fsdp_mean_scatter": "ddp.Gather of batched shards is not vmappable",
}

// TestVmapEveryPrimitiveHasRule lists the registered primitives that
// Vmap would reject: neither a mutation (batched natively), nor a
// composite (decomposed), nor unevaluable (NoEval: it only exists to be
// transposed), nor given a batching rule (a named one for the
// collectives).
func TestVmapEveryPrimitiveHasRule(t *testing.T) {
	for _, p := range interp.Prims() {
		if p.Kind == interp.Mutation || p.Impl != nil || p.NoEval != "" || batching.RuleFor(p) != nil || batching.NamedRuleFor(p) != nil {
			continue
		}
		if _, ok := vmapRuleless[p.Name]; ok {
			continue
		}
		t.Errorf("primitive %s has no batching rule", p.Name)
	}
}

// vmapKnownBugs are checks of this file that fail because of a bug
// outside it (name → "BUG: ..."). A listed check that fails is skipped
// with its reason; one that passes fails, so the entry gets removed.
var vmapKnownBugs = map[string]string{}

// vmapCheck runs the named check, applying vmapKnownBugs.
func vmapCheck(t *testing.T, name string, check func() string) {
	t.Helper()
	var msg string
	if err := vmapCatch(func() { msg = check() }); err != nil {
		msg = err.Error()
	}
	bug, listed := vmapKnownBugs[name]
	switch {
	case msg != "" && listed:
		t.Logf("%s: known bug (%s): %s", name, bug, msg)
	case msg != "":
		t.Errorf("%s: %s", name, msg)
	case listed:
		t.Errorf("%s passes now: remove its entry %q from vmapKnownBugs", name, bug)
	}
}

// TestVmapCustomRules checks that custom derivative rules survive Vmap in
// either order of composition with Grad.
func TestVmapCustomRules(t *testing.T) {
	// A rule that clips the cotangent, which f's derivative (3) does not.
	clipped := transforms.CustomVJP(
		func(x *T) *T { return peel.Mul(x, 3) },
		func(x *T) (*T, any) { return peel.Mul(x, 3), nil },
		func(_ any, ct *T) *T { return peel.Clip(ct, -1, 1) },
	)
	// A JVP rule that returns 2·t instead of cos(x)·t.
	doubled := transforms.CustomJVP(
		func(x *T) *T { return peel.Sin(x) },
		func(p, tg *T) (*T, *T) { return peel.Sin(p), peel.Mul(tg, 2) },
	)
	x := seq(6, 2, 3)
	ones := func(v float64) []float64 {
		d := make([]float64, 6)
		for i := range d {
			d[i] = v
		}
		return d
	}
	cmp := func(got *T, want []float64) string {
		return optest.Compare(optest.ToHost(got), optest.Host{Shape: []int{2, 3}, DType: peel.Float64, Data: want}, 1e-12)
	}
	lossOf := func(f func(*T) *T) func(*T) *T {
		return func(v *T) *T { return peel.Sum(peel.Mul(f(v), 5)) }
	}
	vjpOne := func(r *T) *T { return clipped(r) }
	jvpOne := func(r *T) *T { return doubled(r) }
	vmapCheck(t, "Vmap(CustomVJP)", func() string {
		return cmp(transforms.Vmap(vjpOne, transforms.InAxes(1), transforms.OutAxes(1))(x), optest.ToHost(peel.Mul(x, 3)).Data)
	})
	vmapCheck(t, "Vmap(Grad(CustomVJP))", func() string { return cmp(transforms.Vmap(transforms.Grad(lossOf(vjpOne)))(x), ones(1)) })
	vmapCheck(t, "Grad(Vmap(CustomVJP))", func() string {
		return cmp(transforms.Grad(lossOf(transforms.Vmap(vjpOne, transforms.InAxes(-1), transforms.OutAxes(-1))))(x), ones(1))
	})
	vmapCheck(t, "Vmap(Grad(CustomJVP))", func() string { return cmp(transforms.Vmap(transforms.Grad(lossOf(jvpOne)))(x), ones(10)) })
	vmapCheck(t, "Grad(Vmap(CustomJVP))", func() string {
		return cmp(transforms.Grad(lossOf(transforms.Vmap(jvpOne)))(x), ones(10))
	})
}

// vmapExtraOps are public ops of package peel that the registry does not
// list yet, swept by TestVmapRegistrySweep with the registry's ops (they
// have no Ref: the sweep only compares with the loop). Operands that are
// index vectors are rotated per lane (optest.LaneVariant), so batched
// starts and keys differ from lane to lane.
func vmapExtraOps() []optest.Op {
	g := optest.NewGen(21)
	f64s := func(lo, hi float64, shape ...int) *T { return g.Tensor(peel.Float64, lo, hi, shape...) }
	i64s := func(v []int64, shape ...int) *T { return peel.FromInt64s(v, shape...) }
	samples := func(ss ...optest.Sample) func() []optest.Sample { return func() []optest.Sample { return ss } }
	s := func(name string, args ...*T) optest.Sample { return optest.Sample{Name: name, Args: args} }
	unary := func(name string, f func(*T) *T) optest.Op {
		return optest.Op{Name: name, F: func(a []*T) *T { return f(a[0]) },
			Samples: samples(s("f64[2 3]", f64s(-3, 3, 2, 3)), s("f32[4]", g.Tensor(peel.Float32, -3, 3, 4)), s("f64[]", f64s(-3, 3, []int{}...)))}
	}
	divisor := func(d peel.DType, shape ...int) *T {
		y := g.Tensor(d, -5, 5, shape...)
		return peel.Where(peel.Equal(y, 0), peel.AsType(peel.Scalar(int64(3)), d), y)
	}
	binary := func(name string, f func(a, b any) *T) optest.Op {
		return optest.Op{Name: name, F: func(a []*T) *T { return f(a[0], a[1]) },
			Samples: samples(s("f64[2 3][3]", f64s(-7, 7, 2, 3), divisor(peel.Float64, 3)),
				s("i64[2 3][2 3]", g.Tensor(peel.Int64, -7, 7, 2, 3), divisor(peel.Int64, 2, 3)))}
	}
	key := peel.Key(42)
	return []optest.Op{
		unary("peel.Reciprocal", peel.Reciprocal),
		unary("peel.GELUTanh", peel.GELUTanh),
		unary("peel.LogSigmoid", peel.LogSigmoid),
		binary("peel.FloorDiv", peel.FloorDiv),
		binary("peel.Mod", peel.Mod),
		{Name: "peel.Dot", F: func(a []*T) *T { return peel.Dot(a[0], a[1]) },
			Samples: samples(s("f64[4]·[4]", f64s(-3, 3, 4), f64s(-3, 3, 4)), s("f64[2 3]·[3 2]", f64s(-3, 3, 2, 3), f64s(-3, 3, 3, 2)))},
		{Name: "peel.ScatterAdd/axis=0", F: func(a []*T) *T { return peel.ScatterAdd(a[0], a[1], a[2], 0) },
			Samples: samples(s("f64", f64s(-3, 3, 4, 2), i64s([]int64{1, -1, 3, 1, 0, 0}, 3, 2), f64s(-3, 3, 3, 2)),
				s("i64/broadcast-src", g.Tensor(peel.Int64, -3, 3, 4, 2), i64s([]int64{2, 2, 0, 1}, 2, 2), g.Tensor(peel.Int64, -3, 3, 2)))},
		{Name: "peel.IndexCopy/axis=1", F: func(a []*T) *T { return peel.IndexCopy(a[0], a[1], a[2], 1) },
			Samples: samples(s("f64", f64s(-3, 3, 2, 4), i64s([]int64{3, 0}, 2), f64s(-3, 3, 2, 2)))},
		{Name: "peel.DynamicSlice/[2,2]", F: func(a []*T) *T {
			return peel.DynamicSlice(a[0], []*T{peel.Index(a[1], 0), peel.Index(a[1], 1)}, []int{2, 2})
		}, Samples: samples(s("f64", f64s(-3, 3, 4, 5), i64s([]int64{1, 3}, 2)), s("clamped", f64s(-3, 3, 3, 3), i64s([]int64{-1, 2}, 2)))},
		{Name: "peel.DynamicUpdateSlice", F: func(a []*T) *T {
			return peel.DynamicUpdateSlice(a[0], a[1], []*T{peel.Index(a[2], 0), peel.Index(a[2], 1)})
		}, Samples: samples(s("f64", f64s(-3, 3, 4, 5), f64s(-3, 3, 2, 2), i64s([]int64{1, 3}, 2)))},
		{Name: "peel.DynamicSlice/mixed-starts", F: func(a []*T) *T {
			return peel.DynamicSlice(a[0], []*T{peel.Index(a[1], 0), peel.Index(a[2], 0)}, []int{2, 2})
		}, Samples: samples(s("f64", f64s(-3, 3, 4, 5), i64s([]int64{1, 3}, 2), i64s([]int64{3, 0, 2}, 3)))},
		{Name: "peel.DynamicUpdateSlice/mixed-starts", F: func(a []*T) *T {
			return peel.DynamicUpdateSlice(a[0], a[1], []*T{peel.Index(a[2], 0), peel.Index(a[3], 0)})
		}, Samples: samples(s("f64/window", f64s(-3, 3, 4, 5), f64s(-3, 3, 2, 2), i64s([]int64{1, 3}, 2), i64s([]int64{3, 0, 2}, 3)),
			s("f64/full-rows", f64s(-3, 3, 4, 5), f64s(-3, 3, 4, 2), i64s([]int64{1, 3}, 2), i64s([]int64{3, 0, 2}, 3)),
			s("i64/covers-all", g.Tensor(peel.Int64, -3, 3, 3, 2), g.Tensor(peel.Int64, -3, 3, 3, 2), i64s([]int64{1, -1}, 2), i64s([]int64{0, 2}, 2)))},
		{Name: "prims.pad/traced-value", F: func(a []*T) *T {
			pp := prims.PadParams{Low: []int{1, -1}, High: []int{2, 0}, Interior: []int{0, 1}}
			return interp.Bind1(prims.Pad, pp, a[0], a[1])
		}, Samples: samples(s("f64", f64s(-3, 3, 2, 3), f64s(-3, 3, []int{}...)), s("bool", g.Tensor(peel.Bool, 0, 1, 2, 3), g.Tensor(peel.Bool, 0, 1, []int{}...)))},
		{Name: "peel.Split/[1,2],axis=-1", F: func(a []*T) *T { return peel.Split(a[0], []int{1, 2}, -1)[1] },
			Samples: samples(s("f64[2 3]", f64s(-3, 3, 2, 3)), s("i64[3]", g.Tensor(peel.Int64, -3, 3, 3)))},
		{Name: "peel.CopyInto/narrow", F: func(a []*T) *T {
			y := peel.Clone(a[0])
			peel.CopyInto(peel.Narrow(y, 0, 1, 2), a[1])
			return y
		}, Samples: samples(s("f64", f64s(-3, 3, 4, 3), f64s(-3, 3, 3)), s("i64←f64", g.Tensor(peel.Int64, -3, 3, 4, 3), f64s(-3, 3, 2, 3)))},
		{Name: "peel.SubInPlace+DivInPlace/clone", F: func(a []*T) *T {
			y := peel.Clone(a[0])
			peel.SubInPlace(y, a[1])
			peel.DivInPlace(peel.Select(y, -1, 0), a[1])
			return y
		}, Samples: samples(s("f64", f64s(-3, 3, 2, 3), divisor(peel.Float64, []int{}...)))},
		{Name: "peel.OnesLike", F: func(a []*T) *T { return peel.OnesLike(a[0]) }, Samples: samples(s("f64[2 3]", f64s(-3, 3, 2, 3)))},
		{Name: "peel.Uniform", F: func(a []*T) *T { return peel.Uniform(a[0], peel.Float64, 2, 3) }, Samples: samples(s("key", key))},
		{Name: "peel.Normal", F: func(a []*T) *T { return peel.Normal(a[0], peel.Float32, 5) }, Samples: samples(s("key", key))},
		{Name: "peel.Bernoulli", F: func(a []*T) *T { return peel.Bernoulli(a[0], 0.3, 4, 2) }, Samples: samples(s("key", key))},
		{Name: "peel.SplitKeysStacked", F: func(a []*T) *T { return peel.SplitKeysStacked(a[0], 3) }, Samples: samples(s("key", key))},
		{Name: "peel.FoldIn", F: func(a []*T) *T { return peel.FoldIn(a[0], 7) }, Samples: samples(s("key", key))},
	}
}

// TestVmapInPlaceThroughViews writes, inside Vmap, through chains of
// views of a batched tensor and checks that each write either reaches
// the base exactly as in a loop of eager runs or is refused with an error
// pointing to Functionalize (a view whose batched layout needed a copy):
// a write must never be lost silently.
func TestVmapInPlaceThroughViews(t *testing.T) {
	views := []struct {
		name string
		f    func(*T) *T // of a [3 2 4] lane
	}{
		{"Narrow", func(y *T) *T { return peel.Narrow(y, 2, 1, 2) }},
		{"Select", func(y *T) *T { return peel.Select(y, 1, 1) }},
		{"Index", func(y *T) *T { return peel.Index(y, 2, 0) }},
		{"Slice/step2", func(y *T) *T { return peel.Slice(y, -1, 0, 4, 2) }},
		{"Transpose", func(y *T) *T { return peel.Transpose(y) }},
		{"Permute∘Narrow", func(y *T) *T { return peel.Permute(peel.Narrow(y, 0, 1, 2), 2, 0, 1) }},
		{"MoveAxis", func(y *T) *T { return peel.MoveAxis(y, 0, -1) }},
		{"Unsqueeze∘Select", func(y *T) *T { return peel.Unsqueeze(peel.Select(y, 0, 2), 0) }},
		{"Flatten", func(y *T) *T { return peel.Flatten(y) }},
		{"Flatten(1)", func(y *T) *T { return peel.Flatten(y, 1) }},
		{"Reshape[6,4]", func(y *T) *T { return peel.Reshape(y, 6, 4) }},
		{"Reshape(Transpose)", func(y *T) *T { return peel.Reshape(peel.Transpose(y), -1) }},
		{"Narrow∘Flatten", func(y *T) *T { return peel.Narrow(peel.Flatten(y), 0, 5, 7) }},
	}
	for _, v := range views {
		for _, in := range []int{0, 1, 2, 3, -2} {
			body := func(l *T) *T {
				y := peel.Clone(l)
				// A lane-dependent source: the lane's mean, broadcast.
				peel.AddInPlace(v.f(y), peel.Add(peel.Mean(l), 100))
				return y
			}
			a := in
			if a < 0 {
				a += 4
			}
			x := seq(3*3*2*4, vmapInsert([]int{3, 2, 4}, a, 3)...)
			want := loopOracle(body, x, a, 0)
			var got *T
			err := vmapCatch(func() { got = transforms.Vmap(body, transforms.InAxes(in))(x) })
			what := fmt.Sprintf("write through %s, InAxes(%d)", v.name, in)
			switch {
			case err != nil && strings.Contains(err.Error(), "Functionalize"):
				t.Logf("%s: refused: %v", what, err)
			case err != nil:
				t.Errorf("%s: %v", what, err)
			default:
				if msg := optest.Compare(optest.ToHost(got), optest.ToHost(want), 1e-12); msg != "" {
					t.Errorf("%s: differs from the loop: %s", what, msg)
				}
			}
		}
	}
}
