package cpu

import (
	"math"
	"unsafe"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Elementwise kernels.
//
// Every kernel type-switches once on its operands' buffers and then runs a
// generic loop specialized to the element type; large outputs are split
// across goroutines by parallelFor. Unary and binary kernels are
// registered with splat=true: an operand that is a broadcast of a single
// element (a non-contiguous input, or any input of size 1) is read once,
// so x+2 with 2 broadcast to x's shape never materializes the broadcast.
//
// Integer semantics (no integer operation panics):
//   - div and rem by zero give 0; MinInt64/-1 gives MinInt64 and
//     MinInt64 rem -1 gives 0 (two's-complement wraparound);
//   - add, sub, mul, neg, abs and pow wrap around on overflow;
//   - pow with a negative exponent gives 1 for base 1, ±1 for base -1
//     (by the exponent's parity) and 0 otherwise, including base 0.
//
// Float semantics: max and min propagate NaN (max(-0, +0) = +0); sign is
// -1, 0 or +1 with the sign of a zero and NaN kept; round is half away
// from zero; rem has the sign of the dividend (C's fmod).

// Element type sets of the generic loops.
type (
	elemFloat interface{ ~float32 | ~float64 }
	elemNum   interface{ ~int64 | ~float32 | ~float64 }
)

// Costs passed to parallelFor: relative per-element work.
const (
	costCheap = 1
	costMath  = 8
	costHeavy = 20
)

// isSplatIn reports whether a kernel input holds a single element that
// stands for all of them. Exec materializes every other non-contiguous
// input before calling a splat kernel.
func isSplatIn(a backend.Array) bool {
	return a.Size() == 1 || !a.IsContiguous()
}

// isSplatN is isSplatIn for an operand a of n elements (an elementwise
// operand has its result's size), without counting them again: part of
// the per-call cost of small kernels.
func isSplatN(a *backend.Array, n int) bool {
	return n == 1 || (a.Strides != nil && !a.IsContiguous())
}

// fillSlice sets every element of d to v.
func fillSlice[T any](d []T, v T) {
	if len(d) == 0 {
		return
	}
	d[0] = v
	for n := 1; n < len(d); n *= 2 {
		copy(d[n:], d[:n])
	}
}

// badDType panics for a dtype a kernel was not written for; shape rules
// make this unreachable through Bind.
func badDType(p *interp.Prim, dt backend.DType) {
	interp.Panicf("cpu: %s has no kernel for dtype %v", p.Name, dt)
}

// ---------------------------------------------------------------------------
// Unary operations.

// unaryLoops holds one unary operation's loop per operand dtype; nil for
// dtypes the operation does not accept.
type unaryLoops struct {
	b   func(d, a []bool)
	i   func(d, a []int64)
	f32 func(d, a []float32)
	f64 func(d, a []float64)
	// cost32, when set, is the float32 loop's cost in place of the
	// primitive's (a fast float32 kernel next to a slow float64 one).
	cost32 int
}

// costOf returns the cost of the loop for dt.
func (l unaryLoops) costOf(cost int, dt backend.DType) int {
	if dt == backend.Float32 && l.cost32 > 0 {
		return l.cost32
	}
	return cost
}

func registerUnary(p *interp.Prim, cost int, l unaryLoops) {
	register(p, true, func(_ any, in, out []backend.Array) {
		x, o := &in[0], out[0]
		switch buf := x.Buf.(type) {
		case *boolBuf:
			runUnary(p, l.b, cost, bools(o), buf.s, x)
		case *i64Buf:
			runUnary(p, l.i, cost, i64s(o), buf.s, x)
		case *f32Buf:
			runUnary(p, l.f32, l.costOf(cost, backend.Float32), f32s(o), buf.s, x)
		case *f64Buf:
			runUnary(p, l.f64, cost, f64s(o), buf.s, x)
		default:
			badDType(p, x.Buf.DType())
		}
	})
	setResolver(p, unaryResolver(cost, l))
}

// runUnary applies f to the operand x (stored in buf) into d.
func runUnary[T, R any](p *interp.Prim, f func(d []R, a []T), cost int, d []R, buf []T, x *backend.Array) {
	if f == nil {
		badDType(p, x.Buf.DType())
	}
	n := len(d)
	if n == 0 {
		return
	}
	if isSplatN(x, n) {
		f(d[:1], buf[x.Offset:x.Offset+1])
		fillSlice(d, d[0])
		return
	}
	a := buf[x.Offset : x.Offset+n]
	if serial(n, cost) {
		f(d, a)
		return
	}
	parallelFor(n, cost, func(lo, hi int) { f(d[lo:hi], a[lo:hi]) })
}

func negLoop[T elemNum](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = -x
	}
}

func absLoop[T elemNum](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		if x < 0 {
			x = -x
		}
		d[i] = x
	}
}

func absFloatLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Abs(float64(x)))
	}
}

func signLoop[T elemNum](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		switch {
		case x > 0:
			d[i] = 1
		case x < 0:
			d[i] = -1
		default: // zero (keeping its sign) or NaN
			d[i] = x
		}
	}
}

func floorLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Floor(float64(x)))
	}
}

func ceilLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Ceil(float64(x)))
	}
}

func roundLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Round(float64(x)))
	}
}

func expLoop64(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = math.Exp(x)
	}
}

// logLoop64 sets d[i] = ln a[i]: math.Log, except for subnormal inputs.
// On amd64 math.Log is an assembly routine that splits its argument into
// exponent and mantissa as if it were normal (golang/go#56600), which
// for a subnormal gives the logarithm of another number (log(5e-324) =
// -709.09, not -744.44); the pure Go version on other architectures is
// right. One comparison, false for every normal, zero, negative and NaN
// input, sends subnormals to logSubnormal64, so the common path is
// unchanged.
func logLoop64(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		if x < minNormal64 && x > 0 {
			d[i] = logSubnormal64(x)
			continue
		}
		d[i] = math.Log(x)
	}
}

const (
	// minNormal64 is the smallest positive normal float64, 2^-1022.
	minNormal64 = 0x1p-1022
	// ln2Hi + ln2Lo is ln 2 to about 2^-85 relative; ln2Hi has 32
	// significant bits, so k·ln2Hi is exact for every float64 exponent k.
	ln2Hi = 0x1.62e42feep-1
	ln2Lo = math.Ln2 - ln2Hi
)

