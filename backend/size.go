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
// is negative or when the product of the non-zero dimensions overflows
// int: a shape with a zero dimension is refused too if its other
// dimensions could not be laid out, so the row-major strides of every
// accepted shape fit in an int.
func CheckedSize(shape []int) (int, error) {
	n, nz := 1, 1
	for i, d := range shape {
		if d < 0 {
			return 0, &SizeError{Shape: shape, Dim: i}
		}
		if d == 0 {
			n = 0
			continue
		}
		var ok bool
		if nz, ok = MulSize(nz, d); !ok {
			return 0, &SizeError{Shape: shape, Dim: -1}
		}
	}
	if n == 0 {
		return 0, nil
	}
	return nz, nil
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
