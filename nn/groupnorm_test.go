package nn

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// groupNormRef is GroupNorm written out element by element for x [n, c,
// l] (l the spatial positions flattened) in g groups.
func groupNormRef(x, scale, bias []float64, n, c, l, g int, eps float64) []float64 {
	y := make([]float64, len(x))
	per := c / g
	for s := range n {
		for grp := range g {
			lo, hi := (s*c+grp*per)*l, (s*c+(grp+1)*per)*l
			mean, sq := 0.0, 0.0
			for i := lo; i < hi; i++ {
				mean += x[i]
			}
			mean /= float64(hi - lo)
			for i := lo; i < hi; i++ {
				sq += (x[i] - mean) * (x[i] - mean)
			}
			inv := 1 / math.Sqrt(sq/float64(hi-lo)+eps)
			for i := lo; i < hi; i++ {
				ch := (i / l) % c
				r := (x[i] - mean) * inv
				if scale != nil {
					r *= scale[ch]
				}
				if bias != nil {
					r += bias[ch]
				}
				y[i] = r
			}
		}
	}
	return y
}

func TestGroupNormFormula(t *testing.T) {
	const n, c, h, w = 3, 6, 2, 3
	p := GroupNormParams{Scale: tensor(50, c), Bias: tensor(51, c)}
	x := peel.Add(peel.Mul(tensor(52, n, c, h, w), 3), 2)
	for _, g := range []int{1, 2, 3, 6} {
		want := groupNormRef(x.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, c, h*w, g, 1e-5)
		assertClose(t, "GroupNorm", GroupNorm(p, x, g), want, []int{n, c, h, w}, 1e-11, 1e-13)
	}
	want := groupNormRef(x.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, c, h*w, 2, 0.5)
	assertClose(t, "GroupNorm eps", GroupNorm(p, x, 2, Eps(0.5)), want, []int{n, c, h, w}, 1e-11, 1e-13)
	want = groupNormRef(x.Float64s(), nil, nil, n, c, h*w, 3, 1e-5)
	assertClose(t, "GroupNorm affine=False", GroupNorm(GroupNormParams{}, x, 3), want, []int{n, c, h, w}, 1e-11, 1e-13)
	// [N, C] (no spatial axes) and [N, C, L] work as in torch.
	x2 := tensor(53, n, c)
	want = groupNormRef(x2.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, c, 1, 3, 1e-5)
	assertClose(t, "GroupNorm [N, C]", GroupNorm(p, x2, 3), want, []int{n, c}, 1e-11, 1e-13)
	x3 := tensor(54, n, c, 5)
	want = groupNormRef(x3.Float64s(), p.Scale.Float64s(), p.Bias.Float64s(), n, c, 5, 2, 1e-5)
	assertClose(t, "GroupNorm [N, C, L]", GroupNorm(p, x3, 2), want, []int{n, c, 5}, 1e-11, 1e-13)
	// One group is LayerNorm over [C, H, W] with the affine of a channel
	// broadcast over its positions.
	ones := peel.Ones(peel.Float64, c, h, w)
	ln := LayerNormParams{Scale: peel.Mul(ones, peel.Reshape(p.Scale, c, 1, 1)), Bias: peel.Mul(ones, peel.Reshape(p.Bias, c, 1, 1))}
	assertSame(t, "GroupNorm 1 group vs LayerNorm", GroupNorm(p, x, 1), LayerNorm(ln, x), 1e-12, 1e-13)

	q := InitGroupNorm(peel.Float64, 4)
	assertClose(t, "InitGroupNorm Scale", q.Scale, []float64{1, 1, 1, 1}, []int{4}, 0, 0)
	assertClose(t, "InitGroupNorm Bias", q.Bias, []float64{0, 0, 0, 0}, []int{4}, 0, 0)
	mustPanic(t, "nn.InitGroupNorm", func() { InitGroupNorm(peel.Float64, -1) })
	mustPanic(t, "nn.InitGroupNorm", func() { InitGroupNorm(peel.Int64, 2) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(p, x, 4) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(p, x, 0) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(p, tensor(1, 6), 2) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(p, nil, 2) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(p, peel.Zeros(peel.Int64, n, c), 2) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(GroupNormParams{Scale: tensor(1, c+1)}, x, 2) })
	mustPanic(t, "nn.GroupNorm", func() { GroupNorm(p, x, 2, Eps(-1)) })
}

// sinData is the deterministic input of TestGroupNormTorch: element k is
// sin(0.37·k + 0.011·k² + seed), as the examples' synth package.
func sinData(seed float64, shape ...int) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for k := range v {
		fk := float64(k)
		v[k] = math.Sin(0.37*fk + 0.011*fk*fk + seed)
	}
	return peel.FromFloat64s(v, shape...)
}

