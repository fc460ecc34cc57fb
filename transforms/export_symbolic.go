package transforms

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// Exported programs with symbolic dimensions (SymbolicShape). Export
// traces the function at the example's sizes and again with every
// dimension variable at twice its size, alone and together (2^k traces
// for k variables), and once more at three times every size to check.
// The traces' encodings must agree in everything but integers; each
// integer that differs (a shape, a reshape's target, an iota's size, a
// slice's bounds) is fitted exactly, over the rationals, by a polynomial
// of degree at most one in each variable (c + c_b·b + c_s·s + c_bs·b·s
// for two), and the check trace must agree with every polynomial. The
// file holds the example's graph and the polynomials, each naming the
// integer it replaces by its place among the integers the decoder reads
// (graphio.DecodeOptions.Subst). A call binds the variables from its
// arguments' shapes, checks them (a variable's dimensions agree, every
// polynomial is a whole non-negative number at the binding) and decodes
// the graph at those sizes once per binding: no Go code is traced
// again.

// SymbolicShape makes the dimensions of the argument leaf at path (its
// leaf path, as Exported.In names it: "" for a lone tensor, "args[1]",
// ".W") symbolic in the exported program: dims lists one entry per axis,
// a name for a dimension variable or a number for a fixed size ("b,
// 784", "b, s, 64"). A name used in several places (several axes or
// leaves) is one variable: the program requires those dimensions to be
// equal. The example's sizes are the variables' example values; they
// should be at least 2 (size 1 broadcasts, so it traces differently).
//
// Export panics with *peel.Error when the path names no argument leaf,
// dims has the wrong rank or a number that differs from the example,
// the function's program depends on a variable otherwise than by its
// sizes (a captured constant or a Go branch that changes with the size),
// or a size depends on a variable more than linearly (b·b).
func SymbolicShape(path, dims string) ExportOption {
	return exportOpt(func(c *exportConfig) { c.sym = append(c.sym, symSpec{path, dims}) })
}

type symSpec struct{ path, dims string }

// maxSymVars bounds the variables of one program (2^k + 1 traces).
const maxSymVars = 4

// symTerm is a term c·Π vars(mask) of a polynomial.
type symTerm struct {
	mask uint64
	c    *big.Rat
}

// symSlot replaces the integer token index by its polynomial.
type symSlot struct {
	index int
	terms []symTerm
}

// symBind reads variable v from axis axis of argument leaf.
type symBind struct{ leaf, axis, v int }

// symbolic is what an exported program with dimension variables adds.
type symbolic struct {
	vars  []string
	binds []symBind
	slots []symSlot
	body  []byte // the graph's encoding, at the example's sizes
	insts *lru.Cache[string, *symInstance]
}

type symInstance struct {
	call *callParams
	in   []interp.Aval
}

// maxSymInstances bounds the programs kept per exported program (one per
// binding of its variables).
const maxSymInstances = 32

func (p *symbolic) eval(s symSlot, vals []int64) (*big.Rat, bool) {
	sum := new(big.Rat)
	for _, t := range s.terms {
		x := new(big.Rat).Set(t.c)
		for j := range p.vars {
			if t.mask&(1<<j) != 0 {
				x.Mul(x, new(big.Rat).SetInt64(vals[j]))
			}
		}
		sum.Add(sum, x)
	}
	return sum, sum.IsInt()
}

func (p *symbolic) format(s symSlot) string {
	var parts []string
	for _, t := range s.terms {
		var f []string
		if t.c.Cmp(big.NewRat(1, 1)) != 0 || t.mask == 0 {
			f = append(f, t.c.RatString())
		}
		for j, v := range p.vars {
			if t.mask&(1<<j) != 0 {
				f = append(f, v)
			}
		}
		parts = append(parts, strings.Join(f, "·"))
	}
	return strings.Join(parts, " + ")
}

