package transforms

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// ShardMap returns f mapped over the devices of mesh (JAX's shard_map):
// each argument leaf is split into blocks as its in spec says
// (dist.P("data", nil): rows split over the mesh axis "data"; dist.P():
// every device gets all of it), every device runs f on its blocks —
// concurrently, a goroutine per device — with collectives over the mesh
// axes (package dist) connecting them, and the results are assembled
// from the devices' blocks as outSpecs says. A result whose spec leaves
// a mesh axis out is claimed equal on the devices along it: ShardMap
// takes one copy and panics with *peel.Error when the copies differ (on
// a process mesh, by more than a reduction's rounding: MPI's processes
// may add a Psum's parts in different orders).
//
// inSpecs and outSpecs are prefix trees of dist.Spec over the argument
// and the result, as InAxes and OutAxes are over Vmap's: a Spec applies
// to every leaf below it, []any and map[string]any give the parts of a
// slice, struct or map; nil means dist.P() (replicated). ShardMap2 and
// ShardMap3 take one spec per argument in a []any (or one for all).
//
// f is traced on every call into one device's program (so it must not
// read traced values; Compile keeps the trace), and the devices run that
// program. ShardMap is one
// primitive to the transforms: Grad, JVP, VJP and the Jacobians
// differentiate it with the devices (the forward and the backward pass
// each run as a ShardMap of the body's derivative), Vmap maps it, and
// Compile keeps it as one call. Derivatives follow the per-device reading
// of the program (see package dist); at the boundary, the cotangent of a
// replicated result is shared equally among its copies, and a replicated
// argument's cotangent is the sum of its copies'.
//
// The returned function panics with *peel.Error when a spec names a
// mesh axis the mesh lacks, names an axis twice, has more entries than
// its leaf has axes, or splits an array axis its blocks do not divide
// (each naming the leaf and the spec); when f captures a value of an
// enclosing transform (pass it as an argument); and when a device fails,
// which makes every device's collectives fail too (no device waits
// forever), naming the device.
func ShardMap[A, R any](f func(A) R, mesh *dist.Mesh, inSpecs, outSpecs any) func(A) R {
	needFunc("transforms.ShardMap", f)
	return shardMapTree("transforms.ShardMap", f, mesh, inSpecs, outSpecs)
}

// resolveSpecs gives each tensor leaf of v its spec from the prefix tree
// spec.
func resolveSpecs(op, what string, spec any, v reflect.Value) []dist.Spec {
	if spec == nil {
		spec = dist.P()
	}
	return resolvePrefix(op, what, spec, v, "give a tensor a dist.Spec (dist.P(…))", func(spec any, path string, v reflect.Value) ([]dist.Spec, bool) {
		var out []dist.Spec
		switch s := spec.(type) {
		case dist.Spec:
			walk(op, v, path, func(string, *peel.Tensor) { out = append(out, s) })
			return out, true
		case nil:
			walk(op, v, path, func(string, *peel.Tensor) { out = append(out, dist.P()) })
			return out, true
		}
		return nil, false
	})
}

func shardMapTree[A, R any](op string, f func(A) R, mesh *dist.Mesh, inSpecs, outSpecs any) func(A) R {
	if f == nil {
		treeErrorf(op, "the function is nil")
	}
	if mesh == nil {
		treeErrorf(op, "the mesh is nil")
	}
	return func(x A) R {
		leaves, def := flatten(op, x)
		specs := resolveSpecs(op, "in specs", inSpecs, def.Proto())
		in := make([]dist.Layout, len(leaves))
		avals := make([]interp.Aval, len(leaves))
		for i, l := range leaves {
			in[i] = specs[i].Check(op, def.LeafName("the argument", i), mesh, l.Shape())
			avals[i] = interp.Aval{Shape: in[i].ShardShape(), DType: l.DType()}
		}
		// Traced on every call, so the tensors f captures are read as
		// they are now (Compile keeps the trace for its own calls, with
		// its checks that what it captured is unchanged).
		var outDef *treeDef
		body := traceShardBody(op, mesh, flatFn(op, f, def, &outDef), avals)
		ospecs := resolveSpecs(op, "out specs", outSpecs, outDef.Proto())
		out := make([]dist.Layout, len(body.Out))
		for j, v := range body.Out {
			out[j] = ospecs[j].Grow(op, outDef.LeafName("the result", j), mesh, v.Aval.Shape)
		}
		return build[R](outDef, interp.Bind(shardMapPrim, newShardParams(op, mesh, body, in, out), leaves...))
	}
}

