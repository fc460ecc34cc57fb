package ddp_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// mlp is a three-layer model with a leaf of another dtype and a leaf the
// loss does not use, to exercise per-dtype buckets and zero gradients.
type mlp struct {
	L1, L2, L3 nn.LinearParams
	Scale      *peel.Tensor // f32, multiplies the logits
	Unused     *peel.Tensor
}

func newMLP(dt peel.DType) mlp {
	ks := peel.SplitKeys(peel.Key(3), 3)
	return mlp{
		nn.InitLinear(ks[0], dt, 8, 16), nn.InitLinear(ks[1], dt, 16, 16), nn.InitLinear(ks[2], dt, 16, 4),
		peel.FromFloat32s([]float32{1.5}), peel.Zeros(dt, 3),
	}
}

func loss(p mlp, x, y *peel.Tensor) *peel.Tensor {
	h := nn.Linear(p.L2, nn.Linear(p.L1, x).Tanh()).Tanh()
	logits := nn.Linear(p.L3, h).Mul(peel.AsType(p.Scale, x.DType()))
	return nn.CrossEntropy(logits, y)
}

func batch(dt peel.DType, n int) (x, y *peel.Tensor) {
	xs := make([]float64, n*8)
	ys := make([]int64, n)
	for i := range xs {
		xs[i] = math.Sin(0.7*float64(i) + 0.1)
	}
	for i := range ys {
		ys[i] = int64(i*7) % 4
	}
	return peel.AsType(peel.FromFloat64s(xs, n, 8), dt), peel.FromInt64s(ys, n)
}

// recorder is a Communicator that logs the all-reduces started on it.
type recorder struct {
	dist.Communicator
	log *[]string
	mu  *sync.Mutex
}

func (r recorder) IAllReduceInPlace(x *peel.Tensor, op dist.ReduceOp) dist.Request {
	r.mu.Lock()
	*r.log = append(*r.log, fmt.Sprintf("allreduce %s", x.TypeString()))
	r.mu.Unlock()
	return r.Communicator.IAllReduceInPlace(x, op)
}

// leafDiff returns the largest difference between the leaves of two
// trees of one structure, over the float64 leaves and over the others
// (float32: their own roundings).
func leafDiff(a, b any) (d64, d32 float64) {
	bs := tree.Leaves(b)
	for i, x := range tree.Leaves(a) {
		d := peel.Max(peel.Abs(peel.Sub(peel.AsType(x, peel.Float64), peel.AsType(bs[i], peel.Float64)))).Item()
		if x.DType() == peel.Float64 {
			d64 = math.Max(d64, d)
		} else {
			d32 = math.Max(d32, d)
		}
	}
	return d64, d32
}

func maxDiff(t *testing.T, a, b mlp) float64 {
	t.Helper()
	d := 0.0
	for i, x := range tree.Leaves(a) {
		y := tree.Leaves(b)[i]
		xs, ys := peel.AsType(x, peel.Float64).Float64s(), peel.AsType(y, peel.Float64).Float64s()
		for k := range xs {
			d = math.Max(d, math.Abs(xs[k]-ys[k]))
		}
	}
	return d
}