// TestGroupNormTorch checks the output and the gradients against torch
// 1.13's nn.GroupNorm(2, 4) in float64, computed by
//
//	x = (d(1, 2, 4, 3) * 3 + 1).requires_grad_()
//	gn = torch.nn.GroupNorm(2, 4).double()
//	gn.weight.copy_(1 + 0.5 * d(2, 4)); gn.bias.copy_(d(3, 4))
//	y = gn(x); (y * d(4, 2, 4, 3)).sum().backward()
//
// with d sinData.
func TestGroupNormTorch(t *testing.T) {
	x := sinData(1, 2, 4, 3).Mul(3).Add(1)
	p := GroupNormParams{Scale: sinData(2, 4).Mul(0.5).Add(1), Bias: sinData(3, 4)}
	wantY := []float64{
		0.82042248162546316, 1.4163315368953917, 1.3964725749535778, 0.24071867662169988, -1.0776660213101867, -2.8416300485833608,
		-0.19648707088368714, -1.3819997627209264, -1.8973542823017968, -1.6199704766758405, -0.56493166925747096, 0.93740608150409199,
		0.97046268858737461, 1.6407222680000439, 1.4299327513725475, -0.045067813586249179, -1.4438107297014218, -2.5667528857934805,
		-2.4876372346163347, -1.7521682917596122, -0.46472536349317656, 0.115300119935383, 0.22203789055117065, -0.57436635607355457,
	}
	wantDx := []float64{
		0.10804998423139958, 0.0063361742034017954, -0.072425512918267709, -0.015959379518731442, -0.029137620277268711, 0.0031363542794667354,
		-0.12621600791159476, -0.014143989255982758, 0.087013646672388811, -0.027974237163540139, 0.028424925851653404, 0.052895661807075389,
		0.086543957994950765, 0.0090751513324940081, -0.05066505557376999, -0.035747284992836401, -0.029528576506505005, 0.020321807745666526,
		-0.0072179620358174545, 0.030089158128541266, 0.020149538263452005, 0.044231960517839702, -0.0030647554440715319, -0.084187939429943848,
	}
	wantDScale := []float64{-4.1762702220588208, -1.2254989513906804, -3.7208213719819629, -2.5696173789752637}
	wantDBias := []float64{-5.1535905662929853, -1.1851321702787012, 3.6110772195523193, -0.72952406115224488}
	assertClose(t, "GroupNorm vs torch", GroupNorm(p, x, 2), wantY, []int{2, 4, 3}, 1e-13, 1e-15)
	loss := func(p GroupNormParams, x *peel.Tensor) *peel.Tensor {
		return GroupNorm(p, x, 2).Mul(sinData(4, 2, 4, 3)).Sum()
	}
	dp, dx := transforms.GradArgs2(loss)(p, x)
	assertClose(t, "d/dx vs torch", dx, wantDx, []int{2, 4, 3}, 1e-12, 1e-15)
	assertClose(t, "d/dScale vs torch", dp.Scale, wantDScale, []int{4}, 1e-12, 1e-15)
	assertClose(t, "d/dBias vs torch", dp.Bias, wantDBias, []int{4}, 1e-12, 1e-15)
}

func TestGroupNormTransforms(t *testing.T) {
	const n, c, h, w = 2, 4, 2, 2
	p := GroupNormParams{Scale: tensor(60, c), Bias: tensor(61, c)}
	x := peel.Add(peel.Mul(tensor(62, n, c, h, w), 2), 1)
	proj := tensor(63, n, c, h, w)
	loss := func(p GroupNormParams) *peel.Tensor { return sumAll(peel.Mul(GroupNorm(p, x, 2), proj)) }
	checkTreeGrad(t, "GroupNorm", loss, p, fdRtol, fdAtol)
	checkGradFD(t, "GroupNorm d/dx", func(x *peel.Tensor) *peel.Tensor { return sumAll(peel.Mul(GroupNorm(p, x, 2), proj)) }, x, fdRtol, fdAtol)
	// Second derivatives too (the meta-gradients and Hessians of a
	// network with GroupNorm).
	gradX := func(x *peel.Tensor) *peel.Tensor {
		return sumAll(peel.Square(transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return sumAll(peel.Mul(GroupNorm(p, x, 2), proj)) })(x)))
	}
	checkGradFD(t, "GroupNorm second derivative", gradX, x, 1e-5, 1e-7)
	// Under Vmap each example is normalized on its own: mapping samples
	// [C, H, W] made a batch of one is the batched call.
	checkVmap(t, "GroupNorm", func(x *peel.Tensor) *peel.Tensor { return GroupNorm(p, peel.Unsqueeze(x, 0), 2) }, x)
	checkVmap(t, "GroupNorm batch of one", func(x *peel.Tensor) *peel.Tensor { return GroupNorm(p, x, 4) }, peel.Unsqueeze(x, 1))
	// Per-sample gradients of the params (Vmap of Grad) are the loop's.
	perSample := transforms.Vmap2(transforms.Grad2(func(p GroupNormParams, x *peel.Tensor) *peel.Tensor {
		return sumAll(GroupNorm(p, peel.Unsqueeze(x, 0), 2).Square().Mul(peel.Select(proj, 0, 0)))
	}), transforms.InAxes(transforms.NoAxis, 0))(p, x)
	for i := range n {
		g := transforms.Grad(func(p GroupNormParams) *peel.Tensor {
			return sumAll(GroupNorm(p, peel.Narrow(x, 0, i, 1), 2).Square().Mul(peel.Select(proj, 0, 0)))
		})(p)
		assertSame(t, "per-sample d/dScale", peel.Select(perSample.Scale, 0, i), g.Scale, 1e-12, 1e-13)
		assertSame(t, "per-sample d/dBias", peel.Select(perSample.Bias, 0, i), g.Bias, 1e-12, 1e-13)
	}
	checkCompileTree(t, "GroupNorm", loss, p)
	checkEnsemble(t, "GroupNorm", loss, []GroupNormParams{p, {Scale: tensor(64, c), Bias: tensor(65, c)}})
}
