//go:build amd64 && !purego

package cpu

// GELU′ in float32 lanes (gelugrad_amd64.s). GELU′(x) = Φ(x) + x·φ(x)
// is ½ + x·H(x²/2) with H entire, and below x = −√2 the kernels evaluate
// GELU′ itself as N(x²/2), analytic there, so that its small values keep
// their relative accuracy. Each of H and N is a table of eight
// polynomials of degree 8 (one per unit interval of t = x²/2 below 8,
// picked per lane by VPERMPS), evaluated in float32 at t's exact value
// (x² as a rounded product and its FMA remainder); the kernels run
// sixteen lanes at a time with AVX-512 and eight with AVX2, the same
// bits. Lanes with |x| ≥ 4 (x² ≥ 16 in float32: 0.006% of a standard
// normal's values) take the primitive's float64 Reference instead.
//
// Accuracy (TestGELUGrad32's sweep of every 1021st float32 and a fine
// grid; the conformance suite's relative bound): within 1 ulp of the
// correctly rounded value, or 2^-23 absolute, everywhere; within 2 ulps
// below −√2. Between −√2 and GELU′'s root (x ≈ −0.7518), where ½ and x·H
// cancel, the error is absolute, about 6e-8 (10 ulps at −1.2), as a
// float32 evaluation of Φ(x) + x·φ(x) (torch's) is. The float64-lane
// kernels this replaced were within 1.9e-9 absolute, at 1.95 ns an
// element on a Zen 4 against 0.49 (BenchmarkElementwiseUnary,
// gelu_grad_f32; AVX2: 3.0 against 0.80).
//
// Each element's bits depend on its value alone: not on its lanes'
// neighbours (a group with a far lane is computed whole, the far lanes
// then replaced), nor on its place in the slice (the last elements go
// through the kernel in a padded group).

// geluGradPoly32AVX2 sets d[i] = GELU′(a[i]) for i below len(d) rounded
// down to a multiple of 8 and returns how many it set: all of them, or
// fewer when a group of eight had a lane with a[i]² ≥ 16, the last group
// it set. Such far lanes get meaningless values.
//
//go:noescape
func geluGradPoly32AVX2(d, a []float32) int

// geluGradPoly32AVX512 is geluGradPoly32AVX2 sixteen lanes at a time,
// len(d) rounded down to a multiple of 16.
//
//go:noescape
func geluGradPoly32AVX512(d, a []float32) int

// geluGradFar is x² at and past which the kernels' tables end (|x| ≥ 4).
const geluGradFar = 16

// geluGrad32Vec sets d[i] = GELU′(a[i]) with the widest kernel the CPU
// has. It panics if len(a) < len(d).
func geluGrad32Vec(d, a []float32) {
	if haveAVX512 {
		geluGradLanes(geluGradPoly32AVX512, 16, d, a)
		return
	}
	geluGradLanes(geluGradPoly32AVX2, 8, d, a)
}

// geluGradLanes runs the kernel k of w lanes over d and a[:len(d)] in
// chunks, replaces the far lanes of the group it stopped after (only
// the last group a call sets can hold one), and runs the last len(d)
// mod w elements through k in a zero-padded group.
func geluGradLanes(k func(d, a []float32) int, w int, d, a []float32) {
	a = a[:len(d)]
	for len(d) >= w {
		n := k(d[:min(len(d), simdChunk)], a)
		geluGradFix(d[n-w:n], a[n-w:n])
		d, a = d[n:], a[n:]
	}
	if len(d) == 0 {
		return
	}
	var pd, pa [16]float32
	copy(pa[:], a)
	k(pd[:w], pa[:w])
	copy(d, pd[:])
	geluGradFix(d, a)
}

// geluGradFix sets d[i] = GELU′(a[i]) from the float64 Reference where
// a[i] is far (a[i]² ≥ geluGradFar, ±Inf among them).
func geluGradFix(d, a []float32) {
	for i, x := range a[:len(d)] {
		if x*x >= geluGradFar {
			geluGrad32Scalar(d[i:i+1], a[i:i+1])
		}
	}
}
