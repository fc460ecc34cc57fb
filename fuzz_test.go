package peel_test

import (
	"math"
	"math/big"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
)

// Fuzz targets for the arguments of constructors, shape operations and
// indexing. Each calls an op with fuzzer-chosen sizes, bounds, axes and
// indices under a recover: a panic that is not a *peel.Error naming the op
// fails the target, and a result must have a valid shape (no negative
// dimension, Size equal to the product of the shape) and readable data.
// The allocation limit is lowered for the duration, so no input makes the
// fuzzer allocate much memory.
//
//	go test -run '^$' -fuzz '^FuzzCreation$' -fuzztime 30s .
//	go test -run '^$' -fuzz '^FuzzShapeOps$' -fuzztime 30s .
//	go test -run '^$' -fuzz '^FuzzIndex$' -fuzztime 30s .

// fuzzMaxAlloc is the allocation limit while fuzzing.
const fuzzMaxAlloc = 64 << 20

// fuzzReadLimit bounds the results whose elements are read back.
const fuzzReadLimit = 1 << 16

// fuzzLimit lowers the allocation limit until the fuzz target ends.
func fuzzLimit(f *testing.F) {
	old := peel.SetMaxAllocBytes(fuzzMaxAlloc)
	f.Cleanup(func() { peel.SetMaxAllocBytes(old) })
}

// fuzzCall runs f and reports whether it returned. A panic with a
// *peel.Error naming op is an acceptable refusal (false); any other panic
// fails the test.
func fuzzCall(t *testing.T, op string, f func()) (ok bool) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		ok = false
		e, isErr := r.(*peel.Error)
		if !isErr {
			t.Fatalf("%s panicked with %T, not *peel.Error: %v\n%s", op, r, r, debug.Stack())
		}
		if !strings.Contains(e.Error(), op) {
			t.Fatalf("%s: error %q does not name the op", op, e.Error())
		}
	}()
	f()
	return true
}

// fuzzCheck checks the invariants of a result: non-negative dimensions, a
// size equal to their product, and (for small results) as many readable
// elements as the size says.
func fuzzCheck(t *testing.T, op string, x *peel.Tensor) {
	t.Helper()
	if x == nil {
		t.Fatalf("%s returned nil", op)
	}
	prod := big.NewInt(1)
	for _, d := range x.Shape() {
		if d < 0 {
			t.Fatalf("%s: result %s has a negative dimension", op, x.TypeString())
		}
		prod.Mul(prod, big.NewInt(int64(d)))
	}
	if !prod.IsInt64() || prod.Int64() != int64(x.Size()) {
		t.Fatalf("%s: result %s has Size %d, product of its shape %v", op, x.TypeString(), x.Size(), prod)
	}
	if x.Size() > fuzzReadLimit {
		return
	}
	if n := len(fuzzValues(t, op, x)); n != x.Size() {
		t.Fatalf("%s: result %s holds %d elements, Size %d", op, x.TypeString(), n, x.Size())
	}
}

// fuzzValues returns x's elements converted to float64 (x must be
// small).
func fuzzValues(t *testing.T, op string, x *peel.Tensor) []float64 {
	t.Helper()
	var out []float64
	if !fuzzCall(t, op+" (reading the result)", func() {
		switch x.DType() {
		case peel.Float64:
			out = x.Float64s()
		case peel.Float32:
			for _, v := range x.Float32s() {
				out = append(out, float64(v))
			}
		case peel.Int64:
			for _, v := range x.Int64s() {
				out = append(out, float64(v))
			}
		case peel.Bool:
			for _, v := range x.Bools() {
				out = append(out, float64(b2i(v)))
			}
		}
	}) {
		t.Fatalf("%s: reading the result %s failed", op, x.TypeString())
	}
	if out == nil {
		out = []float64{}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fuzzDTypes are the dtypes a fuzzer byte selects.
var fuzzDTypes = [...]peel.DType{peel.Float64, peel.Float32, peel.Int64, peel.Bool}

// fuzzTensor returns a small f64 tensor of rank%4 dimensions of sizes
// s0, s1, s2 (each below 5) holding 0, 1, 2, … in row-major order.
func fuzzTensor(rank, s0, s1, s2 uint8) *peel.Tensor {
	shape := []int{int(s0 % 5), int(s1 % 5), int(s2 % 5)}[:rank%4]
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]float64, n)
	for i := range data {
		data[i] = float64(i)
	}
	return peel.FromFloat64s(data, shape...)
}

