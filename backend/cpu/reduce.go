package cpu

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Kernels of reduce_sum, reduce_max, reduce_min, reduce_prod, argmax
// and argmin.
//
// Accumulation: float32 sums, products and cumulative sums accumulate in
// float64 (contiguous runs of float32 with the AVX2 kernel sumWiden32);
// float64 sums along a contiguous run use pairwise summation.
// Results do not depend on the number of threads: work is split so every
// output element is computed by one goroutine in a fixed order, and a
// full reduction combines fixed-size blocks in order.

func init() {
	register(prims.ReduceSum, false, reduceKernel(prims.ReduceSum, opSum))
	register(prims.ReduceProd, false, reduceKernel(prims.ReduceProd, opProd))
	register(prims.ReduceMax, false, reduceKernel(prims.ReduceMax, opMax))
	register(prims.ReduceMin, false, reduceKernel(prims.ReduceMin, opMin))
	register(prims.ArgMax, false, argKernel(prims.ArgMax, true))
	register(prims.ArgMin, false, argKernel(prims.ArgMin, false))
}

type reduceOp uint8

const (
	opSum reduceOp = iota
	opProd
	opMax
	opMin
)

// reducer folds element type T into accumulator type A. Its functions are
// called once per contiguous run, never per element.
type reducer[T, A any] struct {
	init A
	// seg folds the run s into acc.
	seg func(acc A, s []T) A
	// vec folds s elementwise into acc (len(acc) == len(s)).
	vec func(acc []A, s []T)
	// comb combines two partial results.
	comb func(a, b A) A
	// fin converts accumulators to results.
	fin func(d []T, acc []A)
}

func reduceKernel(p *interp.Prim, op reduceOp) kernel {
	// The reducers are built once: their function values are closures
	// that would otherwise be allocated on every call (a fused group
	// calls the kernel once per block).
	rb := boolReducer(op == opMax)
	ri := numReducer[int64, int64](op)
	rf32 := numReducer[float32, float32](op)
	rf32w := numReducer[float32, float64](op)
	rf64 := numReducer[float64, float64](op)
	if op == opSum {
		rf64.seg = sumSegPairwise
		if haveSIMD {
			rf32w.seg = sumWiden32
		}
	}
	if op == opMax && haveSIMD {
		rf32.seg = maxSeg32
	}
	return func(params any, in, out []backend.Array) {
		axes := params.(prims.ReduceParams).Axes
		x, o := in[0], out[0]
		switch o.Buf.(type) {
		case *boolBuf:
			if op != opMax && op != opMin {
				badDType(p, backend.Bool)
			}
			runReduce(bools(o), bools(x), x.Shape, axes, rb)
		case *i64Buf:
			runReduce(i64s(o), i64s(x), x.Shape, axes, ri)
		case *f32Buf:
			if op == opSum || op == opProd {
				runReduce(f32s(o), f32s(x), x.Shape, axes, rf32w)
			} else {
				runReduce(f32s(o), f32s(x), x.Shape, axes, rf32)
			}
		case *f64Buf:
			runReduce(f64s(o), f64s(x), x.Shape, axes, rf64)
		default:
			badDType(p, o.Buf.DType())
		}
	}
}

// numReducer returns the reducer of op for numbers, accumulating in A.
func numReducer[T, A elemNum](op reduceOp) reducer[T, A] {
	fin := func(d []T, acc []A) {
		acc = acc[:len(d)]
		for i, v := range acc {
			d[i] = T(v)
		}
	}
	switch op {
	case opSum:
		return reducer[T, A]{init: 0, seg: sumSeg[T, A], vec: sumVecFast[T, A](), comb: func(a, b A) A { return a + b }, fin: fin}
	case opProd:
		return reducer[T, A]{init: 1, seg: prodSeg[T, A], vec: prodVec[T, A], comb: func(a, b A) A { return a * b }, fin: fin}
	case opMax:
		return reducer[T, A]{init: lowest[A](), seg: maxSeg[T, A], vec: maxVec[T, A], comb: func(a, b A) A { return max(a, b) }, fin: fin}
	}
	return reducer[T, A]{init: highest[A](), seg: minSeg[T, A], vec: minVec[T, A], comb: func(a, b A) A { return min(a, b) }, fin: fin}
}

// lowest returns -Inf for floats and MinInt64 for int64: the identity of
// max. highest is the identity of min.
func lowest[A elemNum]() A {
	var z A
	switch any(z).(type) {
	case float32, float64:
		inf := math.Inf(-1)
		return A(inf)
	}
	m := int64(math.MinInt64)
	return A(m)
}

