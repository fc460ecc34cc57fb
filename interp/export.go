package interp

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"
	"slices"

	"github.com/peel-ml/peel/backend"
)

// Exported programs (transforms.Export) are graphs written as bytes. The
// graph encoding lives here, beside Graph; each primitive says how its
// parameters are written with a ParamCodec, beside its other rules; the
// file around the graph (magic, version, argument paths) is package
// transforms'. The layout is documented in docs/export-format.md.

// ParamCodec writes a primitive's parameters into an exported program
// and reads them back. Encode appends params to w; Decode reads what
// Encode wrote and returns an equal value. Decode must not panic on any
// input: it reads through r, whose methods record the first malformed
// value and return zeros after it, and the loader refuses the equation
// then (and type-checks every equation it accepts with Abstract).
type ParamCodec struct {
	Encode func(w *ParamWriter, params any)
	Decode func(r *ParamReader) any
}

// ParamWriter is where a ParamCodec writes parameters.
type ParamWriter struct {
	buf []byte
	g   *graphWriter
	err error
}

// Uint appends a non-negative integer.
func (w *ParamWriter) Uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }

// Int appends an integer.
func (w *ParamWriter) Int(v int) { w.buf = binary.AppendVarint(w.buf, int64(v)) }

// Bool appends a boolean.
func (w *ParamWriter) Bool(v bool) {
	if v {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

// Float64 appends a float64, bit for bit.
func (w *ParamWriter) Float64(v float64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(v))
}

// Text appends a string.
func (w *ParamWriter) Text(s string) {
	w.Uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// DType appends a dtype.
func (w *ParamWriter) DType(d DType) { w.buf = append(w.buf, byte(d)) }

// Ints appends a slice of integers.
func (w *ParamWriter) Ints(v []int) {
	w.Uint(uint64(len(v)))
	for _, x := range v {
		w.Int(x)
	}
}

// Graph appends a graph (the body of a control-flow primitive), with its
// constants.
func (w *ParamWriter) Graph(g *Graph) {
	if w.err != nil {
		return
	}
	sub := &graphWriter{depth: w.g.depth + 1}
	if err := sub.graph(g); err != nil {
		w.err = err
		return
	}
	w.Uint(uint64(len(sub.buf)))
	w.buf = append(w.buf, sub.buf...)
}

// Prim appends a primitive and its parameters, as an equation's are
// written: for parameters that hold another primitive's (the tangent
// of a composite). It fails when the parameters are not nil and the
// primitive has no codec.
func (w *ParamWriter) Prim(p *Prim, params any) {
	if w.err != nil {
		return
	}
	w.Text(p.Name)
	switch {
	case params == nil:
		w.buf = append(w.buf, 0)
	case p.Codec == nil:
		w.err = fmt.Errorf("%s has parameters (%s) that cannot be written into a file", p.Name, FormatParams(params))
	default:
		w.buf = append(w.buf, 1)
		body := ParamWriter{g: w.g}
		p.Codec.Encode(&body, params)
		if body.err != nil {
			w.err = fmt.Errorf("%s: %v", p.Name, body.err)
			return
		}
		w.Uint(uint64(len(body.buf)))
		w.buf = append(w.buf, body.buf...)
	}
}

// Fail makes the export fail: the parameters hold something a file
// cannot (a Go function, a communicator). why says what.
func (w *ParamWriter) Fail(why string) {
	if w.err == nil {
		w.err = fmt.Errorf("%s", why)
	}
}

// ParamReader is what a ParamCodec reads parameters from. Its methods
// never panic: the first malformed value sets Err and every later read
// returns a zero value.
type ParamReader struct {
	data []byte
	off  int
	err  error
	be   backend.Backend
	// depth is the nesting of graphs (a loop body's loop's body).
	depth int
	// tok, when not nil, records what is read and substitutes integers
	// (DecodeGraphWith); nested readers share it.
	tok *tokenState
}

// DecodeToken is one value a decoder read (DecodeOptions.Tokens): an
// integer other than a count or length (a dimension, a parameter), or a
// hash of other bytes (a flag, a dtype, a name, a float, a constant's
// elements).
type DecodeToken struct {
	Int bool
	V   uint64 // the integer (as uint64 bits), or the bytes' hash
}

// DecodeOptions are what DecodeGraphWith does beside decoding.
type DecodeOptions struct {
	// Tokens, when not nil, receives the values read, in order.
	Tokens *[]DecodeToken
	// Subst replaces the integer tokens it names (by their index among
	// the integer tokens, in reading order) with its values before they
	// are used: the shapes and parameters of a program with symbolic
	// dimensions, bound (transforms.SymbolicShape).
	Subst map[int]int64
}

type tokenState struct {
	opts DecodeOptions
	ints int
}

// intToken records integer v and returns it, or its substitute.
func (r *ParamReader) intToken(v int64) int64 {
	t := r.tok
	if t == nil || r.err != nil {
		return v
	}
	k := t.ints
	t.ints++
	if t.opts.Tokens != nil {
		*t.opts.Tokens = append(*t.opts.Tokens, DecodeToken{Int: true, V: uint64(v)})
	}
	if sv, ok := t.opts.Subst[k]; ok {
		return sv
	}
	return v
}

// rawToken records bytes read that are not integers.
func (r *ParamReader) rawToken(b []byte) {
	if t := r.tok; t != nil && t.opts.Tokens != nil && r.err == nil {
		h := fnv.New64a()
		h.Write(b)
		*t.opts.Tokens = append(*t.opts.Tokens, DecodeToken{V: h.Sum64()})
	}
}

// NewParamReader returns a reader of data (a file's header around an
// encoded graph).
func NewParamReader(data []byte) *ParamReader { return &ParamReader{data: data} }

// Backend returns the backend the loader places constants on (where the
// program runs).
func (r *ParamReader) Backend() backend.Backend { return r.be }

// Offset returns the number of bytes read.
func (r *ParamReader) Offset() int { return r.off }

// Err returns the first malformed value met, or nil.
func (r *ParamReader) Err() error { return r.err }

// Failf records a malformed value (a codec's own check of what it read).
func (r *ParamReader) Failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("byte %d: %s", r.off, fmt.Sprintf(format, args...))
	}
}