// logSubnormal64 returns ln x for a positive subnormal x, to about half
// an ulp: x = f·2^k with f in [½, 1) (math.Frexp normalizes
// subnormals), so ln x = k·ln2Hi + (ln f + k·ln2Lo), where k·ln2Hi is
// exact, ln f is a normal argument's logarithm with an error far below
// the result's ulp (|ln f| < 0.7, the result's magnitude is above 708),
// and the sum rounds once.
func logSubnormal64(x float64) float64 {
	f, k := math.Frexp(x)
	kf := float64(k)
	return kf*ln2Hi + (math.Log(f) + kf*ln2Lo)
}

func log1pLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Log1p(float64(x)))
	}
}

func expm1Loop64(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = math.Expm1(x)
	}
}

// sqrtLoop is correctly rounded for float32 too: the float64 square root
// of a float32 rounds to the correctly rounded float32 result.
func sqrtLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Sqrt(float64(x)))
	}
}

func rsqrtLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(1 / math.Sqrt(float64(x)))
	}
}

func sinLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Sin(float64(x)))
	}
}

func cosLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Cos(float64(x)))
	}
}

func tanLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Tan(float64(x)))
	}
}

func tanhLoop64(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = math.Tanh(x)
	}
}

// logisticLoop64 computes 1/(1+e^-x) without overflow or cancellation:
// for x < 0 it uses e^x/(1+e^x), which keeps the relative precision of
// tiny results.
func logisticLoop64(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		if x >= 0 {
			d[i] = 1 / (1 + math.Exp(-x))
		} else {
			e := math.Exp(x)
			d[i] = e / (1 + e)
		}
	}
}

func erfLoop[T elemFloat](d, a []T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Erf(float64(x)))
	}
}

func notBoolLoop(d, a []bool) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = !x
	}
}

func notIntLoop(d, a []int64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = ^x
	}
}

func copyLoop[T any](d, a []T) { copyElems(d, a[:len(d)]) }

// ---------------------------------------------------------------------------
// Binary operations.

// binLoops are one binary operation's loops for operand type T and result
// type R: tensor-tensor, tensor-scalar and scalar-tensor.
type binLoops[T, R any] struct {
	vv func(d []R, a, b []T)
	vs func(d []R, a []T, s T)
	sv func(d []R, s T, b []T)
	// rowsVS and rowsSV, when set, are vs and sv over len(s) rows of k
	// elements in one call, each row with its own scalar: d's row r is
	// op(a's row r, s[r]), or op(s[r], a's row r) (runRowSplat).
	rowsVS, rowsSV func(d []R, a, s []T, k int)
	// small, when set, are the portable loops of SIMD loops, for calls
	// of fewer than simdMin elements (see simdArith).
	small *binLoops[T, R]
}

// simdMin is the length below which the float arithmetic runs its
// portable loops rather than its SIMD ones: the assembly call costs
// more than it saves on a few vectors (measured on AVX2: 8 float64 adds
// take 9 ns through the assembly, 3 in the Go loop; they break even near
// 40 elements). The SIMD add, sub, mul and div are exact IEEE
// operations, so both give the same bits.
const simdMin = 32

// simdArith returns the loops vec of an operation with SIMD kernels
// where the CPU runs them, keeping its portable loops port for calls of
// fewer than simdMin elements; port where it does not.
func simdArith[T elemNum](vec, port binLoops[T, T]) binLoops[T, T] {
	if !haveSIMD {
		return port
	}
	vec.small = &port
	return vec
}

// forSize returns the loops to run on n elements.
func (l *binLoops[T, R]) forSize(n int) *binLoops[T, R] {
	if l.small != nil && n < simdMin {
		return l.small
	}
	return l
}

// binOp holds a binary operation's loops per operand dtype; R is T for
// arithmetic, bool for comparisons. Zero loops mark dtypes the operation
// does not accept.
type binOp[RB, RI, RF32, RF64 any] struct {
	b   binLoops[bool, RB]
	i   binLoops[int64, RI]
	f32 binLoops[float32, RF32]
	f64 binLoops[float64, RF64]
}

// registerArith registers an operation whose result has its operands' dtype.
func registerArith(p *interp.Prim, cost int, o binOp[bool, int64, float32, float64]) {
	registerRepeat(p, func(_ any, in, out []backend.Array) {
		x, y, d := &in[0], &in[1], out[0]
		switch xb := x.Buf.(type) {
		case *boolBuf:
			runBinary(p, &o.b, cost, bools(d), x, y, xb.s, y.Buf.(*boolBuf).s)
		case *i64Buf:
			runBinary(p, &o.i, cost, i64s(d), x, y, xb.s, y.Buf.(*i64Buf).s)
		case *f32Buf:
			runBinary(p, &o.f32, cost, f32s(d), x, y, xb.s, y.Buf.(*f32Buf).s)
		case *f64Buf:
			runBinary(p, &o.f64, cost, f64s(d), x, y, xb.s, y.Buf.(*f64Buf).s)
		default:
			badDType(p, x.Buf.DType())
		}
	})
	setResolver(p, arithResolver(cost, o))
	e := regs[p]
	e.inPlace = true
	regs[p] = e
}

// registerCompare registers an operation whose result is bool.
func registerCompare(p *interp.Prim, o binOp[bool, bool, bool, bool]) {
	registerRepeat(p, func(_ any, in, out []backend.Array) {
		x, y, d := &in[0], &in[1], bools(out[0])
		switch xb := x.Buf.(type) {
		case *boolBuf:
			runBinary(p, &o.b, costCheap, d, x, y, xb.s, y.Buf.(*boolBuf).s)
		case *i64Buf:
			runBinary(p, &o.i, costCheap, d, x, y, xb.s, y.Buf.(*i64Buf).s)
		case *f32Buf:
			runBinary(p, &o.f32, costCheap, d, x, y, xb.s, y.Buf.(*f32Buf).s)
		case *f64Buf:
			runBinary(p, &o.f64, costCheap, d, x, y, xb.s, y.Buf.(*f64Buf).s)
		default:
			badDType(p, x.Buf.DType())
		}
	})
	setResolver(p, compareResolver(o))
}

