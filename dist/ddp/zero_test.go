package ddp_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
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

// zmlp is a two-layer model whose f64 leaves have 43 elements in all
// (4·5 + 5 + 5·3 + 3: divisible by neither 2 nor 3, so the shards are
// padded) and an f32 leaf of one element (a second dtype, its own
// flattened vector, one element for three members).
type zmlp struct {
	L1, L2 nn.LinearParams
	Scale  *peel.Tensor // f32[1]
}

func newZMLP() zmlp {
	ks := peel.SplitKeys(peel.Key(7), 2)
	return zmlp{nn.InitLinear(ks[0], peel.Float64, 4, 5), nn.InitLinear(ks[1], peel.Float64, 5, 3), peel.FromFloat32s([]float32{1.25})}
}

func zloss(p zmlp, x, y *peel.Tensor) *peel.Tensor {
	h := nn.Linear(p.L1, x).Tanh()
	return nn.CrossEntropy(nn.Linear(p.L2, h).Mul(peel.AsType(p.Scale, peel.Float64)), y)
}

// zbatch is a batch of rows rows, the same in every process.
func zbatch(rows int) (x, y *peel.Tensor) {
	xs := make([]float64, rows*4)
	ys := make([]int64, rows)
	for i := range xs {
		xs[i] = math.Cos(0.37*float64(i) + 0.2)
	}
	for i := range ys {
		ys[i] = int64(i*5) % 3
	}
	return peel.FromFloat64s(xs, rows, 4), peel.FromInt64s(ys, rows)
}

// part returns member r of n's rows of the batch.
func part(x, y *peel.Tensor, r, n int) (*peel.Tensor, *peel.Tensor) {
	per := x.Shape()[0] / n
	return peel.Narrow(x, 0, r*per, per), peel.Narrow(y, 0, r*per, per)
}

// zeroOpt is an optimizer under test: the flat one ZeRO wraps and the
// same optimizer over whole parameter trees, the oracle.
type zeroOpt struct {
	name  string
	flat  optim.Transformation[*peel.Tensor]
	whole optim.Transformation[zmlp]
}

var zeroOpts = []zeroOpt{
	{"sgd-momentum", optim.SGD[*peel.Tensor](0.3, optim.Momentum(0.9)), optim.SGD[zmlp](0.3, optim.Momentum(0.9))},
	{"adam", optim.Adam[*peel.Tensor](0.05), optim.Adam[zmlp](0.05)},
}

// unsharded returns the parameters after each of steps steps of the
// whole optimizer on one device with the mean over n members of their
// gradients (summed in rank order, divided by n).
func unsharded(o zeroOpt, p zmlp, x, y *peel.Tensor, n, steps int) []zmlp {
	members := make([]int, steps)
	for i := range members {
		members[i] = n
	}
	return unshardedOver(o, p, x, y, members)
}

// unshardedOver is unsharded with the number of members of each step.
func unshardedOver(o zeroOpt, p zmlp, x, y *peel.Tensor, members []int) []zmlp {
	st := o.whole.Init(p)
	var out []zmlp
	for _, n := range members {
		var sum zmlp
		for r := range n {
			xr, yr := part(x, y, r, n)
			g := transforms.Grad3(zloss)(p, xr, yr)
			if r == 0 {
				sum = g
			} else {
				sum = tree.Map2(func(a, b *peel.Tensor) *peel.Tensor { return peel.Add(a, b) }, sum, g)
			}
		}
		mean := tree.Map(func(g *peel.Tensor) *peel.Tensor { return g.Div(float64(n)) }, sum)
		var u zmlp
		u, st = o.whole.Update(mean, st, p)
		p = optim.ApplyUpdates(p, u)
		out = append(out, p)
	}
	return out
}

type zeroStep = func(zmlp, ddp.ZeROState, *peel.Tensor, *peel.Tensor) tree.Tuple2[zmlp, ddp.ZeROState]

// shardedSteps runs steps ZeRO steps on this member of comm, each with
// the gradient of its part of the batch, and returns the parameters
// after each. It checks after Init and every step that the state holds
// this member's shard only.
func shardedSteps(t *testing.T, o zeroOpt, comm dist.Communicator, compiled bool, p zmlp, x, y *peel.Tensor, steps int) []zmlp {
	z := ddp.ShardOptimizer[zmlp](o.flat, comm)
	n := comm.Size()
	wantShards := []int{(43 + n - 1) / n, 1} // f64, then f32
	if got := z.ShardSize(p); !slices.Equal(got, wantShards) {
		t.Errorf("rank %d of %d: ShardSize %v, want %v", comm.Rank(), n, got, wantShards)
	}
	st := z.Init(p)
	checkShardState(t, st, wantShards, comm.Rank(), n)
	step := zeroStep(func(p zmlp, st ddp.ZeROState, x, y *peel.Tensor) tree.Tuple2[zmlp, ddp.ZeROState] {
		return tree.Pack2(z.Step(p, transforms.Grad3(zloss)(p, x, y), st))
	})
	if compiled {
		step = transforms.Compile4(step)
	}
	xr, yr := part(x, y, comm.Rank(), n)
	var out []zmlp
	for range steps {
		p, st = step(p, st, xr, yr).Unpack()
		checkShardState(t, st, wantShards, comm.Rank(), n)
		out = append(out, p)
	}
	return out
}

