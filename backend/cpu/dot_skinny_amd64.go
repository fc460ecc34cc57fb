//go:build amd64 && !purego

package cpu

// The skinny products' inner-product kernels (dot_skinny_amd64.s): c[5r+j]
// is the dot product of a_r and b_j over k elements (a multiple of the
// vector's 8 float32 or 4 float64 lanes).
//
//go:noescape
func sdot2x5AVX2(k int, a0, a1, b0, b1, b2, b3, b4 *float32, c *[10]float32)

//go:noescape
func ddot2x5AVX2(k int, a0, a1, b0, b1, b2, b3, b4 *float64, c *[10]float64)

// haveSkinny says the skinny kernels can run.
var haveSkinny = haveSIMD

// skinnyKernel runs the kernel of T's element type.
func skinnyKernel[T float32 | float64](k int, a0, a1 *T, b *[5]*T, c *[10]T) {
	switch any(c).(type) {
	case *[10]float32:
		sdot2x5AVX2(k, any(a0).(*float32), any(a1).(*float32), any(b[0]).(*float32), any(b[1]).(*float32), any(b[2]).(*float32), any(b[3]).(*float32), any(b[4]).(*float32), any(c).(*[10]float32))
	case *[10]float64:
		ddot2x5AVX2(k, any(a0).(*float64), any(a1).(*float64), any(b[0]).(*float64), any(b[1]).(*float64), any(b[2]).(*float64), any(b[3]).(*float64), any(b[4]).(*float64), any(c).(*[10]float64))
	}
}