func highest[A elemNum]() A {
	var z A
	switch any(z).(type) {
	case float32, float64:
		inf := math.Inf(1)
		return A(inf)
	}
	m := int64(math.MaxInt64)
	return A(m)
}

func sumSeg[T, A elemNum](acc A, s []T) A {
	var a0, a1, a2, a3 A
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4 : i+4]
		a0 += A(q[0])
		a1 += A(q[1])
		a2 += A(q[2])
		a3 += A(q[3])
	}
	for ; i < len(s); i++ {
		a0 += A(s[i])
	}
	return acc + ((a0 + a1) + (a2 + a3))
}

// sumSegPairwise sums float64 runs pairwise: the rounding error grows with
// the logarithm of the length instead of linearly.
func sumSegPairwise(acc float64, s []float64) float64 {
	return acc + pairwise(s)
}

func pairwise(s []float64) float64 {
	if len(s) <= 256 {
		return sumSeg[float64, float64](0, s)
	}
	h := len(s) / 2 &^ 7
	return pairwise(s[:h]) + pairwise(s[h:])
}

// sumVecFast returns the vec function of a sum: the SIMD kernels for
// float32 rows into float64 accumulators and float64 into float64, which
// a sum over leading axes (a bias gradient) runs once per row; sumVec
// otherwise.
func sumVecFast[T, A elemNum]() func(acc []A, s []T) {
	if haveSIMD {
		if f, ok := any(addWiden32Vec).(func([]A, []T)); ok {
			return f
		}
		if f, ok := any(sumVec64).(func([]A, []T)); ok {
			return f
		}
	}
	return sumVec[T, A]
}

// sumVec64 sets acc[i] += s[i] with the float64 SIMD add.
func sumVec64(acc, s []float64) { addVV64Vec(acc, acc, s[:len(acc)]) }

func sumVec[T, A elemNum](acc []A, s []T) {
	s = s[:len(acc)]
	for i, v := range s {
		acc[i] += A(v)
	}
}

func prodSeg[T, A elemNum](acc A, s []T) A {
	a0, a1 := A(1), A(1)
	i := 0
	for ; i+2 <= len(s); i += 2 {
		a0 *= A(s[i])
		a1 *= A(s[i+1])
	}
	if i < len(s) {
		a0 *= A(s[i])
	}
	return acc * (a0 * a1)
}

func prodVec[T, A elemNum](acc []A, s []T) {
	s = s[:len(acc)]
	for i, v := range s {
		acc[i] *= A(v)
	}
}

func maxSeg[T, A elemNum](acc A, s []T) A {
	// Four independent chains; max is associative and keeps NaN.
	a0, a1, a2, a3 := acc, acc, acc, acc
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4 : i+4]
		a0 = max(a0, A(q[0]))
		a1 = max(a1, A(q[1]))
		a2 = max(a2, A(q[2]))
		a3 = max(a3, A(q[3]))
	}
	for ; i < len(s); i++ {
		a0 = max(a0, A(s[i]))
	}
	return max(max(a0, a1), max(a2, a3))
}

func maxVec[T, A elemNum](acc []A, s []T) {
	s = s[:len(acc)]
	for i, v := range s {
		acc[i] = max(acc[i], A(v))
	}
}

func minSeg[T, A elemNum](acc A, s []T) A {
	// Four independent chains; min is associative and keeps NaN.
	a0, a1, a2, a3 := acc, acc, acc, acc
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4 : i+4]
		a0 = min(a0, A(q[0]))
		a1 = min(a1, A(q[1]))
		a2 = min(a2, A(q[2]))
		a3 = min(a3, A(q[3]))
	}
	for ; i < len(s); i++ {
		a0 = min(a0, A(s[i]))
	}
	return min(min(a0, a1), min(a2, a3))
}

func minVec[T, A elemNum](acc []A, s []T) {
	s = s[:len(acc)]
	for i, v := range s {
		acc[i] = min(acc[i], A(v))
	}
}

// boolReducer is any (reduce_max) or all (reduce_min).
func boolReducer(anyOf bool) reducer[bool, bool] {
	fin := func(d []bool, acc []bool) { copy(d, acc) }
	if anyOf {
		return reducer[bool, bool]{
			init: false,
			seg: func(acc bool, s []bool) bool {
				for _, v := range s {
					acc = acc || v
				}
				return acc
			},
			vec: func(acc []bool, s []bool) {
				s = s[:len(acc)]
				for i, v := range s {
					acc[i] = acc[i] || v
				}
			},
			comb: func(a, b bool) bool { return a || b },
			fin:  fin,
		}
	}
	return reducer[bool, bool]{
		init: true,
		seg: func(acc bool, s []bool) bool {
			for _, v := range s {
				acc = acc && v
			}
			return acc
		},
		vec: func(acc []bool, s []bool) {
			s = s[:len(acc)]
			for i, v := range s {
				acc[i] = acc[i] && v
			}
		},
		comb: func(a, b bool) bool { return a && b },
		fin:  fin,
	}
}

