package backendtest

// Reference implementations: plain Go loops over float64, int64 and bool
// host arrays. They favour obviousness over speed; float32 results are
// computed in float64 and rounded once.

import (
	"math"
	"math/bits"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Views and data movement are index maps: element k of the result is
// element m[k] of the operand (−1 for a padding element).

// viewMap returns the result shape and index map of view primitive p.
func viewMap(p *interp.Prim, params any, shape []int) (out, m []int) {
	switch p {
	case prims.Transpose:
		return transposeMap(shape, params.(prims.TransposeParams).Perm)
	case prims.Slice:
		return sliceMap(shape, params.(prims.SliceParams))
	case prims.BroadcastInDim:
		return broadcastMap(shape, params.(prims.BroadcastParams))
	case prims.Reshape:
		return slices.Clone(params.(prims.ReshapeParams).Shape), identityMap(backend.ShapeSize(shape))
	case prims.OptimizationBarrier:
		return slices.Clone(shape), identityMap(backend.ShapeSize(shape))
	}
	panic("backendtest: no index map for " + p.Name)
}

func transposeMap(shape, perm []int) (out, m []int) {
	out = make([]int, len(perm))
	for i, q := range perm {
		out[i] = shape[q]
	}
	st := backend.ContiguousStrides(shape)
	m = make([]int, backend.ShapeSize(out))
	forEachIndex(out, func(k int, idx []int) {
		j := 0
		for i, q := range perm {
			j += idx[i] * st[q]
		}
		m[k] = j
	})
	return out, m
}

func sliceMap(shape []int, sp prims.SliceParams) (out, m []int) {
	out = make([]int, len(shape))
	for k := range shape {
		out[k] = (sp.Limit[k] - sp.Start[k] + sp.Stride[k] - 1) / sp.Stride[k]
	}
	st := backend.ContiguousStrides(shape)
	m = make([]int, backend.ShapeSize(out))
	forEachIndex(out, func(k int, idx []int) {
		j := 0
		for d, i := range idx {
			j += (sp.Start[d] + i*sp.Stride[d]) * st[d]
		}
		m[k] = j
	})
	return out, m
}

func broadcastMap(shape []int, bp prims.BroadcastParams) (out, m []int) {
	out = slices.Clone(bp.Shape)
	st := backend.ContiguousStrides(shape)
	m = make([]int, backend.ShapeSize(out))
	forEachIndex(out, func(k int, idx []int) {
		j := 0
		for i, d := range bp.Dims {
			if shape[i] != 1 {
				j += idx[d] * st[i]
			}
		}
		m[k] = j
	})
	return out, m
}

func padMap(shape []int, pp prims.PadParams) (out, m []int) {
	out = make([]int, len(shape))
	for k, d := range shape {
		n := 0
		if d > 0 {
			n = d + (d-1)*pp.Interior[k]
		}
		out[k] = n + pp.Low[k] + pp.High[k]
	}
	st := backend.ContiguousStrides(shape)
	m = make([]int, backend.ShapeSize(out))
	forEachIndex(out, func(k int, idx []int) {
		j := 0
		for d, i := range idx {
			p, step := i-pp.Low[d], pp.Interior[d]+1
			if p < 0 || p%step != 0 || p/step >= shape[d] {
				j = -1
				break
			}
			j += p / step * st[d]
		}
		m[k] = j
	})
	return out, m
}

func revMap(shape, axes []int) []int {
	st := backend.ContiguousStrides(shape)
	m := make([]int, backend.ShapeSize(shape))
	forEachIndex(shape, func(k int, idx []int) {
		j := 0
		for d, i := range idx {
			if slices.Contains(axes, d) {
				i = shape[d] - 1 - i
			}
			j += i * st[d]
		}
		m[k] = j
	})
	return m
}

func refConcat(xs []array, axis int) array {
	shape := slices.Clone(xs[0].shape)
	shape[axis] = 0
	for _, x := range xs {
		shape[axis] += x.shape[axis]
	}
	out := newArray(xs[0].dt, shape)
	src := make([]int, len(shape))
	forEachIndex(shape, func(k int, idx []int) {
		copy(src, idx)
		for _, x := range xs {
			if src[axis] < x.shape[axis] {
				out.set(k, x, ravel(src, backend.ContiguousStrides(x.shape)))
				return
			}
			src[axis] -= x.shape[axis]
		}
	})
	return out
}

func clampInt(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

// refGather is gather with indices clamped into [0, n).
func refGather(x, idx array, axis int) array {
	shape := prims.GatherShape(x.shape, idx.shape, axis)
	n := int64(x.shape[axis])
	st := backend.ContiguousStrides(x.shape)
	ist := backend.ContiguousStrides(idx.shape)
	r := len(idx.shape)
	m := make([]int, backend.ShapeSize(shape))
	forEachIndex(shape, func(k int, o []int) {
		i := int(clampInt(idx.i[ravel(o[axis:axis+r], ist)], 0, n-1))
		j := i * st[axis]
		for d := range axis {
			j += o[d] * st[d]
		}
		for d := axis + 1; d < len(x.shape); d++ {
			j += o[d-1+r] * st[d]
		}
		m[k] = j
	})
	return x.take(shape, m, array{})
}

// refScatter writes (or adds, with add) the slices of upd into x at idx
// along axis, dropping out-of-range indices; the last write wins. It
// returns the error allowed for float sums.
func refScatter(x, idx, upd array, axis int, add bool) (array, []float64) {
	out := x.clone()
	n := int64(x.shape[axis])
	st := backend.ContiguousStrides(x.shape)
	ist := backend.ContiguousStrides(idx.shape)
	r := len(idx.shape)
	var mag []float64
	var cnt []int
	if add && x.dt.IsFloat() {
		mag, cnt = make([]float64, len(x.f)), make([]int, len(x.f))
		for k, v := range x.f {
			mag[k] = math.Abs(v)
		}
	}
	forEachIndex(upd.shape, func(k int, u []int) {
		i := idx.i[ravel(u[axis:axis+r], ist)]
		if i < 0 || i >= n {
			return
		}
		j := int(i) * st[axis]
		for d := range axis {
			j += u[d] * st[d]
		}
		for d := axis + 1; d < len(x.shape); d++ {
			j += u[d-1+r] * st[d]
		}
		if !add {
			out.set(j, upd, k)
			return
		}
		switch x.dt {
		case backend.Int64:
			out.i[j] += upd.i[k]
		default:
			out.f[j] += upd.f[k]
			mag[j] += math.Abs(upd.f[k])
			cnt[j]++
		}
	})
	if mag == nil {
		return out, nil
	}
	allow := make([]float64, len(out.f))
	for j := range out.f {
		out.f[j] = fround(x.dt, out.f[j])
		allow[j] = sumBound(x.dt, cnt[j], mag[j], out.f[j])
	}
	return out, allow
}

// clampStarts clamps dynamic slice starts so a block of size fits shape.
func clampStarts(starts []int64, size, shape []int) []int {
	out := make([]int, len(starts))
	for k, s := range starts {
		out[k] = int(clampInt(s, 0, int64(shape[k]-size[k])))
	}
	return out
}

func refDynamicSlice(x array, starts []int64, sizes []int) array {
	at := clampStarts(starts, sizes, x.shape)
	st := backend.ContiguousStrides(x.shape)
	m := make([]int, backend.ShapeSize(sizes))
	forEachIndex(sizes, func(k int, idx []int) {
		j := 0
		for d, i := range idx {
			j += (i + at[d]) * st[d]
		}
		m[k] = j
	})
	return x.take(sizes, m, array{})
}

func refDynamicUpdateSlice(x, upd array, starts []int64) array {
	at := clampStarts(starts, upd.shape, x.shape)
	st := backend.ContiguousStrides(x.shape)
	out := x.clone()
	forEachIndex(upd.shape, func(k int, idx []int) {
		j := 0
		for d, i := range idx {
			j += (i + at[d]) * st[d]
		}
		out.set(j, upd, k)
	})
	return out
}

func refIota(dt backend.DType, shape []int, dim int) array {
	out := newArray(dt, shape)
	forEachIndex(shape, func(k int, idx []int) {
		if dt == backend.Int64 {
			out.i[k] = int64(idx[dim])
		} else {
			out.f[k] = float64(idx[dim])
		}
	})
	return out
}

// Reductions.

type reduceKind uint8

const (
	sumReduce reduceKind = iota
	prodReduce
	maxReduce
	minReduce
)

// reduceMap returns the shape left after removing axes and, for each
// element of shape, the result element it folds into.
func reduceMap(shape, axes []int) (out, m []int) {
	out = []int{}
	var keep []int
	for d, n := range shape {
		if !slices.Contains(axes, d) {
			out = append(out, n)
			keep = append(keep, d)
		}
	}
	ost := backend.ContiguousStrides(out)
	m = make([]int, backend.ShapeSize(shape))
	forEachIndex(shape, func(k int, idx []int) {
		j := 0
		for i, d := range keep {
			j += idx[d] * ost[i]
		}
		m[k] = j
	})
	return out, m
}

// refReduce reduces x over axes; for float sums and products it returns
// the error allowed per element.
func refReduce(x array, axes []int, kind reduceKind) (array, []float64) {
	shape, m := reduceMap(x.shape, axes)
	out := newArray(x.dt, shape)
	n := out.size()
	cnt := make([]int, n)
	mag := make([]float64, n)
	for j := range n {
		switch x.dt {
		case backend.Bool:
			out.b[j] = kind == minReduce
		case backend.Int64:
			switch kind {
			case prodReduce:
				out.i[j] = 1
			case maxReduce:
				out.i[j] = math.MinInt64
			case minReduce:
				out.i[j] = math.MaxInt64
			}
		default:
			switch kind {
			case prodReduce:
				out.f[j] = 1
			case maxReduce:
				out.f[j] = math.Inf(-1)
			case minReduce:
				out.f[j] = math.Inf(1)
			}
		}
	}
	for k, j := range m {
		cnt[j]++
		switch x.dt {
		case backend.Bool:
			if kind == maxReduce {
				out.b[j] = out.b[j] || x.b[k]
			} else {
				out.b[j] = out.b[j] && x.b[k]
			}
		case backend.Int64:
			v := x.i[k]
			switch kind {
			case sumReduce:
				out.i[j] += v
			case prodReduce:
				out.i[j] *= v
			case maxReduce:
				out.i[j] = max(out.i[j], v)
			case minReduce:
				out.i[j] = min(out.i[j], v)
			}
		default:
			v := x.f[k]
			switch kind {
			case sumReduce:
				out.f[j] += v
				mag[j] += math.Abs(v)
			case prodReduce:
				out.f[j] *= v
			case maxReduce:
				out.f[j] = maxF(out.f[j], v)
			case minReduce:
				out.f[j] = minF(out.f[j], v)
			}
		}
	}
	if !x.dt.IsFloat() || kind == maxReduce || kind == minReduce {
		return out, nil
	}
	allow := make([]float64, n)
	u := unitRoundoff(x.dt)
	for j := range n {
		out.f[j] = fround(x.dt, out.f[j])
		if kind == sumReduce {
			allow[j] = sumBound(x.dt, cnt[j], mag[j], out.f[j])
		} else {
			allow[j] = 2 * float64(cnt[j]+1) * u * math.Abs(out.f[j])
		}
	}
	return out, allow
}

// lineMap returns, for every position of shape with the axis dimension
// removed, the flat indices of the line along axis through it.
func lineMap(shape []int, axis int) [][]int {
	rest, m := reduceMap(shape, []int{axis})
	lines := make([][]int, backend.ShapeSize(rest))
	for k, j := range m {
		lines[j] = append(lines[j], k)
	}
	return lines
}

// refArg is argmax (isMax) or argmin along axis: the first extreme
// element, NaN counting as the extreme.
func refArg(x array, axis int, isMax bool) array {
	shape, _ := reduceMap(x.shape, []int{axis})
	out := newArray(backend.Int64, shape)
	for j, line := range lineMap(x.shape, axis) {
		best := 0
		for i := 1; i < len(line); i++ {
			if better(x, line[i], line[best], isMax) {
				best = i
			}
		}
		out.i[j] = int64(best)
	}
	return out
}

// better reports whether element k of x beats element b for argmax (or
// argmin).
func better(x array, k, b int, isMax bool) bool {
	switch x.dt {
	case backend.Bool:
		if isMax {
			return x.b[k] && !x.b[b]
		}
		return !x.b[k] && x.b[b]
	case backend.Int64:
		if isMax {
			return x.i[k] > x.i[b]
		}
		return x.i[k] < x.i[b]
	}
	v, w := x.f[k], x.f[b]
	switch {
	case math.IsNaN(w):
		return false
	case math.IsNaN(v):
		return true
	case isMax:
		return v > w
	}
	return v < w
}

// refCumsum is the inclusive cumulative sum along axis (from the end with
// reverse), with the error allowed for floats.
func refCumsum(x array, axis int, reverse bool) (array, []float64) {
	out := newArray(x.dt, x.shape)
	var allow []float64
	if x.dt.IsFloat() {
		allow = make([]float64, len(x.f))
	}
	for _, line := range lineMap(x.shape, axis) {
		if reverse {
			slices.Reverse(line)
		}
		var si int64
		var sf, mag float64
		for n, k := range line {
			if x.dt == backend.Int64 {
				si += x.i[k]
				out.i[k] = si
				continue
			}
			sf += x.f[k]
			mag += math.Abs(x.f[k])
			out.f[k] = fround(x.dt, sf)
			allow[k] = sumBound(x.dt, n+1, mag, out.f[k])
		}
	}
	return out, allow
}

// refDot is dot_general: for each result element (batch, lhs free, rhs
// free) the sum over the contracting dimensions, with the error allowed
// for floats.
func refDot(a, b array, p prims.DotParams) (array, []float64) {
	free := func(rank int, contract, batch []int) []int {
		var f []int
		for d := range rank {
			if !slices.Contains(contract, d) && !slices.Contains(batch, d) {
				f = append(f, d)
			}
		}
		return f
	}
	af := free(len(a.shape), p.LhsContract, p.LhsBatch)
	bf := free(len(b.shape), p.RhsContract, p.RhsBatch)
	shape := []int{}
	for _, d := range p.LhsBatch {
		shape = append(shape, a.shape[d])
	}
	for _, d := range af {
		shape = append(shape, a.shape[d])
	}
	for _, d := range bf {
		shape = append(shape, b.shape[d])
	}
	csize := make([]int, len(p.LhsContract))
	for i, d := range p.LhsContract {
		csize[i] = a.shape[d]
	}
	ast, bst := backend.ContiguousStrides(a.shape), backend.ContiguousStrides(b.shape)
	out := newArray(a.dt, shape)
	var allow []float64
	if a.dt.IsFloat() {
		allow = make([]float64, out.size())
	}
	nb := len(p.LhsBatch)
	forEachIndex(shape, func(k int, o []int) {
		ai, bi := 0, 0
		for i := range nb {
			ai += o[i] * ast[p.LhsBatch[i]]
			bi += o[i] * bst[p.RhsBatch[i]]
		}
		for i, d := range af {
			ai += o[nb+i] * ast[d]
		}
		for i, d := range bf {
			bi += o[nb+len(af)+i] * bst[d]
		}
		var si int64
		var sf, mag float64
		n := backend.ShapeSize(csize)
		forEachIndex(csize, func(_ int, c []int) {
			aj, bj := ai, bi
			for i := range c {
				aj += c[i] * ast[p.LhsContract[i]]
				bj += c[i] * bst[p.RhsContract[i]]
			}
			if a.dt == backend.Int64 {
				si += a.i[aj] * b.i[bj]
				return
			}
			sf += a.f[aj] * b.f[bj]
			mag += math.Abs(a.f[aj] * b.f[bj])
		})
		if a.dt == backend.Int64 {
			out.i[k] = si
			return
		}
		out.f[k] = fround(a.dt, sf)
		allow[k] = sumBound(a.dt, n, mag, out.f[k])
	})
	return out, allow
}

// Elementwise scalar functions.

func maxF(x, y float64) float64 {
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.NaN()
	}
	if x > y {
		return x
	}
	return y
}

func minF(x, y float64) float64 {
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.NaN()
	}
	if x < y {
		return x
	}
	return y
}

