package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// DOT renders the program in Graphviz's language, for `dot -Tsvg`: an
// ellipse per input, a box per constant, a box per instruction (a
// kernel, a copy, an equation evaluated by the interpreter), a cluster
// per fused group holding its equations (each box names the primitive,
// its parameters and, when the trace recorded it, the user's op and
// line: interp.RecordSites), and an edge per value from the
// instruction that makes it to each that reads it, labelled with its
// type and where it lives (an arena buffer, an output, a view).
func (p *Program) DOT(title string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=TB; compound=true; node [fontname=Helvetica, fontsize=10]; edge [fontname=Helvetica, fontsize=8];\n", interp.DOTQuote(title))
	made := map[int]string{} // slot → the node that makes it
	for i, v := range p.g.In {
		id := "in" + strconv.Itoa(i)
		made[i] = id
		fmt.Fprintf(&b, "  %s [shape=ellipse, label=%s];\n", id, interp.DOTQuote(id+": "+v.Aval.String()))
	}
	for i, c := range p.consts {
		id := "c" + strconv.Itoa(i)
		made[len(p.g.In)+i] = id
		fmt.Fprintf(&b, "  %s [shape=box, style=dashed, label=%s];\n", id, interp.DOTQuote(id+": "+c.TypeString()))
	}
	// source is the node a slot comes from: its maker, or its root's
	// (a view).
	source := func(s int) (string, bool) {
		if id, ok := made[s]; ok {
			return id, true
		}
		sl := p.vals[s]
		switch sl.kind {
		case rootInput:
			return "in" + strconv.Itoa(sl.root), true
		case rootConst:
			return "c" + strconv.Itoa(sl.root), true
		case rootBuf:
			id, ok := made[p.bufs[sl.root].val]
			return id, ok
		}
		return "", false
	}
	edge := func(s int, to string, extra string) {
		if src, ok := source(s); ok {
			fmt.Fprintf(&b, "  %s -> %s [label=%s%s];\n", src, to, interp.DOTQuote(p.slotName(s)), extra)
		}
	}
	for i, in := range p.instrs {
		id := "i" + strconv.Itoa(i)
		switch in.kind {
		case opFused:
			fmt.Fprintf(&b, "  subgraph cluster_%d {\n    style=rounded; color=steelblue; label=%s;\n", i,
				interp.DOTQuote(fmt.Sprintf("%d fused[%d] over %s", i, len(in.group.members)-in.group.reductions, backend.FormatShapeCompact(in.group.shape))))
			for k, m := range in.group.members {
				params := m.params
				if m.kind == memReduce {
					params = nil // the block's axes, not the equation's
				}
				label := interp.DOTLabel(m.prim, params, m.site)
				mid := id + "_" + strconv.Itoa(k)
				fmt.Fprintf(&b, "    %s [shape=box, style=filled, fillcolor=aliceblue, label=%s];\n", mid, interp.DOTQuote(label))
				if k > 0 {
					fmt.Fprintf(&b, "    %s_%d -> %s [style=dotted, arrowhead=none];\n", id, k-1, mid)
				}
			}
			b.WriteString("  }\n")
			first := id + "_0"
			for _, s := range in.in {
				edge(s, first, fmt.Sprintf(", lhead=cluster_%d", i))
			}
			last := id + "_" + strconv.Itoa(len(in.group.members)-1)
			for _, m := range in.group.members {
				if m.out.scratch < 0 {
					made[m.outSlot] = last
				}
			}
			continue
		case opKernel:
			fmt.Fprintf(&b, "  %s [shape=box, label=%s];\n", id, interp.DOTQuote(strconv.Itoa(i)+" "+interp.DOTLabel(in.prim, in.params, in.site)))
		case opCopy:
			fmt.Fprintf(&b, "  %s [shape=box, style=dashed, label=%s];\n", id, interp.DOTQuote(strconv.Itoa(i)+" copy"))
		case opFallback:
			fmt.Fprintf(&b, "  %s [shape=box, style=filled, fillcolor=lightyellow, label=%s];\n", id, interp.DOTQuote(strconv.Itoa(i)+" eval "+interp.DOTLabel(in.prim, in.params, in.site)))
		}
		for _, s := range in.in {
			edge(s, id, "")
		}
		for _, s := range in.out {
			made[s] = id
		}
	}
	for i, o := range p.outs {
		id := "out" + strconv.Itoa(i)
		fmt.Fprintf(&b, "  %s [shape=doubleoctagon, label=%s];\n", id, interp.DOTQuote(id))
		switch o.kind {
		case outInput:
			fmt.Fprintf(&b, "  in%d -> %s;\n", o.idx, id)
		case outConst:
			fmt.Fprintf(&b, "  c%d -> %s;\n", o.idx, id)
		default:
			edge(o.idx, id, "")
		}
	}
	b.WriteString("}\n")
	return b.String()
}
