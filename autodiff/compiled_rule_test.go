package autodiff_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Tests of the compiled graphs of composites' rules (compileRule,
// compiledRule.Eval). The oracle is Graph.Eval on
// the same arguments: the blocked evaluation runs the same kernels on the
// same elements, so the results must agree bit for bit (NaNs compare
// equal whatever their payload).

// ctData returns n random elements of dtype dt: floats in [-3, 3) with a
// few zeros of both signs, infinities and NaNs; integers in [-20, 20].
func ctData(rng *rand.Rand, dt backend.DType, n int) any {
	switch dt {
	case backend.Bool:
		d := make([]bool, n)
		for i := range d {
			d[i] = rng.IntN(2) == 0
		}
		return d
	case backend.Int64:
		d := make([]int64, n)
		for i := range d {
			d[i] = rng.Int64N(41) - 20
		}
		return d
	}
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e30, -40}
	d := make([]float64, n)
	for i := range d {
		d[i] = rng.Float64()*6 - 3
		if rng.IntN(100) == 0 {
			d[i] = specials[rng.IntN(len(specials))]
		}
	}
	if dt == backend.Float32 {
		f := make([]float32, n)
		for i, x := range d {
			f[i] = float32(x)
		}
		return f
	}
	return d
}

// ctScalar returns one random element of dtype dt as a one-element slice.
func ctScalar(rng *rand.Rand, dt backend.DType) any { return ctData(rng, dt, 1) }

// Input layouts for ctInput.
const (
	ctContiguous = iota // fresh contiguous buffer
	ctOffset            // contiguous view at a non-zero offset
	ctStrided           // non-contiguous view (transpose, or a stride-2 slice)
	ctLayouts
)

// ctInput returns a random tensor of shape (rank 1 or 2) and dtype dt
// with the given layout.
func ctInput(rng *rand.Rand, dt backend.DType, layout int, shape ...int) *interp.Tensor {
	n := backend.ShapeSize(shape)
	var x *interp.Tensor
	switch layout {
	case ctOffset:
		flat := interptest.Tensor(ctData(rng, dt, n+3), n+3)
		x = interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{3}, Limit: []int{n + 3}, Stride: []int{1}}, flat)
		x = interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
		if a, _ := interp.ArrayOf(x); !a.IsContiguous() || a.Offset != 3 {
			panic("ctInput: offset layout is not contiguous at offset 3")
		}
	case ctStrided:
		if len(shape) == 2 {
			tr := interptest.Tensor(ctData(rng, dt, n), shape[1], shape[0])
			x = interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, tr)
		} else {
			flat := interptest.Tensor(ctData(rng, dt, 2*n), 2*n)
			x = interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{0}, Limit: []int{2 * n}, Stride: []int{2}}, flat)
		}
		if a, _ := interp.ArrayOf(x); a.IsContiguous() && n > 1 {
			panic("ctInput: strided layout is contiguous")
		}
	default:
		x = interptest.Tensor(ctData(rng, dt, n), shape...)
	}
	return x
}

// ctCompare evaluates g with Graph.Eval and the compiled rule on args and
// fails unless the results agree bit for bit and the arguments are
// unchanged. It returns the compiled results.
func ctCompare(t interptest.Fataler, what string, g *interp.Graph, args ...*interp.Tensor) []*interp.Tensor {
	before := make([]any, len(args))
	for i, a := range args {
		before[i] = interptest.Host(a)
	}
	want := g.Eval(args...)
	got := autodiff.CompileGraph(g).Eval(args...)
	interptest.SameResults(t, what, got, want)
	for i, a := range args {
		if d := interptest.Diff(interptest.Host(a), before[i]); d != "" {
			t.Fatalf("%s: argument %d changed: %s", what, i, d)
		}
	}
	return got
}

// The probe is an elementwise primitive (x ↦ 2x, floats) whose cpu
// kernel records the size of every call: blocked evaluation calls it on
// blocks of interptest.Block elements, Graph.Eval once on the whole array.
var (
	ctProbeMu    sync.Mutex
	ctProbeSizes []int
	ctProbe      = func() *interp.Prim {
		p := interp.NewPrim("autodifftest.compile.probe", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
			return []interp.Aval{in[0]}
		})
		p.Elementwise = &interp.ElementwiseRule{Arity: 1, Accepts: func(d interp.DType) bool { return d.IsFloat() }}
		cpu.New().RegisterKernel(p.Op, func(_ any, in, out []backend.Array) {
			ctProbeMu.Lock()
			ctProbeSizes = append(ctProbeSizes, out[0].Size())
			ctProbeMu.Unlock()
			switch in[0].Buf.DType() {
			case backend.Float32:
				d, a := cpu.Float32s(out[0]), cpu.Float32s(in[0])
				for i := range d {
					d[i] = 2 * a[i]
				}
			default:
				d, a := cpu.Float64s(out[0]), cpu.Float64s(in[0])
				for i := range d {
					d[i] = 2 * a[i]
				}
			}
		})
		return p
	}()
)

