package autodiff

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Linearized is the result of linearizing a function at a point: the
// primal outputs, computed eagerly, and the tangent map as a linear graph
// from input tangents to output tangents.
type Linearized struct {
	// Outs are the primal outputs.
	Outs []*interp.Tensor
	// Graph is the tangent map: one input per primal input (its tangent),
	// one output per primal output.
	Graph *interp.Graph
	// In are the input tangents' types (the primal inputs' types).
	In []interp.Aval
	// zeroOut marks outputs whose tangent is identically zero.
	zeroOut []bool
}

// Linearize linearizes f at primals under levels named name (the
// transform named in errors). A staging level is entered
// first and a forward-mode level inside it; the input tangents are the
// staging level's inputs, so every tangent operation is recorded while
// every primal operation (which involves no staging tracer) runs eagerly.
// Only float inputs get tangents. It panics as JVP does.
func Linearize(name string, f func([]*interp.Tensor) []*interp.Tensor, primals []*interp.Tensor) *Linearized {
	lin := &Linearized{In: make([]interp.Aval, len(primals))}
	for i, p := range primals {
		lin.In[i] = interp.AvalOf(p)
	}
	lin.Graph = interp.TraceAvals(name, func(tin []*tensor) []*tensor {
		tangents := make([]*tensor, len(tin))
		for i, t := range tin {
			if primals[i].DType().IsFloat() {
				tangents[i] = t
			}
		}
		outs, touts := JVP(name, f, primals, tangents)
		lin.Outs = outs
		lin.zeroOut = make([]bool, len(outs))
		res := make([]*tensor, len(outs))
		for i, t := range touts {
			if t == nil {
				lin.zeroOut[i] = true
				t = Zeros(interp.AvalOf(outs[i]))
			}
			res[i] = t
		}
		return res
	}, lin.In)
	return lin
}

// Release gives up the linear graph's hold on the memory of the values
// it saved (interp.Graph.ReleaseConstants): called when the graph is no
// longer needed, so a later in-place write into a captured tensor (an
// optimizer step) copies nothing.
func (l *Linearized) Release() { l.Graph.ReleaseConstants() }

// Apply evaluates the tangent map (forward): the output tangents of the
// input tangents. It panics with *interp.Error as interp.Graph.Eval does.
func (l *Linearized) Apply(tangents []*interp.Tensor) []*interp.Tensor {
	return l.Graph.Eval(tangents...)
}

// Transpose runs the linear graph backward: given output cotangents (nil
// for zero) it returns input cotangents (nil for zero). Each equation's
// transpose rule is applied with Bind, so the backward pass is itself
// transformable. It panics as TransposeGraph does.
func (l *Linearized) Transpose(cts []*interp.Tensor) []*interp.Tensor {
	return TransposeGraph(l.Graph, cts)
}

