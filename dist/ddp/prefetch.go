package ddp

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
)

// A Gather is one primitive, fsdp_gather: its operands are every shard
// of the model, its results the selected part's leaves whole. Taking
// every shard lets its evaluation start the all-gather of whichever
// part comes next (the prefetcher below) while the caller computes with
// this one, in the forward pass and in a Checkpoint's recomputation for
// the backward pass alike; the part's own shards are the only ones it
// differentiates. Its tangent is the all-gather of the part's tangents
// (fsdp_all_gather, whose transpose reduce-scatters), so the backward
// pass is unchanged. It is an effect that borrows its operands: it
// concatenates what it sends.

// partParams are a Gather's: the part's leaves among the shards, their
// whole types, and the Sharded value's prefetcher (nil: none).
type partParams struct {
	gatherer
	part []int  // the part's leaves: indices into the shards, in the part's order
	key  string // part, as the prefetcher compares parts
	pf   *prefetcher
}

func (p *partParams) String() string { return "part " + p.key }

var fsdpPartPrim = interp.NewPrim("fsdp_gather", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return slices.Clone(params.(*partParams).whole)
})

func init() {
	fsdpPartPrim.Effect = true
	fsdpPartPrim.BorrowsOperands = true
	fsdpPartPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		p := params.(*partParams)
		if p.pf == nil {
			return p.finish(p.start(args, false))
		}
		return p.pf.gather(p, args)
	}
	fsdpPartPrim.JVP = func(params any, primals, tangents []*interp.Tensor) ([]*interp.Tensor, []*interp.Tensor) {
		p := params.(*partParams)
		out := interp.Bind(fsdpPartPrim, params, primals...)
		ts := make([]*interp.Tensor, len(p.part))
		some := false
		for j, i := range p.part {
			ts[j] = tangents[i]
			some = some || ts[j] != nil
		}
		if !some {
			return out, make([]*interp.Tensor, len(out))
		}
		for j, i := range p.part {
			if ts[j] == nil {
				ts[j] = peel.ZerosLike(primals[i])
			}
		}
		return out, p.gather(ts)
	}
}

// start starts the all-gathers of the part's shards among args (one per
// dtype of the part; non-blocking when async).
func (p *partParams) start(args []*interp.Tensor, async bool) []dist.Request {
	shards := make([]*peel.Tensor, len(p.part))
	for j, i := range p.part {
		shards[j] = args[i]
	}
	cats := p.concats(shards)
	reqs := make([]dist.Request, len(cats))
	for k, c := range cats {
		if async {
			reqs[k] = p.comm.IAllGather(c)
		} else {
			reqs[k] = done{p.comm.AllGather(c)}
		}
	}
	return reqs
}

// finish waits for the part's all-gathers and cuts its leaves out.
func (p *partParams) finish(reqs []dist.Request) []*peel.Tensor {
	alls := make([]*peel.Tensor, len(reqs))
	for k, r := range reqs {
		alls[k] = r.Wait()
	}
	return p.cut(alls)
}

// done is a Request that completed when it started.
type done struct{ r *peel.Tensor }

func (d done) Wait() *peel.Tensor { return d.r }

