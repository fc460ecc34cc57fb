package compiler

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// builder turns a graph's equations into instructions.
type builder struct {
	p    *Program
	vals map[*interp.Var]int
	// open is the fused group being grown (nil when none); its
	// equations' results are buffers whose def is set when it closes.
	open *group
}

// Build prepares g for repeated evaluation by Run: it resolves every
// equation to an instruction, fuses elementwise chains into blocked
// groups, and plans the memory of intermediates. The program runs on the
// backend of g's constants (the default backend when it has none); it
// holds snapshots of them, so later writes into the tensors they were
// traced from do not change it. Build panics with *Error if g's
// constants were released (Graph.ReleaseConstants), are tracers, or live
// on different backends.
func Build(g *interp.Graph) *Program { return BuildOn(g, nil) }

// BuildOn is Build for a program that runs on be (Build's choice when be
// is nil): g's constants must live there, and a graph without constants
// runs there rather than on the default backend.
func BuildOn(g *interp.Graph, be backend.Backend) *Program {
	if g.Released() {
		panic(&Error{Ops: []string{"compiler.Build"}, Msg: "the graph's constants were released (ReleaseConstants)"})
	}
	snaps := make([]*interp.Tensor, len(g.Consts))
	for i := range g.Consts {
		c := g.ConstVals[i]
		if c == nil || !c.IsConcrete() {
			panic(&Error{Ops: []string{"compiler.Build"}, Msg: "constant " + strconv.Itoa(i) + " is not a concrete tensor"})
		}
		snaps[i] = interp.Snapshot(c)
	}
	return build(g, be, snaps, 0)
}

// build builds the program of g on be (nil: the constants' backend, else
// the default) with the constants' snapshots snaps. Inputs in splat (a
// bit mask over the first 64) are laid out as broadcast scalars (every
// stride zero), the others contiguously.
func build(g *interp.Graph, be backend.Backend, snaps []*interp.Tensor, splat uint64) *Program {
	p := &Program{g: g, be: be, splatIn: splat}
	b := &builder{p: p, vals: map[*interp.Var]int{}}
	for i, v := range g.In {
		var strides []int
		if i < 64 && splat&(1<<i) != 0 {
			strides = make([]int, len(v.Aval.Shape))
		}
		b.vals[v] = p.newSlot(slot{kind: rootInput, root: i, shape: v.Aval.Shape, strides: strides, dtype: v.Aval.DType})
	}
	for i, v := range g.Consts {
		snap := snaps[i]
		arr, be := interp.ArrayOf(snap)
		if p.be == nil {
			p.be = be
		} else if be != p.be {
			panic(&Error{Ops: []string{"compiler.Build"}, Msg: "constants live on different backends (" + p.be.Name() + ", " + be.Name() + ")"})
		}
		p.consts = append(p.consts, snap)
		p.constArrs = append(p.constArrs, backend.Array{Buf: arr.Buf, Offset: arr.Offset})
		b.vals[v] = p.newSlot(slot{kind: rootConst, root: i, shape: arr.Shape, strides: arr.Strides, dtype: arr.Buf.DType()})
	}
	if p.be == nil {
		p.be = interp.DefaultBackend()
	}
	for _, e := range g.Eqns {
		b.eqn(e)
	}
	b.close()
	// Outputs.
	for _, v := range g.Out {
		s := b.vals[v]
		sl := p.vals[s]
		switch {
		case sl.kind == rootInput && v == g.In[sl.root]:
			p.outs = append(p.outs, outSpec{kind: outInput, idx: sl.root})
		case sl.kind == rootConst && v == g.Consts[sl.root]:
			p.outs = append(p.outs, outSpec{kind: outConst, idx: sl.root})
		case sl.kind == rootBuf:
			p.bufs[sl.root].output = true
			p.outs = append(p.outs, outSpec{kind: outBuffer, idx: s})
		default:
			// A view of an input or a constant: copied into memory
			// the caller owns.
			c := b.newBuf(v.Aval)
			b.emit(instr{kind: opCopy, in: []int{s}, out: []int{c}})
			p.bufs[p.vals[c].root].output = true
			p.outs = append(p.outs, outSpec{kind: outBuffer, idx: c})
		}
	}
	p.ownOutput = make([]bool, len(p.outs))
	roots := map[int]int{}
	for _, o := range p.outs {
		if o.kind == outBuffer {
			roots[p.vals[o.idx].root]++
		}
	}
	for i, o := range p.outs {
		if o.kind != outBuffer {
			continue
		}
		sl := p.vals[o.idx]
		arr := p.layout(o.idx)
		p.ownOutput[i] = roots[sl.root] == 1 && arr.Offset == 0 && arr.IsContiguous() && arr.Size() == p.bufs[sl.root].n
		p.bufs[sl.root].own = p.ownOutput[i]
	}
	p.finish()
	p.base = p.newPlan(0)
	return p
}

