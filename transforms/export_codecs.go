package transforms

import (
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The parameter codecs of the primitives this package defines that hold
// graphs (compiled_call, cond, while, scan; checkpoint and name are in
// checkpoint.go), for exported programs: each primitive's definition
// sets its codec (graphio.ParamsWith) from the functions here. Each
// decoder checks that the graphs fit together (a loop body returns its
// carry's types), so that the loader's type check of the equation (the
// primitive's Abstract on its operands) covers the whole primitive.

// sameTypes reports whether the vars have the avals of the others.
func sameTypes(a, b []*interp.Var) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Aval.Equal(b[i].Aval) {
			return false
		}
	}
	return true
}

func encodeCall(w *graphio.Writer, c *callParams) {
	w.Text(c.name)
	w.Graph(c.graph)
}

func decodeCall(r *graphio.Reader) *callParams {
	name := r.Text()
	g := r.Graph()
	if r.Err() != nil {
		return nil
	}
	return newCallParamsOn(name, g, r.Backend())
}

func encodeCond(w *graphio.Writer, c *condParams) {
	w.Uint(uint64(len(c.branches)))
	for _, g := range c.branches {
		w.Graph(g)
	}
}

func decodeCond(r *graphio.Reader) *condParams {
	n := r.Len()
	gs := make([]*interp.Graph, 0, n)
	for range n {
		gs = append(gs, r.Graph())
	}
	if r.Err() != nil {
		return nil
	}
	if n == 0 {
		r.Failf("a cond without branches")
		return nil
	}
	for k, g := range gs[1:] {
		if !sameTypes(g.In, gs[0].In) || !sameTypes(g.Out, gs[0].Out) {
			r.Failf("cond branch %d's types differ from branch 0's", k+1)
			return nil
		}
	}
	return newCondParams(gs)
}

// encodeWhile writes a while's graphs and carry count; a bounded loop's
// (MaxTrips) count is written negated, −(n + 1), followed by the bound,
// so that files of unbounded loops read as before.
func encodeWhile(w *graphio.Writer, p *whileParams) {
	w.Graph(p.cond)
	w.Graph(p.body)
	if p.maxTrips > 0 {
		w.Int(-(p.nCarry + 1))
		w.Int(p.maxTrips)
		return
	}
	w.Int(p.nCarry)
}

func decodeWhile(r *graphio.Reader) *whileParams {
	cond, body, n := r.Graph(), r.Graph(), r.Int()
	trips := 0
	if n < 0 {
		n, trips = -n-1, r.Int()
		if r.Err() == nil && trips <= 0 {
			r.Failf("a while loop bounded by %d trips", trips)
			return nil
		}
	}
	if r.Err() != nil {
		return nil
	}
	switch {
	case n < 0 || n > len(body.In) || len(body.Out) != n:
		r.Failf("a while loop of %d carry values whose body takes %d and returns %d", n, len(body.In), len(body.Out))
	case !sameTypes(body.Out, body.In[:n]):
		r.Failf("a while loop whose body does not return its carry's types")
	case !sameTypes(cond.In, body.In):
		r.Failf("a while loop whose predicate and body take different operands")
	case len(cond.Out) != 1 || len(cond.Out[0].Aval.Shape) != 0:
		r.Failf("a while loop whose predicate is not one scalar")
	default:
		return &whileParams{cond: cond, body: body, nCarry: n, maxTrips: trips}
	}
	return nil
}

func encodeWhileLin(w *graphio.Writer, p *whileLinParams) {
	encodeWhile(w, p.w)
	w.Int(p.lo)
	w.Int(p.hi)
}

func decodeWhileLin(r *graphio.Reader) *whileLinParams {
	p := decodeWhile(r)
	lo, hi := r.Int(), r.Int()
	if r.Err() != nil || p == nil {
		return nil
	}
	if lo < 0 || lo > hi || hi > p.nCarry {
		r.Failf("a while_lin of results [%d, %d) of %d", lo, hi, p.nCarry)
		return nil
	}
	return &whileLinParams{w: p, lo: lo, hi: hi}
}

func encodeScan(w *graphio.Writer, s *scanParams) {
	w.Graph(s.body)
	for _, n := range []int{s.nCarry, s.nX, s.length, s.nRes, s.nInv} {
		w.Int(n)
	}
	w.Bool(s.reverse)
	w.Bool(s.policy != nil)
	if s.policy != nil {
		encodePolicy(w, *s.policy)
	}
}

func decodeScan(r *graphio.Reader) *scanParams {
	s := &scanParams{body: r.Graph()}
	s.nCarry, s.nX, s.length, s.nRes, s.nInv = r.Int(), r.Int(), r.Int(), r.Int(), r.Int()
	s.reverse = r.Bool()
	if r.Bool() {
		p := decodePolicy(r)
		s.policy = &p
	}
	if r.Err() != nil {
		return nil
	}
	g := s.body
	switch {
	case s.nCarry < 0 || s.nX < 0 || s.length < 0 || s.nRes < 0 || s.nInv < 0:
		r.Failf("a scan with a negative count")
	case s.nCarry+s.nX > len(g.In) || s.nRes > s.nX || s.nInv > len(g.In)-s.nCarry-s.nX || len(g.Out) < s.nCarry:
		r.Failf("a scan of %d carry values and %d xs whose body takes %d and returns %d", s.nCarry, s.nX, len(g.In), len(g.Out))
	case !sameTypes(g.Out[:s.nCarry], g.In[:s.nCarry]):
		r.Failf("a scan whose body does not return its carry's types")
	default:
		return s
	}
	return nil
}