// ctProbed runs f and returns the sizes the probe kernel was called
// with, sorted.
func ctProbed(f func()) []int {
	ctProbeMu.Lock()
	ctProbeSizes = nil
	ctProbeMu.Unlock()
	f()
	ctProbeMu.Lock()
	defer ctProbeMu.Unlock()
	s := slices.Clone(ctProbeSizes)
	sort.Ints(s)
	return s
}

// ctBlocks returns the sorted block sizes of an n-element blocked run.
func ctBlocks(n int) []int {
	var s []int
	if r := n % interptest.Block; r != 0 {
		s = append(s, r)
	}
	for range n / interptest.Block {
		s = append(s, interptest.Block)
	}
	return s
}

// ctOp is one operation of a random program.
type ctOp struct {
	name  string
	arity int
	bools bool // operands are bool values
	float bool // floats only
}

var ctOps = []ctOp{
	{name: "add", arity: 2}, {name: "sub", arity: 2}, {name: "mul", arity: 2}, {name: "div", arity: 2},
	{name: "max", arity: 2}, {name: "min", arity: 2}, {name: "neg", arity: 1}, {name: "abs", arity: 1},
	{name: "tanh", arity: 1, float: true}, {name: "exp", arity: 1, float: true},
	{name: "logistic", arity: 1, float: true}, {name: "sqrt", arity: 1, float: true},
	{name: "lt", arity: 2}, {name: "eq", arity: 2}, {name: "ge", arity: 2},
	{name: "not", arity: 1, bools: true}, {name: "and", arity: 2, bools: true},
	{name: "select", arity: 3},
}

func ctPrimOf(name string) *interp.Prim {
	p := interp.PrimByName(name)
	if p == nil {
		panic("no primitive " + name)
	}
	return p
}

var (
	ctSmallShapes = [][]int{{1}, {7}, {3, 5}, {100}, {interptest.Block}, {interptest.Min - 1}, {2, 70}}
	ctLargeShapes = [][]int{{interptest.Min}, {interptest.Min + 1}, {4, interptest.Block + 1}, {5*interptest.Block + 3}, {160, 128}}
)

// TestCompileRandomPrograms draws elementwise programs over one to three
// inputs (of every layout) and captured constants (full-size and splat),
// of float32, float64 or int64, at sizes below and above the fused
// threshold and several thread counts, and checks that the compiled rule
// agrees with Graph.Eval bit for bit.
func TestCompileRandomPrograms(t *testing.T) {
	defer cpu.SetThreads(0)
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom([]backend.DType{backend.Float64, backend.Float32, backend.Int64}).Draw(t, "dtype")
		var shape []int
		if rapid.IntRange(0, 2).Draw(t, "large") == 0 {
			shape = rapid.SampledFrom(ctLargeShapes).Draw(t, "shape")
		} else {
			shape = rapid.SampledFrom(ctSmallShapes).Draw(t, "shape")
		}
		cpu.SetThreads(rapid.SampledFrom([]int{0, 1, 3}).Draw(t, "threads"))
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		n := backend.ShapeSize(shape)

		var consts []*interp.Tensor
		for range rapid.IntRange(0, 2).Draw(t, "full consts") {
			consts = append(consts, interptest.Tensor(ctData(rng, dt, n), shape...))
		}
		for range rapid.IntRange(0, 2).Draw(t, "splat consts") {
			consts = append(consts, interptest.Splat(ctScalar(rng, dt), shape...))
		}
		nIn := rapid.IntRange(1, 3).Draw(t, "inputs")
		args := make([]*interp.Tensor, nIn)
		avals := make([]interp.Aval, nIn)
		for i := range args {
			args[i] = ctInput(rng, dt, rapid.IntRange(0, ctLayouts-1).Draw(t, "layout"), shape...)
			avals[i] = interp.AvalOf(args[i])
		}
		ops := make([]ctOp, 0, len(ctOps))
		for _, o := range ctOps {
			if !o.float || dt.IsFloat() {
				ops = append(ops, o)
			}
		}
		steps := rapid.IntRange(1, 8).Draw(t, "steps")
		g := interptest.Trace(func(in []*interp.Tensor) []*interp.Tensor {
			vals := append(slices.Clone(in), consts...)
			pick := func(bools bool, label string) *interp.Tensor {
				var idx []int
				for i, v := range vals {
					if (v.DType() == backend.Bool) == bools {
						idx = append(idx, i)
					}
				}
				if len(idx) == 0 {
					return nil
				}
				return vals[rapid.SampledFrom(idx).Draw(t, label)]
			}
			for range steps {
				o := rapid.SampledFrom(ops).Draw(t, "op")
				var operands []*interp.Tensor
				switch {
				case o.name == "select":
					operands = []*interp.Tensor{pick(true, "pred"), pick(false, "x"), pick(false, "y")}
				default:
					for range o.arity {
						operands = append(operands, pick(o.bools, "x"))
					}
				}
				if slices.Contains(operands, nil) {
					continue // no bool value yet
				}
				vals = append(vals, interp.Bind1(ctPrimOf(o.name), nil, operands...))
			}
			outs := []*interp.Tensor{vals[len(vals)-1]}
			if rapid.IntRange(0, 2).Draw(t, "first out") == 0 {
				outs[0] = vals[rapid.IntRange(0, len(vals)-1).Draw(t, "out")]
			}
			for range rapid.IntRange(0, 2).Draw(t, "more outs") {
				outs = append(outs, vals[rapid.IntRange(0, len(vals)-1).Draw(t, "out")])
			}
			return outs
		}, avals...)
		ctCompare(t, fmt.Sprintf("%v%v\n%v", dt, shape, g), g, args...)
	})
}

