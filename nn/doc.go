// Package nn holds functional neural-network building blocks in the
// style of jax.nn and flax's functional layers: every layer is a pure
// function of a params tree and its inputs, and an Init function returns
// the params tree, a struct of exported *peel.Tensor fields. Since params
// are ordinary trees, the transforms apply to them directly:
// transforms.Grad differentiates a loss with respect to a whole model,
// transforms.Vmap maps a layer over a batch or over an ensemble of
// params, and transforms.Compile compiles a training step.
//
// The package has three parts:
//
//   - initializers (Initializer: Zeros, Ones, Constant, Uniform, Normal,
//     TruncatedNormal, the variance-scaling family GlorotUniform,
//     GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal, and
//     Orthogonal), each a function of a PRNG key (peel.Key), a dtype and
//     a shape;
//   - losses (MSE, L1, Huber, CrossEntropy, NLL,
//     BinaryCrossEntropyWithLogits, KLDiv), reducing to the mean by
//     default (Reduce selects sum, none or batch mean);
//   - layers (Linear, Conv2D, Embedding, LayerNorm, RMSNorm, GroupNorm, BatchNorm,
//     Dropout, MultiHeadAttention and ScaledDotProductAttention) with
//     their Init functions.
//
// Activations, softmax, one-hot encoding and pooling are peel's own
// functions (peel.ReLU, peel.GELU, peel.Sigmoid, peel.Softmax,
// peel.OneHot, peel.MaxPool2D, …), under one name each.
//
// Layouts follow flax where flax and torch differ: a Linear weight is
// [in, out] (y = x·W + b, no transpose), features are the last axis of
// losses over classes and of the norms. Conv2D keeps peel's (and torch's)
// NCHW inputs and OIHW weights, and BatchNorm normalizes axis 1, the
// channels, as torch does.
//
// Misuse (a wrong shape, a bad option) panics with a *peel.Error that
// names the nn function, as peel's own operations do.
package nn