// runBinary computes d = op(x, y) where x and y are stored in xb and yb.
// The loops and operands are passed by pointer: this is the per-call
// path of every small binary kernel, where copying them costs.
func runBinary[T, R any](p *interp.Prim, lp *binLoops[T, R], cost int, d []R, x, y *backend.Array, xb, yb []T) {
	if lp.vv == nil {
		badDType(p, x.Buf.DType())
	}
	n := len(d)
	if n == 0 {
		return
	}
	l := lp.forSize(n)
	if x.Strides == nil && y.Strides == nil && serial(n, cost) {
		// Contiguous operands (a single element among them: the vector
		// of one is the element), the common small call.
		l.vv(d, xb[x.Offset:x.Offset+n], yb[y.Offset:y.Offset+n])
		return
	}
	if x.Strides != nil || y.Strides != nil {
		if xk, yk := rowSplat(*x), rowSplat(*y); xk > 0 || yk > 0 {
			runRowSplat(p, lp, cost, d, x, y, xb, yb, xk, yk)
			return
		}
		if xk, yk := repeatBlock(*x), repeatBlock(*y); xk > 0 || yk > 0 {
			runRepeat(*l, cost, d, *x, *y, xb, yb, xk, yk)
			return
		}
	}
	xs, ys := isSplatN(x, n), isSplatN(y, n)
	if !xs && !ys && serial(n, cost) {
		l.vv(d, xb[x.Offset:x.Offset+n], yb[y.Offset:y.Offset+n])
		return
	}
	ser := serial(n, cost) // the closures below are heap-allocated
	switch {
	case xs && ys:
		l.vv(d[:1], xb[x.Offset:x.Offset+1], yb[y.Offset:y.Offset+1])
		fillSlice(d, d[0])
	case ys && ser:
		l.vs(d, xb[x.Offset:x.Offset+n], yb[y.Offset])
	case ys:
		a, s := xb[x.Offset:x.Offset+n], yb[y.Offset]
		parallelFor(n, cost, func(lo, hi int) { l.vs(d[lo:hi], a[lo:hi], s) })
	case xs && ser:
		l.sv(d, xb[x.Offset], yb[y.Offset:y.Offset+n])
	case xs:
		s, b := xb[x.Offset], yb[y.Offset:y.Offset+n]
		parallelFor(n, cost, func(lo, hi int) { l.sv(d[lo:hi], s, b[lo:hi]) })
	default:
		a, b := xb[x.Offset:x.Offset+n], yb[y.Offset:y.Offset+n]
		parallelFor(n, cost, func(lo, hi int) { l.vv(d[lo:hi], a[lo:hi], b[lo:hi]) })
	}
}

// minRepeatBlock is the smallest block read in place by runRepeat: below
// it, one loop call per block costs more than materializing the operand
// (measured with the vmapped tiny chain, blocks of 8).
const minRepeatBlock = 64

// repeatBlock returns k when a is a block of k ≥ minRepeatBlock
// contiguous elements repeated along leading zero-stride dimensions (an
// operand broadcast along its leading dimensions, as vmap's unbatched
// operands are), and 0 for contiguous, splat and other layouts.
func repeatBlock(a backend.Array) int {
	if a.Strides == nil {
		return 0
	}
	// The trailing dimensions are contiguous (k elements), the leading
	// ones repeat them.
	j, k := trailingDims(a, 1)
	if !leadingDims(a, j, 0) || k < minRepeatBlock || k == a.Size() {
		return 0
	}
	return k
}

// trailingDims returns the number j of a's leading dimensions left when its
// trailing ones (size-1 dimensions skipped) have the strides of a
// contiguous block (step 1) or of one broadcast element (step 0), and
// the k elements those trailing dimensions hold.
func trailingDims(a backend.Array, step int) (j, k int) {
	j, k = len(a.Shape), 1
	for ; j > 0; j-- {
		d := j - 1
		if a.Shape[d] == 1 {
			continue
		}
		if a.Strides[d] != k*step {
			break
		}
		k *= a.Shape[d]
	}
	return j, k
}

// leadingDims reports whether a's first j dimensions (size-1 dimensions
// skipped) have the strides of a contiguous array (step 1) or are
// broadcast (step 0).
func leadingDims(a backend.Array, j, step int) bool {
	s := 1
	for d := j - 1; d >= 0; d-- {
		if a.Shape[d] == 1 {
			continue
		}
		if a.Strides[d] != s*step {
			return false
		}
		s *= a.Shape[d]
	}
	return true
}

// runRepeat is runBinary with a repeated-block operand, read in place
// block by block instead of being materialized. When both operands repeat,
// y is materialized first.
func runRepeat[T, R any](l binLoops[T, R], cost int, d []R, x, y backend.Array, xb, yb []T, xk, yk int) {
	n := len(d)
	if xk > 0 && yk > 0 {
		c := make([]T, n)
		stridedCopy(c, yb, backend.Array{Shape: y.Shape}, y)
		y, yb, yk = backend.Array{Shape: y.Shape}, c, 0
	}
	k := max(xk, yk)
	// Whether the other operand is one element, asked once: per block
	// (a row of 64 in a GPT's bias additions) it was half of this
	// function's time.
	xSplat, ySplat := isSplatIn(x), isSplatIn(y)
	body := func(lo, hi int) { // whole blocks in [lo, hi)
		for off := lo; off < hi; off += k {
			dd := d[off : off+k]
			switch {
			case xk > 0 && ySplat:
				l.vs(dd, xb[x.Offset:x.Offset+k], yb[y.Offset])
			case xk > 0:
				l.vv(dd, xb[x.Offset:x.Offset+k], yb[y.Offset+off:y.Offset+off+k])
			case xSplat:
				l.sv(dd, xb[x.Offset], yb[y.Offset:y.Offset+k])
			default:
				l.vv(dd, xb[x.Offset+off:x.Offset+off+k], yb[y.Offset:y.Offset+k])
			}
		}
	}
	blocks := n / k
	if serial(n, cost) {
		body(0, n)
		return
	}
	parallelFor(blocks, max(1, cost*k), func(lo, hi int) { body(lo*k, hi*k) })
}

