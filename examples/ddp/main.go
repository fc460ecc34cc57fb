// Command ddp trains a digits-sized MLP (64→64→10, ReLU) data-parallel
// over the processes of an MPI job: each process takes its block of
// every global batch, computes its gradient, and the gradients and the
// loss are averaged over the processes before one Adam update, so every
// process holds the same parameters and prints the same losses as one
// process on the whole batch. Two ways to write it give the same
// numbers:
//
//   - by default, torch's DDP: ddp.ValueAndGrad3 over the process's
//     communicator all-reduces the gradients in buckets while the
//     backward pass runs, inside a compiled step;
//   - with -shardmap, JAX's: transforms.ShardMap over
//     dist.NewProcessMesh's "data" axis, dist.Pmean of the gradients.
//
// Built with the mpi tag, it runs on as many processes as mpirun starts;
// without it (or without mpirun) it is a job of one process:
//
//	go build -tags mpi -o ddp ./examples/ddp
//	mpirun -np 2 ./ddp                        # or -np 3: the global batch of 96 splits either way
//	mpirun -np 4 --hostfile hosts ./ddp       # several machines: one line "host slots=2" each
//	go run ./examples/ddp                     # one process
//
// The data is a deterministic synthetic stand-in for scikit-learn's
// digits (ten class prototypes plus noise, 1440 rows), the same on every
// process; batches of 96 rows in a fixed keyed order (the last one
// dropped when short), float64 by default (-f32 for float32).
package main

