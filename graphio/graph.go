package graphio

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// maxGraphDepth bounds the nesting of graphs in a file (and so the
// loader's recursion).
const maxGraphDepth = 32

// maxRank bounds the rank of a value in a file.
const maxRank = 64

// Encode returns g in the exported-program encoding: its inputs' and
// constants' types, each constant's bytes (unless omitConsts: then its
// constants' values are left out, and the loader is given them; nested
// graphs always hold theirs), its equations and its outputs. It returns
// an error naming the equation when a primitive's parameters cannot be
// written (it has parameters and no Codec, or the codec refuses them),
// or when g holds a mutation, an effect or a tracer constant.
func Encode(g *interp.Graph, omitConsts bool) ([]byte, error) {
	w := &graphWriter{omitConsts: omitConsts}
	if err := w.graph(g); err != nil {
		return nil, err
	}
	return w.buf, nil
}

// Decode reads a graph Encode wrote, placing its constants on be; a
// constant the encoding left out is nil in ConstVals. It never panics:
// a malformed or hostile encoding is an error that says where it is
// wrong. Every equation is
// type-checked (its primitive's Abstract on its operands must give the
// recorded results), every value's size is checked against the
// allocation limit, and no count is larger than the data that is left.
// Equations of mutation and effect primitives, and primitives that only
// exist to be transformed (NoEval), are refused.
func Decode(data []byte, be backend.Backend) (*interp.Graph, error) {
	return DecodeWith(data, be, DecodeOptions{})
}

