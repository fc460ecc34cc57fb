//go:build openblas

package cpu

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
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
