package compiler_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/interp"
)

// TestMain runs the tests with poisoned buffers (compiler.SetPoison),
// so a result element a kernel does not write shows.
func TestMain(m *testing.M) {
	compiler.SetPoison(true)
	os.Exit(m.Run())
}

// bitsOf returns a tensor's elements as exact bit patterns (floats by
// their IEEE bits, so NaNs and signed zeros compare exactly).
func bitsOf(t *peel.Tensor) []uint64 {
	var out []uint64
	switch t.DType() {
	case peel.Float64:
		for _, v := range t.Float64s() {
			out = append(out, math.Float64bits(v))
		}
	case peel.Float32:
		for _, v := range t.Float32s() {
			out = append(out, uint64(math.Float32bits(v)))
		}
	case peel.Int64:
		for _, v := range t.Int64s() {
			out = append(out, uint64(v))
		}
	case peel.Bool:
		for _, v := range t.Bools() {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	}
	return out
}

// sameBits reports how got differs from want ("" when equal bit for bit,
// with equal types).
func sameBits(got, want *peel.Tensor) string {
	if !interp.AvalOf(got).Equal(interp.AvalOf(want)) {
		return fmt.Sprintf("type %s, want %s", got.TypeString(), want.TypeString())
	}
	g, w := bitsOf(got), bitsOf(want)
	for i := range w {
		if g[i] != w[i] {
			return fmt.Sprintf("element %d: bits %#x, want %#x", i, g[i], w[i])
		}
	}
	return ""
}

// tb is what checkProgram needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkProgram builds g and compares Run with Graph.Eval on args, bit for
// bit; both must fail, with *Error, or neither.
func checkProgram(t tb, g *interp.Graph, args []*peel.Tensor) *compiler.Program {
	t.Helper()
	want, werr := evalOrErr(func() []*peel.Tensor { return g.Eval(args...) })
	p := compiler.Build(g)
	// The memory statistics are sizes: none is negative.
	if st := p.Stats(); st.ArenaBytes < 0 || st.ReusedBytes < 0 || st.ScratchBytes < 0 || st.OutputBytes < 0 {
		t.Fatalf("stats %+v\n%v", st, p)
	}
	got, gerr := evalOrErr(func() []*peel.Tensor { return p.Run(args, nil) })
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("Graph.Eval error %v, Program.Run error %v\n%v\n%v", werr, gerr, g, p)
	}
	if werr != nil {
		return p
	}
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("output %d: %s\n%v\n%v", i, d, g, p)
		}
	}
	return p
}

// evalOrErr runs f, turning a *peel.Error panic into an error (any other
// panic propagates).
func evalOrErr(f func() []*peel.Tensor) (res []*peel.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*peel.Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	return f(), nil
}

// TestRegistry runs every registry op's samples as a one-op program,
// against Graph.Eval bit for bit.
func TestRegistry(t *testing.T) {
	for _, op := range optest.All() {
		for _, s := range op.Samples() {
			t.Run(op.Name+"/"+s.Name, func(t *testing.T) {
				g, err := traceOrErr(op.F, s.Args)
				if err != nil {
					return // eager refuses too (checked by optest)
				}
				checkProgram(t, g, s.Args)
				// The float operands as fresh buffers the op reads
				// last, its result read only by a reduction: an
				// elementwise result, kernel or fused, then takes an
				// operand's memory (in place), which must change no bit.
				fresh := func(x *peel.Tensor) *peel.Tensor {
					if !x.DType().IsFloat() {
						return x
					}
					return peel.Sum(peel.Stack([]*peel.Tensor{x}, 0), 0)
				}
				// Every operand fresh (the result takes the first's
				// memory), and only the last (it takes that one's).
				for _, from := range []int{0, len(s.Args) - 1} {
					gc, err := traceOrErr(func(a []*peel.Tensor) *peel.Tensor {
						c := append([]*peel.Tensor(nil), a...)
						for i := from; i < len(c); i++ {
							c[i] = fresh(c[i])
						}
						return fresh(op.F(c))
					}, s.Args)
					if err == nil {
						checkProgram(t, gc, s.Args)
					}
				}
			})
		}
	}
}

func traceOrErr(f func([]*peel.Tensor) *peel.Tensor, args []*peel.Tensor) (g *interp.Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*peel.Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	return interp.Trace(func(a []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{f(a)} }, args), nil
}

func seqValues(n int, scale float64) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = scale * (float64(i%97) - 40) / 17
	}
	return d
}

