package ddp

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Default bucket sizes, torch DDP's: a small first bucket, so the first
// reduction starts early in the backward pass, then 25 MiB.
const (
	DefaultFirstBucketBytes = 1 << 20
	DefaultBucketBytes      = 25 << 20
)

// Option configures ValueAndGrad.
type Option func(*config)

type config struct {
	first, rest int
	overlap     bool
	wire        peel.DType // CommDType; 0: the gradients' own
	prefetch    int8       // Shard's Prefetch: 0 where the engine overlaps, 1 always, -1 never
}

// CommDType makes the gradients travel as dt in their all-reduce, to
// cut the bytes communicated (torch DDP's bf16 and fp16 compression
// hooks): each bucket of a wider float dtype is rounded to dt, reduced
// in dt, and widened back, so the gradient carries dt's rounding error
// (bfloat16: a relative error of about 2^-8 per element and step of the
// reduction; measure it on your model). The loss is reduced in its own
// dtype. dt is peel.BFloat16, which MPI carries as its own 16 bits and
// reduces with user-defined operations in float; peel.Float32, for
// float64 gradients; or peel.Float16, which the in-process engine
// reduces in float16 but MPI carries as float32 (no bytes saved). It
// panics with *peel.Error for another dtype.
func CommDType(dt peel.DType) Option {
	if dt != peel.BFloat16 && dt != peel.Float16 && dt != peel.Float32 {
		interp.Panicf("ddp.CommDType: gradients travel as bf16, f16 or f32, not %v", dt)
	}
	return func(c *config) { c.wire = dt }
}

// BucketBytes sets the size at which a bucket of gradients is closed and
// its all-reduce started, for every bucket but the first (default
// DefaultBucketBytes). It panics with *peel.Error when n < 1.
func BucketBytes(n int) Option {
	if n < 1 {
		interp.Panicf("ddp.BucketBytes(%d): the size must be positive", n)
	}
	return func(c *config) { c.rest = n }
}

// FirstBucketBytes sets the first bucket's size (default
// DefaultFirstBucketBytes). It panics with *peel.Error when n < 1.
func FirstBucketBytes(n int) Option {
	if n < 1 {
		interp.Panicf("ddp.FirstBucketBytes(%d): the size must be positive", n)
	}
	return func(c *config) { c.first = n }
}

// NoOverlap starts every bucket's all-reduce after the backward pass
// instead of as soon as its gradients are complete: the same result,
// with the communication not hidden (for measuring what overlap gains).
func NoOverlap() Option { return func(c *config) { c.overlap = false } }

// Prefetch is Shard's option: whether its Gathers start the next part's
// all-gather ahead (see Gather). By default they do where the
// communicator's non-blocking collectives run while the caller computes
// (dist.Overlapping): elsewhere a collective started ahead runs at the
// same point anyway, and holding its result longer costs (measured: a
// ZeRO-3 step 2–5% slower over MPI on two busy cores). Prefetch(true)
// prefetches on any communicator (to test the schedule on the
// in-process engine); Prefetch(false) never does (to measure what
// prefetching gains, or to hold no second part whole). ValueAndGrad
// refuses it.
func Prefetch(on bool) Option {
	return func(c *config) {
		c.prefetch = -1
		if on {
			c.prefetch = 1
		}
	}
}

// ValueAndGrad returns a function that computes loss's value and its
// gradient with respect to the parameters p, each averaged over the
// members of comm (every member calls it with the same parameters and
// its own part of the batch, as in torch's DistributedDataParallel): the
// gradient of the mean loss over the members' parts, when the parts are
// equal in size.
//
// The gradients are all-reduced in buckets while the backward pass runs.
// Each parameter leaf is watched by a transforms.Hook; when its
// gradient is complete (in reverse order of use: the last layer's
// first) it joins the open bucket of its dtype, and a bucket that
// reaches its size (FirstBucketBytes, then BucketBytes) is concatenated
// and its all-reduce started (Communicator.IAllReduceInPlace) at once,
// so the reduction of the last layers' gradients overlaps the backward
// pass of the first layers where the engine can move data beside the
// computation (over MPI, a machine with a core to spare; see package
// dist: otherwise the reductions run when the backward pass ends). After the backward pass the remaining buckets and
// the loss are started, and every result is waited for and divided by
// the number of members. Buckets follow the order in which the backward
// pass completes gradients, which is the same on every member.
//
// The communication is primitives of the program, so the returned
// function can be compiled (transforms.Compile) and runs the same
// schedule; compiled against comm, a program communicates over comm
// only. With one member there is nothing to exchange, and it is
// transforms.ValueAndGrad. Members must call it in the same order with
// the same parameter structure, one call at a time (its starts and waits
// pair up in order, as the members' collectives must). Its first call on
// concrete parameters checks that every member passes the same ones (a
// fingerprint of each leaf, all-gathered): members that start apart
// stay apart, since the gradients are averaged (Broadcast puts one
// member's on every member). It is not itself differentiable or
// vmappable. It panics with *peel.Error when comm is nil, as
// transforms.ValueAndGrad does, when the members' first parameters
// differ (naming the leaf), and when a collective fails.
func ValueAndGrad[P any](loss func(P) *peel.Tensor, comm dist.Communicator, opts ...Option) func(P) (*peel.Tensor, P) {
	cfg := configOf("ddp.ValueAndGrad", comm, opts)
	var sc syncCheck
	return func(p P) (*peel.Tensor, P) {
		sc.check("ddp.ValueAndGrad", comm, p)
		return step(comm, cfg, loss, p)
	}
}

