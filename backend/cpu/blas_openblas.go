//go:build openblas

package cpu

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/peel-ml/peel/backend/cpu/internal/openblaslink"
)

// With -tags openblas, dot_general's GEMMs go through cgo to OpenBLAS
// (libopenblas must be installed, as with Debian's libopenblas-dev).
func init() {
	blas64.Use(netlib.Implementation{})
	blas32.Use(netlib.Implementation{})
}

// BLAS names the BLAS implementation dot_general calls: "gonum" (gonum's
// pure Go BLAS) in the default build, "openblas" when built with
// -tags openblas.
func BLAS() string { return "openblas" }

// setBLASThreads makes OpenBLAS use n threads, as the kernels do.
func setBLASThreads(n int) { openblaslink.SetThreads(n) }

// packedGEMM is false: with -tags openblas, dot_general's GEMMs are
// OpenBLAS's.
const packedGEMM = false