// TestChainFused: an elementwise chain with scalar operands becomes one
// fused group whose intermediates live in blocks, at sizes below and
// above the blocked threshold, in f32 and f64.
func TestChainFused(t *testing.T) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, n := range []int{0, 1, 7, 4096, 4097, 1 << 16, 1<<16 + 3} {
			x := peel.AsType(peel.FromFloat64s(seqValues(n, 1), n), dt)
			g := trace(func(a []*peel.Tensor) []*peel.Tensor {
				x := a[0]
				return []*peel.Tensor{peel.Mul(peel.Tanh(peel.Add(peel.Mul(x, 2.0), 1.0)), x)}
			}, x)
			p := checkProgram(t, g, []*peel.Tensor{x})
			st := p.Stats()
			if st.Fused != 1 || st.FusedSizes[0] != 4 || st.ArenaBytes != 0 {
				t.Errorf("%v[%d]: stats %+v\n%v", dt, n, st, p)
			}
			// Blocked (n ≥ FuseMin): the intermediates of one block, per
			// worker, are the group's scratch memory.
			if n >= compiler.FuseMin && (st.ScratchBytes <= 0 || st.ScratchBytes > 3*compiler.FuseBlock*dt.Size()) {
				t.Errorf("%v[%d]: %d scratch bytes, want (0, 3 blocks]\n%v", dt, n, st.ScratchBytes, p)
			}
		}
	}
}

// TestStopGradientAliases: stop_gradient runs no kernel in a program (it
// is the identity on values); its result, read by a fused group, by a
// reduction, returned beside its operand, or of an input, is its
// operand's value.
func TestStopGradientAliases(t *testing.T) {
	x := peel.FromFloat64s(seqValues(12, 1), 3, 4)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		e := peel.Exp(a[0])
		s := peel.StopGradient(e)
		m := peel.Keep(peel.Max, peel.StopGradient(a[0]), -1)
		return []*peel.Tensor{peel.Mul(peel.Sub(a[0], m), s), s, e, peel.StopGradient(a[0])}
	}, x)
	if count(g, "stop_gradient") != 3 {
		t.Fatalf("the trace has %d stop_gradient, want 3:\n%v", count(g, "stop_gradient"), g)
	}
	p := checkProgram(t, g, []*peel.Tensor{x})
	if strings.Contains(p.String(), "stop_gradient") {
		t.Errorf("the program runs stop_gradient:\n%v", p)
	}
	out := p.Run([]*peel.Tensor{x}, nil)
	if out[3] == x {
		t.Errorf("an output aliases the input")
	}
}

// TestViews: transposes, slices, broadcasts and reshapes feeding kernels
// and fused groups.
func TestViews(t *testing.T) {
	x := peel.FromFloat64s(seqValues(12, 1), 3, 4)
	y := peel.FromFloat64s(seqValues(4, 2), 4)
	cases := []struct {
		name string
		f    func(x, y *peel.Tensor) []*peel.Tensor
	}{
		{"transpose_add", func(x, y *peel.Tensor) []*peel.Tensor {
			tx := peel.Transpose(x)
			return []*peel.Tensor{peel.Add(peel.Exp(tx), tx)}
		}},
		{"row_broadcast", func(x, y *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Tanh(peel.Mul(x, y))} }},
		{"slice_step", func(x, y *peel.Tensor) []*peel.Tensor {
			s := peel.Slice(x, 1, 0, 4, 2)
			return []*peel.Tensor{peel.Sin(peel.Add(s, 1.0)), s}
		}},
		{"reshape_of_transpose", func(x, y *peel.Tensor) []*peel.Tensor {
			r := peel.Reshape(peel.Transpose(x), 12)
			return []*peel.Tensor{peel.Mul(r, r)}
		}},
		{"matmul_transpose", func(x, y *peel.Tensor) []*peel.Tensor {
			return []*peel.Tensor{peel.MatMul(peel.Transpose(x), x), peel.Sum(peel.Exp(x), 1)}
		}},
		{"view_output", func(x, y *peel.Tensor) []*peel.Tensor {
			e := peel.Exp(x)
			return []*peel.Tensor{peel.Transpose(e), e, peel.Transpose(x), peel.Narrow(y, 0, 1, 2)}
		}},
		{"group_value_through_view", func(x, y *peel.Tensor) []*peel.Tensor {
			e := peel.Exp(peel.Transpose(peel.Reshape(x, 4, 3)))
			f := peel.Add(e, 1.0)
			return []*peel.Tensor{peel.Mul(peel.Reshape(peel.Transpose(f), 3, 4), x)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := trace(func(a []*peel.Tensor) []*peel.Tensor { return c.f(a[0], a[1]) }, x, y)
			checkProgram(t, g, []*peel.Tensor{x, y})
			// Strided arguments.
			xt := peel.Transpose(peel.FromFloat64s(seqValues(12, 3), 4, 3))
			checkProgram(t, g, []*peel.Tensor{xt, y})
		})
	}
}

