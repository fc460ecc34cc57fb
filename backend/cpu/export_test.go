package cpu

// SetWideGEMM selects the AVX-512 GEMM micro-kernels (on) or the AVX2
// ones (off) and returns the previous setting, for tests and benchmarks
// that check or time both. HasWideGEMM reports whether the CPU has the
// AVX-512 ones.
func SetWideGEMM(on bool) bool {
	old := gemmWide
	gemmWide = on && haveAVX512
	return old
}

// HasWideGEMM reports whether the AVX-512 GEMM micro-kernels can run.
func HasWideGEMM() bool { return haveAVX512 }

// SetConvTaps turns the tap path of convolutions on or off and returns
// the previous setting, for tests and benchmarks that compare it with
// im2col.
func SetConvTaps(on bool) bool {
	old := convTapsOn
	convTapsOn = on
	return old
}