// traceShardBody traces fl on one device's blocks (avals) into a graph
// whose inputs are the blocks and then one i64 index per mesh axis, with
// the mesh's axis names bound to those indices while it runs.
func traceShardBody(op string, mesh *dist.Mesh, fl func([]*tensor) []*tensor, avals []interp.Aval) *interp.Graph {
	axes := mesh.Axes()
	in := append([]interp.Aval(nil), avals...)
	for range axes {
		in = append(in, interp.Aval{DType: peel.Int64})
	}
	n := len(avals)
	g := interp.TraceAvals("shard_map", func(vals []*tensor) []*tensor {
		defer bindShardAxes(axes, vals[n:])()
		return Functionalize(fl)(vals[:n])
	}, in, interp.BodyTrace())
	for _, c := range g.ConstVals {
		if !c.IsConcrete() {
			treeErrorf(op, "the function captures a value of an enclosing transform (%s): pass it to ShardMap as an argument, with dist.P() to give every device all of it", c.TypeString())
		}
	}
	return g
}

// shardParams are shard_map's parameters: the body (one device's
// program: its blocks and its mesh indices in, its blocks out), the mesh
// and the layouts of the operands and results. Operand i with divide set
// is a cotangent of a replicated result: each device that holds a copy
// of a block gets 1/replicas of it. Result j with sum set is a cotangent
// of a replicated operand: the copies are summed (and, with mean, divided
// by their number) instead of being one value read once.
type shardParams struct {
	name      string
	mesh      *dist.Mesh
	body      *interp.Graph
	in, out   []dist.Layout
	divide    []bool
	sum, mean []bool
	derived   sync.Map // "jvp", "vjp", "batch…" → *shardParams
}

func newShardParams(name string, mesh *dist.Mesh, body *interp.Graph, in, out []dist.Layout) *shardParams {
	return &shardParams{name: name, mesh: mesh, body: body, in: in, out: out,
		divide: make([]bool, len(in)), sum: make([]bool, len(out)), mean: make([]bool, len(out))}
}

func (p *shardParams) String() string { return p.name + " on " + p.mesh.String() }

// indices returns device d's mesh indices, the body's last inputs.
func (p *shardParams) indices(d int) []*tensor {
	c := p.mesh.Coords(d)
	out := make([]*tensor, len(c))
	for i, v := range c {
		out[i] = peel.Reshape(peel.FromInt64s([]int64{int64(v)}))
	}
	return out
}

// blockOf returns device d's block of operand x (the whole tensor, at
// eval level, or a tracer) under layout l, divided among its copies when
// divide is set.
func (p *shardParams) blockOf(x *tensor, l dist.Layout, d int, divide bool) *tensor {
	b := l.Block(p.mesh.Coords(d), p.mesh)
	sh := l.ShardShape()
	for k, i := range b {
		if l.Blocks[k] > 1 {
			x = peel.Narrow(x, k, i*sh[k], sh[k])
		}
	}
	if r := l.Replicas(p.mesh); divide && r > 1 {
		x = peel.Div(x, float64(r))
	}
	return x
}

// copyCheck is how assemble compares the copies of a block claimed
// equal: not at all, exactly, or up to a reduction's rounding.
type copyCheck int

const (
	noCheck copyCheck = iota
	exactCheck
	roundingCheck
)