// FuzzCreation calls the constructors with fuzzer-chosen dimensions,
// counts and ranges.
func FuzzCreation(f *testing.F) {
	fuzzLimit(f)
	// op, rank, d0, d1, d2, v, dtype.
	f.Add(uint8(0), uint8(2), 1<<32, 1<<32, 0, 0.0, uint8(0))                              // Zeros(f64, 2^32, 2^32)
	f.Add(uint8(0), uint8(2), math.MaxInt, 3, 0, 0.0, uint8(0))                            // Zeros(f64, MaxInt, 3)
	f.Add(uint8(0), uint8(2), 1<<31, 1<<32, 0, 0.0, uint8(1))                              // one bit over
	f.Add(uint8(1), uint8(2), 1<<62, 2, 0, 0.0, uint8(0))                                  // Ones(2^62, 2)
	f.Add(uint8(2), uint8(3), math.MaxInt, math.MaxInt, 0, 1.0, uint8(2))                  // Full with a zero dim
	f.Add(uint8(0), uint8(1), math.MinInt, 0, 0, 0.0, uint8(0))                            // negative
	f.Add(uint8(3), uint8(0), 0, 1<<50, 1, 0.5, uint8(0))                                  // Arange too large
	f.Add(uint8(3), uint8(0), 0, 10, -1, 3.0, uint8(2))                                    // Arange descending
	f.Add(uint8(4), uint8(0), 1<<40, 0, 0, 1.0, uint8(0))                                  // Linspace(0, 1, 2^40)
	f.Add(uint8(4), uint8(0), math.MinInt, 0, 0, 1.0, uint8(1))                            // Linspace negative
	f.Add(uint8(5), uint8(0), math.MaxInt, 0, 0, 0.0, uint8(0))                            // Eye(MaxInt)
	f.Add(uint8(5), uint8(0), 3, 0, 0, 0.0, uint8(3))                                      // Eye(bool, 3)
	f.Add(uint8(6), uint8(1), math.MaxInt, 0, 1, 0.0, uint8(0))                            // OneHot(…, MaxInt)
	f.Add(uint8(6), uint8(2), 3, -1, 2, 0.0, uint8(2))                                     // OneHot with a negative index
	f.Add(uint8(7), uint8(0), math.MaxInt, 0, 0, 0.0, uint8(0))                            // SplitKeysStacked(MaxInt)
	f.Add(uint8(8), uint8(2), math.MaxInt, 2, 0, 0.0, uint8(0))                            // Uniform overflow
	f.Add(uint8(9), uint8(1), 1<<62, 0, 0, 0.0, uint8(1))                                  // Normal f32 2^62
	f.Add(uint8(10), uint8(3), 2, 3, 4, 0.5, uint8(0))                                     // Bernoulli
	f.Add(uint8(11), uint8(3), 1<<32, 1<<32, 1, 0.0, uint8(0))                             // FromFloat64s shape overflow
	f.Add(uint8(11), uint8(2), 2305843009213693955, 4611686018427387906, 0, 0.0, uint8(2)) // wraps to 6
	f.Fuzz(func(t *testing.T, op, rank uint8, d0, d1, d2 int, v float64, dti uint8) {
		dt := fuzzDTypes[dti%4]
		shape := []int{d0, d1, d2}[:rank%4]
		var name string
		var run func() *peel.Tensor
		switch op % 12 {
		case 0:
			name, run = "peel.Zeros", func() *peel.Tensor { return peel.Zeros(dt, shape...) }
		case 1:
			name, run = "peel.Ones", func() *peel.Tensor { return peel.Ones(dt, shape...) }
		case 2:
			name, run = "peel.Full", func() *peel.Tensor { return peel.Full(dt, v, shape...) }
		case 3:
			name, run = "peel.Arange", func() *peel.Tensor { return peel.Arange(dt, float64(d0), float64(d1), float64(d2)+v) }
		case 4:
			name, run = "peel.Linspace", func() *peel.Tensor { return peel.Linspace(dt, 0, v, d0) }
		case 5:
			name, run = "peel.Eye", func() *peel.Tensor { return peel.Eye(dt, d0) }
		case 6:
			idx := []int64{int64(d1), int64(d2), 0}[:rank%4]
			name, run = "peel.OneHot", func() *peel.Tensor { return peel.OneHot(peel.FromInt64s(idx), d0, dt) }
		case 7:
			name, run = "peel.SplitKeysStacked", func() *peel.Tensor { return peel.SplitKeysStacked(peel.Key(int64(d1)), d0) }
		case 8:
			name, run = "peel.Uniform", func() *peel.Tensor { return peel.Uniform(peel.Key(1), fuzzDTypes[dti%2], shape...) }
		case 9:
			name, run = "peel.Normal", func() *peel.Tensor { return peel.Normal(peel.Key(1), fuzzDTypes[dti%2], shape...) }
		case 10:
			name, run = "peel.Bernoulli", func() *peel.Tensor { return peel.Bernoulli(peel.Key(1), v, shape...) }
		case 11:
			// The data is sized by the shape when that is small, so
			// valid shapes are reached too.
			n := int(uint(d0+d1+d2) % 64)
			if p, ok := smallProduct(shape); ok {
				n = p
			}
			data := make([]float64, n)
			name, run = "peel.FromFloat64s", func() *peel.Tensor { return peel.FromFloat64s(data, shape...) }
		}
		var x *peel.Tensor
		if fuzzCall(t, name, func() { x = run() }) {
			fuzzCheck(t, name, x)
		}
	})
}