// TestOutputsAliasNothing: an output that is an input, a constant or a
// view of one comes back so that writing into it changes neither.
func TestOutputsAliasNothing(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2)
	c := peel.FromFloat64s([]float64{5, 6, 7, 8}, 2, 2)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{a[0], c, peel.Transpose(a[0]), peel.Transpose(c), peel.Add(a[0], c)}
	}, x)
	p := compiler.Build(g)
	for range 2 {
		res := p.Run([]*peel.Tensor{x}, nil)
		for _, r := range res {
			peel.AddInPlace(r, 100.0)
		}
		if d := sameBits(x, peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2)); d != "" {
			t.Fatalf("input changed: %s", d)
		}
		if d := sameBits(c, peel.FromFloat64s([]float64{5, 6, 7, 8}, 2, 2)); d != "" {
			t.Fatalf("constant changed: %s", d)
		}
		want := g.Eval(x)
		res = p.Run([]*peel.Tensor{x}, nil)
		for i := range want {
			if d := sameBits(res[i], want[i]); d != "" {
				t.Fatalf("output %d after writes: %s", i, d)
			}
		}
	}
}

// TestResultsFresh: results of one run are not changed by the next.
func TestResultsFresh(t *testing.T) {
	x := peel.FromFloat64s(seqValues(10, 1), 10)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		e := peel.Exp(a[0])
		s := peel.Sum(e)
		return []*peel.Tensor{peel.Mul(e, s), s}
	}, x)
	p := compiler.Build(g)
	first := p.Run([]*peel.Tensor{x}, nil)
	want := []*peel.Tensor{peel.Clone(first[0]), peel.Clone(first[1])}
	p.Run([]*peel.Tensor{peel.FromFloat64s(seqValues(10, 5), 10)}, nil)
	for i := range want {
		if d := sameBits(first[i], want[i]); d != "" {
			t.Fatalf("output %d changed by a later run: %s", i, d)
		}
	}
}

// TestDonation: donated inputs give their buffers to intermediates and
// outputs; a donated input shared with another argument is not reused.
func TestDonation(t *testing.T) {
	mk := func() *peel.Tensor { return peel.FromFloat64s(seqValues(64, 1), 8, 8) }
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		x, y := a[0], a[1]
		m := peel.MatMul(x, y)
		return []*peel.Tensor{peel.Add(peel.Exp(m), 1.0), peel.Sum(m, 0)}
	}, mk(), mk())
	p := compiler.Build(g)
	x, y := mk(), mk()
	want := g.Eval(x, y)
	got := p.Run([]*peel.Tensor{mk(), mk()}, []bool{true, true})
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("donated run, output %d: %s\n%v", i, d, p)
		}
	}
	// The same tensor as both arguments, one donated: it must stay
	// readable for the other.
	z := mk()
	want = g.Eval(z, z)
	got = p.Run([]*peel.Tensor{z, z}, []bool{true, false})
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("shared donated run, output %d: %s", i, d)
		}
	}
	if d := sameBits(z, mk()); d != "" {
		t.Fatalf("shared donated input written: %s", d)
	}
	// An input that is also an output is returned intact.
	g2 := trace(func(a []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Exp(a[0]), a[0]} }, mk())
	p2 := compiler.Build(g2)
	got = p2.Run([]*peel.Tensor{mk()}, []bool{true})
	if d := sameBits(got[1], mk()); d != "" {
		t.Fatalf("donated input returned as output: %s", d)
	}
	// Donation reaches the plan: exp(x)+1 of a donated x needs no
	// output allocation for x's type.
	g3 := trace(func(a []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Add(peel.MatMul(a[0], a[0]), 1.0)}
	}, mk())
	p3 := compiler.Build(g3)
	in := mk()
	want = g3.Eval(in)
	got = p3.Run([]*peel.Tensor{in}, []bool{true})
	if d := sameBits(got[0], want[0]); d != "" {
		t.Fatalf("donated chain: %s", d)
	}
	// The output took the donated input's buffer (the input, given
	// up, now shows the result).
	if d := sameBits(in, got[0]); d != "" {
		t.Fatalf("donated buffer not reused for the output: %s\n%v", d, p3)
	}
}

