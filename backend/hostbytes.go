package backend

import (
	"fmt"
	"unsafe"
)

// HostBytes returns the memory of a host slice (one HostSlice returns)
// as bytes, without a copy: in the machine's byte order, a bool as 0 or
// 1. Writing the bytes writes the slice. It panics on any other value.
func HostBytes(s any) []byte {
	switch v := s.(type) {
	case []float64:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 8*len(v))
	case []float32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
	case []int64:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 8*len(v))
	case []int32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
	case []uint8:
		return v
	case []bool:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
	case []F16:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 2*len(v))
	case []BF16:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 2*len(v))
	}
	panic(fmt.Sprintf("backend.HostBytes: %T is not a host slice", s))
}
