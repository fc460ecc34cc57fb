package graphio

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Reader is what a Codec reads parameters from. Its methods never
// panic: the first malformed value sets Err and every later read
// returns a zero value.
type Reader struct {
	data []byte
	off  int
	err  error
	be   backend.Backend
	// depth is the nesting of graphs (a loop body's loop's body).
	depth int
	// tok, when not nil, records what is read and substitutes integers
	// (DecodeWith); nested readers share it.
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

// DecodeOptions are what DecodeWith does beside decoding.
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
func (r *Reader) intToken(v int64) int64 {
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
func (r *Reader) rawToken(b []byte) {
	if t := r.tok; t != nil && t.opts.Tokens != nil && r.err == nil {
		h := fnv.New64a()
		h.Write(b)
		*t.opts.Tokens = append(*t.opts.Tokens, DecodeToken{V: h.Sum64()})
	}
}

// NewReader returns a reader of data (a file's header around an
// encoded graph).
func NewReader(data []byte) *Reader { return &Reader{data: data} }

// Backend returns the backend the loader places constants on (where the
// program runs).
func (r *Reader) Backend() backend.Backend { return r.be }

// Offset returns the number of bytes read.
func (r *Reader) Offset() int { return r.off }

// Err returns the first malformed value met, or nil.
func (r *Reader) Err() error { return r.err }

// Failf records a malformed value (a codec's own check of what it read).
func (r *Reader) Failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("byte %d: %s", r.off, fmt.Sprintf(format, args...))
	}
}

// Uint reads a non-negative integer.
func (r *Reader) Uint() uint64 {
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

func (r *Reader) uvarint() uint64 {
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
func (r *Reader) Int() int {
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
func (r *Reader) Len() int {
	v := r.uvarint()
	if v > uint64(len(r.data)-r.off) {
		r.Failf("a count of %d with %d bytes left", v, len(r.data)-r.off)
		return 0
	}
	return int(v)
}

// Bool reads a boolean.
func (r *Reader) Bool() bool {
	b := r.byte()
	if b > 1 {
		r.Failf("a boolean of %d", b)
		return false
	}
	return b == 1
}

func (r *Reader) byte() byte {
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
func (r *Reader) Float64() float64 {
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
func (r *Reader) Text() string {
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
func (r *Reader) DType() interp.DType {
	d := interp.DType(r.byte())
	if r.err == nil && !d.IsValid() {
		r.Failf("unknown dtype %d", uint8(d))
		return backend.Invalid
	}
	return d
}

// Ints reads a slice of integers.
func (r *Reader) Ints() []int {
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

// Prim reads a primitive and its parameters (Writer.Prim). The
// primitive must be registered in this program, and be one an exported
// program may hold: not a mutation, an effect or one that cannot be
// evaluated.
func (r *Reader) Prim() (*interp.Prim, any) {
	name := r.Text()
	has := r.byte()
	if r.err != nil {
		return nil, nil
	}
	p := interp.PrimByName(name)
	var c *Codec
	if p != nil {
		c = codecOf(p)
	}
	switch {
	case p == nil:
		r.Failf("unknown primitive %q (is the package that defines it linked into this program?)", name)
	case p.Kind == interp.Mutation || p.Effect || p.NoEval != "":
		r.Failf("primitive %s cannot appear in an exported program (it writes in place, communicates, or cannot be evaluated)", name)
	case has > 1:
		r.Failf("%s: a malformed parameter flag", name)
	case has == 1 && c == nil:
		r.Failf("primitive %s takes no parameters in this version of peel", name)
	}
	if r.err != nil || has == 0 {
		return p, nil
	}
	n := r.Len()
	if r.err != nil {
		return nil, nil
	}
	pr := &Reader{data: r.data[r.off : r.off+n], be: r.be, depth: r.depth, tok: r.tok}
	params := decodeParams(c, pr)
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

// decodeParams runs codec c, turning a panic (a codec that trusted its
// input) into a malformed value.
func decodeParams(c *Codec, r *Reader) (params any) {
	defer func() {
		if x := recover(); x != nil {
			r.Failf("%v", x)
			params = nil
		}
	}()
	return c.decode(r)
}

// Graph reads a graph written by Writer.Graph.
func (r *Reader) Graph() *interp.Graph {
	n := r.Len()
	if r.err != nil {
		return nil
	}
	if r.depth >= maxGraphDepth {
		r.Failf("graphs nested more than %d deep", maxGraphDepth)
		return nil
	}
	sub := &graphReader{Reader: Reader{data: r.data[r.off : r.off+n], be: r.be, depth: r.depth + 1, tok: r.tok}}
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
