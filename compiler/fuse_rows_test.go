package compiler_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// layerNorm is a layer norm over the last axis written with peel ops:
// mean, centered values, variance, rsqrt, then scale and shift by row
// vectors broadcast along the leading axes.
func layerNorm(x, gamma, beta *peel.Tensor) *peel.Tensor {
	m := peel.Keep(peel.Mean, x, -1)
	d := peel.Sub(x, m)
	v := peel.Keep(peel.Mean, peel.Mul(d, d), -1)
	y := peel.Mul(d, peel.Rsqrt(peel.Add(v, 1e-5)))
	return peel.Add(peel.Mul(y, gamma), beta)
}

// rowCases are the per-row programs that fuse into one group: f takes
// x and two vectors of x's last axis.
var rowCases = []struct {
	name string
	f    func(x, a, b *peel.Tensor) []*peel.Tensor
	// instrs is the program's length when fused (optimized graph).
	instrs int
}{
	{"softmax", func(x, a, b *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Softmax(x, -1)} }, 1},
	{"log_softmax", func(x, a, b *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.LogSoftmax(x, -1)} }, 1},
	{"layer_norm", func(x, a, b *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{layerNorm(x, a, b)} }, 1},
	{"logsumexp", func(x, a, b *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.LogSumExp(x, -1)} }, 1},
	{"mean", func(x, a, b *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Mean(peel.Exp(x), -1)} }, 1},
	{"mean_centered", func(x, a, b *peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Sub(x, peel.Keep(peel.Mean, x, -1))}
	}, 1},
	{"var_and_max", func(x, a, b *peel.Tensor) []*peel.Tensor {
		// Two row results and a full one, all outputs.
		e := peel.Tanh(x)
		return []*peel.Tensor{peel.Var(e, -1), peel.Max(e, -1), peel.Mul(e, a)}
	}, 1},
	{"bias_gelu", func(x, a, b *peel.Tensor) []*peel.Tensor {
		h := peel.Add(x, a)
		return []*peel.Tensor{peel.Mul(peel.Mul(h, 0.5), peel.Add(peel.Tanh(peel.Mul(h, 0.79788456)), 1.0))}
	}, 1},
	{"row_scale_of_input", func(x, a, b *peel.Tensor) []*peel.Tensor {
		// A per-row value from outside the group (a kernel before it).
		s := peel.Keep(peel.Sum, peel.Transpose(peel.Transpose(x)), -1)
		return []*peel.Tensor{peel.Div(peel.Exp(x), peel.Add(s, 3.0))}
	}, 1},
}

// TestRowGroups: softmax, log-softmax, layer norm, means, variances and
// row-vector broadcasts are one fused group (rows of at most a block),
// equal to Graph.Eval bit for bit, at every thread count, with and
// without the default passes; longer rows do not fuse by rows and stay
// exact.
func TestRowGroups(t *testing.T) {
	shapes := [][]int{{3, 5}, {1, 7}, {7, 1}, {6}, {0, 4}, {4096}, {200, 130}, {50, 4096}, {2, 3, 1000}, {300, 257}, {5, 9, 64}, {3, 4097}}
	for _, c := range rowCases {
		for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
			for _, shape := range shapes {
				n := 1
				for _, d := range shape {
					n *= d
				}
				k := shape[len(shape)-1]
				x := peel.AsType(peel.FromFloat64s(seqValues(n, 1), shape...), dt)
				a := peel.AsType(peel.FromFloat64s(seqValues(k, 0.5), k), dt)
				b := peel.AsType(peel.FromFloat64s(seqValues(k, -0.25), k), dt)
				args := []*peel.Tensor{x, a, b}
				g := trace(func(in []*peel.Tensor) []*peel.Tensor { return c.f(in[0], in[1], in[2]) }, args...)
				og, _ := compiler.Optimize(g, compiler.DefaultPasses(), false)
				name := fmt.Sprintf("%s/%v%v", c.name, dt, shape)
				t.Run(name, func(t *testing.T) {
					for _, threads := range []int{1, 2, 3} {
						old := cpu.Threads()
						cpu.SetThreads(threads)
						checkProgram(t, g, args)
						p := checkProgram(t, og, args)
						cpu.SetThreads(old)
						if n == 0 || k > 4096 || k == 1 {
							continue
						}
						st := p.Stats()
						if st.Instructions != c.instrs || st.Fused != 1 || st.ArenaBytes != 0 {
							t.Fatalf("stats %+v, want one fused group\n%v\n%v", st, og, p)
						}
					}
				})
			}
		}
	}
}

