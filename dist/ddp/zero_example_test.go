package ddp_test

import (
	"fmt"
	"slices"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
)

// Line is the model of ExampleShardOptimizer: y = x·W + B.
type Line struct{ W, B *peel.Tensor }

// Two in-process devices fit a line with ZeRO-1 and Adam: each sees half
// of the batch and keeps Adam's moments for half of the parameters (W's
// three elements and B, flattened: two each), and both end with the same
// parameters, those of Adam on the whole batch.
func ExampleShardOptimizer() {
	x := peel.FromFloat64s([]float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, 4, 3)
	y := peel.FromFloat64s([]float64{3, -1, 2, 2}, 4) // 2·x₀ - 2·x₁ + 1·x₂ + 1
	loss := func(p Line, x, y *peel.Tensor) *peel.Tensor {
		return peel.MatMul(x, p.W).Add(p.B).Sub(y).Square().Mean()
	}
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	final := make([]Line, 2)
	mesh.RunDevices(func(dv *dist.Device) {
		z := ddp.ShardOptimizer[Line](optim.Adam[*peel.Tensor](0.1), dv.Comm("data"))
		p := Line{peel.Zeros(peel.Float64, 3), peel.Zeros(peel.Float64)}
		state := z.Init(p)
		xs, ys := peel.Narrow(x, 0, 2*dv.Index, 2), peel.Narrow(y, 0, 2*dv.Index, 2)
		for range 500 {
			grads := transforms.Grad3(loss)(p, xs, ys) // this device's half only
			p, state = z.Step(p, grads, state)
		}
		final[dv.Index] = p
	})
	fmt.Printf("W %.3f B %.3f\n", final[0].W.Float64s(), final[0].B.Item())
	fmt.Println("equal on both devices:", slices.Equal(final[0].W.Float64s(), final[1].W.Float64s()) && final[0].B.Item() == final[1].B.Item())
	// Output:
	// W [2.000 -2.000 1.000] B 1.000
	// equal on both devices: true
}

// Two in-process devices fit the same line with ZeRO-3: each keeps half
// of every parameter (W's three elements padded to four, two each; B's
// one padded to two) and Adam's moments of that half, gathers the whole
// line where the loss uses it, and gets its half of the mean gradient
// back. Unshard gives the whole parameters: Adam's on the whole batch.
func ExampleShard() {
	x := peel.FromFloat64s([]float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, 4, 3)
	y := peel.FromFloat64s([]float64{3, -1, 2, 2}, 4)
	loss := func(sp ddp.Sharded[Line], x, y *peel.Tensor) *peel.Tensor {
		p := ddp.Gather(sp, func(p Line) Line { return p })
		return peel.MatMul(x, p.W).Add(p.B).Sub(y).Square().Mean()
	}
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	final := make([]Line, 2)
	mesh.RunDevices(func(dv *dist.Device) {
		sp := ddp.Shard(Line{peel.Zeros(peel.Float64, 3), peel.Zeros(peel.Float64)}, dv.Comm("data"))
		opt := optim.Adam[Line](0.1)
		state := opt.Init(sp.Shards)
		xs, ys := peel.Narrow(x, 0, 2*dv.Index, 2), peel.Narrow(y, 0, 2*dv.Index, 2)
		for range 500 {
			g := transforms.Grad3(loss)(sp, xs, ys)
			var u Line
			u, state = opt.Update(g.Shards, state, sp.Shards)
			sp.Shards = optim.ApplyUpdates(sp.Shards, u)
		}
		if dv.Index == 0 {
			fmt.Println("device 0 holds W", sp.Shards.W.Shape(), "and B", sp.Shards.B.Shape())
		}
		final[dv.Index] = ddp.Unshard(sp)
	})
	fmt.Printf("W %.3f B %.3f\n", final[0].W.Float64s(), final[0].B.Item())
	// Output:
	// device 0 holds W [2] and B [1]
	// W [2.000 -2.000 1.000] B 1.000
}