func signF(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 and NaN
}

func signI(x int64) int64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func absI(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// refLog is ln x. math.Log on amd64 (an assembly routine) reads a
// subnormal's exponent field as if the number were normal and returns
// the logarithm of another number (golang/go#56600: log(5e-324) gives
// -709.09, not -744.44), so subnormal x is taken apart as f·2^e with
// math.Frexp, which normalizes it, and ln x = ln f + e·ln 2.
func refLog(x float64) float64 {
	if x < 0x1p-1022 && x > 0 {
		f, e := math.Frexp(x)
		return math.Log(f) + float64(e)*math.Ln2
	}
	return math.Log(x)
}

// refPow is x^y. math.Pow takes the logarithm of x for y's fractional
// part and inherits refLog's problem, so for a subnormal x ≠ 0 it is
// computed as (x·2^54)^y·2^(-54y), a normal base's power times a power
// of two (each factor is less extreme than the result, so neither
// overflows or underflows unless the result does).
func refPow(x, y float64) float64 {
	if ax := math.Abs(x); ax < 0x1p-1022 && ax > 0 && y != math.Trunc(y) && !math.IsNaN(y) {
		return math.Pow(x*0x1p54, y) * math.Exp2(-54*y)
	}
	return math.Pow(x, y)
}

// divI truncates toward zero; division by zero gives 0.
func divI(x, y int64) int64 {
	if y == 0 {
		return 0
	}
	if y == -1 {
		return -x // the quotient wraps for MinInt64
	}
	return x / y
}

// remI has the dividend's sign; remainder by zero gives 0.
func remI(x, y int64) int64 {
	if y == 0 || y == -1 {
		return 0
	}
	return x % y
}

// powI is x**y wrapping on overflow; a negative exponent gives 0 unless x
// is ±1.
func powI(x, y int64) int64 {
	if y < 0 {
		switch {
		case x == 1:
			return 1
		case x == -1 && y%2 == 0:
			return 1
		case x == -1:
			return -1
		}
		return 0
	}
	r := int64(1)
	for ; y > 0; y >>= 1 {
		if y&1 == 1 {
			r *= x
		}
		x *= x
	}
	return r
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// convertF converts a float to dt: i64 truncates toward zero, saturates
// and maps NaN to 0; bool is x ≠ 0.
func convertF(x float64, dt backend.DType) (float64, int64, bool) {
	switch dt {
	case backend.Bool:
		return 0, 0, x != 0
	case backend.Int64:
		switch {
		case math.IsNaN(x):
			return 0, 0, false
		case x >= 0x1p63:
			return 0, math.MaxInt64, false
		case x <= -0x1p63:
			return 0, math.MinInt64, false
		}
		return 0, int64(x), false
	}
	return fround(dt, x), 0, false
}

func refConvert(x array, dt backend.DType) array {
	out := newArray(dt, x.shape)
	for k := range x.size() {
		switch x.dt {
		case backend.Bool:
			switch dt {
			case backend.Bool:
				out.b[k] = x.b[k]
			case backend.Int64:
				out.i[k] = b2i(x.b[k])
			default:
				out.f[k] = float64(b2i(x.b[k]))
			}
		case backend.Int64:
			switch dt {
			case backend.Bool:
				out.b[k] = x.i[k] != 0
			case backend.Int64:
				out.i[k] = x.i[k]
			case backend.Float32:
				out.f[k] = float64(float32(x.i[k]))
			default:
				out.f[k] = float64(x.i[k])
			}
		default:
			f, i, b := convertF(x.f[k], dt)
			switch dt {
			case backend.Bool:
				out.b[k] = b
			case backend.Int64:
				out.i[k] = i
			default:
				out.f[k] = f
			}
		}
	}
	return out
}

// threefry2x32 is the Threefry-2x32 block cipher with 20 rounds (Salmon
// et al., "Parallel random numbers: as easy as 1, 2, 3", 2011): key
// (k0, k1), counter (x0, x1).
func threefry2x32(k0, k1, x0, x1 uint32) (uint32, uint32) {
	rot := [8]int{13, 15, 26, 6, 17, 29, 16, 24}
	ks := [3]uint32{k0, k1, k0 ^ k1 ^ 0x1BD11BDA}
	x0 += ks[0]
	x1 += ks[1]
	for i := range 20 {
		x0 += x1
		x1 = bits.RotateLeft32(x1, rot[i%8])
		x1 ^= x0
		if i%4 == 3 {
			j := uint32(i/4 + 1)
			x0 += ks[j%3]
			x1 += ks[(j+1)%3] + j
		}
	}
	return x0, x1
}
