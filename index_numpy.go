package peel

import (
	"math"
	"slices"

	"github.com/peel-ml/peel/interp"
)

// Open is an omitted bound of a Span: S(Open, 5) is Python's :5 and
// S(Open, Open, -1) is ::-1.
const Open = math.MinInt

// Span is a slice of one axis in At's index, Python's start:stop:step;
// S makes one.
type Span struct{ Start, Stop, Step int }

// S returns the Span of Python's slice with the given bounds: S() is :,
// S(a) is a:, S(a, b) is a:b, S(a, b, c) is a:b:c; Open stands for an
// omitted bound. It panics with *Error when given more than three
// bounds or a step of 0.
func S(bounds ...int) Span {
	s := Span{Open, Open, 1}
	switch len(bounds) {
	case 3:
		s.Step = bounds[2]
		if s.Step == Open {
			s.Step = 1
		}
		fallthrough
	case 2:
		s.Stop = bounds[1]
		fallthrough
	case 1:
		s.Start = bounds[0]
	case 0:
	default:
		errorf("peel.S", "%d bounds: a slice has start, stop and step", len(bounds))
	}
	if s.Step == 0 {
		errorf("peel.S", "the step is 0")
	}
	return s
}

type newAxis struct{}

type ellipsis struct{}

// NewAxis in At's index inserts an axis of size 1 (NumPy's None).
var NewAxis = newAxis{}

// Ellipsis in At's index stands for as many full axes as the index does
// not name (NumPy's ...).
var Ellipsis = ellipsis{}

// At returns the part of x that a NumPy basic index spells:
// At(x, 1, S(), S(Open, Open, -1), NewAxis, Ellipsis) is x[1, :, ::-1,
// None, ...]. Each item is an int (one element of an axis, which the
// result drops; negative counts from the end), a Span (S: elements
// start, start+step, … before stop, with NumPy's defaults and clamping
// of the bounds; a negative step walks the axis backwards), NewAxis, or
// Ellipsis (at most one); axes the index does not reach are taken
// whole. The result is a view of x, as NumPy's, except where a step is
// negative: that axis is reversed first (a copy, as Flip makes). It is
// Select, Slice, Flip and Reshape composed, so gradients,
// batching and every other transform treat it as those ops. It panics
// with *Error when x is nil, an item is of another type, the index names
// more axes than x has, an int is out of range, or there are two
// ellipses.
func At(x *Tensor, index ...any) *Tensor {
	const op = "peel.At"
	defer interp.Annotate(op)
	checkTensor(op, x)
	shape := x.Shape()
	named, ell := 0, -1
	for k, it := range index {
		switch it.(type) {
		case int, Span:
			named++
		case newAxis:
		case ellipsis:
			if ell >= 0 {
				errorf(op, "two ellipses in the index (items %d and %d)", ell, k)
			}
			ell = k
		default:
			errorf(op, "index item %d is a %T: want an int, a Span (peel.S), peel.NewAxis or peel.Ellipsis", k, it)
		}
	}
	if named > len(shape) {
		errorf(op, "the index names %d axes of %s, which has %d", named, x.TypeString(), len(shape))
	}
	// The items with the ellipsis expanded and the axes after the last
	// one taken whole.
	items := make([]any, 0, len(index)+len(shape)-named)
	for k, it := range index {
		if k == ell {
			for range len(shape) - named {
				items = append(items, S())
			}
			continue
		}
		items = append(items, it)
	}
	if ell < 0 {
		for range len(shape) - named {
			items = append(items, S())
		}
	}
	y := x
	var selects [][2]int // axis, index, in ascending axis order
	var out []int        // the result's shape
	a := 0
	for _, it := range items {
		switch v := it.(type) {
		case int:
			n := shape[a]
			i := v
			if i < 0 {
				i += n
			}
			if i < 0 || i >= n {
				errorf(op, "index %d is out of range for axis %d of size %d", v, a, n)
			}
			selects = append(selects, [2]int{a, i})
			a++
		case Span:
			var m int
			y, m = spanAxis(y, a, v)
			out = append(out, m)
			a++
		case newAxis:
			out = append(out, 1)
		}
	}
	for k := len(selects) - 1; k >= 0; k-- {
		y = Select(y, selects[k][0], selects[k][1])
	}
	if !slices.Equal(y.Shape(), out) {
		y = Reshape(y, out...)
	}
	return y
}

// spanAxis applies span s to axis a of y with NumPy's rules and returns
// the view and the axis's new length.
func spanAxis(y *Tensor, a int, s Span) (*Tensor, int) {
	n := y.Shape()[a]
	bound := func(v, def, lo, hi int) int {
		switch {
		case v == Open:
			return def
		case v < 0:
			v += n
		}
		return min(max(v, lo), hi)
	}
	if s.Step > 0 {
		start, stop := bound(s.Start, 0, 0, n), bound(s.Stop, n, 0, n)
		if stop <= start {
			return Slice(y, a, 0, 0, 1), 0
		}
		return Slice(y, a, start, stop, s.Step), (stop - start + s.Step - 1) / s.Step
	}
	// Backwards: elements start, start+step, … above stop; -1 is before
	// the first element.
	start, stop := bound(s.Start, n-1, -1, n-1), bound(s.Stop, -1, -1, n-1)
	if start <= stop {
		return Slice(y, a, 0, 0, 1), 0
	}
	step := -s.Step
	m := (start - stop + step - 1) / step
	// In the flipped axis, element i is n-1-i.
	f := n - 1 - start
	return Slice(Flip(y, a), a, f, f+(m-1)*step+1, step), m
}