// TestCompileBlocks checks, with the probe kernel, that a compiled rule
// runs as a compiler program on concrete operands: its elementwise chain
// is a fused group that runs in blocks of 4096 elements (the last one
// shorter) at every size and thread count.
func TestCompileBlocks(t *testing.T) {
	defer cpu.SetThreads(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{interptest.Min - 1, interptest.Min, interptest.Min + 1, 5*interptest.Block + 3, 8 * interptest.Block} {
		for _, th := range []int{1, 3, 0} {
			cpu.SetThreads(th)
			c := interptest.Tensor(ctData(rng, backend.Float64, n), n)
			s := interptest.Splat([]float64{0.5}, n)
			g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				y := interptest.Bind(prims.Add, interptest.Bind(ctProbe, a[0]), c)
				return []*interp.Tensor{interptest.Bind(prims.Tanh, interptest.Bind(prims.Mul, y, s))}
			}, interptest.Aval(backend.Float64, n))
			x := interptest.Tensor(ctData(rng, backend.Float64, n), n)
			var got []*interp.Tensor
			sizes := ctProbed(func() { got = autodiff.CompileGraph(g).Eval(x) })
			if want := ctBlocks(n); !slices.Equal(sizes, want) {
				t.Errorf("n=%d threads=%d: probe calls of sizes %v, want %v", n, th, sizes, want)
			}
			interptest.SameResults(t, fmt.Sprintf("n=%d threads=%d", n, th), got, g.Eval(x))
		}
	}
}

// TestCompileThreadCounts checks that the results do not depend on the
// thread count (1, 3 and the default) for float32 and float64.
func TestCompileThreadCounts(t *testing.T) {
	defer cpu.SetThreads(0)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 6*interptest.Block + 17
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		x := ctInput(rng, dt, ctContiguous, n)
		y := ctInput(rng, dt, ctStrided, n)
		g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			p := interptest.Bind(prims.Exp, interptest.Bind(prims.Neg, interptest.Bind(prims.Mul, a[0], a[0])))
			return []*interp.Tensor{interptest.Bind(prims.Max, interptest.Bind(prims.Tanh, a[1]), p), interptest.Bind(prims.Logistic, interptest.Bind(prims.Sub, a[0], a[1]))}
		}, interp.AvalOf(x), interp.AvalOf(y))
		var first []*interp.Tensor
		for _, th := range []int{1, 3, 0} {
			cpu.SetThreads(th)
			got := ctCompare(t, fmt.Sprintf("%v threads=%d", dt, th), g, x, y)
			if first == nil {
				first = got
			} else {
				interptest.SameResults(t, fmt.Sprintf("%v threads=%d vs 1", dt, th), got, first)
			}
		}
	}
}