// smallProduct returns the product of shape's dimensions when they are
// non-negative and it is at most 1024.
func smallProduct(shape []int) (int, bool) {
	p := 1
	for _, d := range shape {
		if d < 0 || d > 1024 {
			return 0, false
		}
		p *= d
		if p > 1024 {
			return 0, false
		}
	}
	return p, true
}

// FuzzShapeOps applies a shape operation with fuzzer-chosen arguments to a
// small tensor, or to a broadcast view of it with a leading dimension of
// size huge (which makes sizes near overflow reachable without memory).
func FuzzShapeOps(f *testing.F) {
	fuzzLimit(f)
	// op, rank, s0, s1, s2, huge, nargs, a, b, c, d.
	f.Add(uint8(0), uint8(1), uint8(0), uint8(0), uint8(0), 0, uint8(2), 1<<62, 4, 0, 0)                                 // Reshape(Zeros(0), 2^62, 4)
	f.Add(uint8(0), uint8(1), uint8(6), uint8(0), uint8(0), 0, uint8(2), 2305843009213693955, 4611686018427387906, 0, 0) // wraps to 6
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(3), -1, 1<<62, 4, 0)                                // -1 with an overflowing rest
	f.Add(uint8(1), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(4), 1, 0, 3, math.MaxInt)                           // Slice step MaxInt
	f.Add(uint8(1), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(4), 1, math.MinInt, math.MaxInt, 1)                 // Slice MinInt/MaxInt bounds
	f.Add(uint8(1), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, uint8(4), 0, 0, math.MaxInt, math.MaxInt-1)
	f.Add(uint8(2), uint8(1), uint8(2), uint8(0), uint8(0), 0, uint8(4), 1<<62, 0, 0, 0)                  // Pad by 2^62
	f.Add(uint8(2), uint8(1), uint8(2), uint8(0), uint8(0), 0, uint8(4), math.MaxInt, math.MaxInt, 0, 0)  // Pad overflow
	f.Add(uint8(2), uint8(1), uint8(2), uint8(0), uint8(0), 0, uint8(4), math.MinInt, math.MaxInt, 0, 0)  // Pad crop + grow
	f.Add(uint8(3), uint8(3), uint8(2), uint8(3), uint8(4), 0, uint8(3), 2, math.MinInt, 0, 0)            // Transpose
	f.Add(uint8(4), uint8(1), uint8(1), uint8(0), uint8(0), 0, uint8(3), 1<<32, 1<<31, 1, 0)              // BroadcastTo overflow
	f.Add(uint8(5), uint8(1), uint8(3), uint8(0), uint8(0), math.MaxInt, uint8(2), 0, 1, 0, 0)            // Concat overflow
	f.Add(uint8(6), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(3), 1, 1, math.MaxInt, 0)            // Narrow length MaxInt
	f.Add(uint8(7), uint8(3), uint8(1), uint8(3), uint8(1), 0, uint8(1), math.MinInt, 0, 0, 0)            // Squeeze
	f.Add(uint8(8), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(1), math.MinInt, 0, 0, 0)            // Unsqueeze
	f.Add(uint8(11), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(4), 1, math.MaxInt, math.MaxInt, 5) // Split sizes overflow
	f.Add(uint8(12), uint8(2), uint8(2), uint8(3), uint8(0), 0, uint8(2), 1<<62, 1<<62, 0, 0)             // Tile overflow
	f.Add(uint8(12), uint8(2), uint8(2), uint8(3), uint8(0), 1<<40, uint8(1), 1<<30, 0, 0, 0)             // Tile of a huge view
	f.Add(uint8(15), uint8(1), uint8(3), uint8(0), uint8(0), 1<<62, uint8(1), 0, 0, 0, 0)                 // Stack of huge views
	f.Add(uint8(4), uint8(0), uint8(0), uint8(0), uint8(0), 0, uint8(4), math.MaxInt, 0, 2, 4)            // BroadcastTo MaxInt×0×2×4: empty, accepted
	f.Add(uint8(12), uint8(2), uint8(1), uint8(0), uint8(0), 0, uint8(2), math.MaxInt, 5, 0, 0)           // Tile to MaxInt×0
	f.Add(uint8(3), uint8(2), uint8(0), uint8(2), uint8(0), math.MaxInt, uint8(3), 2, 0, 1, 0)            // Transpose of an empty MaxInt×0×2 view
	f.Fuzz(func(t *testing.T, op, rank, s0, s1, s2 uint8, huge int, nargs uint8, a, b, c, d int) {
		x := fuzzTensor(rank, s0, s1, s2)
		if huge != 0 {
			shape := append([]int{huge}, x.Shape()...)
			row := append([]int{1}, x.Shape()...)
			if !fuzzCall(t, "peel.BroadcastTo", func() { x = peel.BroadcastTo(peel.Reshape(x, row...), shape...) }) {
				return
			}
			fuzzCheck(t, "peel.BroadcastTo", x)
		}
		args := []int{a, b, c, d}[:nargs%5]
		r := x.Rank()
		axis := 0
		if r > 0 {
			axis = int(uint(c) % uint(r))
		}
		var name string
		var run func() *peel.Tensor
		switch op % 19 {
		case 0:
			name, run = "peel.Reshape", func() *peel.Tensor { return peel.Reshape(x, args...) }
		case 1:
			name, run = "peel.Slice", func() *peel.Tensor { return peel.Slice(x, a, b, c, d) }
		case 2:
			pads := make([][2]int, r)
			for k := range pads {
				pads[k] = [2]int{0, d}
				if k == axis {
					pads[k] = [2]int{a, b}
				}
			}
			name, run = "peel.Pad", func() *peel.Tensor { return peel.Pad(x, pads, 1) }
		case 3:
			name, run = "peel.Transpose", func() *peel.Tensor { return peel.Transpose(x, args...) }
		case 4:
			name, run = "peel.BroadcastTo", func() *peel.Tensor { return peel.BroadcastTo(x, args...) }
		case 5:
			// y is x with axis resized to b (a broadcast view).
			ys := append([]int(nil), x.Shape()...)
			if len(ys) > 0 {
				ys[axis] = b
			}
			var y *peel.Tensor
			if !fuzzCall(t, "peel.BroadcastTo", func() { y = peel.BroadcastTo(peel.Scalar(1.0), ys...) }) {
				return
			}
			name, run = "peel.Concat", func() *peel.Tensor { return peel.Concat([]*peel.Tensor{x, y, x}, a) }
		case 6:
			name, run = "peel.Narrow", func() *peel.Tensor { return peel.Narrow(x, a, b, c) }
		case 7:
			name, run = "peel.Squeeze", func() *peel.Tensor { return peel.Squeeze(x, args...) }
		case 8:
			name, run = "peel.Unsqueeze", func() *peel.Tensor { return peel.Unsqueeze(x, a) }
		case 9:
			name, run = "peel.Select", func() *peel.Tensor { return peel.Select(x, a, b) }
		case 10:
			name, run = "peel.Index", func() *peel.Tensor { return peel.Index(x, args...) }
		case 11:
			name, run = "peel.Split", func() *peel.Tensor {
				parts := peel.Split(x, args, c)
				if len(parts) == 0 {
					return x
				}
				return parts[len(parts)-1]
			}
		case 12:
			name, run = "peel.Tile", func() *peel.Tensor { return peel.Tile(x, args...) }
		case 13:
			name, run = "peel.Flip", func() *peel.Tensor { return peel.Flip(x, args...) }
		case 14:
			name, run = "peel.MoveAxis", func() *peel.Tensor { return peel.MoveAxis(x, a, b) }
		case 15:
			name, run = "peel.Stack", func() *peel.Tensor { return peel.Stack([]*peel.Tensor{x, x}, a) }
		case 16:
			name, run = "peel.Flatten", func() *peel.Tensor { return peel.Flatten(x) }
		case 17:
			name, run = "peel.Permute", func() *peel.Tensor { return peel.Permute(x, args...) }
		case 18:
			name, run = "peel.Clone", func() *peel.Tensor { return peel.Clone(x) }
		}
		var y *peel.Tensor
		if !fuzzCall(t, name, func() { y = run() }) {
			return
		}
		fuzzCheck(t, name, y)
		if huge == 0 && op%19 == 1 {
			checkSliceValues(t, x, y, a, b, c, d)
		}
	})
}

