package cpu_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Tests of the API for kernels written outside the package (user.go) and
// of Backend.RegisterKernel.

// usrErr runs f and fails unless it panics with an *interp.Error whose
// message contains every substring; it returns the error.
func usrErr(t *testing.T, what string, f func(), substr ...string) *interp.Error {
	t.Helper()
	var r any
	func() {
		defer func() { r = recover() }()
		f()
	}()
	e, ok := r.(*interp.Error)
	if !ok {
		t.Errorf("%s: panic %v (%T), want *interp.Error", what, r, r)
		return nil
	}
	for _, s := range substr {
		if !strings.Contains(e.Error(), s) {
			t.Errorf("%s: error %q does not mention %q", what, e.Error(), s)
		}
	}
	return e
}

// usrForeign is a buffer of another backend.
type usrForeign struct{}

func (usrForeign) Len() int             { return 10 }
func (usrForeign) DType() backend.DType { return backend.Float64 }

// TestUserSlices checks Float64s, Float32s, Int64s and Bools: the slice
// aliases the buffer from Offset, holds exactly the array's elements, and
// bad arrays panic with *interp.Error.
func TestUserSlices(t *testing.T) {
	be := cpu.New()
	type accessor struct {
		name string
		dt   backend.DType
		host any // 12 elements
		get  func(backend.Array) (n int, set func(i int), isSet func(i int) bool)
	}
	accessors := []accessor{
		{"Float64s", backend.Float64, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, func(a backend.Array) (int, func(int), func(int) bool) {
			s := cpu.Float64s(a)
			if cap(s) != len(s) {
				t.Errorf("Float64s: cap %d > len %d", cap(s), len(s))
			}
			return len(s), func(i int) { s[i] = -1 }, func(i int) bool { return s[i] == float64(a.Offset+i) }
		}},
		{"Float32s", backend.Float32, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, func(a backend.Array) (int, func(int), func(int) bool) {
			s := cpu.Float32s(a)
			if cap(s) != len(s) {
				t.Errorf("Float32s: cap %d > len %d", cap(s), len(s))
			}
			return len(s), func(i int) { s[i] = -1 }, func(i int) bool { return s[i] == float32(a.Offset+i) }
		}},
		{"Int64s", backend.Int64, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, func(a backend.Array) (int, func(int), func(int) bool) {
			s := cpu.Int64s(a)
			if cap(s) != len(s) {
				t.Errorf("Int64s: cap %d > len %d", cap(s), len(s))
			}
			return len(s), func(i int) { s[i] = -1 }, func(i int) bool { return s[i] == int64(a.Offset+i) }
		}},
		{"Bools", backend.Bool, []bool{false, true, false, true, false, true, false, true, false, true, false, true}, func(a backend.Array) (int, func(int), func(int) bool) {
			s := cpu.Bools(a)
			if cap(s) != len(s) {
				t.Errorf("Bools: cap %d > len %d", cap(s), len(s))
			}
			return len(s), func(i int) { s[i] = !s[i] }, func(i int) bool { return s[i] == ((a.Offset+i)%2 == 1) }
		}},
	}
	layouts := []struct {
		shape, strides []int
		offset         int
	}{
		{[]int{12}, nil, 0},
		{[]int{2, 3}, nil, 3},
		{[]int{2, 3}, []int{3, 1}, 5},  // explicit contiguous strides
		{[]int{1, 4}, []int{99, 1}, 8}, // a unit dimension's stride is free
		{[]int{4, 1}, []int{1, 7}, 2},  // likewise
		{nil, nil, 11},                 // rank 0
		{[]int{0, 3}, nil, 12},         // empty, offset at the end
		{[]int{0}, []int{5}, 40},       // empty, offset past the end
		{[]int{3, 1}, []int{1, 0}, 9},  // a zero stride on a unit dimension
		{[]int{1, 1, 2}, []int{0, 0, 1}, 10},
	}
	for _, acc := range accessors {
		for _, l := range layouts {
			buf := be.FromHost(acc.host)
			a := backend.Array{Buf: buf, Shape: l.shape, Strides: l.strides, Offset: l.offset}
			what := fmt.Sprintf("%s(shape %v strides %v offset %d)", acc.name, l.shape, l.strides, l.offset)
			n, set, isSet := acc.get(a)
			if n != a.Size() {
				t.Errorf("%s: %d elements, want %d", what, n, a.Size())
				continue
			}
			for i := range n {
				if !isSet(i) {
					t.Errorf("%s: element %d is not buffer element %d", what, i, l.offset+i)
				}
			}
			if n == 0 {
				continue
			}
			// Writes go to the buffer.
			set(n - 1)
			want := be.ToHost(backend.Array{Buf: buf, Shape: []int{buf.Len()}})
			orig := be.ToHost(backend.Array{Buf: be.FromHost(acc.host), Shape: []int{buf.Len()}})
			diff := 0
			for i := range buf.Len() {
				if fmt.Sprint(slicesAt(want, i)) != fmt.Sprint(slicesAt(orig, i)) {
					diff++
					if i != l.offset+n-1 {
						t.Errorf("%s: write to element %d changed buffer element %d", what, n-1, i)
					}
				}
			}
			if diff != 1 {
				t.Errorf("%s: a write changed %d buffer elements, want 1", what, diff)
			}
		}
	}

	// Wrong dtype, wrong backend, no buffer.
	bufs := map[backend.DType]backend.Buffer{}
	for _, acc := range accessors {
		bufs[acc.dt] = be.FromHost(acc.host)
	}
	call := map[string]func(backend.Array){
		"Float64s": func(a backend.Array) { cpu.Float64s(a) },
		"Float32s": func(a backend.Array) { cpu.Float32s(a) },
		"Int64s":   func(a backend.Array) { cpu.Int64s(a) },
		"Bools":    func(a backend.Array) { cpu.Bools(a) },
	}
	for _, acc := range accessors {
		f := call[acc.name]
		for dt, buf := range bufs {
			if dt == acc.dt {
				continue
			}
			usrErr(t, acc.name+" of "+dt.String(), func() { f(backend.Array{Buf: buf, Shape: []int{3}}) }, "cpu."+acc.name, dt.String(), "want "+acc.dt.String())
		}
		usrErr(t, acc.name+" of a foreign buffer", func() { f(backend.Array{Buf: usrForeign{}, Shape: []int{3}}) }, "cpu."+acc.name)
		usrErr(t, acc.name+" of no buffer", func() { f(backend.Array{Shape: []int{3}}) }, "cpu."+acc.name)
		// Non-contiguous layouts: transposed, strided, broadcast.
		buf := bufs[acc.dt]
		for _, a := range []backend.Array{
			{Buf: buf, Shape: []int{3, 2}, Strides: []int{1, 3}},
			{Buf: buf, Shape: []int{4}, Strides: []int{2}, Offset: 1},
			{Buf: buf, Shape: []int{5}, Strides: []int{0}, Offset: 2},
			{Buf: buf, Shape: []int{2, 3}, Strides: []int{0, 1}},
		} {
			usrErr(t, fmt.Sprintf("%s of shape %v strides %v", acc.name, a.Shape, a.Strides), func() { f(a) }, "cpu."+acc.name, "not contiguous")
		}
	}
}

