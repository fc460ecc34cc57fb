// Package data feeds tensors to a training loop: minibatch iteration in
// a random order drawn from a PRNG key (Shuffle, Batches), and readers
// and writers for numeric files (ReadCSV; ReadNPY and WriteNPY for
// NumPy's .npy format; ReadNPZ and WriteNPZ for its .npz archives of
// named arrays, which numpy.load reads). Checkpoints of trees are
// package checkpoint's (safetensors).
//
// Batches is a Go 1.23 range-over-func iterator:
//
//	for batch := range data.Batches(peel.FoldIn(key, epoch), 32, true, x, y) {
//		xb, yb := batch[0], batch[1]
//		…
//	}
//
// The readers return errors for malformed input (never a bare runtime
// panic); misuse of the iterators (tensors of different lengths, a bad
// batch size) panics with a *peel.Error, as peel's operations do.
package data
