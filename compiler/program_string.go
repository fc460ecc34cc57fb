package compiler

import (
	"strconv"
	"strings"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// String prints the program: its inputs and constants, one instruction a
// line with the slots it reads and writes, fused groups with their
// equations, and where each buffer lives (arena buffer, output, donated
// input) in the plan without donation:
//
//	program(in0:f32[1024], c0:f32[]) arena 1 buffer 4096 bytes
//	  0 fused[3] v3:f32[1024]@out <- in0 c0
//	      v1 = mul in0 c0    [block]
//	      ...
func (p *Program) String() string {
	var b strings.Builder
	st := p.Stats()
	b.WriteString("program(")
	for i, v := range p.g.In {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("in" + strconv.Itoa(i) + ":" + v.Aval.String())
	}
	for i := range p.consts {
		b.WriteString(", c" + strconv.Itoa(i) + ":" + p.consts[i].TypeString())
	}
	b.WriteString(") arena " + strconv.Itoa(st.ArenaBuffers) + " buffers " + strconv.Itoa(st.ArenaBytes) + " bytes, reused " + strconv.Itoa(st.ReusedBytes) + " bytes\n")
	for i, in := range p.instrs {
		b.WriteString("  " + strconv.Itoa(i) + " ")
		switch in.kind {
		case opKernel:
			b.WriteString(in.prim.Name)
			p.params(&b, in.params)
		case opCopy:
			b.WriteString("copy")
		case opFallback:
			b.WriteString("eval " + in.prim.Name)
			p.params(&b, in.params)
		case opFused:
			b.WriteString("fused[" + strconv.Itoa(len(in.group.members)-in.group.reductions) + "] over " + backend.FormatShapeCompact(in.group.shape))
			if in.group.rowMode {
				b.WriteString(" by rows")
			}
		}
		b.WriteString(" ->")
		if in.kind == opFused {
			for _, m := range in.group.members {
				if m.out.scratch < 0 {
					b.WriteString(" " + p.slotName(m.outSlot))
				}
			}
		} else {
			for _, s := range in.out {
				b.WriteString(" " + p.slotName(s))
			}
		}
		b.WriteString(" <-")
		for _, s := range in.in {
			b.WriteString(" " + p.slotName(s))
		}
		b.WriteByte('\n')
		if in.kind == opFused {
			for _, m := range in.group.members {
				b.WriteString("      v" + strconv.Itoa(m.outSlot) + " = " + m.prim.Name)
				if m.kind == memReduce {
					b.WriteString("[rows of " + strconv.Itoa(in.group.k) + "]")
				} else {
					p.params(&b, m.params)
				}
				for k, s := range m.src {
					b.WriteString(" " + p.shortName(s))
					switch m.bc[k] {
					case bcastCol:
						b.WriteString("[per row]")
					case bcastVec:
						b.WriteString("[per column]")
					}
				}
				if m.out.scratch >= 0 {
					b.WriteString("  [block " + strconv.Itoa(m.out.scratch) + "]")
				}
				b.WriteByte('\n')
			}
		}
	}
	b.WriteString("  return")
	for _, o := range p.outs {
		switch o.kind {
		case outInput:
			b.WriteString(" in" + strconv.Itoa(o.idx))
		case outConst:
			b.WriteString(" c" + strconv.Itoa(o.idx))
		default:
			b.WriteString(" " + p.shortName(o.idx))
		}
	}
	return b.String()
}

func (p *Program) params(b *strings.Builder, params any) {
	if s := interp.FormatParams(params); s != "" {
		b.WriteString("[" + s + "]")
	}
}

// shortName names slot s: in<i> or c<i> for an input or constant itself,
// v<s> otherwise.
func (p *Program) shortName(s int) string {
	sl := p.vals[s]
	switch sl.kind {
	case rootInput:
		if s == sl.root {
			return "in" + strconv.Itoa(sl.root)
		}
	case rootConst:
		if s == len(p.g.In)+sl.root {
			return "c" + strconv.Itoa(sl.root)
		}
	}
	return "v" + strconv.Itoa(s)
}

// slotName names slot s with its type and where its memory lives.
func (p *Program) slotName(s int) string {
	sl := p.vals[s]
	n := p.shortName(s) + ":" + interp.Aval{Shape: sl.shape, DType: sl.dtype}.String()
	switch sl.kind {
	case rootInput:
		if s != sl.root {
			n += "@view(in" + strconv.Itoa(sl.root) + ")"
		}
	case rootConst:
		if s != len(p.g.In)+sl.root {
			n += "@view(c" + strconv.Itoa(sl.root) + ")"
		}
	case rootBuf:
		if p.bufs[sl.root].val != s {
			n += "@view(v" + strconv.Itoa(p.bufs[sl.root].val) + ")"
			break
		}
		switch w := p.base.where[sl.root]; {
		case w >= 0:
			n += "@arena" + strconv.Itoa(w)
		case w == placeOutput:
			n += "@out"
		}
	}
	return n
}
