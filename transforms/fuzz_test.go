package transforms_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// FuzzProgram decodes its bytes into a small program over a float64 input
// x of shape [2,3] (pgDecode): a sequence of up to 12 steps, each an
// elementwise unary (Sin, Cos, Tanh, Exp, Square, Neg) or binary (Add,
// Sub, Mul, with a same-shaped value or a scalar) op, a view (Narrow,
// Slice with a step, Transpose, Reshape, Select, Index), an in-place write
// (CopyInto, AddInPlace, MulInPlace, Fill) into a value or a view of one,
// a reduction (Sum, Mean), a MatMul, a Clone, or a constant (Full)
// created inside. The program's result is a weighted sum of the sums and
// sums of squares of every value it made, all read at the end (so views
// taken before later writes see them, and values computed before a write
// keep what they read), a scalar. The program is run eagerly first; an eager *peel.Error ends the
// case. Then (pgCheck):
//
//   - Grad and Grad(Functionalize) against central finite differences
//     (ε = 1e-6), within 1e-5·|want| + 1e-5·max(1, |f(x)|), unless f(x)
//     or a difference is not finite, |f(x)| > 1e6, or the differences at
//     ε = 1e-6 and 1e-4 disagree beyond that bound (they are then not a
//     trustworthy reference);
//   - Functionalize against eager, 1e-12 relative above magnitude 1
//     (NaN equals NaN);
//   - Vmap over 3 lanes (optest.LaneVariant) against a loop of eager
//     calls, 1e-10 relative above magnitude 1.
//
// Every panic must be a *peel.Error, no result may be a tracer, and a
// transform may refuse only where eager refuses — except Vmap refusing,
// with an error pointing to Functionalize, a write of a batched value
// into an unbatched tensor (a constant) or through a view whose batched
// layout needed a copy (documented, docs/design/vmap.md, "Mutation").
//
//	go test -run '^$' -fuzz '^FuzzProgram$' -fuzztime 30s ./transforms/
//
// Programs never write x or its views, and a write whose source shares a
// base with its destination reads a Clone of the source, so eager
// evaluation is well defined.
func FuzzProgram(f *testing.F) {
	for _, seed := range pgSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pgCheck(t, data)
	})
}

// pgSeed encodes a program: the input's seed byte, the step count, then
// each step's opcode and operand bytes (see pgDecode).
func pgSeed(x byte, steps ...[4]byte) []byte {
	out := []byte{x, byte(len(steps) - 1)}
	for _, s := range steps {
		out = append(out, s[:]...)
	}
	return out
}

// pgSeeds are programs worth starting from; v0 is x, vN the N-th step's
// value.
var pgSeeds = [][]byte{
	// v1 = Clone(x); v2 = Sin(v1); v3 = Add(v2, v1).
	pgSeed(0, [4]byte{6, 0, 0, 0}, [4]byte{0, 1, 0, 0}, [4]byte{1, 2, 2, 0}),
	// D1's shape: v1 = Clone(x); v2 = Transpose(v1); Fill(v1, s);
	// v4 = Transpose(x); CopyInto(v2, v4).
	pgSeed(1, [4]byte{6, 0, 0, 0}, [4]byte{2, 1, 2, 0}, [4]byte{3, 0, 3, 5}, [4]byte{2, 0, 2, 0}, [4]byte{3, 1, 0, 1}),
	// D5's shape: v1 = Clone(x); v2 = Narrow(v1, 1, 0, 2); MulInPlace(v1, x).
	pgSeed(2, [4]byte{6, 0, 0, 0}, [4]byte{2, 1, 0, 9}, [4]byte{3, 0, 2, 0}),
	// v1 = Clone(x); v2 = Exp(v1); v3 = MatMul(v2, v2ᵀ); AddInPlace(v3, s);
	// v5 = Sum(v3, [0], keep).
	pgSeed(5, [4]byte{6, 0, 0, 0}, [4]byte{0, 1, 3, 0}, [4]byte{5, 2, 0, 0}, [4]byte{3, 2, 1, 1}, [4]byte{4, 4, 1, 0}),
	// Views of views and writes through them: v1 = Clone(x);
	// v2 = Reshape(v1, -1, 2); v3 = Select(v2, …); AddInPlace(v3, …);
	// v5 = Transpose(v1); MulInPlace(v5, …); v7 = Index(v1, …); Fill(v7, s).
	pgSeed(6, [4]byte{6, 0, 0, 0}, [4]byte{2, 1, 3, 1}, [4]byte{2, 2, 4, 1}, [4]byte{3, 2, 1, 0},
		[4]byte{2, 1, 2, 0}, [4]byte{7, 4, 2, 2}, [4]byte{2, 1, 5, 1}, [4]byte{3, 6, 3, 7}),
	// Chains of smooth ops with reductions: v1 = Tanh(x); v2 = Square(v1);
	// v3 = Mean(v2, [-1]); v4 = Exp(v3); v5 = Mul(v2, s); v6 = Sum(v5).
	pgSeed(7, [4]byte{0, 0, 2, 0}, [4]byte{0, 1, 4, 0}, [4]byte{4, 2, 2, 0}, [4]byte{0, 3, 3, 0}, [4]byte{1, 2, 9, 2}, [4]byte{4, 5, 0, 0}),
}