// ValueAndGrad2 is ValueAndGrad for a loss of the parameters and one
// more argument (the batch), differentiated with respect to the first.
func ValueAndGrad2[P, X any](loss func(P, X) *peel.Tensor, comm dist.Communicator, opts ...Option) func(P, X) (*peel.Tensor, P) {
	cfg := configOf("ddp.ValueAndGrad2", comm, opts)
	var sc syncCheck
	return func(p P, x X) (*peel.Tensor, P) {
		sc.check("ddp.ValueAndGrad2", comm, p)
		return step(comm, cfg, func(p P) *peel.Tensor { return loss(p, x) }, p)
	}
}

// ValueAndGrad3 is ValueAndGrad for a loss of the parameters and two
// more arguments (inputs and targets), differentiated with respect to
// the first.
func ValueAndGrad3[P, X, Y any](loss func(P, X, Y) *peel.Tensor, comm dist.Communicator, opts ...Option) func(P, X, Y) (*peel.Tensor, P) {
	cfg := configOf("ddp.ValueAndGrad3", comm, opts)
	var sc syncCheck
	return func(p P, x X, y Y) (*peel.Tensor, P) {
		sc.check("ddp.ValueAndGrad3", comm, p)
		return step(comm, cfg, func(p P) *peel.Tensor { return loss(p, x, y) }, p)
	}
}

func configOf(op string, comm dist.Communicator, opts []Option) config {
	if comm == nil {
		interp.Panicf("%s: the communicator is nil", op)
	}
	cfg := config{first: DefaultFirstBucketBytes, rest: DefaultBucketBytes, overlap: true}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.prefetch != 0 {
		interp.Panicf("%s: Prefetch is ddp.Shard's option, not %s's", op, op)
	}
	return cfg
}

// AccumulateValueAndGrad3 is ValueAndGrad3 over several micro-batches
// a step (gradient accumulation; torch's no_sync on all but the last):
// the returned function computes the loss and the gradient of each
// micro-batch (xs[j], ys[j]) but the last on this member alone, with no
// communication, adds them up, and runs the last micro-batch's backward
// pass as ValueAndGrad3 does, each gradient joining its bucket with the
// sum of the earlier ones, so the step's one round of all-reduces
// overlaps that last backward pass. It returns the mean loss over the
// micro-batches and the members, and its gradient (when every member's
// micro-batches are equal in size: the whole batch's mean loss). It
// panics as ValueAndGrad3 does, and with *peel.Error when xs is empty or
// xs and ys differ in length.
func AccumulateValueAndGrad3[P, X, Y any](loss func(P, X, Y) *peel.Tensor, comm dist.Communicator, opts ...Option) func(p P, xs []X, ys []Y) (*peel.Tensor, P) {
	const op = "ddp.AccumulateValueAndGrad3"
	cfg := configOf(op, comm, opts)
	var sc syncCheck
	return func(p P, xs []X, ys []Y) (*peel.Tensor, P) {
		if len(xs) == 0 || len(xs) != len(ys) {
			e := interp.Errorf("%d micro-batches of inputs and %d of targets (want as many, at least one)", len(xs), len(ys))
			e.Ops = []string{op}
			panic(e)
		}
		sc.check(op, comm, p)
		last := len(xs) - 1
		var acc *accum
		if last > 0 {
			acc = &accum{k: len(xs)}
			local := transforms.ValueAndGrad3(loss)
			for j := range last {
				l, g := local(p, xs[j], ys[j])
				acc.add(l, tree.Leaves(g))
			}
		}
		return stepAcc(comm, cfg, func(p P) *peel.Tensor { return loss(p, xs[last], ys[last]) }, p, acc)
	}
}

// accum is what the micro-batches before a step's last add up: their
// losses and gradients (leaves), and the number of micro-batches of the
// step, the last included.
type accum struct {
	loss  *peel.Tensor
	grads []*peel.Tensor
	k     int
}

func (a *accum) add(l *peel.Tensor, gs []*peel.Tensor) {
	if a.loss == nil {
		a.loss, a.grads = l, gs
		return
	}
	a.loss = peel.Add(a.loss, l)
	for i, g := range gs {
		a.grads[i] = peel.Add(a.grads[i], g)
	}
}

