package dist

import (
	"fmt"
	"slices"
	"strings"
)

// Spec says how an array is laid out over a mesh, JAX's PartitionSpec:
// entry k names the mesh axes that array axis k is split over (none:
// the axis is whole on every device); array axes past the entries are
// whole. An array whose spec names no mesh axis at all is replicated: every
// device holds all of it. Make one with P.
type Spec struct {
	dims [][]string
}

// P returns the Spec of its entries, one per leading array axis: a mesh
// axis name (the array axis is split into that many blocks, block i on
// the devices at coordinate i), nil (not split), or a []string of names
// (split over their product, the first name outermost). P() is
// replicated. P panics with *peel.Error for an entry of another type.
//
//	dist.P("data", nil)   // rows split over "data", columns whole
//	dist.P(nil, "model")  // columns split over "model"
//	dist.P()              // every device holds the whole array
func P(entries ...any) Spec {
	s := Spec{dims: make([][]string, len(entries))}
	for i, e := range entries {
		switch v := e.(type) {
		case nil:
		case string:
			s.dims[i] = []string{v}
		case []string:
			s.dims[i] = slices.Clone(v)
		default:
			meshErrorf("dist.P", "entry %d is a %T: give a mesh axis name, nil or a []string", i, e)
		}
	}
	return s
}

// Dims returns the mesh axes each leading array axis is split over.
func (s Spec) Dims() [][]string {
	out := make([][]string, len(s.dims))
	for i, d := range s.dims {
		out[i] = slices.Clone(d)
	}
	return out
}

func (s Spec) String() string {
	parts := make([]string, len(s.dims))
	for i, d := range s.dims {
		switch len(d) {
		case 0:
			parts[i] = "nil"
		case 1:
			parts[i] = fmt.Sprintf("%q", d[0])
		default:
			parts[i] = fmt.Sprintf("%q", d)
		}
	}
	return "P(" + strings.Join(parts, ", ") + ")"
}

// Layout is a Spec checked against a mesh and an array shape: for each
// array axis, the mesh axes it is split over and its number of blocks.
type Layout struct {
	Spec   Spec
	Shape  []int   // the whole array's shape
	Splits [][]int // per array axis, the indices of its mesh axes
	Blocks []int   // per array axis, its number of blocks
}

// Check returns s's layout for an array of the shape on mesh m. It
// panics with *peel.Error naming op and what (the argument or result
// leaf) when the spec has more entries than the array has axes, names a
// mesh axis m does not have or one axis twice, or splits an array axis
// that its blocks do not divide.
func (s Spec) Check(op, what string, m *Mesh, shape []int) Layout {
	if len(s.dims) > len(shape) {
		meshErrorf(op, "%s: the spec %v has %d entries, but %s has only %d axes", what, s, len(s.dims), what, len(shape))
	}
	l := Layout{Spec: s, Shape: slices.Clone(shape), Splits: make([][]int, len(shape)), Blocks: make([]int, len(shape))}
	used := map[string]bool{}
	for k := range shape {
		l.Blocks[k] = 1
		if k >= len(s.dims) {
			continue
		}
		for _, name := range s.dims[k] {
			i := slices.IndexFunc(m.axes, func(a AxisSpec) bool { return a.Name == name })
			if i < 0 {
				meshErrorf(op, "%s: the spec %v names mesh axis %q, which %v does not have", what, s, name, m)
			}
			if used[name] {
				meshErrorf(op, "%s: the spec %v names mesh axis %q twice", what, s, name)
			}
			used[name] = true
			l.Splits[k] = append(l.Splits[k], i)
			l.Blocks[k] *= m.axes[i].Size
		}
		if shape[k]%l.Blocks[k] != 0 {
			meshErrorf(op, "%s: array axis %d of size %d does not split into %d blocks (%v over %v)", what, k, shape[k], l.Blocks[k], s, m)
		}
	}
	return l
}

// ShardShape returns the shape of one device's block.
func (l Layout) ShardShape() []int {
	out := make([]int, len(l.Shape))
	for k, n := range l.Shape {
		out[k] = n / l.Blocks[k]
	}
	return out
}

// Block returns, for the device at coordinates c, the index of its block
// along each array axis.
func (l Layout) Block(c []int, m *Mesh) []int {
	b := make([]int, len(l.Shape))
	for k, axes := range l.Splits {
		for _, i := range axes {
			b[k] = b[k]*m.axes[i].Size + c[i]
		}
	}
	return b
}

// Replicas returns the number of devices that hold each block: the
// product of the sizes of the mesh axes the layout does not split over.
func (l Layout) Replicas(m *Mesh) int {
	n := m.Size()
	for _, b := range l.Blocks {
		n /= b
	}
	return n
}

// Primary reports whether the device at coordinates c is the first of
// the devices that hold its block (coordinate 0 along every mesh axis
// the layout does not split over): the copy a replicated result is read
// from.
func (l Layout) Primary(c []int) bool {
	split := map[int]bool{}
	for _, axes := range l.Splits {
		for _, i := range axes {
			split[i] = true
		}
	}
	for i, v := range c {
		if !split[i] && v != 0 {
			return false
		}
	}
	return true
}

// Grow returns the layout of the whole array whose blocks, under s on
// mesh m, have the shape shard (a ShardMap result: each device computes
// its block). It panics as Check does.
func (s Spec) Grow(op, what string, m *Mesh, shard []int) Layout {
	whole := slices.Clone(shard)
	if len(s.dims) > len(shard) {
		meshErrorf(op, "%s: the spec %v has %d entries, but %s has only %d axes", what, s, len(s.dims), what, len(shard))
	}
	for k, names := range s.dims {
		for _, name := range names {
			whole[k] *= max(m.AxisSize(name), 1)
		}
	}
	return s.Check(op, what, m, whole)
}