func (p *Program) newSlot(s slot) int {
	p.vals = append(p.vals, s)
	return len(p.vals) - 1
}

// newBuf returns the slot of a new contiguous buffer of type a.
func (b *builder) newBuf(a interp.Aval) int {
	p := b.p
	id := len(p.bufs)
	s := p.newSlot(slot{kind: rootBuf, root: id, shape: a.Shape, dtype: a.DType})
	p.bufs = append(p.bufs, bufInfo{dtype: a.DType, n: a.Size(), def: -1, last: -1, val: s})
	return s
}

// emit appends an instruction and records it as the definition of its
// results' buffers.
func (b *builder) emit(in instr) {
	p := b.p
	for _, v := range in.out {
		p.bufs[p.vals[v].root].def = len(p.instrs)
	}
	p.instrs = append(p.instrs, in)
}

// layout returns slot s's static layout as an array (no buffer).
func (p *Program) layout(s int) backend.Array {
	sl := &p.vals[s]
	return backend.Array{Shape: sl.shape, Strides: sl.strides, Offset: sl.offset}
}

// inOpen reports whether slot s lies in a buffer the open group defines.
func (b *builder) inOpen(s int) bool {
	sl := b.p.vals[s]
	return b.open != nil && sl.kind == rootBuf && b.open.defines[sl.root]
}

// materialize returns a slot holding slot s's values contiguously: s
// itself when it is contiguous (or, with splat, a broadcast scalar), else
// a copy instruction's result.
func (b *builder) materialize(s int, splat, repeat bool) int {
	a := b.p.layout(s)
	if a.IsContiguous() || (splat && a.IsSplat()) || (repeat && isRepeat(a)) {
		return s
	}
	if b.inOpen(s) {
		b.close()
	}
	sl := b.p.vals[s]
	c := b.newBuf(interp.Aval{Shape: sl.shape, DType: sl.dtype})
	b.emit(instr{kind: opCopy, in: []int{s}, out: []int{c}})
	return c
}

// isRepeat reports whether a is a contiguous block repeated along leading
// zero-stride dimensions (a vmapped or row-broadcast operand), which
// binary elementwise kernels of the CPU backend read in place.
func isRepeat(a backend.Array) bool {
	if a.Strides == nil {
		return true
	}
	k := 0
	for k < len(a.Shape) && (a.Strides[k] == 0 || a.Shape[k] == 1) {
		k++
	}
	want := 1
	for j := len(a.Shape) - 1; j >= k; j-- {
		if a.Shape[j] != 1 && a.Strides[j] != want {
			return false
		}
		want *= a.Shape[j]
	}
	return true
}

// direct reports whether eqn e can run as a kernel on the program's
// backend, as eval would run it.
func (b *builder) direct(e *interp.Eqn) bool {
	pr := e.Prim
	if pr.Kind != interp.Pure || pr.NoEval != "" || !b.p.be.Has(pr.Op) {
		return false
	}
	return pr.Impl == nil || pr.Whole
}

// fusable reports whether e is an elementwise equation a fused group can
// run block by block: one result, every operand of the result's shape.
func (b *builder) fusable(e *interp.Eqn) bool {
	pr := e.Prim
	if !b.direct(e) || len(e.Out) != 1 || (pr.Elementwise == nil && pr != prims.Where && pr != prims.ConvertElementType) {
		return false
	}
	for _, v := range e.In {
		if !interp.ShapeEqual(v.Aval.Shape, e.Out[0].Aval.Shape) {
			return false
		}
	}
	return true
}

