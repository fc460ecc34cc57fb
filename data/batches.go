package data

import (
	"fmt"
	"iter"

	"github.com/peel-ml/peel"
)

// fail panics with a *peel.Error naming op.
func fail(op, format string, args ...any) {
	panic(&peel.Error{Ops: []string{op}, Msg: fmt.Sprintf(format, args...)})
}

// Shuffle returns a uniformly random permutation of 0 … n-1 drawn with
// the PRNG key: the elements of peel.Permutation(key, n), so the same
// key gives the same order and distinct keys (peel.SplitKeysStacked,
// peel.FoldIn) independent ones. It panics with a *peel.Error if key is
// not a concrete key or n is negative.
func Shuffle(key *peel.Tensor, n int) []int {
	const op = "data.Shuffle"
	defer peel.Annotate(op)
	if key != nil && !key.IsConcrete() {
		fail(op, "the key is traced; Shuffle needs a concrete key")
	}
	p := peel.Permutation(key, n).Int64s()
	out := make([]int, n)
	for i, v := range p {
		out[i] = int(v)
	}
	return out
}

// Batches returns an iterator over minibatches of the tensors, which
// share their leading dimension n (the examples): each batch holds, for
// every tensor in order, the rows at the next batchSize positions of an
// order of 0 … n-1 (gathered with peel.Take along axis 0). The order is
// Shuffle(key, n), or 0 … n-1 when key is nil. Every row appears in
// exactly one batch per pass; the last batch is smaller when batchSize
// does not divide n, or left out when dropLast. The order is drawn when
// Batches is called, so one pass of the iterator is one epoch and
// ranging over it again repeats the same batches; draw a new key per
// epoch (peel.FoldIn(key, epoch)). Batches panics with a *peel.Error if
// no tensor is given, a tensor is nil, traced or rank 0, the leading
// dimensions differ, batchSize is below 1, or the key is not a concrete
// key.
func Batches(key *peel.Tensor, batchSize int, dropLast bool, tensors ...*peel.Tensor) iter.Seq[[]*peel.Tensor] {
	const op = "data.Batches"
	n := checkBatches(op, batchSize, tensors)
	return batchesOf(orderOf(op, key, n), batchSize, dropLast, tensors)
}

// ShardBatches is Batches for one member of a data-parallel job of size
// members (torch's DistributedSampler with a DataLoader): every member
// draws the same order of the n examples (Shuffle(key, n): give every
// member the same key, a new one per epoch), deals it out in turn (the
// examples at positions rank, rank+size, …), and batches its share by
// batchSize. Every member gets the same number of examples, so the same
// number of batches of the same sizes, and no member is left waiting in
// a collective for one that ran out: when size does not divide n, the
// order is padded with its first examples (as torch pads), or, with
// dropLast, its tail is left out (and a last batch smaller than
// batchSize too). It panics as Batches does, and with a *peel.Error if
// size is below 1 or rank is not in [0, size).
func ShardBatches(key *peel.Tensor, batchSize, rank, size int, dropLast bool, tensors ...*peel.Tensor) iter.Seq[[]*peel.Tensor] {
	const op = "data.ShardBatches"
	if size < 1 || rank < 0 || rank >= size {
		fail(op, "member %d of a job of %d (want 0 ≤ rank < size)", rank, size)
	}
	n := checkBatches(op, batchSize, tensors)
	order := orderOf(op, key, n)
	total := (n + size - 1) / size * size
	if dropLast {
		total = n / size * size
	}
	for len(order) < total {
		// Padding wraps around (more than once when size exceeds n).
		order = append(order, order[:min(total-len(order), n)]...)
	}
	mine := make([]int64, 0, total/size)
	for i := rank; i < total; i += size {
		mine = append(mine, order[i])
	}
	return batchesOf(mine, batchSize, dropLast, tensors)
}

// checkBatches checks the arguments of Batches and returns the number
// of examples.
func checkBatches(op string, batchSize int, tensors []*peel.Tensor) int {
	if len(tensors) == 0 {
		fail(op, "no tensors")
	}
	if batchSize < 1 {
		fail(op, "batch size %d is below 1", batchSize)
	}
	n := -1
	for i, t := range tensors {
		if t == nil {
			fail(op, "tensor %d is nil", i)
		}
		if !t.IsConcrete() {
			fail(op, "tensor %d is traced; %s iterates over concrete data", i, op[len("data."):])
		}
		if t.Rank() == 0 {
			fail(op, "tensor %d is rank 0 and has no examples axis", i)
		}
		if n < 0 {
			n = t.Shape()[0]
		} else if t.Shape()[0] != n {
			fail(op, "tensor %d %v has %d examples, tensor 0 has %d", i, t.TypeString(), t.Shape()[0], n)
		}
	}
	return n
}

// orderOf is Shuffle(key, n) as int64s, or 0 … n-1 when key is nil.
func orderOf(op string, key *peel.Tensor, n int) []int64 {
	if key == nil {
		order := make([]int64, n)
		for i := range order {
			order[i] = int64(i)
		}
		return order
	}
	defer peel.Annotate(op)
	if !key.IsConcrete() {
		fail(op, "the key is traced; %s needs a concrete key", op[len("data."):])
	}
	return peel.Permutation(key, n).Int64s()
}

// batchesOf iterates over the batches of the examples at order.
func batchesOf(order []int64, batchSize int, dropLast bool, tensors []*peel.Tensor) iter.Seq[[]*peel.Tensor] {
	n := len(order)
	return func(yield func([]*peel.Tensor) bool) {
		for start := 0; start < n; start += batchSize {
			stop := min(start+batchSize, n)
			if dropLast && stop-start < batchSize {
				return
			}
			idx := peel.FromInt64s(order[start:stop])
			batch := make([]*peel.Tensor, len(tensors))
			for i, t := range tensors {
				batch[i] = peel.Take(t, idx, 0)
			}
			if !yield(batch) {
				return
			}
		}
	}
}

// NumBatches returns the number of batches Batches yields for n examples.
func NumBatches(n, batchSize int, dropLast bool) int {
	if batchSize < 1 || n < 0 {
		return 0
	}
	if dropLast {
		return n / batchSize
	}
	return (n + batchSize - 1) / batchSize
}