// TestValueAndGradEqualsOneDevice checks data-parallel gradients on the
// devices of an in-process mesh against the gradient of the whole batch
// on one device (float64, to 1e-12), eagerly and compiled, with and
// without overlap, with one bucket and with a bucket per leaf.
func TestValueAndGradEqualsOneDevice(t *testing.T) {
	const n = 12
	x, y := batch(peel.Float64, n)
	p := newMLP(peel.Float64)
	wantL, wantG := transforms.ValueAndGrad3(loss)(p, x, y)
	for _, devices := range []int{1, 2, 3} {
		for _, compiled := range []bool{false, true} {
			for _, opts := range []struct {
				name string
				o    []ddp.Option
			}{
				{"default", nil},
				{"bucket-per-leaf", []ddp.Option{ddp.FirstBucketBytes(1), ddp.BucketBytes(1)}},
				{"small-buckets", []ddp.Option{ddp.FirstBucketBytes(600), ddp.BucketBytes(1200)}},
				{"no-overlap", []ddp.Option{ddp.NoOverlap(), ddp.FirstBucketBytes(1), ddp.BucketBytes(1)}},
			} {
				t.Run(fmt.Sprintf("%ddev/compiled=%v/%s", devices, compiled, opts.name), func(t *testing.T) {
					mesh := dist.NewMesh(dist.MeshAxis("data", devices))
					per := n / devices
					ls := make([]*peel.Tensor, devices)
					gs := make([]mlp, devices)
					mesh.RunDevices(func(dv *dist.Device) {
						f := ddp.ValueAndGrad3(loss, dv.Comm("data"), opts.o...)
						if compiled {
							f = uncompile(transforms.Compile3(tuple(f)))
						}
						xb, yb := peel.Narrow(x, 0, dv.Index*per, per), peel.Narrow(y, 0, dv.Index*per, per)
						for range 2 { // a compiled step runs its program again
							ls[dv.Index], gs[dv.Index] = f(p, xb, yb)
						}
					})
					for d := range devices {
						if ls[d].Rank() != 0 {
							t.Errorf("device %d: the loss is %s, not a scalar", d, ls[d].TypeString())
						}
						if e := math.Abs(ls[d].Item() - wantL.Item()); e > 1e-12 {
							t.Errorf("device %d: loss %v, want %v", d, ls[d].Item(), wantL.Item())
						}
						if e := maxDiff(t, gs[d], wantG); e > 1e-12 {
							t.Errorf("device %d: gradient differs from one device's by %g", d, e)
						}
						if gs[d].Scale.DType() != peel.Float32 {
							t.Errorf("device %d: Scale's gradient is %s", d, gs[d].Scale.TypeString())
						}
					}
				})
			}
		}
	}
}

// TestBucketsStartDuringBackward checks the overlap: with a bucket per
// leaf, the last layer's gradient is all-reduced before the backward pass
// reaches the first layer (a Hook on the first layer's output logs when
// it does), and the buckets go in reverse order of use.
func TestBucketsStartDuringBackward(t *testing.T) {
	x, y := batch(peel.Float64, 6)
	p := newMLP(peel.Float64)
	var log []string
	mu := &sync.Mutex{}
	probe := func(p mlp, x, y *peel.Tensor) *peel.Tensor {
		h1 := transforms.Hook(nn.Linear(p.L1, x), func(ct *peel.Tensor) *peel.Tensor {
			mu.Lock()
			log = append(log, "backward reaches layer 1")
			mu.Unlock()
			return nil
		})
		h := nn.Linear(p.L2, h1.Tanh()).Tanh()
		return nn.CrossEntropy(nn.Linear(p.L3, h).Mul(peel.AsType(p.Scale, x.DType())), y)
	}
	for _, overlap := range []bool{true, false} {
		log = nil
		mesh := dist.NewMesh(dist.MeshAxis("data", 2))
		mesh.RunDevices(func(dv *dist.Device) {
			comm := dv.Comm("data")
			if dv.Index == 0 {
				comm = recorder{comm, &log, mu}
			}
			opts := []ddp.Option{ddp.FirstBucketBytes(1), ddp.BucketBytes(1)}
			if !overlap {
				opts = append(opts, ddp.NoOverlap())
			}
			ddp.ValueAndGrad3(probe, comm, opts...)(p, peel.Narrow(x, 0, 3*dv.Index, 3), peel.Narrow(y, 0, 3*dv.Index, 3))
		})
		got := strings.Join(log, "\n")
		layer1 := strings.Index(got, "backward reaches layer 1")
		first := strings.Index(got, "allreduce")
		if overlap && (first < 0 || first > layer1) {
			t.Errorf("overlap: no all-reduce started before the backward pass reached layer 1:\n%s", got)
		}
		if !overlap && first < layer1 {
			t.Errorf("NoOverlap: an all-reduce started during the backward pass:\n%s", got)
		}
		// Reverse order of use: the f32 Scale and L3's gradients come
		// first (f32[1] then f64[4] and f64[16,4]), L1's last.
		if overlap && !strings.HasPrefix(got, "allreduce f32[1]\n") {
			t.Errorf("the first bucket is not the last-used leaf's:\n%s", got)
		}
		t.Logf("overlap=%v:\n%s", overlap, got)
	}
}