// repeatOperand reports whether a binary elementwise e reads an operand
// repeated along leading dimensions (a row broadcast such as a bias):
// its kernel reads that in place, which a block cannot, so e runs alone
// rather than after a copy of the broadcast.
func (b *builder) repeatOperand(e *interp.Eqn) bool {
	if e.Prim.Elementwise == nil || e.Prim.Elementwise.Arity != 2 {
		return false
	}
	for _, v := range e.In {
		a := b.p.layout(b.vals[v])
		if !a.IsContiguous() && !a.IsSplat() && isRepeat(a) {
			return true
		}
	}
	return false
}

// eqn translates one equation.
func (b *builder) eqn(e *interp.Eqn) {
	p := b.p
	pr := e.Prim
	if pr.Kind == interp.ViewKind && pr.ViewArray != nil && pr.Impl == nil && len(e.In) == 1 && len(e.Out) == 1 {
		s := b.vals[e.In[0]]
		arr, ok := interp.ViewArray(pr, e.Params, p.layout(s))
		if !ok {
			s = b.materialize(s, false, false)
			arr, _ = interp.ViewArray(pr, e.Params, p.layout(s))
		}
		sl := p.vals[s]
		b.vals[e.Out[0]] = p.newSlot(slot{kind: sl.kind, root: sl.root, shape: e.Out[0].Aval.Shape, strides: arr.Strides, offset: arr.Offset, dtype: sl.dtype})
		return
	}
	if pr == prims.StopGradient && len(e.In) == 1 && len(e.Out) == 1 {
		// The identity on values (it only stops differentiation, which
		// a program does not do): an alias of its operand, as a view
		// is, so no kernel runs and no fused group grows.
		sl := p.vals[b.vals[e.In[0]]]
		b.vals[e.Out[0]] = p.newSlot(sl)
		return
	}
	if b.fusable(e) && b.fuse(e) {
		return
	}
	if b.rowReduce(e) {
		return
	}
	dir := b.direct(e)
	in := make([]int, len(e.In))
	for i, v := range e.In {
		in[i] = b.vals[v]
		if b.inOpen(in[i]) {
			b.close()
		}
	}
	if dir {
		// Elementwise kernels read broadcast scalars (and, binary ones,
		// repeated blocks) in place; any other strided operand is
		// copied by an instruction into a planned buffer, so the kernel
		// never allocates a contiguous copy itself at run time.
		elementwise := pr.Elementwise != nil || pr == prims.Where || pr == prims.ConvertElementType
		binary := pr.Elementwise != nil && pr.Elementwise.Arity == 2
		for i := range in {
			in[i] = b.materialize(in[i], elementwise, binary)
		}
	}
	out := make([]int, len(e.Out))
	for i, v := range e.Out {
		out[i] = b.newBuf(v.Aval)
		b.vals[v] = out[i]
	}
	kind := opKernel
	if !dir {
		kind = opFallback
	}
	b.emit(instr{kind: kind, prim: pr, params: e.Params, site: e.Site, in: in, out: out})
}

// finish computes the buffers' lifetimes and the scratch of fused groups.
func (p *Program) finish() {
	n := len(p.instrs)
	p.inLast = make([]int, len(p.g.In))
	for i := range p.inLast {
		p.inLast[i] = -1
	}
	use := func(s, at int) {
		sl := p.vals[s]
		switch sl.kind {
		case rootBuf:
			p.bufs[sl.root].last = max(p.bufs[sl.root].last, at)
		case rootInput:
			p.inLast[sl.root] = max(p.inLast[sl.root], at)
		}
	}
	for i := range p.instrs {
		in := &p.instrs[i]
		p.maxIn, p.maxOut = max(p.maxIn, len(in.in)), max(p.maxOut, len(in.out))
		if in.kind == opFused {
			for _, s := range in.group.external {
				use(s, i)
			}
			continue
		}
		for _, s := range in.in {
			use(s, i)
		}
	}
	for _, o := range p.outs {
		switch o.kind {
		case outBuffer:
			use(o.idx, n)
		case outInput:
			p.inLast[o.idx] = n
		}
	}
	for i := range p.bufs {
		if p.bufs[i].last < p.bufs[i].def {
			p.bufs[i].last = p.bufs[i].def
		}
	}
	for i := range p.instrs {
		in := &p.instrs[i]
		switch in.kind {
		case opFused:
			p.planGroup(in)
			g := in.group
			if g.n <= g.block && !g.rowMode {
				for j := range g.members {
					m := &g.members[j]
					m.base = p.addTemplate(append(append([]ref(nil), m.in...), m.out), g.full)
					m.direct = p.resolveDirect(m.prim, m.params, m.base, len(m.in), 1)
				}
			}
		case opKernel:
			refs := make([]ref, 0, len(in.in)+len(in.out))
			for _, s := range in.in {
				refs = append(refs, ref{slot: s, scratch: -1})
			}
			for _, s := range in.out {
				refs = append(refs, ref{slot: s, scratch: -1})
			}
			in.base = p.addTemplate(refs, nil)
			in.direct = p.resolveDirect(in.prim, in.params, in.base, len(in.in), len(in.out))
		}
	}
}

