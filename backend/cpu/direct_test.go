package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Tests of the direct kernels (direct.go): every resolvable primitive,
// every dtype, sizes 0..64 and a few larger ones, contiguous operands at
// random offsets and broadcast scalars, each checked bit for bit against
// Exec on the same operands. (That the portable loops the float
// arithmetic runs below simdMin give the SIMD loops' bits is
// TestSIMDArith's.)

var directDTypes = []backend.DType{backend.Bool, backend.Int64, backend.Float32, backend.Float64}

// resolvablePrims returns the primitives whose kernels have a resolver,
// sorted by name.
func resolvablePrims() []*interp.Prim {
	var ps []*interp.Prim
	for p, e := range regs {
		if e.resolve != nil {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *interp.Prim) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return ps
}

// directValues returns a buffer of n random elements of dt, special
// float values (NaN, ±Inf, ±0, subnormals, extremes) and integer
// extremes among them.
func directValues(r *rand.Rand, dt backend.DType, n int) backend.Buffer {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, 1e-310,
		math.MaxFloat64, -math.MaxFloat64, 1e-40, 1, -1, 0.5, 2, 3}
	pick := func() float64 {
		if r.IntN(4) == 0 {
			return specials[r.IntN(len(specials))]
		}
		return (r.Float64()*2 - 1) * math.Pow(10, float64(r.IntN(7)-3))
	}
	switch dt {
	case backend.Bool:
		b := make([]bool, n)
		for i := range b {
			b[i] = r.IntN(2) == 0
		}
		return &boolBuf{s: b}
	case backend.Int64:
		b := make([]int64, n)
		ints := []int64{math.MinInt64, math.MaxInt64, -1, 0, 1, 2, 63, 64}
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = ints[r.IntN(len(ints))]
			} else {
				b[i] = r.Int64N(41) - 20
			}
		}
		return &i64Buf{s: b}
	case backend.Float32:
		b := make([]float32, n)
		for i := range b {
			b[i] = float32(pick())
		}
		return &f32Buf{s: b}
	case backend.Float64:
		b := make([]float64, n)
		for i := range b {
			b[i] = pick()
		}
		return &f64Buf{s: b}
	}
	panic("dtype")
}

// garbage returns a buffer of n elements of dt, all the same non-zero
// pattern, so elements a kernel leaves unwritten (or writes outside its
// result) are seen.
func garbage(dt backend.DType, n int) backend.Buffer {
	switch dt {
	case backend.Bool:
		return &boolBuf{s: slices.Repeat([]bool{true}, n)}
	case backend.Int64:
		return &i64Buf{s: slices.Repeat([]int64{-12345}, n)}
	case backend.Float32:
		return &f32Buf{s: slices.Repeat([]float32{-12345}, n)}
	case backend.Float64:
		return &f64Buf{s: slices.Repeat([]float64{-12345}, n)}
	}
	panic("dtype")
}

// identical reports whether two buffers hold the same bits.
func identical(x, y backend.Buffer) (int, bool) {
	switch a := x.(type) {
	case *boolBuf:
		b := y.(*boolBuf).s
		for i := range a.s {
			if a.s[i] != b[i] {
				return i, false
			}
		}
	case *i64Buf:
		b := y.(*i64Buf).s
		for i := range a.s {
			if a.s[i] != b[i] {
				return i, false
			}
		}
	case *f32Buf:
		b := y.(*f32Buf).s
		for i := range a.s {
			if math.Float32bits(a.s[i]) != math.Float32bits(b[i]) {
				return i, false
			}
		}
	case *f64Buf:
		b := y.(*f64Buf).s
		for i := range a.s {
			if math.Float64bits(a.s[i]) != math.Float64bits(b[i]) {
				return i, false
			}
		}
	}
	return 0, true
}

// operand layouts of the test: a contiguous array at an offset, or a
// broadcast scalar (zero strides) at an offset.
type directOperand struct {
	splat bool
	off   int
}

