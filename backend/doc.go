// Package backend defines the interface between peel's eval interpreter
// and the devices that run kernels: DType, Buffer (device storage), Array
// (a strided view of a buffer) and Backend. Implementations live in
// subpackages (backend/cpu); backend/backendtest is the conformance suite
// every implementation passes.
package backend