// assemble builds result j from the devices' blocks (outs[d][j]): each
// block read from its first holder, or summed over its holders. check
// says how the copies of a block claimed equal are compared.
func (p *shardParams) assemble(j int, outs [][]*tensor, check copyCheck) *tensor {
	l := p.out[j]
	holders := map[string][]int{}
	for d := range p.mesh.Size() {
		k := fmt.Sprint(l.Block(p.mesh.Coords(d), p.mesh))
		holders[k] = append(holders[k], d)
	}
	blockVal := func(b []int) *tensor {
		ds := holders[fmt.Sprint(b)]
		if p.sum[j] {
			v := outs[ds[0]][j]
			for _, d := range ds[1:] {
				v = peel.Add(v, outs[d][j])
			}
			if p.mean[j] && len(ds) > 1 {
				v = peel.Div(v, float64(len(ds)))
			}
			return v
		}
		v := outs[ds[0]][j]
		if check != noCheck {
			for _, d := range ds[1:] {
				if k, ok := firstDifference(v, outs[d][j], check == roundingCheck); !ok {
					treeErrorf(p.name, "result %d is claimed equal on devices %v and %v (out spec %v leaves their mesh axes out), but they differ at element %d: give it a spec that splits it, or make it equal (a Psum, a Pmean)",
						j, p.mesh.Coords(ds[0]), p.mesh.Coords(d), l.Spec, k)
				}
			}
		}
		return v
	}
	var rec func(k int, b []int) *tensor
	rec = func(k int, b []int) *tensor {
		if k == len(l.Shape) {
			return blockVal(b)
		}
		if l.Blocks[k] == 1 {
			return rec(k+1, append(b, 0))
		}
		parts := make([]*tensor, l.Blocks[k])
		for i := range parts {
			parts[i] = rec(k+1, append(append([]int(nil), b...), i))
		}
		return peel.Concat(parts, k)
	}
	return rec(0, nil)
}

// firstDifference reports whether a and b (concrete, of one type) are
// equal, NaNs included; otherwise the first element that differs. With
// rounding, float elements may differ by what summing n terms in another
// order can: 64 units of the dtype's roundoff relative to the largest
// magnitude of either block (a Psum over MPI, whose processes may add
// the members' parts in different orders).
func firstDifference(a, b *tensor, rounding bool) (int, bool) {
	if !a.DType().IsFloat() {
		x, y := peel.AsType(a, peel.Float64).Float64s(), peel.AsType(b, peel.Float64).Float64s()
		for i := range x {
			if x[i] != y[i] {
				return i, false
			}
		}
		return 0, true
	}
	x, y := peel.AsType(a, peel.Float64).Float64s(), peel.AsType(b, peel.Float64).Float64s()
	tol := 0.0
	if rounding {
		big := 0.0
		for i := range x {
			if v := max(math.Abs(x[i]), math.Abs(y[i])); v > big && !math.IsInf(v, 0) {
				big = v
			}
		}
		u := 0x1p-53
		if a.DType() != peel.Float64 {
			u = 0x1p-24
		}
		tol = 64 * u * big
	}
	for i := range x {
		if x[i] != y[i] && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) && !(math.Abs(x[i]-y[i]) <= tol) {
			return i, false
		}
	}
	return 0, true
}

var shardMapPrim = func() *interp.Prim {
	p := interp.NewPrim("shard_map", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		sp := params.(*shardParams)
		if len(in) != len(sp.in) {
			interp.Panicf("%d operands for %d", len(in), len(sp.in))
		}
		out := make([]interp.Aval, len(sp.out))
		for j, v := range sp.body.Out {
			out[j] = interp.Aval{Shape: sp.out[j].Shape, DType: v.Aval.DType}
		}
		return out
	})
	p.Whole = true
	p.Impl = shardMapLanes
	p.EvalImpl = shardMapRun
	return p
}()

func init() {
	shardMapPrim.JVP = shardMapJVP
	shardMapPrim.VJP = shardMapVJP
	batching.RegisterNamed(shardMapPrim, shardMapBatch)
}