// parseSymDims parses "b, 784" into one entry per axis: a variable name,
// or "" with the number in fixed.
func parseSymDims(op, dims string) (names []string, fixed []int) {
	for _, f := range strings.Split(dims, ",") {
		f = strings.TrimSpace(f)
		if n, err := strconv.Atoi(f); err == nil {
			names, fixed = append(names, ""), append(fixed, n)
			continue
		}
		ok := f != ""
		for i, r := range f {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
				ok = false
			}
		}
		if !ok {
			treeErrorf(op, "SymbolicShape(%q): %q is neither a dimension variable's name nor a size", dims, f)
		}
		names, fixed = append(names, f), append(fixed, -1)
	}
	return names, fixed
}

// exportSymbolic fits the program's sizes to the dimension variables of
// specs (see the top of the file); trace traces the function at the
// given argument types and returns the encoding of its graph.
func exportSymbolic(op, name string, specs []symSpec, paths []string, in []interp.Aval, trace func([]interp.Aval) []byte) *symbolic {
	p := &symbolic{}
	var base []int64
	varOf := map[string]int{}
	for _, sp := range specs {
		leaf := -1
		for i, q := range paths {
			if q == sp.path {
				leaf = i
			}
		}
		if leaf < 0 {
			treeErrorf(op, "SymbolicShape(%q, %q): no argument leaf has that path; the leaves are %s", sp.path, sp.dims, strings.Join(quotedPaths(paths), ", "))
		}
		names, fixed := parseSymDims(op, sp.dims)
		shape := in[leaf].Shape
		if len(names) != len(shape) {
			treeErrorf(op, "SymbolicShape(%q, %q): %d dimensions for an argument of shape %v", sp.path, sp.dims, len(names), shape)
		}
		for axis, nm := range names {
			if nm == "" {
				if fixed[axis] != shape[axis] {
					treeErrorf(op, "SymbolicShape(%q, %q): axis %d is %d in the example, not %d", sp.path, sp.dims, axis, shape[axis], fixed[axis])
				}
				continue
			}
			v, ok := varOf[nm]
			if !ok {
				if len(p.vars) == maxSymVars {
					treeErrorf(op, "SymbolicShape: more than %d dimension variables", maxSymVars)
				}
				v = len(p.vars)
				varOf[nm] = v
				p.vars = append(p.vars, nm)
				base = append(base, int64(shape[axis]))
			}
			if base[v] != int64(shape[axis]) {
				treeErrorf(op, "SymbolicShape(%q, %q): %s is %d here in the example but %d elsewhere", sp.path, sp.dims, nm, shape[axis], base[v])
			}
			p.binds = append(p.binds, symBind{leaf, axis, v})
		}
	}
	k := len(p.vars)
	at := func(vals []int64) ([]interp.Aval, []byte) {
		avals := make([]interp.Aval, len(in))
		for i, a := range in {
			avals[i] = interp.Aval{Shape: append([]int(nil), a.Shape...), DType: a.DType}
		}
		for _, b := range p.binds {
			avals[b.leaf].Shape[b.axis] = int(vals[b.v])
		}
		return avals, trace(avals)
	}
	describe := func(vals []int64) string {
		var s []string
		for j, v := range p.vars {
			s = append(s, fmt.Sprintf("%s=%d", v, vals[j]))
		}
		return strings.Join(s, ", ")
	}
	tokens := func(body []byte) []graphio.DecodeToken {
		var t []graphio.DecodeToken
		if _, err := graphio.DecodeWith(body, interp.DefaultBackend(), graphio.DecodeOptions{Tokens: &t}); err != nil {
			treeErrorf(op, "%s: the traced program does not load: %v", name, err)
		}
		return t
	}
	// The design: each variable at its example value a or 2a, every
	// combination (point m: bit j set for 2a).
	npts := 1 << k
	vals := make([][]int64, npts)
	toks := make([][]graphio.DecodeToken, npts)
	for m := range npts {
		vals[m] = make([]int64, k)
		for j := range k {
			vals[m][j] = base[j]
			if m&(1<<j) != 0 {
				vals[m][j] = 2 * base[j]
			}
		}
		var body []byte
		_, body = at(vals[m])
		if m == 0 {
			p.body = body
		}
		toks[m] = tokens(body)
	}
	same := func(m int, t []graphio.DecodeToken) {
		ref := toks[0]
		if len(t) != len(ref) {
			treeErrorf(op, "%s traces to a program of another structure at %s than at %s: a Go branch or loop depends on a dimension variable", name, describe(vals[m]), describe(vals[0]))
		}
		for i := range t {
			if t[i].Int != ref[i].Int || !t[i].Int && t[i].V != ref[i].V {
				treeErrorf(op, "%s traces to a program that differs at %s from %s beyond its sizes (a constant it captures, or a value computed in Go, depends on a dimension variable: compute it from the arguments inside the function)", name, describe(vals[m]), describe(vals[0]))
			}
		}
	}
	for m := 1; m < npts; m++ {
		same(m, toks[m])
	}
	// Fit each integer that varies: along each variable in turn, the pair
	// (f(a), f(2a)) gives f = c₀ + c₁·x.
	ints := 0
	for i := range toks[0] {
		if !toks[0][i].Int {
			continue
		}
		idx := ints
		ints++
		varies := false
		coef := make([]*big.Rat, npts)
		for m := range npts {
			coef[m] = new(big.Rat).SetInt64(int64(toks[m][i].V))
			varies = varies || toks[m][i].V != toks[0][i].V
		}
		if !varies {
			continue
		}
		for j := range k {
			a := new(big.Rat).SetInt64(base[j])
			for m := range npts {
				if m&(1<<j) != 0 {
					continue
				}
				fa, fb := coef[m], coef[m|1<<j]
				c1 := new(big.Rat).Sub(fb, fa)
				c1.Quo(c1, a) // (f(2a) − f(a)) / a
				c0 := new(big.Rat).Sub(fa, new(big.Rat).Mul(c1, a))
				coef[m], coef[m|1<<j] = c0, c1
			}
		}
		s := symSlot{index: idx}
		for m, c := range coef {
			if c.Sign() != 0 {
				s.terms = append(s.terms, symTerm{uint64(m), c})
			}
		}
		p.slots = append(p.slots, s)
	}
	// The check: every variable at three times its example value.
	check := make([]int64, k)
	for j := range k {
		check[j] = 3 * base[j]
	}
	_, body := at(check)
	t := tokens(body)
	vals = append(vals, check)
	same(len(vals)-1, t)
	slotAt := map[int]symSlot{}
	for _, s := range p.slots {
		slotAt[s.index] = s
	}
	ints = 0
	for i := range t {
		if !t[i].Int {
			continue
		}
		want := new(big.Rat).SetInt64(int64(toks[0][i].V))
		if s, ok := slotAt[ints]; ok {
			want, _ = p.eval(s, check)
		}
		if want.Cmp(new(big.Rat).SetInt64(int64(t[i].V))) != 0 {
			treeErrorf(op, "%s: a size of its program at %s is %d, not %s: it depends on a dimension variable other than linearly in each (a product of a variable with itself, or a Go computation of sizes)", name, describe(check), int64(t[i].V), want.RatString())
		}
		ints++
	}
	return p
}

