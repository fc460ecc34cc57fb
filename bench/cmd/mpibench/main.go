//go:build mpi

package main

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

// direct_allreduce times iters MPI_Allreduce calls (sum, float) of n
// elements (in place into dout when inplace is set), after a barrier,
// in nanoseconds, on buffers kept from one
// call to the next (and written once first, so no page is touched for
// the first time while timed).
static float *din, *dout;
static int dn;
static double direct_allreduce(int n, int iters, int inplace) {
	if (n != dn) {
		free(din);
		free(dout);
		din = malloc(sizeof(float) * (size_t)n);
		dout = malloc(sizeof(float) * (size_t)n);
		for (int i = 0; i < n; i++) { din[i] = (float)(i % 7); dout[i] = 0; }
		dn = n;
	}
	struct timespec a, b;
	MPI_Barrier(MPI_COMM_WORLD);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int k = 0; k < iters; k++) MPI_Allreduce(inplace ? MPI_IN_PLACE : din, dout, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
}
*/
import "C"

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/bench"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

var sizes = []int{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20}

func sizeName(b int) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%dmb", b>>20)
	}
	return fmt.Sprintf("%dkb", b>>10)
}

type result struct {
	rec  bench.Record
	note string
}

func main() {
	reps := flag.Int("reps", 7, "timed samples per workload")
	steps := flag.Int("steps", 10, "training steps per sample of the step workloads")
	jsonOut := flag.String("json", "", "write JSON records (rank 0) to this file")
	only := flag.String("only", "", `"allreduce" or "step": measure only those workloads`)
	flag.Parse()
	cpu.SetThreads(1)
	w := dist.World()
	defer dist.Finalize()
	var out []result
	if *only != "step" && w.Size() > 1 {
		out = append(out, allReduce(w, *reps)...)
	}
	if *only != "allreduce" {
		out = append(out, stepWorkloads(w, *reps, *steps)...)
		out = append(out, shardedWorkloads(w, *reps, *steps)...)
	}
	if w.Rank() != 0 {
		return
	}
	fmt.Printf("%d rank(s), kernels on 1 thread\n", w.Size())
	for _, r := range out {
		fmt.Printf("%-40s %-5s %12s  %8.3g %-6s %s\n", r.rec.Workload, r.rec.Impl, bench.FormatNs(r.rec.MedianNs), r.rec.Metric, r.rec.Unit, r.note)
	}
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		enc := json.NewEncoder(f)
		for _, r := range out {
			enc.Encode(r.rec)
		}
		f.Close()
	}
}

// record is the median of samples (ns per run) as a Record.
func record(name, impl string, samples []float64, metric func(ns float64) float64, unit string) bench.Record {
	slices.Sort(samples)
	med := samples[len(samples)/2]
	return bench.Record{
		Workload: name, Impl: impl, Threads: 1, MedianNs: med, MinNs: samples[0], MaxNs: samples[len(samples)-1],
		Q1Ns: samples[len(samples)/4], Q3Ns: samples[3*len(samples)/4],
		Metric: metric(med), Unit: unit, Allocs: -1, Reps: len(samples),
	}
}

// agree returns the largest of every rank's value, so that all ranks
// report one time (the slowest rank's).
func agree(w dist.Communicator, ns float64) float64 {
	return w.AllReduce(peel.FromFloat64s([]float64{ns}), dist.Max).Float64s()[0]
}

