package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Convolution workloads: a ResNet-style 3×3 convolution, 64 → 64
// channels on 32×32 images in a batch of 32 (f32, SAME padding), forward
// and forward + backward (the gradients of both the input and the
// kernel for a fixed cotangent).

const (
	convBatch = 32
	convCh    = 64
	convHW    = 32
	convK     = 3
)

// convFlops is the number of floating-point operations of one forward
// convolution (a multiply and an add per tap).
const convFlops = 2.0 * convBatch * convCh * convCh * convHW * convHW * convK * convK

func convWorkloads() []Workload {
	return []Workload{conv2D(false), conv2D(true)}
}

// convInputs returns the input [32, 64, 32, 32], the kernel [64, 64, 3,
// 3] and the cotangent [32, 64, 32, 32], all f32, with their host values.
func convInputs() (x, w, u []float64) {
	n := convBatch * convCh * convHW * convHW
	s := 1 / math.Sqrt(convCh*convK*convK)
	return randFloats(51, n, -1, 1), randFloats(52, convCh*convCh*convK*convK, -s, s), randFloats(53, n, -1, 1)
}

// conv2D is Conv2D(x, w, SAME), or with grad its VJP in both operands
// (the forward and the two transposed convolutions: three times the
// flops, which the metric counts).
func conv2D(grad bool) Workload {
	name, doc, flops := "conv2d_3x3_64_f32", "Conv2D 3×3, 64→64 channels, 32×32, batch 32, f32, SAME", convFlops
	if grad {
		name, doc, flops = "conv2d_3x3_64_grad_f32", doc+": forward and VJP in the input and the kernel", 3*convFlops
	}
	return Workload{
		Name: name, Impl: "peel", Doc: doc,
		Unit: "GFLOPS", Metric: func(ns float64) float64 { return flops / ns }, FLOPs: flops,
		Setup: func() (func(), func() error) {
			xs, ws, us := convInputs()
			shape := []int{convBatch, convCh, convHW, convHW}
			x := fromFloats(xs, peel.Float32, shape...)
			w := fromFloats(ws, peel.Float32, convCh, convCh, convK, convK)
			u := fromFloats(us, peel.Float32, shape...)
			f := func(x, w *peel.Tensor) *peel.Tensor { return peel.Conv2D(x, w, peel.ConvPadding(peel.SamePadding)) }
			var y, gx, gw *peel.Tensor
			run := func() { y = f(x, w) }
			if grad {
				run = func() {
					var back func(*peel.Tensor) (*peel.Tensor, *peel.Tensor)
					y, back = transforms.VJP2(f, x, w)
					gx, gw = back(u)
				}
			}
			check := func() error {
				if err := checkConv(hostFloats(y), xs, ws); err != nil {
					return fmt.Errorf("forward: %w", err)
				}
				if !grad {
					return nil
				}
				return checkConvGrads(hostFloats(gx), hostFloats(gw), xs, ws, us)
			}
			return run, check
		},
	}
}

// convAt returns x[n, c, h, w] (rounded to f32), 0 outside the image.
func convAt(xs []float64, n, c, h, w int) float64 {
	if h < 0 || h >= convHW || w < 0 || w >= convHW {
		return 0
	}
	return float64(float32(xs[((n*convCh+c)*convHW+h)*convHW+w]))
}

func wAt(ws []float64, o, c, kh, kw int) float64 {
	return float64(float32(ws[((o*convCh+c)*convK+kh)*convK+kw]))
}

// checkSampled compares got with want at 256 pseudo-random indices below
// n, relative to the sum of the magnitudes of want's terms.
func checkSampled(what string, got []float64, n int, want func(i int) (v, mag float64)) error {
	if len(got) != n {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), n)
	}
	for k := range 256 {
		i := (k*7919 + 13) % n
		v, mag := want(i)
		if d := math.Abs(got[i] - v); !(d <= 1e-4*mag+1e-6) {
			return fmt.Errorf("%s: element %d = %v, want %v", what, i, got[i], v)
		}
	}
	return nil
}

// checkConv compares the forward result with a float64 loop.
func checkConv(y, xs, ws []float64) error {
	return checkSampled("result", y, len(xs), func(i int) (float64, float64) {
		wi, hi := i%convHW, i/convHW%convHW
		o, n := i/(convHW*convHW)%convCh, i/(convHW*convHW*convCh)
		var s, mag float64
		for c := range convCh {
			for kh := range convK {
				for kw := range convK {
					t := convAt(xs, n, c, hi+kh-1, wi+kw-1) * wAt(ws, o, c, kh, kw)
					s += t
					mag += math.Abs(t)
				}
			}
		}
		return s, mag
	})
}

// checkConvGrads compares the gradients with float64 loops: dx[n, c, h,
// w] = Σ u[n, o, h−kh+1, w−kw+1]·w[o, c, kh, kw] and dw[o, c, kh, kw] =
// Σ u[n, o, h, w]·x[n, c, h+kh−1, w+kw−1].
func checkConvGrads(gx, gw, xs, ws, us []float64) error {
	err := checkSampled("input gradient", gx, len(xs), func(i int) (float64, float64) {
		wi, hi := i%convHW, i/convHW%convHW
		c, n := i/(convHW*convHW)%convCh, i/(convHW*convHW*convCh)
		var s, mag float64
		for o := range convCh {
			for kh := range convK {
				for kw := range convK {
					t := convAt(us, n, o, hi-kh+1, wi-kw+1) * wAt(ws, o, c, kh, kw)
					s += t
					mag += math.Abs(t)
				}
			}
		}
		return s, mag
	})
	if err != nil {
		return err
	}
	return checkSampled("kernel gradient", gw, len(ws), func(i int) (float64, float64) {
		kw, kh := i%convK, i/convK%convK
		c, o := i/(convK*convK)%convCh, i/(convK*convK*convCh)
		var s, mag float64
		for n := range convBatch {
			for h := range convHW {
				for w := range convHW {
					t := convAt(us, n, o, h, w) * convAt(xs, n, c, h+kh-1, w+kw-1)
					s += t
					mag += math.Abs(t)
				}
			}
		}
		return s, mag
	})
}