// TestCompileOutputsAliasing covers outputs that are an input, a
// constant (full or splat) or the same var twice, in a fused graph.
func TestCompileOutputsAliasing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := 5*interptest.Block + 1
	c := interptest.Tensor(ctData(rng, backend.Float64, n), n)
	s := interptest.Splat([]float64{-1.25}, n)
	g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := interptest.Bind(prims.Add, interptest.Bind(prims.Mul, a[0], c), s)
		z := interptest.Bind(prims.Lt, y, a[1])
		return []*interp.Tensor{a[0], c, y, y, s, z, a[1], y}
	}, interptest.Aval(backend.Float64, n), interptest.Aval(backend.Float64, n))
	if len(g.Consts) != 2 || len(g.Eqns) != 3 {
		t.Fatalf("unexpected graph:\n%v", g)
	}
	x := ctInput(rng, backend.Float64, ctContiguous, n)
	w := ctInput(rng, backend.Float64, ctStrided, n)
	got := ctCompare(t, "aliasing outputs", g, x, w)
	// An output that is an input is a snapshot of the argument (its
	// values; a write into it leaves the argument unchanged).
	xBefore := x.Float64s()
	interp.Bind(prims.AddInPlace, nil, got[0], interptest.Bind(prims.Add, got[0], got[0]))
	if d := interptest.Diff(interptest.Host(x), xBefore); d != "" {
		t.Errorf("writing an output that is an input changed the argument: %s", d)
	}
	// An output that is a constant is a snapshot of it: the constant's
	// values, in a box of its own, so writing into it leaves the graph
	// (and the tensor the constant was traced from) unchanged.
	want := g.Eval(x, w)
	for _, r := range [][]*interp.Tensor{got, want} {
		for _, i := range []int{1, 4} {
			for _, k := range g.ConstVals {
				if r[i] == k {
					t.Errorf("output %d is the graph's constant box itself", i)
				}
			}
		}
	}
	cBefore := c.Float64s()
	interp.Bind(prims.AddInPlace, nil, got[1], interptest.Bind(prims.Add, got[1], got[1]))
	interp.Bind(prims.AddInPlace, nil, want[1], interptest.Bind(prims.Add, want[1], want[1]))
	if d := interptest.Diff(interptest.Host(c), cBefore); d != "" {
		t.Errorf("writing a constant output changed the traced tensor: %s", d)
	}
	interptest.SameResults(t, "after writing constant outputs", autodiff.CompileGraph(g).Eval(x, w), g.Eval(x, w))
	if d := interptest.Diff(interptest.Host(g.Eval(x, w)[1]), cBefore); d != "" {
		t.Errorf("writing a constant output changed the graph: %s", d)
	}

	// Only inputs and constants: no equations.
	id := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor { return []*interp.Tensor{a[0], c, a[0]} }, interptest.Aval(backend.Float64, n))
	got = ctCompare(t, "identity", id, x)
	interp.Bind(prims.AddInPlace, nil, got[2], interptest.Bind(prims.Add, got[2], got[2]))
	if d := interptest.Diff(interptest.Host(x), xBefore); d != "" {
		t.Errorf("writing an identity graph's output changed its argument: %s", d)
	}
	if d := interptest.Diff(interptest.Host(got[0]), xBefore); d != "" {
		t.Errorf("writing one output of an identity graph changed another: %s", d)
	}
}

// TestCompileStridedInputs checks that transposed, sliced and offset
// inputs, and splat inputs, are read correctly by the blocked evaluation.
func TestCompileStridedInputs(t *testing.T) {
	defer cpu.SetThreads(0)
	rng := rand.New(rand.NewPCG(7, 8))
	shape := []int{160, 130} // 20800 elements: five blocks and a partial one
	for _, th := range []int{1, 3} {
		cpu.SetThreads(th)
		for _, dt := range []backend.DType{backend.Float32, backend.Float64, backend.Int64} {
			args := []*interp.Tensor{
				ctInput(rng, dt, ctStrided, shape...),
				ctInput(rng, dt, ctOffset, shape...),
				interptest.Splat(ctScalar(rng, dt), shape...),
				ctInput(rng, dt, ctContiguous, shape...),
			}
			avals := make([]interp.Aval, len(args))
			for i, a := range args {
				avals[i] = interp.AvalOf(a)
			}
			g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				y := interptest.Bind(prims.Sub, interptest.Bind(prims.Mul, a[0], a[1]), a[2])
				return []*interp.Tensor{interptest.Bind(prims.Max, y, a[3]), interptest.Bind(prims.Add, a[2], a[0])}
			}, avals...)
			ctCompare(t, fmt.Sprintf("%v threads=%d", dt, th), g, args...)
			// A float64 oracle for the first element of the transposed input.
			if dt == backend.Float64 {
				got := autodiff.CompileGraph(g).Eval(args...)[1].Float64s()
				x0 := interptest.Host(args[0]).([]float64)
				s := interptest.Host(args[2]).([]float64)
				for i := range got {
					if w := s[i] + x0[i]; math.Float64bits(w) != math.Float64bits(got[i]) && !(math.IsNaN(w) && math.IsNaN(got[i])) {
						t.Fatalf("threads=%d: element %d = %v, want %v", th, i, got[i], w)
					}
				}
			}
		}
	}
}