// TestCompiledStartsBeforeBackwardEnds checks the compiled program's
// order: the first all-reduce starts before the last matrix product of
// the backward pass, and every wait comes after it.
func TestCompiledStartsBeforeBackwardEnds(t *testing.T) {
	x, y := batch(peel.Float64, 6)
	p := newMLP(peel.Float64)
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	progs := make([]string, 2)
	mesh.RunDevices(func(dv *dist.Device) {
		var ins transforms.Inspector
		f := transforms.Compile3(tuple(ddp.ValueAndGrad3(loss, dv.Comm("data"), ddp.FirstBucketBytes(1), ddp.BucketBytes(1))), transforms.Inspect(&ins))
		xb, yb := peel.Narrow(x, 0, 3*dv.Index, 3), peel.Narrow(y, 0, 3*dv.Index, 3)
		f(p, xb, yb)
		progs[dv.Index] = ins.Explain(p, xb, yb)
	})
	prog := progs[0][strings.LastIndex(progs[0], "program:"):]
	lines := strings.Split(prog, "\n")
	firstStart, lastDot, firstWait := -1, -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, "allreduce_start") && firstStart < 0:
			firstStart = i
		case strings.Contains(l, "allreduce_wait") && firstWait < 0:
			firstWait = i
		case strings.Contains(l, "dot_general"):
			lastDot = i
		}
	}
	if firstStart < 0 || lastDot < 0 || firstWait < 0 || !(firstStart < lastDot && lastDot < firstWait) {
		t.Errorf("first start at line %d, last dot_general at %d, first wait at %d:\n%s", firstStart, lastDot, firstWait, prog)
	}
}

// TestOneMemberIsPlainGradient: with one member there is nothing to
// exchange, and the step is the plain gradient (no effect in the
// compiled program).
func TestOneMemberIsPlainGradient(t *testing.T) {
	x, y := batch(peel.Float64, 6)
	p := newMLP(peel.Float64)
	mesh := dist.NewMesh(dist.MeshAxis("data", 1))
	mesh.RunDevices(func(dv *dist.Device) {
		var ins transforms.Inspector
		f := transforms.Compile3(tuple(ddp.ValueAndGrad3(loss, dv.Comm("data"))), transforms.Inspect(&ins))
		f(p, x, y)
		if prog := ins.Explain(p, x, y); strings.Contains(prog, "allreduce") {
			t.Errorf("one member's program communicates:\n%s", prog)
		}
	})
}

type step = func(mlp, *peel.Tensor, *peel.Tensor) (*peel.Tensor, mlp)

// tuple and uncompile convert a step to and from the one-result form
// Compile takes.
func tuple(f step) func(mlp, *peel.Tensor, *peel.Tensor) tree.Tuple2[*peel.Tensor, mlp] {
	return func(p mlp, x, y *peel.Tensor) tree.Tuple2[*peel.Tensor, mlp] { return tree.Pack2(f(p, x, y)) }
}

func uncompile(f func(mlp, *peel.Tensor, *peel.Tensor) tree.Tuple2[*peel.Tensor, mlp]) step {
	return func(p mlp, x, y *peel.Tensor) (*peel.Tensor, mlp) { return f(p, x, y).Unpack() }
}

func TestValueAndGradErrors(t *testing.T) {
	err := peel.Catch(func() { ddp.ValueAndGrad3(loss, nil) })
	if _, ok := err.(*peel.Error); !ok || !strings.Contains(err.Error(), "ddp.ValueAndGrad3") {
		t.Errorf("nil communicator: %v", err)
	}
	err = peel.Catch(func() { ddp.BucketBytes(0) })
	if _, ok := err.(*peel.Error); !ok {
		t.Errorf("BucketBytes(0): %v", err)
	}
}

// perturbed is p with its L2 weights changed by d (a member that
// initialized its parameters with another seed).
func perturbed(p mlp, d float64) mlp {
	p.L2.W = peel.Add(p.L2.W, d)
	return p
}

