package compiler

import (
	"sync"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// A fused group is a run of elementwise equations over one shape (the
// blocked evaluation of interp.Compiled, generalized to groups inside any
// graph). It runs block by block: every equation's kernel is applied to
// a block of interp.FuseBlock elements before the next block is read;
// results used only inside the group live in per-worker block buffers
// and are never materialized; blocks are spread over the backend's
// threads (arrays below interp.FuseMin stay on the calling goroutine).
// Each element is computed by the same kernels in the same order as by
// equation-by-equation evaluation, so results are bit for bit equal.
//
// Operands from outside the group must be contiguous or broadcast
// scalars; others are copied to a contiguous buffer before the group.
// The group is emitted when an equation outside it needs one of its
// results (or at the end), so independent equations met in between run
// before it.
type group struct {
	shape []int
	n     int
	// defines holds the buffers of the group's results.
	defines map[int]bool
	members []member
	// external holds the operand slots from outside the group.
	external []int

	// reduce, when set, is a trailing sum over the last axis of a
	// result of the group, computed block by block (blocks are whole
	// rows).
	reduce *reduction

	// Set by planGroup: the block size and the shapes of a full and of
	// the last block.
	block      int
	full, tail []int
}

// reduction is a group's trailing reduce_sum over the last axis: in is
// the summed slot (a result of the group), out its result's slot; k the
// length of a row.
type reduction struct {
	prim   *interp.Prim
	params any
	in     ref
	inSlot int
	out    int
	k      int
	// The shapes of a full and of the last block, as rows × k, and of
	// their sums.
	full2, tail2, fullOut, tailOut []int
}

// member is one equation of a group.
type member struct {
	prim   *interp.Prim
	params any
	in     []ref
	out    ref
	// ins are the operand slots, outSlot the result slot (before
	// planning).
	ins     []int
	outSlot int
	// base is where the operands start in the run state's templates,
	// for a group of one block.
	base int
	// direct is the member's kernel resolved for its template operands
	// (a group of one block; nil: none, use Exec). See resolveDirect.
	direct backend.Direct
}

// ref is a group operand or result: a block buffer (scratch ≥ 0) or a
// block cut from a whole-array slot.
type ref struct {
	slot    int
	scratch int
}

// fuse adds elementwise equation e to the open group, first closing a
// group of another shape, or one whose results e reads through a view.
func (b *builder) fuse(e *interp.Eqn) {
	p := b.p
	shape := e.Out[0].Aval.Shape
	if b.open != nil && !interp.ShapeEqual(b.open.shape, shape) {
		b.close()
	}
	ins := make([]int, len(e.In))
	for i, v := range e.In {
		s := b.vals[v]
		if b.inOpen(s) && p.bufs[p.vals[s].root].val != s {
			b.close()
		}
		ins[i] = s
	}
	for i, s := range ins {
		if !b.inOpen(s) {
			ins[i] = b.materialize(s, true, false)
		}
	}
	if b.open == nil {
		b.open = &group{shape: shape, n: backend.ShapeSize(shape), defines: map[int]bool{}}
	}
	g := b.open
	out := b.newBuf(e.Out[0].Aval)
	b.vals[e.Out[0]] = out
	g.defines[p.vals[out].root] = true
	for _, s := range ins {
		if !b.inOpen(s) && !contains(g.external, s) {
			g.external = append(g.external, s)
		}
	}
	g.members = append(g.members, member{prim: e.Prim, params: e.Params, ins: ins, outSlot: out})
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// close emits the open group: a kernel instruction when it has one
// equation, else a fused instruction.
func (b *builder) close() {
	g := b.open
	if g == nil {
		return
	}
	b.open = nil
	if len(g.members) == 1 && g.reduce == nil {
		m := g.members[0]
		b.emit(instr{kind: opKernel, prim: m.prim, params: m.params, in: m.ins, out: []int{m.outSlot}})
		return
	}
	out := make([]int, len(g.members))
	for i, m := range g.members {
		out[i] = m.outSlot
	}
	if g.reduce != nil {
		out = append(out, g.reduce.out)
	}
	b.emit(instr{kind: opFused, in: g.external, out: out, group: g})
}

// trailingSum adds e, a reduce_sum over the last axis of a result of the
// open group, to the group and closes it; it reports false (doing
// nothing) when e is not such a sum or the rows are longer than a block.
func (b *builder) trailingSum(e *interp.Eqn) bool {
	g := b.open
	if g == nil || e.Prim != prims.ReduceSum || len(e.In) != 1 || len(e.Out) != 1 {
		return false
	}
	rp, ok := e.Params.(prims.ReduceParams)
	r := len(g.shape)
	if !ok || r == 0 || len(rp.Axes) != 1 || rp.Axes[0] != r-1 {
		return false
	}
	s := b.vals[e.In[0]]
	k := g.shape[r-1]
	if !b.inOpen(s) || b.p.bufs[b.p.vals[s].root].val != s || k == 0 || k > interp.FuseBlock || !b.p.be.Has(e.Prim.Op) {
		return false
	}
	out := b.newBuf(e.Out[0].Aval)
	b.vals[e.Out[0]] = out
	g.reduce = &reduction{prim: e.Prim, params: prims.ReduceParams{Axes: []int{1}}, inSlot: s, out: out, k: k}
	b.close()
	return true
}

// planGroup decides which results of a fused group are materialized
// (read after the group or returned) and gives the others block buffers,
// reused within the group once dead.
func (p *Program) planGroup(in *instr) {
	g := in.group
	g.block = min(interp.FuseBlock, g.n)
	if rd := g.reduce; rd != nil {
		// Whole rows per block.
		g.block = min(interp.FuseBlock/rd.k*rd.k, g.n)
	}
	g.full = []int{g.block}
	g.tail = []int{g.block}
	if g.block > 0 && g.n%g.block != 0 {
		g.tail = []int{g.n % g.block}
	}
	if rd := g.reduce; rd != nil && g.block > 0 {
		rd.full2, rd.fullOut = []int{g.block / rd.k, rd.k}, []int{g.block / rd.k}
		rd.tail2, rd.tailOut = []int{g.tail[0] / rd.k, rd.k}, []int{g.tail[0] / rd.k}
	}
	// last[i]: the last member reading member i's result.
	idx := map[int]int{}
	for i, m := range g.members {
		idx[m.outSlot] = i
	}
	last := make([]int, len(g.members))
	for i, m := range g.members {
		last[i] = i
		for _, s := range m.ins {
			if j, ok := idx[s]; ok {
				last[j] = max(last[j], i)
			}
		}
	}
	if g.reduce != nil {
		// Read after every member.
		last[idx[g.reduce.inSlot]] = len(g.members)
	}
	// Local block buffers per dtype: free lists of global scratch
	// indices.
	used := map[backend.DType]int{}
	freeBy := map[backend.DType][]int{}
	slotOf := func(dt backend.DType) int {
		if f := freeBy[dt]; len(f) > 0 {
			freeBy[dt] = f[:len(f)-1]
			return f[len(f)-1]
		}
		k := used[dt]
		used[dt]++
		// The k-th block buffer of dtype dt, shared by every group.
		for j, sc := range p.scratch {
			if sc.dtype != dt {
				continue
			}
			if k == 0 {
				p.scratch[j].n = max(sc.n, g.block)
				return j
			}
			k--
		}
		p.scratch = append(p.scratch, scratchSpec{dtype: dt, n: g.block})
		return len(p.scratch) - 1
	}
	for i := range g.members {
		m := &g.members[i]
		m.in = make([]ref, len(m.ins))
		for k, s := range m.ins {
			m.in[k] = ref{slot: s, scratch: -1}
			if j, ok := idx[s]; ok {
				m.in[k] = g.members[j].out
			}
		}
		bi := p.vals[m.outSlot].root
		bf := &p.bufs[bi]
		if bf.output || bf.last > bf.def {
			m.out = ref{slot: m.outSlot, scratch: -1}
		} else {
			bf.scratch = true
			m.out = ref{slot: m.outSlot, scratch: slotOf(bf.dtype)}
		}
		// Free the block buffers of results read for the last time
		// here (after the result took its own).
		for k, s := range m.ins {
			if j, ok := idx[s]; ok && last[j] == i && m.in[k].scratch >= 0 && !dupBefore(m.ins, k) {
				dt := p.bufs[p.vals[s].root].dtype
				freeBy[dt] = append(freeBy[dt], m.in[k].scratch)
			}
		}
		if m.out.scratch >= 0 && last[i] == i {
			freeBy[bf.dtype] = append(freeBy[bf.dtype], m.out.scratch)
		}
	}
	if rd := g.reduce; rd != nil {
		rd.in = g.members[idx[rd.inSlot]].out
	}
}

// dupBefore reports whether s[k] occurs in s[:k].
func dupBefore(s []int, k int) bool { return contains(s[:k], s[k]) }

// runGroup runs a fused group block by block.
func (p *Program) runGroup(rs *runState, g *group) {
	if g.n == 0 {
		return
	}
	blocks := (g.n + g.block - 1) / g.block
	workers := 1
	if g.n >= interp.FuseMin {
		workers = min(interp.BackendThreads(p.be), blocks)
	}
	if g.n <= g.block && g.reduce == nil {
		// One block: the operands are in the templates.
		w := rs.workers[0]
		for i := range g.members {
			m := &g.members[i]
			k := len(m.in)
			if m.direct != nil {
				m.direct(rs.tmpl[m.base:m.base+k], rs.tmpl[m.base+k:m.base+k+1])
				continue
			}
			ins := w.in[:k]
			copy(ins, rs.tmpl[m.base:m.base+k])
			p.be.Exec(m.prim.Op, m.params, ins, rs.tmpl[m.base+k:m.base+k+1])
		}
		return
	}
	p.addWorkers(rs, workers)
	if workers == 1 {
		p.blocks(rs, rs.workers[0], g, 0, blocks, 1)
		return
	}
	p.parallelBlocks(rs, g, blocks, workers)
}

// addWorkers gives rs at least n workers' block buffers.
func (p *Program) addWorkers(rs *runState, n int) {
	for len(rs.workers) < n {
		w := &worker{in: make([]backend.Array, 3), out: make([]backend.Array, 1)}
		for _, sc := range p.scratch {
			w.scratch = append(w.scratch, p.be.Alloc(sc.dtype, sc.n))
		}
		rs.workers = append(rs.workers, w)
	}
}

// parallelBlocks spreads the blocks of g over workers goroutines (the
// caller's among them) and re-panics the first failure once all are done.
// It is apart from runGroup so the one-worker path allocates nothing.
func (p *Program) parallelBlocks(rs *runState, g *group, blocks, workers int) {
	var wg sync.WaitGroup
	var failed any
	var once sync.Once
	wg.Add(workers - 1)
	for k := 1; k < workers; k++ {
		go func(k int) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { failed = r })
				}
			}()
			p.blocks(rs, rs.workers[k], g, k, blocks, workers)
		}(k)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				once.Do(func() { failed = r })
			}
		}()
		p.blocks(rs, rs.workers[0], g, 0, blocks, workers)
	}()
	wg.Wait()
	if failed != nil {
		panic(failed)
	}
}

