// Command sharding shows three ways of spreading a computation over the
// devices of a dist.Mesh with transforms.ShardMap, each checked against
// the same computation on one device (float64):
//
//  1. Data parallelism: a digits-sized MLP (64→64→10, ReLU) trained with
//     Adam on a mesh axis "data" of 2 devices. Each device gets half of
//     every batch and all of the parameters and optimizer state, computes
//     its gradient, and the step averages the gradients over "data"
//     (dist.Pmean) before the update, so every device makes the same
//     update: the one of the full batch. The whole step is compiled.
//  2. Tensor parallelism (Megatron style): an MLP block
//     relu(x·W1 + b1)·W2 + b2 on a 2-D mesh {"data": 2, "model": 2}, the
//     batch split over "data", W1 and b1 split by columns and W2 by rows
//     over "model", so that each device holds half of the hidden units and
//     one dist.Psum over "model" adds up the partial products. Grad goes
//     through the ShardMap: the devices run the backward pass.
//  3. Per-sample gradients on several devices: Vmap(Grad) of one sample's
//     loss run inside ShardMap, each device computing the gradients of its
//     share of the samples.
//
// The devices of the in-process mesh are goroutines; a ShardMap'd function
// is traced once into a graph that each of them runs on its own blocks, the
// collectives (package dist) connecting them. main prints, for each
// pattern, the mesh it ran on and the largest difference from the
// unsharded computation; main_test.go checks them (the parameters after
// every training step to 1e-12, the block's output and gradients to 1e-12,
// the per-sample gradients to 1e-13).
//
//	go run ./examples/sharding
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

const (
	numPixels, numClasses, hidden = 64, 10, 64
	batchSize, steps, lr          = 64, 20, 1e-2
)

// MLP is the classifier of patterns 1 and 3: two linear layers.
type MLP struct{ L1, L2 nn.LinearParams }

func initMLP(key *peel.Tensor) MLP {
	ks := peel.SplitKeys(key, 2)
	return MLP{
		L1: nn.InitLinear(ks[0], peel.Float64, numPixels, hidden, nn.WeightInit(nn.HeNormal(nn.FanIn))),
		L2: nn.InitLinear(ks[1], peel.Float64, hidden, numClasses),
	}
}

// predict returns the logits [n, 10] of the rows x [n, 64].
func predict(p MLP, x *peel.Tensor) *peel.Tensor {
	return nn.Linear(p.L2, nn.Linear(p.L1, x).ReLU())
}

// synthetic returns n rows of a stand-in for the digits: ten class
// prototypes (uniform in [0, 1]) plus Gaussian noise of standard deviation
// 0.5, and their labels, drawn uniformly.
func synthetic(key *peel.Tensor, n int) (x, y *peel.Tensor) {
	protos := peel.UniformRange(peel.FoldIn(key, 0), peel.Float64, 0, 1, numClasses, numPixels)
	y = peel.RandInt(peel.FoldIn(key, 1), 0, numClasses, n)
	noise := peel.NormalScaled(peel.FoldIn(key, 2), peel.Float64, 0, 0.5, n, numPixels)
	return peel.Take(protos, y, 0).Add(noise), y
}

// Batch is a batch of rows X [b, 64] and their labels Y [b].
type Batch struct{ X, Y *peel.Tensor }

// batches returns the training batches: a fresh batch of 64 rows per step.
func batches() []Batch {
	x, y := synthetic(peel.Key(2026), steps*batchSize)
	out := make([]Batch, steps)
	for i := range out {
		out[i] = Batch{peel.Narrow(x, 0, i*batchSize, batchSize), peel.Narrow(y, 0, i*batchSize, batchSize)}
	}
	return out
}

// Step is a training step: the params, the optimizer state and a batch to
// the new params, the new state and the batch's mean loss.
type Step func(MLP, optim.State, Batch) tree.Tuple3[MLP, optim.State, *peel.Tensor]

