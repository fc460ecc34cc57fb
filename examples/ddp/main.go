// Command ddp trains a digits-sized MLP (64→64→10, ReLU) data-parallel
// over the processes of an MPI job: each process takes its block of
// every global batch (transforms.ShardMap over dist.NewProcessMesh's
// "data" axis), computes its gradient, and the step averages the
// gradients and the loss with dist.Pmean before one Adam update, so
// every process holds the same parameters and prints the same losses as
// one process on the whole batch.
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

// newStep returns the data-parallel step over mesh: each device's
// gradient of its block, averaged with Pmean, and one Adam update.
func newStep(mesh *dist.Mesh, opt optim.Transformation[MLP]) func(MLP, optim.State, *peel.Tensor, *peel.Tensor) tree.Tuple3[MLP, optim.State, *peel.Tensor] {
	step := func(p MLP, s optim.State, x, y *peel.Tensor) tree.Tuple3[MLP, optim.State, *peel.Tensor] {
		l, g := transforms.ValueAndGrad3(loss)(p, x, y)
		g = tree.Map(func(g *peel.Tensor) *peel.Tensor { return dist.Pmean(g, "data") }, g)
		updates, s := opt.Update(g, s, p)
		return tree.Pack3(optim.ApplyUpdates(p, updates), s, dist.Pmean(l, "data"))
	}
	return transforms.Compile4(transforms.ShardMap4(step, mesh,
		[]any{dist.P(), dist.P(), dist.P("data", nil), dist.P("data")}, dist.P()))
}

// train trains for the epochs and returns each epoch's mean loss.
func train(mesh *dist.Mesh, dt peel.DType, epochs int) (MLP, []float64) {
	x, y := dataset(dt)
	p := initMLP(dt)
	opt := optim.Adam[MLP](lr)
	state := opt.Init(p)
	step := newStep(mesh, opt)
	var losses []float64
	for epoch := range epochs {
		sum, n := 0.0, 0
		for b := range data.Batches(peel.FoldIn(peel.Key(11), int64(epoch)), batchSize, true, x, y) {
			var l *peel.Tensor
			p, state, l = step(p, state, b[0], b[1]).Unpack()
			sum += l.Item()
			n++
		}
		losses = append(losses, sum/float64(n))
	}
	return p, losses
}

func main() {
	epochs := flag.Int("epochs", 5, "training epochs")
	f32 := flag.Bool("f32", false, "train in float32 (default float64)")
	flag.Parse()
	dt := peel.Float64
	if *f32 {
		dt = peel.Float32
	}
	world := dist.World()
	defer dist.Finalize()
	mesh := dist.NewProcessMesh(dist.MeshAxis("data", world.Size()))
	_, losses := train(mesh, dt, *epochs)
	if world.Rank() == 0 {
		fmt.Printf("data parallel over %d process(es), %d rows each per batch of %d\n", world.Size(), batchSize/world.Size(), batchSize)
		for k, l := range losses {
			fmt.Printf("epoch %d loss %.15g\n", k, l)
		}
	}
}
