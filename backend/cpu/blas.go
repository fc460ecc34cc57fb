//go:build !openblas

package cpu

// BLAS names the BLAS implementation dot_general calls: "gonum" (gonum's
// pure Go BLAS) in the default build, "openblas" when built with
// -tags openblas.
func BLAS() string { return "gonum" }
