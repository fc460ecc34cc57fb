package dist

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Collectives over named axes. Each is applied by every lane of a Vmap
// with transforms.AxisName, or every device of a ShardMap, to its own
// value; see the package comment for what each lane or device gets. They
// panic with *peel.Error naming the op when an axis name is not bound by
// an enclosing Vmap or ShardMap (the error lists the names that are), or
// when the operand does not fit (a dimension that does not split into
// the axis's size, a Ppermute that is not a permutation).

// GatherOption configures AllGather and PsumScatter.
type GatherOption func(*gatherConfig)

type gatherConfig struct {
	dim   int
	tiled bool
}

// OnAxis sets the array axis AllGather stacks at (a new axis; with
// Tiled, the axis the pieces are concatenated along) and PsumScatter
// scatters over (JAX's axis and scatter_dimension). The default is 0; a
// negative axis counts from the end.
func OnAxis(k int) GatherOption { return func(c *gatherConfig) { c.dim = k } }

// Tiled makes AllGather concatenate the pieces along the axis instead of
// stacking them on a new one, and PsumScatter split the axis into blocks
// instead of removing an axis of the axis's size (JAX's tiled=True). By
// default the pieces are stacked.
func Tiled() GatherOption { return func(c *gatherConfig) { c.tiled = true } }