// partKey names a part by its leaves' indices.
func partKey(part []int) string {
	var b strings.Builder
	for j, i := range part {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// prefetcher starts the all-gather of the part a Sharded value's next
// Gather will ask for while the caller computes with the current one
// (torch FSDP's forward and backward prefetch, from the order it
// records). It records the parts the Gathers of a step ask for, in
// order, the recomputations of checkpointed parts for the backward pass
// included; a step ends at the first Gather that shows a leaf the step
// has gathered before with other values (after the optimizer's update:
// usually the next step's first Gather; where the first part is frozen,
// the first one of a part that was updated, and the frozen part's next
// gather is then prefetched across the update, its values unchanged). From the second step on,
// while a step asks for the parts in the recorded order, each Gather
// starts the next part's all-gather (IAllGather) before it returns, and
// the next Gather waits for it instead of gathering. It never starts
// one past the end of the recorded step, so no all-gather spans an
// update.
//
// A prefetched all-gather is used only for the part it was started for,
// and only when the part's shards still show the values it sent: it
// holds snapshots of them (interp.Snapshot), under which any write into
// their memory goes to a copy, and ShowsSnapshot compares. Otherwise it
// is waited for and dropped (every member drops it alike: their programs
// make the same calls), and the part is gathered then. A part whose
// shards changed under a prefetch stops prefetching for good (they can
// only have been written during a step), and so do maxMisses dropped
// prefetches in a row (steps that do not repeat, or tensors the
// prefetcher cannot tell apart: a compiled program's donated inputs are
// new tensors over reused memory at every Gather).
//
// Every member of the communicator makes the same decisions: they run
// the same program on their own shards, so their collectives start in
// the same order, which MPI requires; a member whose calls diverge gets
// the communicator's error, not a hang.
type prefetcher struct {
	mu     sync.Mutex
	off    bool
	record []*partParams        // the last complete step's parts, in order
	cur    []*partParams        // this step's so far
	match  bool                 // cur is a prefix of record
	seen   map[int]*peel.Tensor // snapshots of the leaves the step has gathered, as it first did
	next   *prefetched
	// hits and misses count the Gathers served by a prefetch and those
	// whose prefetch was dropped, for tests; streak counts the misses
	// since the last hit.
	hits, misses, streak int
}

// maxMisses is the prefetches in a row, none used, after which a
// prefetcher stops: its steps do not repeat (or it cannot tell their
// tensors apart), and each miss costs an all-gather.
const maxMisses = 3

// maxRecord bounds a recorded step: a loop that never updates the
// parameters records no longer, and prefetches nothing.
const maxRecord = 1 << 12

// prefetched is an all-gather started ahead: the part, the snapshots of
// its shards when it started, and its requests.
type prefetched struct {
	p     *partParams
	snaps []*peel.Tensor
	reqs  []dist.Request
}

func (f *prefetcher) gather(p *partParams, args []*interp.Tensor) []*interp.Tensor {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cur) > 0 && f.changed(args, p.part) {
		// A leaf with other values than earlier in the step: a new step.
		if len(f.cur) < maxRecord {
			f.record = f.cur
		} else {
			f.record = nil
		}
		f.cur = nil
		for _, s := range f.seen {
			interp.ReleaseSnapshot(s)
		}
		clear(f.seen)
	}
	if len(f.cur) == 0 {
		f.match = len(f.record) > 0
	}
	if f.seen == nil {
		f.seen = map[int]*peel.Tensor{}
	}
	for _, i := range p.part {
		if f.seen[i] == nil {
			f.seen[i] = interp.Snapshot(args[i])
		}
	}
	pos := len(f.cur)
	if pos < maxRecord {
		f.cur = append(f.cur, p)
	}
	f.match = f.match && pos < len(f.record) && f.record[pos].key == p.key
	var out []*interp.Tensor
	if nx := f.next; nx != nil {
		// Complete it whatever it is: every member started it, in this
		// order.
		f.next = nil
		res := nx.p.finish(nx.reqs)
		switch {
		case nx.p.key != p.key:
			f.misses++
			f.streak++
			f.off = f.streak >= maxMisses
		case shows(nx.snaps, args, p.part):
			out = res
			f.hits++
			f.streak = 0
		default:
			f.misses++
			f.off = true
		}
		release(nx.snaps)
	}
	if out == nil {
		out = p.finish(p.start(args, false))
	}
	if !f.off && f.match && pos+1 < len(f.record) {
		q := f.record[pos+1]
		f.next = &prefetched{p: q, snaps: snapshots(args, q.part), reqs: q.start(args, true)}
	}
	return out
}

// changed reports whether a leaf of the part that the step has gathered
// before shows other values than it did then.
func (f *prefetcher) changed(args []*interp.Tensor, part []int) bool {
	for _, i := range part {
		if s := f.seen[i]; s != nil && !interp.ShowsSnapshot(s, args[i]) {
			return true
		}
	}
	return false
}

// snapshots returns snapshots of the part's shards among args.
func snapshots(args []*interp.Tensor, part []int) []*peel.Tensor {
	s := make([]*peel.Tensor, len(part))
	for j, i := range part {
		s[j] = interp.Snapshot(args[i])
	}
	return s
}

// shows reports whether the part's shards among args show the values
// of their snapshots.
func shows(snaps []*peel.Tensor, args []*interp.Tensor, part []int) bool {
	for j, i := range part {
		if !interp.ShowsSnapshot(snaps[j], args[i]) {
			return false
		}
	}
	return true
}

func release(snaps []*peel.Tensor) {
	for _, s := range snaps {
		interp.ReleaseSnapshot(s)
	}
}