// newStep returns the training step of opt. With axis "" it is the
// ordinary step on one device. With an axis name it is one device's step
// under ShardMap: the loss and gradient are of the device's rows only, and
// dist.Pmean over the axis averages them, leaf by leaf, so that every
// device sees the gradient of the whole batch (the shards are of equal
// size, so the mean of their mean losses is the batch's mean loss).
func newStep(opt optim.Transformation[MLP], axis string) Step {
	return func(p MLP, s optim.State, b Batch) tree.Tuple3[MLP, optim.State, *peel.Tensor] {
		loss := func(p MLP) *peel.Tensor { return nn.CrossEntropy(predict(p, b.X), b.Y) }
		l, grads := transforms.ValueAndGrad(loss)(p)
		if axis != "" {
			l = dist.Pmean(l, axis)
			grads = tree.Map(func(g *peel.Tensor) *peel.Tensor { return dist.Pmean(g, axis) }, grads)
		}
		updates, s := opt.Update(grads, s, p)
		return tree.Pack3(optim.ApplyUpdates(p, updates), s, l)
	}
}

// shardedStep returns the data-parallel step on the mesh axis "data",
// compiled: the batch's rows (and labels) split over "data", the params,
// the optimizer state and the results replicated on every device. The
// options go to transforms.Compile.
func shardedStep(opt optim.Transformation[MLP], mesh *dist.Mesh, opts ...transforms.CompileOption) Step {
	inSpecs := []any{
		dist.P(), // params: every device holds all of them
		dist.P(), // optimizer state: likewise
		map[string]any{"X": dist.P("data", nil), "Y": dist.P("data")},
	}
	return transforms.Compile3(transforms.ShardMap3(newStep(opt, "data"), mesh, inSpecs, dist.P()), opts...)
}

// Training is the record of a run: the params after each step and each
// step's loss.
type Training struct {
	Params []MLP
	Losses []float64
}

// train runs step over the batches from the same initial params.
func train(opt optim.Transformation[MLP], step Step, bs []Batch) Training {
	p := initMLP(peel.Key(7))
	s := opt.Init(p)
	var r Training
	for _, b := range bs {
		var l *peel.Tensor
		p, s, l = step(p, s, b).Unpack()
		r.Params = append(r.Params, p)
		r.Losses = append(r.Losses, l.Item())
	}
	return r
}

// dataParallel trains the MLP with the sharded step on a mesh of 2 devices
// and with the ordinary step on one device.
func dataParallel() (mesh *dist.Mesh, sharded, single Training) {
	mesh = dist.NewMesh(dist.MeshAxis("data", 2))
	opt := optim.Adam[MLP](lr)
	bs := batches()
	sharded = train(opt, shardedStep(opt, mesh), bs)
	single = train(opt, transforms.Compile3(newStep(opt, "")), bs)
	return mesh, sharded, single
}

// Block is an MLP block with a hidden layer wider than its input and
// output, the layer a transformer's feed-forward part is made of.
type Block struct{ L1, L2 nn.LinearParams }

const blockRows, blockDim, blockHidden = 8, 16, 32

func initBlock(key *peel.Tensor) Block {
	ks := peel.SplitKeys(key, 2)
	bias := nn.BiasInit(nn.Normal(0.1)) // not zeros, so that splitting b1 matters
	return Block{
		L1: nn.InitLinear(ks[0], peel.Float64, blockDim, blockHidden, bias),
		L2: nn.InitLinear(ks[1], peel.Float64, blockHidden, blockDim, bias),
	}
}

// block is the plain block: relu(x·W1 + b1)·W2 + b2.
func block(p Block, x *peel.Tensor) *peel.Tensor {
	return nn.Linear(p.L2, nn.Linear(p.L1, x).ReLU())
}

// blockSpecs lay the block out Megatron style: W1 split by columns and b1
// with them, so each device computes its half of the hidden units; W2
// split by rows, the same half, so each device's h·W2 is a partial sum of
// the output; b2 on every device.
var blockSpecs = map[string]any{
	"L1": map[string]any{"W": dist.P(nil, "model"), "B": dist.P("model")},
	"L2": map[string]any{"W": dist.P("model", nil), "B": dist.P()},
}

// shardedBlock returns the block on a mesh with the axes "data" (the rows
// of x and y) and "model" (the hidden units).
func shardedBlock(mesh *dist.Mesh) func(Block, *peel.Tensor) *peel.Tensor {
	perDevice := func(p Block, x *peel.Tensor) *peel.Tensor {
		h := nn.Linear(p.L1, x).ReLU()            // [rows/2, hidden/2]: this device's hidden units
		y := dist.Psum(h.MatMul(p.L2.W), "model") // [rows/2, dim]: the partial sums added up
		return y.Add(p.L2.B)                      // b2 once, after the sum
	}
	return transforms.ShardMap2(perDevice, mesh, []any{blockSpecs, dist.P("data", nil)}, dist.P("data", nil))
}