// TestConcurrent: one program, shared inputs, 8 goroutines (run with
// -race); the inputs are never written.
func TestConcurrent(t *testing.T) {
	x := peel.FromFloat64s(seqValues(1<<15, 1), 1<<15)
	small := peel.FromFloat64s(seqValues(6, 1), 2, 3)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		x, s := a[0], a[1]
		y := peel.Mul(peel.Tanh(peel.Add(peel.Mul(x, 2.0), 1.0)), x)
		return []*peel.Tensor{y, peel.Sum(y), peel.MatMul(s, peel.Transpose(s)), s}
	}, x, small)
	want := g.Eval(x, small)
	checkConcurrentRuns(t, compiler.Build(g), []*peel.Tensor{x, small}, want, 10)
	if d := sameBits(x, peel.FromFloat64s(seqValues(1<<15, 1), 1<<15)); d != "" {
		t.Fatalf("input written: %s", d)
	}
}

// TestFallback: a composite without a kernel and a mutation primitive run
// through interp.Eval (the mutation out of place).
func TestFallback(t *testing.T) {
	x := peel.FromFloat64s(seqValues(6, 1), 2, 3)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		c := peel.Exp(a[0])
		peel.AddInPlace(c, a[0])
		return []*peel.Tensor{peel.Softmax(c, 1), c}
	}, x)
	p := checkProgram(t, g, []*peel.Tensor{x})
	if p.Stats().Fallbacks == 0 {
		t.Errorf("no fallback instruction:\n%v", p)
	}
	if d := sameBits(x, peel.FromFloat64s(seqValues(6, 1), 2, 3)); d != "" {
		t.Errorf("input written: %s", d)
	}
}

// TestRunErrors: misuse panics with *peel.Error.
func TestRunErrors(t *testing.T) {
	x := peel.FromFloat64s(seqValues(6, 1), 2, 3)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Exp(a[0])} }, x)
	p := compiler.Build(g)
	cases := []struct {
		name string
		args []*peel.Tensor
	}{
		{"count", nil},
		{"nil", []*peel.Tensor{nil}},
		{"shape", []*peel.Tensor{peel.FromFloat64s(seqValues(6, 1), 6)}},
		{"dtype", []*peel.Tensor{peel.AsType(x, peel.Float32)}},
		{"tracer", []*peel.Tensor{interp.NewTracer(interp.AvalOf(x), fakeTracer{})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := evalOrErr(func() []*peel.Tensor { return p.Run(c.args, nil) })
			var pe *peel.Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want *peel.Error", err)
			}
		})
	}
}

type fakeTracer struct{}

func (fakeTracer) Level() *interp.Level { return nil }

// TestAllocsPerRun: in steady state a run allocates its result slice,
// tensors and buffers, independent of the number of equations; kernels
// that allocate themselves (the CPU backend's dot_general makes two
// small objects per call) add what they allocate when called directly.
func TestAllocsPerRun(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	if os.Getenv("PEEL_CACHE_CHECK") == "1" {
		t.Skip("the cache's checking mode caches every result, whatever its size, with a cleanup each (run without it, as plain go test does)")
	}
	compiler.SetPoison(false)
	defer compiler.SetPoison(true)
	x := peel.FromFloat64s(seqValues(8, 1), 8)
	a, b := peel.FromFloat64s(seqValues(8, 0.1), 8), peel.FromFloat64s(seqValues(8, 0.2), 8)
	w := peel.FromFloat64s(seqValues(64, 0.1), 8, 8)
	chain := func(dots bool) func(in []*peel.Tensor) []*peel.Tensor {
		return func(in []*peel.Tensor) []*peel.Tensor {
			x := in[0]
			for i := range 100 {
				switch i % 5 {
				case 0:
					x = peel.Mul(x, a)
				case 1:
					x = peel.Add(peel.Transpose(peel.Reshape(x, 2, 4)), peel.Reshape(b, 4, 2))
				case 2:
					x = peel.Tanh(peel.Reshape(x, 8))
				case 3:
					x = peel.Sub(x, 0.5)
				case 4:
					if dots {
						x = peel.Reshape(peel.MatMul(peel.Reshape(x, 1, 8), w), 8)
					} else {
						x = peel.Sum(peel.Reshape(x, 8, 1), 1)
					}
				}
			}
			return []*peel.Tensor{x, peel.Exp(x)}
		}
	}
	dotAllocs := kernelAllocs(func(in []*peel.Tensor) *peel.Tensor { return peel.MatMul(in[0], in[1]) }, peel.Reshape(x, 1, 8), w)
	sumAllocs := kernelAllocs(func(in []*peel.Tensor) *peel.Tensor { return peel.Sum(in[0], 1) }, peel.Reshape(x, 8, 1))
	for _, dots := range []bool{false, true} {
		g := trace(chain(dots), x)
		p := compiler.Build(g)
		args := []*peel.Tensor{x}
		checkProgram(t, g, args)
		p.Run(args, nil)
		n := testing.AllocsPerRun(100, func() { p.Run(args, nil) })
		// The result slice; per result its tensor, storage and
		// buffer (a small buffer's header and elements are one
		// allocation, held by the backend.Buffer without boxing).
		bound := 1 + 2*3 + 20*sumAllocs
		if dots {
			bound = 1 + 2*3 + 20*dotAllocs
		}
		if n > bound {
			t.Errorf("dots %v: %v allocations per run, want ≤ %v\n%v", dots, n, bound, p)
		}
	}
}