// pgKnownBugSeeds are programs of the shapes of known defects (D11, D12)
// that fail today. They are not fuzz seeds — a failing seed stops `go
// test -fuzz` before it explores anything — but TestFuzzProgramKnownBugShapes
// runs them through the same checks.
var pgKnownBugSeeds = [][]byte{
	// D11's shape: v1 = a constant; v2 = Mul(x, v1); AddInPlace(v1, s);
	// v4 = Mul(v1, x).
	pgSeed(3, [4]byte{8, 0, 0, 0}, [4]byte{1, 0, 1, 2}, [4]byte{3, 0, 1, 3}, [4]byte{1, 1, 0, 2}),
	// D12's shape: v1 = a constant; v2 = Mul(x, v1); v3 = Sin(x);
	// CopyInto(v1, v3); Fill(v1, s).
	pgSeed(4, [4]byte{8, 0, 0, 0}, [4]byte{1, 0, 1, 2}, [4]byte{0, 0, 0, 0}, [4]byte{3, 0, 0, 3}, [4]byte{3, 0, 3, 5}),
}

// TestFuzzProgramKnownBugShapes runs FuzzProgram's checks on
// pgKnownBugSeeds.
func TestFuzzProgramKnownBugShapes(t *testing.T) {
	for i, seed := range pgKnownBugSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { pgCheck(t, seed) })
	}
}

const (
	pgMaxSteps = 12
	pgLanes    = 3
)

// pgReader hands out the fuzz bytes, then zeros.
type pgReader struct {
	data []byte
	pos  int
}

