package graphio

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/peel-ml/peel/interp"
)

// Writer is where a Codec writes parameters.
type Writer struct {
	buf []byte
	g   *graphWriter
	err error
}

// Uint appends a non-negative integer.
func (w *Writer) Uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }

// Int appends an integer.
func (w *Writer) Int(v int) { w.buf = binary.AppendVarint(w.buf, int64(v)) }

// Bool appends a boolean.
func (w *Writer) Bool(v bool) {
	if v {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

// Float64 appends a float64, bit for bit.
func (w *Writer) Float64(v float64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(v))
}

// Text appends a string.
func (w *Writer) Text(s string) {
	w.Uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// DType appends a dtype.
func (w *Writer) DType(d interp.DType) { w.buf = append(w.buf, byte(d)) }

// Ints appends a slice of integers.
func (w *Writer) Ints(v []int) {
	w.Uint(uint64(len(v)))
	for _, x := range v {
		w.Int(x)
	}
}

// Graph appends a graph (the body of a control-flow primitive), with its
// constants.
func (w *Writer) Graph(g *interp.Graph) {
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
func (w *Writer) Prim(p *interp.Prim, params any) {
	if w.err != nil {
		return
	}
	w.Text(p.Name)
	c := codecOf(p)
	switch {
	case params == nil:
		w.buf = append(w.buf, 0)
	case c == nil:
		w.err = fmt.Errorf("%s has parameters (%s) that cannot be written into a file", p.Name, interp.FormatParams(params))
	default:
		w.buf = append(w.buf, 1)
		body := Writer{g: w.g}
		c.encode(&body, params)
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
func (w *Writer) Fail(why string) {
	if w.err == nil {
		w.err = fmt.Errorf("%s", why)
	}
}