// minRowSplat is the shortest row read in place by runRowSplat: below it
// one loop call per row costs more than materializing the operand.
const minRowSplat = 16

// rowSplat returns k when a holds one element per row of k ≥
// minRowSplat elements: trailing zero-stride dimensions of k elements in
// all (a [..., 1] operand broadcast along its last axes, as a row's
// maximum, sum or mean is in softmax and the norms), over leading
// dimensions that are contiguous (element r for row r, from a.Offset).
// It returns 0 for every other layout, a whole splat included.
func rowSplat(a backend.Array) int {
	if a.Strides == nil {
		return 0
	}
	// The trailing dimensions broadcast one element over k, the leading
	// ones hold the rows' elements contiguously.
	j, k := trailingDims(a, 0)
	if k < minRowSplat || j == 0 || !leadingDims(a, j, 1) || k == a.Size() {
		return 0
	}
	return k
}

// runRowSplat computes d = op(x, y) where x (xk > 0) or y (yk > 0) holds
// one element per row of k (rowSplat) and the other operand is
// contiguous: a tensor-scalar (or scalar-tensor) loop per row, reading
// the row's element in place. Any other pairing materializes the row
// operands and runs runBinary on contiguous arrays.
func runRowSplat[T, R any](p *interp.Prim, lp *binLoops[T, R], cost int, d []R, x, y *backend.Array, xb, yb []T, xk, yk int) {
	plain := func(a *backend.Array) bool { return a.Strides == nil || a.IsContiguous() }
	if (xk > 0 && !plain(y)) || (yk > 0 && !plain(x)) {
		dense := func(a *backend.Array, ab []T) (*backend.Array, []T) {
			if plain(a) {
				return a, ab
			}
			c := make([]T, a.Size())
			stridedCopy(c, ab, backend.Array{Shape: a.Shape}, *a)
			return &backend.Array{Shape: a.Shape}, c
		}
		x, xb = dense(x, xb)
		y, yb = dense(y, yb)
		runBinary(p, lp, cost, d, x, y, xb, yb)
		return
	}
	l := lp.forSize(len(d))
	k := max(xk, yk)
	body := func(lo, hi int) { // rows [lo, hi)
		switch {
		case yk > 0 && l.rowsVS != nil:
			l.rowsVS(d[lo*k:hi*k], xb[x.Offset+lo*k:x.Offset+hi*k], yb[y.Offset+lo:y.Offset+hi], k)
			return
		case xk > 0 && l.rowsSV != nil:
			l.rowsSV(d[lo*k:hi*k], yb[y.Offset+lo*k:y.Offset+hi*k], xb[x.Offset+lo:x.Offset+hi], k)
			return
		}
		for r := lo; r < hi; r++ {
			dd := d[r*k : (r+1)*k]
			if yk > 0 {
				l.vs(dd, xb[x.Offset+r*k:x.Offset+(r+1)*k], yb[y.Offset+r])
			} else {
				l.sv(dd, xb[x.Offset+r], yb[y.Offset+r*k:y.Offset+(r+1)*k])
			}
		}
	}
	rows := len(d) / k
	if serial(len(d), cost) {
		body(0, rows)
		return
	}
	parallelFor(rows, max(1, cost*k), body)
}

// swapVS turns a tensor-scalar loop of a commutative operation into its
// scalar-tensor loop.
func swapVS[T, R any](vs func(d []R, a []T, s T)) func(d []R, s T, b []T) {
	return func(d []R, s T, b []T) { vs(d, b, s) }
}

// commutative builds the loops of a commutative operation.
func commutative[T, R any](vv func(d []R, a, b []T), vs func(d []R, a []T, s T)) binLoops[T, R] {
	return binLoops[T, R]{vv: vv, vs: vs, sv: swapVS(vs)}
}

// Arithmetic loops. The loops reslice their operands to len(d) first so
// the compiler drops the bounds checks.

func addVV[T elemNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] + b[i]
	}
}

func addVS[T elemNum](d, a []T, s T) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], a[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = q[0]+s, q[1]+s, q[2]+s, q[3]+s
	}
	for ; i < len(d); i++ {
		x := a[i]
		d[i] = x + s
	}
}

func subVV[T elemNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] - b[i]
	}
}

func subVS[T elemNum](d, a []T, s T) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], a[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = q[0]-s, q[1]-s, q[2]-s, q[3]-s
	}
	for ; i < len(d); i++ {
		x := a[i]
		d[i] = x - s
	}
}

func subSV[T elemNum](d []T, s T, b []T) {
	b = b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], b[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = s-q[0], s-q[1], s-q[2], s-q[3]
	}
	for ; i < len(d); i++ {
		x := b[i]
		d[i] = s - x
	}
}

func mulVV[T elemNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] * b[i]
	}
}

func mulVS[T elemNum](d, a []T, s T) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], a[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = q[0]*s, q[1]*s, q[2]*s, q[3]*s
	}
	for ; i < len(d); i++ {
		x := a[i]
		d[i] = x * s
	}
}

func divVV[T elemFloat](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] / b[i]
	}
}

func divVS[T elemFloat](d, a []T, s T) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], a[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = q[0]/s, q[1]/s, q[2]/s, q[3]/s
	}
	for ; i < len(d); i++ {
		x := a[i]
		d[i] = x / s
	}
}

func divSV[T elemFloat](d []T, s T, b []T) {
	b = b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], b[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = s/q[0], s/q[1], s/q[2], s/q[3]
	}
	for ; i < len(d); i++ {
		x := b[i]
		d[i] = s / x
	}
}

// idiv is integer division truncating toward zero, with x/0 = 0 (Go
// already gives MinInt64/-1 = MinInt64).
func idiv(x, y int64) int64 {
	if y == 0 {
		return 0
	}
	return x / y
}

// irem is the remainder of idiv (sign of the dividend), with x rem 0 = 0.
func irem(x, y int64) int64 {
	if y == 0 {
		return 0
	}
	return x % y
}

func divIVV(d, a, b []int64) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = idiv(a[i], b[i])
	}
}

func divIVS(d, a []int64, s int64) {
	if s == 0 {
		clear(d)
		return
	}
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x / s
	}
}

