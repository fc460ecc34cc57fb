package ddp_test

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/checkpoint"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// fsdpLoss is zloss over fully sharded parameters: the second layer is
// gathered inside a Checkpoint (whole only while it is used, gathered
// again for the backward pass, which needs its kernel for the first
// layer's gradient), the first layer and the f32 scale outside one.
func fsdpLoss(sp ddp.Sharded[zmlp], x, y *peel.Tensor) *peel.Tensor {
	l1 := ddp.Gather(sp, func(p zmlp) nn.LinearParams { return p.L1 })
	h := nn.Linear(l1, x).Tanh()
	z := transforms.Checkpoint(func(a tree.Tuple2[ddp.Sharded[zmlp], *peel.Tensor]) *peel.Tensor {
		l2 := ddp.Gather(a.V0, func(p zmlp) nn.LinearParams { return p.L2 })
		return nn.Linear(l2, a.V1)
	}, transforms.NothingSaveable)(tree.Pack2(sp, h))
	scale := ddp.Gather(sp, func(p zmlp) *peel.Tensor { return p.Scale })
	return nn.CrossEntropy(z.Mul(peel.AsType(scale, peel.Float64)), y)
}

type fsdpStep = func(ddp.Sharded[zmlp], optim.State, *peel.Tensor, *peel.Tensor) tree.Tuple2[ddp.Sharded[zmlp], optim.State]

// fsdpTrainStep returns a fully sharded step of the optimizer over the
// shards, with the gradient of fsdpLoss, compiled or not.
func fsdpTrainStep(o zeroOpt, compiled bool) fsdpStep {
	step := func(sp ddp.Sharded[zmlp], st optim.State, x, y *peel.Tensor) tree.Tuple2[ddp.Sharded[zmlp], optim.State] {
		g := transforms.Grad3(fsdpLoss)(sp, x, y)
		u, st := o.whole.Update(g.Shards, st, sp.Shards)
		sp.Shards = optim.ApplyUpdates(sp.Shards, u)
		return tree.Pack2(sp, st)
	}
	if compiled {
		return transforms.Compile4(step)
	}
	return step
}

// fsdpSteps runs steps fully sharded steps of the optimizer over the
// shards on this member of comm, each with the gradient of its part of
// the batch, and returns the whole parameters after each. It checks that
// every shard holds 1/N of its leaf.
func fsdpSteps(t *testing.T, o zeroOpt, comm dist.Communicator, compiled bool, p zmlp, x, y *peel.Tensor, steps int) []zmlp {
	n := comm.Size()
	sp := ddp.Shard(p, comm, ddp.Prefetch(true)) // in process too
	whole, shards := tree.Leaves(p), tree.Leaves(sp.Shards)
	for i, s := range shards {
		if want := (whole[i].Size() + n - 1) / n; s.Rank() != 1 || s.Size() != want || s.DType() != whole[i].DType() {
			t.Errorf("rank %d of %d: leaf %d (%s) has a %s shard, want %d elements", comm.Rank(), n, i, whole[i].TypeString(), s.TypeString(), want)
		}
	}
	step := fsdpTrainStep(o, compiled)
	st := o.whole.Init(sp.Shards)
	xr, yr := part(x, y, comm.Rank(), n)
	var out []zmlp
	for range steps {
		sp, st = step(sp, st, xr, yr).Unpack()
		out = append(out, ddp.Unshard(sp))
	}
	// A step of the prefetcher runs from an Unshard (the first Gather
	// with updated values) to the next: Unshard, L1, L2, Scale and L2's
	// recomputation. The first two are recorded; from the third on,
	// every Gather but the first is served by a prefetch.
	want := 4 * max(steps-2, 0)
	if hits, misses, off := ddp.PrefetchCounts(sp); hits != want || misses != 0 || off {
		t.Errorf("rank %d of %d (compiled %v): %d prefetches used, %d dropped (stopped %v), want %d and 0", comm.Rank(), n, compiled, hits, misses, off, want)
	}
	return out
}

