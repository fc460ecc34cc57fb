package cpu

import (
	"unsafe"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Storage dtypes (i32, u8, f16, bf16) have buffers but no kernels of
// their own. Exec converts at the kernel edge: every storage operand is
// widened exactly to its compute dtype (i32, u8 → i64; f16, bf16 → f32),
// the compute kernel runs with results allocated in the compute dtype,
// and each storage result is narrowed back (i64 → i32/u8 by
// two's-complement truncation, f32 → f16/bf16 rounding to nearest even,
// NaN kept, overflow to ±Inf). Parameters that name a dtype (iota's) are
// mapped to the compute dtype. convert_element_type involving a storage
// dtype converts directly between the two dtypes, with one rounding.
//
// f16 and bf16 buffers hold the bit patterns, as backend.F16 and
// backend.BF16 values; their host slices are []backend.F16 and
// []backend.BF16.

// The storage dtypes' buffers (see buffer.go).
type (
	i32Buf  = hostBuf[int32]
	u8Buf   = hostBuf[uint8]
	f16Buf  = hostBuf[backend.F16]
	bf16Buf = hostBuf[backend.BF16]
)

func allocStorage(dt backend.DType, n int) backend.Buffer {
	switch dt {
	case backend.Int32:
		return newBuf[int32](n)
	case backend.Uint8:
		return newBuf[uint8](n)
	case backend.Float16:
		return newBuf[backend.F16](n)
	case backend.BFloat16:
		return newBuf[backend.BF16](n)
	}
	return nil
}

// storageFromHost returns a buffer of a storage dtype's host slice,
// copied when cp is set, else adopted; nil for another type.
func storageFromHost(data any, cp bool) backend.Buffer {
	dt := backend.HostDType(data)
	if !dt.IsStorage() {
		return nil
	}
	n := 0
	switch d := data.(type) {
	case []int32:
		n = len(d)
	case []uint8:
		n = len(d)
	case []backend.F16:
		n = len(d)
	case []backend.BF16:
		n = len(d)
	}
	checkAlloc(dt, n)
	switch d := data.(type) {
	case []int32:
		if cp {
			return copyBuf(d)
		}
		return &i32Buf{s: d}
	case []uint8:
		if cp {
			return copyBuf(d)
		}
		return &u8Buf{s: d}
	case []backend.F16:
		if cp {
			return copyBuf(d)
		}
		return &f16Buf{s: d}
	case []backend.BF16:
		if cp {
			return copyBuf(d)
		}
		return &bf16Buf{s: d}
	}
	return nil
}

func storageToHost(buf backend.Buffer, lo, hi int) any {
	switch b := buf.(type) {
	case *i32Buf:
		return append([]int32{}, b.s[lo:hi]...)
	case *u8Buf:
		return append([]uint8{}, b.s[lo:hi]...)
	case *f16Buf:
		return append([]backend.F16{}, b.s[lo:hi]...)
	case *bf16Buf:
		return append([]backend.BF16{}, b.s[lo:hi]...)
	}
	return nil
}

func zeroStorage(a backend.Array) {
	switch buf := a.Buf.(type) {
	case *i32Buf:
		clear(contig(buf.s, a))
	case *u8Buf:
		clear(contig(buf.s, a))
	case *f16Buf:
		clear(contig(buf.s, a))
	case *bf16Buf:
		clear(contig(buf.s, a))
	}
}

// copyStorage is copyStrided for storage buffers; false for another type.
func copyStorage(dst, src backend.Array) bool {
	switch d := dst.Buf.(type) {
	case *i32Buf:
		stridedCopy(d.s, src.Buf.(*i32Buf).s, dst, src)
	case *u8Buf:
		stridedCopy(d.s, src.Buf.(*u8Buf).s, dst, src)
	case *f16Buf:
		stridedCopy(d.s, src.Buf.(*f16Buf).s, dst, src)
	case *bf16Buf:
		stridedCopy(d.s, src.Buf.(*bf16Buf).s, dst, src)
	default:
		return false
	}
	return true
}

// hasStorage reports whether an operand or result has a storage dtype.
func hasStorage(in, out []backend.Array) bool {
	for i := range in {
		if !computeBuf(in[i].Buf) {
			return true
		}
	}
	for i := range out {
		if !computeBuf(out[i].Buf) {
			return true
		}
	}
	return false
}

// computeBuf reports whether b holds a compute dtype (bool, i64, f32,
// f64), by its type alone: on every kernel call, cheaper than asking it
// its dtype.
func computeBuf(b backend.Buffer) bool {
	switch b.(type) {
	case *f64Buf, *f32Buf, *i64Buf, *boolBuf:
		return true
	}
	return !b.DType().IsStorage()
}

// hasStorageLayout is hasStorage for layouts.
func hasStorageLayout(in, out []backend.Layout) bool {
	for i := range in {
		if in[i].DType.IsStorage() {
			return true
		}
	}
	for i := range out {
		if out[i].DType.IsStorage() {
			return true
		}
	}
	return false
}

// execStorage runs e on operands or results of storage dtypes by
// converting at the kernel edge (see the top of this file).
func (b *Backend) execStorage(e *entry, op backend.Op, params any, in, out []backend.Array) {
	if op.ID == prims.ConvertElementType.ID {
		convertArray(b, out[0], in[0])
		return
	}
	cin := make([]backend.Array, len(in))
	for i, a := range in {
		cin[i] = a
		if dt := a.Buf.DType(); dt.IsStorage() {
			c := backend.Array{Buf: b.Alloc(dt.Compute(), a.Size()), Shape: a.Shape}
			convertArray(b, c, a)
			cin[i] = c
		}
	}
	cout := make([]backend.Array, len(out))
	for i, a := range out {
		cout[i] = a
		if dt := a.Buf.DType(); dt.IsStorage() {
			cout[i] = backend.Array{Buf: b.Alloc(dt.Compute(), a.Size()), Shape: a.Shape}
		}
	}
	if p, ok := params.(prims.IotaParams); ok {
		p.DType = p.DType.Compute()
		params = p
	}
	b.Exec(op, params, cin, cout)
	for i, a := range out {
		if a.Buf.DType().IsStorage() {
			convertArray(b, a, cout[i])
		}
	}
}

// convertChunk is the number of elements convertArray converts through
// one intermediate block.
const convertChunk = 1024

// convertArray writes src's elements converted to dst's dtype into dst
// (contiguous), as convert_element_type converts: exact widening, floats
// rounded to nearest even once, floats to integers truncated toward zero
// and saturated (NaN → 0), integers narrowed by wraparound, nonzero →
// true. src may be strided.
func convertArray(b *Backend, dst, src backend.Array) {
	n := dst.Size()
	if n == 0 {
		return
	}
	if !src.IsContiguous() {
		src = b.contiguous(src)
	}
	so, do := src.Offset, dst.Offset
	// Direct exact paths: widening to and narrowing from the compute
	// dtype (bit-level for NaNs), and same-dtype copies.
	switch s := src.Buf.(type) {
	case *f16Buf:
		if d, ok := dst.Buf.(*f32Buf); ok {
			parallelFor(n, costCheap, func(lo, hi int) {
				backend.F16sToFloat32s(d.s[do+lo:do+hi], s.s[so+lo:so+hi])
			})
			return
		}
	case *bf16Buf:
		if d, ok := dst.Buf.(*f32Buf); ok {
			parallelFor(n, costCheap, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					d.s[do+i] = s.s[so+i].Float32()
				}
			})
			return
		}
	case *f32Buf:
		switch d := dst.Buf.(type) {
		case *f16Buf:
			parallelFor(n, costCheap, func(lo, hi int) {
				backend.F16sFromFloat32s(d.s[do+lo:do+hi], s.s[so+lo:so+hi])
			})
			return
		case *bf16Buf:
			parallelFor(n, costCheap, func(lo, hi int) {
				backend.BF16sFromFloat32s(d.s[do+lo:do+hi], s.s[so+lo:so+hi])
			})
			return
		}
	}
	if src.Buf.DType() == dst.Buf.DType() {
		copyStrided(dst, src)
		return
	}
	if convertByTable(src, dst, n) {
		return
	}
	parallelFor(n, costCheap, func(lo, hi int) {
		var fb [convertChunk]float64
		var ib [convertChunk]int64
		for c := lo; c < hi; c += convertChunk {
			m := min(convertChunk, hi-c)
			if src.Buf.DType().IsFloat() {
				f := fb[:m]
				readFloats(f, src.Buf, so+c)
				writeFloats(dst.Buf, do+c, f)
			} else {
				iv := ib[:m]
				readInts(iv, src.Buf, so+c)
				writeInts(dst.Buf, do+c, iv)
			}
		}
	})
}

