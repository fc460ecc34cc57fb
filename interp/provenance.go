package interp

// Provenance of values computed eagerly while a compiled function is
// traced. A trace records each primitive applied to its tracers, but a
// primitive whose operands are all concrete (a captured tensor scaled,
// transposed by a copy, summed) runs at once, and the graph holds its
// result as a constant. The constant is then a function of the captured
// tensors it was computed from, which a later write changes without
// touching the constant. While a trace watches eager writes
// (WatchWrites), eval records on each result's memory (its storage,
// which its views share) the tensors its operands came from (their
// memory's provenance, or their bases), and a mutation adds the written
// value's to its destination's memory; a trace that
// lifts such a result reports those tensors that existed before it as
// sources of the graph (RecordConstSources, ConstSource.Derived), so a
// compiled function traces again when one of them changes, as it does
// when a captured tensor it holds as a constant changes. Nothing is
// recorded when no trace watches: the eager path pays one atomic load.

// maxProvenance bounds the tensors one value records; a value computed
// from more is of unknown provenance, and a graph holding it is traced
// again on every call (its ConstSource always reports a change).
const maxProvenance = 64

// provenance is the set of tensors a value was computed from.
type provenance struct {
	from []*Tensor
	many bool // more than maxProvenance: unknown
}

// add adds the tensors concrete x was computed from: its memory's
// provenance, or, with none, x's base itself (the tensor whose writes
// change x).
func (p *provenance) add(x *Tensor) {
	if p.many {
		return
	}
	q := memFrom(x)
	if q == nil {
		p.addOne(BaseOf(x))
		return
	}
	if q.many {
		p.many, p.from = true, nil
		return
	}
	for _, t := range q.from {
		p.addOne(t)
	}
}

func (p *provenance) addOne(t *Tensor) {
	for _, u := range p.from {
		if u == t {
			return
		}
	}
	if len(p.from) == maxProvenance {
		p.many, p.from = true, nil
		return
	}
	p.from = append(p.from, t)
}

// noteProvenance records on the memory of outs the provenance of args
// (see above). It runs only while a trace watches eager writes.
func noteProvenance(args, outs []*Tensor) {
	if len(args) == 0 {
		return
	}
	p := &provenance{}
	for _, a := range args {
		if a.tr == nil {
			p.add(a)
		}
	}
	if len(p.from) == 0 && !p.many {
		return
	}
	for _, o := range outs {
		if o.tr == nil && o.st != nil && o.st.from == nil {
			o.st.from = p
		}
	}
}

// noteWrittenProvenance adds to the memory of dst, which an eager write
// wrote, the provenance of the values written (srcs). Only memory of a
// tensor made while a trace watches is given one: a tensor from before
// every trace is a captured tensor, whose write a trace hears of itself
// (WatchWrites).
func noteWrittenProvenance(dst *Tensor, srcs []*Tensor) {
	if dst.st == nil || BaseOf(dst).born < watchFloor.Load() {
		return
	}
	p := &provenance{}
	if q := dst.st.from; q != nil {
		p.many, p.from = q.many, append([]*Tensor(nil), q.from...)
	}
	for _, s := range srcs {
		if s.tr == nil {
			p.add(s)
		}
	}
	if len(p.from) > 0 || p.many {
		dst.st.from = p
	}
}

// derivedFrom returns the tensors made before mark that concrete t's
// memory was computed from while a trace watched, and whether its
// provenance is unknown.
func derivedFrom(t *Tensor, mark uint64) (from []*Tensor, unknown bool) {
	p := memFrom(t)
	if p == nil {
		return nil, false
	}
	if p.many {
		return nil, true
	}
	for _, u := range p.from {
		if u.born < mark && u.tr == nil {
			from = append(from, u)
		}
	}
	return from, false
}

// memFrom returns the provenance of concrete t's memory, or nil.
func memFrom(t *Tensor) *provenance {
	if t.st == nil {
		return nil
	}
	return t.st.from
}

func containsTensor(ts []*Tensor, t *Tensor) bool {
	for _, u := range ts {
		if u == t {
			return true
		}
	}
	return false
}
