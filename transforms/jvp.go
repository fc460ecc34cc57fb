package transforms

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

type T = interp.Tensor

// jvpTracer is the payload of a tensor at a forward-mode level: its primal
// value (a tensor of a lower level) and its tangent (nil: a symbolic zero,
// never materialized). Integer and bool values have no tangent.
type jvpTracer struct {
	level   *interp.Level
	primal  *T
	tangent *T
}

func (t *jvpTracer) Level() *interp.Level { return t.level }

// jvpInterp is the forward-mode interpreter. With tangents that are
// staging tracers it is also the front half of linearization: primal
// values are computed eagerly below while tangent operations are
// recorded.
type jvpInterp struct {
	level *interp.Level
	// viewed holds the boxes of this level that views were taken of.
	viewed map[*T]bool
	// adopted holds the lower-level boxes that a mutation made tracers of
	// this level.
	adopted map[*T]bool
}

func newJVP(name string) *jvpInterp {
	j := &jvpInterp{viewed: map[*T]bool{}, adopted: map[*T]bool{}}
	j.level = interp.NewLevel(name, j)
	return j
}

// end gives adopted boxes their final primal values and ends the level.
func (j *jvpInterp) end() {
	for box := range j.adopted {
		if tr, ok := box.Tracer().(*jvpTracer); ok && tr.level == j.level {
			box.Rebind(tr.primal)
		}
	}
	j.level.End()
}

func (j *jvpInterp) wrap(primal, tangent *T) *T {
	if tangent == nil || !primal.DType().IsFloat() {
		return primal
	}
	return interp.NewTracer(primal.Aval(), &jvpTracer{level: j.level, primal: primal, tangent: tangent})
}

// unpack returns the primal and tangent of x at this level; values of
// lower levels are constants (nil tangent).
func (j *jvpInterp) unpack(x *T) (primal, tangent *T) {
	if tr, ok := x.Tracer().(*jvpTracer); ok && tr.level == j.level {
		return tr.primal, tr.tangent
	}
	return x, nil
}

// Process applies p's JVP rule to the operands' primals and tangents.
func (j *jvpInterp) Process(l *interp.Level, p *interp.Prim, params any, args []*T) []*T {
	if p.Kind == interp.Mutation {
		return j.mutate(p, params, args)
	}
	buf := make([]*T, 2*len(args))
	primals, tangents := buf[:len(args):len(args)], buf[len(args):]
	any := false
	for i, a := range args {
		j.checkStale(p, a)
		primals[i], tangents[i] = j.unpack(a)
		any = any || tangents[i] != nil
	}
	if !any || p.NonDifferentiable {
		return interp.Bind(p, params, primals...)
	}
	var outs, touts []*T
	switch {
	case p.Impl != nil && (p.JVP == nil || p.VJP != nil):
		outs, touts = compositeJVP(p, params, primals, tangents)
	case p.JVP == nil:
		panic(&interp.Error{Prim: p.Name, Msg: "no JVP rule: this primitive cannot be differentiated"})
	default:
		outs, touts = p.JVP(params, primals, tangents)
	}
	if len(outs) == 1 && len(touts) == 1 && touts[0] != nil && outs[0].DType().IsFloat() {
		// One allocation for the payload, the box and the result slice.
		r := &jvpOne{tr: jvpTracer{level: j.level, primal: outs[0], tangent: touts[0]}}
		r.t = interp.TracerValue(outs[0].Aval(), &r.tr)
		r.res[0] = &r.t
		j.markView(p, params, args, r.res[0])
		return r.res[:]
	}
	res := make([]*T, len(outs))
	for i, o := range outs {
		var t *T
		if i < len(touts) {
			t = touts[i]
		}
		res[i] = j.wrap(o, t)
	}
	j.markView(p, params, args, res[0])
	return res
}

// jvpOne is a one-result answer: payload, box and result slice.
type jvpOne struct {
	tr  jvpTracer
	t   T
	res [1]*T
}

// markView records that r, the result of view primitive p, is a view, so
// that in-place writes through it or into its base are refused.
func (j *jvpInterp) markView(p *interp.Prim, params any, args []*T, r *T) {
	if p.Kind == interp.ViewKind && r.Tracer() != nil {
		base := interp.BaseOf(args[0])
		r.SetViewInfo(&interp.View{Base: base, Parent: args[0], Prim: p, Params: params, Gen: base.Generation()})
		j.viewed[base] = true
	}
}

// checkStale brings a view up to date before it is used: a view of a
// base this level wrote since the view was computed (or a lower view of
// an adopted base) is recomputed from the base.
func (j *jvpInterp) checkStale(p *interp.Prim, a *T) {
	v := a.ViewInfo()
	if v == nil || !j.own(v.Base) {
		return
	}
	if j.own(a) && v.Gen == v.Base.Generation() {
		return
	}
	j.refresh(a)
}

// refresh recomputes view box x from its (refreshed) parent at this level
// and makes it a value of this level.
func (j *jvpInterp) refresh(x *T) {
	v := x.ViewInfo()
	if v == nil {
		return
	}
	if pv := v.Parent.ViewInfo(); pv != nil {
		j.refresh(v.Parent)
	}
	if !j.own(v.Parent) {
		j.adoptBox(v.Parent)
	}
	if j.own(x) && v.Gen == v.Base.Generation() {
		return
	}
	r := interp.Bind1(v.Prim, v.Params, v.Parent)
	if !j.own(x) {
		j.adopted[x] = true
	}
	x.Rebind(j.asOwn(r))
	v.Gen = v.Base.Generation()
}