// convertByTable converts the n elements of a contiguous bool or u8 src
// into dst by a table of the at most 256 values it can hold, each
// converted once by the general path: one load per element, no branch
// on the value (a random mask mispredicts half its branches). It reports
// false for other sources, and for small conversions, where building
// the table would cost more.
func convertByTable(src, dst backend.Array, n int) bool {
	var bytes []uint8
	switch s := src.Buf.(type) {
	case *u8Buf:
		bytes = s.s[src.Offset : src.Offset+n]
	case *boolBuf:
		if n > 0 {
			bytes = unsafe.Slice((*uint8)(unsafe.Pointer(&s.s[src.Offset])), n) // a Go bool is one byte, 0 or 1
		}
	default:
		return false
	}
	if n < 4096 {
		return false
	}
	var vals [256]int64
	for i := range vals {
		vals[i] = int64(i)
	}
	do := dst.Offset
	switch d := dst.Buf.(type) {
	case *f64Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *f32Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *f16Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *bf16Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *i64Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *i32Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *u8Buf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	case *boolBuf:
		tableConvert(d.s[do:do+n], bytes, vals[:])
	default:
		return false
	}
	return true
}

// tableConvert sets d[i] to the conversion of the byte s[i], from a
// table of the 256 byte values converted by writeInts.
func tableConvert[T elem](d []T, s []uint8, vals []int64) {
	tab := newBuf[T](256)
	writeInts(tab, 0, vals)
	parallelFor(len(d), costCheap, func(lo, hi int) {
		dd, ss := d[lo:hi], s[lo:hi]
		for i, b := range ss {
			dd[i] = tab.s[b]
		}
	})
}