func divISV(d []int64, s int64, b []int64) {
	b = b[:len(d)]
	for i, x := range b {
		d[i] = idiv(s, x)
	}
}

func remIVV(d, a, b []int64) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = irem(a[i], b[i])
	}
}

func remIVS(d, a []int64, s int64) {
	if s == 0 {
		clear(d)
		return
	}
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x % s
	}
}

func remISV(d []int64, s int64, b []int64) {
	b = b[:len(d)]
	for i, x := range b {
		d[i] = irem(s, x)
	}
}

// fmod returns math.Mod(x, y), the exact remainder of x/y truncated
// toward zero, with x's sign. math.Mod takes one step per bit of the
// quotient (each a Frexp and an Ldexp); when the quotient is below 2^52
// in magnitude, y is finite and math.FMA is a hardware instruction,
// fmod instead computes x − q·y with one FMA, q = trunc(x/y). The exact
// remainder is representable, so the FMA returns it exactly. x/y is
// correctly rounded and the integers near it are representable, so it
// can only have rounded up to the next integer in magnitude, never down
// past one: then q is one too large, x − q·y has the other sign than x
// (and is not zero: x and q·y are multiples of the smallest subnormal),
// and the FMA is redone with q moved back by one. A zero remainder gets
// x's sign, as fmod's.
func fmod(x, y float64) float64 {
	t := x / y
	if !(fmaFast && math.Abs(t) < 0x1p52 && math.Abs(y) <= math.MaxFloat64) {
		return math.Mod(x, y) // NaN, ±Inf, y = 0, huge quotients, no FMA
	}
	q := math.Trunc(t)
	r := math.FMA(-q, y, x)
	if r != 0 && math.Signbit(r) != math.Signbit(x) {
		q -= math.Copysign(1, q)
		r = math.FMA(-q, y, x)
	}
	return math.Copysign(r, x)
}

// The float remainder loops: fmod is exact, so the float64 result of
// float32 operands is already a float32 value.

func remVV[T elemFloat](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = T(fmod(float64(a[i]), float64(b[i])))
	}
}

func remVS[T elemFloat](d, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(fmod(float64(x), float64(s)))
	}
}

func remSV[T elemFloat](d []T, s T, b []T) {
	b = b[:len(d)]
	for i, x := range b {
		d[i] = T(fmod(float64(s), float64(x)))
	}
}

// floorDiv is numpy's floor division of floats in T's arithmetic: the
// exact remainder r = fmod(a, b) makes a − r an integer multiple of b,
// so (a − r)/b is an integer up to rounding; it moves down by one where
// r has the other sign than b (floored, not truncated, division) and is
// snapped to the nearest integer. Where that quotient is zero, and for
// b = 0, the result is floor(a/b): the zero of a/b's sign, ±Inf or NaN.
//
// When the quotient is well inside T's integers the rounding of
// (a − r)/b cannot move it past the nearest integer, so the result is the
// exact floored quotient, which the fast path computes from trunc(a/b)
// with one FMA (as fmod does), with no second division or snapping.
func floorDiv[T elemFloat](a, b T) T {
	x, y := float64(a), float64(b)
	lim := 0x1p50
	if unsafe.Sizeof(a) == 4 {
		lim = 0x1p20
	}
	if t := x / y; fmaFast && math.Abs(t) < lim && math.Abs(y) <= math.MaxFloat64 {
		q := float64(int64(t)) // trunc(t): |t| < 2^50
		r := math.FMA(-q, y, x)
		if r != 0 && math.Signbit(r) != math.Signbit(x) {
			q -= math.Copysign(1, q)
			r = math.FMA(-q, y, x)
		}
		// Floored: one less where r is nonzero and of the other sign
		// than y, computed without a branch (random signs would
		// mispredict one in two).
		rb := math.Float64bits(r)
		other := (rb ^ math.Float64bits(y)) >> 63
		var nonzero uint64
		if rb<<1 != 0 {
			nonzero = 1
		}
		q -= float64(other & nonzero)
		if q != 0 {
			return T(q)
		}
		return T(math.Floor(float64(a / b)))
	}
	r := T(fmod(x, y))
	q := (a - r) / b
	if (r < 0 && b > 0) || (r > 0 && b < 0) {
		q--
	}
	if q == 0 || b == 0 {
		return T(math.Floor(float64(a / b)))
	}
	fl := T(math.Floor(float64(q)))
	if q-fl > 0.5 {
		fl++
	}
	return fl
}

func floorDivVV[T elemFloat](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = floorDiv(a[i], b[i])
	}
}

func floorDivVS[T elemFloat](d, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = floorDiv(x, s)
	}
}

func floorDivSV[T elemFloat](d []T, s T, b []T) {
	b = b[:len(d)]
	for i, x := range b {
		d[i] = floorDiv(s, x)
	}
}

// ipow is x^y with wraparound; see the package's integer semantics for
// negative exponents.
func ipow(x, y int64) int64 {
	if y < 0 {
		switch {
		case x == 1:
			return 1
		case x == -1 && y&1 == 0:
			return 1
		case x == -1:
			return -1
		}
		return 0
	}
	r := int64(1)
	for y > 0 {
		if y&1 != 0 {
			r *= x
		}
		x *= x
		y >>= 1
	}
	return r
}

func powIVV(d, a, b []int64) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = ipow(a[i], b[i])
	}
}

func powIVS(d, a []int64, s int64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = ipow(x, s)
	}
}

func powISV(d []int64, s int64, b []int64) {
	b = b[:len(d)]
	for i, x := range b {
		d[i] = ipow(s, x)
	}
}

// The float pow loops call math.Pow, except for subnormal bases, which
// go to powSubnormal: for y's fractional part math.Pow takes the
// logarithm of x, which on amd64 is wrong for subnormals (see
// logLoop64), so that pow(5e-324, 0.25) gave 1.03e-77 instead of
// 1.49e-81. The test is one integer comparison, inlined, for every
// normal base; float32 operands are never subnormal in float64.

// subnormal64 reports whether x is subnormal: its exponent field is 0
// and it is not ±0 (one integer test for every normal x).
func subnormal64(x float64) bool {
	b := math.Float64bits(x)
	return b&expMask64 == 0 && b<<1 != 0
}