// TestFSDPEqualsUnsharded: fully sharded training, eager and compiled,
// with Adam and momentum over the shards, equals the whole optimizer on
// one device with the mean gradient, to 1e-12 in f64, for 1, 2 and 3
// members (shards padded: the leaves divide by neither 2 nor 3).
func TestFSDPEqualsUnsharded(t *testing.T) { testEqualsUnsharded(t, fsdpSteps) }

// countingComm counts the all-gathers and reduce-scatters of the
// communicator it wraps.
type countingComm struct {
	dist.Communicator
	gathers, scatters, prefetches *atomic.Int64
}

func (c countingComm) AllGather(x *peel.Tensor) *peel.Tensor {
	c.gathers.Add(1)
	return c.Communicator.AllGather(x)
}

func (c countingComm) IAllGather(x *peel.Tensor) dist.Request {
	c.prefetches.Add(1)
	return c.Communicator.IAllGather(x)
}

func (c countingComm) ReduceScatter(x *peel.Tensor) *peel.Tensor {
	c.scatters.Add(1)
	return c.Communicator.ReduceScatter(x)
}

// TestFSDPGathersPerUse checks the schedule of a step: eagerly, the
// checkpointed layer is all-gathered twice (in the forward pass and for
// the backward pass's recomputation), the other parts once, eagerly and
// in a compiled step's program (which merges no collective). Every gathered part's gradient is reduce-scattered once: one
// collective per dtype of a part.
func TestFSDPGathersPerUse(t *testing.T) {
	x, y := zbatch(6)
	p := newZMLP()
	mesh := dist.NewMesh(dist.MeshAxis("data", 1))
	mesh.RunDevices(func(dv *dist.Device) {
		var gathers, scatters, prefetches atomic.Int64
		sp := ddp.Shard(p, countingComm{dv.Comm("data"), &gathers, &scatters, &prefetches}, ddp.Prefetch(false))
		gathers.Store(0)
		transforms.Grad3(fsdpLoss)(sp, x, y)
		// L2 twice, L1 and Scale once each; three parts' gradients.
		if g, s := gathers.Load(), scatters.Load(); g != 4 || s != 3 {
			t.Errorf("an eager step ran %d all-gathers and %d reduce-scatters, want 4 and 3", g, s)
		}
		// By default, Gathers over a communicator whose collectives do
		// not overlap (the in-process engine) start none ahead.
		byDefault := ddp.Shard(p, dv.Comm("data"))
		for range 3 {
			transforms.Grad3(fsdpLoss)(byDefault, x, y)
			byDefault.Shards = tree.Map(peel.Clone, byDefault.Shards)
		}
		if hits, misses, _ := ddp.PrefetchCounts(byDefault); hits != 0 || misses != 0 {
			t.Errorf("the in-process engine prefetched by default: %d prefetches used, %d dropped", hits, misses)
		}
		var ins transforms.Inspector
		f := transforms.Compile3(transforms.Grad3(fsdpLoss), transforms.Inspect(&ins))
		f(sp, x, y)
		prog := ins.Explain(sp, x, y)
		prog = prog[strings.LastIndex(prog, "program:"):]
		if c := strings.Count(prog, "fsdp_gather["); c != 4 {
			t.Errorf("the program has %d all-gathers, want 4:\n%s", c, prog)
		}
		if c := strings.Count(prog, "fsdp_mean_scatter"); c != 3 {
			t.Errorf("the program has %d reduce-scatters, want 3:\n%s", c, prog)
		}
	})
}

