//go:build !amd64 || purego

package cpu

// Portable stand-ins for the SIMD kernels of simd_amd64.go, for other
// architectures and the purego build tag: haveSIMD is false, so the
// kernels never call these, and each is the portable loop it would
// replace.

const haveSIMD = false

// bestPath is the portable loops: there are no assembly kernels here.
func bestPath() kernelPath { return pathPurego }

// haveAVX512 is false: no AVX-512 GEMM micro-kernels.
const haveAVX512 = false

func tanh32Vec(d, a []float32)     { tanh32Scalar(d, a) }
func exp32Vec(d, a []float32)      { exp32Scalar(d, a) }
func logistic32Vec(d, a []float32) { logistic32Scalar(d, a) }

func geluTanh32Vec(d, a []float32)     { geluTanhLoop(d, a) }
func geluTanhGrad32Vec(d, a []float32) { geluTanhGradLoop(d, a) }
func sin32Vec(d, a []float32)          { sin32Scalar(d, a) }
func cos32Vec(d, a []float32)          { cos32Scalar(d, a) }
func erf32Vec(d, a []float32)          { erf32Scalar(d, a) }
func gelu32Vec(d, a []float32)         { gelu32Scalar(d, a) }
func geluGrad32Vec(d, a []float32)     { geluGrad32Scalar(d, a) }

func addVV32Vec(d, a, b []float32) { addVV(d, a, b) }
func subVV32Vec(d, a, b []float32) { subVV(d, a, b) }
func mulVV32Vec(d, a, b []float32) { mulVV(d, a, b) }
func divVV32Vec(d, a, b []float32) { divVV(d, a, b) }

func addVS32Vec(d, a []float32, s float32)           { addVS(d, a, s) }
func subVS32Vec(d, a []float32, s float32)           { subVS(d, a, s) }
func subSV32Vec(d []float32, s float32, b []float32) { subSV(d, s, b) }
func mulVS32Vec(d, a []float32, s float32)           { mulVS(d, a, s) }
func divVS32Vec(d, a []float32, s float32)           { divVS(d, a, s) }
func divSV32Vec(d []float32, s float32, b []float32) { divSV(d, s, b) }

// The row loops (rowsVec on amd64) run the tensor-scalar loop row by
// row.
func addRowsVS32Vec(d, a, s []float32, k int) { rowsLoop(addVS, d, a, s, k) }
func subRowsVS32Vec(d, a, s []float32, k int) { rowsLoop(subVS, d, a, s, k) }
func subRowsSV32Vec(d, a, s []float32, k int) {
	rowsLoop(func(d, a []float32, v float32) { subSV(d, v, a) }, d, a, s, k)
}
func mulRowsVS32Vec(d, a, s []float32, k int) { rowsLoop(mulVS, d, a, s, k) }
func divRowsVS32Vec(d, a, s []float32, k int) { rowsLoop(divVS, d, a, s, k) }
func divRowsSV32Vec(d, a, s []float32, k int) {
	rowsLoop(func(d, a []float32, v float32) { divSV(d, v, a) }, d, a, s, k)
}
func addRowsVS64Vec(d, a, s []float64, k int) { rowsLoop(addVS, d, a, s, k) }
func subRowsVS64Vec(d, a, s []float64, k int) { rowsLoop(subVS, d, a, s, k) }
func subRowsSV64Vec(d, a, s []float64, k int) {
	rowsLoop(func(d, a []float64, v float64) { subSV(d, v, a) }, d, a, s, k)
}
func mulRowsVS64Vec(d, a, s []float64, k int) { rowsLoop(mulVS, d, a, s, k) }
func divRowsVS64Vec(d, a, s []float64, k int) { rowsLoop(divVS, d, a, s, k) }
func divRowsSV64Vec(d, a, s []float64, k int) {
	rowsLoop(func(d, a []float64, v float64) { divSV(d, v, a) }, d, a, s, k)
}

func neg32Vec(d, a []float32) { negLoop(d, a) }
func neg64Vec(d, a []float64) { negLoop(d, a) }

func addVV64Vec(d, a, b []float64) { addVV(d, a, b) }
func subVV64Vec(d, a, b []float64) { subVV(d, a, b) }
func mulVV64Vec(d, a, b []float64) { mulVV(d, a, b) }
func divVV64Vec(d, a, b []float64) { divVV(d, a, b) }

func addVS64Vec(d, a []float64, s float64)           { addVS(d, a, s) }
func subVS64Vec(d, a []float64, s float64)           { subVS(d, a, s) }
func subSV64Vec(d []float64, s float64, b []float64) { subSV(d, s, b) }
func mulVS64Vec(d, a []float64, s float64)           { mulVS(d, a, s) }
func divVS64Vec(d, a []float64, s float64)           { divVS(d, a, s) }
func divSV64Vec(d []float64, s float64, b []float64) { divSV(d, s, b) }

func addWiden32Vec(acc []float64, s []float32)    { sumVec(acc, s) }
func sumWiden32(acc float64, s []float32) float64 { return sumSeg(acc, s) }
func maxSeg32(acc float32, s []float32) float32   { return maxSeg(acc, s) }