// shardMapRun runs the body on every device of the mesh, concurrently.
func shardMapRun(params any, args []*tensor) []*tensor {
	p := params.(*shardParams)
	n := p.mesh.Size()
	outs := make([][]*tensor, n)
	ins := make([][]*tensor, n)
	local := p.mesh.Local() // every device in process; this process's of a process mesh
	for _, d := range local {
		ins[d] = make([]*tensor, 0, len(args)+len(p.mesh.Axes()))
		for i, x := range args {
			ins[d] = append(ins[d], p.blockOf(x, p.in[i], d, p.divide[i]))
		}
		ins[d] = append(ins[d], p.indices(d)...)
	}
	func() {
		defer interp.Decomposing(p.name)
		p.mesh.RunDevices(func(dv *dist.Device) {
			outs[dv.Index] = p.body.EvalHook(func(q *interp.Prim, params any, in []*tensor) ([]*tensor, bool) {
				if !slices.Contains(prims.Collectives, q) {
					return nil, false
				}
				return []*tensor{dv.Collective(q, params, in[0])}, true
			}, ins[dv.Index]...)
		})
	}()
	if len(local) < n {
		// A process mesh: every process gets every device's blocks.
		for j := range p.out {
			xs := make([]*tensor, n)
			for _, d := range local {
				xs[d] = outs[d][j]
			}
			for d, x := range p.mesh.Gather(xs) {
				if outs[d] == nil {
					outs[d] = make([]*tensor, len(p.out))
				}
				outs[d][j] = x
			}
		}
	}
	// The copies of a block claimed equal are checked exactly in process,
	// where every device reduces in the same order. Over MPI every
	// process has every copy (gathered above) and checks them too, up to
	// a reduction's rounding: MPI recommends, but does not require, that
	// a reduction give every process the same bits.
	check := exactCheck
	if len(local) != n {
		check = roundingCheck
	}
	res := make([]*tensor, len(p.out))
	for j := range res {
		res[j] = p.assemble(j, outs, check)
	}
	return res
}

// shardMapLanes is shard_map's meaning written with the transforms: the
// devices are the lanes of nested Vmaps that bind the mesh's axis names,
// one per axis. The interpreters that decompose a composite (a
// Checkpoint's recomputation) run it; eager calls and the derivatives run
// on the devices.
func shardMapLanes(params any, args []*tensor) []*tensor {
	p := params.(*shardParams)
	axes := p.mesh.Axes()
	n := p.mesh.Size()
	stacked := make([]*tensor, len(args))
	for i, x := range args {
		blocks := make([]*tensor, n)
		for d := range n {
			blocks[d] = p.blockOf(x, p.in[i], d, p.divide[i])
		}
		s := peel.Stack(blocks, 0)
		shape := make([]int, 0, len(axes)+s.Rank()-1)
		for _, a := range axes {
			shape = append(shape, a.Size)
		}
		stacked[i] = peel.Reshape(s, append(shape, s.Shape()[1:]...)...)
	}
	var run func(level int, in []*tensor) []*tensor
	run = func(level int, in []*tensor) []*tensor {
		if level == len(axes) {
			names := make([]string, len(axes))
			for i, a := range axes {
				names[i] = a.Name
			}
			frames, _ := interp.LookupAxes(names...)
			idx := make([]*tensor, len(axes))
			for i, f := range frames {
				idx[i] = f.Index
			}
			return p.body.Eval(append(append([]*tensor(nil), in...), idx...)...)
		}
		cfg := &vmapConfig{axisName: axes[level].Name}
		return vmapFlat(p.name, cfg, func(xs []*tensor) []*tensor { return run(level+1, xs) }, in, make([]int, len(in)),
			func(o []*tensor) []int { return make([]int, len(o)) }, nil)
	}
	res := run(0, stacked)
	outs := make([][]*tensor, n)
	for d := range n {
		outs[d] = make([]*tensor, len(res))
	}
	for j, r := range res {
		flat := peel.Reshape(r, append([]int{n}, r.Shape()[len(axes):]...)...)
		for d := range n {
			outs[d][j] = peel.Select(flat, 0, d)
		}
	}
	out := make([]*tensor, len(res))
	for j := range out {
		out[j] = p.assemble(j, outs, noCheck)
	}
	return out
}

