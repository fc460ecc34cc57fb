// Package backend defines the interface between peel's eval interpreter
// and the devices that run kernels: DType, Buffer (device storage), Array
// (a strided view of a buffer) and Backend. Implementations live in
// subpackages (backend/cpu); backend/backendtest is the conformance suite
// every implementation passes.
//
// Sizes are checked in one place: CheckedSize (with MulSize and AddSize
// for the arithmetic of shape rules) refuses negative dimensions and
// shapes whose number of elements overflows int, and every shape peel
// makes passes it. A shape with a zero dimension has no elements and is
// accepted whatever its other dimensions (as torch and numpy accept
// math.MaxInt×0); kernels return before looping over the partial
// products of such a shape, which may wrap. Buffers are bounded by the allocation limit
// (MaxAllocBytes, SetMaxAllocBytes; by default the machine's physical
// memory): a backend checks each Alloc and FromHost with CheckAlloc, and
// AllocSize checks a shape and its buffer together, before any memory is
// touched.
package backend