import (
	"flag"
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

const (
	rows, pixels, hidden, classes = 1440, 64, 64, 10
	batchSize, lr                 = 96, 1e-2
)

// MLP is the model: two linear layers.
type MLP struct{ L1, L2 nn.LinearParams }

func initMLP(dt peel.DType) MLP {
	ks := peel.SplitKeys(peel.Key(7), 2)
	return MLP{nn.InitLinear(ks[0], dt, pixels, hidden), nn.InitLinear(ks[1], dt, hidden, classes)}
}

func loss(p MLP, x, y *peel.Tensor) *peel.Tensor {
	return nn.CrossEntropy(nn.Linear(p.L2, nn.Linear(p.L1, x).ReLU()), y)
}

// dataset is the synthetic stand-in: row i of class i mod 10, its pixels
// the class's prototype plus noise, in [0, 1].
func dataset(dt peel.DType) (x, y *peel.Tensor) {
	xs := make([]float64, rows*pixels)
	labels := make([]int64, rows)
	for i := range rows {
		labels[i] = int64(i % classes)
		for j := range pixels {
			proto := 0.5 + 0.5*math.Sin(float64(labels[i]*pixels+int64(j)))
			noise := 0.3 * math.Sin(0.37*float64(i*pixels+j)+0.011*float64(j*j))
			xs[i*pixels+j] = math.Min(1, math.Max(0, proto+noise))
		}
	}
	return peel.AsType(peel.FromFloat64s(xs, rows, pixels), dt), peel.FromInt64s(labels, rows)
}

// step is one training step: the parameters, the optimizer state and
// the loss after it.
type step = func(MLP, optim.State, *peel.Tensor, *peel.Tensor) tree.Tuple3[MLP, optim.State, *peel.Tensor]

// newDDPStep returns the data-parallel step over comm: the gradient of
// this member's block, all-reduced by ddp.ValueAndGrad3 while the
// backward pass runs, and one Adam update, compiled.
func newDDPStep(comm dist.Communicator, opt optim.Transformation[MLP]) step {
	grad := ddp.ValueAndGrad3(loss, comm)
	return transforms.Compile4(func(p MLP, s optim.State, x, y *peel.Tensor) tree.Tuple3[MLP, optim.State, *peel.Tensor] {
		l, g := grad(p, x, y)
		updates, s := opt.Update(g, s, p)
		return tree.Pack3(optim.ApplyUpdates(p, updates), s, l)
	})
}

// newStep returns the data-parallel step over mesh: each device's
// gradient of its block, averaged with Pmean, and one Adam update.
func newStep(mesh *dist.Mesh, opt optim.Transformation[MLP]) step {
	step := func(p MLP, s optim.State, x, y *peel.Tensor) tree.Tuple3[MLP, optim.State, *peel.Tensor] {
		l, g := transforms.ValueAndGrad3(loss)(p, x, y)
		g = tree.Map(func(g *peel.Tensor) *peel.Tensor { return dist.Pmean(g, "data") }, g)
		updates, s := opt.Update(g, s, p)
		return tree.Pack3(optim.ApplyUpdates(p, updates), s, dist.Pmean(l, "data"))
	}
	return transforms.Compile4(transforms.ShardMap4(step, mesh,
		[]any{dist.P(), dist.P(), dist.P("data", nil), dist.P("data")}, dist.P()))
}

// train trains for the epochs on mesh's "data" axis (ShardMap, or with
// useDDP ddp.ValueAndGrad3 on each device's communicator) and returns
// the parameters and each epoch's mean loss, as this process's device
// has them (every device has the same).
func train(mesh *dist.Mesh, dt peel.DType, epochs int, useDDP bool) (MLP, []float64) {
	x, y := dataset(dt)
	opt := optim.Adam[MLP](lr)
	// start is what a process does with its initial parameters: with
	// ddp, take rank 0's (ddp.Broadcast), as torch's DDP does; every
	// process here seeds the same, and ddp checks that they agree.
	loop := func(step step, block func(*peel.Tensor) *peel.Tensor, start func(MLP) MLP) (MLP, []float64) {
		p := start(initMLP(dt))
		state := opt.Init(p)
		var losses []float64
		for epoch := range epochs {
			sum, n := 0.0, 0
			for b := range data.Batches(peel.FoldIn(peel.Key(11), int64(epoch)), batchSize, true, x, y) {
				var l *peel.Tensor
				p, state, l = step(p, state, block(b[0]), block(b[1])).Unpack()
				sum += l.Item()
				n++
			}
			losses = append(losses, sum/float64(n))
		}
		return p, losses
	}
	if !useDDP {
		return loop(newStep(mesh, opt), func(t *peel.Tensor) *peel.Tensor { return t }, func(p MLP) MLP { return p })
	}
	var p MLP
	var losses []float64
	mesh.RunDevices(func(dv *dist.Device) {
		comm := dv.Comm("data")
		per := batchSize / comm.Size()
		block := func(t *peel.Tensor) *peel.Tensor { return peel.Narrow(t, 0, comm.Rank()*per, per) }
		q, l := loop(newDDPStep(comm, opt), block, func(p MLP) MLP { return ddp.Broadcast(p, comm, 0) })
		if dv.Index == mesh.Local()[0] {
			p, losses = q, l
		}
	})
	return p, losses
}

func main() {
	epochs := flag.Int("epochs", 5, "training epochs")
	f32 := flag.Bool("f32", false, "train in float32 (default float64)")
	shardMap := flag.Bool("shardmap", false, "average the gradients with ShardMap and dist.Pmean instead of ddp.ValueAndGrad3")
	flag.Parse()
	dt := peel.Float64
	if *f32 {
		dt = peel.Float32
	}
	world := dist.World()
	defer dist.Finalize()
	mesh := dist.NewProcessMesh(dist.MeshAxis("data", world.Size()))
	_, losses := train(mesh, dt, *epochs, !*shardMap)
	if world.Rank() == 0 {
		how := "ddp.ValueAndGrad3"
		if *shardMap {
			how = "ShardMap and Pmean"
		}
		fmt.Printf("data parallel over %d process(es) with %s, %d rows each per batch of %d\n", world.Size(), how, batchSize/world.Size(), batchSize)
		for k, l := range losses {
			fmt.Printf("epoch %d loss %.15g\n", k, l)
		}
	}
}
