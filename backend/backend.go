package backend

import "fmt"

// DType is the element type of an array. Its zero value is Invalid.
type DType uint8

// The dtypes peel supports. The first five are compute dtypes, which
// every kernel handles; Int32, Uint8, Float16 and BFloat16 (appended so
// that the values of the others keep their meaning) are storage dtypes:
// a backend computes on them in their Compute dtype and converts at the
// kernel edge (see Compute). Promotion is not the order of the list (see
// peel.PromoteTypes).
const (
	Invalid DType = iota
	Bool
	Int64
	Float32
	Float64
	Int32
	Uint8
	Float16  // IEEE 754 binary16
	BFloat16 // bfloat16: float32's exponent, 7 fraction bits
)

var dtypeNames = [...]string{"invalid", "bool", "i64", "f32", "f64", "i32", "u8", "f16", "bf16"}

// String returns the short name used in shapes and graphs: "f32", "f64",
// "i64", "bool", "i32", "u8", "f16", "bf16".
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Bool, Uint8:
		return 1
	case Float16, BFloat16:
		return 2
	case Float32, Int32:
		return 4
	case Int64, Float64:
		return 8
	}
	return 0
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// IsInteger reports whether d is an integer dtype (i64, i32 or u8).
func (d DType) IsInteger() bool { return d == Int64 || d == Int32 || d == Uint8 }

// IsValid reports whether d is one of the supported dtypes.
func (d DType) IsValid() bool { return d >= Bool && d <= BFloat16 }

// Compute returns the dtype kernels compute d in: Int64 for Int32 and
// Uint8, Float32 for Float16 and BFloat16, d itself for the others. A
// storage dtype (Compute() != d) widens exactly to its compute dtype; a
// result computed there is narrowed back, integers by two's-complement
// wraparound, floats by rounding to nearest even.
func (d DType) Compute() DType {
	switch d {
	case Int32, Uint8:
		return Int64
	case Float16, BFloat16:
		return Float32
	}
	return d
}

// IsStorage reports whether d is a storage dtype (Compute() != d).
func (d DType) IsStorage() bool { return d >= Int32 && d <= BFloat16 }

// Buffer is storage owned by a backend. Its elements all have one dtype.
type Buffer interface {
	// Len returns the number of elements.
	Len() int
	// DType returns the element type.
	DType() DType
}

// Array is a strided view of a buffer: element i0,i1,… lives at
// Offset + Σ ik*Strides[k]. Strides are in elements; nil Strides means
// contiguous row-major. A stride may be 0 (a broadcast) or negative (a
// reversal).
type Array struct {
	Buf     Buffer
	Shape   []int
	Strides []int
	Offset  int
}

// Size returns the number of elements of a's shape.
func (a Array) Size() int { return ShapeSize(a.Shape) }

// IsContiguous reports whether a's elements are laid out row-major without
// gaps starting at Offset.
func (a Array) IsContiguous() bool {
	if a.Strides == nil {
		return true
	}
	want := 1
	for k := len(a.Shape) - 1; k >= 0; k-- {
		if a.Shape[k] != 1 && a.Strides[k] != want {
			return a.Size() == 0
		}
		want *= a.Shape[k]
	}
	return true
}

// IsSplat reports whether every element of a is the same memory location
// (all strides zero, or a single element).
func (a Array) IsSplat() bool {
	if a.Strides == nil {
		return a.Size() == 1
	}
	for k, s := range a.Strides {
		if s != 0 && a.Shape[k] != 1 {
			return false
		}
	}
	return true
}

// Overlaps reports whether two distinct indices of a can name the same
// element (a zero stride on a dimension longer than one). Such an array
// cannot be the destination of a write.
func (a Array) Overlaps() bool {
	if a.Strides == nil || a.Size() == 0 {
		return false
	}
	for k, s := range a.Strides {
		if s == 0 && a.Shape[k] > 1 {
			return true
		}
	}
	return false
}

// ContiguousStrides returns the row-major strides of shape, which must
// have passed CheckedSize: no stride of a shape with elements overflows;
// those of an empty shape may wrap, and no element of it is addressed.
func ContiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		st[k] = s
		s *= shape[k]
	}
	return st
}

// EffectiveStrides returns a's strides, computing row-major ones when a
// is contiguous with nil Strides.
func (a Array) EffectiveStrides() []int {
	if a.Strides != nil {
		return a.Strides
	}
	return ContiguousStrides(a.Shape)
}

// ShapeSize returns the product of the dimensions (1 for rank 0). It does
// not check for overflow: every shape peel makes has passed CheckedSize,
// which callers with a shape from elsewhere should use instead.
func ShapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Op identifies a primitive to a backend. ID is dense (0, 1, 2, …) in the
// order primitives are registered, so a backend can keep its kernels in a
// slice indexed by ID.
type Op struct {
	ID   int
	Name string
}