// expMask64 selects the exponent field of a float64's representation.
const expMask64 = 0x7ff << 52

// powSubnormal returns x^y for a subnormal x. Integer, infinite and NaN
// exponents, and negative bases (whose fractional powers are NaN), are
// math.Pow's cases without a logarithm. Otherwise x = f·2^k with f in
// [½, 1) and x^y = 2^(y·k + y·log2 f): y·k = p + e exactly (e, the
// product's rounding error, from an FMA), p = n + g with n = round(p),
// so x^y = 2^(g + e + y·log2 f)·2^n, where |y·log2 f| ≤ |y| and log2 f
// = ln f/ln 2 has an absolute error near 2^-53, far below the ulp of
// the exponent p that a plain exp(y·ln x) would lose. The power of two
// is applied last, so a subnormal result rounds once more. Beyond
// |p| = 2200 (|y| > 2) the result is 0 or +Inf.
func powSubnormal(x, y float64) float64 {
	if x < 0 || y == math.Trunc(y) || math.IsNaN(y) {
		return math.Pow(x, y)
	}
	f, k := math.Frexp(x)
	kf := float64(k)
	p := kf * y
	switch {
	case p > 2200:
		return math.Inf(1)
	case p < -2200:
		return 0
	}
	e := math.FMA(kf, y, -p)
	n := math.Round(p)
	return math.Ldexp(math.Exp2((p-n)+(e+y*(math.Log(f)*(1/math.Ln2)))), int(n))
}

func powVV[T elemFloat](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := float64(a[i]), float64(b[i])
		if subnormal64(x) {
			d[i] = T(powSubnormal(x, y))
			continue
		}
		d[i] = T(math.Pow(x, y))
	}
}

func powVS[T elemFloat](d, a []T, s T) {
	a = a[:len(d)]
	if s == 2 {
		for i, x := range a {
			d[i] = x * x
		}
		return
	}
	y := float64(s)
	for i, v := range a {
		x := float64(v)
		if subnormal64(x) {
			d[i] = T(powSubnormal(x, y))
			continue
		}
		d[i] = T(math.Pow(x, y))
	}
}

func powSV[T elemFloat](d []T, s T, b []T) {
	b = b[:len(d)]
	x := float64(s)
	if subnormal64(x) {
		for i, y := range b {
			d[i] = T(powSubnormal(x, float64(y)))
		}
		return
	}
	for i, y := range b {
		d[i] = T(math.Pow(x, float64(y)))
	}
}

func atan2VV[T elemFloat](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = T(math.Atan2(float64(a[i]), float64(b[i])))
	}
}

func atan2VS[T elemFloat](d, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = T(math.Atan2(float64(x), float64(s)))
	}
}

func atan2SV[T elemFloat](d []T, s T, b []T) {
	b = b[:len(d)]
	for i, x := range b {
		d[i] = T(math.Atan2(float64(s), float64(x)))
	}
}

// max and min: Go's built-ins propagate NaN for floats.

func maxVV[T elemNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = max(a[i], b[i])
	}
}

func maxVS[T elemNum](d, a []T, s T) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], a[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = max(q[0], s), max(q[1], s), max(q[2], s), max(q[3], s)
	}
	for ; i < len(d); i++ {
		x := a[i]
		d[i] = max(x, s)
	}
}

func minVV[T elemNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = min(a[i], b[i])
	}
}

func minVS[T elemNum](d, a []T, s T) {
	a = a[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		o, q := d[i:i+4:i+4], a[i:i+4:i+4]
		o[0], o[1], o[2], o[3] = min(q[0], s), min(q[1], s), min(q[2], s), min(q[3], s)
	}
	for ; i < len(d); i++ {
		x := a[i]
		d[i] = min(x, s)
	}
}

// Logical and bitwise loops.

func andBVV(d, a, b []bool) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] && b[i]
	}
}

func andBVS(d, a []bool, s bool) {
	if !s {
		clear(d)
		return
	}
	copy(d, a)
}

func orBVV(d, a, b []bool) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] || b[i]
	}
}

func orBVS(d, a []bool, s bool) {
	if s {
		fillSlice(d, true)
		return
	}
	copy(d, a)
}

func andIVV(d, a, b []int64) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] & b[i]
	}
}

func andIVS(d, a []int64, s int64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x & s
	}
}

func orIVV(d, a, b []int64) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] | b[i]
	}
}

func orIVS(d, a []int64, s int64) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x | s
	}
}

// Comparison loops. Floats compare as IEEE values (NaN is unordered:
// only ne is true); bools order false < true.

func eqVV[T comparable](d []bool, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] == b[i]
	}
}

func eqVS[T comparable](d []bool, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x == s
	}
}

func neVV[T comparable](d []bool, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] != b[i]
	}
}

func neVS[T comparable](d []bool, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x != s
	}
}

func ltVV[T elemNum](d []bool, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] < b[i]
	}
}

func ltVS[T elemNum](d []bool, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x < s
	}
}

func leVV[T elemNum](d []bool, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] <= b[i]
	}
}

func leVS[T elemNum](d []bool, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x <= s
	}
}

func gtVS[T elemNum](d []bool, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x > s
	}
}

func geVS[T elemNum](d []bool, a []T, s T) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x >= s
	}
}

// ordered builds the loops of a comparison from its tensor-tensor and
// tensor-scalar loops and the tensor-scalar loop of its mirror (x op s ⇔
// s mirror x).
func ordered[T any](vv func(d []bool, a, b []T), vs, mirrorVS func(d []bool, a []T, s T)) binLoops[T, bool] {
	return binLoops[T, bool]{vv: vv, vs: vs, sv: swapVS(mirrorVS)}
}

// Bool comparisons with false < true, expressed through the ordering of
// 0 and 1.
func boolLess(d []bool, a, b []bool) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = !a[i] && b[i]
	}
}

func boolLessEq(d []bool, a, b []bool) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = !a[i] || b[i]
	}
}

func boolLoops(vv func(d []bool, a, b []bool), swapped bool) binLoops[bool, bool] {
	if swapped { // a > b ⇔ b < a
		vv = swapCmp(vv)
	}
	return binLoops[bool, bool]{
		vv: vv,
		vs: func(d []bool, a []bool, s bool) { vvScalar(vv, d, a, s, false) },
		sv: func(d []bool, s bool, b []bool) { vvScalar(vv, d, b, s, true) },
	}
}