// kernelAllocs returns the allocations of one direct backend.Exec of
// the last equation f records at args (operands made contiguous).
func kernelAllocs(f func([]*peel.Tensor) *peel.Tensor, args ...*peel.Tensor) float64 {
	g := trace(func(in []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{f(in)} }, args...)
	e := g.Eqns[len(g.Eqns)-1]
	in := make([]backend.Array, len(args))
	var be backend.Backend
	for i, a := range args {
		in[i], be = interp.ArrayOf(interp.Contiguous(a))
	}
	o := e.Out[0].Aval
	out := []backend.Array{{Buf: be.Alloc(o.DType, o.Size()), Shape: o.Shape}}
	ins := make([]backend.Array, len(in))
	n := testing.AllocsPerRun(100, func() {
		copy(ins, in)
		be.Exec(e.Prim.Op, e.Params, ins, out)
	})
	runtime.KeepAlive(args)
	return n
}

// TestTrailingSum: a sum over the last axis of a group's result is
// computed block by block in the group (whole rows per block), bit for
// bit as the reduce_sum kernel on the whole array; rows longer than a
// block are not fused.
func TestTrailingSum(t *testing.T) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		for _, shape := range [][]int{{3, 5}, {1, 7}, {7, 1}, {0, 4}, {4096}, {3, 4097}, {200, 130}, {50, 4096}, {2, 3, 1000}} {
			n := 1
			for _, d := range shape {
				n *= d
			}
			x := peel.AsType(peel.FromFloat64s(seqValues(n, 1), shape...), dt)
			g := trace(func(a []*peel.Tensor) []*peel.Tensor {
				e := peel.Exp(peel.Sub(a[0], 1.0))
				return []*peel.Tensor{peel.Sum(peel.Mul(e, e), len(shape)-1), e}
			}, x)
			p := checkProgram(t, g, []*peel.Tensor{x})
			st := p.Stats()
			fused := shape[len(shape)-1] <= 4096
			if fused != (st.Reductions == 1) {
				t.Errorf("%v%v: reductions %d, want fused %v\n%v", dt, shape, st.Reductions, fused, p)
			}
		}
	}
}

// TestString: the printed program names the fused group, its block
// buffers and where results live.
func TestString(t *testing.T) {
	x := peel.FromFloat64s(seqValues(6, 1), 2, 3)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		e := peel.Exp(peel.Mul(a[0], 2.0))
		return []*peel.Tensor{peel.Sum(peel.Tanh(e), 1), peel.MatMul(e, peel.Transpose(a[0]))}
	}, x)
	s := compiler.Build(g).String()
	for _, want := range []string{"program(in0:f64[2,3]", "fused[3] over [2,3]", "reduce_sum[rows of 3]", "[block 0]", "@out", "dot_general", "return"} {
		if !strings.Contains(s, want) {
			t.Errorf("String lacks %q:\n%s", want, s)
		}
	}
}

// TestBuildReleased: a graph whose constants were released cannot be
// built.
func TestBuildReleased(t *testing.T) {
	c := peel.FromFloat64s([]float64{1, 2}, 2)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Add(a[0], c)} }, c)
	g.ReleaseConstants()
	_, err := evalOrErr(func() []*peel.Tensor { compiler.Build(g); return nil })
	var pe *peel.Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want *peel.Error", err)
	}
}