// appendSymbolic writes the variables, their bindings and the slots
// (docs/export-format.md, version 2).
func appendSymbolic(b []byte, p *symbolic) []byte {
	b = binary.AppendUvarint(b, uint64(len(p.vars)))
	for _, v := range p.vars {
		b = appendString(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(p.binds)))
	for _, x := range p.binds {
		b = binary.AppendUvarint(b, uint64(x.leaf))
		b = binary.AppendUvarint(b, uint64(x.axis))
		b = binary.AppendUvarint(b, uint64(x.v))
	}
	b = binary.AppendUvarint(b, uint64(len(p.slots)))
	for _, s := range p.slots {
		b = binary.AppendUvarint(b, uint64(s.index))
		b = binary.AppendUvarint(b, uint64(len(s.terms)))
		for _, t := range s.terms {
			b = binary.AppendUvarint(b, t.mask)
			b = appendString(b, t.c.RatString())
		}
	}
	return b
}

// readSymbolic reads what appendSymbolic wrote; nIn is the number of
// argument leaves.
func readSymbolic(r *graphio.Reader, nIn int) *symbolic {
	p := &symbolic{}
	nv := r.Len()
	if nv > maxSymVars {
		r.Failf("%d dimension variables (at most %d)", nv, maxSymVars)
		return nil
	}
	for range nv {
		p.vars = append(p.vars, r.Text())
	}
	nb := r.Len()
	for range nb {
		x := symBind{int(r.Uint()), int(r.Uint()), int(r.Uint())}
		if r.Err() == nil && (x.leaf >= nIn || x.v >= nv || x.axis > 64) {
			r.Failf("a dimension variable bound to leaf %d axis %d", x.leaf, x.axis)
		}
		p.binds = append(p.binds, x)
	}
	ns := r.Len()
	for range ns {
		s := symSlot{index: int(r.Uint())}
		nt := r.Len()
		for range nt {
			mask := r.Uint()
			c, ok := new(big.Rat).SetString(r.Text())
			if r.Err() == nil && (!ok || mask >= 1<<nv || len(c.Num().Bits()) > 2 || len(c.Denom().Bits()) > 2) {
				r.Failf("a malformed size polynomial")
			}
			s.terms = append(s.terms, symTerm{mask, c})
		}
		p.slots = append(p.slots, s)
	}
	if r.Err() != nil {
		return nil
	}
	p.insts = lru.New[string, *symInstance](maxSymInstances)
	return p
}