// slicesAt returns element i of a host slice.
func slicesAt(s any, i int) any {
	switch s := s.(type) {
	case []float64:
		return s[i]
	case []float32:
		return s[i]
	case []int64:
		return s[i]
	case []bool:
		return s[i]
	}
	panic("slicesAt")
}

// TestUserParallelFor checks that ParallelFor covers [0, n) exactly once
// with contiguous chunks at several thread counts, sizes and costs, on
// one goroutine with one thread.
func TestUserParallelFor(t *testing.T) {
	defer cpu.SetThreads(0)
	for _, th := range []int{1, 2, 3, 8} {
		cpu.SetThreads(th)
		for _, n := range []int{0, 1, 7, 1000, 1 << 15, 1<<15 + 1, 300007} {
			for _, cost := range []int{0, 1, 10, 1000} {
				what := fmt.Sprintf("threads=%d n=%d cost=%d", th, n, cost)
				counts := make([]atomic.Int32, min(n, 1<<16+1))
				var mu sync.Mutex
				var chunks [][2]int
				cpu.ParallelFor(n, cost, func(lo, hi int) {
					mu.Lock()
					chunks = append(chunks, [2]int{lo, hi})
					mu.Unlock()
					if lo < 0 || hi > n || lo > hi || n > 1<<16 {
						return // large n: the tiling check below suffices
					}
					for i := lo; i < hi; i++ {
						counts[i].Add(1)
					}
				})
				sort.Slice(chunks, func(i, j int) bool { return chunks[i][0] < chunks[j][0] })
				next := 0
				for _, c := range chunks {
					if c[0] != next || c[1] < c[0] || c[1] > n {
						t.Fatalf("%s: chunks %v do not tile [0, %d)", what, chunks, n)
					}
					next = c[1]
				}
				if next != n {
					t.Fatalf("%s: chunks %v end at %d", what, chunks, next)
				}
				for i := range counts {
					if c := counts[i].Load(); c != 1 && n <= 1<<16 {
						t.Fatalf("%s: element %d visited %d times", what, i, c)
					}
				}
				if len(chunks) > max(th, 1) {
					t.Errorf("%s: %d chunks for %d threads", what, len(chunks), th)
				}
				if th == 1 && len(chunks) != 1 {
					t.Errorf("%s: %d chunks with one thread", what, len(chunks))
				}
				// Work of a million cheap elements is far above the
				// size that pays for goroutines.
				if th > 1 && n*max(cost, 1) >= 1<<20 && len(chunks) < 2 {
					t.Errorf("%s: large work not split (%d chunk)", what, len(chunks))
				}
			}
		}
	}
}