// reduceGroup is a run of adjacent dimensions that are all reduced or all
// kept, merged into one dimension of the contiguous input.
type reduceGroup struct {
	n       int
	reduced bool
	inStep  int // input elements per index step
	outStep int // output elements per index step (kept groups)
}

// reduceBlock is the run length full reductions split their input into;
// fixed so results do not depend on the thread count.
const reduceBlock = 1 << 14

// runReduce reduces the contiguous x of the given shape over axes into d.
func runReduce[T, A any](d, x []T, shape, axes []int, r reducer[T, A]) {
	if len(d) == 0 {
		return
	}
	// Merge dimensions into alternating groups, dropping size-1 ones.
	var groups []reduceGroup
	k := 0
	for i, n := range shape {
		red := k < len(axes) && axes[k] == i
		if red {
			k++
		}
		if n == 1 {
			continue
		}
		if len(groups) > 0 && groups[len(groups)-1].reduced == red {
			groups[len(groups)-1].n *= n
		} else {
			groups = append(groups, reduceGroup{n: n, reduced: red})
		}
	}
	// Strides of the groups in the input and the output.
	in, outS := 1, 1
	for g := len(groups) - 1; g >= 0; g-- {
		groups[g].inStep = in
		in *= groups[g].n
		if !groups[g].reduced {
			groups[g].outStep = outS
			outS *= groups[g].n
		}
	}

	// The accumulators: d itself when A is T, scratch otherwise.
	acc, same := any(d).([]A)
	if !same {
		acc = make([]A, len(d))
	}

	switch {
	case len(x) == 0: // an empty reduced axis: the identity
		fillSlice(acc, r.init)
	case len(groups) == 0: // a single element
		acc[0] = r.seg(r.init, x[:1])
	case len(groups) == 1 && groups[0].reduced: // everything reduced
		nb := (len(x) + reduceBlock - 1) / reduceBlock
		part := make([]A, nb)
		parallelFor(nb, reduceBlock, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				part[b] = r.seg(r.init, x[b*reduceBlock:min((b+1)*reduceBlock, len(x))])
			}
		})
		v := part[0]
		for _, p := range part[1:] {
			v = r.comb(v, p)
		}
		acc[0] = v
	default:
		// Split the outermost kept group across goroutines: each one owns
		// the outputs of its index range.
		f := 0
		for groups[f].reduced {
			f++
		}
		fillSlice(acc, r.init)
		w := reduceWalk[T, A]{groups: groups, f: f, x: x, acc: acc, r: r}
		parallelFor(groups[f].n, len(x)/groups[f].n, func(lo, hi int) {
			w.walk(0, 0, 0, lo, hi)
		})
	}
	if !same {
		r.fin(d, acc)
	}
}

type reduceWalk[T, A any] struct {
	groups []reduceGroup
	f      int // the group split across goroutines
	x      []T
	acc    []A
	r      reducer[T, A]
}

// walk folds the sub-box of groups g… at input offset i into the
// accumulators at output offset o; group f runs over [lo, hi) only.
func (w *reduceWalk[T, A]) walk(g, i, o, lo, hi int) {
	gr := w.groups[g]
	start, end := 0, gr.n
	if g == w.f {
		start, end = lo, hi
	}
	if g == len(w.groups)-1 {
		// A single innermost group, only when it is the split kept group
		// (nothing is reduced below it): each output folds one element.
		for j := start; j < end; j++ {
			w.acc[o+j] = w.r.seg(w.acc[o+j], w.x[i+j:i+j+1])
		}
		return
	}
	if g == len(w.groups)-2 {
		in := w.groups[g+1]
		if gr.reduced { // rows folded into one output vector
			// The inner group is kept; it may be the split one.
			c0, c1 := 0, in.n
			if g+1 == w.f {
				c0, c1 = lo, hi
			}
			a := w.acc[o+c0 : o+c1]
			for j := start; j < end; j++ {
				w.r.vec(a, w.x[i+j*gr.inStep+c0:][:c1-c0])
			}
		} else { // runs folded into one output each
			for j := start; j < end; j++ {
				p := o + j*gr.outStep
				w.acc[p] = w.r.seg(w.acc[p], w.x[i+j*gr.inStep:][:in.n])
			}
		}
		return
	}
	for j := start; j < end; j++ {
		w.walk(g+1, i+j*gr.inStep, o+j*gr.outStep, lo, hi)
	}
}