// TestMembersStartInSync: members whose parameters differ at the first
// step get a *peel.Error naming the leaf, every one of them (no member
// is left waiting), from ValueAndGrad3 and from ZeRO's Init; after
// Broadcast of member 0's parameters they train as one process on the
// whole batch would (float64, to 1e-12), eager and compiled (a traced
// call checks nothing).
func TestMembersStartInSync(t *testing.T) {
	const n, rows = 3, 12
	x, y := batch(peel.Float64, rows)
	p0 := newMLP(peel.Float64)
	wantL, wantG := transforms.ValueAndGrad3(loss)(p0, x, y)
	mesh := dist.NewMesh(dist.MeshAxis("data", n))
	errs := make([]error, n)
	mesh.RunDevices(func(dv *dist.Device) {
		errs[dv.Index] = peel.Catch(func() {
			ddp.ValueAndGrad3(loss, dv.Comm("data"))(perturbed(p0, 0.01*float64(dv.Index)), x, y)
		})
	})
	for d, err := range errs {
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "differ at the first step (leaf .L2.W: member 1's") || !strings.Contains(pe.Error(), "ddp.Broadcast") {
			t.Fatalf("device %d: got %v, want the *peel.Error naming .L2.W", d, err)
		}
	}
	mesh.RunDevices(func(dv *dist.Device) {
		errs[dv.Index] = peel.Catch(func() {
			ddp.ShardOptimizer[mlp](optim.SGD[*peel.Tensor](0.1), dv.Comm("data")).Init(perturbed(p0, 0.01*float64(dv.Index)))
		})
	})
	for d, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "ddp.ZeRO.Init") || !strings.Contains(err.Error(), "leaf .L2.W") {
			t.Fatalf("ZeRO.Init, device %d: got %v, want the *peel.Error naming .L2.W", d, err)
		}
	}
	for _, compiled := range []bool{false, true} {
		ls, gs := make([]*peel.Tensor, n), make([]mlp, n)
		mesh.RunDevices(func(dv *dist.Device) {
			c := dv.Comm("data")
			p := ddp.Broadcast(perturbed(p0, 0.01*float64(dv.Index)), c, 0)
			f := ddp.ValueAndGrad3(loss, c)
			if compiled {
				f = uncompile(transforms.Compile3(tuple(f)))
			}
			per := rows / n
			ls[dv.Index], gs[dv.Index] = f(p, peel.Narrow(x, 0, dv.Index*per, per), peel.Narrow(y, 0, dv.Index*per, per))
		})
		for d := range n {
			if e := math.Abs(ls[d].Item() - wantL.Item()); e > 1e-12 {
				t.Fatalf("compiled=%v device %d: loss off by %g after Broadcast", compiled, d, e)
			}
			for i, g := range tree.Leaves(gs[d]) {
				if e := peel.Max(peel.Abs(peel.Sub(peel.AsType(g, peel.Float64), peel.AsType(tree.Leaves(wantG)[i], peel.Float64)))).Item(); e > 1e-12 {
					t.Fatalf("compiled=%v device %d leaf %d: gradient off by %g after Broadcast", compiled, d, i, e)
				}
			}
		}
	}
}

// TestAccumulateEqualsOneDevice: gradient accumulation over micro-batches
// (AccumulateValueAndGrad3) on 1, 2 and 3 devices equals the whole
// batch's loss and gradient on one device (float64, to 1e-12), with
// default buckets and a bucket per leaf, and communicates one step's
// all-reduces: as many as one ValueAndGrad3 step (the micro-batches but
// the last exchange nothing).
func TestAccumulateEqualsOneDevice(t *testing.T) {
	const rows = 12
	x, y := batch(peel.Float64, rows)
	p := newMLP(peel.Float64)
	wantL, wantG := transforms.ValueAndGrad3(loss)(p, x, y)
	for _, devices := range []int{1, 2, 3} {
		per := rows / devices
		for _, micro := range []int{1, 2, per} {
			for _, o := range [][]ddp.Option{nil, {ddp.FirstBucketBytes(1), ddp.BucketBytes(1)}} {
				mesh := dist.NewMesh(dist.MeshAxis("data", devices))
				ls := make([]*peel.Tensor, devices)
				gs := make([]mlp, devices)
				logs := make([][]string, 2*devices)
				var mu sync.Mutex
				mesh.RunDevices(func(dv *dist.Device) {
					c := recorder{dv.Comm("data"), &logs[dv.Index], &mu}
					var xs, ys []*peel.Tensor
					for j := range micro {
						m := per / micro
						xs = append(xs, peel.Narrow(x, 0, dv.Index*per+j*m, m))
						ys = append(ys, peel.Narrow(y, 0, dv.Index*per+j*m, m))
					}
					ls[dv.Index], gs[dv.Index] = ddp.AccumulateValueAndGrad3(loss, c, o...)(p, xs, ys)
					one := recorder{dv.Comm("data"), &logs[devices+dv.Index], &mu}
					ddp.ValueAndGrad3(loss, one, o...)(p, xs[0], ys[0])
				})
				for d := range devices {
					if e := math.Abs(ls[d].Item() - wantL.Item()); e > 1e-12 {
						t.Errorf("%d devices, %d micro-batches, device %d: loss %v, want %v", devices, micro, d, ls[d].Item(), wantL.Item())
					}
					// The f32 leaf (Scale) sums its micro-batches in f32.
					f32, wantF := gs[d], wantG
					f32.Scale = peel.Zeros(peel.Float32, 1)
					wantF.Scale = f32.Scale
					if e := maxDiff(t, f32, wantF); e > 1e-12 {
						t.Errorf("%d devices, %d micro-batches, device %d: gradient differs from one device's by %g", devices, micro, d, e)
					}
					if e := math.Abs(float64(gs[d].Scale.Float32s()[0] - wantG.Scale.Float32s()[0])); e > 1e-6*math.Abs(float64(wantG.Scale.Float32s()[0])) {
						t.Errorf("%d devices, %d micro-batches, device %d: Scale's gradient differs by %g", devices, micro, d, e)
					}
					if len(logs[d]) != len(logs[devices+d]) {
						t.Errorf("%d devices, %d micro-batches: %d all-reduces, one step makes %d", devices, micro, len(logs[d]), len(logs[devices+d]))
					}
				}
			}
		}
	}
	err := peel.Catch(func() {
		ddp.AccumulateValueAndGrad3(loss, dist.World())(p, []*peel.Tensor{x}, nil)
	})
	if err == nil || !strings.Contains(err.Error(), "1 micro-batches of inputs and 0 of targets") {
		t.Fatalf("mismatched micro-batches: got %v", err)
	}
}

