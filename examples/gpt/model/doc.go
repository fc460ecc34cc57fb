// Package model is the GPT of examples/gpt: a character-level
// transformer language model of nanoGPT's shape (token and position
// embeddings, pre-LN blocks of causal multi-head self-attention and a
// GELU MLP, a final LayerNorm, the head tied to the token embedding),
// its training step (AdamW with decoupled weight decay on the Linear
// weights only, clipping by the global norm, warmup and cosine decay),
// its data (a character tokenizer, random windows drawn from a key) and
// its sampler (temperature and top-k, a KV cache decoded in one
// transforms.Scan).
//
// Everything is a plain function of peel tensors, so the step runs
// eagerly or under transforms.Compile, checkpoints each block under
// transforms.Checkpoint (Options.Remat), runs data-parallel under
// dist/ddp, and the sampler compiles and exports
// (transforms.Export) to run without this code. The package is shared
// by the command (examples/gpt) and the benchmark workloads (bench:
// gpt_step_f32, gpt_sample_token).
//
// Misuse (tokens that do not fit the context, a bad configuration)
// panics with a *peel.Error naming "gpt".
package model
