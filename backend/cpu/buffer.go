package cpu

import (
	"unsafe"

	"github.com/peel-ml/peel/backend"
)

// Buffers are pointers to slice headers: a *hostBuf[T], one type per
// dtype (boolBuf, i64Buf, f32Buf, f64Buf, and the storage dtypes'
// i32Buf, u8Buf, f16Buf, bf16Buf), so kernels select the element type
// with one type assertion, outside their loops, and take the elements
// as its s. Being a pointer, a buffer is the data word of the
// backend.Buffer interface that holds it: storing it there allocates
// nothing, where a slice would be boxed (a heap copy of its header). A
// small buffer's header and elements are one allocation (newBuf), so an
// eager op on a small tensor allocates its buffer once.

// elem is the element type of a buffer: a compute dtype's or a storage
// dtype's.
type elem interface {
	bool | int64 | float32 | float64 | int32 | uint8 | backend.F16 | backend.BF16
}

// hostBuf is a buffer of elements of type T in Go memory. The header
// belongs to the buffer: the caching allocator reslices a buffer it
// recycles in place (its elements, though, may be shared by views).
type hostBuf[T elem] struct{ s []T }

// Len returns the number of elements.
func (b *hostBuf[T]) Len() int { return len(b.s) }

// reslice sets the buffer's length to n, within its capacity (the
// caching allocator's handing out and taking back).
func (b *hostBuf[T]) reslice(n int) { b.s = b.s[:n] }

// DType returns the dtype of the elements.
func (b *hostBuf[T]) DType() backend.DType {
	var z T
	switch any(z).(type) {
	case bool:
		return backend.Bool
	case int64:
		return backend.Int64
	case float32:
		return backend.Float32
	case float64:
		return backend.Float64
	case int32:
		return backend.Int32
	case uint8:
		return backend.Uint8
	case backend.F16:
		return backend.Float16
	case backend.BF16:
		return backend.BFloat16
	}
	panic("unreachable")
}

// A small buffer, of at most smallMax elements and smallBytes bytes, is
// one allocation holding its header and its elements (newBuf). Its
// elements are rounded up to a class of 1, 2, 3, 4, 6, 8, 12, 16, 24 or
// 32, each at most 1.5 times the one before. With the 24 bytes of the
// header, and Go's allocator rounding the whole up to one of its size
// classes, a small buffer of 4- or 8-byte elements takes at most 24
// bytes more than its header and elements allocated apart (11 on
// average over the sizes, 8 at the powers of two); fewer classes would
// waste more, and the bytes cost about as much as the allocation saved
// (BenchmarkNewBuf times both ways where a class fits best and worst).
// Above the bound one allocation saved is less beside the cost of
// zeroing and collecting the elements.
const (
	smallMax   = 32
	smallBytes = 128
)

// newBuf returns a zeroed buffer of n elements. A small buffer is an
// object whose first field is the header and whose second an array of
// the class's elements (see smallMax); the buffer, a pointer to the
// header, keeps the whole object alive. A larger buffer's elements are
// an allocation of their own, advised as huge-page candidates when they
// are large (huge).
func newBuf[T elem](n int) *hostBuf[T] {
	if !small[T](n) {
		return &hostBuf[T]{s: huge(make([]T, n))}
	}
	switch {
	case n <= 1:
		return packed(n, func(a *[1]T) []T { return a[:] })
	case n <= 2:
		return packed(n, func(a *[2]T) []T { return a[:] })
	case n <= 3:
		return packed(n, func(a *[3]T) []T { return a[:] })
	case n <= 4:
		return packed(n, func(a *[4]T) []T { return a[:] })
	case n <= 6:
		return packed(n, func(a *[6]T) []T { return a[:] })
	case n <= 8:
		return packed(n, func(a *[8]T) []T { return a[:] })
	case n <= 12:
		return packed(n, func(a *[12]T) []T { return a[:] })
	case n <= 16:
		return packed(n, func(a *[16]T) []T { return a[:] })
	case n <= 24:
		return packed(n, func(a *[24]T) []T { return a[:] })
	default:
		return packed(n, func(a *[smallMax]T) []T { return a[:] })
	}
}

// small reports whether a buffer of n elements of type T is small: one
// allocation with its header (newBuf).
func small[T elem](n int) bool {
	var z T
	return n <= smallMax && n*int(unsafe.Sizeof(z)) <= smallBytes
}

// packed returns a buffer of n elements whose header and elements, an
// array A that elems slices, are one allocation.
func packed[T elem, A any](n int, elems func(*A) []T) *hostBuf[T] {
	p := new(struct {
		h hostBuf[T]
		a A
	})
	p.h.s = elems(&p.a)[:n:n]
	return &p.h
}

// copyBuf returns a buffer holding a copy of d: for a small d one
// allocation, as newBuf's; above, the copy is not zeroed first.
func copyBuf[T elem](d []T) *hostBuf[T] {
	if !small[T](len(d)) {
		return &hostBuf[T]{s: append([]T(nil), d...)}
	}
	b := newBuf[T](len(d))
	copy(b.s, d)
	return b
}

// huge advises a large buffer's pages as huge-page candidates
// (adviseHuge) before its first write.
func huge[T elem](b []T) []T {
	var z T
	if n := len(b) * int(unsafe.Sizeof(z)); n >= hugePageMin {
		adviseHuge(unsafe.Pointer(unsafe.SliceData(b)), n)
	}
	return b
}
