package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// linear is prims.Linear's kernel: the product x·w into out by
// dot_general's kernel (which reads x and w in any layout), then b added
// to each of out's rows in place by add's kernel, with b read as a
// repeated block (add's kernel with the product and b broadcast: the
// decomposition's two operations, so its bits, with no second buffer).
func linear(_ any, in, out []backend.Array) {
	x, b := in[0], in[2]
	dotGeneral(prims.LinearDot(len(x.Shape)), in[:2], out)
	y := out[0]
	strides := make([]int, len(y.Shape))
	strides[len(strides)-1] = b.EffectiveStrides()[0]
	bias := backend.Array{Buf: b.Buf, Shape: y.Shape, Strides: strides, Offset: b.Offset}
	New().Exec(prims.Add.Op, nil, []backend.Array{y, bias}, out)
}

func init() { registerStrided(prims.Linear, linear) }
