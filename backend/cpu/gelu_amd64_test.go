//go:build !purego

package cpu

import (
	"math"
	"testing"
)

// TestGELUWideKernels checks the eight-lane (AVX-512) GELU and GELU′
// kernels bit for bit against the four-lane (AVX2) ones, which the
// accuracy tests measure, over every 4099th float32 and values around
// the polynomial's reach (|x| = 2√2), and gelu32Vec's split of a length
// between them and the portable tail.
func TestGELUWideKernels(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 here: the four-lane kernels run alone")
	}
	var in []float32
	for b := uint64(0); b < 1<<32; b += 4099 {
		in = append(in, math.Float32frombits(uint32(b)))
	}
	for x := float32(2.7); x < 3; x = math.Nextafter32(x, 4) {
		in = append(in, x, -x)
	}
	in = in[:len(in)&^7]
	for _, k := range []struct {
		name     string
		k8, k4   func(d, a []float32)
		vec, ref func(d, a []float32)
	}{
		{"gelu", gelu32AVX512, gelu32AVX2, gelu32Vec, gelu32Scalar},
		{"gelu_grad", geluGrad32AVX512, geluGrad32AVX2, geluGrad32Vec, geluGrad32Scalar},
	} {
		wide, narrow := make([]float32, len(in)), make([]float32, len(in))
		unaryVec(k.k8, wide, in)
		unaryVec(k.k4, narrow, in)
		for i, x := range in {
			if math.Float32bits(wide[i]) != math.Float32bits(narrow[i]) {
				t.Fatalf("%s(%v): %v on eight lanes, %v on four", k.name, x, wide[i], narrow[i])
			}
		}
		// Lengths that leave a group of four, a tail, or both.
		for _, n := range []int{1, 3, 4, 7, 8, 12, 13, 15, 16, 21} {
			d, w := make([]float32, n), make([]float32, n)
			k.vec(d, in[1000:1000+n])
			unaryVec(k.k4, w[:n&^3], in[1000:1000+n&^3])
			k.ref(w[n&^3:], in[1000+n&^3:1000+n])
			for i := range d {
				if math.Float32bits(d[i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s of %d: element %d is %v, want %v", k.name, n, i, d[i], w[i])
				}
			}
		}
	}
}
