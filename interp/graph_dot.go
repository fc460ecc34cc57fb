package interp

import (
	"fmt"
	"strconv"
	"strings"
)

// DOT renders g in Graphviz's language, for `dot -Tsvg`: an ellipse per
// input, a box per constant and per equation (the primitive, its
// parameters and, when the trace recorded it, the user's op and line),
// a double octagon per output, and an edge per value from
// where it is made to where it is read, labelled with its type.
func (g *Graph) DOT(title string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=TB; node [fontname=Helvetica, fontsize=10]; edge [fontname=Helvetica, fontsize=8];\n", DOTQuote(title))
	from := map[*Var]string{}
	for i, v := range g.In {
		id := "in" + strconv.Itoa(i)
		from[v] = id
		fmt.Fprintf(&b, "  %s [shape=ellipse, label=%s];\n", id, DOTQuote(id+": "+v.Aval.String()))
	}
	for i, v := range g.Consts {
		id := "c" + strconv.Itoa(i)
		from[v] = id
		fmt.Fprintf(&b, "  %s [shape=box, style=dashed, label=%s];\n", id, DOTQuote(id+": "+v.Aval.String()))
	}
	for k, e := range g.Eqns {
		id := "e" + strconv.Itoa(k)
		fmt.Fprintf(&b, "  %s [shape=box, label=%s];\n", id, DOTQuote(DOTLabel(e.Prim, e.Params, e.Site)))
		for _, v := range e.In {
			if src, ok := from[v]; ok {
				fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", src, id, DOTQuote(v.Aval.String()))
			}
		}
		for _, v := range e.Out {
			from[v] = id
		}
	}
	for i, v := range g.Out {
		id := "out" + strconv.Itoa(i)
		fmt.Fprintf(&b, "  %s [shape=doubleoctagon, label=%s];\n", id, DOTQuote(id))
		if src, ok := from[v]; ok {
			fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", src, id, DOTQuote(v.Aval.String()))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// DOTLabel is the label of an equation's box: the primitive's name, its
// parameters (when not nil) and its site (when recorded), a line each.
func DOTLabel(p *Prim, params any, site *Site) string {
	label := p.Name
	if s := FormatParams(params); s != "" {
		label += "\n" + s
	}
	if site != nil {
		label += "\n" + site.String()
	}
	return label
}

// DOTQuote quotes s as a Graphviz string (a newline becomes a line
// break of the label).
func DOTQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, "\n", `\n`)
	return `"` + s + `"`
}
