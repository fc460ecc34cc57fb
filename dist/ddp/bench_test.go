package ddp_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

type bigMLP struct{ L1, L2, L3 nn.LinearParams }

func bigLoss(p bigMLP, x, y *peel.Tensor) *peel.Tensor {
	h := nn.Linear(p.L2, nn.Linear(p.L1, x).ReLU()).ReLU()
	return nn.CrossEntropy(nn.Linear(p.L3, h), y)
}

// bigSetup returns the MLP's parameters and a batch of 256 rows.
func bigSetup() (p bigMLP, x, y *peel.Tensor) {
	ks := peel.SplitKeys(peel.Key(5), 4)
	p = bigMLP{nn.InitLinear(ks[0], peel.Float32, 784, 1024), nn.InitLinear(ks[1], peel.Float32, 1024, 1024), nn.InitLinear(ks[2], peel.Float32, 1024, 10)}
	return p, peel.Uniform(ks[3], peel.Float32, 256, 784), peel.Rem(peel.Arange(peel.Int64, 0, 256, 1), int64(10))
}

// BenchmarkBigStep is one SGD step of a 784-1024-1024-10 MLP (f32, batch
// 256, kernels on one thread) with the plain gradient and with
// ddp.ValueAndGrad3 over a 2-device in-process mesh (device 0's time;
// the devices share the cores), eager and compiled: the cost of the
// buckets. The MPI numbers come from bench/cmd/mpibench.
func BenchmarkBigStep(b *testing.B) {
	cpu.SetThreads(1)
	p0, x, y := bigSetup()
	mk := func(grad func(bigMLP, *peel.Tensor, *peel.Tensor) (*peel.Tensor, bigMLP)) func(bigMLP, *peel.Tensor, *peel.Tensor) tree.Tuple2[bigMLP, *peel.Tensor] {
		return func(p bigMLP, x, y *peel.Tensor) tree.Tuple2[bigMLP, *peel.Tensor] {
			l, g := grad(p, x, y)
			return tree.Pack2(tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(0.01)) }, p, g), l)
		}
	}
	for _, c := range []struct {
		name string
		f    func(bigMLP, *peel.Tensor, *peel.Tensor) tree.Tuple2[bigMLP, *peel.Tensor]
	}{
		{"plain-eager", mk(transforms.ValueAndGrad3(bigLoss))},
		{"plain-compiled", transforms.Compile3(mk(transforms.ValueAndGrad3(bigLoss)))},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := p0
			for b.Loop() {
				p, _ = c.f(p, x, y).Unpack()
			}
		})
	}
	for _, compiled := range []bool{false, true} {
		name := "ddp-2dev-eager"
		if compiled {
			name = "ddp-2dev-compiled"
		}
		b.Run(name, func(b *testing.B) {
			mesh := dist.NewMesh(dist.MeshAxis("data", 2))
			mesh.RunDevices(func(dv *dist.Device) {
				f := mk(ddp.ValueAndGrad3(bigLoss, dv.Comm("data")))
				if compiled {
					f = transforms.Compile3(f)
				}
				p := p0
				f(p, x, y) // warm up (and compile)
				if dv.Index == 0 {
					b.ResetTimer()
				}
				for range b.N {
					p, _ = f(p, x, y).Unpack()
				}
			})
		})
	}
}

// shardedBigLoss is bigLoss over fully sharded parameters, each layer
// gathered inside a Checkpoint.
func shardedBigLoss(sp ddp.Sharded[bigMLP], x, y *peel.Tensor) *peel.Tensor {
	layer := func(h *peel.Tensor, sel func(bigMLP) nn.LinearParams, relu bool) *peel.Tensor {
		return transforms.Checkpoint(func(a tree.Tuple2[ddp.Sharded[bigMLP], *peel.Tensor]) *peel.Tensor {
			z := nn.Linear(ddp.Gather(a.V0, sel), a.V1)
			if relu {
				z = z.ReLU()
			}
			return z
		}, transforms.NothingSaveable)(tree.Pack2(sp, h))
	}
	h := layer(x, func(p bigMLP) nn.LinearParams { return p.L1 }, true)
	h = layer(h, func(p bigMLP) nn.LinearParams { return p.L2 }, true)
	return nn.CrossEntropy(layer(h, func(p bigMLP) nn.LinearParams { return p.L3 }, false), y)
}

// BenchmarkFSDPStep is one SGD step of the 784-1024-1024-10 MLP fully
// sharded over one in-process member (kernels on one thread), eager and
// compiled, with the Gathers prefetching and without: what the
// prefetcher costs where there is nothing to overlap.
func BenchmarkFSDPStep(b *testing.B) {
	cpu.SetThreads(1)
	p0, x, y := bigSetup()
	step := func(sp ddp.Sharded[bigMLP], x, y *peel.Tensor) ddp.Sharded[bigMLP] {
		g := transforms.Grad3(shardedBigLoss)(sp, x, y)
		sp.Shards = tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(0.01)) }, sp.Shards, g.Shards)
		return sp
	}
	for _, compiled := range []bool{false, true} {
		for _, prefetch := range []bool{true, false} {
			name := map[bool]string{false: "eager", true: "compiled"}[compiled] + map[bool]string{false: "-noprefetch", true: "-prefetch"}[prefetch]
			b.Run(name, func(b *testing.B) {
				mesh := dist.NewMesh(dist.MeshAxis("data", 1))
				mesh.RunDevices(func(dv *dist.Device) {
					sp := ddp.Shard(p0, dv.Comm("data"), ddp.Prefetch(prefetch))
					f := step
					if compiled {
						f = transforms.Compile3(step)
					}
					sp = f(sp, x, y) // warm up (and compile)
					b.ResetTimer()
					for range b.N {
						sp = f(sp, x, y)
					}
				})
			})
		}
	}
}
