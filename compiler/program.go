package compiler

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Error is the error type of package compiler (peel's *Error): misuse of a
// Program panics with it.
type Error = interp.Error

// Program is an executable form of a graph: a flat list of instructions,
// each resolved when the program is built (the backend kernel, its
// parameters, the slots of its operands and results), and a memory plan
// that places every intermediate in a per-run arena.
//
// Values live in slots. A slot is a static layout (shape, strides, an
// offset) over a root: a graph input, a constant, or a planned buffer.
// View primitives (reshape, transpose, slice, broadcast_in_dim) are no
// instructions: their results are slots over their operand's root, laid
// out as eval would lay them out (interp.ViewArray). A view with no
// strided layout is a copy instruction followed by the view.
//
// Instructions are of four kinds: a kernel (backend.Exec on the slots'
// arrays, or the direct kernel a backend.KernelResolver returned for
// their layouts at Build), a copy (backend.Copy, materializing a strided
// operand into a contiguous buffer), a fused group of elementwise
// equations run block by block (see fuse.go), and a fallback that
// evaluates one equation with interp.Eval (composites without a kernel,
// mutation primitives answered out of place, primitives that refuse
// evaluation).
//
// Kernels write into planned buffers that are not zeroed (the
// backend.Exec contract: every result element is written). backend.Exec
// "may overwrite the elements of in": the CPU backend replaces entries of
// the operand slice with contiguous copies of operands its kernel cannot
// read strided, and no CPU kernel writes operand memory; so operand
// slices are rebuilt for every call (from per-run templates), and
// operand memory is never assumed clobbered. Strided operands are copied
// by a copy instruction into a planned buffer instead (except broadcast
// scalars and row broadcasts that elementwise kernels read in place), so
// kernels do not allocate copies at run time.
//
// A Program is safe for concurrent use: each Run takes a run state (the
// arena, per-worker block buffers) from a sync.Pool, so runs share
// nothing they write and take no lock.
type Program struct {
	g  *interp.Graph
	be backend.Backend

	// consts are the graph's constants, snapshots the program holds.
	consts    []*interp.Tensor
	constArrs []backend.Array

	vals   []slot
	bufs   []bufInfo
	instrs []instr
	// outs says how each graph output is returned; ownOutput[i], that
	// result i is a whole buffer of its own (RunInto computes it into
	// the caller's memory).
	outs      []outSpec
	ownOutput []bool
	// inLast is the last instruction reading each input (-1: none;
	// len(instrs): an output).
	inLast []int
	// maxIn and maxOut bound the operands of one instruction.
	maxIn, maxOut int
	// scratch is the per-worker block buffers of fused groups: one
	// dtype and capacity per scratch slot.
	scratch []scratchSpec

	// tmpl describes the operand arrays of kernel calls (kernel
	// instructions, and equations of fused groups of one block) that a
	// run state keeps between runs: see template.
	tmpl []tmplEntry

	base  *plan
	plans sync.Map // donation mask (uint64) → *plan

	// splatIn marks the inputs (of the first 64) this program reads as
	// broadcast scalars (every stride zero) in place; splats holds the
	// variants of a program for such inputs, by mask (uint64 →
	// *Program), at most maxSplatVariants of them.
	splatIn uint64
	splats  sync.Map
	nSplats atomic.Int32
}

// maxSplatVariants bounds the variants of one program for broadcast
// inputs; past it such inputs are copied into contiguous memory.
const maxSplatVariants = 8

type rootKind uint8

const (
	rootInput rootKind = iota
	rootConst
	rootBuf
)

// slot is a value's layout over its root. offset is relative to the
// root's own offset (an input's array offset at run time; 0 for
// buffers).
type slot struct {
	kind    rootKind
	root    int
	shape   []int
	strides []int
	offset  int
	dtype   backend.DType
}

// bufInfo is one planned buffer (a materialized value).
type bufInfo struct {
	dtype backend.DType
	n     int
	// def is the defining instruction, last the last one reading the
	// buffer (len(instrs) for outputs).
	def, last int
	output    bool
	// scratch: a fused group's intermediate that lives only in block
	// buffers (no buffer is planned).
	scratch bool
	// val is the slot of the buffer's own (contiguous) value.
	val int
	// own: the buffer is one result's whole memory (ownOutput), so a
	// run takes it from the backend's cache (interp.AllocResult) and
	// the result gives it back when unreachable (interp.NewResult).
	own bool
}

type opKind uint8

const (
	opKernel opKind = iota
	opCopy
	opFused
	opFallback
)

// instr is one instruction: operands and results are slot numbers.
type instr struct {
	kind   opKind
	prim   *interp.Prim
	params any
	site   *interp.Site // the equation's, for DOT
	in     []int
	out    []int
	group  *group
	// base is where a kernel's operands start in the run state's
	// templates (operands, then results).
	base int
	// direct is the kernel resolved for its template operands (nil:
	// none, use Exec). See resolveDirect.
	direct backend.Direct
}

type outKind uint8

const (
	outBuffer outKind = iota // a slot over a buffer planned as an output
	outInput                 // a graph input: returned as a snapshot
	outConst                 // a constant: returned as a snapshot
)

type outSpec struct {
	kind outKind
	idx  int // input or constant index, or the slot
}

type scratchSpec struct {
	dtype backend.DType
	n     int
}

// ProgramStats describes a Program: its instructions and its memory plan
// (without donation).
type ProgramStats struct {
	// Instructions is the length of the instruction list; Kernels,
	// Copies, Fused and Fallbacks count its kinds.
	Instructions, Kernels, Copies, Fused, Fallbacks int
	// FusedSizes is the number of equations of each fused group, in
	// order (reductions included); Reductions counts the groups with
	// a reduction over rows.
	FusedSizes []int
	Reductions int
	// Buffers is the number of materialized intermediates; ArenaBuffers
	// the arena buffers they are placed in.
	Buffers, ArenaBuffers int
	// ArenaBytes is the size of one run's arena; ReusedBytes the bytes
	// of intermediates placed in a buffer an earlier, dead intermediate
	// used (so the arena is that much smaller than one buffer each).
	ArenaBytes, ReusedBytes int
	// ScratchBytes is the block memory of fused groups per worker.
	ScratchBytes int
	// OutputBytes is what each run allocates for its results.
	OutputBytes int
}

// Graph returns the graph the program was built from.
func (p *Program) Graph() *interp.Graph { return p.g }

// Backend returns the backend the program runs on: its inputs must live
// there.
func (p *Program) Backend() backend.Backend { return p.be }

// Stats returns the program's statistics.
func (p *Program) Stats() ProgramStats {
	var s ProgramStats
	s.Instructions = len(p.instrs)
	for _, in := range p.instrs {
		switch in.kind {
		case opKernel:
			s.Kernels++
		case opCopy:
			s.Copies++
		case opFused:
			s.Fused++
			if in.group.reductions > 0 {
				s.Reductions++
			}
			s.FusedSizes = append(s.FusedSizes, len(in.group.members))
		case opFallback:
			s.Fallbacks++
		}
	}
	logical := 0
	for _, b := range p.bufs {
		switch {
		case b.scratch:
		case b.output:
			s.OutputBytes += b.n * b.dtype.Size()
		default:
			s.Buffers++
			logical += b.n * b.dtype.Size()
		}
	}
	s.ArenaBuffers = len(p.base.arena)
	for _, a := range p.base.arena {
		s.ArenaBytes += a.n * a.dtype.Size()
	}
	s.ReusedBytes = logical - s.ArenaBytes
	for _, sc := range p.scratch {
		s.ScratchBytes += sc.n * sc.dtype.Size()
	}
	return s
}

// Run evaluates the program on args, concrete tensors of the graph's
// input types, and returns the graph's outputs: tensors the caller owns.
// An output that is an input or a constant comes back as a snapshot of it
// (a write into the result does not change the input or the constant);
// every other output is in memory no other run uses. Run never writes its
// inputs, except the memory of an input it was given: donate[i] true says
// the caller gives up args[i], whose buffer may then hold an intermediate
// or an output once the input is no longer read (donate may be nil or
// shorter than args; a donated input that shares its memory with another
// argument or a snapshot, or that is not contiguous, is not reused).
//
// Run panics with *Error if an argument is nil, a tracer, on another
// backend than the program's constants, or of a type other than the
// graph's input; and with the *Error of an instruction that fails (as
// Graph.Eval would).
func (p *Program) Run(args []*interp.Tensor, donate []bool) []*interp.Tensor {
	return p.run(args, donate, nil)
}

// RunInto is Run computing results into memory the caller provides:
// dst[i], when not nil, receives result i and is returned in its place.
// It must be a concrete contiguous tensor of result i's shape and dtype
// on the program's backend, whose memory no argument shares and that no
// snapshot or other tensor reads while the program runs (a fresh buffer,
// or a slice of one, that the caller fills): RunInto writes it without
// the bookkeeping of an in-place write. A result the plan computes into
// a buffer of its own is computed in dst directly; another (an input, a
// constant, a view, a buffer two results share) is copied into it. dst
// may be nil or shorter than the results: a result without a dst is
// allocated as Run allocates it. It panics as Run does, and with *Error
// when a dst does not fit.
func (p *Program) RunInto(args []*interp.Tensor, donate []bool, dst []*interp.Tensor) []*interp.Tensor {
	for i, d := range dst {
		if d == nil {
			continue
		}
		if i >= len(p.outs) || !d.IsConcrete() || !interp.AvalOf(d).Equal(p.outAval(i)) {
			panic(&Error{Ops: []string{"Program.RunInto"}, Msg: "destination " + strconv.Itoa(i) + " must be a concrete tensor of the result's type", Operands: []string{d.TypeString()}})
		}
		if arr, be := interp.ArrayOf(d); be != p.be || !arr.IsContiguous() {
			panic(&Error{Ops: []string{"Program.RunInto"}, Msg: "destination " + strconv.Itoa(i) + " must be contiguous, on the program's backend", Operands: []string{d.TypeString()}})
		}
	}
	return p.run(args, donate, dst)
}

// splatInputs returns the mask of args (the first 64) that are
// broadcast scalars of more than one element: every stride zero, so a
// contiguous copy would repeat one value.
func splatInputs(args []*interp.Tensor) uint64 {
	var m uint64
	for i, a := range args[:min(len(args), 64)] {
		arr, _ := interp.ArrayOf(a)
		if arr.Strides != nil && arr.Size() > 1 && arr.IsSplat() {
			m |= 1 << i
		}
	}
	return m
}

// splatVariant returns the variant of p that reads args' broadcast
// scalars in place (the same graph built with those inputs laid out with
// zero strides, sharing p's constants), or nil when p itself fits: a
// broadcast cotangent (the backward pass of a sum) then costs no
// materialised copy. It returns nil past maxSplatVariants variants.
func (p *Program) splatVariant(args []*interp.Tensor) *Program {
	m := splatInputs(args)
	if m == p.splatIn {
		return nil
	}
	if p.splatIn != 0 {
		// A variant given other layouts: the base program decides.
		return nil
	}
	if v, ok := p.splats.Load(m); ok {
		return v.(*Program)
	}
	if p.nSplats.Add(1) > maxSplatVariants {
		p.nSplats.Add(-1)
		return nil
	}
	v, loaded := p.splats.LoadOrStore(m, build(p.g, p.be, p.consts, m))
	if loaded {
		p.nSplats.Add(-1)
	}
	return v.(*Program)
}

// outAval is the type of result i.
func (p *Program) outAval(i int) interp.Aval { return p.g.Out[i].Aval }

func (p *Program) run(args []*interp.Tensor, donate []bool, dst []*interp.Tensor) []*interp.Tensor {
	g := p.g
	if len(args) != len(g.In) {
		panic(&Error{Ops: []string{"Program.Run"}, Msg: "program takes " + strconv.Itoa(len(g.In)) + " inputs, got " + strconv.Itoa(len(args))})
	}
	for i, a := range args {
		v := g.In[i]
		if a == nil || !interp.AvalOf(a).Equal(v.Aval) {
			panic(&Error{Ops: []string{"Program.Run"}, Msg: "input " + strconv.Itoa(i) + " must be " + v.Aval.String(), Operands: []string{a.TypeString()}})
		}
		if !a.IsConcrete() {
			panic(&Error{Ops: []string{"Program.Run"}, Msg: "input " + strconv.Itoa(i) + " is a tracer: a Program runs on concrete tensors (evaluate the graph with Graph.Eval under a transform)", Operands: []string{a.TypeString()}})
		}
	}
	if v := p.splatVariant(args); v != nil {
		return v.run(args, donate, dst)
	}
	pl := p.base
	mask := p.donationMask(args, donate)
	if mask != 0 {
		pl = p.planFor(mask)
	}
	rs := pl.pool.Get().(*runState)
	for i, a := range args {
		arr, be := interp.ArrayOf(a)
		if be != p.be {
			panic(&Error{Ops: []string{"Program.Run"}, Msg: "input " + strconv.Itoa(i) + " lives on backend " + be.Name() + ", the program on " + p.be.Name(), Operands: []string{a.TypeString()}})
		}
		if i < 64 && p.splatIn&(1<<i) != 0 {
			// Laid out as a broadcast scalar (splatVariant checked it).
			rs.inArr[i] = backend.Array{Buf: arr.Buf, Offset: arr.Offset}
			continue
		}
		if !arr.IsContiguous() {
			c := backend.Array{Buf: p.be.Alloc(arr.Buf.DType(), arr.Size()), Shape: arr.Shape}
			p.be.Copy(c, arr)
			arr = c
		} else if i >= 64 || mask&(1<<i) == 0 {
			rs.inT[i] = a
		}
		rs.inArr[i] = arr
	}
	var into []bool // the results computed in their dst
	for i, d := range dst {
		if d == nil {
			continue
		}
		if o := p.outs[i]; o.kind == outBuffer && p.ownOutput[i] && pl.where[p.vals[o.idx].root] == placeOutput {
			if into == nil {
				into = make([]bool, len(p.outs))
			}
			into[i] = true
			arr, _ := interp.ArrayOf(d)
			rs.into[p.vals[o.idx].root] = arr
		}
	}
	p.bindBuffers(pl, rs)
	for i := range p.instrs {
		p.exec(rs, &p.instrs[i])
	}
	res := make([]*interp.Tensor, len(p.outs))
	for i, o := range p.outs {
		switch {
		case into != nil && into[i]:
			res[i] = dst[i]
		case o.kind == outInput:
			res[i] = interp.Snapshot(args[o.idx])
		case o.kind == outConst:
			res[i] = interp.Snapshot(p.consts[o.idx])
		case p.ownOutput[i] && rs.cached[p.vals[o.idx].root]:
			res[i] = interp.NewResult(p.be, p.array(rs, o.idx))
		case pl.where[p.vals[o.idx].root] <= placeDonated && pl.where[p.vals[o.idx].root] != placeNone:
			// In a donated input's memory: the result holds the
			// input's storage, whose buffer the backend's cache takes
			// back only when neither is reachable.
			res[i] = interp.AliasOf(args[placeDonated-pl.where[p.vals[o.idx].root]], p.array(rs, o.idx))
		default:
			res[i] = interp.NewConcrete(p.be, p.array(rs, o.idx))
		}
		if i < len(dst) && dst[i] != nil && res[i] != dst[i] {
			to, _ := interp.ArrayOf(dst[i])
			from, _ := interp.ArrayOf(res[i])
			p.be.Copy(to, from)
			res[i] = dst[i]
		}
	}
	rs.clear(p, pl)
	pl.pool.Put(rs)
	// The inputs' and destinations' arrays (rs.inArr, rs.into) were
	// read and written until here.
	runtime.KeepAlive(args)
	runtime.KeepAlive(dst)
	return res
}

// donationMask returns the donated inputs that can be reused: concrete,
// contiguous over their whole buffer, sharing memory with no snapshot and
// no other argument. Inputs past the 64th are never reused.
func (p *Program) donationMask(args []*interp.Tensor, donate []bool) uint64 {
	var mask uint64
	for i, d := range donate {
		if !d || i >= len(args) || i >= 64 || !interp.Donatable(args[i]) {
			continue
		}
		shared := false
		for j, b := range args {
			if j != i && (b == args[i] || interp.SameStorage(b, args[i])) {
				shared = true
				break
			}
		}
		if !shared {
			mask |= 1 << i
		}
	}
	return mask
}

// planFor returns the memory plan for a donation mask, built once.
func (p *Program) planFor(mask uint64) *plan {
	if pl, ok := p.plans.Load(mask); ok {
		return pl.(*plan)
	}
	pl, _ := p.plans.LoadOrStore(mask, p.newPlan(mask))
	return pl.(*plan)
}

// array returns slot v's array in run state rs.
func (p *Program) array(rs *runState, v int) backend.Array {
	s := &p.vals[v]
	var a backend.Array
	switch s.kind {
	case rootInput:
		a = rs.inArr[s.root]
	case rootConst:
		a = p.constArrs[s.root]
	default:
		a = backend.Array{Buf: rs.phys[s.root], Offset: rs.physOff[s.root]}
	}
	return backend.Array{Buf: a.Buf, Shape: s.shape, Strides: s.strides, Offset: a.Offset + s.offset}
}

// exec runs one instruction.
func (p *Program) exec(rs *runState, in *instr) {
	switch in.kind {
	case opKernel:
		if in.direct != nil {
			k := len(in.in)
			in.direct(rs.tmpl[in.base:in.base+k], rs.tmpl[in.base+k:in.base+k+len(in.out)])
			return
		}
		// Exec may replace the entries of ins (the CPU backend puts
		// contiguous copies of operands it cannot read in place there),
		// so they are copied from the template for every call; results
		// are read from it directly.
		k := len(in.in)
		ins := rs.in[:k]
		copy(ins, rs.tmpl[in.base:in.base+k])
		p.be.Exec(in.prim.Op, in.params, ins, rs.tmpl[in.base+k:in.base+k+len(in.out)])
	case opCopy:
		p.be.Copy(p.array(rs, in.out[0]), p.array(rs, in.in[0]))
	case opFused:
		p.runGroup(rs, in.group)
	case opFallback:
		p.fallback(rs, in)
	}
}

// fallback evaluates one equation with interp.Eval on tensors over the
// operands' arrays and copies the results into their planned buffers.
// A mutation primitive is answered out of place: the destination is not
// written. An effect (Prim.Effect) gets copies of its operands unless it
// borrows them (Prim.BorrowsOperands): it may use them after the
// instruction (a started all-reduce reads its operand while the program
// goes on, another process's member of an in-process collective reads
// it after this one returns), and the arena reuses an operand's buffer
// once its last reader has run.
//
// An effect that borrows its operands gets an input read in place and not
// donated as the caller's tensor itself, not a new tensor over its
// memory, so it can tell the tensors it has seen (ddp's prefetched
// all-gathers are keyed by the snapshots of their operands).
func (p *Program) fallback(rs *runState, in *instr) {
	args := make([]*interp.Tensor, len(in.in))
	for i, v := range in.in {
		switch {
		case in.prim.BorrowsOperands && p.wholeInput(rs, v):
			args[i] = rs.inT[p.vals[v].root]
		case in.prim.Effect && !in.prim.BorrowsOperands:
			args[i] = interp.Bind1(prims.Copy, nil, interp.NewConcrete(p.be, p.array(rs, v)))
		default:
			args[i] = interp.NewConcrete(p.be, p.array(rs, v))
		}
	}
	var outs []*interp.Tensor
	pr := in.prim
	switch {
	case pr.Kind == interp.Mutation:
		outs = []*interp.Tensor{interp.OutOfPlace(pr, in.params, args)}
	default:
		outs = interp.Eval(pr, in.params, args)
	}
	for i, v := range in.out {
		src, _ := interp.ArrayOf(outs[i])
		p.be.Copy(p.array(rs, v), src)
	}
	runtime.KeepAlive(outs)
}

// wholeInput reports whether slot v is an input of this run read in
// place and not donated (rs.inT), with the input's own layout.
func (p *Program) wholeInput(rs *runState, v int) bool {
	s := &p.vals[v]
	if s.kind != rootInput || rs.inT[s.root] == nil {
		return false
	}
	a := rs.inArr[s.root]
	return s.offset == 0 && slices.Equal(s.shape, a.Shape) &&
		(slices.Equal(s.strides, a.Strides) || (backend.Array{Shape: s.shape, Strides: s.strides}).IsContiguous() && a.IsContiguous())
}

// Direct kernels. A backend that implements backend.KernelResolver
// resolves a kernel call once, at Build, for the layouts of its template
// operands (which are the same on every run: only buffers and offsets
// change), into a function run instead of Exec. It computes what Exec
// computes and leaves its operand slices alone, so it is given the
// templates themselves.

// resolveDirect returns the direct kernel of a call of pr whose k
// operands and r results are the template entries from base, or nil.
func (p *Program) resolveDirect(pr *interp.Prim, params any, base, k, r int) backend.Direct {
	kr, ok := p.be.(backend.KernelResolver)
	if !ok {
		return nil
	}
	ls := make([]backend.Layout, k+r)
	for i := range ls {
		ls[i] = p.tmplLayout(base + i)
	}
	return kr.Resolve(pr.Op, params, ls[:k], ls[k:])
}

// tmplLayout returns the layout of the arrays tmplArray makes for
// template entry k.
func (p *Program) tmplLayout(k int) backend.Layout {
	e := &p.tmpl[k]
	if e.scratch >= 0 {
		return backend.Layout{DType: p.scratch[e.scratch].dtype, Shape: e.block}
	}
	s := &p.vals[e.slot]
	a := backend.Array{Shape: s.shape, Strides: s.strides}
	if e.block != nil {
		a = cutBlock(a, 0, e.block)
	}
	return backend.Layout{DType: s.dtype, Shape: a.Shape, Strides: a.Strides}
}