// checkConcurrentRuns runs p on args from 8 goroutines, reps times each,
// and fails unless every run's outputs equal want bit for bit.
func checkConcurrentRuns(t *testing.T, p *compiler.Program, args, want []*peel.Tensor, reps int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range reps {
				got := p.Run(args, nil)
				for i := range want {
					if d := sameBits(got[i], want[i]); d != "" {
						errs <- fmt.Sprintf("output %d: %s", i, d)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestInPlaceElementwise checks that an elementwise kernel's result
// takes the buffer of an operand it reads for the last time (an
// intermediate's arena buffer, a donated input), and never a view's:
// results equal Graph.Eval's bit for bit.
func TestInPlaceElementwise(t *testing.T) {
	mk := func() *peel.Tensor { return peel.FromFloat64s(seqValues(64, 0.01), 8, 8) }
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		x, y := a[0], a[1]
		e := peel.Sin(peel.MatMul(x, y))
		return []*peel.Tensor{peel.Add(peel.Exp(peel.MatMul(e, y)), x)}
	}, mk(), mk())
	p := checkProgram(t, g, []*peel.Tensor{mk(), mk()})
	if !strings.Contains(p.String(), "sin -> v3:f64[8,8]@arena0 <- v2:f64[8,8]@arena0") {
		t.Errorf("sin does not overwrite the product it reads last:\n%v", p)
	}
	// Operands that are views of a buffer read for the last time (its
	// transpose, its halves) share memory the result must not take.
	views := trace(func(a []*peel.Tensor) []*peel.Tensor {
		m := peel.MatMul(a[0], a[1])
		h := peel.Add(peel.Narrow(m, 0, 0, 4), peel.Narrow(m, 0, 4, 4))
		m2 := peel.MatMul(a[1], a[0])
		return []*peel.Tensor{h, peel.Mul(m2, peel.Transpose(m2, 1, 0))}
	}, mk(), mk())
	checkProgram(t, views, []*peel.Tensor{mk(), mk()})
	// A donated input read last by an add holds the result.
	acc := trace(func(a []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Add(a[0], peel.MatMul(a[1], a[1]))}
	}, mk(), mk())
	pa := compiler.Build(acc)
	in := mk()
	want := acc.Eval(in, mk())
	got := pa.Run([]*peel.Tensor{in, mk()}, []bool{true, false})
	if d := sameBits(got[0], want[0]); d != "" {
		t.Fatalf("accumulation into a donated input: %s\n%v", d, pa)
	}
	if d := sameBits(in, got[0]); d != "" {
		t.Errorf("the add did not write into the donated input it reads last: %s", d)
	}
}

// TestRunInto checks RunInto against Run: results computed into slices
// of one caller buffer, and results the plan cannot compute there (an
// input, a constant, one buffer returned twice) copied into theirs.
func TestRunInto(t *testing.T) {
	mk := func() *peel.Tensor { return peel.FromFloat64s(seqValues(16, 0.1), 4, 4) }
	c := peel.FromFloat64s(seqValues(16, 0.3), 4, 4)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		e := peel.Exp(peel.MatMul(a[0], c))
		return []*peel.Tensor{e, a[0], peel.Tanh(a[0]), e}
	}, mk())
	p := compiler.Build(g)
	want := p.Run([]*peel.Tensor{mk()}, nil)
	for _, k := range []int{0, 3} {
		stack := peel.Zeros(peel.Float64, 6, 4, 4)
		dst := []*peel.Tensor{peel.Index(stack, k), peel.Index(stack, k+1), nil, peel.Index(stack, k+2)}
		got := p.RunInto([]*peel.Tensor{mk()}, nil, dst)
		for i := range want {
			if d := sameBits(got[i], want[i]); d != "" {
				t.Fatalf("offset %d, result %d: %s\n%v", k, i, d, p)
			}
			if dst[i] != nil && got[i] != dst[i] {
				t.Errorf("offset %d, result %d: not returned in its destination", k, i)
			}
		}
		for i, d := range dst {
			if d != nil {
				if diff := sameBits(peel.Index(stack, k+[]int{0, 1, 0, 2}[i]), want[i]); diff != "" {
					t.Errorf("offset %d, result %d: the stacked buffer holds %s", k, i, diff)
				}
			}
		}
		// The other slices are untouched.
		for j := range 6 {
			if j < k || j > k+2 {
				if diff := sameBits(peel.Index(stack, j), peel.Zeros(peel.Float64, 4, 4)); diff != "" {
					t.Errorf("offset %d: slice %d written: %s", k, j, diff)
				}
			}
		}
	}
	if err := catchErr(func() { p.RunInto([]*peel.Tensor{mk()}, nil, []*peel.Tensor{peel.Zeros(peel.Float32, 4, 4)}) }); err == nil {
		t.Error("RunInto took a destination of another dtype")
	}
	// One destination more than the results: an *Error, not an index
	// out of range.
	extra := make([]*peel.Tensor, len(want)+1)
	extra[len(want)] = peel.Zeros(peel.Float64, 4, 4)
	var pe *peel.Error
	if err := catchErr(func() { p.RunInto([]*peel.Tensor{mk()}, nil, extra) }); !errors.As(err, &pe) {
		t.Errorf("RunInto with %d destinations for %d results: %v, want a *peel.Error", len(extra), len(want), err)
	}
	if err := catchErr(func() {
		p.RunInto([]*peel.Tensor{mk()}, nil, []*peel.Tensor{peel.Transpose(peel.Zeros(peel.Float64, 4, 4), 1, 0)})
	}); err == nil {
		t.Error("RunInto took a transposed destination")
	}
}