// allReduce times peel's AllReduce and the direct MPI_Allreduce loop
// on each size, alternating the two in every sample.
func allReduce(w dist.Communicator, reps int) []result {
	var out []result
	for _, bytes := range sizes {
		n := bytes / 4
		iters := max(3, min(200, (256<<20)/bytes))
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(i % 7)
		}
		x := peel.FromFloat32s(xs, n)
		want := float32(w.Size())
		var peelNs, inNs, mpiNs, mpiInNs []float64
		acc := peel.Clone(x)         // reduced in place, again and again
		for s := -1; s < reps; s++ { // sample -1 warms up
			w.Barrier()
			t := time.Now()
			var r *peel.Tensor
			for range iters {
				r = w.AllReduce(x, dist.Sum)
			}
			p := agree(w, float64(time.Since(t).Nanoseconds())/float64(iters))
			if got := r.Float32s()[1]; got != want {
				fmt.Fprintf(os.Stderr, "allreduce: element 1 is %v, want %v\n", got, want)
				os.Exit(1)
			}
			w.Barrier()
			t = time.Now()
			for range iters {
				acc = w.IAllReduceInPlace(acc, dist.Sum).Wait()
			}
			ip := agree(w, float64(time.Since(t).Nanoseconds())/float64(iters))
			m := agree(w, float64(C.direct_allreduce(C.int(n), C.int(iters), 0))/float64(iters))
			mi := agree(w, float64(C.direct_allreduce(C.int(n), C.int(iters), 1))/float64(iters))
			if s >= 0 {
				peelNs, inNs, mpiNs, mpiInNs = append(peelNs, p), append(inNs, ip), append(mpiNs, m), append(mpiInNs, mi)
			}
		}
		name := fmt.Sprintf("allreduce_%s_%drank", sizeName(bytes), w.Size())
		gbs := func(ns float64) float64 { return float64(bytes) / ns }
		pr := record(name, "peel", peelNs, gbs, "GB/s")
		mr := record(name, "mpi", mpiNs, gbs, "GB/s")
		iname := fmt.Sprintf("allreduce_inplace_%s_%drank", sizeName(bytes), w.Size())
		ir := record(iname, "peel", inNs, gbs, "GB/s")
		mr2 := record(iname, "mpi", mpiInNs, gbs, "GB/s")
		out = append(out,
			result{pr, fmt.Sprintf("AllReduce (a new result): peel/direct MPI_Allreduce %.3f", pr.MedianNs/mr.MedianNs)},
			result{mr, "direct MPI_Allreduce loop"},
			result{ir, fmt.Sprintf("IAllReduceInPlace+Wait: peel/direct MPI_Allreduce(MPI_IN_PLACE) %.3f", ir.MedianNs/mr2.MedianNs)},
			result{mr2, "direct MPI_Allreduce loop, MPI_IN_PLACE"})
	}
	return out
}

// MLP is the benchmark's model, 784-1024-1024-10 with ReLU.
type MLP struct{ L1, L2, L3 nn.LinearParams }

func loss(p MLP, x, y *peel.Tensor) *peel.Tensor {
	h := nn.Linear(p.L2, nn.Linear(p.L1, x).ReLU()).ReLU()
	return nn.CrossEntropy(nn.Linear(p.L3, h), y)
}

const batch, lr = 256, 0.01

