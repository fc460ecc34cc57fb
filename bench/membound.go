package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
)

// Memory-bound workloads: a fill, a binary elementwise op, a reduction
// and a transposing copy of 1M float32, each measured against the
// machine's bandwidth (Workload.Traffic: the bytes the op must read and
// write, not counting the cache's write-allocate reads), beside the
// copies (copy_1m_f32, copyinto_1m_f32).

// transN is the side of the transposed matrix: 1M elements.
const transN = 1 << 10

func memBoundWorkloads() []Workload {
	return []Workload{
		{
			Name: "fill_1m_f32", Impl: "peel",
			Doc:  "peel.Fill of a contiguous f32[1<<20] with 0.5 (torch: dst.fill_(0.5)); 4 MiB written",
			Unit: "ns/elem", Metric: perOp(chainN), Traffic: 4 * chainN,
			Setup: func() (func(), func() error) {
				dst := peel.Zeros(peel.Float32, chainN)
				run := func() { peel.Fill(dst, 0.5) }
				check := func() error { return checkAll(hostFloats(dst), 0.5) }
				return run, check
			},
		},
		{
			Name: "add_1m_f32", Impl: "peel",
			Doc:  "peel.Add of two f32[1<<20] into a new tensor; 8 MiB read, 4 MiB written (the triad's traffic)",
			Unit: "ns/elem", Metric: perOp(chainN), Traffic: 12 * chainN,
			Setup: func() (func(), func() error) {
				as, bs := randFloats(61, chainN, -1, 1), randFloats(62, chainN, -1, 1)
				a, b := fromFloats(as, peel.Float32), fromFloats(bs, peel.Float32)
				want := make([]float64, chainN)
				for i := range want {
					want[i] = float64(float32(as[i]) + float32(bs[i]))
				}
				var out *peel.Tensor
				run := func() { out = peel.Add(a, b) }
				return run, func() error { return compare(hostFloats(out), want, 0, 0) }
			},
		},
		{
			Name: "sum_1m_f32", Impl: "peel",
			Doc:  "peel.Sum of all of f32[1<<20]; 4 MiB read",
			Unit: "ns/elem", Metric: perOp(chainN), Traffic: 4 * chainN,
			Setup: func() (func(), func() error) {
				xs := randFloats(63, chainN, -1, 1)
				x := fromFloats(xs, peel.Float32)
				want, mag := 0.0, 0.0
				for _, v := range hostFloats(x) {
					want += v
					mag += math.Abs(v)
				}
				var out *peel.Tensor
				run := func() { out = peel.Sum(x) }
				check := func() error {
					if got := hostFloats(out)[0]; math.Abs(got-want) > 1e-6*mag {
						return fmt.Errorf("sum %v, want %v", got, want)
					}
					return nil
				}
				return run, check
			},
		},
		{
			Name: "transpose_1024_f32", Impl: "peel",
			Doc:  "peel.CopyInto of the transpose of f32[1024,1024] into a contiguous tensor (torch: dst.copy_(x.t())); 4 MiB read, 4 MiB written",
			Unit: "ns/elem", Metric: perOp(transN * transN), Traffic: 8 * transN * transN,
			Setup: func() (func(), func() error) {
				xs := randFloats(64, transN*transN, -1, 1)
				x := fromFloats(xs, peel.Float32, transN, transN)
				dst := peel.Zeros(peel.Float32, transN, transN)
				want := make([]float64, len(xs))
				for i := range transN {
					for j := range transN {
						want[i*transN+j] = float64(float32(xs[j*transN+i]))
					}
				}
				run := func() { peel.CopyInto(dst, peel.Transpose(x)) }
				return run, func() error { return compare(hostFloats(dst), want, 0, 0) }
			},
		},
	}
}

// checkAll fails unless every element of got is v.
func checkAll(got []float64, v float64) error {
	for i, g := range got {
		if g != v {
			return fmt.Errorf("element %d = %v, want %v", i, g, v)
		}
	}
	return nil
}
