package nn

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

// TestSyncBatchNorm: BatchNorm with SyncStats(Psum over "data") on the
// devices of a Vmap over the data axis, and of a ShardMap over an
// in-process mesh, equals BatchNorm on the whole batch (float64, 1e-12):
// its output, its next running state, and the gradient of a loss of
// its output with respect to the input and the scale.
func TestSyncBatchNorm(t *testing.T) {
	const devices, rows, ch, w = 2, 8, 3, 2
	vals := make([]float64, rows*ch*w)
	for i := range vals {
		vals[i] = math.Sin(0.37*float64(i)+0.2) * (1 + float64(i%3))
	}
	x := peel.FromFloat64s(vals, rows, ch, w)
	p, s := InitBatchNorm(peel.Float64, ch)
	p.Scale = peel.FromFloat64s([]float64{0.5, 1.5, -2}, ch)
	weights := peel.Cos(peel.Reshape(peel.Arange(peel.Float64, 0, rows*ch*w, 1), rows, ch, w))
	whole := func(x, scale *peel.Tensor) (*peel.Tensor, BatchNormState) {
		q := p
		q.Scale = scale
		return BatchNorm(q, s, x, true)
	}
	psum := func(t *peel.Tensor) *peel.Tensor { return dist.Psum(t, "data") }
	synced := func(x, scale *peel.Tensor) (*peel.Tensor, BatchNormState) {
		q := p
		q.Scale = scale
		return BatchNorm(q, s, x, true, SyncStats(psum))
	}
	wantY, wantS := whole(x, p.Scale)
	type args struct{ X, Scale *peel.Tensor }
	want := transforms.Grad(func(a args) *peel.Tensor {
		y, _ := whole(a.X, a.Scale)
		return peel.Sum(peel.Mul(y, weights))
	})(args{x, p.Scale})

	blocks := peel.Reshape(x, devices, rows/devices, ch, w)
	type out struct{ Y, Mean, Var *peel.Tensor }
	vm := transforms.Vmap(func(xb *peel.Tensor) out {
		y, st := synced(xb, p.Scale)
		return out{y, st.Mean, st.Var}
	}, transforms.AxisName("data"))(blocks)
	near := func(what string, got, want *peel.Tensor) {
		t.Helper()
		g, wt := got.Float64s(), want.Float64s()
		for i := range wt {
			if math.Abs(g[i]-wt[i]) > 1e-12 {
				t.Fatalf("%s: element %d is %v, want %v", what, i, g[i], wt[i])
			}
		}
	}
	near("Vmap: output", peel.Reshape(vm.Y, rows, ch, w), wantY)
	for d := range devices {
		near(fmt.Sprintf("Vmap: device %d's running mean", d), peel.Select(vm.Mean, 0, d), wantS.Mean)
		near(fmt.Sprintf("Vmap: device %d's running var", d), peel.Select(vm.Var, 0, d), wantS.Var)
	}
	got := transforms.Grad(func(a args) *peel.Tensor {
		y := transforms.Vmap(func(xb *peel.Tensor) *peel.Tensor {
			y, _ := synced(xb, a.Scale)
			return y
		}, transforms.AxisName("data"))(peel.Reshape(a.X, devices, rows/devices, ch, w))
		return peel.Sum(peel.Mul(peel.Reshape(y, rows, ch, w), weights))
	})(args{x, p.Scale})
	near("Vmap: gradient of the input", got.X, want.X)
	near("Vmap: gradient of the scale", got.Scale, want.Scale)

	mesh := dist.NewMesh(dist.MeshAxis("data", devices))
	sm := transforms.ShardMap(func(xb *peel.Tensor) *peel.Tensor {
		y, _ := synced(xb, p.Scale)
		return y
	}, mesh, dist.P("data", nil), dist.P("data", nil))(x)
	near("ShardMap: output", sm, wantY)
}
