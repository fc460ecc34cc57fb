//go:build amd64 && !purego

package cpu

import "unsafe"

// The loops of limits.go (limits_amd64.s): n iterations of 12
// independent FMAs on 256-bit (AVX2) or 512-bit (AVX-512) vectors, and
// the triad a = b + s·c over n float32, n a multiple of 32.

//go:noescape
func fmaLoop32AVX2(n int)

//go:noescape
func fmaLoop64AVX2(n int)

//go:noescape
func fmaLoop32AVX512(n int)

//go:noescape
func fmaLoop64AVX512(n int)

//go:noescape
func triad32AVX2(a, b, c *float32, n int, s float32)

// fmaLoop runs n iterations of 12 independent FMAs on the widest vectors
// of kernel path p (at most the CPU's) and returns the floating-point
// operations done (an FMA counts two per lane).
func fmaLoop(p kernelPath, f64 bool, n int) float64 {
	p = min(p, cpuPath)
	lanes := 8
	switch {
	case p >= pathAVX512 && f64:
		fmaLoop64AVX512(n)
	case p >= pathAVX512:
		fmaLoop32AVX512(n)
		lanes = 16
	case p >= pathAVX2 && f64:
		fmaLoop64AVX2(n)
		lanes = 4
	case p >= pathAVX2:
		fmaLoop32AVX2(n)
	default:
		return fmaLoopGo(f64, n)
	}
	return float64(n) * 12 * float64(lanes) * 2
}

// triad sets a[i] = b[i] + s·c[i]; the slices have equal lengths.
func triad(a, b, c []float32, s float32) {
	n := 0
	if haveSIMD {
		n = len(a) &^ 31
	}
	if n > 0 {
		triad32AVX2((*float32)(unsafe.Pointer(&a[0])), &b[0], &c[0], n, s)
	}
	triadGo(a[n:], b[n:len(a)], c[n:len(a)], s)
}
