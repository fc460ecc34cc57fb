package interp

import "sync"

// Named axes. A transform that binds an axis name (Vmap with an axis
// name, a device of ShardMap) pushes an AxisFrame for the goroutine that
// runs the function; collectives over that name (package dist) look it
// up to find the axis's size and who answers them: a batching level, or
// a device's communicator. Go has no goroutine-local storage, so the
// frames are keyed by the goroutine's id (goid), as body traces are; only
// the collectives read them, so no other primitive pays for them.

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