// TestCompileFallback checks graphs whose probe the compiler cannot fuse
// with its neighbours (the probe sees the whole array), and graphs it
// fuses (broadcasts and selects join the group: the probe sees blocks),
// against Graph.Eval.
func TestCompileFallback(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n := 5 * interptest.Block
	x := interptest.Tensor(ctData(rng, backend.Float64, n), n)
	m := interptest.Tensor(ctData(rng, backend.Float64, 128*160), 128, 160)
	cases := []struct {
		name  string
		g     *interp.Graph
		args  []*interp.Tensor
		sizes []int
		fused bool // the compiled rule runs the probe in blocks
	}{
		{
			name: "reduce_sum",
			g: interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				y := interptest.Bind(ctProbe, a[0])
				return []*interp.Tensor{y, interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, y)}
			}, interp.AvalOf(x)),
			args: []*interp.Tensor{x}, sizes: []int{n},
		},
		{
			name: "dot_general",
			g: interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				d := interp.Bind1(prims.DotGeneral, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}}, a[0], a[0])
				return []*interp.Tensor{interptest.Bind(ctProbe, d)}
			}, interp.AvalOf(m)),
			args: []*interp.Tensor{m}, sizes: []int{128 * 128},
		},
		{
			name: "mismatched shapes",
			g: interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				return []*interp.Tensor{interptest.Bind(ctProbe, a[0]), interptest.Bind(ctProbe, a[1])}
			}, interp.AvalOf(x), interp.AvalOf(m)),
			args: []*interp.Tensor{x, m}, sizes: []int{n, 128 * 160},
		},
		{
			name: "output of another shape",
			g: interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				return []*interp.Tensor{interptest.Bind(ctProbe, a[0]), a[1]}
			}, interp.AvalOf(x), interp.AvalOf(m)),
			args: []*interp.Tensor{x, m}, sizes: []int{n},
		},
		{
			name: "broadcast in graph",
			g: interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				b := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{n}, Dims: []int{}}, a[1])
				return []*interp.Tensor{interptest.Bind(ctProbe, interptest.Bind(prims.Add, a[0], b))}
			}, interp.AvalOf(x), interptest.Aval(backend.Float64)),
			args: []*interp.Tensor{x, interptest.Tensor([]float64{3})}, sizes: []int{n}, fused: true,
		},
		{
			name: "select",
			g: interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				y := interptest.Bind(ctProbe, a[0])
				return []*interp.Tensor{interp.Bind1(prims.Where, nil, interptest.Bind(prims.Lt, a[0], y), a[0], y)}
			}, interp.AvalOf(x)),
			args: []*interp.Tensor{x}, sizes: []int{n}, fused: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sizes := ctProbed(func() { ctCompare(t, c.name, c.g, c.args...) })
			// ctCompare runs Graph.Eval then the compiled rule: the
			// whole arrays, then the blocks or the whole arrays again.
			compiled := c.sizes
			if c.fused {
				compiled = nil
				for _, n := range c.sizes {
					compiled = append(compiled, ctBlocks(n)...)
				}
			}
			want := slices.Concat(c.sizes, compiled)
			sort.Ints(want)
			if !slices.Equal(sizes, want) {
				t.Errorf("probe calls of sizes %v, want %v", sizes, want)
			}
		})
	}
}

// TestCompileErrors checks that bad arguments fail as with Graph.Eval.
func TestCompileErrors(t *testing.T) {
	n := interptest.Min
	x := interptest.Tensor(make([]float64, n), n)
	g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{interptest.Bind(prims.Add, a[0], a[1])}
	}, interp.AvalOf(x), interp.AvalOf(x))
	c := autodiff.CompileGraph(g)
	if autodiff.GraphOf(c) != g {
		t.Errorf("compiledGraph.graph is not the graph")
	}
	for _, args := range [][]*interp.Tensor{
		{x},
		{x, x, x},
		{x, nil},
		{x, interptest.Tensor(make([]float64, n-1), n-1)},
		{x, interptest.Tensor(make([]float32, n), n)},
		{x, interptest.Tensor(make([]float64, n), n/2, 2)},
	} {
		want := interp.Catch(func() { g.Eval(args...) })
		got := interp.Catch(func() { c.Eval(args...) })
		if want == nil || got == nil || siteless(got) != siteless(want) {
			t.Errorf("%d arguments: the compiled rule error %v, Graph.Eval error %v", len(args), got, want)
		}
	}
}