// checkSliceValues compares y = Slice(x, axis, start, stop, step) of a
// small arange x with Python's x[start:stop:step] along axis.
func checkSliceValues(t *testing.T, x, y *peel.Tensor, axis, start, stop, step int) {
	t.Helper()
	shape := x.Shape()
	r := len(shape)
	if axis < 0 {
		axis += r
	}
	n := shape[axis]
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	var picked []int
	for i := start; i < stop; i += step {
		picked = append(picked, i)
		if step > stop-i {
			break
		}
	}
	outer, inner := outerInner(shape, axis)
	var want []float64
	for o := 0; o < outer; o++ {
		for _, i := range picked {
			for s := 0; s < inner; s++ {
				want = append(want, float64((o*n+i)*inner+s))
			}
		}
	}
	got := fuzzValues(t, "peel.Slice", y)
	if len(got) != len(want) {
		t.Fatalf("Slice(%v, %d, %d, %d, %d) has %d elements, want %d", shape, axis, start, stop, step, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Slice(%v, %d, %d, %d, %d) = %v, want %v", shape, axis, start, stop, step, got, want)
		}
	}
}

// FuzzIndex calls the indexing operations with fuzzer-chosen indices,
// axes, class counts and slice sizes; the indices may be broadcast to a
// huge leading dimension.
func FuzzIndex(f *testing.F) {
	fuzzLimit(f)
	// op, rank, s0, s1, s2, nidx, i0, i1, i2, axis, n, huge.
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), uint8(2), int64(0), int64(-1), int64(0), 1, 0, 0)
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), uint8(1), int64(math.MaxInt64), int64(0), int64(0), 1, 0, 0)
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), uint8(1), int64(0), int64(0), int64(0), 1, 0, 1<<62)
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), uint8(1), int64(0), int64(0), int64(0), math.MinInt, 0, 0)
	f.Add(uint8(1), uint8(2), uint8(2), uint8(3), uint8(0), uint8(3), int64(2), int64(-3), int64(1), 1, 0, 0)
	f.Add(uint8(2), uint8(2), uint8(2), uint8(3), uint8(0), uint8(2), int64(1), int64(1), int64(0), 1, 0, 0)
	f.Add(uint8(3), uint8(2), uint8(2), uint8(3), uint8(0), uint8(2), int64(math.MinInt64), int64(1), int64(0), 0, 0, 0)
	f.Add(uint8(5), uint8(1), uint8(2), uint8(0), uint8(0), uint8(2), int64(0), int64(1), int64(0), 0, math.MaxInt, 0) // OneHot(…, MaxInt)
	f.Add(uint8(5), uint8(1), uint8(2), uint8(0), uint8(0), uint8(1), int64(0), int64(1), int64(0), 0, 1<<40, 1<<40)
	f.Add(uint8(6), uint8(2), uint8(2), uint8(3), uint8(0), uint8(2), int64(math.MaxInt64), int64(math.MinInt64), int64(0), 0, 1, 0)
	f.Add(uint8(6), uint8(2), uint8(2), uint8(3), uint8(0), uint8(2), int64(0), int64(0), int64(0), 0, math.MinInt, 0)
	f.Add(uint8(7), uint8(2), uint8(2), uint8(3), uint8(0), uint8(2), int64(-1), int64(5), int64(0), 0, 2, 0)
	f.Fuzz(func(t *testing.T, op, rank, s0, s1, s2, nidx uint8, i0, i1, i2 int64, axis, n, huge int) {
		x := fuzzTensor(rank, s0, s1, s2)
		vals := []int64{i0, i1, i2}[:nidx%4]
		idx := peel.FromInt64s(vals)
		if huge != 0 {
			if !fuzzCall(t, "peel.BroadcastTo", func() { idx = peel.BroadcastTo(idx, huge, len(vals)) }) {
				return
			}
		}
		r := x.Rank()
		ax := 0
		if r > 0 {
			ax = int(uint(axis) % uint(r))
		}
		// along is idx with the rank of x, its values along axis ax.
		along := idx
		if op%8 == 1 || op%8 == 2 {
			shape := make([]int, r)
			for k := range shape {
				shape[k] = 1
			}
			if r > 0 {
				shape[ax] = idx.Size()
			}
			if !fuzzCall(t, "peel.Reshape", func() { along = peel.Reshape(idx, shape...) }) {
				return
			}
		}
		var name string
		var run func() *peel.Tensor
		switch op % 8 {
		case 0:
			name, run = "peel.Take", func() *peel.Tensor { return peel.Take(x, idx, axis) }
		case 1:
			name, run = "peel.TakeAlongAxis", func() *peel.Tensor { return peel.TakeAlongAxis(x, along, axis) }
		case 2:
			name, run = "peel.ScatterAdd", func() *peel.Tensor { return peel.ScatterAdd(x, along, peel.Scalar(1.0), axis) }
		case 3:
			name, run = "peel.IndexAdd", func() *peel.Tensor { return peel.IndexAdd(x, idx, peel.Scalar(1.0), axis) }
		case 4:
			name, run = "peel.IndexCopy", func() *peel.Tensor { return peel.IndexCopy(x, idx, peel.Scalar(2.0), axis) }
		case 5:
			name, run = "peel.OneHot", func() *peel.Tensor { return peel.OneHot(idx, n, peel.Float32) }
		case 6, 7:
			starts := make([]*peel.Tensor, r)
			sizes := make([]int, r)
			ext := []int64{i0, i1, i2}
			for k := range starts {
				starts[k] = peel.Scalar(ext[k])
				sizes[k] = n
				if k > 0 {
					sizes[k] = int(ext[k-1])
				}
			}
			if op%8 == 6 {
				name, run = "peel.DynamicSlice", func() *peel.Tensor { return peel.DynamicSlice(x, starts, sizes) }
			} else {
				var u *peel.Tensor
				if !fuzzCall(t, "peel.Ones", func() { u = peel.Ones(peel.Float64, sizes...) }) {
					return
				}
				name, run = "peel.DynamicUpdateSlice", func() *peel.Tensor { return peel.DynamicUpdateSlice(x, u, starts) }
			}
		}
		var y *peel.Tensor
		if !fuzzCall(t, name, func() { y = run() }) {
			return
		}
		fuzzCheck(t, name, y)
		if op%8 == 0 && huge == 0 {
			if axis < 0 {
				axis += r
			}
			checkTakeValues(t, x, vals, axis, y)
		}
	})
}