func (r *pgReader) next() int {
	if r.pos >= len(r.data) {
		r.pos++
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return int(b)
}

// pgVal is a value of a program and what it aliases.
type pgVal struct {
	t *T
	// base is the index of the value whose memory t may share (itself for
	// a fresh tensor); input is true for x and its views.
	base  int
	input bool
}

// pgProgram is a decoded program: its steps, each a closure over the
// values made so far.
type pgProgram struct {
	steps []pgStep
	// x0 is the input's data.
	x0 []float64
	// desc describes the steps as the last run made them.
	desc []string
}

// pgStep appends its value to vals and describes it (with the indices
// of the values it used).
type pgStep func(vals []pgVal) ([]pgVal, string)

func (p *pgProgram) String() string {
	d := make([]string, len(p.desc))
	for i, s := range p.desc {
		d[i] = fmt.Sprintf("v%d = %s", i+1, s)
	}
	return fmt.Sprintf("x = %v; %s", p.x0, strings.Join(d, "; "))
}

// pgDecode turns data into a program. Byte 0 picks the input x; byte 1
// the number of steps (1 + b % pgMaxSteps); then each step is an opcode
// byte (% 9) and three operand bytes (missing bytes read as 0): values are
// picked by index modulo their count, so every byte string is a program. The step closures decide on
// shapes only, which every transform preserves, so each run makes the
// same choices.
func pgDecode(data []byte) *pgProgram {
	r := &pgReader{data: data}
	seed := r.next()
	p := &pgProgram{x0: make([]float64, 6)}
	for i := range p.x0 {
		p.x0[i] = 0.9 * math.Sin(1.7*float64(i)+0.37*float64(seed)+0.2)
	}
	n := 1 + r.next()%pgMaxSteps
	for i := 0; i < n; i++ {
		op := r.next() % 9
		a, b, c := r.next(), r.next(), r.next()
		p.steps = append(p.steps, pgMakeStep(op, a, b, c))
	}
	return p
}

var pgUnary = []struct {
	name string
	f    func(*T) *T
}{
	{"Sin", peel.Sin}, {"Cos", peel.Cos}, {"Tanh", peel.Tanh}, {"Exp", peel.Exp}, {"Square", peel.Square}, {"Neg", peel.Neg},
}

var pgBinary = []struct {
	name string
	f    func(x, y any) *T
}{
	{"Add", peel.Add}, {"Sub", peel.Sub}, {"Mul", peel.Mul},
}

// pgSameShape returns the indices of the values shaped like t.
func pgSameShape(vals []pgVal, t *T, writable bool) []int {
	var out []int
	for i, v := range vals {
		if fmt.Sprint(v.t.Shape()) == fmt.Sprint(t.Shape()) && (!writable || !v.input) {
			out = append(out, i)
		}
	}
	return out
}

func pgScalar(b int) float64 { return 0.25 + 0.125*float64(b%13) - 0.75 }

func pgMakeStep(op, a, b, c int) pgStep {
	fresh := func(vals []pgVal, t *T) []pgVal { return append(vals, pgVal{t: t, base: len(vals)}) }
	switch op {
	case 0: // unary
		u := pgUnary[b%len(pgUnary)]
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			return fresh(vals, u.f(vals[i].t)), fmt.Sprintf("%s(v%d)", u.name, i)
		}
	case 1: // binary with a same-shaped value or a scalar
		bo := pgBinary[c%len(pgBinary)]
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			x := vals[i].t
			cands := pgSameShape(vals, x, false)
			var y any = pgScalar(b)
			other := fmt.Sprint(y)
			if k := b % (len(cands) + 1); k < len(cands) {
				y = vals[cands[k]].t
				other = fmt.Sprintf("v%d", cands[k])
			}
			return fresh(vals, bo.f(x, y)), fmt.Sprintf("%s(v%d, %s)", bo.name, i, other)
		}
	case 2: // view
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			src := vals[i]
			x := src.t
			r := x.Rank()
			if r == 0 {
				return append(vals, pgVal{t: x, base: src.base, input: src.input}), fmt.Sprintf("v%d", i)
			}
			ax := c % r
			d := x.Shape()[ax]
			var v *T
			var desc string
			switch b % 6 {
			case 0:
				start := c % d
				n := 1 + (c/7)%(d-start)
				v, desc = peel.Narrow(x, ax, start, n), fmt.Sprintf("Narrow(v%d, %d, %d, %d)", i, ax, start, n)
			case 1:
				start, step := c%d, 1+(c/5)%2
				v, desc = peel.Slice(x, ax, start, d, step), fmt.Sprintf("Slice(v%d, %d, %d, %d, %d)", i, ax, start, d, step)
			case 2:
				v, desc = peel.Transpose(x), fmt.Sprintf("Transpose(v%d)", i)
			case 3:
				switch {
				case c%2 == 0 || x.Size()%2 != 0 || x.Size() == 0:
					v, desc = peel.Reshape(x, -1), fmt.Sprintf("Reshape(v%d, -1)", i)
				case r >= 2:
					v, desc = peel.Reshape(x, -1, 2), fmt.Sprintf("Reshape(v%d, -1, 2)", i)
				default:
					v, desc = peel.Reshape(x, 2, -1), fmt.Sprintf("Reshape(v%d, 2, -1)", i)
				}
			case 4:
				v, desc = peel.Select(x, ax, c%d), fmt.Sprintf("Select(v%d, %d, %d)", i, ax, c%d)
			default:
				idx := make([]int, r)
				for k := range idx {
					idx[k] = (c + k) % x.Shape()[k]
				}
				v, desc = peel.Index(x, idx...), fmt.Sprintf("Index(v%d, %v)", i, idx)
			}
			return append(vals, pgVal{t: v, base: src.base, input: src.input}), desc
		}
	case 3, 7: // in-place write into a value that is not x or a view of it
		kind := b % 4
		names := []string{"CopyInto", "AddInPlace", "MulInPlace", "Fill"}
		return func(vals []pgVal) ([]pgVal, string) {
			var dsts []int
			for i, v := range vals {
				if !v.input {
					dsts = append(dsts, i)
				}
			}
			if len(dsts) == 0 { // nothing writable yet: a clone of x
				return fresh(vals, peel.Clone(vals[0].t)), "Clone(v0)"
			}
			di := dsts[a%len(dsts)]
			dst := vals[di]
			var src any = pgScalar(c)
			other := fmt.Sprint(src)
			if kind != 3 {
				cands := pgSameShape(vals, dst.t, false)
				if k := c % (len(cands) + 1); k < len(cands) && cands[k] != di {
					s := vals[cands[k]]
					src, other = s.t, fmt.Sprintf("v%d", cands[k])
					if s.base == dst.base {
						src, other = peel.Clone(s.t), fmt.Sprintf("Clone(v%d)", cands[k]) // no overlapping read while writing
					}
				}
			}
			switch kind {
			case 0:
				peel.CopyInto(dst.t, src)
			case 1:
				peel.AddInPlace(dst.t, src)
			case 2:
				peel.MulInPlace(dst.t, src)
			default:
				peel.Fill(dst.t, src)
			}
			return append(vals, dst), fmt.Sprintf("%s(v%d, %s) (v%d again)", names[kind], di, other, di)
		}
	case 4: // reduction
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			x := vals[i].t
			switch {
			case b%3 == 0 || x.Rank() == 0:
				return fresh(vals, peel.Sum(x)), fmt.Sprintf("Sum(v%d)", i)
			case b%3 == 1:
				ax, keep := c%x.Rank(), c%2 == 0
				s := peel.Sum(x, ax)
				if keep {
					s = peel.Keep(peel.Sum, x, ax)
				}
				return fresh(vals, s), fmt.Sprintf("Sum(v%d, [%d], %v)", i, ax, keep)
			default:
				return fresh(vals, peel.Mean(x, x.Rank()-1)), fmt.Sprintf("Mean(v%d, [-1])", i)
			}
		}
	case 5: // matmul
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			x := vals[i].t
			if x.Rank() != 2 {
				return fresh(vals, peel.Mul(x, 0.5)), fmt.Sprintf("Mul(v%d, 0.5)", i)
			}
			var cands []int
			for j, v := range vals {
				if v.t.Rank() == 2 && v.t.Shape()[0] == x.Shape()[1] {
					cands = append(cands, j)
				}
			}
			y, other := peel.Transpose(x), fmt.Sprintf("Transpose(v%d)", i)
			if k := b % (len(cands) + 1); k < len(cands) {
				y, other = vals[cands[k]].t, fmt.Sprintf("v%d", cands[k])
			}
			return fresh(vals, peel.MatMul(x, y)), fmt.Sprintf("MatMul(v%d, %s)", i, other)
		}
	case 8: // a constant created inside, shaped like a value
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			return fresh(vals, peel.Full(peel.Float64, pgScalar(c), vals[i].t.Shape()...)), fmt.Sprintf("Full(%g, shape of v%d)", pgScalar(c), i)
		}
	default: // clone
		return func(vals []pgVal) ([]pgVal, string) {
			i := a % len(vals)
			return fresh(vals, peel.Clone(vals[i].t)), fmt.Sprintf("Clone(v%d)", i)
		}
	}
}