func (o directOperand) array(buf backend.Buffer, n int) backend.Array {
	if o.splat {
		return backend.Array{Buf: buf, Shape: []int{n}, Strides: []int{0}, Offset: o.off}
	}
	return backend.Array{Buf: buf, Shape: []int{n}, Offset: o.off}
}

func TestDirectMatchesExec(t *testing.T) {
	b := New()
	r := rand.New(rand.NewPCG(7, 13))
	var sizes []int
	for n := range 65 {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 100, 1000, 4096)
	resolved := 0
	for _, p := range resolvablePrims() {
		rule := p.Elementwise
		if rule == nil {
			t.Fatalf("%s resolves but is not elementwise", p.Name)
		}
		for _, dt := range directDTypes {
			outDT := dt
			if rule.Result.IsValid() {
				outDT = rule.Result
			}
			for _, n := range sizes {
				var shapes [][]directOperand
				if rule.Arity == 1 {
					shapes = [][]directOperand{{{off: r.IntN(4)}}, {{splat: true, off: r.IntN(4)}}}
				} else {
					shapes = [][]directOperand{
						{{off: r.IntN(4)}, {off: r.IntN(4)}},
						{{off: r.IntN(4)}, {splat: true, off: r.IntN(4)}},
						{{splat: true, off: r.IntN(4)}, {off: r.IntN(4)}},
						{{splat: true, off: r.IntN(4)}, {splat: true, off: r.IntN(4)}},
					}
				}
				for _, ops := range shapes {
					what := fmt.Sprintf("%s %v n=%d %+v", p.Name, dt, n, ops)
					in := make([]backend.Array, len(ops))
					inL := make([]backend.Layout, len(ops))
					splats := 0
					for k, o := range ops {
						in[k] = o.array(directValues(r, dt, n+4), n)
						inL[k] = backend.LayoutOf(in[k])
						if o.splat {
							splats++
						}
					}
					outOff := r.IntN(4)
					want := backend.Array{Buf: garbage(outDT, n+8), Shape: []int{n}, Offset: outOff}
					got := backend.Array{Buf: garbage(outDT, n+8), Shape: []int{n}, Offset: outOff}
					d := b.Resolve(p.Op, nil, inL, []backend.Layout{backend.LayoutOf(got)})
					accepted := rule.Accepts(dt)
					switch {
					case !accepted && d != nil:
						t.Fatalf("%s: resolved a dtype the primitive refuses", what)
					case accepted && d == nil && n <= 64 && !(splats == 2 && n > 1):
						// Small calls resolve, except with two broadcast
						// scalars (left to Exec).
						t.Fatalf("%s: not resolved", what)
					}
					if d == nil {
						continue
					}
					resolved++
					inCopy := slices.Clone(in)
					b.Exec(p.Op, nil, inCopy, []backend.Array{want})
					ins, outs := slices.Clone(in), []backend.Array{got}
					d(ins, outs)
					if i, ok := identical(want.Buf, got.Buf); !ok {
						t.Fatalf("%s: element %d differs from Exec's (buffer index, offset %d)", what, i, outOff)
					}
					for k := range in {
						if !sameBuffer(ins[k].Buf, in[k].Buf) || ins[k].Offset != in[k].Offset || &ins[k].Shape[0] != &in[k].Shape[0] {
							t.Fatalf("%s: the direct kernel changed its operand slice", what)
						}
					}
				}
			}
		}
	}
	if resolved < 1000 {
		t.Fatalf("only %d direct kernels resolved", resolved)
	}
}