// TestFSDPTiedWeights: a leaf gathered twice gets the sum of both uses'
// gradients, as the unsharded gradient does.
func TestFSDPTiedWeights(t *testing.T) {
	w := peel.FromFloat64s([]float64{0.5, -1, 2, 0.25, 3}, 5)
	loss := func(w *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.Mul(w, w), peel.Sin(w))) }
	want := transforms.Grad(loss)(w).Float64s()
	for _, n := range []int{2, 3} {
		mesh := dist.NewMesh(dist.MeshAxis("data", n))
		got := make([][]float64, n)
		mesh.RunDevices(func(dv *dist.Device) {
			sp := ddp.Shard(w, dv.Comm("data"))
			g := transforms.Grad(func(sp ddp.Sharded[*peel.Tensor]) *peel.Tensor {
				a := ddp.Gather(sp, func(w *peel.Tensor) *peel.Tensor { return w })
				b := ddp.Gather(sp, func(w *peel.Tensor) *peel.Tensor { return w })
				return peel.Sum(peel.Mul(peel.Mul(a, b), peel.Sin(a)))
			})(sp)
			// Every member's loss is the same, so the mean is the loss's
			// gradient.
			got[dv.Index] = g.Shards.Float64s()
		})
		s := (5 + n - 1) / n
		for d := range n {
			for j, v := range got[d] {
				if i := d*s + j; i < 5 && abs(v-want[i]) > 1e-12 {
					t.Errorf("%d members, device %d: gradient of element %d = %g, want %g", n, d, i, v, want[i])
				} else if i >= 5 && v != 0 {
					t.Errorf("%d members, device %d: padding element %d has gradient %g", n, d, i, v)
				}
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFSDPErrors: a selector that computes instead of selecting, and a
// Sharded value not made by Shard, are refused by name.
func TestFSDPErrors(t *testing.T) {
	p := newZMLP()
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	errs := make([]error, 2)
	mesh.RunDevices(func(dv *dist.Device) {
		sp := ddp.Shard(p, dv.Comm("data"))
		errs[dv.Index] = peel.Catch(func() {
			ddp.Gather(sp, func(p zmlp) *peel.Tensor { return peel.Add(p.L1.W, 1.0) })
		})
	})
	for d, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "ddp.Gather") || !strings.Contains(err.Error(), "must select a part") {
			t.Errorf("device %d: a computing selector gave %v", d, err)
		}
	}
	err := peel.Catch(func() { ddp.Gather(ddp.Sharded[zmlp]{Shards: p}, func(p zmlp) zmlp { return p }) })
	if err == nil || !strings.Contains(err.Error(), "ddp.Shard") {
		t.Errorf("a Sharded value not made by Shard gave %v", err)
	}
	mesh = dist.NewMesh(dist.MeshAxis("data", 1))
	mesh.RunDevices(func(dv *dist.Device) {
		err := peel.Catch(func() { ddp.Shard(p, dv.Comm("data"), ddp.BucketBytes(1<<20)) })
		if err == nil || !strings.Contains(err.Error(), "ddp.Shard") || !strings.Contains(err.Error(), "Prefetch only") {
			t.Errorf("Shard with a ValueAndGrad option gave %v", err)
		}
		err = peel.Catch(func() { ddp.ValueAndGrad3(zloss, dv.Comm("data"), ddp.Prefetch(true)) })
		if err == nil || !strings.Contains(err.Error(), "ddp.ValueAndGrad3") || !strings.Contains(err.Error(), "Prefetch") {
			t.Errorf("ValueAndGrad with Prefetch gave %v", err)
		}
	})
}

// TestFSDPPrefetch checks the prefetching schedule on two members,
// eagerly and in a compiled step: the first step gathers its four parts
// where they are asked for; from the second on, the step's first Gather
// gathers and starts the next part's all-gather, and each later Gather
// (L2, Scale, L2's recomputation for the backward pass) is served by the
// one started before it and starts the next, so a step runs one blocking
// all-gather and three started ahead, and no more all-gathers than
// without prefetching. The parameters after four steps are bit-equal to
// those without prefetching.
func TestFSDPPrefetch(t *testing.T) {
	x, y := zbatch(6)
	p := newZMLP()
	o := zeroOpts[1]
	for _, compiled := range []bool{false, true} {
		final := map[bool][]float64{}
		for _, prefetch := range []bool{true, false} {
			mesh := dist.NewMesh(dist.MeshAxis("data", 2))
			got := make([][]float64, 2)
			mesh.RunDevices(func(dv *dist.Device) {
				var gathers, scatters, ahead atomic.Int64
				comm := countingComm{dv.Comm("data"), &gathers, &scatters, &ahead}
				sp := ddp.Shard(p, comm, ddp.Prefetch(prefetch))
				step := fsdpTrainStep(o, compiled)
				st := o.whole.Init(sp.Shards)
				xr, yr := part(x, y, dv.Index, 2)
				for k := range 4 {
					gathers.Store(0)
					scatters.Store(0)
					ahead.Store(0)
					sp, st = step(sp, st, xr, yr).Unpack()
					wantG, wantA := int64(4), int64(0)
					if prefetch && k > 0 {
						wantG, wantA = 1, 3
					}
					if g, a, s := gathers.Load(), ahead.Load(), scatters.Load(); g != wantG || a != wantA || s != 3 {
						t.Errorf("compiled %v, prefetch %v, device %d, step %d: %d all-gathers, %d started ahead, %d reduce-scatters; want %d, %d and 3", compiled, prefetch, dv.Index, k+1, g, a, s, wantG, wantA)
					}
				}
				if hits, misses, off := ddp.PrefetchCounts(sp); prefetch && (hits != 9 || misses != 0 || off) {
					t.Errorf("compiled %v, device %d: %d prefetches used, %d dropped (stopped %v), want 9 and 0", compiled, dv.Index, hits, misses, off)
				}
				for _, l := range tree.Leaves(sp.Shards) {
					got[dv.Index] = append(got[dv.Index], peel.AsType(l, peel.Float64).Float64s()...)
				}
			})
			final[prefetch] = slices.Concat(got...)
		}
		if !slices.Equal(final[true], final[false]) {
			t.Errorf("compiled %v: the parameters with prefetching differ from those without", compiled)
		}
	}
}

// TestFSDPPrefetchNeverStale: a shard written in place between two
// Gathers, while the second part's all-gather was started ahead with
// its old values, is gathered again: the second Gather returns the new
// values, as without prefetching, and the prefetcher stops.
func TestFSDPPrefetchNeverStale(t *testing.T) {
	p := newZMLP()
	for _, n := range []int{1, 2} {
		mesh := dist.NewMesh(dist.MeshAxis("data", n))
		mesh.RunDevices(func(dv *dist.Device) {
			run := func(opts ...ddp.Option) (*peel.Tensor, int, int, bool) {
				sp := ddp.Shard(p, dv.Comm("data"), opts...)
				var w2 *peel.Tensor
				for k := range 3 {
					// An update: new shards with the same values.
					sp.Shards = tree.Map(peel.Clone, sp.Shards)
					ddp.Gather(sp, func(p zmlp) nn.LinearParams { return p.L1 })
					if k == 2 { // the L2 all-gather is under way
						peel.AddInPlace(sp.Shards.L2.W, 1.0)
					}
					w2 = ddp.Gather(sp, func(p zmlp) nn.LinearParams { return p.L2 }).W
				}
				hits, misses, off := ddp.PrefetchCounts(sp)
				return w2, hits, misses, off
			}
			got, hits, misses, off := run(ddp.Prefetch(true))
			want, _, _, _ := run(ddp.Prefetch(false))
			if !slices.Equal(got.Float64s(), want.Float64s()) {
				t.Errorf("%d members, device %d: L2 gathered after an in-place write differs from the gather without prefetching", n, dv.Index)
			}
			if d := peel.Sub(want, p.L2.W).Float64s(); d[0] != 1 {
				t.Errorf("%d members, device %d: the write is not seen (difference %v)", n, dv.Index, d[0])
			}
			if hits != 1 || misses != 1 || !off {
				t.Errorf("%d members, device %d: %d prefetches used, %d dropped (stopped %v), want 1 (the second pass), 1 and stopped", n, dv.Index, hits, misses, off)
			}
		})
	}
}

// TestWorldFSDP checks fully sharded training over the job's processes
// (World: MPI with the mpi build tag, run under mpirun -np 2 and -np 3 by
// CI; a job of one process otherwise), eagerly and compiled: after each
// of three steps every process's whole parameters (Unshard) equal the
// whole optimizer's on one device with the mean gradient, to 1e-12.
func TestWorldFSDP(t *testing.T) { testWorldEqualsUnsharded(t, fsdpSteps) }

// TestFSDPResumeOtherSize: two fully sharded steps on two members, the
// parameters and the Adam state unsharded (as a checkpoint saves them,
// through a safetensors file) and sharded again over three members, and
// two more steps there, equal the whole optimizer over the same
// sequence of mean gradients (two steps over 2 members' parts, two over
// 3 members').
func TestFSDPResumeOtherSize(t *testing.T) {
	x, y := zbatch(12)
	p := newZMLP()
	o := zeroOpts[1] // adam: a state to carry
	want := unshardedOver(o, p, x, y, []int{2, 2, 3, 3})
	type saved struct {
		P  zmlp
		St optim.State
	}
	var whole saved
	step := func(sp ddp.Sharded[zmlp], st optim.State, x, y *peel.Tensor) (ddp.Sharded[zmlp], optim.State) {
		g := transforms.Grad3(fsdpLoss)(sp, x, y)
		u, st := o.whole.Update(g.Shards, st, sp.Shards)
		sp.Shards = optim.ApplyUpdates(sp.Shards, u)
		return sp, st
	}
	dist.NewMesh(dist.MeshAxis("data", 2)).RunDevices(func(dv *dist.Device) {
		sp := ddp.Shard(p, dv.Comm("data"))
		st := o.whole.Init(sp.Shards)
		xr, yr := part(x, y, dv.Index, 2)
		for range 2 {
			sp, st = step(sp, st, xr, yr)
		}
		s := saved{ddp.Unshard(sp), ddp.UnshardState(sp, st)}
		if dv.Index == 0 {
			whole = s
		}
	})
	if e := zeroDiff(whole.P, want[1]); e > 1e-12 {
		t.Fatalf("after two steps on 2 members the parameters differ by %g", e)
	}
	path := t.TempDir() + "/fsdp.safetensors"
	if err := checkpoint.Save(path, whole); err != nil {
		t.Fatal(err)
	}
	whole, err := checkpoint.Load(path, whole)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]zmlp, 3)
	dist.NewMesh(dist.MeshAxis("data", 3)).RunDevices(func(dv *dist.Device) {
		sp := ddp.Shard(whole.P, dv.Comm("data"))
		st := ddp.ShardState(sp, whole.St)
		xr, yr := part(x, y, dv.Index, 3)
		for range 2 {
			sp, st = step(sp, st, xr, yr)
		}
		got[dv.Index] = ddp.Unshard(sp)
	})
	for d := range 3 {
		if e := zeroDiff(got[d], want[3]); e > 1e-12 {
			t.Errorf("member %d of 3, after resuming: parameters differ from the unsharded optimizer's by %g", d, e)
		}
	}
}