// fn returns the program as a function of x: Σ_k w_k·Σv_k + 0.05·Σ_k Σv_k²
// over the values v_k it made (k ≥ 1, a value written in place counted
// again after each write), for fixed distinct weights w_k.
func (p *pgProgram) fn() func(*T) *T {
	return func(x *T) *T {
		vals := []pgVal{{t: x, base: 0, input: true}}
		desc := make([]string, len(p.steps))
		for i, s := range p.steps {
			vals, desc[i] = s(vals)
		}
		p.desc = desc
		out := peel.Scalar(0.0)
		for i, v := range vals[1:] {
			out = peel.Add(out, peel.Mul(peel.Sum(v.t), 0.5+0.25*float64(i%5)))
			out = peel.Add(out, peel.Mul(peel.Sum(peel.Square(v.t)), 0.05))
		}
		return out
	}
}

// pgFD is the central-difference gradient of f at x0 with step eps.
func pgFD(f func(*T) *T, x0 []float64, eps float64) []float64 {
	x := peel.FromFloat64s(x0, 2, 3)
	g := make([]float64, len(x0))
	for i, e := range optest.Basis([]*T{x}) {
		g[i] = optest.CentralDiff(func(xs []*T) []*T { return []*T{f(xs[0])} }, []*T{x}, e, eps)[0].Data[0]
	}
	return g
}

func pgFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// pgCheck runs one program through the checks of FuzzProgram.
func pgCheck(t *testing.T, data []byte) {
	p := pgDecode(data)
	f := p.fn()
	input := func() *T { return peel.FromFloat64s(append([]float64{}, p.x0...), 2, 3) }
	var want *T
	if err := catchAll(func() { want = f(input()) }); err != nil {
		var pe *peel.Error
		if !errors.As(err, &pe) {
			t.Fatalf("program %s: eager: non-*peel.Error panic: %s", p, ipTrim(err.Error()))
		}
		return // eager refuses: nothing to compare
	}
	y := want.Item()
	// run runs a transform: false (after reporting) when it panicked or
	// returned a tracer.
	run := func(what string, refusalOK func(error) bool, body func() []*T) ([]*T, bool) {
		var res []*T
		err := catchAll(func() { res = body() })
		if err != nil {
			var pe *peel.Error
			switch {
			case !errors.As(err, &pe):
				t.Errorf("program %s: %s: non-*peel.Error panic: %s", p, what, ipTrim(err.Error()))
			case refusalOK != nil && refusalOK(err):
				t.Logf("program %s: %s: documented refusal: %v", p, what, err)
			default:
				t.Errorf("program %s: %s refuses while eager runs: %v", p, what, err)
			}
			return nil, false
		}
		if msg := ipConcrete(what, res...); msg != "" {
			t.Errorf("program %s: %s", p, msg)
			return nil, false
		}
		return res, true
	}

	// Grad and Grad(Functionalize) vs finite differences.
	var fd []float64
	fdOK := !math.IsNaN(y) && !math.IsInf(y, 0) && math.Abs(y) <= 1e6
	s := math.Max(1, math.Abs(y))
	if fdOK {
		fd = pgFD(f, p.x0, 1e-6)
		fd2 := pgFD(f, p.x0, 1e-4)
		switch {
		case !pgFinite(fd) || !pgFinite(fd2):
			t.Logf("program %s: non-finite differences; gradients not compared", p)
			fdOK = false
		case withinTol(fd, fd2, 1e-5, 1e-5*s) != "":
			t.Logf("program %s: differences at ε = 1e-6 and 1e-4 disagree (%s); gradients not compared", p, withinTol(fd, fd2, 1e-5, 1e-5*s))
			fdOK = false
		}
	}
	for _, gc := range []struct {
		name string
		grad func(*T) *T
	}{{"Grad", transforms.Grad(f)}, {"Grad(Functionalize)", transforms.Grad(transforms.Functionalize(f))}} {
		if g, ok := run(gc.name, nil, func() []*T { return []*T{gc.grad(input())} }); ok && fdOK {
			if msg := withinTol(g[0].Float64s(), fd, 1e-5, 1e-5*s); msg != "" {
				t.Errorf("program %s: %s %v vs finite differences %v: %s", p, gc.name, g[0].Float64s(), fd, msg)
			}
		}
	}
	// Functionalize vs eager.
	if got, ok := run("Functionalize", nil, func() []*T { return []*T{transforms.Functionalize(f)(input())} }); ok {
		if msg := optest.Compare(optest.ToHost(got[0]), optest.ToHost(want), 1e-12); msg != "" {
			t.Errorf("program %s: Functionalize %v vs eager %v: %s", p, got[0].Float64s(), want.Float64s(), msg)
		}
	}
	// Vmap vs a loop of eager calls.
	lanes := make([]*T, pgLanes)
	loop := make([]*T, pgLanes)
	for i := range lanes {
		lanes[i] = optest.LaneVariant(input(), i)
		var err error
		if err = catchAll(func() { loop[i] = f(optest.LaneVariant(input(), i)) }); err != nil {
			var pe *peel.Error
			if !errors.As(err, &pe) {
				t.Fatalf("program %s: eager on lane %d: non-*peel.Error panic: %s", p, i, ipTrim(err.Error()))
			}
			return // eager refuses on a lane: no oracle
		}
	}
	documented := func(err error) bool { return strings.Contains(err.Error(), "Functionalize") }
	if got, ok := run("Vmap", documented, func() []*T { return []*T{transforms.Vmap(f)(peel.Stack(lanes, 0))} }); ok {
		wantV := peel.Stack(loop, 0)
		if msg := optest.Compare(optest.ToHost(got[0]), optest.ToHost(wantV), 1e-10); msg != "" {
			t.Errorf("program %s: Vmap %v vs loop %v: %s", p, got[0].Float64s(), wantV.Float64s(), msg)
		}
	}
}