// Uint reads a non-negative integer.
func (r *ParamReader) Uint() uint64 {
	v := r.uvarint()
	if r.err != nil {
		return 0
	}
	sv := r.intToken(int64(v))
	if sv < 0 {
		r.Failf("a negative substitute %d for %d", sv, v)
		return 0
	}
	return uint64(sv)
}

func (r *ParamReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.data[r.off:])
	if n <= 0 {
		r.Failf("a malformed or truncated integer")
		return 0
	}
	r.off += n
	return v
}

// Int reads an integer that fits an int.
func (r *ParamReader) Int() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.data[r.off:])
	if n <= 0 || v != int64(int(v)) {
		r.Failf("a malformed or truncated integer")
		return 0
	}
	r.off += n
	return int(r.intToken(v))
}

// Len reads a count of items each of which takes at least one byte more
// of the data, so that a count is never more than what is left to read
// (no allocation is larger than the file). Counts and lengths are the
// structure of the encoding, never substituted.
func (r *ParamReader) Len() int {
	v := r.uvarint()
	if v > uint64(len(r.data)-r.off) {
		r.Failf("a count of %d with %d bytes left", v, len(r.data)-r.off)
		return 0
	}
	return int(v)
}

// Bool reads a boolean.
func (r *ParamReader) Bool() bool {
	b := r.byte()
	if b > 1 {
		r.Failf("a boolean of %d", b)
		return false
	}
	return b == 1
}

func (r *ParamReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.data) {
		r.Failf("the data ends")
		return 0
	}
	b := r.data[r.off]
	r.rawToken(r.data[r.off : r.off+1])
	r.off++
	return b
}

// Float64 reads a float64.
func (r *ParamReader) Float64() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.data)-r.off < 8 {
		r.Failf("the data ends")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.data[r.off:]))
	r.rawToken(r.data[r.off : r.off+8])
	r.off += 8
	return v
}