// TestFSDPClipAdamW: the GPT's optimizer over shards, global-norm
// clipping (ddp.ClipByGlobalNorm: the norm of the whole mean gradient)
// chained before AdamW whose weight decay is masked by the leaf's path
// (the shards keep the parameters' paths), equals the unsharded chain on
// one device with the mean gradient, to 1e-12, on 2 and 3 members, with
// a maximum norm small enough that every step clips.
func TestFSDPClipAdamW(t *testing.T) {
	const rows, steps, maxNorm = 12, 3, 0.05
	x, y := zbatch(rows)
	p := newZMLP()
	adamw := func() optim.Transformation[zmlp] {
		return optim.AdamW[zmlp](0.05, optim.WeightDecay(0.1), optim.WeightDecayMask(func(path string) bool { return strings.HasSuffix(path, ".W") }))
	}
	for _, n := range []int{2, 3} {
		o := zeroOpt{name: "clip-adamw", whole: optim.Chain(optim.ClipByGlobalNorm[zmlp](maxNorm), adamw())}
		want := unsharded(o, p, x, y, n, steps)
		if g := transforms.Grad3(zloss)(p, x, y); tree.GlobalNorm(g).Item() <= maxNorm {
			t.Fatalf("the gradient's norm %g does not reach %g: nothing is clipped", tree.GlobalNorm(g).Item(), maxNorm)
		}
		got := make([][]zmlp, n)
		dist.NewMesh(dist.MeshAxis("data", n)).RunDevices(func(dv *dist.Device) {
			comm := dv.Comm("data")
			so := zeroOpt{name: "clip-adamw", whole: optim.Chain(ddp.ClipByGlobalNorm[zmlp](maxNorm, comm), adamw())}
			got[dv.Index] = fsdpSteps(t, so, comm, false, p, x, y, steps)
		})
		for d := range n {
			for s := range steps {
				if e := zeroDiff(got[d][s], want[s]); e > 1e-12 {
					t.Errorf("%d members, device %d, step %d: parameters differ from the unsharded chain's by %g", n, d, s+1, e)
				}
			}
		}
	}
}