// TransposeGraph transposes g, a graph that is linear in its inputs
// (its equations that read no input are evaluated first: a
// checkpoint's recomputation): given output cotangents (nil for zero)
// it returns input cotangents (nil for zero), each transpose rule
// applied with Bind. Vars are indexed by ID (dense within a graph)
// rather than hashed. It panics with *interp.Error if a primitive on
// the linear path has no transpose rule or is not linear in an operand
// that depends on the inputs.
func TransposeGraph(g *interp.Graph, cts []*interp.Tensor) []*interp.Tensor {
	n := g.IDBound()
	env := make([]*tensor, n)
	ct := make([]*tensor, n)
	for i, v := range g.Consts {
		env[v.ID] = g.ConstVals[i]
	}
	// The linear vars, from the structure alone; then when each value
	// computed here is last read: by the non-linear equations of the
	// forward sweep (lastFwd) and by the transpose rules of the backward
	// sweep (firstLin, the smallest index: that sweep runs backward).
	linear, eqLinear := linearVars(g)
	lastFwd, firstLin := make([]int32, n), make([]int32, n)
	for i := range firstLin {
		lastFwd[i], firstLin[i] = -1, -1
	}
	for k, e := range g.Eqns {
		for _, v := range e.In {
			switch {
			case linear[v.ID]:
			case eqLinear[k]:
				if firstLin[v.ID] < 0 {
					firstLin[v.ID] = int32(k)
				}
			default:
				lastFwd[v.ID] = int32(k)
			}
		}
	}
	// Forward: evaluate the non-linear equations (a checkpoint's
	// recomputation), dropping each value once neither sweep reads it.
	for k, e := range g.Eqns {
		if eqLinear[k] {
			continue
		}
		in := make([]*tensor, len(e.In))
		for i, v := range e.In {
			in[i] = env[v.ID]
		}
		outs := interp.Bind(e.Prim, e.Params, in...)
		for i, v := range e.Out {
			env[v.ID] = outs[i]
		}
		for _, v := range e.In {
			if lastFwd[v.ID] == int32(k) && firstLin[v.ID] < 0 {
				env[v.ID] = nil
			}
		}
	}
	// sums[v.ID] is ct[v.ID] when this function made it, a sum of two
	// or more cotangents that nothing else has seen: the next cotangent
	// of v is added into it in place where interp.UpdateInPlace can (a
	// weight read by every step of an unrolled loop so sums its
	// cotangents in one buffer, as torch's autograd does). A cotangent
	// a rule returned, which may be another value or alias one, is
	// never written.
	sums := make([]*tensor, n)
	accum := func(v *interp.Var, c *tensor) {
		if c == nil {
			return
		}
		if old := ct[v.ID]; old != nil {
			if s := sums[v.ID]; s == old && interp.UpdateInPlace(prims.Add, nil, s, c) {
				return
			}
			c = interp.Bind1(prims.Add, nil, old, c)
			if c.IsConcrete() { // a new result of this add
				sums[v.ID] = c
			}
		}
		ct[v.ID] = c
	}
	for i, v := range g.Out {
		if linear[v.ID] {
			accum(v, cts[i])
		}
	}
	// embeds[v.ID] are the cotangents of v that the transposes of slices
	// would pad into zeros of v's shape (prims.EmbedRegion), kept until
	// v's cotangent is read (take): then one concatenation places them
	// all where their regions split v along one axis (embedAll), and
	// otherwise each is padded and summed as its rule does. Nil until a
	// slice is met.
	var embeds map[int][]embedded
	take := func(v *interp.Var) *tensor {
		if es, ok := embeds[v.ID]; ok {
			delete(embeds, v.ID)
			if c := embedAll(v.Aval, es); c != nil {
				accum(v, c)
			} else {
				for _, em := range es {
					e := g.Eqns[em.k]
					accum(v, e.Prim.Transpose(e.Params, []*tensor{em.ct}, []*tensor{placeholder(v)}, []bool{true})[0])
				}
			}
		}
		c := ct[v.ID]
		ct[v.ID], sums[v.ID] = nil, nil
		return c
	}
	// Equations of primitives marked TransposeEarly (backward hooks) are
	// transposed as soon as their results' cotangents are complete:
	// right after the earliest equation that reads one of their results
	// (the last such reader the backward sweep meets), or before the
	// sweep when none does. The result is the same as in plain reverse
	// order up to the order in which cotangents are summed.
	earlyAt := earlyTransposes(g, eqLinear, linear)
	var done []bool
	if earlyAt != nil {
		done = make([]bool, len(g.Eqns))
	}
	var args []*tensor
	var lin []bool
	var outCts []*tensor
	transpose := func(k int) {
		e := g.Eqns[k]
		outCts = outCts[:0]
		anyCt := false
		for _, v := range e.Out {
			c := take(v)
			outCts = append(outCts, c)
			anyCt = anyCt || c != nil
		}
		if !anyCt {
			return
		}
		if e.Prim.Transpose == nil {
			panic(&interp.Error{Prim: e.Prim.Name, Msg: "no transpose rule: reverse-mode differentiation through this primitive is not supported"})
		}
		if len(e.In) == 1 && linear[e.In[0].ID] {
			if start, limit, ok := prims.EmbedRegion(e.Prim, e.Params); ok {
				if embeds == nil {
					embeds = map[int][]embedded{}
				}
				id := e.In[0].ID
				embeds[id] = append(embeds[id], embedded{k: k, ct: outCts[0], start: start, limit: limit})
				return
			}
		}
		args, lin = args[:0], lin[:0]
		for i, v := range e.In {
			if linear[v.ID] {
				if !prims.LinearIn(e.Prim, i) {
					panic(&interp.Error{Prim: e.Prim.Name, Msg: "operand " + strconv.Itoa(i) + " depends on a tangent but the primitive is not linear in it: a JVP rule is not linear in its tangents"})
				}
				args = append(args, placeholder(v))
				lin = append(lin, true)
			} else {
				args = append(args, env[v.ID])
				lin = append(lin, false)
			}
		}
		inCts := e.Prim.Transpose(e.Params, outCts, args, lin)
		for i, v := range e.In {
			if lin[i] && i < len(inCts) {
				accum(v, inCts[i])
			}
		}
		for i, v := range e.In {
			if !lin[i] && firstLin[v.ID] == int32(k) {
				args[i] = nil
				env[v.ID] = nil // its last reader in this sweep
			}
		}
	}
	early := func(at int) {
		for _, j := range earlyAt[at] {
			transpose(j)
			done[j] = true
		}
	}
	early(len(g.Eqns))
	for k := len(g.Eqns) - 1; k >= 0; k-- {
		if !eqLinear[k] || done != nil && done[k] {
			continue
		}
		transpose(k)
		if earlyAt != nil {
			early(k)
		}
	}
	res := make([]*tensor, len(g.In))
	for i, v := range g.In {
		res[i] = take(v)
	}
	return res
}

