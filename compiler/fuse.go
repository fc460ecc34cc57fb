package compiler

import (
	"github.com/peel-ml/peel/backend"
	pool "github.com/peel-ml/peel/internal/workers"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// A fused group is a run of elementwise equations over one shape (the
// blocked evaluation of autodiff's compiled rules, generalized to groups
// inside any graph). It runs block by block: every equation's kernel is applied to
// a block of FuseBlock elements before the next block is read;
// results used only inside the group live in per-worker block buffers
// and are never materialized; blocks are spread over the backend's
// threads (arrays below FuseMin stay on the calling goroutine).
// Each element is computed by the same kernels in the same order as by
// equation-by-equation evaluation, so results are bit for bit equal.
//
// A group whose rows (the last axis) fit in a block can also run row by
// row ("row mode", whole rows per block): it may hold reductions over the
// last axis (reduce_sum, reduce_max: the kernel applied to the block's
// rows, so every row is folded in the order of the whole-array kernel),
// elementwise equations over one value per row (a mean's division, a
// variance's epsilon and rsqrt), and operands broadcast along the last
// axis (a per-row value such as the row max or sum, expanded into a block
// buffer per block) or along the leading axes (a vector of the last axis
// such as a bias or a layer norm's scale, expanded into a block buffer
// once per worker), so softmax and layer norm are one group: later
// equations read the rows' reductions in the same block.
//
// Operands from outside the group must be contiguous, broadcast scalars
// or (in row mode) such broadcasts; others are copied to a contiguous
// buffer before the group. The group is emitted when an equation outside
// it needs one of its results (or at the end), so independent equations
// met in between run before it.
type group struct {
	shape []int
	n     int
	// k is the length of a row (the last dimension; 0 for a scalar
	// shape) and rows their number.
	k, rows int
	// rowMode: blocks are whole rows (set by a row member, a reduction
	// or a broadcast operand).
	rowMode bool
	// defines holds the buffers of the group's results; rowBufs those
	// holding one value per row.
	defines map[int]bool
	rowBufs map[int]bool
	members []member
	// external holds the operand slots from outside the group.
	external []int
	// reductions counts the reduce members.
	reductions int

	// Set by planGroup: the block size and the shapes of a full and of
	// the last block; in row mode the rows per block and the shapes of
	// a block's rows ([rows]) and of the block as rows × k.
	block          int
	full, tail     []int
	blockRows      int
	fullRows       []int
	tailRows       []int
	full2, tail2   []int
	colStr, vecStr []int
	rowShape       []int
	vecs           []ref
}

type memberKind uint8

const (
	memElem   memberKind = iota // elementwise over the group's shape
	memRow                      // elementwise over one value per row
	memReduce                   // a reduction over the last axis
)

type bcastKind uint8

const (
	bcastNone bcastKind = iota
	// bcastCol: a value per row repeated along the last axis (strides
	// […, 1, 0]).
	bcastCol
	// bcastVec: a vector of the last axis repeated along the leading
	// axes (strides [0, …, 0, 1]).
	bcastVec
)

// member is one equation of a group.
type member struct {
	kind   memberKind
	prim   *interp.Prim
	params any
	site   *interp.Site // the equation's, for DOT
	// block is the parameters applied to a block (a reduction's axes
	// over rows × k); params otherwise.
	block any
	in    []ref
	out   ref
	// ins are the operand slots as the equation reads them (a kernel
	// emitted alone uses them); src the slots the group reads (a
	// broadcast's per-row value or vector) and bc how.
	ins     []int
	src     []int
	bc      []bcastKind
	outSlot int
	// perRow: the equation is applied row by row, its per-row
	// broadcast operands read in place as broadcast scalars.
	perRow bool
	// base is where the operands start in the run state's templates,
	// for a group of one block.
	base int
	// direct is the member's kernel resolved for its template operands
	// (a group of one block; nil: none, use Exec). See resolveDirect.
	direct backend.Direct
}

// minPerRow is the shortest row for which an equation with a per-row
// broadcast operand reads it in place, one element per row (perRow),
// rather than after it is expanded into a block buffer: the CPU
// backend's binary kernels read such an operand in place from rows of 16
// on (minRowSplat in backend/cpu), and materialize it below.
const minPerRow = 16

// perRowPrim reports whether p's result is the same whether an operand
// is a broadcast scalar or a contiguous array of that value (the CPU
// backend's tensor-scalar loops of these primitives compute exactly what
// its tensor-tensor loops do), so an equation reading a per-row value
// may run row by row, the value read as a broadcast scalar, and stay bit
// for bit equal to evaluation, which materializes the broadcast.
func perRowPrim(p *interp.Prim) bool {
	switch p {
	case prims.Add, prims.Sub, prims.Mul, prims.Div, prims.Max, prims.Min:
		return true
	}
	return false
}

// ref is a group operand or result: a block buffer (scratch ≥ 0) or a
// block cut from a whole-array slot; bcast says it is read broadcast to
// the group's shape (through the block buffer exp when expanded).
type ref struct {
	slot    int
	scratch int
	bcast   bcastKind
	exp     int
}

// rowShapeOK reports whether a group of shape can run whole rows per
// block.
func rowShapeOK(shape []int) bool {
	r := len(shape)
	return r > 0 && shape[r-1] > 0 && shape[r-1] <= FuseBlock
}

// colBroadcast reports whether layout a is one value per row repeated
// along the last axis, the rows laid out contiguously.
func colBroadcast(a backend.Array) bool {
	r := len(a.Shape)
	if r == 0 || a.Strides == nil || a.Shape[r-1] <= 1 || a.Strides[r-1] != 0 {
		return false
	}
	want := 1
	for j := r - 2; j >= 0; j-- {
		if a.Shape[j] != 1 && a.Strides[j] != want {
			return false
		}
		want *= a.Shape[j]
	}
	return true
}

// vecBroadcast reports whether layout a is a contiguous vector of the
// last axis repeated along the leading axes.
func vecBroadcast(a backend.Array) bool {
	r := len(a.Shape)
	if r == 0 || a.Strides == nil || a.Shape[r-1] <= 1 || a.Strides[r-1] != 1 {
		return false
	}
	for j := 0; j < r-1; j++ {
		if a.Shape[j] != 1 && a.Strides[j] != 0 {
			return false
		}
	}
	return true
}

// newGroup returns an empty group over shape.
func newGroup(shape []int) *group {
	g := &group{shape: shape, n: backend.ShapeSize(shape), defines: map[int]bool{}, rowBufs: map[int]bool{}}
	if r := len(shape); r > 0 {
		g.k = shape[r-1]
		if g.k > 0 {
			g.rows = g.n / g.k
		}
	}
	return g
}

// groupValue returns the slot of the value of the open group that s
// reads whole (s itself, or a contiguous view of the whole buffer), or
// -1.
func (b *builder) groupValue(s int) int {
	if !b.inOpen(s) {
		return -1
	}
	p := b.p
	bf := &p.bufs[p.vals[s].root]
	if bf.val == s {
		return s
	}
	a := p.layout(s)
	if a.IsContiguous() && a.Offset == 0 && a.Size() == bf.n {
		return bf.val
	}
	return -1
}

// rowBroadcast returns the slot of the open group's per-row value that s
// reads broadcast along the last axis, or -1.
func (b *builder) rowBroadcast(s int) int {
	g := b.open
	if !b.inOpen(s) || !rowShapeOK(g.shape) {
		return -1
	}
	p := b.p
	sl := p.vals[s]
	a := p.layout(s)
	if !g.rowBufs[sl.root] || !interp.ShapeEqual(sl.shape, g.shape) || a.Offset != 0 || !colBroadcast(a) {
		return -1
	}
	return p.bufs[sl.root].val
}

// external classifies slot s from outside the group, read by an
// equation of the group's shape: the slot the group reads and how, with
// ok false when s must first be copied.
func (b *builder) external(s int, shape []int) (src int, bc bcastKind, ok bool) {
	p := b.p
	a := p.layout(s)
	if a.IsContiguous() || a.IsSplat() {
		return s, bcastNone, true
	}
	if !rowShapeOK(shape) {
		return -1, bcastNone, false
	}
	sl := p.vals[s]
	r := len(shape)
	switch {
	case colBroadcast(a):
		rows := backend.ShapeSize(shape[:r-1])
		return p.newSlot(slot{kind: sl.kind, root: sl.root, shape: []int{rows}, offset: sl.offset, dtype: sl.dtype}), bcastCol, true
	case vecBroadcast(a):
		return p.newSlot(slot{kind: sl.kind, root: sl.root, shape: []int{shape[r-1]}, offset: sl.offset, dtype: sl.dtype}), bcastVec, true
	}
	return -1, bcastNone, false
}

// fuse adds elementwise equation e to the open group (as an equation
// over its rows' values when e is one), first closing a group of
// another shape, or one whose results e reads through a view the group
// cannot read. It reports false, doing nothing, when e reads an operand
// repeated along leading dimensions that a block cannot read: e then
// runs alone (its kernel reads that in place).
func (b *builder) fuse(e *interp.Eqn) bool {
	if b.rowMember(e) {
		return true
	}
	p := b.p
	shape := e.Out[0].Aval.Shape
	if b.open != nil && !interp.ShapeEqual(b.open.shape, shape) {
		b.close()
	}
	for _, v := range e.In {
		s := b.vals[v]
		if b.inOpen(s) && b.groupValue(s) < 0 && b.rowBroadcast(s) < 0 {
			b.close()
			break
		}
	}
	if b.repeatOperand(e) {
		for _, v := range e.In {
			s := b.vals[v]
			if b.inOpen(s) {
				continue
			}
			if a := p.layout(s); !a.IsContiguous() && !a.IsSplat() && isRepeat(a) {
				if _, bc, ok := b.external(s, shape); !ok || bc != bcastVec {
					return false
				}
			}
		}
	}
	ins := make([]int, len(e.In))
	src := make([]int, len(e.In))
	bc := make([]bcastKind, len(e.In))
	for i, v := range e.In {
		s := b.vals[v]
		ins[i] = s
		switch {
		case b.groupValue(s) >= 0:
			src[i] = b.groupValue(s)
		case b.rowBroadcast(s) >= 0:
			src[i], bc[i] = b.rowBroadcast(s), bcastCol
		default:
			x, k, ok := b.external(s, shape)
			if !ok {
				s = b.materialize(s, true, false)
				ins[i], x, k = s, s, bcastNone
			}
			src[i], bc[i] = x, k
		}
	}
	if b.open == nil {
		b.open = newGroup(shape)
	}
	g := b.open
	for i := range src {
		if bc[i] != bcastNone {
			g.rowMode = true
		}
	}
	out := b.newBuf(e.Out[0].Aval)
	b.vals[e.Out[0]] = out
	g.defines[p.vals[out].root] = true
	b.addExternal(src)
	g.members = append(g.members, member{kind: memElem, prim: e.Prim, params: e.Params, site: e.Site, block: e.Params, ins: ins, src: src, bc: bc, outSlot: out})
	return true
}

// addExternal records the slots of src from outside the open group.
func (b *builder) addExternal(src []int) {
	g := b.open
	for _, s := range src {
		if !b.inOpen(s) && !contains(g.external, s) {
			g.external = append(g.external, s)
		}
	}
}

// rowValue returns the slot of the open group's per-row value s reads
// whole, or -1.
func (b *builder) rowValue(s int) int {
	v := b.groupValue(s)
	if v < 0 || b.p.bufs[b.p.vals[v].root].n != b.open.rows {
		return -1
	}
	return v
}

// rowMember adds e, an elementwise equation over one value per row of
// the open group that reads at least one of the group's per-row values,
// to the group; it reports false (doing nothing) when e is no such
// equation.
func (b *builder) rowMember(e *interp.Eqn) bool {
	g := b.open
	shape := e.Out[0].Aval.Shape
	if g == nil || !rowShapeOK(g.shape) || interp.ShapeEqual(shape, g.shape) || backend.ShapeSize(shape) != g.rows {
		return false
	}
	p := b.p
	src := make([]int, len(e.In))
	ins := make([]int, len(e.In))
	has := false
	for i, v := range e.In {
		s := b.vals[v]
		ins[i], src[i] = s, s
		if b.inOpen(s) {
			if src[i] = b.rowValue(s); src[i] < 0 {
				return false
			}
			has = true
			continue
		}
		if a := p.layout(s); !a.IsContiguous() && !a.IsSplat() {
			return false
		}
	}
	if !has {
		return false
	}
	g.rowMode = true
	out := b.newBuf(e.Out[0].Aval)
	b.vals[e.Out[0]] = out
	g.defines[p.vals[out].root] = true
	g.rowBufs[p.vals[out].root] = true
	b.addExternal(src)
	g.members = append(g.members, member{kind: memRow, prim: e.Prim, params: e.Params, site: e.Site, block: e.Params, ins: ins, src: src, bc: make([]bcastKind, len(src)), outSlot: out})
	return true
}

// rowReduce adds e, a reduce_sum or reduce_max over the last axis whose
// rows fit in a block, to the open group (opening one over its operand's
// shape, first closing a group of another shape); later equations of the
// group may read its per-row result. It reports false (doing nothing)
// when e is no such reduction.
func (b *builder) rowReduce(e *interp.Eqn) bool {
	if (e.Prim != prims.ReduceSum && e.Prim != prims.ReduceMax) || len(e.In) != 1 || len(e.Out) != 1 || !b.direct(e) {
		return false
	}
	rp, ok := e.Params.(prims.ReduceParams)
	shape := e.In[0].Aval.Shape
	r := len(shape)
	if !ok || !rowShapeOK(shape) || len(rp.Axes) != 1 || rp.Axes[0] != r-1 {
		return false
	}
	p := b.p
	s := b.vals[e.In[0]]
	if b.open != nil && (!interp.ShapeEqual(b.open.shape, shape) || (b.inOpen(s) && b.groupValue(s) < 0)) {
		b.close()
	}
	src := b.groupValue(s)
	if src < 0 {
		s = b.materialize(s, false, false)
		src = s
	}
	if b.open == nil {
		b.open = newGroup(shape)
	}
	g := b.open
	g.rowMode = true
	g.reductions++
	out := b.newBuf(e.Out[0].Aval)
	b.vals[e.Out[0]] = out
	g.defines[p.vals[out].root] = true
	g.rowBufs[p.vals[out].root] = true
	b.addExternal([]int{src})
	g.members = append(g.members, member{kind: memReduce, prim: e.Prim, params: e.Params, site: e.Site, block: prims.ReduceParams{Axes: []int{1}}, ins: []int{s}, src: []int{src}, bc: []bcastKind{bcastNone}, outSlot: out})
	return true
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
// equation (its broadcast operands read as the kernel alone would read
// them), else a fused instruction.
func (b *builder) close() {
	g := b.open
	if g == nil {
		return
	}
	b.open = nil
	if len(g.members) == 1 {
		m := g.members[0]
		in := m.ins
		if m.kind != memReduce {
			binary := m.prim.Elementwise != nil && m.prim.Elementwise.Arity == 2
			for i := range in {
				in[i] = b.materialize(in[i], true, binary)
			}
		}
		b.emit(instr{kind: opKernel, prim: m.prim, params: m.params, site: m.site, in: in, out: []int{m.outSlot}})
		return
	}
	out := make([]int, len(g.members))
	for i, m := range g.members {
		out[i] = m.outSlot
	}
	b.emit(instr{kind: opFused, in: g.external, out: out, group: g})
}

// planGroup decides which results of a fused group are materialized
// (read after the group or returned) and gives the others block buffers,
// reused within the group once dead.
func (p *Program) planGroup(in *instr) {
	g := in.group
	g.block = min(FuseBlock, g.n)
	g.full = []int{g.block}
	g.tail = []int{g.block}
	if g.block > 0 && g.n%g.block != 0 {
		g.tail = []int{g.n % g.block}
	}
	if g.rowMode {
		// Whole rows per block.
		rb := min(FuseBlock/g.k, g.rows)
		g.blockRows, g.block = rb, rb*g.k
		tr := rb
		if rb > 0 && g.rows%rb != 0 {
			tr = g.rows % rb
		}
		g.full, g.tail = []int{rb * g.k}, []int{tr * g.k}
		g.fullRows, g.tailRows = []int{rb}, []int{tr}
		g.full2, g.tail2 = []int{rb, g.k}, []int{tr, g.k}
		g.colStr, g.vecStr = []int{1, 0}, []int{0, 1}
		g.rowShape = []int{g.k}
	}
	// last[i]: the last member reading member i's result.
	idx := map[int]int{}
	for i, m := range g.members {
		idx[m.outSlot] = i
	}
	last := make([]int, len(g.members))
	for i, m := range g.members {
		last[i] = i
		for _, s := range m.src {
			if j, ok := idx[s]; ok {
				last[j] = max(last[j], i)
			}
		}
	}
	// Local block buffers per dtype: free lists of global scratch
	// indices.
	used := map[backend.DType]int{}
	freeBy := map[backend.DType][]int{}
	slotOf := func(dt backend.DType, n int) int {
		if f := freeBy[dt]; len(f) > 0 {
			j := f[len(f)-1]
			freeBy[dt] = f[:len(f)-1]
			p.scratch[j].n = max(p.scratch[j].n, n)
			return j
		}
		k := used[dt]
		used[dt]++
		// The k-th block buffer of dtype dt, shared by every group.
		for j, sc := range p.scratch {
			if sc.dtype != dt {
				continue
			}
			if k == 0 {
				p.scratch[j].n = max(sc.n, n)
				return j
			}
			k--
		}
		p.scratch = append(p.scratch, scratchSpec{dtype: dt, n: n})
		return len(p.scratch) - 1
	}
	// Vectors broadcast along the leading axes are expanded once per
	// worker into block buffers that live through the group.
	vecExp := map[int]int{}
	for _, m := range g.members {
		for k, s := range m.src {
			if m.bc[k] == bcastVec {
				if _, ok := vecExp[s]; !ok {
					vecExp[s] = slotOf(p.vals[s].dtype, g.block)
					g.vecs = append(g.vecs, ref{slot: s, scratch: -1, exp: vecExp[s]})
				}
			}
		}
	}
	for i := range g.members {
		m := &g.members[i]
		m.in = make([]ref, len(m.src))
		m.perRow = m.kind == memElem && perRowPrim(m.prim) && g.k >= minPerRow && g.rows > 1 && hasCol(m.bc)
		var tmp []int
		for k, s := range m.src {
			m.in[k] = ref{slot: s, scratch: -1, exp: -1}
			if j, ok := idx[s]; ok {
				m.in[k] = g.members[j].out
				m.in[k].exp = -1
			}
			m.in[k].bcast = m.bc[k]
			switch m.bc[k] {
			case bcastVec:
				m.in[k].exp = vecExp[s]
			case bcastCol:
				if g.rows > 1 && g.k > 1 && !m.perRow {
					m.in[k].exp = slotOf(p.vals[s].dtype, g.block)
					tmp = append(tmp, m.in[k].exp)
				}
			}
		}
		bi := p.vals[m.outSlot].root
		bf := &p.bufs[bi]
		row := m.kind != memElem
		n := g.block
		if row {
			n = g.blockRows
		}
		if bf.output || bf.last > bf.def {
			m.out = ref{slot: m.outSlot, scratch: -1, exp: -1}
		} else {
			bf.scratch = true
			m.out = ref{slot: m.outSlot, scratch: slotOf(bf.dtype, n), exp: -1}
		}
		// Free the block buffers of results read for the last time
		// here (after the result took its own), and of broadcasts
		// expanded for this equation.
		for k, s := range m.src {
			if j, ok := idx[s]; ok && last[j] == i && g.members[j].out.scratch >= 0 && !dupBefore(m.src, k) {
				dt := p.bufs[p.vals[s].root].dtype
				freeBy[dt] = append(freeBy[dt], g.members[j].out.scratch)
			}
		}
		for _, t := range tmp {
			dt := p.scratch[t].dtype
			freeBy[dt] = append(freeBy[dt], t)
		}
		if m.out.scratch >= 0 && last[i] == i {
			freeBy[bf.dtype] = append(freeBy[bf.dtype], m.out.scratch)
		}
	}
}

// hasCol reports whether bc holds a per-row broadcast.
func hasCol(bc []bcastKind) bool {
	for _, k := range bc {
		if k == bcastCol {
			return true
		}
	}
	return false
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
	if g.n >= FuseMin {
		workers = min(backendThreads(p.be), blocks)
	}
	if g.n <= g.block && !g.rowMode {
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
		w := &worker{in: make([]backend.Array, 3), base: make([]backend.Array, 3), out: make([]backend.Array, 1)}
		for _, sc := range p.scratch {
			w.scratch = append(w.scratch, p.be.Alloc(sc.dtype, sc.n))
		}
		rs.workers = append(rs.workers, w)
	}
}

// parallelBlocks spreads the blocks of g over workers parts run on the
// shared worker pool (the caller runs parts too); the pool re-panics the
// first failure once all parts are done. It is apart from runGroup so
// the one-worker path allocates nothing.
func (p *Program) parallelBlocks(rs *runState, g *group, blocks, workers int) {
	pool.Run(workers, func(k int) { p.blocks(rs, rs.workers[k], g, k, blocks, workers) })
}

// blocks runs blocks first, first+step, … of group g on worker w.
func (p *Program) blocks(rs *runState, w *worker, g *group, first, blocks, step int) {
	if g.rowMode {
		p.rowBlocks(rs, w, g, first, blocks, step)
		return
	}
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
	}
}

// rowBlocks is blocks for a group run by rows: per-row values are cut by
// rows, reductions see their block as rows × k, and broadcast operands
// are read per block.
func (p *Program) rowBlocks(rs *runState, w *worker, g *group, first, blocks, step int) {
	if first >= blocks {
		return
	}
	for _, v := range g.vecs {
		// The vector repeated over a full block's rows (a tail block
		// reads a prefix).
		a := p.array(rs, v.slot)
		p.be.Copy(backend.Array{Buf: w.scratch[v.exp], Shape: g.full2}, backend.Array{Buf: a.Buf, Shape: g.full2, Strides: g.vecStr, Offset: a.Offset})
	}
	for bl := first; bl < blocks; bl += step {
		lo := bl * g.block
		shape, rows, shape2 := g.full, g.fullRows, g.full2
		if lo+g.block > g.n {
			shape, rows, shape2 = g.tail, g.tailRows, g.tail2
		}
		rlo := lo / g.k
		for i := range g.members {
			m := &g.members[i]
			ins := w.in[:len(m.in)]
			switch m.kind {
			case memElem:
				if m.perRow {
					p.perRow(rs, w, g, m, lo, rlo, shape2)
					continue
				}
				for k, r := range m.in {
					if r.bcast == bcastNone {
						ins[k] = p.blockArray(rs, w, r, lo, shape)
					} else {
						ins[k] = p.broadcast(rs, w, g, r, rlo, shape, rows, shape2)
					}
				}
				w.out[0] = p.blockArray(rs, w, m.out, lo, shape)
			case memRow:
				for k, r := range m.in {
					ins[k] = p.blockArray(rs, w, r, rlo, rows)
				}
				w.out[0] = p.blockArray(rs, w, m.out, rlo, rows)
			case memReduce:
				a := p.blockArray(rs, w, m.in[0], lo, shape)
				ins[0] = backend.Array{Buf: a.Buf, Shape: shape2, Offset: a.Offset}
				w.out[0] = p.blockArray(rs, w, m.out, rlo, rows)
			}
			p.be.Exec(m.prim.Op, m.block, ins, w.out)
		}
	}
}

// perRow applies elementwise member m to the block at element lo (row
// rlo, shape2 its rows × k) in one kernel call, its per-row broadcast
// operands passed in place as one element per row (strides [1, 0]),
// which the CPU backend's binary kernels read with a tensor-scalar loop
// per row (rowSplat in backend/cpu): the same loops, so the same bits,
// as one call per row with the value as a broadcast scalar, without the
// per-call cost.
func (p *Program) perRow(rs *runState, w *worker, g *group, m *member, lo, rlo int, shape2 []int) {
	ins := w.in[:len(m.in)]
	for k, r := range m.in {
		switch r.bcast {
		case bcastCol:
			a := p.blockArray(rs, w, r, rlo, g.fullRows)
			ins[k] = backend.Array{Buf: a.Buf, Shape: shape2, Strides: rowStride, Offset: a.Offset}
		case bcastVec:
			// The vector repeated over a full block's rows.
			ins[k] = backend.Array{Buf: w.scratch[r.exp], Shape: shape2}
		default:
			a := p.blockArray(rs, w, r, lo, g.full)
			if a.Strides != nil { // a broadcast scalar
				ins[k] = backend.Array{Buf: a.Buf, Shape: shape2, Strides: splatStride2, Offset: a.Offset}
			} else {
				ins[k] = backend.Array{Buf: a.Buf, Shape: shape2, Offset: a.Offset}
			}
		}
	}
	out := p.blockArray(rs, w, m.out, lo, g.full)
	w.out[0] = backend.Array{Buf: out.Buf, Shape: shape2, Offset: out.Offset}
	p.be.Exec(m.prim.Op, m.block, ins, w.out)
}

// rowStride and splatStride2 are the strides of rows × k arrays of one
// element per row and of one element in all.
var rowStride, splatStride2 = []int{1, 0}, []int{0, 0}

// broadcast returns the block at row rlo of an elementwise equation's
// broadcast operand r: a vector's expansion, or a per-row value read in
// place as a broadcast scalar when the group has one row (evaluation
// reads the whole broadcast so too), else expanded into r's block
// buffer.
func (p *Program) broadcast(rs *runState, w *worker, g *group, r ref, rlo int, shape, rows, shape2 []int) backend.Array {
	if r.bcast == bcastVec {
		return backend.Array{Buf: w.scratch[r.exp], Shape: shape}
	}
	a := p.blockArray(rs, w, r, rlo, rows)
	if g.rows == 1 || a.Strides != nil {
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: zeroStride, Offset: a.Offset}
	}
	e := backend.Array{Buf: w.scratch[r.exp], Shape: shape2}
	p.be.Copy(e, backend.Array{Buf: a.Buf, Shape: shape2, Strides: g.colStr, Offset: a.Offset})
	return backend.Array{Buf: e.Buf, Shape: shape}
}

var zeroStride = []int{0}

// blockArray returns the block of ref r at element (or, for a per-row
// value, row) lo.
func (p *Program) blockArray(rs *runState, w *worker, r ref, lo int, shape []int) backend.Array {
	if r.scratch >= 0 {
		return backend.Array{Buf: w.scratch[r.scratch], Shape: shape}
	}
	return cutBlock(p.array(rs, r.slot), lo, shape)
}