// TestRowGroupString: the printed program shows a group run by rows,
// its reductions and its broadcast operands (softmax expanded by
// ExpandRowOps: built from the graph as traced, it is one kernel).
func TestRowGroupString(t *testing.T) {
	x := peel.FromFloat64s(seqValues(12, 1), 3, 4)
	v := peel.FromFloat64s(seqValues(4, 2), 4)
	g := trace(func(in []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Mul(peel.Softmax(in[0], -1), in[1])}
	}, x, v)
	s := compiler.Build(compiler.ExpandRowOps(g)).String()
	for _, want := range []string{"fused[4] over [3,4] by rows", "reduce_max[rows of 4]", "reduce_sum[rows of 4]", "[per row]", "[per column]"} {
		if !strings.Contains(s, want) {
			t.Errorf("String lacks %q:\n%s", want, s)
		}
	}
	// The group's line names what it writes, its one result, and none of
	// the values that live in blocks.
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, "fused[") {
			continue
		}
		_, rest, _ := strings.Cut(line, " -> ")
		outs, _, _ := strings.Cut(rest, " <- ")
		if f := strings.Fields(outs); len(f) != 1 || !strings.HasSuffix(f[0], "@out") {
			t.Errorf("the fused group writes %q, want its one result:\n%s", outs, s)
		}
	}
}

// TestRowGroupsStrided: transposed inputs and views of a group's values
// read by later equations.
func TestRowGroupsStrided(t *testing.T) {
	x := peel.FromFloat64s(seqValues(40*70, 1), 40, 70)
	g := trace(func(in []*peel.Tensor) []*peel.Tensor {
		s := peel.Softmax(in[0], -1)
		// A row result read through a transpose closes the group.
		m := peel.Keep(peel.Max, s, -1)
		return []*peel.Tensor{s, peel.Mul(peel.Transpose(s), peel.Transpose(m)), peel.Softmax(peel.Transpose(in[0]), -1)}
	}, x)
	checkProgram(t, g, []*peel.Tensor{x})
	checkProgram(t, g, []*peel.Tensor{peel.Transpose(peel.FromFloat64s(seqValues(40*70, 2), 70, 40))})
	// Per-row values and vectors from the inputs, broadcast.
	r := peel.FromFloat64s(seqValues(40, 3), 40)
	v := peel.FromFloat64s(seqValues(70, 4), 70)
	g = trace(func(in []*peel.Tensor) []*peel.Tensor {
		e := peel.Sub(peel.Exp(in[0]), peel.Reshape(in[1], 40, 1))
		return []*peel.Tensor{peel.Div(peel.Mul(e, in[2]), peel.Keep(peel.Sum, e, -1))}
	}, x, r, v)
	p := checkProgram(t, g, []*peel.Tensor{x, r, v})
	if st := p.Stats(); st.Instructions != 1 {
		t.Errorf("stats %+v, want one fused group\n%v", st, p)
	}
}