// usrInputs64 returns test inputs for a float64 function: special values
// and random values in [lo, hi], both signs of magnitudes spread over
// many binades within it.
func usrInputs64(rng *rand.Rand, lo, hi float64, specials ...float64) []float64 {
	x := append([]float64{0, math.Copysign(0, -1), lo, hi}, specials...)
	for range 3000 {
		x = append(x, lo+(hi-lo)*rng.Float64())
		m := math.Exp2(-40 + 50*rng.Float64()) // 2^-40 .. 2^10
		if s := math.Copysign(m, rng.Float64()-0.5); s >= lo && s <= hi {
			x = append(x, s)
		}
	}
	return x
}

// usrULP32 returns the distance in float32 ulps between a and b (0 for
// +0 and -0).
func usrULP32(a, b float32) int64 {
	ord := func(x float32) int64 {
		u := math.Float32bits(x)
		if u&(1<<31) != 0 {
			return -int64(u &^ (1 << 31))
		}
		return int64(u)
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// usrLengths are slice lengths around the SIMD widths (8 float32, 4
// float64 per vector) and their tails.
var usrLengths = []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1000}

// usrRun applies f over x in slices of every length in usrLengths: into
// a fresh d whose spare capacity must stay untouched, and in place
// (d aliasing a); both must give the same bits. It returns f(x).
func usrRun[T float32 | float64](t *testing.T, name string, f func(d, a []T), x []T) []T {
	t.Helper()
	out := make([]T, len(x))
	const sentinel = 12345
	for lo := 0; lo < len(x); {
		for _, n := range usrLengths {
			n = min(n, len(x)-lo)
			a := slices.Clone(x[lo : lo+n])
			// a longer than d: only len(d) elements are computed.
			long := append(slices.Clone(a), 7, 7, 7)
			buf := make([]T, n+8)
			for i := range buf {
				buf[i] = sentinel
			}
			d := buf[:n]
			f(d, long)
			for i := n; i < len(buf); i++ {
				if buf[i] != sentinel {
					t.Fatalf("%s: length %d wrote element %d of d's spare capacity", name, n, i)
				}
			}
			if !usrSameBits(long[:n], a) {
				t.Fatalf("%s: length %d changed its operand", name, n)
			}
			inPlace := slices.Clone(a)
			f(inPlace, inPlace)
			if !usrSameBits(inPlace, d) {
				t.Fatalf("%s(%v): %v in place, %v out of place", name, a, inPlace, d)
			}
			copy(out[lo:], d)
			lo += n
			if lo == len(x) {
				break
			}
		}
	}
	return out
}

// usrSameBits reports whether a and b hold the same bits (NaNs equal
// whatever their payload).
func usrSameBits[T float32 | float64](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(float64(a[i])) != math.Float64bits(float64(b[i])) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

// TestUserMath32 checks Tanh32, Exp32 and Logistic32 within 2 ulps of
// the float64 function rounded to float32, NaN for NaN.
func TestUserMath32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inf := math.Inf(1)
	cases := []struct {
		name   string
		f      func(d, a []float32)
		ref    func(float64) float64
		lo, hi float64
	}{
		{"Tanh32", cpu.Tanh32, math.Tanh, -20, 20},
		{"Exp32", cpu.Exp32, math.Exp, -110, 90},
		{"Logistic32", cpu.Logistic32, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, -110, 110},
	}
	for _, c := range cases {
		x64 := usrInputs64(rng, c.lo, c.hi, inf, -inf, math.NaN(), 1e-45, -1e-45, 1e-30, 88.72, 88.73, -87.3, -103.9, -104.5, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32)
		x := make([]float32, len(x64))
		for i, v := range x64 {
			x[i] = float32(v)
		}
		got := usrRun(t, c.name, c.f, x)
		for i, v := range x {
			want := float32(c.ref(float64(v)))
			g := got[i]
			switch {
			case want != want:
				if g == g {
					t.Errorf("%s(%v) = %v, want NaN", c.name, v, g)
				}
			case g != g:
				t.Errorf("%s(%v) = NaN, want %v", c.name, v, want)
			case math.IsInf(float64(want), 0) || math.IsInf(float64(g), 0):
				if g != want {
					t.Errorf("%s(%v) = %v, want %v", c.name, v, g, want)
				}
			case usrULP32(g, want) > 2:
				t.Errorf("%s(%v) = %v, want %v (%d ulps)", c.name, v, g, want, usrULP32(g, want))
			}
		}
	}
	// The sign of zero is kept by tanh.
	d := make([]float32, 2)
	cpu.Tanh32(d, []float32{float32(math.Copysign(0, -1)), 0})
	if !math.Signbit(float64(d[0])) || math.Signbit(float64(d[1])) {
		t.Errorf("Tanh32(-0, +0) = %v, %v", d[0], d[1])
	}
}

// TestUserMath64 checks Tanh64 and Exp64 within 1e-15 relative error of
// math.Tanh and math.Exp, and their special values exactly.
func TestUserMath64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	inf := math.Inf(1)
	cases := []struct {
		name   string
		f      func(d, a []float64)
		ref    func(float64) float64
		lo, hi float64
		exact  map[float64]float64 // special inputs and their results
	}{
		{"Tanh64", cpu.Tanh64, math.Tanh, -25, 25, map[float64]float64{inf: 1, -inf: -1, 1000: 1, -1000: -1, 1e-300: 1e-300}},
		{"Exp64", cpu.Exp64, math.Exp, -700, 700, map[float64]float64{inf: inf, -inf: 0, 1000: inf, -1000: 0, 0: 1}},
	}
	for _, c := range cases {
		x := usrInputs64(rng, c.lo, c.hi, math.NaN(), 1e-300, -1e-300, 0.5, -0.5, 1e-8)
		for k := range c.exact {
			x = append(x, k)
		}
		got := usrRun(t, c.name, c.f, x)
		for i, v := range x {
			g := got[i]
			if w, ok := c.exact[v]; ok {
				if g != w {
					t.Errorf("%s(%v) = %v, want %v", c.name, v, g, w)
				}
				continue
			}
			want := c.ref(v)
			switch {
			case want != want:
				if g == g {
					t.Errorf("%s(%v) = %v, want NaN", c.name, v, g)
				}
			case math.Abs(g-want) > 1e-15*math.Abs(want):
				t.Errorf("%s(%v) = %v, want %v (relative error %.3g)", c.name, v, g, want, math.Abs(g-want)/math.Abs(want))
			}
		}
	}
	d := make([]float64, 2)
	cpu.Tanh64(d, []float64{math.Copysign(0, -1), 0})
	if !math.Signbit(d[0]) || math.Signbit(d[1]) {
		t.Errorf("Tanh64(-0, +0) = %v, %v", d[0], d[1])
	}
}

