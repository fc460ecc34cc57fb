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

// TestGELUGradKernels checks GELU′'s float32-lane kernels: sixteen lanes
// (AVX-512) bit for bit against eight (AVX2) over every 4099th float32
// and the tables' interval ends and reach; that a kernel stops after
// the first group with a far lane (|x| ≥ 4) and geluGrad32Vec gives
// those lanes the float64 Reference's value; and that each element's
// bits do not depend on its place in the slice or the slice's length
// (the last elements run in a padded group).
func TestGELUGradKernels(t *testing.T) {
	var in []float32
	for b := uint64(0); b < 1<<32; b += 4099 {
		in = append(in, math.Float32frombits(uint32(b)))
	}
	for k := float32(0); k <= 8; k++ {
		// x with x²/2 at and around each interval's end, and the reach.
		x := float32(math.Sqrt(2 * float64(k)))
		for _, v := range []float32{x, math.Nextafter32(x, 0), math.Nextafter32(x, 5)} {
			in = append(in, v, -v)
		}
	}
	in = in[:len(in)&^15]
	narrow := make([]float32, len(in))
	geluGradLanes(geluGradPoly32AVX2, 8, narrow, in)
	var far [1]float32
	for i, x := range in {
		if !(x*x >= geluGradFar) {
			continue
		}
		geluGrad32Scalar(far[:], in[i:i+1])
		if math.Float32bits(narrow[i]) != math.Float32bits(far[0]) && !(x != x) {
			t.Fatalf("gelu_grad(%v) = %v, not the Reference's %v", x, narrow[i], far[0])
		}
	}
	if haveAVX512 {
		wide := make([]float32, len(in))
		geluGradLanes(geluGradPoly32AVX512, 16, wide, in)
		for i, x := range in {
			if math.Float32bits(wide[i]) != math.Float32bits(narrow[i]) && !(wide[i] != wide[i] && narrow[i] != narrow[i]) {
				t.Fatalf("gelu_grad(%v): %v on sixteen lanes, %v on eight", x, wide[i], narrow[i])
			}
		}
	}

	// A far lane at 37 stops the eight-lane kernel after 40, the
	// sixteen-lane one after 48.
	a := make([]float32, 64)
	for i := range a {
		a[i] = float32(i%7) * 0.3
	}
	a[37] = -4.5
	kernels := []struct {
		k    func(d, a []float32) int
		stop int
	}{{geluGradPoly32AVX2, 40}}
	if haveAVX512 {
		kernels = append(kernels, struct {
			k    func(d, a []float32) int
			stop int
		}{geluGradPoly32AVX512, 48})
	}
	for _, c := range kernels {
		if n := c.k(make([]float32, 64), a); n != c.stop {
			t.Errorf("kernel stopped after %d elements, want %d", n, c.stop)
		}
	}
	d := make([]float32, 64)
	geluGrad32Vec(d, a)
	var ref [1]float32
	geluGrad32Scalar(ref[:], a[37:38])
	if d[37] != ref[0] {
		t.Errorf("gelu_grad(-4.5) = %v, want %v", d[37], ref[0])
	}

	// Every length and offset up to 40 against the whole run.
	whole := make([]float32, len(in))
	geluGrad32Vec(whole, in)
	for off := 0; off < 40; off += 3 {
		for n := 1; n <= 40; n++ {
			got := make([]float32, n)
			geluGrad32Vec(got, in[5000+off:5000+off+n])
			for i := range got {
				w := whole[5000+off+i]
				if math.Float32bits(got[i]) != math.Float32bits(w) && !(got[i] != got[i] && w != w) {
					t.Fatalf("gelu_grad of %d at %d: element %d is %v, %v in the whole run", n, off, i, got[i], w)
				}
			}
		}
	}
}