// TestRowGroupsConcurrent: one softmax/layer-norm program, large enough
// to run blocks on several workers, shared by 8 goroutines (run with
// -race).
func TestRowGroupsConcurrent(t *testing.T) {
	x := peel.AsType(peel.FromFloat64s(seqValues(512*256, 1), 512, 256), peel.Float32)
	a := peel.AsType(peel.FromFloat64s(seqValues(256, 0.5), 256), peel.Float32)
	g := trace(func(in []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Softmax(in[0], -1), layerNorm(in[0], in[1], in[1])}
	}, x, a)
	g, _ = compiler.Optimize(g, compiler.DefaultPasses(), false)
	want := g.Eval(x, a)
	p := compiler.Build(g)
	old := cpu.Threads()
	cpu.SetThreads(4)
	defer cpu.SetThreads(old)
	checkConcurrentRuns(t, p, []*peel.Tensor{x, a}, want, 5)
}

// TestExpandRowOps: softmax and log_softmax along the last axis with rows
// of at most a block are expanded into their definition, which the
// program fuses by rows, computing the primitive's kernel bits (rows of
// every length class of the kernels' loops, edge values); other axes and
// longer rows stay one kernel.
func TestExpandRowOps(t *testing.T) {
	ops := []struct {
		name string
		f    func(x *peel.Tensor, axis int) *peel.Tensor
	}{{"softmax", peel.Softmax}, {"log_softmax", peel.LogSoftmax}}
	for _, op := range ops {
		for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
			for _, c := range []struct {
				shape    []int
				axis     int
				expanded bool
			}{
				{[]int{3, 5}, -1, true}, {[]int{4, 16}, -1, true}, {[]int{4, 24}, -1, true}, {[]int{2, 31}, -1, true},
				{[]int{5, 33}, -1, true}, {[]int{2, 3, 200}, -1, true}, {[]int{7}, 0, true}, {[]int{2, 4096}, 1, true},
				{[]int{2, 4097}, 1, false}, {[]int{6, 5}, 0, false}, {[]int{2, 3, 4}, 1, false},
			} {
				n := 1
				for _, d := range c.shape {
					n *= d
				}
				vals := seqValues(n, 3)
				if n > 8 {
					vals[1], vals[5], vals[7] = math.Inf(-1), 80, -1e30
				}
				x := peel.AsType(peel.FromFloat64s(vals, c.shape...), dt)
				g := trace(func(in []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Mul(op.f(in[0], c.axis), 2.0)} }, x)
				eg := compiler.ExpandRowOps(g)
				if got := count(eg, op.name) == 0; got != c.expanded {
					t.Fatalf("%s %v%v axis %d: expanded %v, want %v:\n%v", op.name, dt, c.shape, c.axis, got, c.expanded, eg)
				}
				want := g.Eval(x)
				got := compiler.Build(eg).Run([]*peel.Tensor{x}, nil)
				if d := sameBits(got[0], want[0]); d != "" {
					t.Fatalf("%s %v%v axis %d: %s\n%v", op.name, dt, c.shape, c.axis, d, eg)
				}
			}
		}
	}
}