// usrScaleKernel is the kernel of a test primitive: out = 3·in (float32
// and float64), through Float64s and Float32s, which require contiguous
// operands.
func usrScaleKernel(_ any, in, out []backend.Array) {
	switch in[0].Buf.DType() {
	case backend.Float32:
		d, a := cpu.Float32s(out[0]), cpu.Float32s(in[0])
		for i := range d {
			d[i] = 3 * a[i]
		}
	default:
		d, a := cpu.Float64s(out[0]), cpu.Float64s(in[0])
		for i := range d {
			d[i] = 3 * a[i]
		}
	}
}

func usrSameShape(_ any, in []interp.Aval) []interp.Aval { return []interp.Aval{in[0]} }

func TestRegisterKernel(t *testing.T) {
	be := cpu.New()
	p := interp.NewPrim("cputest.user.scale", interp.Pure, usrSameShape)
	if be.Has(p.Op) {
		t.Fatal("Has reports a kernel before registration")
	}
	var _ backend.KernelRegistry = be
	be.RegisterKernel(p.Op, usrScaleKernel)
	if !be.Has(p.Op) {
		t.Fatal("Has reports no kernel after registration")
	}
	if !be.Has(prims.Add.Op) || !be.Has(prims.DotGeneral.Op) {
		t.Fatal("built-in kernels lost")
	}

	// Exec with an operand at an offset, transposed, or broadcast: the
	// kernel sees contiguous operands.
	data := []float64{9, 9, 1, 2, 3, 4, 5, 6}
	cases := []struct {
		in   backend.Array
		want []float64
	}{
		{backend.Array{Buf: be.FromHost(data), Shape: []int{2, 3}, Offset: 2}, []float64{3, 6, 9, 12, 15, 18}},
		{backend.Array{Buf: be.FromHost(data), Shape: []int{3, 2}, Strides: []int{1, 3}, Offset: 2}, []float64{3, 12, 6, 15, 9, 18}},
		{backend.Array{Buf: be.FromHost(data), Shape: []int{2, 3}, Strides: []int{0, 0}, Offset: 4}, []float64{9, 9, 9, 9, 9, 9}},
	}
	for _, c := range cases {
		out := backend.Array{Buf: be.Alloc(backend.Float64, 6), Shape: c.in.Shape}
		in := []backend.Array{c.in}
		be.Exec(p.Op, nil, in, []backend.Array{out})
		if got := be.ToHost(out).([]float64); !slices.Equal(got, c.want) {
			t.Errorf("Exec on shape %v strides %v: %v, want %v", c.in.Shape, c.in.Strides, got, c.want)
		}
	}
	// Through Bind (eager evaluation), float32.
	x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float32{1, -2, 0.5}), Shape: []int{3}})
	if got := interp.Bind1(p, nil, x).Float32s(); !slices.Equal(got, []float32{3, -6, 1.5}) {
		t.Errorf("Bind: %v", got)
	}

	// A second kernel for the same primitive, or for a built-in one.
	e := usrErr(t, "second registration", func() { be.RegisterKernel(p.Op, usrScaleKernel) }, "already has a kernel")
	if e != nil && e.Prim != p.Name {
		t.Errorf("error names primitive %q, want %q", e.Prim, p.Name)
	}
	usrErr(t, "registration for add", func() { be.RegisterKernel(prims.Add.Op, usrScaleKernel) }, "add", "already has a kernel")
	y := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{1, 2}), Shape: []int{2}})
	if got := interp.Bind1(prims.Add, nil, y, y).Float64s(); !slices.Equal(got, []float64{2, 4}) {
		t.Errorf("add after a refused registration: %v", got)
	}
	if got := interp.Bind1(p, nil, y).Float64s(); !slices.Equal(got, []float64{3, 6}) {
		t.Errorf("the first kernel after a refused registration: %v", got)
	}
}