// derive returns the parameters made by build for key, once per params.
func (p *shardParams) derive(key string, build func() *shardParams) *shardParams {
	if v, ok := p.derived.Load(key); ok {
		return v.(*shardParams)
	}
	v, _ := p.derived.LoadOrStore(key, build())
	return v.(*shardParams)
}

// traceDerived traces fn over the blocks of the given layouts (dtypes
// from dts) and the mesh indices, with the axis names bound, as a body.
func (p *shardParams) traceDerived(in []dist.Layout, dts []interp.DType, fn func(blocks, idx []*tensor) []*tensor) *interp.Graph {
	axes := p.mesh.Axes()
	avals := make([]interp.Aval, 0, len(in)+len(axes))
	for i, l := range in {
		avals = append(avals, interp.Aval{Shape: l.ShardShape(), DType: dts[i]})
	}
	for range axes {
		avals = append(avals, interp.Aval{DType: peel.Int64})
	}
	n := len(in)
	return interp.TraceAvals("shard_map", func(vals []*tensor) []*tensor {
		defer bindShardAxes(axes, vals[n:])()
		return fn(vals[:n], vals[n:])
	}, avals)
}

// bindShardAxes binds the mesh's axis names, each to its index among idx
// (the trace's inputs), on the level of the body's trace (collectives
// find them from their operands, in any goroutine) and for the calling
// goroutine (AxisIndex; values that do not vary along an axis) until the
// returned function is called.
func bindShardAxes(axes []dist.AxisSpec, idx []*tensor) (pop func()) {
	frames := make([]interp.AxisFrame, len(axes))
	for i, a := range axes {
		frames[i] = interp.AxisFrame{Name: a.Name, Size: a.Size, Index: idx[i]}
	}
	if len(idx) > 0 {
		if tr := interp.TracerOf(idx[0]); tr != nil {
			tr.Level().BindAxes(frames...)
		}
	}
	return interp.PushAxis(frames...)
}

func (p *shardParams) inDTypes() []interp.DType {
	dts := make([]interp.DType, len(p.in))
	for i, v := range p.body.In[:len(p.in)] {
		dts[i] = v.Aval.DType
	}
	return dts
}

func (p *shardParams) outDTypes() []interp.DType {
	dts := make([]interp.DType, len(p.out))
	for j, v := range p.body.Out {
		dts[j] = v.Aval.DType
	}
	return dts
}

// shardMapJVP runs the body's JVP on the devices: a shard_map of
// (primals, tangents) → (results, their tangents).
func shardMapJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	p := params.(*shardParams)
	m := len(p.in)
	jp := p.derive("jvp", func() *shardParams {
		in := append(append([]dist.Layout(nil), p.in...), p.in...)
		dts := append(p.inDTypes(), p.inDTypes()...)
		g := p.traceDerived(in, dts, func(b, idx []*tensor) []*tensor {
			f := func(x []*tensor) []*tensor { return p.body.Eval(append(append([]*tensor(nil), x...), idx...)...) }
			outs, touts := autodiff.JVP("shard_map", f, b[:m], b[m:])
			for j, t := range touts {
				touts[j] = autodiff.ZerosIfNil(t, interp.AvalOf(outs[j]))
			}
			return append(outs, touts...)
		})
		q := newShardParams(p.name, p.mesh, g, in, append(append([]dist.Layout(nil), p.out...), p.out...))
		copy(q.divide, p.divide)
		copy(q.divide[m:], p.divide)
		for j := range p.out {
			q.sum[j], q.sum[len(p.out)+j] = p.sum[j], p.sum[j]
			q.mean[j], q.mean[len(p.out)+j] = p.mean[j], p.mean[j]
		}
		return q
	})
	full := make([]*tensor, m)
	for i, t := range tangents {
		full[i] = autodiff.ZerosIfNil(t, interp.AvalOf(primals[i]))
	}
	res := interp.Bind(shardMapPrim, jp, append(append([]*tensor(nil), primals...), full...)...)
	return res[:len(p.out)], res[len(p.out):]
}

