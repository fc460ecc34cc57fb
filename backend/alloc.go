package backend

import (
	"math/big"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
)

// The allocation limit. Backends check every buffer they allocate
// (Alloc, FromHost) with CheckAlloc, and the array API checks the
// buffers it fills on the host with AllocSize, so a mistaken size fails
// with an error instead of exhausting memory.

// maxAlloc is the limit in bytes; 0 until first use, when it is set to
// the default.
var (
	maxAlloc    atomic.Int64
	defaultOnce sync.Once
	defaultMax  int64
)

// fallbackMaxAlloc is the default limit where the physical memory is not
// known: 64 GiB.
const fallbackMaxAlloc = 64 << 30

// DefaultMaxAllocBytes returns the default allocation limit: the
// machine's physical memory (on Linux the total RAM from sysinfo, lowered
// to the cgroup's memory.max when the process runs under a cgroup v2
// memory limit; on macOS hw.memsize), or 64 GiB where it cannot be
// found. An allocation above it could never be satisfied without
// swapping the whole machine or being killed.
func DefaultMaxAllocBytes() int64 {
	defaultOnce.Do(func() {
		defaultMax = fallbackMaxAlloc
		if n := physicalMemory(); n > 0 {
			defaultMax = n
		}
	})
	return defaultMax
}

// MaxAllocBytes returns the allocation limit: the largest buffer, in
// bytes, a backend allocates (DefaultMaxAllocBytes unless
// SetMaxAllocBytes changed it).
func MaxAllocBytes() int64 {
	if n := maxAlloc.Load(); n > 0 {
		return n
	}
	maxAlloc.CompareAndSwap(0, DefaultMaxAllocBytes())
	return maxAlloc.Load()
}

// SetMaxAllocBytes sets the allocation limit to n bytes and returns the
// previous limit. A negative n leaves the limit unchanged, so
// SetMaxAllocBytes(-1) only reports it; n = 0 restores
// DefaultMaxAllocBytes. It is safe to call concurrently with
// allocations, which see either limit.
func SetMaxAllocBytes(n int64) int64 {
	old := MaxAllocBytes()
	switch {
	case n == 0:
		maxAlloc.Store(DefaultMaxAllocBytes())
	case n > 0:
		maxAlloc.Store(n)
	}
	return old
}

// AllocError reports a buffer refused because its size in bytes exceeds
// the allocation limit.
type AllocError struct {
	DType DType
	// Shape is the buffer's shape, or nil when only its number of
	// elements is known (a backend's Alloc).
	Shape []int
	// N is the number of elements.
	N int
	// Limit is the allocation limit in force, in bytes.
	Limit int64
}

// Bytes returns the buffer's size in bytes as a decimal number (it may
// exceed every integer type).
func (e *AllocError) Bytes() string {
	b := new(big.Int).SetInt64(int64(e.N))
	return b.Mul(b, big.NewInt(int64(e.DType.Size()))).String()
}

// Error names the buffer, its size in bytes and the limit, such as "too
// large: f64[65536,65536] needs 34359738368 bytes, over the allocation
// limit of 1073741824 bytes (see peel.SetMaxAllocBytes)".
func (e *AllocError) Error() string {
	what := "a buffer of " + strconv.Itoa(e.N) + " " + e.DType.String() + " elements"
	if e.Shape != nil {
		what = formatType(e.DType, e.Shape)
	}
	return "too large: " + what + " needs " + e.Bytes() + " bytes, over the allocation limit of " +
		strconv.FormatInt(e.Limit, 10) + " bytes (see peel.SetMaxAllocBytes)"
}

// CheckAlloc returns an *AllocError if a buffer of n ≥ 0 elements of
// dtype dt exceeds the allocation limit, and nil otherwise. Backends call
// it before allocating; it does not allocate.
func CheckAlloc(dt DType, n int) error {
	limit := MaxAllocBytes()
	if hi, bytes := bits.Mul64(uint64(n), uint64(dt.Size())); hi != 0 || bytes > uint64(limit) {
		return &AllocError{DType: dt, N: n, Limit: limit}
	}
	return nil
}

// AllocSize returns the number of elements of a buffer of dtype dt and
// the given shape, checked: it returns a *SizeError when the shape has a
// negative dimension or too many elements (see CheckedSize), and an
// *AllocError naming the shape when the buffer exceeds the allocation
// limit.
func AllocSize(dt DType, shape []int) (int, error) {
	n, err := CheckedSize(shape)
	if err != nil {
		return 0, err
	}
	if err := CheckAlloc(dt, n); err != nil {
		err.(*AllocError).Shape = shape
		return 0, err
	}
	return n, nil
}