// TestRegisterKernelConcurrent registers kernels for distinct new
// primitives from several goroutines while others run built-in kernels
// and query Has; run with -race. No registration may be lost.
func TestRegisterKernelConcurrent(t *testing.T) {
	be := cpu.New()
	const writers, perWriter, readers = 6, 5, 3
	var ps [writers][perWriter]*interp.Prim
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, writers*perWriter*perWriter+readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{1, 2, 3}), Shape: []int{3}})
			for i := 0; !done.Load() || i < 50; i++ {
				if !be.Has(prims.Add.Op) || !be.Has(prims.Tanh.Op) {
					errs <- fmt.Errorf("reader %d: built-in kernel missing", r)
					return
				}
				got := interp.Bind1(prims.Mul, nil, interp.Bind1(prims.Add, nil, x, x), x).Float64s()
				if !slices.Equal(got, []float64{2, 8, 18}) {
					errs <- fmt.Errorf("reader %d: (x+x)·x = %v", r, got)
					return
				}
			}
		}()
	}
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			for k := range perWriter {
				p := interp.NewPrim(fmt.Sprintf("cputest.user.concurrent.%d.%d", w, k), interp.Pure, usrSameShape)
				v := float64(100*w + k)
				be.RegisterKernel(p.Op, func(_ any, _, out []backend.Array) {
					d := cpu.Float64s(out[0])
					for i := range d {
						d[i] = v
					}
				})
				if !be.Has(p.Op) {
					errs <- fmt.Errorf("writer %d: kernel %d missing right after registration", w, k)
				}
				ps[w][k] = p
				// Earlier registrations of this goroutine are still there.
				for j := range k {
					if !be.Has(ps[w][j].Op) {
						errs <- fmt.Errorf("writer %d: kernel %d lost", w, j)
					}
				}
			}
		}()
	}
	writersWG.Wait()
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{0, 0}), Shape: []int{2}})
	for w := range writers {
		for k := range perWriter {
			p := ps[w][k]
			if !be.Has(p.Op) {
				t.Errorf("%s: kernel lost", p.Name)
				continue
			}
			want := float64(100*w + k)
			if got := interp.Bind1(p, nil, x).Float64s(); got[0] != want || got[1] != want {
				t.Errorf("%s: %v, want %v", p.Name, got, want)
			}
		}
	}
	var e *interp.Error
	err := interp.Catch(func() { be.RegisterKernel(ps[0][0].Op, usrScaleKernel) })
	if !errors.As(err, &e) {
		t.Errorf("re-registration after the concurrent ones: %v", err)
	}
}
