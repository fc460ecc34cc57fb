package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernels of scatter_mul, scatter_max and scatter_min: scatter_add's
// loop (scatterSplit, indices visited in order within each block) with
// another combining step.

var _ = registerScatterReduceKernels()

// How an update is combined into the result.
const (
	combineMul = iota
	combineMax
	combineMin
)

func registerScatterReduceKernels() bool {
	register(prims.ScatterMul, false, scatterCombineKernel(combineMul))
	register(prims.ScatterMax, false, scatterCombineKernel(combineMax))
	register(prims.ScatterMin, false, scatterCombineKernel(combineMin))
	return true
}

// scatterCombineKernel copies x to the result, then combines updates[p, j,
// :] into out[p, idx[j], :] for each in-range index.
func scatterCombineKernel(how int) kernel {
	return func(params any, in, out []backend.Array) {
		x, idx, u, o := in[0], in[1], in[2], out[0]
		copyStrided(o, x)
		g := newAxisGeom(x, idx, params.(prims.AxisParams).Axis)
		if u.Size() == 0 {
			return
		}
		ix := i64s(idx)
		switch o.Buf.(type) {
		case *i64Buf:
			scatterCombineT(i64s(o), i64s(u), ix, g, how)
		case *f32Buf:
			scatterCombineT(f32s(o), f32s(u), ix, g, how)
		case *f64Buf:
			scatterCombineT(f64s(o), f64s(u), ix, g, how)
		default:
			panic("cpu: scatter reduction of a foreign or bool buffer")
		}
	}
}

// scatterCombineT combines the in-range updates in index order. Max and
// min take the update when it is NaN (w != w) or beyond the current value,
// so NaN propagates and stays.
func scatterCombineT[T int64 | float32 | float64](o, u []T, ix []int64, g axisGeom, how int) {
	n, S, J := g.n, g.S, g.J
	scatterSplit(g, func(p0, p1, s0, s1 int) {
		for p := p0; p < p1; p++ {
			for j, v := range ix {
				if v < 0 || v >= int64(n) {
					continue
				}
				dst := o[(p*n+int(v))*S+s0 : (p*n+int(v))*S+s1]
				src := u[(p*J+j)*S+s0 : (p*J+j)*S+s1]
				switch how {
				case combineMul:
					for s, w := range src {
						dst[s] *= w
					}
				case combineMax:
					for s, w := range src {
						if w > dst[s] || w != w {
							dst[s] = w
						}
					}
				default:
					for s, w := range src {
						if w < dst[s] || w != w {
							dst[s] = w
						}
					}
				}
			}
		}
	})
}
