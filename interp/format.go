package interp

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/peel-ml/peel/backend"
)

// Printing limits: a tensor with more than summarizeOver elements prints
// only the first and last edgeItems entries of every long dimension.
const (
	summarizeOver = 1000
	edgeItems     = 3
)

// String formats t's elements like numpy's str: nested brackets, one row
// per line, columns right-aligned to a common width, e.g.
//
//	[[1 2 3]
//	 [4 5 6]]
//
// A rank-0 tensor prints its bare value. Floats use the shortest form with
// at most 8 significant digits ("1.5", "-0", "NaN", "+Inf", "1e-07"); bools
// print as true and false. A tensor with more than 1000 elements shows the
// first and last 3 entries of each longer dimension with "..." between
// them. A tracer has no values to print; it prints as its type, transform
// and level, such as "Traced<f64[2,3]> [vmap, level 3]". A nil tensor
// prints as "<nil>".
func (t *Tensor) String() string {
	if t == nil {
		return "<nil>"
	}
	if t.tr != nil {
		s := "Traced<" + t.TypeString() + ">"
		if l := t.tr.Level(); l != nil {
			s += " [" + l.Name() + ", level " + strconv.FormatUint(l.ID(), 10) + "]"
		}
		return s
	}
	if t.Size() == 0 {
		return "[]"
	}
	f := formatter{shape: t.shape, summarize: t.Size() > summarizeOver}
	cell := cellFormatter(t.be.ToHost(t.array()), t.dtype)
	runtime.KeepAlive(t)
	f.strides = make([]int, len(t.shape))
	s := 1
	for k := len(t.shape) - 1; k >= 0; k-- {
		f.strides[k] = s
		s *= t.shape[k]
	}
	// Format the shown cells in printing order and find the widest.
	f.visit(0, 0, func(i int) {
		c := cell(i)
		f.cells = append(f.cells, c)
		f.width = max(f.width, len(c))
	})
	var b strings.Builder
	f.b = &b
	f.write(0)
	return b.String()
}

// formatter prints the nested body of a concrete tensor.
type formatter struct {
	shape, strides []int
	summarize      bool
	// cells holds the shown elements, formatted, in printing order; next
	// is the next one to print.
	cells []string
	next  int
	width int
	b     *strings.Builder
}

// shown returns the indices printed along a dimension of size n, with -1
// marking the "..." gap.
func (f *formatter) shown(n int) []int {
	if !f.summarize || n <= 2*edgeItems {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, 0, 2*edgeItems+1)
	for i := 0; i < edgeItems; i++ {
		idx = append(idx, i)
	}
	idx = append(idx, -1)
	for i := n - edgeItems; i < n; i++ {
		idx = append(idx, i)
	}
	return idx
}

// visit calls fn with the flat index of every shown element below
// dimension dim at flat offset off.
func (f *formatter) visit(dim, off int, fn func(int)) {
	if dim == len(f.shape) {
		fn(off)
		return
	}
	for _, i := range f.shown(f.shape[dim]) {
		if i >= 0 {
			f.visit(dim+1, off+i*f.strides[dim], fn)
		}
	}
}

// write prints the sub-tensor at dimension dim, taking its cells from
// f.cells in order.
func (f *formatter) write(dim int) {
	b := f.b
	if dim == len(f.shape) {
		c := f.cells[f.next]
		f.next++
		for i := len(c); i < f.width; i++ {
			b.WriteByte(' ')
		}
		b.WriteString(c)
		return
	}
	b.WriteByte('[')
	last := dim == len(f.shape)-1
	// Rows below the first are indented past the brackets already open;
	// sub-tensors of rank r are separated by r-1 blank lines.
	sep := " "
	if !last {
		sep = strings.Repeat("\n", len(f.shape)-dim-1) + strings.Repeat(" ", dim+1)
	}
	for j, i := range f.shown(f.shape[dim]) {
		if j > 0 {
			b.WriteString(sep)
		}
		if i < 0 {
			b.WriteString("...")
			continue
		}
		f.write(dim + 1)
	}
	b.WriteByte(']')
}

// cellFormatter returns a function formatting element i of a host slice.
func cellFormatter(data any, dt DType) func(i int) string {
	switch s := data.(type) {
	case []float64:
		return func(i int) string { return strconv.FormatFloat(s[i], 'g', 8, 64) }
	case []float32:
		return func(i int) string { return strconv.FormatFloat(float64(s[i]), 'g', 8, 32) }
	case []int64:
		return func(i int) string { return strconv.FormatInt(s[i], 10) }
	case []bool:
		return func(i int) string { return strconv.FormatBool(s[i]) }
	case []int32:
		return func(i int) string { return strconv.FormatInt(int64(s[i]), 10) }
	case []uint8:
		return func(i int) string { return strconv.FormatInt(int64(s[i]), 10) }
	case []backend.F16:
		return func(i int) string { return strconv.FormatFloat(float64(s[i].Float32()), 'g', 5, 32) }
	case []backend.BF16:
		return func(i int) string { return strconv.FormatFloat(float64(s[i].Float32()), 'g', 4, 32) }
	}
	panic(Errorf("String: unsupported element type %T for dtype %v", data, dt))
}