func stepWorkloads(w dist.Communicator, reps, steps int) []result {
	ks := peel.SplitKeys(peel.Key(5), 4)
	p0 := MLP{nn.InitLinear(ks[0], peel.Float32, 784, 1024), nn.InitLinear(ks[1], peel.Float32, 1024, 1024), nn.InitLinear(ks[2], peel.Float32, 1024, 10)}
	x := peel.Uniform(peel.FoldIn(ks[3], int64(w.Rank())), peel.Float32, batch, 784)
	y := peel.Rem(peel.Arange(peel.Int64, 0, batch, 1), int64(10))
	// self is this rank alone: the same step with nothing to exchange,
	// run on every rank at once (the same contention for the cores).
	self := w.(interface {
		Split(color, key int) dist.Communicator
	}).Split(w.Rank(), 0)
	mk := func(comm dist.Communicator, opts ...ddp.Option) func(MLP, *peel.Tensor, *peel.Tensor) tree.Tuple2[MLP, *peel.Tensor] {
		grad := ddp.ValueAndGrad3(loss, comm, opts...)
		return func(p MLP, x, y *peel.Tensor) tree.Tuple2[MLP, *peel.Tensor] {
			l, g := grad(p, x, y)
			return tree.Pack2(tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(lr)) }, p, g), l)
		}
	}
	type variant struct {
		name string
		f    func(MLP, *peel.Tensor, *peel.Tensor) tree.Tuple2[MLP, *peel.Tensor]
	}
	vs := []variant{
		{"eager", mk(w)},
		{"eager_nooverlap", mk(w, ddp.NoOverlap())},
		{"", transforms.Compile3(mk(w))},
		{"nooverlap", transforms.Compile3(mk(w, ddp.NoOverlap()))},
		{"compute_only", transforms.Compile3(mk(self))},
	}
	var out []result
	perStep := func(ns float64) float64 { return ns / 1e6 }
	for _, v := range vs {
		var samples []float64
		for s := -1; s < reps; s++ {
			p := p0
			w.Barrier()
			t := time.Now()
			for range steps {
				p, _ = v.f(p, x, y).Unpack()
			}
			tree.Leaves(p)[0].Float32s() // wait for the last step
			ns := agree(w, float64(time.Since(t).Nanoseconds())/float64(steps))
			if s >= 0 {
				samples = append(samples, ns)
			}
		}
		name := fmt.Sprintf("ddp_mlp_step_%drank", w.Size()) // compiled, overlapped: torch DDP's peer
		if v.name != "" {
			name = fmt.Sprintf("ddp_mlp_step_%s_%drank", v.name, w.Size())
		}
		out = append(out, result{record(name, "peel", samples, perStep, "ms/step"), ""})
	}
	// The communication alone: the all-reduce of the gradients' bytes.
	var n int
	for _, l := range tree.Leaves(p0) {
		n += l.Size()
	}
	g := peel.Zeros(peel.Float32, n)
	var samples []float64
	for s := -1; s < reps; s++ {
		w.Barrier()
		t := time.Now()
		for range steps {
			w.AllReduce(g, dist.Sum)
		}
		ns := agree(w, float64(time.Since(t).Nanoseconds())/float64(steps))
		if s >= 0 {
			samples = append(samples, ns)
		}
	}
	name := fmt.Sprintf("ddp_mlp_allreduce_grads_%drank", w.Size())
	out = append(out, result{record(name, "peel", samples, perStep, "ms/step"), fmt.Sprintf("%d f32 (%.1f MB)", n, float64(n*4)/1e6)})
	return out
}