// ctFail is an elementwise primitive whose kernel panics with *Error on
// an element equal to 13.
var ctFail = func() *interp.Prim {
	p := interp.NewPrim("autodifftest.compile.fail", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{in[0]}
	})
	p.Elementwise = &interp.ElementwiseRule{Arity: 1, Accepts: func(d interp.DType) bool { return d == backend.Float64 }}
	cpu.New().RegisterKernel(p.Op, func(_ any, in, out []backend.Array) {
		d, a := cpu.Float64s(out[0]), cpu.Float64s(in[0])
		for i, v := range a {
			if v == 13 {
				interp.Panicf("element %d is 13", i)
			}
			d[i] = v
		}
	})
	return p
}()

// TestCompileKernelPanic checks that a kernel's panic in a worker
// reaches the caller of the compiled rule, at every thread count.
func TestCompileKernelPanic(t *testing.T) {
	defer cpu.SetThreads(0)
	n := 7*interptest.Block + 5
	for _, th := range []int{1, 3, 0} {
		cpu.SetThreads(th)
		for _, at := range []int{0, 3 * interptest.Block, n - 1} {
			data := make([]float64, n)
			data[at] = 13
			x := interptest.Tensor(data, n)
			g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				return []*interp.Tensor{interptest.Bind(prims.Neg, interptest.Bind(ctFail, interptest.Bind(prims.Abs, a[0])))}
			}, interp.AvalOf(x))
			err := interp.Catch(func() { autodiff.CompileGraph(g).Eval(x) })
			var e *interp.Error
			if !errors.As(err, &e) || !strings.Contains(e.Error(), "is 13") {
				t.Errorf("threads=%d at=%d: got %v, want the kernel's *interp.Error", th, at, err)
			}
		}
	}
}

// ctNoKernel is an elementwise primitive that no backend has a kernel
// for.
var ctNoKernel = func() *interp.Prim {
	p := interp.NewPrim("autodifftest.compile.nokernel", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{in[0]}
	})
	p.Elementwise = &interp.ElementwiseRule{Arity: 1, Accepts: func(d interp.DType) bool { return d.IsFloat() }}
	return p
}()

// TestCompileNoKernel checks that a primitive without a kernel fails
// with the same *Error under the compiled rule as under Graph.Eval.
func TestCompileNoKernel(t *testing.T) {
	for _, n := range []int{10, interptest.Min, 5*interptest.Block + 1} {
		x := interptest.Tensor(make([]float64, n), n)
		g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			return []*interp.Tensor{interptest.Bind(ctNoKernel, interptest.Bind(prims.Exp, a[0]))}
		}, interp.AvalOf(x))
		want := interp.Catch(func() { g.Eval(x) })
		var got error
		func() {
			defer func() {
				if r := recover(); r != nil {
					got = fmt.Errorf("non-*interp.Error panic: %v", r)
				}
			}()
			got = interp.Catch(func() { autodiff.CompileGraph(g).Eval(x) })
		}()
		if want == nil || got == nil || siteless(got) != siteless(want) {
			t.Errorf("n=%d: the compiled rule error %v, Graph.Eval error %v", n, got, want)
		}
	}
}

// TestCompileTracers checks that the compiled rule on tracers (arguments or
// constants of an enclosing trace) falls back to Graph.Eval: the
// enclosing trace records the same equations.
func TestCompileTracers(t *testing.T) {
	n := 5*interptest.Block + 7
	rng := rand.New(rand.NewPCG(11, 12))
	c := interptest.Tensor(ctData(rng, backend.Float64, n), n)
	av := interptest.Aval(backend.Float64, n)
	inner := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := interptest.Bind(prims.Tanh, interptest.Bind(prims.Mul, a[0], c))
		return []*interp.Tensor{interptest.Bind(prims.Add, y, a[1]), y}
	}, av, av)
	comp := autodiff.CompileGraph(inner)
	x := interptest.Tensor(ctData(rng, backend.Float64, n), n)
	outer := func(eval func(args ...*interp.Tensor) []*interp.Tensor, mixed bool) *interp.Graph {
		return interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			second := a[0]
			if mixed {
				second = x // a concrete argument next to a tracer
			}
			r := eval(interptest.Bind(prims.Neg, a[0]), second)
			return []*interp.Tensor{interptest.Bind(prims.Exp, r[0]), r[1]}
		}, av)
	}
	for _, mixed := range []bool{false, true} {
		want := outer(inner.Eval, mixed)
		got := outer(comp.Eval, mixed)
		if got.String() != want.String() {
			t.Errorf("mixed=%v: enclosing trace of the compiled rule:\n%v\nwant (Graph.Eval):\n%v", mixed, got, want)
		}
		if len(got.Eqns) != 5 {
			t.Errorf("mixed=%v: enclosing graph has %d equations, want 5:\n%v", mixed, len(got.Eqns), got)
		}
		ctCompare(t, "outer graph", got, x)
	}

	// A graph whose constant is a tracer of an enclosing trace, evaluated
	// there on concrete arguments.
	var want, got *interp.Graph
	for _, compiled := range []bool{false, true} {
		g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			k := interptest.Bind(prims.Exp, a[0])
			in := interptest.Trace(func(b []*interp.Tensor) []*interp.Tensor {
				return []*interp.Tensor{interptest.Bind(prims.Mul, b[0], k)}
			}, av)
			eval := in.Eval
			if compiled {
				eval = autodiff.CompileGraph(in).Eval
			}
			return eval(x)
		}, av)
		if compiled {
			got = g
		} else {
			want = g
		}
	}
	if got.String() != want.String() || len(got.Eqns) != 2 {
		t.Errorf("traced constant: enclosing trace of the compiled rule:\n%v\nwant (Graph.Eval, 2 equations):\n%v", got, want)
	}
}