// instance returns the program at the sizes of args, which bind the
// variables; it panics with *peel.Error naming op when they do not fit.
func (e *Exported) instance(op string, args []*peel.Tensor) *symInstance {
	p := e.sym
	vals := make([]int64, len(p.vars))
	from := make([]string, len(p.vars))
	for _, b := range p.binds {
		a, l := args[b.leaf], e.in[b.leaf]
		if a.Rank() != len(l.Shape) {
			treeErrorf(op, "argument %s must have rank %d (%s), got %s", pathOr(l.Path), len(l.Shape), l, a.TypeString())
		}
		d := int64(a.Shape()[b.axis])
		where := fmt.Sprintf("axis %d of argument %s", b.axis, pathOr(l.Path))
		switch {
		case from[b.v] == "":
			vals[b.v], from[b.v] = d, where
		case vals[b.v] != d:
			treeErrorf(op, "dimension %s is %d at %s but %d at %s: they must be equal", p.vars[b.v], vals[b.v], from[b.v], d, where)
		}
	}
	key := fmt.Sprint(vals)
	if inst, ok := p.insts.Load(key); ok {
		return inst
	}
	var binding []string
	for j, v := range p.vars {
		binding = append(binding, fmt.Sprintf("%s=%d", v, vals[j]))
	}
	subst := make(map[int]int64, len(p.slots))
	for _, s := range p.slots {
		x, whole := p.eval(s, vals)
		if !whole || !x.Num().IsInt64() || x.Num().Int64() < 0 || x.Num().Int64() > math.MaxInt32 {
			treeErrorf(op, "at %s a size of the program, %s, is %s: not a whole number of elements (a dimension must divide evenly, as the program's reshapes and splits need)", strings.Join(binding, ", "), p.format(s), x.RatString())
		}
		subst[s.index] = x.Num().Int64()
	}
	g, err := graphio.DecodeWith(p.body, e.be, graphio.DecodeOptions{Subst: subst})
	if err != nil {
		treeErrorf(op, "the program does not fit the sizes %s: %v", strings.Join(binding, ", "), err)
	}
	inst := &symInstance{in: make([]interp.Aval, len(g.In))}
	for i, v := range g.In {
		inst.in[i] = v.Aval
	}
	if cerr := interp.Catch(func() { inst.call = newCallParamsOn(e.name, g, e.be) }); cerr != nil {
		treeErrorf(op, "at %s: %v", strings.Join(binding, ", "), cerr)
	}
	inst, _ = p.insts.LoadOrStore(key, inst)
	return inst
}

// symDims returns the variables' names on the axes of argument leaf i
// ("" for a fixed axis), or nil.
func (p *symbolic) symDims(i, rank int) []string {
	var dims []string
	for _, b := range p.binds {
		if b.leaf == i {
			if dims == nil {
				dims = make([]string, rank)
			}
			dims[b.axis] = p.vars[b.v]
		}
	}
	return dims
}

func quotedPaths(paths []string) []string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = strconv.Quote(p)
	}
	return q
}