// TestFSDPPrefetchFrozenPart: where the first part is never updated
// (a frozen embedding), a step of the prefetcher ends at the first part
// that was, and the frozen part's gather is prefetched across the
// update (its values unchanged): L2 gathered, L1 prefetched from the
// fourth step on. Every gathered value equals the gather without
// prefetching.
func TestFSDPPrefetchFrozenPart(t *testing.T) {
	p := newZMLP()
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	mesh.RunDevices(func(dv *dist.Device) {
		run := func(opt ddp.Option) ([]float64, int, int, bool) {
			sp := ddp.Shard(p, dv.Comm("data"), opt)
			var vals []float64
			for range 6 {
				l1 := ddp.Gather(sp, func(p zmlp) nn.LinearParams { return p.L1 })
				l2 := ddp.Gather(sp, func(p zmlp) nn.LinearParams { return p.L2 })
				vals = append(append(vals, l1.W.Float64s()...), l2.W.Float64s()...)
				// Update L2 only.
				sp.Shards.L2 = tree.Map(func(x *peel.Tensor) *peel.Tensor { return peel.Mul(x, 0.5) }, sp.Shards.L2)
			}
			hits, misses, off := ddp.PrefetchCounts(sp)
			return vals, hits, misses, off
		}
		got, hits, misses, off := run(ddp.Prefetch(true))
		want, _, _, _ := run(ddp.Prefetch(false))
		if !slices.Equal(got, want) {
			t.Errorf("device %d: the gathered values differ from those without prefetching", dv.Index)
		}
		if hits != 3 || misses != 0 || off {
			t.Errorf("device %d: %d prefetches used, %d dropped (stopped %v), want 3 and 0", dv.Index, hits, misses, off)
		}
	})
}