func catchErr(f func()) (err error) {
	_, err = evalOrErr(func() []*peel.Tensor { f(); return nil })
	return err
}

// TestConstantOutputs: a program that returns a constant, views of it
// (a slice, a transpose, a reshape) and the constant again returns each
// as Graph.Eval does.
func TestConstantOutputs(t *testing.T) {
	c := peel.FromFloat64s(seqValues(12, 0.7), 3, 4)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{c, peel.Slice(c, 1, 1, 3, 1), peel.Transpose(c), peel.Reshape(c, 4, 3), peel.Add(a[0], c), c}
	}, peel.FromFloat64s(seqValues(12, 0.2), 3, 4))
	checkProgram(t, g, []*peel.Tensor{peel.FromFloat64s(seqValues(12, 0.2), 3, 4)})
}

// TestInPlaceGroup checks fused groups: a result takes a donated input
// its member reads last (two accumulations fused into one group), but
// not one a later member still reads; results equal Graph.Eval's.
func TestInPlaceGroup(t *testing.T) {
	mk := func(s float64) *peel.Tensor { return peel.FromFloat64s(seqValues(64, s), 8, 8) }
	acc := trace(func(a []*peel.Tensor) []*peel.Tensor {
		d := peel.MatMul(a[2], a[2])
		return []*peel.Tensor{peel.Add(a[0], d), peel.Add(a[1], peel.Transpose(d, 1, 0))}
	}, mk(1), mk(2), mk(3))
	p := compiler.Build(acc)
	if !strings.Contains(p.String(), "fused") {
		t.Fatalf("the accumulations are not one group:\n%v", p)
	}
	a0, a1 := mk(1), mk(2)
	want := acc.Eval(mk(1), mk(2), mk(3))
	got := p.Run([]*peel.Tensor{a0, a1, mk(3)}, []bool{true, true, false})
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("result %d: %s\n%v", i, d, p)
		}
	}
	if sameBits(a0, got[0]) != "" || sameBits(a1, got[1]) != "" {
		t.Errorf("the fused accumulations did not write into their donated inputs\n%v", p)
	}
	// The donated x is read by both members: the first result must not
	// take it.
	both := trace(func(a []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Add(a[0], 1.0), peel.Mul(a[0], 2.0)}
	}, mk(0.01))
	pb := compiler.Build(both)
	want = both.Eval(mk(0.01))
	got = pb.Run([]*peel.Tensor{mk(0.01)}, []bool{true})
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("shared operand, result %d: %s\n%v", i, d, pb)
		}
	}
}

// TestOutputsRecycled: a run's own output buffers come from the
// backend's cache and go back to it once the results are unreachable,
// so later runs reuse them; an output sharing its buffer with another
// output (a view of it) is not recycled while either is reachable.
func TestOutputsRecycled(t *testing.T) {
	const n = 1 << 14 // 128 KiB of f64: a cached size
	x := peel.Arange(peel.Float64, 0, n, 1)
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		y := peel.Mul(a[0], peel.Scalar(2.0))
		return []*peel.Tensor{peel.Add(a[0], peel.Scalar(1.0)), y, peel.Reshape(y, 2, n/2)}
	}, x)
	p := compiler.Build(g)
	keep := p.Run([]*peel.Tensor{x}, nil)
	view := keep[2]
	keep = nil
	before := peel.MemoryStats()
	for range 20 {
		for range 4 {
			r := p.Run([]*peel.Tensor{x}, nil)
			if r[0].Float64s()[n-1] != n {
				t.Fatal("wrong result")
			}
		}
		runtime.GC()
		runtime.Gosched()
	}
	if after := peel.MemoryStats(); after.Hits <= before.Hits {
		t.Errorf("no output buffer was reused: %+v → %+v", before, after)
	}
	got := view.Float64s()
	for i, v := range got {
		if v != 2*float64(i) {
			t.Fatalf("the view output changed at %d: %v, want %v", i, v, 2*float64(i))
		}
	}
}

