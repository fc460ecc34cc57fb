package compiler_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
)

// benchThreads runs b's sub-benchmarks at 1 and 2 kernel threads.
func benchThreads(b *testing.B, f func(b *testing.B)) {
	compiler.SetPoison(false)
	defer compiler.SetPoison(true)
	for _, n := range []int{1, 2} {
		b.Run("threads="+strconv.Itoa(n), func(b *testing.B) {
			old := cpu.Threads()
			cpu.SetThreads(n)
			defer cpu.SetThreads(old)
			f(b)
		})
	}
}

func randVec(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	d := make([]float64, n)
	for i := range d {
		d[i] = r.Float64()*2 - 1
	}
	return d
}

// BenchmarkTinyChain: the 100-op chain of peelbench's tiny_chain_100
// (x·a, x+b, tanh(x), x−c on f64[8]), compiled; ns/op is per run, the
// ns/eqn metric per equation.
func BenchmarkTinyChain(b *testing.B) {
	a, bb, c := peel.FromFloat64s(randVec(8, 2)), peel.FromFloat64s(randVec(8, 3)), peel.FromFloat64s(randVec(8, 4))
	x := peel.FromFloat64s(randVec(8, 1))
	chain := func(in []*peel.Tensor) []*peel.Tensor {
		x := in[0]
		for i := range 100 {
			switch i % 4 {
			case 0:
				x = peel.Mul(x, a)
			case 1:
				x = peel.Add(x, bb)
			case 2:
				x = peel.Tanh(x)
			case 3:
				x = peel.Sub(x, c)
			}
		}
		return []*peel.Tensor{x}
	}
	g := interp.Trace(chain, []*peel.Tensor{x})
	p := compiler.Build(g)
	args := []*peel.Tensor{x}
	benchThreads(b, func(b *testing.B) {
		b.Run("compiled", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Run(args, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/eqn")
		})
		b.Run("eager", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				chain(args)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/eqn")
		})
	})
}

// BenchmarkChain1M: tanh(2x+1)·x on 2^20 elements, compiled (one fused
// group) and eager, in f32 and f64; ns/elem/op as peelbench's chain_1m.
func BenchmarkChain1M(b *testing.B) {
	const n = 1 << 20
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		x := peel.AsType(peel.FromFloat64s(randVec(n, 5), n), dt)
		f := func(in []*peel.Tensor) []*peel.Tensor {
			x := in[0]
			return []*peel.Tensor{peel.Mul(peel.Tanh(peel.Add(peel.Mul(x, 2.0), 1.0)), x)}
		}
		p := compiler.Build(interp.Trace(f, []*peel.Tensor{x}))
		args := []*peel.Tensor{x}
		b.Run(dt.String(), func(b *testing.B) {
			benchThreads(b, func(b *testing.B) {
				b.Run("compiled", func(b *testing.B) {
					for b.Loop() {
						p.Run(args, nil)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(4*n), "ns/elem/op")
				})
				b.Run("eager", func(b *testing.B) {
					for b.Loop() {
						f(args)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(4*n), "ns/elem/op")
				})
			})
		})
	}
}

// BenchmarkExecFloor: the 100 kernel calls of the tiny chain made
// directly with backend.Exec on prepared arrays (no executor): the floor
// of any executor built on backend.Exec, to read BenchmarkTinyChain
// against.
func BenchmarkExecFloor(b *testing.B) {
	a, bb, c := peel.FromFloat64s(randVec(8, 2)), peel.FromFloat64s(randVec(8, 3)), peel.FromFloat64s(randVec(8, 4))
	x := peel.FromFloat64s(randVec(8, 1))
	g := interp.Trace(func(in []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.Sub(peel.Tanh(peel.Add(peel.Mul(in[0], a), bb)), c)}
	}, []*peel.Tensor{x})
	xa, be := interp.ArrayOf(x)
	aa, _ := interp.ArrayOf(a)
	ba, _ := interp.ArrayOf(bb)
	ca, _ := interp.ArrayOf(c)
	s0 := []backend.Array{{Buf: be.Alloc(peel.Float64, 8), Shape: []int{8}}}
	s1 := []backend.Array{{Buf: be.Alloc(peel.Float64, 8), Shape: []int{8}}}
	ops := g.Eqns
	ins := make([]backend.Array, 2)
	compiler.SetPoison(false)
	defer compiler.SetPoison(true)
	b.ReportAllocs()
	for b.Loop() {
		cur := xa
		for i := range 25 {
			_ = i
			ins[0], ins[1] = cur, aa
			be.Exec(ops[0].Prim.Op, nil, ins, s0)
			ins[0], ins[1] = s0[0], ba
			be.Exec(ops[1].Prim.Op, nil, ins, s1)
			ins[0] = s1[0]
			be.Exec(ops[2].Prim.Op, nil, ins[:1], s0)
			ins[0], ins[1] = s0[0], ca
			be.Exec(ops[3].Prim.Op, nil, ins, s1)
			cur = s1[0]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/eqn")
}

// BenchmarkRowGroups: softmax (peel.Softmax over the last axis) and a
// layer norm written with peel ops (layerNorm: mean, centering,
// variance, rsqrt, scale and shift by row vectors) over f32[4096, 256],
// compiled (one fused group run by rows) and eager; ns/elem per run.
func BenchmarkRowGroups(b *testing.B) {
	const rows, k = 4096, 256
	x := peel.AsType(peel.FromFloat64s(randVec(rows*k, 6), rows, k), peel.Float32)
	gamma := peel.AsType(peel.FromFloat64s(randVec(k, 7), k), peel.Float32)
	beta := peel.AsType(peel.FromFloat64s(randVec(k, 8), k), peel.Float32)
	args := []*peel.Tensor{x, gamma, beta}
	cases := []struct {
		name string
		f    func(in []*peel.Tensor) []*peel.Tensor
	}{
		{"softmax", func(in []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Softmax(in[0], -1)} }},
		{"layer_norm", func(in []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{layerNorm(in[0], in[1], in[2])} }},
	}
	for _, c := range cases {
		g, _ := compiler.Optimize(interp.Trace(c.f, args), compiler.DefaultPasses(), false)
		p := compiler.Build(g)
		b.Run(c.name, func(b *testing.B) {
			benchThreads(b, func(b *testing.B) {
				b.Run("compiled", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						p.Run(args, nil)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(rows*k), "ns/elem")
				})
				b.Run("eager", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						c.f(args)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(rows*k), "ns/elem")
				})
			})
		})
	}
}