// ---------------------------------------------------------------------------
// argmax, argmin

// axisSplit returns the sizes before, along and after axis.
func axisSplit(shape []int, axis int) (outer, n, inner int) {
	return backend.ShapeSize(shape[:axis]), shape[axis], backend.ShapeSize(shape[axis+1:])
}

func argKernel(p *interp.Prim, isMax bool) kernel {
	return func(params any, in, out []backend.Array) {
		axis := params.(prims.AxisParams).Axis
		x := in[0]
		if axis < 0 || axis >= len(x.Shape) {
			interp.Panicf("cpu: %s axis %d out of range for shape %v", p.Name, axis, x.Shape)
		}
		_, n, inner := axisSplit(x.Shape, axis)
		d := i64s(out[0])
		if len(d) == 0 {
			return
		}
		switch x.Buf.(type) {
		case *boolBuf:
			runArg(d, bools(x), n, inner, boolBetter(isMax))
		case *i64Buf:
			runArg(d, i64s(x), n, inner, numBetter[int64](isMax))
		case *f32Buf:
			runArg(d, f32s(x), n, inner, numBetter[float32](isMax))
		case *f64Buf:
			runArg(d, f64s(x), n, inner, numBetter[float64](isMax))
		default:
			badDType(p, x.Buf.DType())
		}
	}
}

// argScan finds, for a run of columns, the first best element along the
// axis: best and idx hold the current winners of the columns.
type argScan[T any] struct {
	// run scans a contiguous run s (inner == 1) and returns its winner.
	run func(s []T) int64
	// rows folds row s (index r) into the column winners.
	rows func(best []T, idx []int64, s []T, r int64)
}

// numBetter: v beats the current best b when it is strictly greater (less)
// or when it is the first NaN.
func numBetter[T elemNum](isMax bool) argScan[T] {
	if isMax {
		return argScan[T]{run: argRunMax[T], rows: argRowsMax[T]}
	}
	return argScan[T]{run: argRunMin[T], rows: argRowsMin[T]}
}

func argRunMax[T elemNum](s []T) int64 {
	best, bi := s[0], 0
	for i, v := range s {
		if v > best || (v != v && best == best) {
			best, bi = v, i
		}
	}
	return int64(bi)
}

func argRunMin[T elemNum](s []T) int64 {
	best, bi := s[0], 0
	for i, v := range s {
		if v < best || (v != v && best == best) {
			best, bi = v, i
		}
	}
	return int64(bi)
}

func argRowsMax[T elemNum](best []T, idx []int64, s []T, r int64) {
	s, idx = s[:len(best)], idx[:len(best)]
	for j, v := range s {
		if b := best[j]; v > b || (v != v && b == b) {
			best[j], idx[j] = v, r
		}
	}
}

func argRowsMin[T elemNum](best []T, idx []int64, s []T, r int64) {
	s, idx = s[:len(best)], idx[:len(best)]
	for j, v := range s {
		if b := best[j]; v < b || (v != v && b == b) {
			best[j], idx[j] = v, r
		}
	}
}

// boolBetter orders false < true.
func boolBetter(isMax bool) argScan[bool] {
	want := isMax
	return argScan[bool]{
		run: func(s []bool) int64 {
			for i, v := range s {
				if v == want {
					return int64(i)
				}
			}
			return 0
		},
		rows: func(best []bool, idx []int64, s []bool, r int64) {
			s, idx = s[:len(best)], idx[:len(best)]
			for j, v := range s {
				if v == want && best[j] != want {
					best[j], idx[j] = v, r
				}
			}
		},
	}
}

// runArg computes d (outer×inner, flat) from x (outer×n×inner).
func runArg[T any](d []int64, x []T, n, inner int, sc argScan[T]) {
	parallelFor(len(d), n, func(lo, hi int) {
		if inner == 1 {
			for q := lo; q < hi; q++ {
				d[q] = sc.run(x[q*n : (q+1)*n])
			}
			return
		}
		best := make([]T, min(inner, hi-lo))
		for q := lo; q < hi; {
			o, j := q/inner, q%inner
			m := min(inner-j, hi-q) // columns j…j+m of outer row o
			base := o*n*inner + j
			b, idx := best[:m], d[q:q+m]
			copy(b, x[base:base+m])
			clear(idx)
			for r := 1; r < n; r++ {
				sc.rows(b, idx, x[base+r*inner:][:m], int64(r))
			}
			q += m
		}
	})
}
