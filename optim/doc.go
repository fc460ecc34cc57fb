// Package optim holds gradient transformations over parameter trees, in
// the style of optax: optimizers (SGD, Adam, AdamW, RMSProp, Adagrad,
// Lion), gradient transforms to chain with them (ClipByGlobalNorm, Clip,
// AddDecayedWeights, ScaleByLearningRate, Trace, ScaleByAdam, Chain) and
// learning-rate schedules (Constant, LinearDecay, PolynomialDecay,
// ExponentialDecay, CosineDecay, WarmupCosineDecay, Join, Warmup).
//
// A Transformation[P] works on trees of type P (see package tree: a
// struct of exported *peel.Tensor fields, slices, maps, ...):
//
//	opt, state := optim.Start(params, optim.Adam, 1e-3) // opt is optim.Adam[MLP](1e-3)
//	for ... {
//		grads := transforms.Grad(loss)(params)
//		updates, state = opt.Update(grads, state, params)
//		params = optim.ApplyUpdates(params, updates)
//	}
//
// The learning rate is a float64 or a Schedule (a function of the step
// count tensor); the other hyperparameters are Options (Betas, Eps,
// Momentum, WeightDecay, ...) with optax's defaults, which are torch's
// but where each optimizer's documentation says otherwise.
//
// Everything is a pure function of tensors: Update never writes to its
// inputs, and the State is itself a tree of tensors, its step counters
// int64 scalar tensors. So an optimizer step composes with every
// transform: Grad differentiates through it (meta-learning: the gradient
// through an inner SGD or Adam step), Vmap runs an ensemble of models
// with stacked params and stacked states (tree.Stack) as one step, and
// Compile compiles a whole training step once, the count being data and
// not a constant of the trace. To differentiate through steps from a
// given state, pass the state as an argument that is not differentiated
// (Grad2(f)(params, state)): Grad with respect to a state holding a count
// panics, an int64 having no derivative (as JAX's grad refuses optax's
// int32 counts). A Transformation holds only its hyperparameters,
// read-only, so it is safe for concurrent use.
//
// Misuse panics with *peel.Error naming the transformation ("optim.Adam")
// and what differs: grads and state of different structures or shapes, a
// state another transformation's Init returned, an option an optimizer
// does not take, a hyperparameter out of range.
package optim