// blockLoss is a loss of the block's output, to differentiate.
func blockLoss(f func(Block, *peel.Tensor) *peel.Tensor, x, target *peel.Tensor) func(Block) *peel.Tensor {
	return func(p Block) *peel.Tensor { return f(p, x).Sub(target).Square().Mean() }
}

// TensorParallel is the outcome of pattern 2: the block's output and the
// loss's gradient, sharded and on one device.
type TensorParallel struct {
	Y, WantY         *peel.Tensor
	Grads, WantGrads Block
}

func tensorParallel() (*dist.Mesh, TensorParallel) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2), dist.MeshAxis("model", 2))
	key := peel.Key(11)
	p := initBlock(peel.FoldIn(key, 0))
	x := peel.Normal(peel.FoldIn(key, 1), peel.Float64, blockRows, blockDim)
	target := peel.Normal(peel.FoldIn(key, 2), peel.Float64, blockRows, blockDim)
	sharded := shardedBlock(mesh)
	return mesh, TensorParallel{
		Y:         sharded(p, x),
		WantY:     block(p, x),
		Grads:     transforms.Grad(blockLoss(sharded, x, target))(p),
		WantGrads: transforms.Grad(blockLoss(block, x, target))(p),
	}
}

// sampleLoss is the loss of one sample x [64] of label y (a scalar): the
// model wants a batch, so both get a batch axis of 1.
func sampleLoss(p MLP, x, y *peel.Tensor) *peel.Tensor {
	return nn.CrossEntropy(predict(p, peel.Unsqueeze(x, 0)), peel.Unsqueeze(y, 0))
}

// perSampleGrads is Vmap(Grad) of sampleLoss: the gradient of every
// sample's loss, each leaf with a leading axis of the samples.
var perSampleGrads = transforms.Vmap3(transforms.Grad3(sampleLoss), transforms.InAxes(transforms.NoAxis, 0, 0))

// shardedPerSampleGrads runs perSampleGrads inside ShardMap: the samples
// split over "data", the params on every device, and the gradients
// assembled from the devices' shares along their leading (sample) axis.
func shardedPerSampleGrads(mesh *dist.Mesh) func(MLP, *peel.Tensor, *peel.Tensor) MLP {
	return transforms.ShardMap3(perSampleGrads, mesh, []any{dist.P(), dist.P("data", nil), dist.P("data")}, dist.P("data"))
}

const numSamples = 8

func perSample() (mesh *dist.Mesh, got, want MLP) {
	mesh = dist.NewMesh(dist.MeshAxis("data", 2))
	p := initMLP(peel.Key(3))
	x, y := synthetic(peel.Key(4), numSamples)
	return mesh, shardedPerSampleGrads(mesh)(p, x, y), perSampleGrads(p, x, y)
}

// maxDiff is the largest absolute difference between the leaves of two
// trees of one structure.
func maxDiff[T any](a, b T) float64 {
	la, lb := tree.Leaves(a), tree.Leaves(b)
	m := 0.0
	for i := range la {
		m = max(m, la[i].Sub(lb[i]).Abs().Max().Item())
	}
	return m
}

func main() {
	mesh, sharded, single := dataParallel()
	d := 0.0
	for i := range sharded.Params {
		d = max(d, maxDiff(sharded.Params[i], single.Params[i]))
	}
	fmt.Printf("data parallel: %d Adam steps of a 64→64→10 MLP on %d devices (%v), %d rows per device;\n",
		steps, mesh.Size(), mesh, batchSize/mesh.Size())
	fmt.Printf("  loss %.4f → %.4f, params vs one device: max |diff| %.2g\n",
		sharded.Losses[0], sharded.Losses[steps-1], d)

	mesh, tp := tensorParallel()
	fmt.Printf("tensor parallel: MLP block %d→%d→%d on %d devices (%v), hidden units split over \"model\";\n",
		blockDim, blockHidden, blockDim, mesh.Size(), mesh)
	fmt.Printf("  vs one device: output max |diff| %.2g, gradient max |diff| %.2g\n",
		maxDiff(tp.Y, tp.WantY), maxDiff(tp.Grads, tp.WantGrads))

	mesh, got, want := perSample()
	fmt.Printf("per-sample grads: Vmap(Grad) of %d samples on %d devices (%v), %d per device;\n",
		numSamples, mesh.Size(), mesh, numSamples/mesh.Size())
	fmt.Printf("  vs one device: max |diff| %.2g\n", maxDiff(got, want))
}