// checkTakeValues compares y = Take(x, idx, axis) of a small arange x
// with numpy's take (negative indices counting from the end).
func checkTakeValues(t *testing.T, x *peel.Tensor, idx []int64, axis int, y *peel.Tensor) {
	t.Helper()
	shape := x.Shape()
	n := shape[axis]
	outer, inner := outerInner(shape, axis)
	var want []float64
	for o := 0; o < outer; o++ {
		for _, i := range idx {
			if i < 0 {
				i += int64(n)
			}
			for s := 0; s < inner; s++ {
				want = append(want, float64((o*n+int(i))*inner+s))
			}
		}
	}
	got := fuzzValues(t, "peel.Take", y)
	if len(got) != len(want) {
		t.Fatalf("Take(%v, %v, %d) has %d elements, want %d", shape, idx, axis, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Take(%v, %v, %d) = %v, want %v", shape, idx, axis, got, want)
		}
	}
}

// outerInner returns the number of elements before and after axis in a
// row-major shape.
func outerInner(shape []int, axis int) (outer, inner int) {
	outer, inner = 1, 1
	for k, d := range shape {
		if k < axis {
			outer *= d
		} else if k > axis {
			inner *= d
		}
	}
	return outer, inner
}

// FuzzConv calls Conv, ConvTranspose2D, MaxPool2D and AvgPool2D on small
// operands with fuzzer-chosen strides, padding, dilations and groups
// (sizes near overflow among them): a refusal is a *peel.Error naming
// the op, never another panic or an allocation past the limit.
func FuzzConv(f *testing.F) {
	fuzzLimit(f)
	// op, nd, c, o, k, stride, lo, hi, dilation, input dilation, groups.
	f.Add(uint8(0), uint8(2), uint8(4), uint8(2), uint8(3), 1, 1, 1, 1, 1, 1)
	f.Add(uint8(0), uint8(1), uint8(4), uint8(4), uint8(2), 2, -1, 3, 2, 2, 2)
	f.Add(uint8(0), uint8(2), uint8(2), uint8(2), uint8(2), 1, math.MaxInt/2, math.MaxInt/2, 1, 1, 1) // padding overflow
	f.Add(uint8(0), uint8(2), uint8(2), uint8(2), uint8(2), 1, 1<<20, 1<<20, 1, 1, 1)                 // result past the limit
	f.Add(uint8(0), uint8(1), uint8(2), uint8(2), uint8(2), 1, 0, 0, math.MaxInt, 1, 1)               // dilation overflow
	f.Add(uint8(0), uint8(1), uint8(2), uint8(2), uint8(2), 1, 0, 0, 1, math.MaxInt/3, 1)             // input dilation overflow
	f.Add(uint8(0), uint8(1), uint8(2), uint8(2), uint8(2), 0, 0, 0, 1, 1, 1)                         // stride 0
	f.Add(uint8(0), uint8(1), uint8(2), uint8(3), uint8(2), 1, 0, 0, 1, 1, 2)                         // groups do not divide
	f.Add(uint8(0), uint8(1), uint8(2), uint8(2), uint8(2), 1, -5, -5, 1, 1, 1)                       // padding removes all
	f.Add(uint8(1), uint8(2), uint8(2), uint8(2), uint8(3), 2, 1, 1, 1, 1, 1)
	f.Add(uint8(1), uint8(2), uint8(2), uint8(2), uint8(3), math.MaxInt/2, 0, 0, 1, 1, 1) // transposed stride overflow
	f.Add(uint8(2), uint8(2), uint8(2), uint8(2), uint8(3), 2, 1, 1, 1, 1, 1)
	f.Add(uint8(2), uint8(2), uint8(2), uint8(2), uint8(3), 1, 1<<30, 1<<30, 1, 1, 1) // pooled padding past the limit
	f.Add(uint8(3), uint8(2), uint8(2), uint8(2), uint8(3), math.MaxInt, 0, 0, 1, 1, 1)
	f.Add(uint8(0), uint8(15), uint8(2), uint8(75), uint8(0), math.MaxInt, 39, 85, 1, 1, 1) // found: a huge stride overflowed ⌈·/s⌉
	f.Fuzz(func(t *testing.T, op, nd, c, o, k uint8, stride, lo, hi, dil, idil, groups int) {
		ndim := 1 + int(nd%3)
		ch, oc, ks := 1+int(c%4), 1+int(o%4), 1+int(k%4)
		xs, ws := []int{2, ch}, []int{oc, ch / max(1, groups%5)}
		for range ndim {
			xs = append(xs, 5)
			ws = append(ws, ks)
		}
		fill := func(shape []int) *peel.Tensor {
			n := 1
			for _, d := range shape {
				n *= d
			}
			return peel.FromFloat64s(make([]float64, n), shape...)
		}
		pad := peel.ExplicitPadding([2]int{lo, hi})
		var name string
		var run func() *peel.Tensor
		switch op % 4 {
		case 0:
			w := fill(ws)
			if ws[1] == 0 {
				w = fill([]int{oc, 1, ks})
			}
			name, run = "peel.Conv", func() *peel.Tensor {
				return peel.Conv(fill(xs), w, peel.ConvStrides(stride), peel.ConvPadding(pad), peel.ConvDilation(dil), peel.ConvInputDilation(idil), peel.ConvGroups(groups))
			}
		case 1:
			name, run = "peel.ConvTranspose2D", func() *peel.Tensor {
				return peel.ConvTranspose2D(fill([]int{1, ch, 3, 3}), fill([]int{ch, oc, ks, ks}), peel.ConvStrides(stride), peel.ConvPadding(pad), peel.ConvDilation(dil))
			}
		case 2:
			name, run = "peel.MaxPool2D", func() *peel.Tensor {
				return peel.MaxPool2D(fill([]int{1, ch, 5, 5}), ks, peel.PoolWindow(ks, dil), peel.ConvStrides(stride, idil), peel.ConvPadding(pad))
			}
		case 3:
			name, run = "peel.AvgPool2D", func() *peel.Tensor {
				return peel.AvgPool2D(fill([]int{1, ch, 5, 5}), ks, peel.PoolWindow(ks, dil), peel.ConvStrides(stride, idil), peel.ConvPadding(pad))
			}
		}
		var x *peel.Tensor
		if fuzzCall(t, name, func() { x = run() }) {
			fuzzCheck(t, name, x)
		}
	})
}

