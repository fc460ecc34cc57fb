// Command dp_sgd ports functorch's differentially private CIFAR10 training
// example (pytorch/functorch, examples/dp_cifar10/cifar10_transforms.py at
// commit f2e17106d6d50a9a0db766eb6396ce6c1a7a3466) to peel: per-sample
// gradients with Vmap3 of GradAux3 (functorch's vmap of grad_and_value with
// has_aux, compiled), each sample's gradient clipped to a maximal norm, the
// clipped gradients summed and Gaussian noise added (DP-SGD), then a step
// of the optimizer the options name (Adam by default, SGD with momentum
// and weight decay, or RMSprop); train and test loops with top-1 accuracy;
// the tutorial's options as flags. The tutorial's stateful parts (the
// per-sample gradients stored on the parameters, param.grad, the
// optimizer) become values passed and returned.
//
// The tutorial trains torchvision's resnet18 with its BatchNorms converted
// to GroupNorm on CIFAR10 (3×32×32). This port builds the same kind of
// network smaller: resnet18's stem (a strided 7×7 convolution, a norm, a
// max pooling), then two BasicBlocks (8 and 16 channels, the second
// strided with a 1×1 convolution shortcut) instead of eight, average
// pooling and a Linear layer, GroupNorm with 4 groups (nn.GroupNorm), on
// 3×16×16 images. The data set is deterministic (package synth: 512
// training and 128 test images, each its class's pattern plus noise)
// instead of CIFAR10's download, the initial weights too, so that a
// noise-free run can be checked against PyTorch (testdata/gen_reference.py).
// Left out: Opacus' PrivacyEngine (the tutorial disables it), tensorboard
// statistics, checkpoints, data augmentation, the secure RNG, devices and
// the options nothing uses. As in the tutorial at that commit, the noised
// sum of the clipped gradients is not divided by the batch size.
//
//	go run ./examples/dp_sgd
//	go run ./examples/dp_sgd -epochs 5 -optim SGD -lr 0.05 -sigma 0.5
package main

