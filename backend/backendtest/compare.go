package backendtest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// check says how a result is compared with its reference.
type check struct {
	desc string
	// allow is the absolute error allowed for each element of a float
	// result; nil means exact.
	allow []float64
	// signedZero requires a zero to have the reference's sign (for data
	// movement and sign manipulation).
	signedZero bool
	// explain, when set, describes the inputs of element k.
	explain func(k int) string
}

// expect compares tensor got with want.
func (s *suite) expect(c check, got *interp.Tensor, want array) {
	s.t.Helper()
	if got == nil {
		s.failf("%s: nil result", c.desc)
		return
	}
	if got.DType() != want.dt || !interp.ShapeEqual(got.Shape(), want.shape) {
		s.failf("%s: result is %v, want %v", c.desc, got.TypeString(), interp.Aval{Shape: want.shape, DType: want.dt})
		return
	}
	s.expectArray(c, readTensor(got), want)
}

// expectArray compares host arrays of equal shape and dtype.
func (s *suite) expectArray(c check, got, want array) {
	s.t.Helper()
	n := want.size()
	if got.hostLen() != n {
		s.failf("%s: read %d elements, want %d", c.desc, got.hostLen(), n)
		return
	}
	bad, first := 0, -1
	for k := range n {
		if !elemEqual(c, got, want, k) {
			bad++
			if first < 0 {
				first = k
			}
		}
	}
	if bad == 0 {
		return
	}
	idx := make([]int, len(want.shape))
	unravel(first, want.shape, idx)
	msg := fmt.Sprintf("%s: %d of %d elements wrong; first at %v: got %s, want %s", c.desc, bad, n, idx, got.str(first), want.str(first))
	if c.allow != nil && want.dt.IsFloat() {
		msg += fmt.Sprintf(" (allowed error %.3g)", c.allow[first])
	}
	if c.explain != nil {
		msg += "; " + c.explain(first)
	}
	s.failf("%s", msg)
}

func elemEqual(c check, got, want array, k int) bool {
	switch want.dt {
	case backend.Bool:
		return got.b[k] == want.b[k]
	case backend.Int64:
		return got.i[k] == want.i[k]
	}
	allow := 0.0
	if c.allow != nil {
		allow = c.allow[k]
	}
	return floatClose(got.f[k], want.f[k], allow, c.signedZero)
}

// floatClose reports whether g matches w within allow: NaN matches NaN,
// an infinity only itself, and a finite w a finite g within allow.
func floatClose(g, w, allow float64, signedZero bool) bool {
	switch {
	case math.IsNaN(w):
		return math.IsNaN(g)
	case math.IsInf(w, 0):
		return g == w
	case math.IsNaN(g) || math.IsInf(g, 0):
		return false
	case g == w:
		return !signedZero || w != 0 || math.Signbit(g) == math.Signbit(w)
	}
	return math.Abs(g-w) <= allow
}

// tolerance is an error bound for elementwise float results: rel·|want| +
// arg·cond + abs, where cond is the function's condition term |x·f′(x)|
// (summed over operands).
type tolerance struct {
	rel, arg, abs float64
}

// opKind classifies an elementwise operation by the accuracy demanded.
type opKind uint8

const (
	exactOp  opKind = iota // correctly rounded by definition: sign, floor, max, …
	arithOp                // + − × ÷ and fmod
	transcOp               // exp, sin, pow, … (backends may approximate)
)

func tolFor(k opKind, dt backend.DType) tolerance {
	switch {
	case k == exactOp:
		return tolerance{}
	case k == arithOp && dt == backend.Float32:
		return tolerance{rel: 0x1p-22}
	case k == arithOp:
		return tolerance{rel: 1e-12}
	case dt == backend.Float32:
		return tolerance{rel: 4e-6, arg: 0x1p-22, abs: 2e-38}
	}
	return tolerance{rel: 1e-12, arg: 0x1p-51, abs: 1e-307}
}

// bound returns the error allowed for reference value want with
// condition term cond.
func (t tolerance) bound(want, cond float64) float64 {
	if math.IsNaN(cond) {
		cond = 0
	}
	return t.rel*math.Abs(want) + t.arg*math.Abs(cond) + t.abs
}

// unitRoundoff returns u, half the distance from 1 to the next float of dt.
func unitRoundoff(dt backend.DType) float64 {
	if dt == backend.Float32 {
		return 0x1p-24
	}
	return 0x1p-53
}

// sumBound is the error allowed for a sum of n terms whose magnitudes add
// up to mag, computed in any order and rounded to dt.
func sumBound(dt backend.DType, n int, mag, want float64) float64 {
	u := unitRoundoff(dt)
	return 2*float64(n+1)*u*mag + 2*u*math.Abs(want)
}