// Backend runs primitives on one kind of device. The eval interpreter is its
// only caller. Implementations must be safe for concurrent use.
type Backend interface {
	// Name returns a short name such as "cpu".
	Name() string
	// Alloc returns a zeroed buffer of n elements. It must refuse a
	// buffer that CheckAlloc refuses (a size above MaxAllocBytes) before
	// allocating anything, by panicking with an error that says "too
	// large".
	Alloc(dt DType, n int) Buffer
	// FromHost returns a new buffer holding a copy of data, which is a
	// []bool, []int64, []float32, []float64, []int32, []uint8, []F16 or
	// []BF16 (see HostSlice); it refuses a copy above the allocation
	// limit as Alloc does.
	FromHost(data any) Buffer
	// ToHost returns a's elements in row-major order as a new slice of
	// the type FromHost takes for a's dtype.
	ToHost(a Array) any
	// Copy writes src's elements into dst element by element. Both may be
	// strided; they have the same shape and dtype. dst must not overlap
	// itself; src may alias dst.
	Copy(dst, src Array)
	// Has reports whether the backend has a kernel for op.
	Has(op Op) bool
	// Exec runs op's kernel. in holds the operands, which may be strided;
	// out holds contiguous arrays of the result shapes and dtypes, which
	// the kernel fills: every element must be written (they may be
	// scratch blocks reused by interp's blocked graph evaluation, not
	// fresh zeroed memory). params is the primitive's
	// parameter value. Exec may overwrite the elements of in but must not
	// retain either slice after it returns.
	Exec(op Op, params any, in, out []Array)
}

// HostAdopter is implemented by backends whose buffers can be host
// slices themselves: AdoptHost returns a buffer that is data, not a copy
// of it, refusing sizes above the allocation limit as FromHost does. The
// caller gives data up: nothing else may hold it.
type HostAdopter interface {
	AdoptHost(data any) Buffer
}

// HostViewer is implemented by backends whose buffers are host slices:
// HostView returns the slice that is buf itself, not a copy (the type
// FromHost takes for its dtype), or nil when buf is not one. A caller
// hands the memory to code outside Go (an MPI call) without copying it;
// it must not write into a buffer that holds a tensor's value, and keeps
// the buffer's tensor reachable while it uses the slice. The slice's
// elements hold no pointers, but they may share their Go object with
// the buffer's header (the CPU backend's small buffers), which points to
// them: a bare pointer to them (an unsafe.Pointer) given to C fails
// cgo's pointer check, which reads the whole object, unless the memory
// is pinned (runtime.Pinner) for the call.
type HostViewer interface {
	HostView(buf Buffer) any
}

// MemorySharer is implemented by backends that can tell whether two
// buffers share memory: SharesMemory reports whether the elements of x
// and y overlap (two buffers over one host slice, or parts of one), and
// answers true for a buffer it cannot tell about (another backend's).
// An empty buffer shares nothing.
type MemorySharer interface {
	SharesMemory(x, y Buffer) bool
}

// InPlaceElementwise is implemented by backends whose elementwise
// kernels can write their result over their first operand:
// ElementwiseInPlace reports whether Exec of op (an elementwise op: each
// result element computed from the operands' elements at its index) may
// be given as out[0] the array in[0] itself, contiguous, with the
// result's shape and dtype, the other operands sharing none of its
// memory. interp.UpdateInPlace uses it to accumulate into a tensor its
// caller alone holds (the sums of cotangents of a backward pass) without
// a new buffer for each sum.
type InPlaceElementwise interface {
	ElementwiseInPlace(op Op) bool
}

// FromOwnedHost returns a buffer of b holding data, a slice the caller
// has just made and gives up (a constructor's fill, a constant's one
// element): adopted without a copy where b is a HostAdopter, else copied
// by FromHost.
func FromOwnedHost(b Backend, data any) Buffer {
	if a, ok := b.(HostAdopter); ok {
		return a.AdoptHost(data)
	}
	return b.FromHost(data)
}

// Kernel computes a primitive's results on one backend: in holds the
// operands, out arrays of the result shapes and dtypes, every element of
// which the kernel writes; params is the primitive's parameter value. Each
// backend documents the layout its kernels receive (backend/cpu: every
// operand contiguous row-major).
type Kernel func(params any, in, out []Array)

// KernelRegistry is implemented by backends that accept kernels for
// primitives defined after the backend was built, such as the fused
// kernels of user-defined ops (customop.Define with customop.WithKernel).
type KernelRegistry interface {
	// RegisterKernel makes k op's kernel; Has(op) then reports true. It
	// panics if op already has a kernel.
	RegisterKernel(op Op, k Kernel)
}

// Layout is the type of one operand or result of a kernel call without
// its memory: the dtype, the shape and the strides (nil: contiguous
// row-major) of an Array whose buffer and offset are not known yet.
type Layout struct {
	DType   DType
	Shape   []int
	Strides []int
}

// LayoutOf returns a's layout (its buffer's dtype, its shape and
// strides).
func LayoutOf(a Array) Layout {
	return Layout{DType: a.Buf.DType(), Shape: a.Shape, Strides: a.Strides}
}

// Direct is a kernel resolved for fixed operand layouts by
// KernelResolver.Resolve. It computes what Exec(op, params, in, out)
// computes, bit for bit, for arrays of those layouts (any buffers of the
// backend, any offsets). Unlike Exec it neither modifies nor retains the
// in and out slices, so a caller may pass the same slices on every call.
type Direct func(in, out []Array)

// KernelResolver is implemented by backends that can resolve a kernel
// once, when a program is built, for calls whose operands always have
// the same layouts (an executor running a fixed instruction list), and so
// skip the per-call dispatch of Exec: the kernel lookup, the dtype and
// layout tests and the choice of a loop.
type KernelResolver interface {
	// Resolve returns the direct kernel of op with params for operands
	// of layouts in and results of layouts out (contiguous), or nil when
	// the backend has none for them; the caller then uses Exec. The
	// returned function is safe for concurrent use.
	Resolve(op Op, params any, in, out []Layout) Direct
}
