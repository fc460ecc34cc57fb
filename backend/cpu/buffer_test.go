package cpu

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/peel-ml/peel/backend"
)

// TestNewBuf: a buffer from Alloc has the length, capacity and dtype
// asked for, comes zeroed, and holds what is written to it, in full,
// beside its neighbours and across collections: a small buffer's
// elements share one object with its header, which the buffer (a
// pointer to the header) keeps alive.
func TestNewBuf(t *testing.T) {
	checkNewBuf(t, backend.Bool, func(i int) bool { return i%3 != 1 })
	checkNewBuf(t, backend.Int64, func(i int) int64 { return int64(i) + 1 })
	checkNewBuf(t, backend.Float32, func(i int) float32 { return float32(i) + 0.5 })
	checkNewBuf(t, backend.Float64, func(i int) float64 { return float64(i) + 0.25 })
	checkNewBuf(t, backend.Int32, func(i int) int32 { return -int32(i) - 1 })
	checkNewBuf(t, backend.Uint8, func(i int) uint8 { return uint8(i) + 1 })
	checkNewBuf(t, backend.Float16, func(i int) backend.F16 { return backend.F16(i + 1) })
	checkNewBuf(t, backend.BFloat16, func(i int) backend.BF16 { return backend.BF16(i + 2) })
}

func checkNewBuf[T elem](t *testing.T, dt backend.DType, val func(int) T) {
	t.Helper()
	var sizes []int
	for n := range 2*smallMax + 2 {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 100, 1000)
	be := New()
	bufs := make([]backend.Buffer, len(sizes))
	for i, n := range sizes {
		b := be.Alloc(dt, n)
		h, ok := b.(*hostBuf[T])
		if !ok || b.Len() != n || cap(h.s) != n || b.DType() != dt {
			t.Fatalf("Alloc(%v, %d) = %T of length %d, capacity %d, dtype %v", dt, n, b, b.Len(), bufCap(b), b.DType())
		}
		for j, v := range h.s {
			if v != *new(T) {
				t.Fatalf("Alloc(%v, %d): element %d is %v, not zero", dt, n, j, v)
			}
		}
		for j := range h.s {
			h.s[j] = val(i + j)
		}
		bufs[i] = b
	}
	for range 2 {
		runtime.GC()
		junk := make([]backend.Buffer, 1000)
		for i := range junk {
			junk[i] = be.Alloc(dt, i%smallMax)
		}
		runtime.KeepAlive(junk)
	}
	for i, b := range bufs {
		for j, v := range b.(*hostBuf[T]).s {
			if want := val(i + j); v != want {
				t.Fatalf("Alloc(%v, %d): element %d is %v after collections, want %v", dt, sizes[i], j, v, want)
			}
		}
	}
}

// TestCopyBuf: FromHost copies, whatever the size, and AdoptHost takes
// the slice itself; both keep the length.
func TestCopyBuf(t *testing.T) {
	be := New()
	for _, n := range []int{0, 1, 3, smallMax, smallMax + 1, 1000} {
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(i) + 0.5
		}
		c := be.FromHost(d).(*f64Buf)
		a := be.AdoptHost(d).(*f64Buf)
		if len(c.s) != n || len(a.s) != n {
			t.Fatalf("n %d: FromHost gives %d elements, AdoptHost %d", n, len(c.s), len(a.s))
		}
		for i := range d {
			if c.s[i] != d[i] {
				t.Fatalf("n %d: FromHost's element %d is %v, want %v", n, i, c.s[i], d[i])
			}
		}
		if n > 0 && (&c.s[0] == &d[0] || &a.s[0] != &d[0]) {
			t.Fatalf("n %d: FromHost shares the slice (%v) or AdoptHost does not (%v)", n, &c.s[0] == &d[0], &a.s[0] == &d[0])
		}
	}
}

var sinkBuf backend.Buffer

// BenchmarkNewBuf times a small buffer allocated as one object (packed)
// and as a header and elements apart, at sizes where a class fits best
// (1, 16, 32 elements) and worst (17: rounded up to 24).
func BenchmarkNewBuf(b *testing.B) {
	benchNewBuf[float32](b, "f32")
	benchNewBuf[float64](b, "f64")
}

func benchNewBuf[T elem](b *testing.B, name string) {
	for _, n := range []int{1, 16, 17, 32} {
		if !small[T](n) {
			continue
		}
		b.Run(fmt.Sprintf("%s/n=%d/packed", name, n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkBuf = newBuf[T](n)
			}
		})
		b.Run(fmt.Sprintf("%s/n=%d/apart", name, n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkBuf = &hostBuf[T]{s: make([]T, n)}
			}
		})
	}
}

// TestSharesMemory: buffers over one host slice share memory where their
// elements overlap, distinct buffers do not, an empty buffer shares
// nothing, and a foreign buffer may share anything.
func TestSharesMemory(t *testing.T) {
	be := New()
	d := make([]float32, 100)
	whole := be.AdoptHost(d)
	for _, c := range []struct {
		name string
		x, y backend.Buffer
		want bool
	}{
		{"a buffer and itself", whole, whole, true},
		{"the slice adopted twice", whole, be.AdoptHost(d), true},
		{"a tail", whole, be.AdoptHost(d[99:]), true},
		{"disjoint parts", be.AdoptHost(d[:50]), be.AdoptHost(d[50:]), false},
		{"an empty part", whole, be.AdoptHost(d[10:10]), false},
		{"two small buffers", be.Alloc(backend.Float32, 4), be.Alloc(backend.Float32, 4), false},
		{"two large buffers", be.Alloc(backend.Float64, 1000), be.Alloc(backend.Float64, 1000), false},
		{"the elements as bytes", whole, be.AdoptHost(backend.HostBytes(d)), true},
		{"a foreign buffer", whole, usrForeignBuf{}, true},
	} {
		if got := be.SharesMemory(c.x, c.y); got != c.want {
			t.Errorf("%s: SharesMemory = %v, want %v", c.name, got, c.want)
		}
		if got := be.SharesMemory(c.y, c.x); got != c.want {
			t.Errorf("%s, swapped: SharesMemory = %v, want %v", c.name, got, c.want)
		}
	}
}

// usrForeignBuf is a buffer of another backend.
type usrForeignBuf struct{}

func (usrForeignBuf) Len() int             { return 1 }
func (usrForeignBuf) DType() backend.DType { return backend.Float32 }