// readFloats reads len(f) elements of a float buffer from offset off,
// exactly.
func readFloats(f []float64, buf backend.Buffer, off int) {
	switch s := buf.(type) {
	case *f64Buf:
		copy(f, s.s[off:])
	case *f32Buf:
		for i := range f {
			f[i] = float64(s.s[off+i])
		}
	case *f16Buf:
		backend.F16sToFloat64s(f, s.s[off:off+len(f)])
	case *bf16Buf:
		for i := range f {
			f[i] = float64(s.s[off+i].Float32())
		}
	default:
		panic("cpu: convert from a foreign buffer")
	}
}

// readInts reads len(v) elements of an integer or bool buffer (as 0/1)
// from offset off.
func readInts(v []int64, buf backend.Buffer, off int) {
	switch s := buf.(type) {
	case *i64Buf:
		copy(v, s.s[off:])
	case *i32Buf:
		for i := range v {
			v[i] = int64(s.s[off+i])
		}
	case *u8Buf:
		for i := range v {
			v[i] = int64(s.s[off+i])
		}
	case *boolBuf:
		for i := range v {
			var x int64
			if s.s[off+i] {
				x = 1
			}
			v[i] = x
		}
	default:
		panic("cpu: convert from a foreign buffer")
	}
}

// writeFloats converts f into buf from offset off.
func writeFloats(buf backend.Buffer, off int, f []float64) {
	switch d := buf.(type) {
	case *f64Buf:
		copy(d.s[off:], f)
	case *f32Buf:
		for i, x := range f {
			d.s[off+i] = float32(x)
		}
	case *f16Buf:
		backend.F16sFromFloat64s(d.s[off:off+len(f)], f)
	case *bf16Buf:
		backend.BF16sFromFloat64s(d.s[off:off+len(f)], f)
	case *i64Buf:
		for i, x := range f {
			d.s[off+i] = backend.FloatToInt64(x)
		}
	case *i32Buf:
		for i, x := range f {
			d.s[off+i] = backend.FloatToInt32(x)
		}
	case *u8Buf:
		for i, x := range f {
			d.s[off+i] = backend.FloatToUint8(x)
		}
	case *boolBuf:
		for i, x := range f {
			d.s[off+i] = x != 0
		}
	default:
		panic("cpu: convert to a foreign buffer")
	}
}

// writeInts converts v into buf from offset off.
func writeInts(buf backend.Buffer, off int, v []int64) {
	switch d := buf.(type) {
	case *i64Buf:
		copy(d.s[off:], v)
	case *i32Buf:
		for i, x := range v {
			d.s[off+i] = int32(x)
		}
	case *u8Buf:
		for i, x := range v {
			d.s[off+i] = uint8(x)
		}
	case *f64Buf:
		for i, x := range v {
			d.s[off+i] = float64(x)
		}
	case *f32Buf:
		for i, x := range v {
			d.s[off+i] = float32(x)
		}
	case *f16Buf:
		backend.F16sFromInt64s(d.s[off:off+len(v)], v)
	case *bf16Buf:
		backend.BF16sFromInt64s(d.s[off:off+len(v)], v)
	case *boolBuf:
		for i, x := range v {
			d.s[off+i] = x != 0
		}
	default:
		panic("cpu: convert to a foreign buffer")
	}
}
