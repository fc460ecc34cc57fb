package autodiff

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

type tensor = interp.Tensor

// jvpTracer is the payload of a tensor at a forward-mode level: its primal
// value (a tensor of a lower level) and its tangent (nil: a symbolic zero,
// never materialized). Integer and bool values have no tangent.
type jvpTracer struct {
	level   *interp.Level
	primal  *tensor
	tangent *tensor
}

func (t *jvpTracer) Level() *interp.Level { return t.level }

// Nested returns the primal and the tangent (interp.Nested: collectives
// find the axis names of their levels).
func (t *jvpTracer) Nested() []*tensor { return []*tensor{t.primal, t.tangent} }

// jvpInterp is the forward-mode interpreter. With tangents that are
// staging tracers it is also the front half of linearization: primal
// values are computed eagerly below while tangent operations are
// recorded.
type jvpInterp struct {
	level *interp.Level
	// aliases answers writes through views and into bases with views
	// (functionalize.Aliases over this level's own boxes).
	aliases functionalize.Aliases
	// adopted holds the lower-level boxes that a mutation made tracers of
	// this level, with their content below.
	adopted functionalize.Adopted
}

func newJVP(name string) *jvpInterp {
	j := &jvpInterp{}
	j.aliases.Store = jvpStore{j}
	j.level = interp.NewLevel(name, j)
	return j
}

// AdoptsWrites marks the forward-mode interpreter as adopting lower
// boxes written with its values (interp.WriteAdopter).
func (j *jvpInterp) AdoptsWrites() {}

// jvpStore keeps each own box's value in the box itself: view and
// scatter primitives are bound on the boxes at this level, so the
// tangents follow the writes.
type jvpStore struct{ j *jvpInterp }

func (s jvpStore) Own(x *tensor) bool      { return s.j.own(x) }
func (s jvpStore) Value(x *tensor) *tensor { return x }
func (s jvpStore) Set(x, v *tensor)        { interp.Rebind(x, s.j.asOwn(v)) }

// Adopt makes lower box x a value of this level with a zero tangent.
func (s jvpStore) Adopt(x *tensor) {
	below := interp.NewBox(x)
	s.j.adopted.Add(x, below)
	interp.Rebind(x, interp.NewTracer(interp.AvalOf(x), &jvpTracer{level: s.j.level, primal: below}))
}

// finish gives the function's inputs (the boxes JVP made, with the
// caller's tensors, primals) that the function wrote, and every adopted
// box, their final primal values, as eager evaluation would leave them:
// written in place at their own level (functionalize.WriteBack and
// Adopted.End, the write-back functionalize uses too), so the caller's
// tensors and their aliases see the writes. It is called when the
// function has returned and its outputs are unpacked, before end.
func (j *jvpInterp) finish(in, primals []*tensor) {
	defer interp.AnnotateLevel(j.level)
	for i, box := range in {
		if !j.own(box) {
			continue
		}
		if p, _ := j.unpack(j.aliases.Current(box)); p != primals[i] {
			functionalize.WriteBack(primals[i], p)
		}
	}
	j.adopted.End(func(box *tensor) *tensor {
		p, _ := j.unpack(j.aliases.Current(box))
		return p
	}, nil)
}

// end ends the level; adopted boxes that finish did not write back (the
// function panicked) get their content below back, so none is left
// holding a tracer of the level.
func (j *jvpInterp) end() {
	j.adopted.Restore()
	j.level.End()
}

func (j *jvpInterp) wrap(primal, tangent *tensor) *tensor {
	if tangent == nil || !primal.DType().IsFloat() {
		return primal
	}
	return interp.NewTracer(interp.AvalOf(primal), &jvpTracer{level: j.level, primal: primal, tangent: tangent})
}

// unpack returns the primal and tangent of x at this level; values of
// lower levels are constants (nil tangent).
func (j *jvpInterp) unpack(x *tensor) (primal, tangent *tensor) {
	if tr, ok := interp.TracerOf(x).(*jvpTracer); ok && tr.level == j.level {
		return tr.primal, tr.tangent
	}
	return x, nil
}

// Process applies p's JVP rule to the operands' primals and tangents.
func (j *jvpInterp) Process(l *interp.Level, p *interp.Prim, params any, args []*tensor) []*tensor {
	if p.Kind == interp.Mutation {
		return j.mutate(p, params, args)
	}
	buf := make([]*tensor, 2*len(args))
	primals, tangents := buf[:len(args):len(args)], buf[len(args):]
	any := false
	for i, a := range args {
		primals[i], tangents[i] = j.unpack(j.aliases.Use(a))
		any = any || tangents[i] != nil
	}
	if p.Kind == interp.ViewKind && j.own(args[0]) {
		// A view of a box of this level is a box of this level, with or
		// without a tangent, so writes through it and into its base
		// are answered here.
		outs, touts := interp.Bind(p, params, primals[0]), []*tensor{nil}
		if tangents[0] != nil {
			outs, touts = p.JVP(params, primals, tangents)
		}
		r := interp.NewTracer(interp.AvalOf(outs[0]), &jvpTracer{level: j.level, primal: outs[0], tangent: touts[0]})
		j.aliases.MarkView(p, params, args[0], r)
		return []*tensor{r}
	}
	if !any || p.NonDifferentiable {
		return interp.Bind(p, params, primals...)
	}
	if !p.Effect && anyEmpty(primals) {
		// An empty result has an empty tangent, a symbolic zero: no rule
		// runs, so none meets the partial products of an empty
		// operand's other dimensions, which may wrap
		// (backend.CheckedSize). (Not for an effect, which must run
		// once: its rule binds it.)
		if outs := interp.Bind(p, params, primals...); allEmpty(outs) {
			return outs
		}
	}
	var outs, touts []*tensor
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
		r.t = interp.TracerValue(interp.AvalOf(outs[0]), &r.tr)
		r.res[0] = &r.t
		return r.res[:]
	}
	res := make([]*tensor, len(outs))
	for i, o := range outs {
		var t *tensor
		if i < len(touts) {
			t = touts[i]
		}
		res[i] = j.wrap(o, t)
	}
	return res
}