// TestCompileConcurrent evaluates one compiled graph from several
// goroutines at once (compiled rules are shared); run with -race.
func TestCompileConcurrent(t *testing.T) {
	defer cpu.SetThreads(0)
	cpu.SetThreads(3)
	rng := rand.New(rand.NewPCG(13, 14))
	n := 6*interptest.Block + 9
	c := interptest.Splat([]float32{0.75}, n)
	g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := interptest.Bind(prims.Tanh, interptest.Bind(prims.Add, interptest.Bind(prims.Mul, a[0], c), a[1]))
		return []*interp.Tensor{interptest.Bind(prims.Mul, y, y), interptest.Bind(prims.Gt, y, a[1])}
	}, interptest.Aval(backend.Float32, n), interptest.Aval(backend.Float32, n))
	comp := autodiff.CompileGraph(g)
	const workers = 4
	var args [workers][2]*interp.Tensor
	var want [workers][]*interp.Tensor
	for w := range workers {
		args[w] = [2]*interp.Tensor{ctInput(rng, backend.Float32, ctContiguous, n), ctInput(rng, backend.Float32, ctOffset, n)}
		want[w] = g.Eval(args[w][0], args[w][1])
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				got := comp.Eval(args[w][0], args[w][1])
				for i := range got {
					if d := interptest.Diff(interptest.Host(got[i]), interptest.Host(want[w][i])); d != "" {
						errs <- fmt.Errorf("goroutine %d result %d: %s", w, i, d)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// siteless returns err's message without the user's call site, which
// differs between two calls on different lines.
func siteless(err error) string {
	var e *interp.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	c := *e
	c.File, c.Line = "", 0
	return c.Error()
}

// ctWhole is a composite recorded whole (Prim.Whole) whose decomposition
// is impl; kernel, when not nil, is its CPU kernel.
func ctWhole(name string, impl func(a []*interp.Tensor) *interp.Tensor, kernel func(out []backend.Array)) *interp.Prim {
	p := interp.NewPrim(name, interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{in[0]}
	})
	p.Impl = func(_ any, a []*interp.Tensor) []*interp.Tensor { return []*interp.Tensor{impl(a)} }
	p.Whole = true
	if kernel != nil {
		cpu.New().RegisterKernel(p.Op, func(_ any, _, out []backend.Array) { kernel(out) })
	}
	return p
}

var (
	ctTanhMul = ctWhole("autodifftest.whole.tanhmul", func(a []*interp.Tensor) *interp.Tensor {
		return interptest.Bind(prims.Mul, interptest.Bind(prims.Tanh, a[0]), a[1])
	}, nil)
	ctOuter = ctWhole("autodifftest.whole.outer", func(a []*interp.Tensor) *interp.Tensor {
		return interptest.Bind(prims.Add, interptest.Bind(ctTanhMul, a[0], a[1]), a[0])
	}, nil)
	ctKernel = ctWhole("autodifftest.whole.kernel", func(a []*interp.Tensor) *interp.Tensor {
		return interptest.Bind(prims.Copy, a[0])
	}, func(out []backend.Array) {
		d := cpu.Float64s(out[0])
		for i := range d {
			d[i] = 42
		}
	})
)

// TestCompileWholeComposite checks that a graph with a composite
// recorded whole (one equation, no kernel: it decomposes when evaluated)
// gives Graph.Eval's results, and that a whole composite with a kernel
// runs its kernel (not fused, but the same result).
func TestCompileWholeComposite(t *testing.T) {
	for _, n := range []int{3, interptest.Min + 3} {
		x := ctInput(rand.New(rand.NewPCG(1, uint64(n))), backend.Float64, ctContiguous, n)
		y := ctInput(rand.New(rand.NewPCG(2, uint64(n))), backend.Float64, ctContiguous, n)
		for _, p := range []*interp.Prim{ctTanhMul, ctOuter} {
			g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor { return []*interp.Tensor{interptest.Bind(p, a[0], a[1])} }, interp.AvalOf(x), interp.AvalOf(y))
			if len(g.Eqns) != 1 || g.Eqns[0].Prim != p {
				t.Fatalf("%s: the trace is not one equation:\n%v", p.Name, g)
			}
			interptest.SameResults(t, fmt.Sprintf("%s n=%d compiled", p.Name, n), autodiff.CompileGraph(g).Eval(x, y), g.Eval(x, y))
		}
		g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			return []*interp.Tensor{interptest.Bind(prims.Neg, interptest.Bind(ctKernel, a[0]))}
		}, interp.AvalOf(x))
		for i, v := range autodiff.CompileGraph(g).Eval(x)[0].Float64s() {
			if v != -42 {
				t.Fatalf("kernel n=%d: element %d = %v, want -42", n, i, v)
			}
		}
	}
}