// adoptBox makes lower box x a value of this level with a zero tangent.
func (j *jvpInterp) adoptBox(x *T) {
	if j.own(x) {
		return
	}
	j.adopted[x] = true
	x.Rebind(interp.NewTracer(x.Aval(), &jvpTracer{level: j.level, primal: x.NewBox()}))
}

// assign sets box x of this level to v, writing through x's view chain
// into its base with each view's inverse (bound at this level, so the
// tangents follow), and moves the base's generation on so other aliases
// are recomputed when next used.
func (j *jvpInterp) assign(p *interp.Prim, x, v *T) {
	vi := x.ViewInfo()
	if vi == nil {
		x.Rebind(j.asOwn(v))
		x.BumpGeneration()
		return
	}
	j.refresh(vi.Parent)
	newParent := functionalize.ScatterView(p, vi.Prim, vi.Params, vi.Parent, v)
	j.assign(p, vi.Parent, newParent)
	x.Rebind(j.asOwn(v))
	vi.Gen = vi.Base.Generation()
}

// asOwn returns v as a box of this level (a lower value gets a zero
// tangent).
func (j *jvpInterp) asOwn(v *T) *T {
	if j.own(v) {
		return v
	}
	return interp.NewTracer(v.Aval(), &jvpTracer{level: j.level, primal: v})
}

func (j *jvpInterp) own(x *T) bool {
	tr, ok := x.Tracer().(*jvpTracer)
	return ok && tr.level == j.level
}

// mutate performs an in-place primitive out of place: the destination's
// new primal and tangent are those of the out-of-place form (Prim.Pure)
// on the values before the write, and the destination box is rebound to
// them. Nothing below is written, so values recorded earlier (graph
// constants, captured primals) keep the values they had. A lower box
// written with a value that has a tangent is adopted: it holds a tracer
// of this level until the level ends, when it gets its final primal.
func (j *jvpInterp) mutate(p *interp.Prim, params any, args []*T) []*T {
	dst := args[0]
	if dst.ViewInfo() != nil || j.viewed[dst] {
		// Through a view, or into a base with views: the write goes to
		// the base through the views' inverses, at this level.
		for _, a := range args[1:] {
			j.checkStale(p, a)
		}
		if dst.ViewInfo() != nil {
			j.refresh(dst)
		}
		j.adoptBox(dst)
		j.assign(p, dst, interp.OutOfPlace(p, params, args))
		return args[:1]
	}
	primals := make([]*T, len(args))
	tangents := make([]*T, len(args))
	any := false
	for i, a := range args {
		j.checkStale(p, a)
		primals[i], tangents[i] = j.unpack(a)
		any = any || tangents[i] != nil
	}
	own := j.own(dst)
	if !any && !own {
		// No tangent flows into a lower box: an ordinary write below.
		interp.Bind(p, params, primals...)
		return args[:1]
	}
	var newP, newT *T
	switch {
	case p.DropsDst:
		newP, newT = primals[1].NewBox(), tangents[1]
	case !any || p.Pure.JVP == nil || p.Pure.NonDifferentiable:
		newP = interp.Bind1(p.Pure, params, primals...)
	default:
		outs, touts := p.Pure.JVP(params, primals, tangents)
		newP, newT = outs[0], touts[0]
	}
	if !dst.DType().IsFloat() {
		newT = nil
	}
	if !own {
		j.adopted[dst] = true
	}
	dst.Rebind(interp.NewTracer(dst.Aval(), &jvpTracer{level: j.level, primal: newP, tangent: newT}))
	return args[:1]
}

// zeros returns a concrete zero tensor of the aval with a buffer of its
// own.
func zeros(a interp.Aval) *T {
	be := interp.DefaultBackend()
	buf := be.Alloc(a.DType, backend.ShapeSize(a.Shape))
	return interp.NewConcrete(be, backend.Array{Buf: buf, Shape: a.Shape})
}

// zerosLike returns zeros shaped like x, built with primitives so that it
// lives at x's level when x is a tracer.
func zerosLike(x *T) *T {
	if x.IsConcrete() {
		return zeros(x.Aval())
	}
	z := interp.NewConcrete(interp.DefaultBackend(), backend.Array{Buf: interp.DefaultBackend().Alloc(x.DType(), 1), Shape: []int{}})
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: x.Shape(), Dims: []int{}}, z)
}

// jvpFlat runs f under a forward-mode level named name and returns the
// primal outputs and their tangents (nil: zero).
func jvpFlat(name string, f func([]*T) []*T, primals, tangents []*T) (outs, touts []*T) {
	j := newJVP(name)
	defer j.end()
	in := make([]*T, len(primals))
	for i, p := range primals {
		in[i] = p
		if p.DType().IsFloat() {
			// Even with a zero tangent a float input belongs to this
			// level, so that writes into it are tracked.
			in[i] = interp.NewTracer(p.Aval(), &jvpTracer{level: j.level, primal: p, tangent: tangents[i]})
		}
	}
	res := func() []*T {
		defer annotate(j.level)
		return f(in)
	}()
	outs = make([]*T, len(res))
	touts = make([]*T, len(res))
	for i, r := range res {
		if r == nil {
			panic(&interp.Error{Msg: "the function returned a nil tensor", Transform: name, Level: j.level.ID()})
		}
		outs[i], touts[i] = j.unpack(r)
	}
	return outs, touts
}

// annotate records the level in an *Error raised while running the
// user's function that does not name a level yet.
func annotate(l *interp.Level) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(*interp.Error); ok && e.Transform == "" {
		e.Transform, e.Level = l.Name(), l.ID()
	}
	panic(r)
}