// FuzzShapeMore calls the issue-17 shape and index ops with
// fuzzer-chosen shapes and integer arguments (offsets, axes, shifts,
// counts, sizes, indices): each returns a well-formed tensor or panics
// with a *peel.Error naming it, never a runtime panic.
func FuzzShapeMore(f *testing.F) {
	fuzzLimit(f)
	// op, rank, s0, s1, s2, a, b, c.
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), math.MinInt, 0, 0)
	f.Add(uint8(2), uint8(1), uint8(3), uint8(0), uint8(0), math.MaxInt, 0, 0)
	f.Add(uint8(2), uint8(1), uint8(3), uint8(0), uint8(0), math.MinInt, 0, 0)
	f.Add(uint8(3), uint8(2), uint8(2), uint8(3), uint8(0), math.MinInt, math.MaxInt, 1)
	f.Add(uint8(5), uint8(2), uint8(2), uint8(3), uint8(0), 1<<62, 0, 1)
	f.Add(uint8(5), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, 1, 0)
	f.Add(uint8(6), uint8(1), uint8(4), uint8(0), uint8(0), math.MaxInt, 0, 0)
	f.Add(uint8(9), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, -1, 0)
	f.Add(uint8(10), uint8(2), uint8(2), uint8(3), uint8(0), 1, math.MinInt, 0)
	f.Add(uint8(11), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, 0, 0)
	f.Fuzz(func(t *testing.T, op, rank, s0, s1, s2 uint8, a, b, c int) {
		x := fuzzTensor(rank, s0, s1, s2)
		idx := smI([]int64{int64(a), int64(b)}, 2)
		var name string
		var run func() *peel.Tensor
		switch op % 12 {
		case 0:
			name, run = "peel.Tril", func() *peel.Tensor { return peel.Tril(x, a) }
		case 1:
			name, run = "peel.Diagonal", func() *peel.Tensor { return peel.Diagonal(x, a, b, c) }
		case 2:
			name, run = "peel.Diag", func() *peel.Tensor { return peel.Diag(x, a) }
		case 3:
			name, run = "peel.Roll", func() *peel.Tensor { return peel.Roll(x, a, b, c) }
		case 4:
			name, run = "peel.Rot90", func() *peel.Tensor { return peel.Rot90(x, a, [2]int{b, c}) }
		case 5:
			name, run = "peel.RepeatInterleave", func() *peel.Tensor { return peel.RepeatInterleave(x, []int{a}, b) }
		case 6:
			name, run = "peel.Chunk", func() *peel.Tensor { return flatCat(peel.Chunk(x, a, b)) }
		case 7:
			name, run = "peel.Trace", func() *peel.Tensor { return peel.Trace(x, a) }
		case 8:
			name, run = "peel.MaskedSelect", func() *peel.Tensor {
				return peel.MaskedSelect(x, peel.FromBools([]bool{true}), a, 0)
			}
		case 9:
			name, run = "peel.Nonzero", func() *peel.Tensor { return flatCat(peel.Nonzero(x, a, int64(b))) }
		case 10:
			name, run = "peel.IndexPut", func() *peel.Tensor { return peel.IndexPut(x, []*peel.Tensor{idx}, 1.0, c%2 == 0) }
		default:
			name, run = "peel.ScatterReduce", func() *peel.Tensor {
				if x.Rank() == 0 {
					return peel.ScatterReduce(x, smI([]int64{int64(a)}), x, b, "amax", true)
				}
				i := peel.Reshape(idx, append([]int{2}, make([]int, x.Rank()-1)...)[:1]...)
				for range x.Rank() - 1 {
					i = peel.Unsqueeze(i, -1)
				}
				return peel.ScatterReduce(x, i, peel.Scalar(2.0), b, "prod", c%2 == 0)
			}
		}
		var y *peel.Tensor
		if fuzzCall(t, name, func() { y = run() }) {
			fuzzCheck(t, name, y)
		}
	})
}

// flatCat concatenates flattened pieces (a scalar zero for none).
func flatCat(ts []*peel.Tensor) *peel.Tensor {
	if len(ts) == 0 {
		return peel.Scalar(0.0)
	}
	f := make([]*peel.Tensor, len(ts))
	for i, t := range ts {
		f[i] = peel.AsType(peel.Flatten(t), peel.Float64)
	}
	return peel.Concat(f, 0)
}