// TestCommDType: gradients that travel as bfloat16 (and float32, for
// float64 gradients) come back in their own dtype, within the wire
// dtype's rounding of the whole batch's gradient (a relative error of a
// few 2^-8 of the gradient's largest element for bfloat16), eagerly and
// compiled; the loss travels in its own dtype, exactly. The bfloat16
// error on this model is logged.
func TestCommDType(t *testing.T) {
	const rows = 12
	x, y := batch(peel.Float64, rows)
	p := newMLP(peel.Float64)
	wantL, wantG := transforms.ValueAndGrad3(loss)(p, x, y)
	for _, c := range []struct {
		wire peel.DType
		tol  float64
	}{{peel.BFloat16, 4.0 / 256}, {peel.Float32, 1e-6}} {
		for _, compiled := range []bool{false, true} {
			const n = 3
			per := rows / n
			ls, gs := make([]*peel.Tensor, n), make([]mlp, n)
			dist.NewMesh(dist.MeshAxis("data", n)).RunDevices(func(dv *dist.Device) {
				f := ddp.ValueAndGrad3(loss, dv.Comm("data"), ddp.CommDType(c.wire))
				if compiled {
					f = uncompile(transforms.Compile3(tuple(f)))
				}
				ls[dv.Index], gs[dv.Index] = f(p, peel.Narrow(x, 0, dv.Index*per, per), peel.Narrow(y, 0, dv.Index*per, per))
			})
			for d := range n {
				if e := math.Abs(ls[d].Item() - wantL.Item()); e > 1e-12 {
					t.Fatalf("%v compiled=%v device %d: loss off by %g", c.wire, compiled, d, e)
				}
				worst := 0.0
				for i, g := range tree.Leaves(gs[d]) {
					w := tree.Leaves(wantG)[i]
					if g.DType() != w.DType() {
						t.Fatalf("%v: leaf %d came back as %v, want %v", c.wire, i, g.DType(), w.DType())
					}
					scale := peel.Max(peel.Abs(peel.AsType(w, peel.Float64))).Item()
					if scale == 0 {
						continue
					}
					e := peel.Max(peel.Abs(peel.Sub(peel.AsType(g, peel.Float64), peel.AsType(w, peel.Float64)))).Item() / scale
					worst = math.Max(worst, e)
				}
				if worst > c.tol {
					t.Fatalf("%v compiled=%v device %d: gradient off by %g of its largest element, want ≤ %g", c.wire, compiled, d, worst, c.tol)
				}
				if d == 0 && !compiled {
					t.Logf("gradients as %v: worst error %.3g of a leaf's largest element", c.wire, worst)
				}
			}
		}
	}
	if err := peel.Catch(func() { ddp.CommDType(peel.Int64) }); err == nil || !strings.Contains(err.Error(), "not i64") {
		t.Fatalf("CommDType(i64): got %v", err)
	}
}