// plan is the placement of buffers for one donation mask.
type plan struct {
	mask uint64
	// patch lists the template entries over memory that changes from
	// run to run (inputs, outputs, donated buffers).
	patch []int
	// where[b] is buffer b's place: an arena index (≥ 0), -1 for a
	// fresh output buffer, -2-i for donated input i, -1<<62 for none
	// (scratch).
	where []int
	// bound lists the buffers that have a place (where is not
	// placeNone): the ones a run binds and clears, fewer than all when
	// fused groups keep intermediates in blocks.
	bound []int
	arena []scratchSpec
	pool  sync.Pool
}

const (
	placeOutput  = -1
	placeNone    = -1 << 62
	placeDonated = -2
)

// newPlan places the buffers: walking the instructions in order, each
// buffer an instruction defines takes a free arena buffer of its dtype
// that fits (the smallest), or a new one; outputs get fresh memory (or a
// donated input of their exact type); buffers are freed after the last
// instruction reading them, inputs donated in mask after theirs. A buffer
// is never freed before the instruction defining another is done, so a
// kernel's results never alias its operands.
func (p *Program) newPlan(mask uint64) *plan {
	pl := &plan{mask: mask, where: make([]int, len(p.bufs))}
	type free struct {
		place int
		dt    backend.DType
		n     int
	}
	var frees []free
	byDef := make([][]int, len(p.instrs)+1)
	byLast := make([][]int, len(p.instrs)+1)
	for i, b := range p.bufs {
		pl.where[i] = placeNone
		if b.scratch || b.def < 0 {
			continue
		}
		byDef[b.def] = append(byDef[b.def], i)
		if !b.output {
			byLast[b.last] = append(byLast[b.last], i)
		}
	}
	donatedAt := make([][]int, len(p.instrs)+1)
	for i, v := range p.g.In {
		if mask&(1<<i) == 0 || i >= 64 {
			continue
		}
		switch last := p.inLast[i]; {
		case last < 0:
			frees = append(frees, free{placeDonated - i, v.Aval.DType, v.Aval.Size()})
		case last < len(p.instrs):
			donatedAt[last] = append(donatedAt[last], i)
		}
	}
	take := func(dt backend.DType, n int, exact bool) int {
		best := -1
		for j, f := range frees {
			if f.dt != dt || f.n < n || (exact && (f.n != n || f.place >= 0)) {
				continue
			}
			if best < 0 || f.n < frees[best].n {
				best = j
			}
		}
		if best < 0 {
			return placeNone
		}
		pl := frees[best].place
		frees = append(frees[:best], frees[best+1:]...)
		return pl
	}
	for i := range p.instrs {
		// An elementwise kernel's or fused group's result may take the
		// memory of an operand it reads for the last time (in place).
		var early []inPlace
		taken := map[int]bool{}
		pairs := p.inPlaceGroup(i, mask)
		if out, srcs := p.inPlaceKernel(i, mask); len(srcs) > 0 {
			for _, src := range srcs {
				pairs = append(pairs, groupInPlace{out: out, src: src})
			}
		}
		for _, pr := range pairs {
			if taken[pr.out] {
				continue
			}
			w := placeDonated - pr.src.input
			if pr.src.buf >= 0 {
				w = pl.where[pr.src.buf]
			}
			if p.bufs[pr.out].output && w > placeDonated {
				continue // an output never lives in the arena
			}
			pl.where[pr.out], taken[pr.out] = w, true
			early = append(early, pr.src) // consumed: not freed below
		}
		for _, bi := range byDef[i] {
			if taken[bi] {
				continue
			}
			b := p.bufs[bi]
			if b.output {
				w := take(b.dtype, b.n, true)
				if w == placeNone {
					w = placeOutput
				}
				pl.where[bi] = w
				continue
			}
			w := take(b.dtype, b.n, false)
			if w == placeNone {
				w = len(pl.arena)
				pl.arena = append(pl.arena, scratchSpec{b.dtype, b.n})
			}
			pl.where[bi] = w
		}
		for _, bi := range byLast[i] {
			if slices.ContainsFunc(early, func(e inPlace) bool { return e.buf == bi }) {
				continue
			}
			b := p.bufs[bi]
			n := b.n
			if w := pl.where[bi]; w >= 0 {
				n = pl.arena[w].n
			} else if w <= placeDonated {
				n = p.g.In[placeDonated-w].Aval.Size()
			}
			frees = append(frees, free{pl.where[bi], b.dtype, n})
		}
		for _, in := range donatedAt[i] {
			if slices.ContainsFunc(early, func(e inPlace) bool { return e.buf < 0 && e.input == in }) {
				continue
			}
			v := p.g.In[in]
			frees = append(frees, free{placeDonated - in, v.Aval.DType, v.Aval.Size()})
		}
	}
	for i, w := range pl.where {
		if w != placeNone {
			pl.bound = append(pl.bound, i)
		}
	}
	for k, e := range p.tmpl {
		if e.scratch >= 0 {
			continue
		}
		sl := p.vals[e.slot]
		if sl.kind == rootInput || (sl.kind == rootBuf && pl.where[sl.root] < 0) {
			pl.patch = append(pl.patch, k)
		}
	}
	pl.pool.New = func() any { return p.newRunState(pl) }
	return pl
}