// DecodeWith is Decode that also records the values it reads or
// substitutes integers (opts).
func DecodeWith(data []byte, be backend.Backend, opts DecodeOptions) (*interp.Graph, error) {
	r := &graphReader{Reader: Reader{data: data, be: be}}
	if opts.Tokens != nil || opts.Subst != nil {
		r.tok = &tokenState{opts: opts}
	}
	g := r.graph()
	if r.err == nil && r.off != len(data) {
		r.Failf("%d bytes after the graph", len(data)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	return g, nil
}

type graphWriter struct {
	buf        []byte
	depth      int
	omitConsts bool // the top graph's constant values are left out
}

func (w *graphWriter) uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }

func (w *graphWriter) aval(a interp.Aval) {
	w.buf = append(w.buf, byte(a.DType))
	w.uint(uint64(len(a.Shape)))
	for _, d := range a.Shape {
		w.uint(uint64(d))
	}
}

func (w *graphWriter) graph(g *interp.Graph) error {
	if w.depth > maxGraphDepth {
		return fmt.Errorf("graphs nested more than %d deep", maxGraphDepth)
	}
	if g.Released() {
		return fmt.Errorf("the graph's constants were released")
	}
	ids := make(map[*interp.Var]int, len(g.In)+len(g.Consts)+len(g.Eqns))
	def := func(v *interp.Var) { ids[v] = len(ids) }
	w.uint(uint64(len(g.In)))
	for _, v := range g.In {
		def(v)
		w.aval(v.Aval)
	}
	w.uint(uint64(len(g.Consts)))
	for i, v := range g.Consts {
		def(v)
		w.aval(v.Aval)
		c := g.ConstVals[i]
		if w.omitConsts && w.depth == 0 {
			w.buf = append(w.buf, 2)
			continue
		}
		if c == nil || !c.IsConcrete() {
			return fmt.Errorf("constant %d (%s) is not a concrete tensor (a tracer of an enclosing transform)", i, v.Aval)
		}
		w.constant(c)
	}
	w.uint(uint64(len(g.Eqns)))
	for k, e := range g.Eqns {
		p := e.Prim
		switch {
		case p.Kind == interp.Mutation:
			return fmt.Errorf("equation %d: %s writes in place (export the functionalized graph)", k, p.Name)
		case p.Effect:
			return fmt.Errorf("equation %d: %s acts outside its results (communication): such a program cannot be exported", k, p.Name)
		case p.NoEval != "":
			return fmt.Errorf("equation %d: %s cannot be evaluated: %s", k, p.Name, p.NoEval)
		}
		pw := Writer{g: w}
		pw.Prim(p, e.Params)
		if pw.err != nil {
			return fmt.Errorf("equation %d: %v", k, pw.err)
		}
		w.buf = append(w.buf, pw.buf...)
		w.uint(uint64(len(e.In)))
		for _, v := range e.In {
			id, ok := ids[v]
			if !ok {
				return fmt.Errorf("equation %d: %s reads a value defined nowhere before it", k, p.Name)
			}
			w.uint(uint64(id))
		}
		w.uint(uint64(len(e.Out)))
		for _, v := range e.Out {
			def(v)
			w.aval(v.Aval)
		}
	}
	w.uint(uint64(len(g.Out)))
	for _, v := range g.Out {
		id, ok := ids[v]
		if !ok {
			return fmt.Errorf("output of a value defined nowhere")
		}
		w.uint(uint64(id))
	}
	return nil
}

// constant appends a constant's elements: row-major (flag 0), or, for a
// strided view of a smaller buffer (a bias broadcast to a batch while
// the function was traced), that buffer with the view's offset and
// strides (flag 1), so that the file holds the small tensor.
func (w *graphWriter) constant(c *interp.Tensor) {
	arr, be := interp.ArrayOf(c)
	var host any
	if n := arr.Buf.Len(); n < arr.Size() && arr.Strides != nil && !slices.ContainsFunc(arr.Strides, func(s int) bool { return s < 0 }) {
		w.buf = append(w.buf, 1)
		w.uint(uint64(n))
		w.uint(uint64(arr.Offset))
		for _, s := range arr.Strides {
			w.uint(uint64(s))
		}
		host = be.ToHost(backend.Array{Buf: arr.Buf, Shape: []int{n}})
	} else {
		w.buf = append(w.buf, 0)
		host = be.ToHost(arr)
	}
	b := backend.HostBytes(host)
	if !nativeLE {
		b = swapped(b, c.DType().Size())
	}
	w.buf = append(w.buf, b...)
}

var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// swapped returns b with each k-byte element's bytes reversed.
func swapped(b []byte, k int) []byte {
	out := make([]byte, len(b))
	for i := 0; i+k <= len(b); i += k {
		for j := range k {
			out[i+j] = b[i+k-1-j]
		}
	}
	return out
}

type graphReader struct {
	Reader
	vars []*interp.Var
}

func (r *graphReader) aval() interp.Aval {
	d := r.DType()
	rank := r.Uint()
	if r.err != nil {
		return interp.Aval{}
	}
	if rank > maxRank {
		r.Failf("a rank of %d (at most %d)", rank, maxRank)
		return interp.Aval{}
	}
	shape := make([]int, rank)
	for i := range shape {
		x := r.Uint()
		if x > math.MaxInt {
			r.Failf("a dimension of %d", x)
			return interp.Aval{}
		}
		shape[i] = int(x)
	}
	if r.err != nil {
		return interp.Aval{}
	}
	n, err := backend.CheckedSize(shape)
	if err == nil {
		err = backend.CheckAlloc(d, n)
	}
	if err != nil {
		r.Failf("a value of type %s: %v", interp.Aval{Shape: shape, DType: d}, err)
		return interp.Aval{}
	}
	return interp.Aval{Shape: shape, DType: d}
}

func (r *graphReader) newVar(a interp.Aval) *interp.Var {
	v := &interp.Var{ID: len(r.vars), Aval: a}
	r.vars = append(r.vars, v)
	return v
}

func (r *graphReader) ref() *interp.Var {
	id := r.Uint()
	if r.err != nil {
		return nil
	}
	if id >= uint64(len(r.vars)) {
		r.Failf("a reference to value %d, of %d defined so far", id, len(r.vars))
		return nil
	}
	return r.vars[id]
}

func (r *graphReader) graph() *interp.Graph {
	g := &interp.Graph{}
	for range r.Len() {
		g.In = append(g.In, r.newVar(r.aval()))
	}
	for range r.Len() {
		a := r.aval()
		if r.err != nil {
			return nil
		}
		g.Consts = append(g.Consts, r.newVar(a))
		g.ConstVals = append(g.ConstVals, r.constant(a)) // nil: left out
		if r.err != nil {
			return nil
		}
	}
	for k := range r.Len() {
		e := r.eqn(k)
		if r.err != nil {
			return nil
		}
		g.Eqns = append(g.Eqns, e)
	}
	for range r.Len() {
		g.Out = append(g.Out, r.ref())
	}
	if r.err != nil {
		return nil
	}
	return g
}

func (r *graphReader) constant(a interp.Aval) *interp.Tensor {
	n := a.Size()
	var strides []int
	offset := 0
	switch r.byte() {
	case 0:
	case 2:
		// Left out: the loader is given it.
		if r.depth > 0 {
			r.Failf("a constant of a nested graph without its value")
		}
		return nil
	case 1:
		// A strided view of a buffer of n elements: every element it
		// reaches lies in the buffer.
		m := r.Uint()
		off := r.Uint()
		strides = make([]int, len(a.Shape))
		last := off
		for i := range strides {
			st := r.Uint()
			if r.err != nil {
				return nil
			}
			if st > uint64(math.MaxInt32) || a.Shape[i] > 0 && last > math.MaxInt64-uint64(a.Shape[i]-1)*st {
				r.Failf("a constant stride of %d", st)
				return nil
			}
			strides[i] = int(st)
			if a.Shape[i] > 0 {
				last += uint64(a.Shape[i]-1) * st
			}
		}
		if r.err != nil {
			return nil
		}
		if m > uint64(n) || n > 0 && last >= m {
			r.Failf("a strided constant of %d elements over a buffer of %d (offset %d)", n, m, off)
			return nil
		}
		n, offset = int(m), int(off)
	default:
		r.Failf("a malformed constant layout")
		return nil
	}
	if r.err != nil {
		return nil
	}
	size := n * a.DType.Size()
	if size > len(r.data)-r.off {
		r.Failf("a constant of type %s (%d bytes) with %d bytes left", a, size, len(r.data)-r.off)
		return nil
	}
	host := backend.HostSlice(a.DType, n)
	b := backend.HostBytes(host)
	copy(b, r.data[r.off:r.off+size])
	r.rawToken(r.data[r.off : r.off+size])
	r.off += size
	if !nativeLE {
		copy(b, swapped(b, a.DType.Size()))
	}
	if a.DType == backend.Bool {
		for i, x := range b {
			if x > 1 {
				r.Failf("byte %d of a bool constant is %d", i, x)
				return nil
			}
		}
	}
	return interp.NewConcrete(r.be, backend.Array{Buf: backend.FromOwnedHost(r.be, host), Shape: a.Shape, Strides: strides, Offset: offset})
}

func (r *graphReader) eqn(k int) *interp.Eqn {
	p, params := r.Prim()
	if r.err != nil {
		r.err = fmt.Errorf("equation %d: %w", k, r.err)
		return nil
	}
	name := p.Name
	e := &interp.Eqn{Prim: p, Params: params}
	for range r.Len() {
		e.In = append(e.In, r.ref())
	}
	var outs []interp.Aval
	for range r.Len() {
		outs = append(outs, r.aval())
	}
	if r.err != nil {
		return nil
	}
	if p.Abstract != nil {
		in := make([]interp.Aval, len(e.In))
		for i, v := range e.In {
			in[i] = v.Aval
		}
		want, err := safeAbstract(p, params, in)
		if err != nil {
			r.Failf("equation %d: %s does not accept its operands %s: %v", k, name, interp.AvalsKey(in), err)
			return nil
		}
		if len(want) != len(outs) {
			r.Failf("equation %d: %s gives %d results, the file records %d", k, name, len(want), len(outs))
			return nil
		}
		for i := range want {
			if !want[i].Equal(outs[i]) {
				r.Failf("equation %d: %s gives %s, the file records %s", k, name, want[i], outs[i])
				return nil
			}
		}
	}
	for _, a := range outs {
		e.Out = append(e.Out, r.newVar(a))
	}
	return e
}

// safeAbstract runs p's shape rule on values read from a file: the rule
// may trust its parameters (they were made by peel's own code when
// traced), so any panic, not only *interp.Error, is a refusal here.
func safeAbstract(p *interp.Prim, params any, in []interp.Aval) (out []interp.Aval, err error) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(*interp.Error); ok {
				err = fmt.Errorf("%s", e.Msg)
			} else {
				err = fmt.Errorf("%v", x)
			}
		}
	}()
	return p.Abstract(params, in), nil
}