// anyEmpty reports whether a tensor of ts has no elements.
func anyEmpty(ts []*tensor) bool {
	for _, t := range ts {
		if t.Size() == 0 {
			return true
		}
	}
	return false
}

// allEmpty reports whether ts is not empty and no tensor of it has
// elements.
func allEmpty(ts []*tensor) bool {
	for _, t := range ts {
		if t.Size() != 0 {
			return false
		}
	}
	return len(ts) > 0
}

// jvpOne is a one-result answer: payload, box and result slice.
type jvpOne struct {
	tr  jvpTracer
	t   tensor
	res [1]*tensor
}

// asOwn returns v as a box of this level (a lower value gets a zero
// tangent).
func (j *jvpInterp) asOwn(v *tensor) *tensor {
	if j.own(v) {
		return v
	}
	return interp.NewTracer(interp.AvalOf(v), &jvpTracer{level: j.level, primal: v})
}

func (j *jvpInterp) own(x *tensor) bool {
	tr, ok := interp.TracerOf(x).(*jvpTracer)
	return ok && tr.level == j.level
}

// mutate performs an in-place primitive out of place
// (functionalize.Aliases.Write): the destination's new primal and tangent
// are those of the out-of-place form (Prim.Pure, through its JVP rule)
// on the values before the write, and the destination box is rebound to
// them; a write through a view reaches its base through the views'
// inverses, bound at this level so the tangents follow. Nothing below is
// written, so values recorded earlier (graph constants, captured
// primals) keep the values they had. A lower box written here is
// adopted: it holds a tracer of this level until the level ends, when it
// gets its final primal.
func (j *jvpInterp) mutate(p *interp.Prim, params any, args []*tensor) []*tensor {
	j.aliases.Write(p, params, args)
	return args[:1]
}

// Zeros returns a concrete zero tensor of the aval, with a buffer of its
// own on the default backend.
func Zeros(a interp.Aval) *interp.Tensor {
	be := interp.DefaultBackend()
	buf := be.Alloc(a.DType, backend.ShapeSize(a.Shape))
	return interp.NewConcrete(be, backend.Array{Buf: buf, Shape: a.Shape})
}

// ZerosLike returns zeros shaped like x, built with primitives so that
// they live at x's level when x is a tracer.
func ZerosLike(x *interp.Tensor) *interp.Tensor {
	if x.IsConcrete() {
		return Zeros(interp.AvalOf(x))
	}
	z := interp.NewConcrete(interp.DefaultBackend(), backend.Array{Buf: interp.DefaultBackend().Alloc(x.DType(), 1), Shape: []int{}})
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: x.Shape(), Dims: []int{}}, z)
}

// ZerosIfNil returns c, or zeros of a when c is nil (a symbolic zero).
func ZerosIfNil(c *interp.Tensor, a interp.Aval) *interp.Tensor {
	if c == nil {
		return Zeros(a)
	}
	return c
}

// JVP runs f under a new forward-mode level named name (the transform
// named in errors) and returns the primal outputs and their tangents
// (nil: a symbolic zero). tangents[i] is the tangent of primals[i] (nil:
// zero); only float primals carry one. Writes f makes into its inputs or
// into captured tensors reach them when f returns, as under eager
// evaluation. It panics with *interp.Error if f returns a nil tensor or
// a primitive f applies has no JVP rule, and passes on f's panics with
// the level noted.
func JVP(name string, f func([]*interp.Tensor) []*interp.Tensor, primals, tangents []*interp.Tensor) (outs, touts []*interp.Tensor) {
	j := newJVP(name)
	defer j.end()
	in := make([]*tensor, len(primals))
	for i, p := range primals {
		in[i] = p
		if p.DType().IsFloat() {
			// Even with a zero tangent a float input belongs to this
			// level, so that writes into it are tracked.
			in[i] = interp.NewTracer(interp.AvalOf(p), &jvpTracer{level: j.level, primal: p, tangent: tangents[i]})
		}
	}
	res := func() []*tensor {
		defer interp.AnnotateLevel(j.level)
		return f(in)
	}()
	outs = make([]*tensor, len(res))
	touts = make([]*tensor, len(res))
	for i, r := range res {
		if r == nil {
			panic(&interp.Error{Msg: "the function returned a nil tensor", Transform: name, Level: j.level.ID()})
		}
		outs[i], touts[i] = j.unpack(j.aliases.Use(r))
	}
	j.finish(in, primals)
	return outs, touts
}

// IsForwardTracer reports whether tr is the payload of a forward-mode
// level (a tensor JVP or Linearize is differentiating).
func IsForwardTracer(tr interp.Tracer) bool {
	_, ok := tr.(*jvpTracer)
	return ok
}

// Wrapped appends the tracer's primal and tangent (interp.Wrapper).
func (t *jvpTracer) Wrapped(dst []*tensor) []*tensor { return append(dst, t.primal, t.tangent) }