// TestExpandRowOpsNorms: layer_norm and rms_norm over the last axis are
// expanded and fused by rows with a scale and a shift after them,
// computing the kernels' bits for both results; over two axes they stay
// one kernel.
func TestExpandRowOpsNorms(t *testing.T) {
	for _, rms := range []bool{false, true} {
		name := "layer_norm"
		if rms {
			name = "rms_norm"
		}
		for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
			for _, c := range []struct {
				shape    []int
				k        int
				expanded bool
			}{
				{[]int{3, 5}, 1, true}, {[]int{4, 16}, 1, true}, {[]int{2, 31}, 1, true}, {[]int{5, 33}, 1, true},
				{[]int{2, 3, 200}, 1, true}, {[]int{7}, 1, true}, {[]int{2, 4096}, 1, true},
				{[]int{2, 4097}, 1, false}, {[]int{2, 3, 4}, 2, false},
			} {
				n := 1
				for _, d := range c.shape {
					n *= d
				}
				k := c.shape[len(c.shape)-1]
				x := peel.AsType(peel.FromFloat64s(seqValues(n, 3), c.shape...), dt)
				a := peel.AsType(peel.FromFloat64s(seqValues(k, 0.5), k), dt)
				f := func(in []*peel.Tensor) []*peel.Tensor {
					if rms {
						return []*peel.Tensor{peel.Mul(peel.RMSNormalize(in[0], c.k, 1e-5), in[1])}
					}
					return []*peel.Tensor{peel.Add(peel.Mul(peel.Standardize(in[0], c.k, 1e-5), in[1]), 0.25)}
				}
				g := trace(f, x, a)
				eg := compiler.ExpandRowOps(g)
				if got := count(eg, name) == 0; got != c.expanded {
					t.Fatalf("%s %v%v k=%d: expanded %v, want %v:\n%v", name, dt, c.shape, c.k, got, c.expanded, eg)
				}
				want := g.Eval(x, a)
				p := compiler.Build(eg)
				if got := p.Run([]*peel.Tensor{x, a}, nil); sameBits(got[0], want[0]) != "" {
					t.Fatalf("%s %v%v k=%d: %s\n%v", name, dt, c.shape, c.k, sameBits(got[0], want[0]), eg)
				}
				if st := p.Stats(); c.expanded && c.shape[len(c.shape)-1] > 1 && (st.Instructions != 1 || st.Fused != 1) {
					t.Fatalf("%s %v%v: stats %+v, want one fused group\n%v", name, dt, c.shape, st, p)
				}
			}
		}
	}
	// Both results of the primitive, expanded: the inverse deviations
	// too.
	x := peel.FromFloat64s(seqValues(60, 2), 4, 15)
	g := trace(func(in []*peel.Tensor) []*peel.Tensor {
		return interp.Bind(prims.LayerNorm, prims.NormParams{Axes: 1, Eps: 0.01}, in[0])
	}, x)
	want := g.Eval(x)
	got := compiler.Build(compiler.ExpandRowOps(g)).Run([]*peel.Tensor{x}, nil)
	for i := range want {
		if d := sameBits(got[i], want[i]); d != "" {
			t.Fatalf("layer_norm result %d: %s", i, d)
		}
	}
}

// TestRowValueBroadcastAxis: a row reduction read back broadcast along
// the axis it reduced is a per-row value of the group; read broadcast
// along the other axis (possible on a square input, where both give the
// group's shape) it is a vector, not the row's own value. Each
// reduction axis and each orientation of the re-broadcast, on square
// and oblong inputs, equals Graph.Eval bit for bit.
func TestRowValueBroadcastAxis(t *testing.T) {
	for _, shape := range [][2]int{{3, 3}, {5, 5}, {64, 64}, {130, 130}, {4, 4}, {3, 1}, {1, 3}} {
		r, c := shape[0], shape[1]
		for _, axis := range []int{0, 1} {
			for _, across := range []bool{false, true} {
				// The reduced vector has r (axis 1) or c (axis 0) values:
				// as a column it varies down the rows, as a row along them.
				nv := r
				if axis == 0 {
					nv = c
				}
				vshape := []int{nv, 1}
				if across {
					vshape = []int{1, nv}
				}
				if (vshape[0] != 1 && vshape[0] != r) || (vshape[1] != 1 && vshape[1] != c) {
					continue
				}
				for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
					x := peel.AsType(peel.FromFloat64s(seqValues(r*c, 1), r, c), dt)
					f := func(in []*peel.Tensor) []*peel.Tensor {
						e := peel.Exp(in[0])
						s := peel.Reshape(peel.Sum(e, axis), vshape...)
						return []*peel.Tensor{peel.Mul(e, s), peel.Sub(peel.Tanh(in[0]), peel.Div(e, peel.Add(s, 1.0)))}
					}
					g := trace(f, x)
					og, _ := compiler.Optimize(g, compiler.DefaultPasses(), false)
					t.Run(fmt.Sprintf("%dx%d/axis%d/across=%v/%v", r, c, axis, across, dt), func(t *testing.T) {
						checkProgram(t, g, []*peel.Tensor{x})
						checkProgram(t, og, []*peel.Tensor{x})
					})
				}
			}
		}
	}
}