// TestDirectRefuses: calls a direct kernel cannot make resolve to nil,
// so they keep going through Exec.
func TestDirectRefuses(t *testing.T) {
	b := New()
	f64 := func(shape []int, strides []int) backend.Layout {
		return backend.Layout{DType: backend.Float64, Shape: shape, Strides: strides}
	}
	vec := f64([]int{8}, nil)
	cases := []struct {
		name    string
		op      *interp.Prim
		in, out []backend.Layout
	}{
		{"parallel size", prims.Add, []backend.Layout{f64([]int{1 << 17}, nil), f64([]int{1 << 17}, nil)}, []backend.Layout{f64([]int{1 << 17}, nil)}},
		{"parallel heavy op", prims.Sin, []backend.Layout{f64([]int{4096}, nil)}, []backend.Layout{f64([]int{4096}, nil)}},
		{"strided operand", prims.Add, []backend.Layout{f64([]int{2, 4}, []int{1, 2}), f64([]int{2, 4}, nil)}, []backend.Layout{f64([]int{2, 4}, nil)}},
		{"repeated block", prims.Mul, []backend.Layout{f64([]int{4, 64}, []int{0, 1}), f64([]int{4, 64}, nil)}, []backend.Layout{f64([]int{4, 64}, nil)}},
		{"two splats", prims.Mul, []backend.Layout{f64([]int{8}, []int{0}), f64([]int{8}, []int{0})}, []backend.Layout{vec}},
		{"mixed dtypes", prims.Add, []backend.Layout{vec, {DType: backend.Float32, Shape: []int{8}}}, []backend.Layout{vec}},
		{"wrong result dtype", prims.Lt, []backend.Layout{vec, vec}, []backend.Layout{vec}},
		{"size mismatch", prims.Add, []backend.Layout{f64([]int{4}, nil), vec}, []backend.Layout{vec}},
		{"refused dtype", prims.Not, []backend.Layout{vec}, []backend.Layout{vec}},
		{"arity", prims.Neg, []backend.Layout{vec, vec}, []backend.Layout{vec}},
		{"not elementwise", prims.ReduceSum, []backend.Layout{vec}, []backend.Layout{f64(nil, nil)}},
	}
	for _, c := range cases {
		if d := b.Resolve(c.op.Op, nil, c.in, c.out); d != nil {
			t.Errorf("%s: resolved", c.name)
		}
	}
	if d := b.Resolve(backend.Op{ID: 1 << 20, Name: "unknown"}, nil, []backend.Layout{vec}, []backend.Layout{vec}); d != nil {
		t.Error("unknown op: resolved")
	}
}

// TestDirectAllocs: a direct kernel allocates nothing, nor does Exec on
// the same small operands.
func TestDirectAllocs(t *testing.T) {
	b := New()
	x := backend.Array{Buf: &f64Buf{s: make([]float64, 8)}, Shape: []int{8}}
	y := backend.Array{Buf: &f64Buf{s: make([]float64, 8)}, Shape: []int{8}}
	s := backend.Array{Buf: &f64Buf{s: make([]float64, 1)}, Shape: []int{8}, Strides: []int{0}}
	o := backend.Array{Buf: &f64Buf{s: make([]float64, 8)}, Shape: []int{8}}
	for _, c := range []struct {
		op *interp.Prim
		in []backend.Array
	}{{prims.Add, []backend.Array{x, y}}, {prims.Sub, []backend.Array{s, y}}, {prims.Mul, []backend.Array{x, s}},
		{prims.Tanh, []backend.Array{x}}, {prims.Exp, []backend.Array{s}}} {
		ls := make([]backend.Layout, len(c.in))
		for i, a := range c.in {
			ls[i] = backend.LayoutOf(a)
		}
		out := []backend.Array{o}
		d := b.Resolve(c.op.Op, nil, ls, []backend.Layout{backend.LayoutOf(o)})
		if d == nil {
			t.Fatalf("%s: not resolved", c.op.Name)
		}
		if a := testing.AllocsPerRun(100, func() { d(c.in, out) }); a != 0 {
			t.Errorf("%s: %v allocations per call", c.op.Name, a)
		}
		in := make([]backend.Array, len(c.in))
		if a := testing.AllocsPerRun(100, func() { copy(in, c.in); b.Exec(c.op.Op, nil, in, out) }); a != 0 {
			t.Errorf("%s: %v allocations per Exec", c.op.Name, a)
		}
	}
}