// embedded is the cotangent ct of the result of equation k, a slice of
// the region [start, limit) of its operand (prims.EmbedRegion).
type embedded struct {
	k            int
	ct           *tensor
	start, limit []int
}

// embedAll returns the tensor of aval a that holds each of es's
// cotangents in its region and zeros elsewhere, as one concatenation
// along the axis the regions split a along (zeros in their gaps), or
// nil when they do not: regions that differ from the whole of a in more
// than one axis, or in different ones, or that overlap. (A transformer's
// query, key and value, sliced from one projection, so get one
// cotangent written once, where padding each and summing wrote three
// and added two.) The values are those of the padded sum, exactly, but
// for the sign of a zero.
func embedAll(a interp.Aval, es []embedded) *tensor {
	axis := -1
	for _, em := range es {
		for d, n := range a.Shape {
			if em.start[d] == 0 && em.limit[d] == n {
				continue
			}
			if axis >= 0 && axis != d {
				return nil
			}
			axis = d
		}
	}
	if axis < 0 {
		return nil // whole regions: they overlap
	}
	slices.SortStableFunc(es, func(x, y embedded) int { return cmp.Compare(x.start[axis], y.start[axis]) })
	zeros := func(n int) *tensor {
		shape := slices.Clone(a.Shape)
		shape[axis] = n
		return prims.Zeros(interp.Aval{Shape: shape, DType: a.DType})
	}
	parts := make([]*tensor, 0, 2*len(es)+1)
	at := 0
	for _, em := range es {
		lo, hi := em.start[axis], em.limit[axis]
		switch {
		case hi == lo:
			continue // nothing to place
		case lo < at:
			return nil
		case lo > at:
			parts = append(parts, zeros(lo-at))
		}
		parts = append(parts, em.ct)
		at = hi
	}
	if at < a.Shape[axis] {
		parts = append(parts, zeros(a.Shape[axis]-at))
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: axis}, parts...)
}

// linearVars returns which vars of g depend on its inputs (indexed by
// ID) and which equations read such a var: the vars a transpose carries
// cotangents for, and the equations it transposes.
func linearVars(g *interp.Graph) (linear, eqLinear []bool) {
	linear = make([]bool, g.IDBound())
	for _, v := range g.In {
		linear[v.ID] = true
	}
	eqLinear = make([]bool, len(g.Eqns))
	for k, e := range g.Eqns {
		for _, v := range e.In {
			if linear[v.ID] {
				eqLinear[k] = true
			}
		}
		if eqLinear[k] {
			for _, v := range e.Out {
				linear[v.ID] = true
			}
		}
	}
	return linear, eqLinear
}

// NotLinear returns the first equation of g that applies, to a value
// depending on g's inputs (its operand i), a primitive with no transpose
// rule or not linear in that operand, or nil when there is none: then
// TransposeGraph transposes g unless a primitive linear in each operand
// alone (a product) has two that depend on the inputs, which its
// transpose rule refuses.
func NotLinear(g *interp.Graph) (e *interp.Eqn, i int) {
	linear, eqLinear := linearVars(g)
	for k, e := range g.Eqns {
		if !eqLinear[k] {
			continue
		}
		for i, v := range e.In {
			if linear[v.ID] && (e.Prim.Transpose == nil || !prims.LinearIn(e.Prim, i)) {
				return e, i
			}
		}
	}
	return nil, 0
}

// earlyTransposes returns, for the linear equations of g whose primitive
// is TransposeEarly and whose operands are all linear, the point of the
// backward sweep after which each can be transposed: the index of the
// earliest linear equation that reads one of its results, or len(g.Eqns)
// when none does (its cotangents are complete before the sweep). Keys
// list the equations in descending order. It is nil when g has none.
func earlyTransposes(g *interp.Graph, eqLinear, linear []bool) map[int][]int {
	var at map[int][]int
	for j := len(g.Eqns) - 1; j >= 0; j-- {
		e := g.Eqns[j]
		if !eqLinear[j] || !e.Prim.TransposeEarly {
			continue
		}
		allLinear := true
		for _, v := range e.In {
			allLinear = allLinear && linear[v.ID]
		}
		if !allLinear {
			continue
		}
		outs := map[*interp.Var]bool{}
		for _, v := range e.Out {
			outs[v] = true
		}
		r := len(g.Eqns)
		for k := j + 1; k < len(g.Eqns) && r == len(g.Eqns); k++ {
			if !eqLinear[k] {
				continue
			}
			for _, v := range g.Eqns[k].In {
				if outs[v] {
					r = k
					break
				}
			}
		}
		if at == nil {
			at = map[int][]int{}
		}
		at[r] = append(at[r], j)
	}
	return at
}

// placeholder stands for a linear operand in a transpose rule: its shape
// and dtype only (see the transpose contract in prims/helpers.go).
func placeholder(v *interp.Var) *tensor { return interp.Placeholder(v.Aval) }
