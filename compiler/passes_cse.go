package compiler

import (
	"encoding/binary"
	"math"
	"reflect"
	"runtime"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// maxConstKey is the largest constant (in elements) CSE compares by
// value; larger constants are merged only with themselves.
const maxConstKey = 1 << 12

// CSE merges equal computations: an equation that applies the same
// primitive with equal parameters (paramsEqual) to the same inputs as an
// earlier one (in either order for add, mul, and, or, eq and ne) is
// dropped and its results replaced by the earlier one's,
// and constants of equal type and value (up to maxConstKey elements,
// compared bit for bit) become one. Every pure and view primitive is
// deterministic in peel (random numbers are functions of explicit keys,
// so two draws are merged only when their keys and counters are the same
// values), so only mutation equations, equations of primitives that act
// outside their results (Prim.Effect), and equations that read or define
// a value written in place, are never merged.
func CSE(g *interp.Graph) *interp.Graph {
	sub := map[*interp.Var]*interp.Var{}
	out := &interp.Graph{In: g.In}
	type constRep struct {
		v  *interp.Var
		be backend.Backend
	}
	seen := map[string]constRep{}
	for i, c := range g.Consts {
		t := g.ConstVals[i]
		if k, ok := constKey(t); ok {
			_, be := interp.ArrayOf(t)
			if w, dup := seen[k]; dup && sameBackend(w.be, be) {
				sub[c] = w.v
				continue
			}
			if _, dup := seen[k]; !dup {
				seen[k] = constRep{c, be}
			}
		}
		out.Consts = append(out.Consts, c)
		out.ConstVals = append(out.ConstVals, g.ConstVals[i])
	}
	mut := mutated(g)
	type key struct {
		id  int
		in0 *interp.Var
		n   int
	}
	buckets := map[key][]*interp.Eqn{}
	changed := len(sub) > 0
	for _, e := range g.Eqns {
		if in, ok := substitute(e.In, sub); ok {
			e = &interp.Eqn{Prim: e.Prim, Params: e.Params, In: in, Out: e.Out, Site: e.Site}
		}
		if e.Prim.Kind == interp.Mutation || e.HasEffect() || touches(e, mut) {
			out.Eqns = append(out.Eqns, e)
			continue
		}
		comm := commutative[e.Prim] && len(e.In) == 2
		k := key{id: e.Prim.ID, n: len(e.In)}
		if len(e.In) > 0 {
			k.in0 = e.In[0]
			if comm && e.In[1].ID < e.In[0].ID {
				k.in0 = e.In[1]
			}
		}
		var twin *interp.Eqn
		for _, f := range buckets[k] {
			same := sameInputs(e.In, f.In) || comm && e.In[0] == f.In[1] && e.In[1] == f.In[0]
			if same && len(f.Out) == len(e.Out) && paramsEqual(e.Params, f.Params) {
				twin = f
				break
			}
		}
		if twin == nil {
			buckets[k] = append(buckets[k], e)
			out.Eqns = append(out.Eqns, e)
			continue
		}
		for j, v := range e.Out {
			sub[v] = twin.Out[j]
		}
		changed = true
	}
	if !changed {
		return g
	}
	out.Out, _ = substitute(g.Out, sub)
	return out
}

// sameBackend reports whether a and b are the same backend.
func sameBackend(a, b backend.Backend) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// commutative are the binary primitives whose result is the same, bit
// for bit, with their operands swapped (IEEE addition and multiplication
// are commutative, signed zeros included; max and min are not listed:
// which zero or NaN they return may depend on the order).
var commutative = map[*interp.Prim]bool{
	prims.Add: true, prims.Mul: true, prims.And: true, prims.Or: true, prims.Eq: true, prims.Ne: true,
}

func sameInputs(a, b []*interp.Var) bool { return slices.Equal(a, b) }

// constKey returns a key that two constants share exactly when they have
// one type and equal elements bit for bit, for constants of at most
// maxConstKey elements.
func constKey(t *interp.Tensor) (string, bool) {
	if t.Size() > maxConstKey {
		return "", false
	}
	return constBytes(t)
}

// constBytes returns a constant's type, backend name and elements, bit
// for bit, as a string.
func constBytes(t *interp.Tensor) (string, bool) {
	if !t.IsConcrete() {
		return "", false
	}
	arr, be := interp.ArrayOf(t)
	b := []byte(interp.AvalsKey([]interp.Aval{interp.AvalOf(t)}) + "|" + be.Name() + "|")
	h := be.ToHost(arr)
	runtime.KeepAlive(t)
	switch h := h.(type) {
	case []float64:
		for _, v := range h {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	case []float32:
		for _, v := range h {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	case []int64:
		for _, v := range h {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	case []bool:
		for _, v := range h {
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	default:
		return "", false
	}
	return string(b), true
}