// blocks runs blocks first, first+step, … of group g on worker w.
func (p *Program) blocks(rs *runState, w *worker, g *group, first, blocks, step int) {
	for bl := first; bl < blocks; bl += step {
		lo := bl * g.block
		shape := g.full
		if lo+g.block > g.n {
			shape = g.tail
		}
		for i := range g.members {
			m := &g.members[i]
			ins := w.in[:len(m.in)]
			for k, r := range m.in {
				ins[k] = p.blockArray(rs, w, r, lo, shape)
			}
			w.out[0] = p.blockArray(rs, w, m.out, lo, shape)
			p.be.Exec(m.prim.Op, m.params, ins, w.out)
		}
		if rd := g.reduce; rd != nil {
			in2, out := rd.full2, rd.fullOut
			if lo+g.block > g.n {
				in2, out = rd.tail2, rd.tailOut
			}
			a := p.blockArray(rs, w, rd.in, lo, shape)
			w.in[0] = backend.Array{Buf: a.Buf, Shape: in2, Offset: a.Offset}
			w.out[0] = interp.CutBlock(p.array(rs, rd.out), lo/rd.k, out)
			p.be.Exec(rd.prim.Op, rd.params, w.in[:1], w.out)
		}
	}
}

// blockArray returns the block of ref r at element lo.
func (p *Program) blockArray(rs *runState, w *worker, r ref, lo int, shape []int) backend.Array {
	if r.scratch >= 0 {
		return backend.Array{Buf: w.scratch[r.scratch], Shape: shape}
	}
	return interp.CutBlock(p.array(rs, r.slot), lo, shape)
}