// vvScalar runs a bool tensor-tensor loop with one side a scalar, in
// blocks of a stack buffer holding the scalar.
func vvScalar(vv func(d []bool, a, b []bool), d []bool, t []bool, s bool, scalarFirst bool) {
	var buf [256]bool
	for i := range buf {
		buf[i] = s
	}
	for lo := 0; lo < len(d); lo += len(buf) {
		hi := min(lo+len(buf), len(d))
		if scalarFirst {
			vv(d[lo:hi], buf[:hi-lo], t[lo:hi])
		} else {
			vv(d[lo:hi], t[lo:hi], buf[:hi-lo])
		}
	}
}

// withRows sets the row loops of l (binLoops.rowsVS, rowsSV).
func withRows[T elemNum](l binLoops[T, T], vs, sv func(d, a, s []T, k int)) binLoops[T, T] {
	l.rowsVS, l.rowsSV = vs, sv
	return l
}

func numericArith[T elemNum](vv func(d, a, b []T), vs func(d, a []T, s T), sv func(d []T, s T, b []T)) binLoops[T, T] {
	if sv == nil {
		sv = swapVS(vs)
	}
	return binLoops[T, T]{vv: vv, vs: vs, sv: sv}
}

func init() {
	registerUnary(prims.Neg, costCheap, unaryLoops{i: negLoop[int64], f32: neg32Vec, f64: neg64Vec})
	registerUnary(prims.Abs, costCheap, unaryLoops{i: absLoop[int64], f32: absFloatLoop[float32], f64: absFloatLoop[float64]})
	registerUnary(prims.Sign, costCheap, unaryLoops{i: signLoop[int64], f32: signLoop[float32], f64: signLoop[float64]})
	registerUnary(prims.Floor, costCheap, unaryLoops{f32: floorLoop[float32], f64: floorLoop[float64]})
	registerUnary(prims.Ceil, costCheap, unaryLoops{f32: ceilLoop[float32], f64: ceilLoop[float64]})
	registerUnary(prims.Round, costCheap, unaryLoops{f32: roundLoop[float32], f64: roundLoop[float64]})
	registerUnary(prims.Exp, costMath, unaryLoops{f32: exp32Loop, f64: exp64Loop})
	registerUnary(prims.Log, costMath, unaryLoops{f32: log32Loop, f64: logLoop64})
	registerUnary(prims.Log1p, costHeavy, unaryLoops{f32: log1pLoop[float32], f64: log1pLoop[float64]})
	registerUnary(prims.Expm1, costMath, unaryLoops{f32: expm1Loop32, f64: expm1Loop64})
	registerUnary(prims.Sqrt, costMath, unaryLoops{f32: sqrtLoop[float32], f64: sqrtLoop[float64]})
	registerUnary(prims.Rsqrt, costMath, unaryLoops{f32: rsqrtLoop[float32], f64: rsqrtLoop[float64]})
	// float32 sin and cos have fast kernels (fastmath.go), costing what
	// exp does; float64 ones are math.Sin and math.Cos.
	registerUnary(prims.Sin, costHeavy, unaryLoops{f32: sin32Loop, f64: sinLoop[float64], cost32: costMath})
	registerUnary(prims.Cos, costHeavy, unaryLoops{f32: cos32Loop, f64: cosLoop[float64], cost32: costMath})
	registerUnary(prims.Tan, costHeavy, unaryLoops{f32: tanLoop[float32], f64: tanLoop[float64]})
	registerUnary(prims.Tanh, costMath, unaryLoops{f32: tanh32Loop, f64: tanh64Loop})
	registerUnary(prims.Logistic, costMath, unaryLoops{f32: logistic32Loop, f64: logisticLoop64})
	registerUnary(prims.Erf, costMath, unaryLoops{f32: erf32Loop, f64: erfLoop[float64]})
	registerUnary(prims.GELU, costMath, unaryLoops{f32: gelu32Loop, f64: floatMap[float64](referenceF(prims.GELU))})
	registerUnary(prims.GELUGrad, costMath, unaryLoops{f32: geluGrad32Loop, f64: floatMap[float64](referenceF(prims.GELUGrad))})
	registerUnary(prims.GELUTanh, costMath, unaryLoops{f32: geluTanh32Loop, f64: geluTanhLoop[float64]})
	registerUnary(prims.GELUTanhGrad, costMath, unaryLoops{f32: geluTanhGrad32Loop, f64: geluTanhGradLoop[float64]})
	registerUnary(prims.Not, costCheap, unaryLoops{b: notBoolLoop, i: notIntLoop})
	registerUnary(prims.Copy, costCheap, unaryLoops{b: copyLoop[bool], i: copyLoop[int64], f32: copyLoop[float32], f64: copyLoop[float64]})
	registerUnary(prims.StopGradient, costCheap, unaryLoops{b: copyLoop[bool], i: copyLoop[int64], f32: copyLoop[float32], f64: copyLoop[float64]})

	registerArith(prims.Add, costCheap, binOp[bool, int64, float32, float64]{
		i: numericArith(addVV[int64], addVS[int64], nil),
		f32: simdArith(withRows(numericArith(addVV32Vec, addVS32Vec, nil), addRowsVS32Vec, addRowsVS32Vec),
			numericArith(addVV[float32], addVS[float32], nil)),
		f64: simdArith(withRows(numericArith(addVV64Vec, addVS64Vec, nil), addRowsVS64Vec, addRowsVS64Vec),
			numericArith(addVV[float64], addVS[float64], nil)),
	})
	registerArith(prims.Sub, costCheap, binOp[bool, int64, float32, float64]{
		i: numericArith(subVV[int64], subVS[int64], subSV[int64]),
		f32: simdArith(withRows(numericArith(subVV32Vec, subVS32Vec, subSV32Vec), subRowsVS32Vec, subRowsSV32Vec),
			numericArith(subVV[float32], subVS[float32], subSV[float32])),
		f64: simdArith(withRows(numericArith(subVV64Vec, subVS64Vec, subSV64Vec), subRowsVS64Vec, subRowsSV64Vec),
			numericArith(subVV[float64], subVS[float64], subSV[float64])),
	})
	registerArith(prims.Mul, costCheap, binOp[bool, int64, float32, float64]{
		i: numericArith(mulVV[int64], mulVS[int64], nil),
		f32: simdArith(withRows(numericArith(mulVV32Vec, mulVS32Vec, nil), mulRowsVS32Vec, mulRowsVS32Vec),
			numericArith(mulVV[float32], mulVS[float32], nil)),
		f64: simdArith(withRows(numericArith(mulVV64Vec, mulVS64Vec, nil), mulRowsVS64Vec, mulRowsVS64Vec),
			numericArith(mulVV[float64], mulVS[float64], nil)),
	})
	registerArith(prims.Div, costCheap, binOp[bool, int64, float32, float64]{
		i: numericArith(divIVV, divIVS, divISV),
		f32: simdArith(withRows(numericArith(divVV32Vec, divVS32Vec, divSV32Vec), divRowsVS32Vec, divRowsSV32Vec),
			numericArith(divVV[float32], divVS[float32], divSV[float32])),
		f64: simdArith(withRows(numericArith(divVV64Vec, divVS64Vec, divSV64Vec), divRowsVS64Vec, divRowsSV64Vec),
			numericArith(divVV[float64], divVS[float64], divSV[float64])),
	})
	registerArith(prims.Rem, costMath, binOp[bool, int64, float32, float64]{
		i:   numericArith(remIVV, remIVS, remISV),
		f32: numericArith(remVV[float32], remVS[float32], remSV[float32]),
		f64: numericArith(remVV[float64], remVS[float64], remSV[float64]),
	})
	registerArith(prims.FloorDivide, costMath, binOp[bool, int64, float32, float64]{
		f32: numericArith(floorDivVV[float32], floorDivVS[float32], floorDivSV[float32]),
		f64: numericArith(floorDivVV[float64], floorDivVS[float64], floorDivSV[float64]),
	})
	registerArith(prims.Pow, costHeavy, binOp[bool, int64, float32, float64]{
		i:   numericArith(powIVV, powIVS, powISV),
		f32: numericArith(powVV[float32], powVS[float32], powSV[float32]),
		f64: numericArith(powVV[float64], powVS[float64], powSV[float64]),
	})
	registerArith(prims.Atan2, costHeavy, binOp[bool, int64, float32, float64]{
		f32: numericArith(atan2VV[float32], atan2VS[float32], atan2SV[float32]),
		f64: numericArith(atan2VV[float64], atan2VS[float64], atan2SV[float64]),
	})
	registerArith(prims.Max, costCheap, binOp[bool, int64, float32, float64]{
		b:   commutative(orBVV, orBVS),
		i:   numericArith(maxVV[int64], maxVS[int64], nil),
		f32: numericArith(maxVV[float32], maxVS[float32], nil),
		f64: numericArith(maxVV[float64], maxVS[float64], nil),
	})
	registerArith(prims.Min, costCheap, binOp[bool, int64, float32, float64]{
		b:   commutative(andBVV, andBVS),
		i:   numericArith(minVV[int64], minVS[int64], nil),
		f32: numericArith(minVV[float32], minVS[float32], nil),
		f64: numericArith(minVV[float64], minVS[float64], nil),
	})
	registerArith(prims.And, costCheap, binOp[bool, int64, float32, float64]{
		b: commutative(andBVV, andBVS),
		i: commutative(andIVV, andIVS),
	})
	registerArith(prims.Or, costCheap, binOp[bool, int64, float32, float64]{
		b: commutative(orBVV, orBVS),
		i: commutative(orIVV, orIVS),
	})

	registerCompare(prims.Eq, binOp[bool, bool, bool, bool]{
		b:   commutative(eqVV[bool], eqVS[bool]),
		i:   commutative(eqVV[int64], eqVS[int64]),
		f32: commutative(eqVV[float32], eqVS[float32]),
		f64: commutative(eqVV[float64], eqVS[float64]),
	})
	registerCompare(prims.Ne, binOp[bool, bool, bool, bool]{
		b:   commutative(neVV[bool], neVS[bool]),
		i:   commutative(neVV[int64], neVS[int64]),
		f32: commutative(neVV[float32], neVS[float32]),
		f64: commutative(neVV[float64], neVS[float64]),
	})
	registerCompare(prims.Lt, binOp[bool, bool, bool, bool]{
		b:   boolLoops(boolLess, false),
		i:   ordered(ltVV[int64], ltVS[int64], gtVS[int64]),
		f32: ordered(ltVV[float32], ltVS[float32], gtVS[float32]),
		f64: ordered(ltVV[float64], ltVS[float64], gtVS[float64]),
	})
	registerCompare(prims.Le, binOp[bool, bool, bool, bool]{
		b:   boolLoops(boolLessEq, false),
		i:   ordered(leVV[int64], leVS[int64], geVS[int64]),
		f32: ordered(leVV[float32], leVS[float32], geVS[float32]),
		f64: ordered(leVV[float64], leVS[float64], geVS[float64]),
	})
	registerCompare(prims.Gt, binOp[bool, bool, bool, bool]{
		b:   boolLoops(boolLess, true),
		i:   ordered(swapCmp(ltVV[int64]), gtVS[int64], ltVS[int64]),
		f32: ordered(swapCmp(ltVV[float32]), gtVS[float32], ltVS[float32]),
		f64: ordered(swapCmp(ltVV[float64]), gtVS[float64], ltVS[float64]),
	})
	registerCompare(prims.Ge, binOp[bool, bool, bool, bool]{
		b:   boolLoops(boolLessEq, true),
		i:   ordered(swapCmp(leVV[int64]), geVS[int64], leVS[int64]),
		f32: ordered(swapCmp(leVV[float32]), geVS[float32], leVS[float32]),
		f64: ordered(swapCmp(leVV[float64]), geVS[float64], leVS[float64]),
	})
}

// swapCmp turns a < b into b > a: gt(a, b) = lt(b, a).
func swapCmp[T any](vv func(d []bool, a, b []T)) func(d []bool, a, b []T) {
	return func(d []bool, a, b []T) { vv(d, b, a) }
}