// shardMapVJP runs the body's VJP on the devices: a shard_map of
// (primals, result cotangents) → operand cotangents. A replicated
// result's cotangent is shared equally among its copies, and a
// replicated operand's cotangent is the sum of its copies'.
func shardMapVJP(params any, primals, outs, cts []*tensor) []*tensor {
	p := params.(*shardParams)
	m, k := len(p.in), len(p.out)
	vp := p.derive("vjp", func() *shardParams {
		in := append(append([]dist.Layout(nil), p.in...), p.out...)
		dts := append(p.inDTypes(), p.outDTypes()...)
		g := p.traceDerived(in, dts, func(b, idx []*tensor) []*tensor {
			f := func(x []*tensor) []*tensor { return p.body.Eval(append(append([]*tensor(nil), x...), idx...)...) }
			_, pb := VJP(f, b[:m])
			got := pb(b[m:])
			for i, g := range got {
				got[i] = autodiff.ZerosIfNil(g, interp.AvalOf(b[i]))
			}
			return got
		})
		q := newShardParams(p.name, p.mesh, g, in, append([]dist.Layout(nil), p.in...))
		copy(q.divide, p.divide)
		for j := range p.out {
			q.divide[m+j] = !p.sum[j] || p.mean[j]
		}
		for i := range p.in {
			q.sum[i], q.mean[i] = true, p.divide[i]
		}
		return q
	})
	full := make([]*tensor, k)
	for j, ct := range cts {
		full[j] = autodiff.ZerosIfNil(ct, interp.AvalOf(outs[j]))
	}
	got := interp.Bind(shardMapPrim, vp, append(append([]*tensor(nil), primals...), full...)...)
	for i, x := range primals {
		if !x.DType().IsFloat() {
			got[i] = nil
		}
	}
	return got
}

// shardMapBatch is Vmap of a shard_map: a shard_map of the body vmapped,
// the batch a leading array axis that no mesh axis splits.
func shardMapBatch(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
	p := params.(*shardParams)
	ops := make([]*tensor, len(vals))
	key := fmt.Sprintf("batch %d %q", size, axis)
	for i, v := range vals {
		key += fmt.Sprintf(",%v", dims[i] != batching.NotMapped)
		ops[i] = v
		if dims[i] != batching.NotMapped {
			ops[i] = batching.ToFront(v, dims[i], size)
		}
	}
	lead := func(l dist.Layout, batched bool) dist.Layout {
		if !batched {
			return l
		}
		entries := []any{nil}
		for _, d := range l.Spec.Dims() {
			if len(d) == 0 {
				entries = append(entries, nil)
			} else {
				entries = append(entries, d)
			}
		}
		return dist.P(entries...).Check(p.name, "a batched operand", p.mesh, append([]int{size}, l.Shape...))
	}
	bp := p.derive(key, func() *shardParams {
		in := make([]dist.Layout, len(p.in))
		bdims := make([]int, len(p.in)+len(p.mesh.Axes()))
		for i := range p.in {
			in[i] = lead(p.in[i], dims[i] != batching.NotMapped)
			bdims[i] = batching.NotMapped
			if dims[i] != batching.NotMapped {
				bdims[i] = 0
			}
		}
		for i := len(p.in); i < len(bdims); i++ {
			bdims[i] = batching.NotMapped
		}
		g := p.traceDerived(in, p.inDTypes(), func(b, idx []*tensor) []*tensor {
			return vmapped(lanes{size, axis}, bdims, func(xs []*tensor) []*tensor { return p.body.Eval(xs...) })(append(append([]*tensor(nil), b...), idx...))
		})
		out := make([]dist.Layout, len(p.out))
		for j := range p.out {
			out[j] = lead(p.out[j], true)
		}
		q := newShardParams(p.name, p.mesh, g, in, out)
		copy(q.divide, p.divide)
		copy(q.sum, p.sum)
		copy(q.mean, p.mean)
		return q
	})
	outs := interp.Bind(shardMapPrim, bp, ops...)
	return outs, make([]int, len(outs))
}
