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

// PeakGFLOPS measures the FMA peak at one thread of the AVX2 kernels
// (wide unset) or of the process's path (wide set), for benchmarks that
// time each micro-kernel against its own limit.
func PeakGFLOPS(wide, f64 bool) float64 {
	p := cpuPath
	if !wide {
		p = min(p, pathAVX2)
	}
	return peak(p, f64, 1)
}

// SetGEMMCaches sets the cache sizes the GEMM's blocks derive from and
// returns the previous ones, so that tests cross every block boundary
// on small products whatever the machine's caches.
func SetGEMMCaches(l1, l2 int) (int, int) {
	o1, o2 := cacheL1, cacheL2
	cacheL1, cacheL2 = l1, l2
	return o1, o2
}

// SetRowsA turns the micro-kernels that read a row-major A in place on
// or off and returns the previous setting.
func SetRowsA(on bool) bool {
	old := gemmRowsA
	gemmRowsA = on
	return old
}

// OwnGEMM reports whether float products run on peel's packed GEMM
// (AVX2 or AVX-512 kernels, no -tags openblas), not on gonum's or
// OpenBLAS's.
func OwnGEMM() bool { return packedGEMM && haveSIMD }

// SetSkinny turns the inner-product path of skinny products on or off and
// returns the previous setting.
func SetSkinny(on bool) bool {
	old := skinnyOn
	skinnyOn = on
	return old
}

// SetScratchPoison turns on or off the filling of kept scratch buffers
// with NaN at every use (on under PEEL_CACHE_CHECK=1) and returns the
// previous setting.
func SetScratchPoison(on bool) bool {
	old := scratchPoison
	scratchPoison = on
	return old
}