// TestCompileConstantsByValue: a compiled graph keeps the values its
// constants had when traced, whatever is written into the traced-from
// tensors later, directly, through a view, or through another box
// sharing the memory (issue 11, D6).
func TestCompileConstantsByValue(t *testing.T) {
	f64 := interptest.Aval(backend.Float64, 3)
	x := interptest.Tensor([]float64{1, 2, 3}, 3)
	for name, write := range interptest.Writes() {
		t.Run(name, func(t *testing.T) {
			w := interptest.Tensor([]float64{1, 1, 1}, 3)
			g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				return []*interp.Tensor{interptest.Bind(prims.Mul, a[0], w)}
			}, f64)
			write(w)
			interptest.SameResults(t, "the compiled rule after the write", autodiff.CompileGraph(g).Eval(x), []*interp.Tensor{interptest.Tensor([]float64{1, 2, 3}, 3)})
			interptest.SameResults(t, "the written tensor", []*interp.Tensor{w}, []*interp.Tensor{interptest.Tensor([]float64{10, 10, 10}, 3)})
		})
	}
}

// ctScaled is a composite with parameters that are not a RuleKeyer (a
// scale s: sin(x)·s): its derivatives are not cached, so each call's
// derivative is its own parameters'.
var ctScaled = func() *interp.Prim {
	p := interp.NewPrim("autodifftest.whole.scaled", interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{in[0]}
	})
	p.Impl = func(params any, a []*interp.Tensor) []*interp.Tensor {
		s := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: a[0].Shape(), Dims: []int{}},
			interptest.Tensor([]float64{params.(float64)}))
		return []*interp.Tensor{interptest.Bind(prims.Mul, interptest.Bind(prims.Sin, a[0]), s)}
	}
	p.Whole = true
	return p
}()

// TestCompositeWithParamsNotCached: the JVP and the transpose of a
// composite whose parameters name no rule (not a RuleKeyer) follow each
// call's parameters: s·cos(x)·t at s = 2 and then s = 3, never the first
// call's rule reused.
func TestCompositeWithParamsNotCached(t *testing.T) {
	x := interptest.Tensor([]float64{0.5, -1, 2}, 3)
	tan := interptest.Tensor([]float64{1, 2, -1}, 3)
	for _, s := range []float64{2, 3, 2} {
		f := func(a []*interp.Tensor) []*interp.Tensor {
			return interp.Bind(ctScaled, s, a[0])
		}
		_, touts := autodiff.JVP("jvp", f, []*interp.Tensor{x}, []*interp.Tensor{tan})
		want := make([]float64, 3)
		for i, xv := range []float64{0.5, -1, 2} {
			want[i] = s * math.Cos(xv) * []float64{1, 2, -1}[i]
		}
		if d := interptest.Diff(interptest.Host(touts[0]), want); d != "" {
			// Within rounding: cos and the product's order may differ.
			got := interptest.Host(touts[0]).([]float64)
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-15 {
					t.Fatalf("s=%v: JVP %v, want %v", s, got, want)
				}
			}
		}
		lin := autodiff.Linearize("vjp", f, []*interp.Tensor{x})
		ct := lin.Transpose([]*interp.Tensor{interptest.Tensor([]float64{1, 1, 1}, 3)})
		got := interptest.Host(ct[0]).([]float64)
		for i, xv := range []float64{0.5, -1, 2} {
			if w := s * math.Cos(xv); math.Abs(got[i]-w) > 1e-15 {
				t.Fatalf("s=%v: VJP %v, want s·cos(x) = %v at %d", s, got, w, i)
			}
		}
		lin.Release()
	}
}
