package ddp_test

import (
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

// fsdpSteps runs steps fully sharded steps of the optimizer over the
// shards on this member of comm, each with the gradient of its part of
// the batch, and returns the whole parameters after each. It checks that
// every shard holds 1/N of its leaf.
func fsdpSteps(t *testing.T, o zeroOpt, comm dist.Communicator, compiled bool, p zmlp, x, y *peel.Tensor, steps int) []zmlp {
	n := comm.Size()
	sp := ddp.Shard(p, comm)
	whole, shards := tree.Leaves(p), tree.Leaves(sp.Shards)
	for i, s := range shards {
		if want := (whole[i].Size() + n - 1) / n; s.Rank() != 1 || s.Size() != want || s.DType() != whole[i].DType() {
			t.Errorf("rank %d of %d: leaf %d (%s) has a %s shard, want %d elements", comm.Rank(), n, i, whole[i].TypeString(), s.TypeString(), want)
		}
	}
	step := func(sp ddp.Sharded[zmlp], st optim.State, x, y *peel.Tensor) tree.Tuple2[ddp.Sharded[zmlp], optim.State] {
		g := transforms.Grad3(fsdpLoss)(sp, x, y)
		u, st := o.whole.Update(g.Shards, st, sp.Shards)
		sp.Shards = optim.ApplyUpdates(sp.Shards, u)
		return tree.Pack2(sp, st)
	}
	if compiled {
		step = fsdpStep(transforms.Compile4(step))
	}
	st := o.whole.Init(sp.Shards)
	xr, yr := part(x, y, comm.Rank(), n)
	var out []zmlp
	for range steps {
		sp, st = step(sp, st, xr, yr).Unpack()
		out = append(out, ddp.Unshard(sp))
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
	gathers, scatters *atomic.Int64
}

func (c countingComm) AllGather(x *peel.Tensor) *peel.Tensor {
	c.gathers.Add(1)
	return c.Communicator.AllGather(x)
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
		var gathers, scatters atomic.Int64
		sp := ddp.Shard(p, countingComm{dv.Comm("data"), &gathers, &scatters})
		gathers.Store(0)
		transforms.Grad3(fsdpLoss)(sp, x, y)
		// L2 twice, L1 and Scale once each; three parts' gradients.
		if g, s := gathers.Load(), scatters.Load(); g != 4 || s != 3 {
			t.Errorf("an eager step ran %d all-gathers and %d reduce-scatters, want 4 and 3", g, s)
		}
		var ins transforms.Inspector
		f := transforms.Compile3(transforms.Grad3(fsdpLoss), transforms.Inspect(&ins))
		f(sp, x, y)
		prog := ins.Explain(sp, x, y)
		prog = prog[strings.LastIndex(prog, "program:"):]
		if c := strings.Count(prog, "fsdp_all_gather"); c != 4 {
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