// inPlace is an operand an instruction's result may overwrite: buffer
// buf, or (buf < 0) donated graph input input.
type inPlace struct{ buf, input int }

// inPlaceKernel returns, for an elementwise kernel i, its result's
// buffer and the operands whose memory the result may take under
// donation mask: buffers or donated inputs that i reads for the last
// time, whole (contiguous from their start), of the result's dtype and
// size. Each result element is computed from the operands' elements at
// its own index, every chunk reading those before writing it; a view
// (an offset, a transposition) or a broadcast never qualifies, so no
// element is written before it is read.
func (p *Program) inPlaceKernel(i int, mask uint64) (int, []inPlace) {
	in := &p.instrs[i]
	if in.kind != opKernel || len(in.out) != 1 || (in.prim.Elementwise == nil && in.prim != prims.Where) {
		return 0, nil
	}
	out := p.vals[in.out[0]]
	if out.kind != rootBuf {
		return 0, nil
	}
	ob := p.bufs[out.root]
	if !p.wholeBuffer(in.out[0], ob.n) {
		return 0, nil
	}
	var res []inPlace
	for _, s := range in.in {
		sl := p.vals[s]
		if sl.dtype != ob.dtype || !p.wholeBuffer(s, ob.n) {
			continue
		}
		var e inPlace
		switch sl.kind {
		case rootBuf:
			b := p.bufs[sl.root]
			if b.output || b.scratch || b.last != i || b.n != ob.n {
				continue
			}
			e = inPlace{buf: sl.root, input: -1}
		case rootInput:
			if sl.root >= 64 || mask&(1<<sl.root) == 0 || p.inLast[sl.root] != i || p.g.In[sl.root].Aval.Size() != ob.n {
				continue
			}
			e = inPlace{buf: -1, input: sl.root}
		default:
			continue
		}
		if !slices.Contains(res, e) {
			res = append(res, e)
		}
	}
	return out.root, res
}

// wholeBuffer reports whether slot s covers n elements contiguously from
// its buffer's start.
func (p *Program) wholeBuffer(s, n int) bool {
	a := p.layout(s)
	return a.Offset == 0 && a.IsContiguous() && a.Size() == n
}