// TestFSDPPrefetchDonated: a compiled step that donates the shards
// (transforms.Donate) hands its Gathers new tensors over reused memory,
// which the prefetcher cannot tell apart: it drops three prefetches in
// a row and stops; the parameters equal those without prefetching.
func TestFSDPPrefetchDonated(t *testing.T) {
	x, y := zbatch(6)
	p := newZMLP()
	o := zeroOpts[1]
	final := map[bool][]float64{}
	for _, prefetch := range []bool{true, false} {
		mesh := dist.NewMesh(dist.MeshAxis("data", 2))
		got := make([][]float64, 2)
		mesh.RunDevices(func(dv *dist.Device) {
			sp := ddp.Shard(p, dv.Comm("data"), ddp.Prefetch(prefetch))
			step := func(sp ddp.Sharded[zmlp], st optim.State, x, y *peel.Tensor) tree.Tuple2[ddp.Sharded[zmlp], optim.State] {
				g := transforms.Grad3(fsdpLoss)(sp, x, y)
				u, st := o.whole.Update(g.Shards, st, sp.Shards)
				sp.Shards = optim.ApplyUpdates(sp.Shards, u)
				return tree.Pack2(sp, st)
			}
			f := transforms.Compile4(step, transforms.Donate(0))
			sp.Shards = tree.Map(peel.Clone, sp.Shards) // the caller's own, to give up
			st := o.whole.Init(sp.Shards)
			xr, yr := part(x, y, dv.Index, 2)
			for range 4 {
				sp, st = f(sp, st, xr, yr).Unpack()
			}
			if hits, misses, off := ddp.PrefetchCounts(sp); prefetch && (hits != 0 || misses != 3 || !off) {
				t.Errorf("device %d: %d prefetches used, %d dropped (stopped %v), want 0, 3 and stopped", dv.Index, hits, misses, off)
			}
			for _, l := range tree.Leaves(sp.Shards) {
				got[dv.Index] = append(got[dv.Index], peel.AsType(l, peel.Float64).Float64s()...)
			}
		})
		final[prefetch] = slices.Concat(got...)
	}
	if !slices.Equal(final[true], final[false]) {
		t.Errorf("the parameters of donated steps with prefetching differ from those without")
	}
}