// shardedWorkloads are Adam steps of the MLP three ways: data-parallel
// (every rank holds the parameters, their gradient and Adam's two
// moments), ZeRO stage 1 (ddp.ShardOptimizer: the moments sharded) and
// stage 3 (ddp.Shard and ddp.Gather: parameters, gradients and moments
// sharded, each layer gathered where it is used, inside a Checkpoint;
// with the next layer's all-gather prefetched, and without).
// Each row gives the compiled step's time and, in LivePeak, the peak
// growth of the live heap over two eager steps from the unsharded
// parameters (what a rank holds beyond them: its training state and the
// step's transients), with the caching allocator off.
func shardedWorkloads(w dist.Communicator, reps, steps int) []result {
	ks := peel.SplitKeys(peel.Key(5), 4)
	p0 := MLP{nn.InitLinear(ks[0], peel.Float32, 784, 1024), nn.InitLinear(ks[1], peel.Float32, 1024, 1024), nn.InitLinear(ks[2], peel.Float32, 1024, 10)}
	x := peel.Uniform(peel.FoldIn(ks[3], int64(w.Rank())), peel.Float32, batch, 784)
	y := peel.Rem(peel.Arange(peel.Int64, 0, batch, 1), int64(10))
	const alr = 1e-3
	type trainer struct {
		name string
		// start makes the training state from the parameters; step runs
		// one step on it (eagerly, or compiled when compiled is set).
		start func(compiled bool) func()
	}
	ddpGrad := ddp.ValueAndGrad3(loss, w)
	// zero3 is the ZeRO-3 trainer with Shard's options opts.
	zero3 := func(opts []ddp.Option) func(compiled bool) func() {
		return func(compiled bool) func() {
			opt := optim.Adam[MLP](alr)
			step := func(sp ddp.Sharded[MLP], st optim.State, x, y *peel.Tensor) tree.Tuple2[ddp.Sharded[MLP], optim.State] {
				g := transforms.Grad3(shardedLoss)(sp, x, y)
				u, st := opt.Update(g.Shards, st, sp.Shards)
				sp.Shards = optim.ApplyUpdates(sp.Shards, u)
				return tree.Pack2(sp, st)
			}
			if compiled {
				step = transforms.Compile4(step)
			}
			sp := ddp.Shard(p0, w, opts...)
			st := opt.Init(sp.Shards)
			return func() { sp, st = step(sp, st, x, y).Unpack() }
		}
	}
	ts := []trainer{
		{"ddp_adam", func(compiled bool) func() {
			opt := optim.Adam[MLP](alr)
			step := func(p MLP, st optim.State, x, y *peel.Tensor) tree.Tuple2[MLP, optim.State] {
				_, g := ddpGrad(p, x, y)
				u, st := opt.Update(g, st, p)
				return tree.Pack2(optim.ApplyUpdates(p, u), st)
			}
			if compiled {
				step = transforms.Compile4(step)
			}
			p, st := p0, opt.Init(p0)
			return func() { p, st = step(p, st, x, y).Unpack() }
		}},
		{"zero1_adam", func(compiled bool) func() {
			z := ddp.ShardOptimizer[MLP](optim.Adam[*peel.Tensor](alr), w)
			step := func(p MLP, st ddp.ZeROState, x, y *peel.Tensor) tree.Tuple2[MLP, ddp.ZeROState] {
				return tree.Pack2(z.Step(p, transforms.Grad3(loss)(p, x, y), st))
			}
			if compiled {
				step = transforms.Compile4(step)
			}
			p, st := p0, z.Init(p0)
			return func() { p, st = step(p, st, x, y).Unpack() }
		}},
		{"zero3_adam", zero3(nil)},
		{"zero3_adam_prefetch", zero3([]ddp.Option{ddp.Prefetch(true)})},
		{"zero3_adam_noprefetch", zero3([]ddp.Option{ddp.Prefetch(false)})},
	}
	var out []result
	perStep := func(ns float64) float64 { return ns / 1e6 }
	for _, tr := range ts {
		run := tr.start(true)
		var samples []float64
		for s := -1; s < reps; s++ {
			w.Barrier()
			t := time.Now()
			for range steps {
				run()
			}
			ns := agree(w, float64(time.Since(t).Nanoseconds())/float64(steps))
			if s >= 0 {
				samples = append(samples, ns)
			}
		}
		w.Barrier()
		// Without the caching allocator, whose idle buffers are live to
		// the collector: the peak is then the tensors the step holds.
		limit := peel.SetCacheLimit(0)
		var keep func()
		peak := bench.LivePeak(func() {
			keep = tr.start(false)
			keep()
			keep()
		})
		peel.SetCacheLimit(limit)
		w.Barrier()
		peak = uint64(agreeMax(w, float64(peak)))
		rec := record(fmt.Sprintf("%s_mlp_step_%drank", tr.name, w.Size()), "peel", samples, perStep, "ms/step")
		rec.LivePeak = peak
		out = append(out, result{rec, fmt.Sprintf("live heap peak over two eager steps: %.1f MB per rank", float64(peak)/1e6)})
		_ = keep
	}
	return out
}

// shardedLoss is loss over fully sharded parameters, each layer gathered
// inside a Checkpoint, so that only one layer is whole at a time.
func shardedLoss(sp ddp.Sharded[MLP], x, y *peel.Tensor) *peel.Tensor {
	layer := func(sel func(MLP) nn.LinearParams, relu bool) func(tree.Tuple2[ddp.Sharded[MLP], *peel.Tensor]) *peel.Tensor {
		return transforms.Checkpoint(func(a tree.Tuple2[ddp.Sharded[MLP], *peel.Tensor]) *peel.Tensor {
			h := nn.Linear(ddp.Gather(a.V0, sel), a.V1)
			if relu {
				h = h.ReLU()
			}
			return h
		}, transforms.NothingSaveable)
	}
	h := layer(func(p MLP) nn.LinearParams { return p.L1 }, true)(tree.Pack2(sp, x))
	h = layer(func(p MLP) nn.LinearParams { return p.L2 }, true)(tree.Pack2(sp, h))
	return nn.CrossEntropy(layer(func(p MLP) nn.LinearParams { return p.L3 }, false)(tree.Pack2(sp, h)), y)
}

// agreeMax returns the largest v over the ranks.
func agreeMax(w dist.Communicator, v float64) float64 {
	return w.AllReduce(peel.Scalar(v), dist.Max).Item()
}
