package interp

import (
	"slices"
	"sync"
)

// Named axes. A transform that binds an axis name records an AxisFrame
// (the name, its size, the index, who answers collectives over it) in
// two places: on its level (Level.BindAxes: a named Vmap's batching
// level, the trace of a ShardMap body), and for the goroutine that runs
// the function (PushAxis). A collective over a name (package dist, and
// the collectives' own rules) resolves it from its operands' levels
// first (LookupAxesOf): the levels of their tracers and of the values
// those are made of (Nested), innermost first. So a collective in a
// goroutine the user starts inside Vmap(f, AxisName("i")) finds "i"
// through its operand, as every other primitive finds its level. Only a
// name no operand's level binds falls back to the goroutine's frames: a
// value that does not vary along the axis (a constant, the cotangent of
// a reduction over it in a backward pass), AxisIndex and AxisSize (no
// operand), and the devices of dist's meshes, which evaluate collectives
// on concrete values. Go has no goroutine-local storage, so those frames
// are keyed by the goroutine's id (goid), as body traces are; only the
// collectives read them, so no other primitive pays for them.

// AxisFrame is one binding of an axis name.
type AxisFrame struct {
	// Name is the axis name ("batch", "data").
	Name string
	// Size is the number of lanes or devices along the axis.
	Size int
	// Level is the batching level that maps the axis, or nil for a
	// device axis.
	Level *Level
	// Device is what answers the collectives of a device axis (the
	// device's communicator and rank; package dist's), or nil.
	Device any
	// Index is the axis index as the function sees it (AxisIndex): a
	// batched iota of Level for a named Vmap, a concrete scalar on a
	// device, an input of the trace while ShardMap traces the function.
	Index *Tensor
}

var axisFrames sync.Map // goroutine id → *[]AxisFrame, innermost last

// Nested is implemented by tracers made of values of lower levels (a
// batched value's physical value, a forward-mode tracer's primal and
// tangent, a functionalized box's value): LookupAxesOf walks them to find
// the axis names an operand's levels bind.
type Nested interface {
	// Nested returns the values the tracer is made of (nil entries are
	// skipped).
	Nested() []*Tensor
}

// BindAxes records frames as the axis names l binds (a named Vmap's
// level; the level of a ShardMap body's trace), for collectives whose
// operands are values of l, or are made of them, to find in any
// goroutine. It returns l. A later call replaces the frames.
func (l *Level) BindAxes(frames ...AxisFrame) *Level {
	fs := append([]AxisFrame(nil), frames...)
	l.axes.Store(&fs)
	return l
}

// Axes returns the frames l binds (BindAxes), or nil.
func (l *Level) Axes() []AxisFrame {
	if fs := l.axes.Load(); fs != nil {
		return *fs
	}
	return nil
}

// LookupAxesOf returns the innermost binding of each name among the
// levels of xs: their tracers' levels and the levels of the values those
// are made of (Nested), the most deeply nested (highest ID) first. A name
// no such level binds is looked up among the calling goroutine's frames
// (PushAxis). missing is the first name bound nowhere.
func LookupAxesOf(xs []*Tensor, names ...string) (frames []AxisFrame, missing string) {
	if !slices.ContainsFunc(xs, func(x *Tensor) bool { return x != nil && x.tr != nil }) {
		// Concrete operands (a mesh device's) have no levels to walk.
		return LookupAxes(names...)
	}
	frames = make([]AxisFrame, len(names))
	found := make([]uint64, len(names)) // the ID of the level found; 0: none
	eachLevel(xs, func(l *Level) {
		fs := l.Axes()
		for k, name := range names {
			if found[k] >= l.id {
				continue
			}
			for i := len(fs) - 1; i >= 0; i-- {
				if fs[i].Name == name {
					frames[k], found[k] = fs[i], l.id
					break
				}
			}
		}
	})
	var rest []string
	var at []int
	for k, name := range names {
		if found[k] == 0 {
			rest = append(rest, name)
			at = append(at, k)
		}
	}
	if len(rest) == 0 {
		return frames, ""
	}
	gs, missing := LookupAxes(rest...)
	if missing != "" {
		return nil, missing
	}
	for i, k := range at {
		frames[k] = gs[i]
	}
	return frames, ""
}

// AxesOf returns the names bound by the levels of xs (as LookupAxesOf
// walks them) and then the calling goroutine's, without repeats: the
// names an error says are bound here.
func AxesOf(xs []*Tensor) []string {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	eachLevel(xs, func(l *Level) {
		for _, f := range l.Axes() {
			add(f.Name)
		}
	})
	for _, n := range BoundAxes() {
		add(n)
	}
	return names
}

// eachLevel calls visit with the level of each tracer among xs and among
// the values those are made of (Nested), depth first; a level may be
// visited more than once.
func eachLevel(xs []*Tensor, visit func(*Level)) {
	var seen []*Tensor
	var walk func(t *Tensor)
	walk = func(t *Tensor) {
		if t == nil || t.tr == nil || slices.Contains(seen, t) {
			return
		}
		seen = append(seen, t)
		visit(t.tr.Level())
		if n, ok := t.tr.(Nested); ok {
			for _, v := range n.Nested() {
				walk(v)
			}
		}
	}
	for _, x := range xs {
		walk(x)
	}
}

// AxesHere returns a copy of the calling goroutine's frames (PushAxis),
// outermost first: what a goroutine started here needs to push
// (PushAxis) to see the same names.
func AxesHere() []AxisFrame {
	v, ok := axisFrames.Load(goid())
	if !ok {
		return nil
	}
	return append([]AxisFrame(nil), *v.(*[]AxisFrame)...)
}

// PushAxis binds the frames' names for the calling goroutine until the
// returned function is called (in the reverse order of the pushes). An
// inner binding of a name shadows an outer one. Reading the goroutine's
// id costs a traceback (microseconds), so bind all of a transform's
// names with one call.
func PushAxis(frames ...AxisFrame) (pop func()) {
	g := goid()
	v, _ := axisFrames.LoadOrStore(g, new([]AxisFrame))
	fs := v.(*[]AxisFrame)
	*fs = append(*fs, frames...)
	return func() {
		*fs = (*fs)[:len(*fs)-len(frames)]
		if len(*fs) == 0 {
			axisFrames.Delete(g)
		}
	}
}

// LookupAxis returns the calling goroutine's innermost binding of name.
func LookupAxis(name string) (AxisFrame, bool) {
	fs, missing := LookupAxes(name)
	if missing != "" {
		return AxisFrame{}, false
	}
	return fs[0], true
}

// LookupAxes returns the calling goroutine's innermost binding of each
// name (one reading of the goroutine's id for all), or the first name
// that is not bound.
func LookupAxes(names ...string) (frames []AxisFrame, missing string) {
	v, ok := axisFrames.Load(goid())
	if !ok {
		if len(names) == 0 {
			return nil, ""
		}
		return nil, names[0]
	}
	fs := *v.(*[]AxisFrame)
	frames = make([]AxisFrame, len(names))
outer:
	for k, name := range names {
		for i := len(fs) - 1; i >= 0; i-- {
			if fs[i].Name == name {
				frames[k] = fs[i]
				continue outer
			}
		}
		return nil, name
	}
	return frames, ""
}

// BoundAxes returns the names the calling goroutine binds, outermost
// first (for error messages).
func BoundAxes() []string {
	v, ok := axisFrames.Load(goid())
	if !ok {
		return nil
	}
	var names []string
	for _, f := range *v.(*[]AxisFrame) {
		names = append(names, f.Name)
	}
	return names
}