// groupInPlace pairs a fused group's result buffer out with the operand
// src whose memory it takes.
type groupInPlace struct {
	out int
	src inPlace
}

// inPlaceGroup returns the results of fused group i (not by rows) that
// may take an operand's memory under donation mask: a member's result
// may take a buffer or donated input that the group reads for the last
// time, whole and only so (no other view of it in the group), of the
// result's dtype and size, when no later member reads it. Blocks are
// run member by member, each reading its operands' block before writing
// its result's, so the block of the operand is dead once written.
func (p *Program) inPlaceGroup(i int, mask uint64) []groupInPlace {
	in := &p.instrs[i]
	if in.kind != opFused || in.group.rowMode || in.group.reductions > 0 {
		return nil
	}
	g := in.group
	type use struct {
		last  int  // the last member reading it
		whole bool // every read is the whole buffer
	}
	uses := map[inPlace]*use{}
	key := func(s int) (inPlace, bool) {
		switch sl := p.vals[s]; sl.kind {
		case rootBuf:
			return inPlace{buf: sl.root, input: -1}, true
		case rootInput:
			return inPlace{buf: -1, input: sl.root}, true
		}
		return inPlace{}, false
	}
	whole := p.wholeBuffer
	size := func(k inPlace) int {
		if k.buf >= 0 {
			return p.bufs[k.buf].n
		}
		return p.g.In[k.input].Aval.Size()
	}
	for j, m := range g.members {
		for _, r := range m.in {
			if r.scratch >= 0 {
				continue
			}
			k, ok := key(r.slot)
			if !ok {
				continue
			}
			u := uses[k]
			if u == nil {
				u = &use{whole: true}
				uses[k] = u
			}
			u.last = j
			u.whole = u.whole && r.bcast == bcastNone && whole(r.slot, size(k))
		}
	}
	var res []groupInPlace
	used := map[inPlace]bool{}
	for j, m := range g.members {
		if m.out.scratch >= 0 || p.vals[m.out.slot].kind != rootBuf {
			continue
		}
		ob := p.vals[m.out.slot].root
		b := p.bufs[ob]
		if b.def != i || b.scratch || !whole(m.out.slot, b.n) {
			continue
		}
		for _, r := range m.in {
			if r.scratch >= 0 {
				continue
			}
			k, ok := key(r.slot)
			if !ok || used[k] || uses[k].last != j || !uses[k].whole || size(k) != b.n || p.vals[r.slot].dtype != b.dtype {
				continue
			}
			if k.buf >= 0 {
				src := p.bufs[k.buf]
				if src.output || src.scratch || src.last != i || src.def == i {
					continue
				}
			} else if k.input >= 64 || mask&(1<<k.input) == 0 || p.inLast[k.input] != i {
				continue
			}
			used[k] = true
			res = append(res, groupInPlace{out: ob, src: k})
			break
		}
	}
	return res
}

// runState is what one run writes: the arena, the buffers of this run,
// the inputs' arrays, operand lists and per-worker block buffers.
type runState struct {
	// tmpl holds the operand arrays of kernel calls (Program.tmpl);
	// ready says whether the entries that do not change between runs
	// are filled.
	tmpl  []backend.Array
	ready bool

	arena []backend.Buffer
	phys  []backend.Buffer
	// physOff is where each buffer starts in phys (nonzero only for
	// results computed into a caller's memory: into, by RunInto).
	physOff []int
	// cached marks output buffers the backend's cache gave this run.
	cached []bool
	into   []backend.Array
	inArr  []backend.Array
	// inT holds the inputs read in place and not donated: an effect
	// that borrows its operands gets them as they are (fallback).
	inT     []*interp.Tensor
	in, out []backend.Array
	workers []*worker
}

// worker is one goroutine's block buffers and operand lists in a fused
// group.
type worker struct {
	scratch []backend.Buffer
	in, out []backend.Array
	// base holds the blocks of an equation run row by row.
	base []backend.Array
}

