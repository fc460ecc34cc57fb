//go:build openblas

// This file is separate from package cpu because a package that uses cgo
// cannot also hold Go assembly, which package cpu does.

package openblaslink

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
import "C"

// SetThreads sets the number of threads OpenBLAS uses (n ≥ 1).
func SetThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