func gatherOptions(opts []GatherOption) gatherConfig {
	var c gatherConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// frame returns the binding of name for a collective on x (from x's
// levels, else the calling goroutine's; op's annotation names op in the
// error when there is none). x nil: the goroutine's (AxisIndex).
func frame(op, name string, x *peel.Tensor) interp.AxisFrame {
	if x == nil {
		return prims.LookupAxis(name)
	}
	return prims.LookupAxesOf([]*peel.Tensor{x}, name)[0]
}

func checkX(op string, x *peel.Tensor) {
	if x == nil {
		interp.Panicf("the operand is nil")
	}
}

// reduceParams returns the parameters of a reduction of x over names
// and the names' bindings.
func reduceParams(op string, x *peel.Tensor, names []string) (prims.CollectiveParams, []interp.AxisFrame) {
	if len(names) == 0 {
		interp.Panicf("no axis name")
	}
	p := prims.CollectiveParams{Axes: names, Sizes: make([]int, len(names))}
	for i, n := range names {
		for _, m := range names[:i] {
			if m == n {
				interp.Panicf("axis name %q is given twice", n)
			}
		}
	}
	frames := prims.LookupAxesOf([]*peel.Tensor{x}, names...)
	for i, f := range frames {
		p.Sizes[i] = f.Size
	}
	return p, frames
}

func reduce(op string, p *interp.Prim, x *peel.Tensor, names []string) *peel.Tensor {
	defer peel.Annotate(op)
	checkX(op, x)
	params, frames := reduceParams(op, x, names)
	return prims.BindCollectiveIn(p, params, x, frames)
}

// Psum returns the sum of x over the lanes or devices of the named axes:
// every one gets the same total. With several names it sums over all of
// them (a 2-D mesh's both axes).
func Psum(x *peel.Tensor, names ...string) *peel.Tensor {
	return reduce("dist.Psum", prims.Psum, x, names)
}

// Pmean returns the mean of x over the lanes or devices of the named
// axes (Psum divided by their number); integer operands are summed and
// divided as floats (the result is f64).
func Pmean(x *peel.Tensor, names ...string) *peel.Tensor {
	defer peel.Annotate("dist.Pmean")
	checkX("dist.Pmean", x)
	p, frames := reduceParams("dist.Pmean", x, names)
	n := 1
	for _, s := range p.Sizes {
		n *= s
	}
	return peel.Div(prims.BindCollectiveIn(prims.Psum, p, x, frames), float64(n))
}

// Pmax returns the elementwise maximum of x over the named axes; its
// derivative is shared equally by the lanes that attain it.
func Pmax(x *peel.Tensor, names ...string) *peel.Tensor {
	return reduce("dist.Pmax", prims.Pmax, x, names)
}

// Pmin returns the elementwise minimum of x over the named axes.
func Pmin(x *peel.Tensor, names ...string) *peel.Tensor {
	return reduce("dist.Pmin", prims.Pmin, x, names)
}

func gatherParams(op string, x *peel.Tensor, f interp.AxisFrame, c gatherConfig, newAxis bool) prims.GatherParams {
	name := f.Name
	r := x.Rank()
	if newAxis {
		r++
	}
	d := c.dim
	if d < -r || d >= r {
		interp.Panicf("axis %d is out of range for %s", c.dim, x.TypeString())
	}
	if d < 0 {
		d += r
	}
	return prims.GatherParams{Axis: name, Size: f.Size, Dim: d, Tiled: c.tiled}
}

// AllGather returns the values of x of every lane or device of the named
// axis, stacked along a new array axis (OnAxis, 0 by default) in the
// order of their index, or concatenated along it (Tiled): every one gets
// the whole. Its transpose is PsumScatter.
func AllGather(x *peel.Tensor, name string, opts ...GatherOption) *peel.Tensor {
	defer peel.Annotate("dist.AllGather")
	checkX("dist.AllGather", x)
	c := gatherOptions(opts)
	f := frame("dist.AllGather", name, x)
	return prims.BindCollectiveIn(prims.AllGather, gatherParams("dist.AllGather", x, f, c, !c.tiled), x, []interp.AxisFrame{f})
}

// PsumScatter returns block i, along the array axis OnAxis gives (0 by
// default), of the sum of x over the named axis to lane or device i:
// the axis must have the axis's size (it is removed), or with Tiled a
// multiple of it (it shrinks by that factor). JAX's psum_scatter, the
// reduce-scatter of MPI; its transpose is AllGather.
func PsumScatter(x *peel.Tensor, name string, opts ...GatherOption) *peel.Tensor {
	defer peel.Annotate("dist.PsumScatter")
	checkX("dist.PsumScatter", x)
	f := frame("dist.PsumScatter", name, x)
	return prims.BindCollectiveIn(prims.PsumScatter, gatherParams("dist.PsumScatter", x, f, gatherOptions(opts), false), x, []interp.AxisFrame{f})
}

// AllToAll cuts array axis split of x into as many blocks as the named
// axis has lanes or devices, sends block j to lane j, and concatenates
// the blocks received along array axis concat in the order of their
// senders (JAX's all_to_all): split shrinks and concat grows by the
// axis's size. Negative axes count from the end. Its transpose is
// AllToAll with split and concat exchanged.
func AllToAll(x *peel.Tensor, name string, split, concat int) *peel.Tensor {
	const op = "dist.AllToAll"
	defer peel.Annotate(op)
	checkX(op, x)
	f := frame(op, name, x)
	r := x.Rank()
	for _, a := range []*int{&split, &concat} {
		if *a < -r || *a >= r {
			interp.Panicf("axis %d is out of range for %s", *a, x.TypeString())
		}
		if *a < 0 {
			*a += r
		}
	}
	return prims.BindCollectiveIn(prims.AllToAll, prims.AllToAllParams{Axis: name, Size: f.Size, Split: split, Concat: concat}, x, []interp.AxisFrame{f})
}

// Ppermute sends x from lane or device src to dst for each pair {src,
// dst} of perm along the named axis (JAX's ppermute): a lane no pair
// sends to gets zeros. perm must be a permutation of some of the
// indices: no source or destination twice, each in [0, size). Its
// transpose sends every value back. A ring shift by one over n devices
// is perm {{0, 1}, {1, 2}, …, {n-1, 0}}.
func Ppermute(x *peel.Tensor, name string, perm [][2]int) *peel.Tensor {
	const op = "dist.Ppermute"
	defer peel.Annotate(op)
	checkX(op, x)
	f := frame(op, name, x)
	prims.CheckPerm(perm, f.Size)
	return prims.BindCollectiveIn(prims.Ppermute, prims.PermuteParams{Axis: name, Size: f.Size, Perm: append([][2]int(nil), perm...)}, x, []interp.AxisFrame{f})
}

// AxisIndex returns the index (an i64 scalar) of the calling lane or
// device along the named axis: lane i of a Vmap with AxisName(name) sees
// i, as does device i of a ShardMap's mesh axis.
func AxisIndex(name string) *peel.Tensor {
	defer peel.Annotate("dist.AxisIndex")
	return frame("dist.AxisIndex", name, nil).Index
}

// AxisSize returns the number of lanes or devices along the named axis.
func AxisSize(name string) int {
	defer peel.Annotate("dist.AxisSize")
	return frame("dist.AxisSize", name, nil).Size
}

// WithAxes returns f bound to the axis names the calling goroutine sees
// (an enclosing Vmap with AxisName, a ShardMap, a device of a mesh): run
// it in a goroutine you start, go dist.WithAxes(f)(), so that AxisIndex,
// AxisSize and collectives on values that do not vary along an axis (a
// constant, the cotangent of a gradient through a collective) find the
// names there as they do here. A collective on a value that varies along
// the axis finds it through its operand, in any goroutine, without it.
func WithAxes(f func()) func() {
	frames := interp.AxesHere()
	return func() {
		defer interp.PushAxis(frames...)()
		f()
	}
}