func (p *Program) newRunState(pl *plan) *runState {
	rs := &runState{
		arena:   make([]backend.Buffer, len(pl.arena)),
		phys:    make([]backend.Buffer, len(p.bufs)),
		physOff: make([]int, len(p.bufs)),
		cached:  make([]bool, len(p.bufs)),
		into:    make([]backend.Array, len(p.bufs)),
		inArr:   make([]backend.Array, len(p.g.In)),
		inT:     make([]*interp.Tensor, len(p.g.In)),
		in:      make([]backend.Array, p.maxIn),
		out:     make([]backend.Array, p.maxOut),
	}
	for i, a := range pl.arena {
		rs.arena[i] = p.be.Alloc(a.dtype, a.n)
	}
	rs.tmpl = make([]backend.Array, len(p.tmpl))
	p.addWorkers(rs, 1)
	return rs
}

// tmplEntry is one operand or result of a kernel call: a slot's array
// (block, when non-nil, is the one block of a fused group it is cut to)
// or, with scratch ≥ 0, a block buffer of the first worker.
type tmplEntry struct {
	slot, scratch int
	block         []int
}

// addTemplate appends the entries of one call and returns where they
// start.
func (p *Program) addTemplate(refs []ref, block []int) int {
	base := len(p.tmpl)
	for _, r := range refs {
		p.tmpl = append(p.tmpl, tmplEntry{slot: r.slot, scratch: r.scratch, block: block})
	}
	return base
}

// fillTemplates fills the run's templates: every entry on the run
// state's first run, the entries over per-run memory on later ones.
func (p *Program) fillTemplates(pl *plan, rs *runState) {
	if !rs.ready {
		for k := range p.tmpl {
			rs.tmpl[k] = p.tmplArray(rs, k)
		}
		rs.ready = true
		return
	}
	for _, k := range pl.patch {
		rs.tmpl[k] = p.tmplArray(rs, k)
	}
}

func (p *Program) tmplArray(rs *runState, k int) backend.Array {
	e := &p.tmpl[k]
	switch {
	case e.scratch >= 0:
		return backend.Array{Buf: rs.workers[0].scratch[e.scratch], Shape: e.block}
	case e.block != nil:
		return cutBlock(p.array(rs, e.slot), 0, e.block)
	}
	return p.array(rs, e.slot)
}

// poison, set by tests, fills every buffer a run writes with garbage
// before the run, so a kernel that leaves an element unwritten is seen.
var poison atomic.Pointer[func(backend.Backend, backend.Buffer)]

// bindBuffers points every planned buffer at its memory for this run:
// arena buffers, donated inputs, and fresh output buffers.
func (p *Program) bindBuffers(pl *plan, rs *runState) {
	for _, i := range pl.bound {
		switch w := pl.where[i]; {
		case w >= 0:
			rs.phys[i] = rs.arena[w]
		case w == placeOutput && rs.into[i].Buf != nil:
			rs.phys[i], rs.physOff[i] = rs.into[i].Buf, rs.into[i].Offset
		case w == placeOutput && p.bufs[i].own:
			b := p.bufs[i]
			rs.phys[i], rs.cached[i] = interp.AllocResult(p.be, b.dtype, b.n)
		case w == placeOutput:
			b := p.bufs[i]
			rs.phys[i] = p.be.Alloc(b.dtype, b.n)
		case w <= placeDonated && w != placeNone:
			rs.phys[i] = rs.inArr[placeDonated-w].Buf
		}
	}
	p.fillTemplates(pl, rs)
	if f := poison.Load(); f != nil {
		for i, b := range rs.phys {
			if b != nil && pl.where[i] > placeDonated && rs.into[i].Buf == nil {
				(*f)(p.be, b)
			}
		}
		for _, w := range rs.workers {
			for _, b := range w.scratch {
				(*f)(p.be, b)
			}
		}
	}
}

// clear drops the run's references to memory it does not own (inputs,
// outputs), so a pooled run state keeps only its arena alive.
func (rs *runState) clear(p *Program, pl *plan) {
	for _, k := range pl.patch {
		rs.tmpl[k] = backend.Array{}
	}
	for _, i := range pl.bound {
		rs.phys[i], rs.physOff[i], rs.into[i], rs.cached[i] = nil, 0, backend.Array{}, false
	}
	for i := range rs.inArr {
		rs.inArr[i] = backend.Array{}
	}
	clear(rs.inT)
	clear(rs.in)
	clear(rs.out)
	for _, w := range rs.workers {
		clear(w.in)
		clear(w.out)
		clear(w.base)
	}
}