import (
	"flag"
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Args are the command-line options the program uses.
type Args struct {
	Epochs, StartEpoch, BatchSize, PrintFreq               int
	LR, Momentum, WeightDecay, Sigma, MaxPerSampleGradNorm float64
	Optim                                                  string
}

const (
	imageSize = 16 // CIFAR10's are 32
	groups    = 4  // GroupNorm's groups: 2 or 4 channels a group
)

// ResNet holds the weights of torchvision's ResNet: the stem (a 7×7
// convolution, a norm, a max pooling), the layers of BasicBlocks, and the
// final Linear layer after average pooling. Convolutions have no bias.
type ResNet struct {
	Conv1  *peel.Tensor
	Bn1    nn.GroupNormParams
	Layers [][]BasicBlock
	Fc     nn.LinearParams
}

// BasicBlock is conv3x3-norm-relu-conv3x3-norm plus the shortcut, which
// goes through Downsample where the block changes the shape.
type BasicBlock struct {
	Conv1, Conv2 *peel.Tensor
	Bn1, Bn2     nn.GroupNormParams
	Downsample   *Downsample
}

// Downsample is a strided 1×1 convolution and a norm.
type Downsample struct {
	Conv *peel.Tensor
	Bn   nn.GroupNormParams
}

func pad(p int) peel.ConvOption { return peel.ConvPadding(peel.ExplicitPadding([2]int{p, p})) }

func conv3x3(x, w *peel.Tensor, stride int) *peel.Tensor {
	return peel.Conv2D(x, w, peel.ConvStrides(stride), pad(1))
}

func (b BasicBlock) forward(x *peel.Tensor, stride int) *peel.Tensor {
	identity := x
	out := nn.GroupNorm(b.Bn1, conv3x3(x, b.Conv1, stride), groups).ReLU()
	out = nn.GroupNorm(b.Bn2, conv3x3(out, b.Conv2, 1), groups)
	if b.Downsample != nil {
		identity = nn.GroupNorm(b.Downsample.Bn, peel.Conv2D(x, b.Downsample.Conv, peel.ConvStrides(stride)), groups)
	}
	return out.Add(identity).ReLU()
}

// funcModel is the network as a function of its weights (make_functional).
func funcModel(weights ResNet, x *peel.Tensor) *peel.Tensor {
	x = peel.Conv2D(x, weights.Conv1, peel.ConvStrides(2), pad(3))
	x = nn.GroupNorm(weights.Bn1, x, groups).ReLU()
	x = peel.MaxPool2D(x, 3, peel.ConvStrides(2), pad(1))
	for i, layer := range weights.Layers {
		for j, block := range layer {
			stride := 1
			if i > 0 && j == 0 {
				stride = 2
			}
			x = block.forward(x, stride)
		}
	}
	return nn.Linear(weights.Fc, x.Mean(2, 3))
}

// resnet returns the weights of a ResNet of BasicBlocks with the given
// number of blocks and channels per layer: deterministic stand-ins (package
// synth) for torchvision's init, the convolutions' of std √(2/fan-out)
// (kaiming_normal_), the norms' ones and zeros, the Linear's in ±1/√in.
func resnet(layers, planes []int, numClasses int) ResNet {
	seed := 0.0
	conv := func(out, in, k int) *peel.Tensor {
		seed++
		return synth.Data(seed, out, in, k, k).Mul(2 / math.Sqrt(float64(out*k*k)))
	}
	model := ResNet{Conv1: conv(planes[0], 3, 7), Bn1: nn.InitGroupNorm(peel.Float64, planes[0])}
	inplanes := planes[0]
	for i, n := range layers {
		var layer []BasicBlock
		for range n {
			block := BasicBlock{
				Conv1: conv(planes[i], inplanes, 3), Bn1: nn.InitGroupNorm(peel.Float64, planes[i]),
				Conv2: conv(planes[i], planes[i], 3), Bn2: nn.InitGroupNorm(peel.Float64, planes[i]),
			}
			if inplanes != planes[i] {
				block.Downsample = &Downsample{Conv: conv(planes[i], inplanes, 1), Bn: nn.InitGroupNorm(peel.Float64, planes[i])}
			}
			layer = append(layer, block)
			inplanes = planes[i]
		}
		model.Layers = append(model.Layers, layer)
	}
	bound := 1 / math.Sqrt(float64(inplanes))
	model.Fc = nn.LinearParams{W: synth.Data(seed+1, inplanes, numClasses).Mul(bound), B: synth.Data(seed+2, numClasses).Mul(bound)}
	return model
}

// CIFAR10 stands in for torchvision's data set: n deterministic (package
// synth) images [3, imageSize, imageSize] with values in [0, 1], each the
// pattern of its class plus noise, normalized as the tutorial's transform,
// and their labels.
func CIFAR10(train bool, n int) (images, targets *peel.Tensor) {
	seed := 2.0
	if train {
		seed = 1
	}
	targets = peel.ArgMax(synth.Data(seed, n, 10), 1)
	patterns := synth.Data(0, 10, 3, imageSize, imageSize)
	images = peel.Take(patterns, targets, 0).Add(synth.Data(seed, n, 3, imageSize, imageSize)).Add(2).Div(4)
	mean := peel.FromFloat64s([]float64{0.4914, 0.4822, 0.4465}, 3, 1, 1)
	std := peel.FromFloat64s([]float64{0.2023, 0.1994, 0.2010}, 3, 1, 1)
	return images.Sub(mean).Div(std), targets
}

func accuracy(preds, labels *peel.Tensor) float64 {
	return peel.Equal(preds, labels).Mean().Item()
}

func mean(xs []float64) float64 {
	return peel.FromFloat64s(xs, len(xs)).Mean().Item()
}

// criterion is nn.CrossEntropyLoss.
func criterion(output, targets *peel.Tensor) *peel.Tensor { return nn.CrossEntropy(output, targets) }

func computeNorms(sampleGrads ResNet) *peel.Tensor {
	batchSize := tree.Leaves(sampleGrads)[0].Shape()[0]
	var norms []*peel.Tensor
	for _, sampleGrad := range tree.Leaves(sampleGrads) {
		norms = append(norms, peel.Norm(sampleGrad.Reshape(batchSize, -1), -1))
	}
	return peel.Norm(peel.Stack(norms, 0), 0)
}

// clipAndAccumulateAndAddNoise returns the gradients of a batch from its
// per-sample gradients, the noise drawn with key.
func clipAndAccumulateAndAddNoise(sampleGrads ResNet, maxPerSampleGradNorm, noiseMultiplier float64, key *peel.Tensor) ResNet {
	// step 0: compute the norms
	sampleNorms := computeNorms(sampleGrads)
	// step 1: compute clipping factors
	clipFactor := peel.Div(maxPerSampleGradNorm, sampleNorms.Add(1e-6))
	clipFactor = clipFactor.Minimum(1.0)
	// step 2: clip
	grads := tree.Map(func(sampleGrad *peel.Tensor) *peel.Tensor { return peel.Einsum("i,i...", clipFactor, sampleGrad) }, sampleGrads)
	// step 3: add gaussian noise
	stddev := maxPerSampleGradNorm * noiseMultiplier
	return tree.Map2(func(gradParam, key *peel.Tensor) *peel.Tensor {
		noise := peel.NormalScaled(key, gradParam.DType(), 0, stddev, gradParam.Shape()...)
		return noise.Add(gradParam)
	}, grads, tree.Keys(key, grads))
}

// computeLossAndOutput is the loss of one image and its output, the model
// run on a batch of one. The aux holds the loss too, so that GradAux3
// gives grad_and_value(compute_loss_and_output, has_aux=True)'s three
// results.
func computeLossAndOutput(weights ResNet, image, target *peel.Tensor) (*peel.Tensor, tree.Tuple2[*peel.Tensor, *peel.Tensor]) {
	images := peel.Unsqueeze(image, 0)
	targets := peel.Unsqueeze(target, 0)
	output := funcModel(weights, images)
	loss := criterion(output, targets)
	return loss, tree.Pack2(loss, peel.Squeeze(output, 0))
}

// perSampleGrads is the vmap of grad_and_value over a batch (the weights
// shared), compiled.
var perSampleGrads = transforms.Compile3(transforms.Vmap3(func(weights ResNet, image, target *peel.Tensor) tree.Tuple2[ResNet, tree.Tuple2[*peel.Tensor, *peel.Tensor]] {
	return tree.Pack2(transforms.GradAux3(computeLossAndOutput)(weights, image, target))
}, transforms.InAxes(transforms.NoAxis, 0, 0)))

// train runs one epoch of DP-SGD and returns the trained model, the
// optimizer's state and each step's loss.
func train(args Args, model ResNet, trainLoader iter.Seq[[]*peel.Tensor], optimizer optim.Transformation[ResNet], optState optim.State, epoch int, key *peel.Tensor) (ResNet, optim.State, []float64) {
	var losses, top1Acc []float64
	for i, batch := range slices.Collect(trainLoader) {
		images, target := batch[0], batch[1]
		// Step 1: compute per-sample-grads
		sampleGrads, lossOutput := perSampleGrads(model, images, target).Unpack()
		sampleLoss, output := lossOutput.Unpack()
		loss := sampleLoss.Mean()
		// Step 2: Clip the per-sample-grads, sum them to form grads, and add noise
		grads := clipAndAccumulateAndAddNoise(sampleGrads, args.MaxPerSampleGradNorm, args.Sigma, peel.FoldIn(key, int64(i)))
		preds := peel.ArgMax(output, 1)
		losses = append(losses, loss.Item())
		// measure accuracy and record loss
		acc1 := accuracy(preds, target)
		top1Acc = append(top1Acc, acc1)
		var updates ResNet
		updates, optState = optimizer.Update(grads, optState, model)
		model = optim.ApplyUpdates(model, updates)
		if i%args.PrintFreq == 0 {
			fmt.Printf("\tTrain Epoch: %d \tLoss: %.6f Acc@1: %.6f \n", epoch, mean(losses), mean(top1Acc))
		}
	}
	return model, optState, losses
}

// test returns the model's mean top-1 accuracy over the test batches.
func test(model ResNet, testLoader iter.Seq[[]*peel.Tensor]) float64 {
	var losses, top1Acc []float64
	for batch := range testLoader {
		images, target := batch[0], batch[1]
		output := funcModel(model, images)
		loss := criterion(output, target)
		preds := peel.ArgMax(output, 1)
		acc1 := accuracy(preds, target)
		losses = append(losses, loss.Item())
		top1Acc = append(top1Acc, acc1)
	}
	top1Avg := mean(top1Acc)
	fmt.Printf("\tTest set:Loss: %.6f Acc@1: %.6f \n", mean(losses), top1Avg)
	return top1Avg
}

// newOptimizer returns the optimizer args.Optim names, with torch's
// semantics: SGD's weight decay is added to the gradients; RMSprop has
// torch's alpha 0.99 but optax's eps inside the square root.
func newOptimizer(args Args) optim.Transformation[ResNet] {
	switch args.Optim {
	case "SGD":
		return optim.Chain(optim.AddDecayedWeights[ResNet](args.WeightDecay), optim.SGD[ResNet](args.LR, optim.Momentum(args.Momentum)))
	case "RMSprop":
		return optim.RMSProp[ResNet](args.LR, optim.Decay(0.99))
	case "Adam":
		return optim.Adam[ResNet](args.LR)
	}
	panic("Optimizer not recognized. Please check spelling")
}

func main() {
	var args Args
	flag.IntVar(&args.Epochs, "epochs", 90, "number of total epochs to run")
	flag.IntVar(&args.StartEpoch, "start-epoch", 1, "manual epoch number (useful on restarts)")
	flag.IntVar(&args.BatchSize, "batch-size", 64, "mini-batch size")
	flag.Float64Var(&args.LR, "lr", 0.001, "initial learning rate")
	flag.Float64Var(&args.Momentum, "momentum", 0.9, "SGD momentum")
	flag.Float64Var(&args.WeightDecay, "wd", 5e-4, "SGD weight decay")
	flag.IntVar(&args.PrintFreq, "print-freq", 10, "print frequency")
	flag.Float64Var(&args.Sigma, "sigma", 1.0, "Noise multiplier")
	flag.Float64Var(&args.MaxPerSampleGradNorm, "max-per-sample-grad_norm", 1.0, "Clip per-sample gradients to this norm")
	flag.StringVar(&args.Optim, "optim", "Adam", "Optimizer to use (Adam, RMSprop, SGD)")
	flag.Parse()

	key := peel.Key(0)
	trainImages, trainTargets := CIFAR10(true, 512)
	testImages, testTargets := CIFAR10(false, 128)
	testLoader := data.Batches(nil, args.BatchSize, false, testImages, testTargets)
	model := resnet([]int{1, 1}, []int{8, 16}, 10)
	optimizer := newOptimizer(args)
	optState := optimizer.Init(model)
	for epoch := args.StartEpoch; epoch <= args.Epochs; epoch++ {
		keys := peel.SplitKeys(peel.FoldIn(key, int64(epoch)), 2) // the shuffle's and the noise's
		trainLoader := data.Batches(keys[0], args.BatchSize, true, trainImages, trainTargets)
		model, optState, _ = train(args, model, trainLoader, optimizer, optState, epoch, keys[1])
		test(model, testLoader)
	}
}