// Text reads a string.
func (r *ParamReader) Text() string {
	n := r.Len()
	if r.err != nil {
		return ""
	}
	s := string(r.data[r.off : r.off+n])
	r.rawToken(r.data[r.off : r.off+n])
	r.off += n
	return s
}

// DType reads a dtype, which must be valid.
func (r *ParamReader) DType() DType {
	d := DType(r.byte())
	if r.err == nil && !d.IsValid() {
		r.Failf("unknown dtype %d", uint8(d))
		return backend.Invalid
	}
	return d
}

// Ints reads a slice of integers.
func (r *ParamReader) Ints() []int {
	n := r.Len()
	if r.err != nil {
		return nil
	}
	v := make([]int, n)
	for i := range v {
		v[i] = r.Int()
	}
	return v
}

// Prim reads a primitive and its parameters (ParamWriter.Prim). The
// primitive must be registered in this program, and be one an exported
// program may hold: not a mutation, an effect or one that cannot be
// evaluated.
func (r *ParamReader) Prim() (*Prim, any) {
	name := r.Text()
	has := r.byte()
	if r.err != nil {
		return nil, nil
	}
	p := PrimByName(name)
	switch {
	case p == nil:
		r.Failf("unknown primitive %q (is the package that defines it linked into this program?)", name)
	case p.Kind == Mutation || p.Effect || p.NoEval != "":
		r.Failf("primitive %s cannot appear in an exported program (it writes in place, communicates, or cannot be evaluated)", name)
	case has > 1:
		r.Failf("%s: a malformed parameter flag", name)
	case has == 1 && p.Codec == nil:
		r.Failf("primitive %s takes no parameters in this version of peel", name)
	}
	if r.err != nil || has == 0 {
		return p, nil
	}
	n := r.Len()
	if r.err != nil {
		return nil, nil
	}
	pr := &ParamReader{data: r.data[r.off : r.off+n], be: r.be, depth: r.depth, tok: r.tok}
	params := decodeParams(p, pr)
	if pr.err == nil && pr.off != n {
		pr.Failf("%d bytes after the parameters", n-pr.off)
	}
	if pr.err != nil {
		r.Failf("%s: parameters: %v", name, pr.err)
		return nil, nil
	}
	r.off += n
	return p, params
}

// Graph reads a graph written by ParamWriter.Graph.
func (r *ParamReader) Graph() *Graph {
	n := r.Len()
	if r.err != nil {
		return nil
	}
	if r.depth >= maxGraphDepth {
		r.Failf("graphs nested more than %d deep", maxGraphDepth)
		return nil
	}
	sub := &graphReader{ParamReader: ParamReader{data: r.data[r.off : r.off+n], be: r.be, depth: r.depth + 1, tok: r.tok}}
	g := sub.graph()
	if sub.err == nil && sub.off != n {
		sub.Failf("%d bytes after the graph", n-sub.off)
	}
	if sub.err != nil {
		r.Failf("in a graph: %v", sub.err)
		return nil
	}
	r.off += n
	return g
}

// maxGraphDepth bounds the nesting of graphs in a file (and so the
// loader's recursion).
const maxGraphDepth = 32

// maxRank bounds the rank of a value in a file.
const maxRank = 64

// StructCodec returns the codec of a parameter struct T (a value, not a
// pointer) of exported fields, each an int, bool, float64, string or
// dtype, a slice or array of them, or such a struct. It panics if T has
// another field: the codec is made in package initialization, beside the
// primitive.
func StructCodec[T any]() *ParamCodec {
	t := reflect.TypeFor[T]()
	checkCodecType(t, t.String())
	return &ParamCodec{
		Encode: func(w *ParamWriter, params any) { encodeValue(w, reflect.ValueOf(params)) },
		Decode: func(r *ParamReader) any {
			v := reflect.New(t).Elem()
			decodeValue(r, v)
			return v.Interface()
		},
	}
}

var dtypeType = reflect.TypeFor[DType]()