// TestDonatedOutputKeepsMemory: an output computed into a donated
// input's buffer keeps that buffer when the caller drops the input (as
// donation asks), however many results of its size are made after: the
// input's storage, whose buffer the cache recycles when it becomes
// unreachable, must live as long as the output.
func TestDonatedOutputKeepsMemory(t *testing.T) {
	const n = 1 << 14 // 128 KiB of f64: a cached size
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Mul(a[0], peel.Scalar(2.0))}
	}, peel.Zeros(peel.Float64, n))
	p := compiler.Build(g)
	x := peel.Add(peel.Arange(peel.Float64, 0, n, 1), peel.Scalar(0.0)) // an eager, cached result
	y := p.Run([]*peel.Tensor{x}, []bool{true})[0]
	x = nil
	_ = x
	var keep []*peel.Tensor
	for range 10 {
		runtime.GC()
		runtime.Gosched()
		// Any buffer of this size the cache holds now goes to these.
		keep = append(keep, peel.Mul(peel.Ones(peel.Float64, n), peel.Scalar(-1.0)))
	}
	for i, v := range y.Float64s() {
		if v != 2*float64(i) {
			t.Fatalf("output of a donated run at %d: %v, want %v", i, v, 2*float64(i))
		}
	}
	runtime.KeepAlive(keep)
}

// TestSplatInputs: a broadcast scalar given as an argument is read in
// place by a variant of the program built for it (no contiguous copy of
// one repeated value), through views, reductions, products, fused
// chains and as an output itself; past the bound on variants the
// argument is copied as before, with the same results.
func TestSplatInputs(t *testing.T) {
	const n = 4
	xs := make([]*peel.Tensor, n)
	for i := range xs {
		xs[i] = peel.FromFloat64s(seqValues(6, float64(i+1)), 2, 3)
	}
	g := trace(func(a []*peel.Tensor) []*peel.Tensor {
		t0 := peel.Transpose(a[0])                        // a view of an input
		r := peel.Reshape(a[1], 3, 2)                     // a reshape of one
		s := peel.Slice(a[2], 1, 1, 3, 1)                 // a slice of one
		e := peel.Tanh(peel.Add(peel.Mul(a[0], a[1]), 2)) // a fused chain
		d := peel.MatMul(t0, a[3])                        // a product
		return []*peel.Tensor{e, peel.Sum(peel.Mul(r, 3)), peel.Exp(s), d, a[3], t0}
	}, xs...)
	p := compiler.Build(g)
	// Every subset of the inputs as broadcast scalars: 15 variants, past
	// the bound of 8.
	for rep := range 2 {
		for mask := range 1 << n {
			args := make([]*peel.Tensor, n)
			for i := range args {
				args[i] = xs[i]
				if mask&(1<<i) != 0 {
					args[i] = peel.BroadcastTo(peel.Scalar(float64(i)-1.5), 2, 3)
				}
			}
			want := g.Eval(args...)
			got := p.Run(args, nil)
			for i := range want {
				if d := sameBits(got[i], want[i]); d != "" {
					t.Fatalf("rep %d, broadcast inputs %04b, output %d: %s", rep, mask, i, d)
				}
			}
			// The output that is an input is a snapshot: writing it
			// leaves the argument alone (a broadcast one, like the
			// argument, refuses the write).
			if mask&(1<<3) != 0 {
				continue
			}
			peel.AddInPlace(got[4], peel.Scalar(1.0))
			if d := sameBits(args[3], want[4]); d != "" {
				t.Fatalf("broadcast inputs %04b: writing the output changed the argument: %s", mask, d)
			}
		}
		if v := compiler.SplatVariants(p); v != 8 {
			t.Errorf("rep %d: %d variants for broadcast inputs, want the bound, 8", rep, v)
		}
	}
}
