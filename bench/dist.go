package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// The collectives of the in-process engine, and data-parallel training
// over its devices.

// psumSizes are the bytes each device contributes to a psum (f32).
var psumSizes = []int{1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26}

func sizeName(bytes int) string {
	switch {
	case bytes >= 1<<20:
		return fmt.Sprintf("%dmb", bytes>>20)
	case bytes >= 1<<10:
		return fmt.Sprintf("%dkb", bytes>>10)
	}
	return fmt.Sprintf("%db", bytes)
}

// perGBs is the metric of a workload that moves bytes: GB/s.
func perGBs(bytes int) func(float64) float64 {
	return func(ns float64) float64 { return float64(bytes) / ns }
}

// psumWorkloads are dist.Psum of a bytes-sized f32 tensor across the two
// devices of an in-process mesh (one Mesh.Run, a goroutine per device,
// per run), each followed by a Go copy of the same bytes: the memory
// bandwidth a psum is bounded by (it reads every device's operand and
// writes every device's result).
func psumWorkloads() []Workload {
	var ws []Workload
	for _, bytes := range psumSizes {
		n := bytes / 4
		ws = append(ws, Workload{
			Name: "psum_" + sizeName(bytes) + "_2dev", Impl: "peel",
			Doc:  fmt.Sprintf("dist.Psum of %d f32 (%s) per device across the 2 devices of an in-process mesh; metric: GB/s of one device's operand", n, sizeName(bytes)),
			Unit: "GB/s", Metric: perGBs(bytes),
			Setup: func() (func(), func() error) {
				mesh := dist.NewMesh(dist.MeshAxis("i", 2))
				xs := []*peel.Tensor{fromFloats(randFloats(91, n, -1, 1), peel.Float32), fromFloats(randFloats(92, n, -1, 1), peel.Float32)}
				out := make([]*peel.Tensor, 2)
				run := func() { mesh.Run(func(d int) { out[d] = dist.Psum(xs[d], "i") }) }
				check := func() error {
					want := hostFloats(peel.Add(xs[0], xs[1]))
					for d := range out {
						if err := compare(hostFloats(out[d]), want, 0, 0); err != nil {
							return fmt.Errorf("device %d: %v", d, err)
						}
					}
					return nil
				}
				return run, check
			},
		}, Workload{
			Name: "psum_" + sizeName(bytes) + "_2dev_copy", Impl: "go",
			Doc:  fmt.Sprintf("Go copy() of %d f32: the bandwidth bound", n),
			Unit: "GB/s", Metric: perGBs(bytes),
			Setup: func() (func(), func() error) {
				src := toF32(randFloats(93, n, -1, 1))
				dst := make([]float32, n)
				run := func() { copy(dst, src) }
				check := func() error {
					if dst[n-1] != src[n-1] {
						return fmt.Errorf("copy incomplete")
					}
					return nil
				}
				return run, check
			},
		})
	}
	return ws
}

// The data-parallel step: the digits MLP (64-64-10, f32) on a global
// batch of rows (the digits stand-in repeated), the batch split over the
// mesh axis "data", each device's gradient averaged with dist.Pmean, one
// Adam step; compiled.
func dpStep(devices, dpRows int) Workload {
	return Workload{
		Name: fmt.Sprintf("digits_dp_step_%d_%ddev", dpRows, devices), Impl: "peel",
		Doc:  fmt.Sprintf("a data-parallel training step of the digits MLP 64-64-10 (f32) on a global batch of %d rows split over %d in-process devices (ShardMap, Pmean of the gradients, Adam), compiled", dpRows, devices),
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			p, x, y := digitsData()
			reps := (dpRows + x.Shape()[0] - 1) / x.Shape()[0]
			xs, ys := make([]*peel.Tensor, reps), make([]*peel.Tensor, reps)
			for i := range reps {
				xs[i], ys[i] = x, y
			}
			x, y = peel.Narrow(peel.Concat(xs, 0), 0, 0, dpRows), peel.Narrow(peel.Concat(ys, 0), 0, 0, dpRows)
			mesh := dist.NewMesh(dist.MeshAxis("data", devices))
			opt := optim.Adam[digitsMLP](digitsLR)
			state := opt.Init(p)
			step := func(p digitsMLP, s optim.State, x, y *peel.Tensor) tree.Tuple3[digitsMLP, optim.State, *peel.Tensor] {
				loss := func(p digitsMLP) *peel.Tensor {
					return nn.CrossEntropy(nn.Linear(p.L2, peel.ReLU(nn.Linear(p.L1, x))), y)
				}
				l, g := transforms.ValueAndGrad(loss)(p)
				g = tree.Map(func(g *peel.Tensor) *peel.Tensor { return dist.Pmean(g, "data") }, g)
				u, s := opt.Update(g, s, p)
				return tree.Pack3(optim.ApplyUpdates(p, u), s, dist.Pmean(l, "data"))
			}
			sharded := transforms.ShardMap3(func(p digitsMLP, s optim.State, b tree.Tuple2[*peel.Tensor, *peel.Tensor]) tree.Tuple3[digitsMLP, optim.State, *peel.Tensor] {
				return step(p, s, b.V0, b.V1)
			}, mesh, []any{dist.P(), dist.P(), dist.P("data")}, dist.P())
			compiled := transforms.Compile3(sharded)
			var out tree.Tuple3[digitsMLP, optim.State, *peel.Tensor]
			run := func() { out = compiled(p, state, tree.Pack2(x, y)) }
			check := func() error {
				loss := func(p digitsMLP) *peel.Tensor {
					return nn.CrossEntropy(nn.Linear(p.L2, peel.ReLU(nn.Linear(p.L1, x))), y)
				}
				l, g := transforms.ValueAndGrad(loss)(p)
				u, _ := opt.Update(g, state, p)
				want := optim.ApplyUpdates(p, u)
				if d := math.Abs(out.V2.Item() - l.Item()); d > 1e-5 {
					return fmt.Errorf("loss %v, want %v", out.V2.Item(), l.Item())
				}
				gl, wl := tree.Leaves(out.V0), tree.Leaves(want)
				for i := range wl {
					if err := compare(hostFloats(peel.AsType(gl[i], peel.Float64)), hostFloats(peel.AsType(wl[i], peel.Float64)), 1e-4, 1e-6); err != nil {
						return fmt.Errorf("params after the step, %s: %v", tree.Paths(want)[i], err)
					}
				}
				return nil
			}
			return run, check
		},
	}
}

func distWorkloads() []Workload {
	return append(psumWorkloads(), dpStep(1, 512), dpStep(2, 512), dpStep(1, 8192), dpStep(2, 8192))
}