// checkShardState checks that st has a state per dtype whose tensors are
// scalars (step counts) or shards of the given sizes, of the group's
// dtype, and that the moments (SGD's trace, Adam's mu and nu) are
// present: one shard-sized tensor at least per group.
func checkShardState(t *testing.T, st ddp.ZeROState, shards []int, rank, n int) {
	t.Helper()
	if len(st) != len(shards) {
		t.Fatalf("rank %d of %d: %d shard states, want %d", rank, n, len(st), len(shards))
	}
	for k, s := range st {
		moments := 0
		for _, x := range tree.Leaves(s) {
			switch {
			case x.Rank() == 0 && x.DType() == peel.Int64:
			case x.Rank() == 1 && x.Shape()[0] == shards[k]:
				moments++
			default:
				t.Errorf("rank %d of %d: dtype %d's state holds %s, not a shard of %d elements", rank, n, k, x.TypeString(), shards[k])
			}
		}
		if moments == 0 {
			t.Errorf("rank %d of %d: dtype %d's state holds no shard of the moments", rank, n, k)
		}
	}
}

// zeroDiff is the largest difference between the leaves of a and b.
func zeroDiff(a, b zmlp) float64 {
	d := 0.0
	bl := tree.Leaves(b)
	for i, x := range tree.Leaves(a) {
		xs, ys := peel.AsType(x, peel.Float64).Float64s(), peel.AsType(bl[i], peel.Float64).Float64s()
		for k := range xs {
			d = math.Max(d, math.Abs(xs[k]-ys[k]))
		}
	}
	return d
}

// TestZeROEqualsUnsharded checks ZeRO-1 on the devices of in-process
// meshes of 1, 2 and 3 devices, eagerly and compiled, with SGD with
// momentum and with Adam, over three steps: after each step every
// device's parameters equal the whole optimizer's on one device with the
// mean gradient (to 1e-12; in process the sums go in rank order, so they
// agree to rounding of the flattening alone, which is exact), and each
// device's state holds only its shard.
func TestZeROEqualsUnsharded(t *testing.T) { testEqualsUnsharded(t, shardedSteps) }

// shardedRun runs steps sharded steps of an optimizer on one member of
// comm, eagerly or compiled, each with the gradient of the member's part
// of the batch, and returns the whole parameters after each step.
type shardedRun func(t *testing.T, o zeroOpt, comm dist.Communicator, compiled bool, p zmlp, x, y *peel.Tensor, steps int) []zmlp

// testEqualsUnsharded checks a sharded training (ZeRO-1 or ZeRO-3) on
// the devices of in-process meshes of 1, 2 and 3 devices, eagerly and
// compiled, with SGD with momentum and with Adam, over three steps:
// after each step every device's parameters equal the whole optimizer's
// on one device with the mean gradient, to 1e-12 (in process the sums go
// in rank order, so they agree to the rounding of the flattening alone,
// which is exact).
func testEqualsUnsharded(t *testing.T, run shardedRun) {
	const rows, steps = 12, 3
	x, y := zbatch(rows)
	p := newZMLP()
	for _, o := range zeroOpts {
		for _, n := range []int{1, 2, 3} {
			want := unsharded(o, p, x, y, n, steps)
			for _, compiled := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%ddev/compiled=%v", o.name, n, compiled), func(t *testing.T) {
					mesh := dist.NewMesh(dist.MeshAxis("data", n))
					got := make([][]zmlp, n)
					mesh.RunDevices(func(dv *dist.Device) {
						got[dv.Index] = run(t, o, dv.Comm("data"), compiled, p, x, y, steps)
					})
					for d := range n {
						for s := range steps {
							if e := zeroDiff(got[d][s], want[s]); e > 1e-12 {
								t.Errorf("device %d, step %d: parameters differ from the unsharded optimizer's by %g", d, s+1, e)
							}
						}
						if got[d][0].Scale.DType() != peel.Float32 {
							t.Errorf("device %d: Scale is %s", d, got[d][0].Scale.TypeString())
						}
					}
					if e := zeroDiff(want[steps-1], p); e == 0 {
						t.Errorf("the parameters did not move")
					}
				})
			}
		}
	}
}

