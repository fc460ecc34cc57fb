package backend

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Checked sizes. Every shape peel makes passes CheckedSize (the array
// API's constructors and every primitive's shape rule call it), so code
// holding a shape may use ShapeSize and ContiguousStrides without
// overflow checks.

// MulSize returns a*b for sizes a, b ≥ 0 and reports whether the product
// fits in an int. It is false for a negative operand.
func MulSize(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul(uint(a), uint(b))
	if hi != 0 || lo > math.MaxInt {
		return 0, false
	}
	return int(lo), true
}

// AddSize returns a+b and reports whether the sum fits in an int. The
// operands may have any sign (a negative padding, a crop).
func AddSize(a, b int) (int, bool) {
	s := a + b
	// Signed overflow happened iff both operands have the sign the sum
	// lacks.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, false
	}
	return s, true
}

// SizeError reports a shape whose number of elements cannot be
// represented: a negative dimension, or dimensions whose product
// overflows int.
type SizeError struct {
	// Shape is the offending shape.
	Shape []int
	// Dim is the index of the first negative dimension, or -1 when the
	// dimensions are non-negative and their product overflows.
	Dim int
}

// Error says which dimension is negative, or that the shape is too
// large.
func (e *SizeError) Error() string {
	if e.Dim >= 0 {
		return "negative dimension " + strconv.Itoa(e.Shape[e.Dim]) + " in shape " + FormatShape(e.Shape)
	}
	return "shape " + FormatShape(e.Shape) + " is too large: its number of elements overflows int"
}

// CheckedSize returns the number of elements of shape, the product of
// its dimensions (1 for rank 0). It returns a *SizeError when a dimension
// is negative or when that product overflows int. A shape with a zero
// dimension has no elements and is accepted whatever its other
// dimensions are, as torch and numpy accept it.
//
// What code holding an accepted shape may assume: every product of
// dimensions that includes a zero dimension is 0 (int arithmetic wraps
// modulo 2^64, and 0 times anything is 0 there), and every product of the
// dimensions of a shape with elements fits in an int. A product of some
// of the dimensions of an empty shape that leaves out its zero
// dimensions (an outer·inner split, a stride) may overflow and wrap, so
// code that loops over such a product must first return when the shape
// has no elements; no element of an empty shape is ever addressed.
func CheckedSize(shape []int) (int, error) {
	n, empty, over := 1, false, false
	for i, d := range shape {
		switch {
		case d < 0:
			return 0, &SizeError{Shape: shape, Dim: i}
		case d == 0:
			empty = true
		case !over:
			var ok bool
			n, ok = MulSize(n, d)
			over = !ok
		}
	}
	switch {
	case empty:
		return 0, nil
	case over:
		return 0, &SizeError{Shape: shape, Dim: -1}
	}
	return n, nil
}

// FormatShape formats shape as "[2 3]", as fmt's %v does.
func FormatShape(shape []int) string { return formatDims(shape, ' ') }

// FormatShapeCompact formats shape as "[2,3]", the form type strings use
// (f64[2,3]).
func FormatShapeCompact(shape []int) string { return formatDims(shape, ',') }

// formatDims formats shape's dimensions in brackets, separated by sep.
func formatDims(shape []int, sep byte) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range shape {
		if i > 0 {
			b.WriteByte(sep)
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// formatType formats a dtype and shape as "f64[2,3]", as peel prints
// tensor types.
func formatType(dt DType, shape []int) string {
	return dt.String() + formatDims(shape, ',')
}