// step is one data-parallel value and gradient.
func step[P any](comm dist.Communicator, cfg config, loss func(P) *peel.Tensor, p P) (*peel.Tensor, P) {
	return stepAcc(comm, cfg, loss, p, nil)
}

// stepAcc is step with the sums of earlier micro-batches added to the
// loss and to each gradient before they are reduced, and the means taken
// over the micro-batches too (acc nil: one micro-batch).
func stepAcc[P any](comm dist.Communicator, cfg config, loss func(P) *peel.Tensor, p P, acc *accum) (*peel.Tensor, P) {
	plus := func(i int, ct *peel.Tensor) *peel.Tensor {
		if acc == nil {
			return ct
		}
		return peel.Add(ct, acc.grads[i])
	}
	if comm.Size() == 1 {
		// One member: its loss and gradient are the means, with nothing
		// to exchange.
		l, g := transforms.ValueAndGrad(loss)(p)
		if acc == nil {
			return l, g
		}
		gs := tree.Leaves(g)
		for i, x := range gs {
			gs[i] = plus(i, x).Div(float64(acc.k))
		}
		return peel.Add(l, acc.loss).Div(float64(acc.k)), tree.Unflatten(g, gs)
	}
	b := &buckets{comm: comm, cfg: cfg, open: map[peel.DType]*bucket{}}
	hooked := func(p P) *peel.Tensor {
		ls := tree.Leaves(p)
		b.seen = make([]bool, len(ls))
		for i := range ls {
			ls[i] = transforms.Hook(ls[i], func(ct *peel.Tensor) *peel.Tensor {
				b.ready(i, plus(i, ct))
				return nil
			})
		}
		return loss(tree.Unflatten(p, ls))
	}
	l, g := transforms.ValueAndGrad(hooked)(p)
	gs := tree.Leaves(g)
	// Leaves whose hook did not run (a gradient that is zero, known
	// without a backward pass) join the last buckets, as every member
	// has them too.
	for i, x := range gs {
		if !b.seen[i] {
			b.ready(i, plus(i, x))
		}
	}
	if acc != nil {
		l = peel.Add(l, acc.loss)
	}
	for _, dt := range b.order {
		b.close(dt)
	}
	for _, k := range b.closed { // those not started yet, in order
		if k.run.site == nil {
			b.begin(k)
		}
	}
	ls := start(comm, dist.Sum, l)
	// The mean: each leaf's part of the sum divided by N (one pass that
	// writes the leaf, fused with the slice when compiled).
	n := float64(comm.Size())
	if acc != nil {
		n *= float64(acc.k)
	}
	mean := func(x *peel.Tensor) *peel.Tensor {
		if n == 1 {
			return x
		}
		return x.Div(n)
	}
	for _, k := range b.closed {
		flat := k.run.wait()
		off := 0
		for j, i := range k.leaves {
			size := interp.AvalOf(k.parts[j]).Size()
			gs[i] = mean(peel.Narrow(flat, 0, off, size).Reshape(k.parts[j].Shape()...))
			off += size
		}
	}
	return mean(ls.wait().Reshape(l.Shape()...)), tree.Unflatten(g, gs)
}

// buckets are the gradients of one step, grouped for all-reduce.
type buckets struct {
	comm   dist.Communicator
	cfg    config
	seen   []bool
	open   map[peel.DType]*bucket
	order  []peel.DType // dtypes in the order their first bucket opened
	closed []*bucket    // in the order they closed
}

// bucket is gradients of one dtype all-reduced together.
type bucket struct {
	leaves []int
	parts  []*peel.Tensor
	bytes  int
	run    started
}

// ready adds leaf i's complete gradient g to the open bucket of its
// dtype and starts the bucket when it is full.
func (b *buckets) ready(i int, g *peel.Tensor) {
	if b.seen[i] {
		return
	}
	b.seen[i] = true
	dt := g.DType()
	k := b.open[dt]
	if k == nil {
		k = &bucket{}
		b.open[dt] = k
		b.order = append(b.order, dt)
	}
	k.leaves = append(k.leaves, i)
	k.parts = append(k.parts, g)
	k.bytes += g.Size() * dt.Size()
	limit := b.cfg.rest
	if len(b.closed) == 0 {
		limit = b.cfg.first
	}
	if k.bytes >= limit {
		b.close(dt)
	}
}

// close ends dtype dt's open bucket and, when overlapping, starts its
// all-reduce.
func (b *buckets) close(dt peel.DType) {
	k := b.open[dt]
	if k == nil {
		return
	}
	delete(b.open, dt)
	b.closed = append(b.closed, k)
	if b.cfg.overlap {
		b.begin(k)
	}
}

// begin starts bucket k's all-reduce.
func (b *buckets) begin(k *bucket) {
	k.run = startAs(b.comm, dist.Sum, b.cfg.wire, k.parts...)
}