func checkCodecType(t reflect.Type, where string) {
	if t == dtypeType {
		return
	}
	switch t.Kind() {
	case reflect.Int, reflect.Bool, reflect.Float64, reflect.String:
	case reflect.Slice, reflect.Array:
		checkCodecType(t.Elem(), where+"[]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				panic("interp.StructCodec: " + where + "." + f.Name + " is unexported")
			}
			checkCodecType(f.Type, where+"."+f.Name)
		}
	default:
		panic("interp.StructCodec: " + where + " is a " + t.String() + ", which has no encoding")
	}
}

func encodeValue(w *ParamWriter, v reflect.Value) {
	if v.Type() == dtypeType {
		w.DType(DType(v.Uint()))
		return
	}
	switch v.Kind() {
	case reflect.Int:
		w.Int(int(v.Int()))
	case reflect.Bool:
		w.Bool(v.Bool())
	case reflect.Float64:
		w.Float64(v.Float())
	case reflect.String:
		w.Text(v.String())
	case reflect.Slice:
		// nil and empty differ (an absent option and an empty list).
		if v.IsNil() {
			w.Uint(0)
			return
		}
		w.Uint(uint64(v.Len()) + 1)
		for i := range v.Len() {
			encodeValue(w, v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			encodeValue(w, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			encodeValue(w, v.Field(i))
		}
	}
}

func decodeValue(r *ParamReader, v reflect.Value) {
	if r.err != nil {
		return
	}
	if v.Type() == dtypeType {
		v.SetUint(uint64(r.DType()))
		return
	}
	switch v.Kind() {
	case reflect.Int:
		v.SetInt(int64(r.Int()))
	case reflect.Bool:
		v.SetBool(r.Bool())
	case reflect.Float64:
		v.SetFloat(r.Float64())
	case reflect.String:
		v.SetString(r.Text())
	case reflect.Slice:
		n := r.Uint()
		if r.err != nil || n == 0 {
			return
		}
		if n-1 > uint64(len(r.data)-r.off) {
			r.Failf("a count of %d with %d bytes left", n-1, len(r.data)-r.off)
			return
		}
		s := reflect.MakeSlice(v.Type(), int(n-1), int(n-1))
		for i := range s.Len() {
			decodeValue(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			decodeValue(r, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			decodeValue(r, v.Field(i))
		}
	}
}

// EncodeGraph returns g in the exported-program encoding: its inputs'
// and constants' types, each constant's bytes (unless omitConsts: then
// its constants' values are left out, and the loader is given them;
// nested graphs always hold theirs), its equations and its outputs. It
// returns an error naming the equation when a primitive's parameters
// cannot be written (it has parameters and no ParamCodec, or the codec
// refuses them), or when g holds a mutation, an effect or a tracer
// constant.
func EncodeGraph(g *Graph, omitConsts bool) ([]byte, error) {
	w := &graphWriter{omitConsts: omitConsts}
	if err := w.graph(g); err != nil {
		return nil, err
	}
	return w.buf, nil
}

// DecodeGraph reads a graph EncodeGraph wrote, placing its constants on
// be; a constant the encoding left out is nil in ConstVals. It never
// panics: a malformed or hostile
// encoding is an error that says where it is wrong. Every equation is
// type-checked (its primitive's Abstract on its operands must give the
// recorded results), every value's size is checked against the
// allocation limit, and no count is larger than the data that is left.
// Equations of mutation and effect primitives, and primitives that only
// exist to be transformed (NoEval), are refused.
func DecodeGraph(data []byte, be backend.Backend) (*Graph, error) {
	return DecodeGraphWith(data, be, DecodeOptions{})
}

// DecodeGraphWith is DecodeGraph that also records the values it reads
// or substitutes integers (opts).
func DecodeGraphWith(data []byte, be backend.Backend, opts DecodeOptions) (*Graph, error) {
	r := &graphReader{ParamReader: ParamReader{data: data, be: be}}
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

func (w *graphWriter) aval(a Aval) {
	w.buf = append(w.buf, byte(a.DType))
	w.uint(uint64(len(a.Shape)))
	for _, d := range a.Shape {
		w.uint(uint64(d))
	}
}

func (w *graphWriter) graph(g *Graph) error {
	if w.depth > maxGraphDepth {
		return fmt.Errorf("graphs nested more than %d deep", maxGraphDepth)
	}
	if g.released {
		return fmt.Errorf("the graph's constants were released")
	}
	ids := make(map[*Var]int, len(g.In)+len(g.Consts)+len(g.Eqns))
	def := func(v *Var) { ids[v] = len(ids) }
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
		case p.Kind == Mutation:
			return fmt.Errorf("equation %d: %s writes in place (export the functionalized graph)", k, p.Name)
		case p.Effect:
			return fmt.Errorf("equation %d: %s acts outside its results (communication): such a program cannot be exported", k, p.Name)
		case p.NoEval != "":
			return fmt.Errorf("equation %d: %s cannot be evaluated: %s", k, p.Name, p.NoEval)
		}
		pw := ParamWriter{g: w}
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
func (w *graphWriter) constant(c *Tensor) {
	arr, be := ArrayOf(c)
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
	ParamReader
	vars []*Var
}

func (r *graphReader) aval() Aval {
	d := r.DType()
	rank := r.Uint()
	if r.err != nil {
		return Aval{}
	}
	if rank > maxRank {
		r.Failf("a rank of %d (at most %d)", rank, maxRank)
		return Aval{}
	}
	shape := make([]int, rank)
	for i := range shape {
		x := r.Uint()
		if x > math.MaxInt {
			r.Failf("a dimension of %d", x)
			return Aval{}
		}
		shape[i] = int(x)
	}
	if r.err != nil {
		return Aval{}
	}
	n, err := backend.CheckedSize(shape)
	if err == nil {
		err = backend.CheckAlloc(d, n)
	}
	if err != nil {
		r.Failf("a value of type %s: %v", Aval{Shape: shape, DType: d}, err)
		return Aval{}
	}
	return Aval{Shape: shape, DType: d}
}

func (r *graphReader) newVar(a Aval) *Var {
	v := &Var{ID: len(r.vars), Aval: a}
	r.vars = append(r.vars, v)
	return v
}

func (r *graphReader) ref() *Var {
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

func (r *graphReader) graph() *Graph {
	g := &Graph{}
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

func (r *graphReader) constant(a Aval) *Tensor {
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
	return NewConcrete(r.be, backend.Array{Buf: backend.FromOwnedHost(r.be, host), Shape: a.Shape, Strides: strides, Offset: offset})
}

func (r *graphReader) eqn(k int) *Eqn {
	p, params := r.Prim()
	if r.err != nil {
		r.err = fmt.Errorf("equation %d: %w", k, r.err)
		return nil
	}
	name := p.Name
	e := &Eqn{Prim: p, Params: params}
	for range r.Len() {
		e.In = append(e.In, r.ref())
	}
	var outs []Aval
	for range r.Len() {
		outs = append(outs, r.aval())
	}
	if r.err != nil {
		return nil
	}
	if p.Abstract != nil {
		in := make([]Aval, len(e.In))
		for i, v := range e.In {
			in[i] = v.Aval
		}
		want, err := safeAbstract(p, params, in)
		if err != nil {
			r.Failf("equation %d: %s does not accept its operands %s: %v", k, name, AvalsKey(in), err)
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

// decodeParams runs p's codec, turning a panic (a codec that trusted its
// input) into a malformed value.
func decodeParams(p *Prim, r *ParamReader) (params any) {
	defer func() {
		if x := recover(); x != nil {
			r.Failf("%v", x)
			params = nil
		}
	}()
	return p.Codec.Decode(r)
}

// safeAbstract runs p's shape rule on values read from a file: the rule
// may trust its parameters (they were made by peel's own code when
// traced), so any panic, not only *Error, is a refusal here.
func safeAbstract(p *Prim, params any, in []Aval) (out []Aval, err error) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(*Error); ok {
				err = fmt.Errorf("%s", e.Msg)
			} else {
				err = fmt.Errorf("%v", x)
			}
		}
	}()
	return p.Abstract(params, in), nil
}