// TestZeROCompiledCommunicates checks that a compiled step's program
// holds the collectives: a reduce-scatter and an all-gather per dtype.
func TestZeROCompiledCommunicates(t *testing.T) {
	x, y := zbatch(6)
	p := newZMLP()
	mesh := dist.NewMesh(dist.MeshAxis("data", 1))
	mesh.RunDevices(func(dv *dist.Device) {
		z := ddp.ShardOptimizer[zmlp](optim.Adam[*peel.Tensor](0.01), dv.Comm("data"))
		var ins transforms.Inspector
		f := transforms.Compile4(func(p zmlp, st ddp.ZeROState, x, y *peel.Tensor) tree.Tuple2[zmlp, ddp.ZeROState] {
			return tree.Pack2(z.Step(p, transforms.Grad3(zloss)(p, x, y), st))
		}, transforms.Inspect(&ins))
		st := z.Init(p)
		f(p, st, x, y)
		prog := ins.Explain(p, st, x, y)
		prog = prog[strings.LastIndex(prog, "program:"):]
		for _, prim := range []string{"ddp_reduce_scatter", "ddp_all_gather"} {
			if c := strings.Count(prog, prim); c != 2 {
				t.Errorf("the program has %d %s, want 2 (one per dtype):\n%s", c, prim, prog)
			}
		}
	})
}

func TestZeROErrors(t *testing.T) {
	p := newZMLP()
	wrongShape := p
	wrongShape.L1.B = peel.Zeros(peel.Float64, 6)
	mesh := dist.NewMesh(dist.MeshAxis("data", 1))
	mesh.RunDevices(func(dv *dist.Device) {
		comm := dv.Comm("data")
		z := ddp.ShardOptimizer[zmlp](optim.SGD[*peel.Tensor](0.1), comm)
		st := z.Init(p)
		for _, c := range []struct {
			name string
			f    func()
			want string
		}{
			{"nil optimizer", func() { ddp.ShardOptimizer[zmlp](nil, comm) }, "ddp.ShardOptimizer: the optimizer is nil"},
			{"nil communicator", func() { ddp.ShardOptimizer[zmlp](optim.SGD[*peel.Tensor](0.1), nil) }, "ddp.ShardOptimizer: the communicator is nil"},
			{"gradient shape", func() { z.Step(p, wrongShape, st) }, "parameter .L1.B is f64[5] but its gradient is f64[6]"},
			{"state length", func() { z.Step(p, p, st[:1]) }, "the state holds 1 shard states, but the parameters have 2 dtypes (f64, f32)"},
		} {
			t.Run(c.name, func(t *testing.T) {
				err := peel.Catch(c.f)
				if _, ok := err.(*peel.Error); !ok || !strings.Contains(err.Error(), c.want) {
					t.Errorf("got %v, want a *peel.Error containing %q", err, c.want)
				}
			})
		}
	})
}

// TestZeROResumeOnOtherSize: two ZeRO steps on three in-process devices,
// the whole state gathered (GatherState, the same on every device) and
// saved with the parameters by device 0 (package checkpoint), then read
// back and scattered (ScatterState) over two devices for two more steps:
// the parameters equal four steps of the whole optimizer on one device
// with the members' mean gradients (float64 leaves to 1e-12), for SGD
// with momentum and for Adam (whose step count travels too).
func TestZeROResumeOnOtherSize(t *testing.T) {
	x, y := zbatch(12)
	for _, o := range zeroOpts {
		t.Run(o.name, func(t *testing.T) {
			// The oracle: the whole optimizer, two steps with the mean of
			// three members' gradients, then two with two members'.
			ps := unshardedOver(o, newZMLP(), x, y, []int{3, 3, 2, 2})
			want := ps[len(ps)-1]

			path := t.TempDir() + "/zero.safetensors"
			type saved struct {
				Params zmlp
				State  ddp.ZeROState
			}
			var like saved
			dist.NewMesh(dist.MeshAxis("data", 3)).RunDevices(func(dv *dist.Device) {
				c := dv.Comm("data")
				z := ddp.ShardOptimizer[zmlp](o.flat, c)
				p := newZMLP()
				st := z.Init(p)
				xr, yr := part(x, y, c.Rank(), 3)
				for range 2 {
					p, st = z.Step(p, transforms.Grad3(zloss)(p, xr, yr), st)
				}
				whole := z.GatherState(p, st)
				if c.Rank() == 0 {
					like = saved{p, whole}
					if err := checkpoint.Save(path, like); err != nil {
						t.Error(err)
					}
				}
			})
			back, err := checkpoint.Load(path, like)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]zmlp, 2)
			dist.NewMesh(dist.MeshAxis("data", 2)).RunDevices(func(dv *dist.Device) {
				c := dv.Comm("data")
				z := ddp.ShardOptimizer[zmlp](o.flat, c)
				p := back.Params
				st := z.ScatterState(p, back.State)
				xr, yr := part(x, y, c.Rank(), 2)
				for range 2 {
					p, st = z.Step(p, transforms.Grad3(zloss)(p, xr, yr), st)
				}
				got[c.Rank()] = p
			})
			for r, g := range got {
				if d64, d32 := leafDiff(g, want); d64 > 1e-12 || d32 > 1e-6 {
					t.Fatalf("device %d: %g (float64 leaves), %g (float32) from the unsharded steps", r, d64, d32)
				}
			}
		})
	}
}
