package transforms_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

// TestRapidShardMap: random smooth programs p (the generator of
// rapid_test.go) run inside ShardMap over a 1-D or 2-D mesh, the rows of
// x split over every device and y replicated, with collectives inserted
// (an AllGather of p's rows back into the whole, tiled over each mesh
// axis, and a Psum of p's column sums over all the axes), equal the
// unsharded p(x, y) and its column sums; and Grad of the ShardMap'd
// function equals Grad of the unsharded one (f64, 1e-12).
func TestRapidShardMap(t *testing.T) {
	meshes := []*dist.Mesh{
		dist.NewMesh(dist.MeshAxis("data", 2)),
		dist.NewMesh(dist.MeshAxis("data", 2), dist.MeshAxis("model", 2)),
	}
	rapid.Check(t, func(t *rapid.T) {
		mesh := meshes[rapid.IntRange(0, len(meshes)-1).Draw(t, "mesh")]
		names := []string{}
		for _, a := range mesh.Axes() {
			names = append(names, a.Name)
		}
		rows := mesh.Size() * rapid.IntRange(1, 2).Draw(t, "rows per device")
		cols := rapid.IntRange(1, 3).Draw(t, "cols")
		yshape := [][]int{{}, {1}, {cols}}[rapid.IntRange(0, 2).Draw(t, "y shape")]
		p := drawProgram(t)
		x, y := drawTensor(t, "x", []int{rows, cols}), drawTensor(t, "y", yshape)
		t.Logf("p = %s on %v, x %v, y %v", p, mesh, x.Shape(), yshape)
		type out struct{ All, Sums *T }
		sharded := transforms.ShardMap2(func(x, y *T) out {
			z := peel.BroadcastTo(p.run(x, y), x.Shape()...)
			all := z
			for i := len(names) - 1; i >= 0; i-- {
				all = dist.AllGather(all, names[i], dist.Tiled())
			}
			return out{all, dist.Psum(z.Sum(0), names...)}
		}, mesh, []any{dist.P(names), dist.P()}, dist.P())
		plain := func(x, y *T) out {
			z := peel.BroadcastTo(p.run(x, y), x.Shape()...)
			return out{z, z.Sum(0)}
		}
		got, want := sharded(x, y), plain(x, y)
		smNearT(t, "gathered rows", got.All, want.All, 1e-14)
		smNearT(t, "column sums", got.Sums, want.Sums, 1e-13)
		loss := func(f func(x, y *T) out) func(x, y *T) *T {
			return func(x, y *T) *T { o := f(x, y); return o.All.Sin().Sum().Add(o.Sums.Square().Sum()) }
		}
		gx, gy := transforms.GradArgs2(loss(sharded))(x, y)
		wx, wy := transforms.GradArgs2(loss(plain))(x, y)
		smNearT(t, "Grad x", gx, wx, 1e-12)
		smNearT(t, "Grad y", gy, wy, 1e-12)
	})
}

func smNearT(t *rapid.T, what string, got, want *T, tol float64) {
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		d := g[i] - w[i]
		if d < 0 {
			d = -d
		}
		a := w[i]
		if a < 0 {
			a = -a
		}
		if !(d <= tol*(1+a)) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g[i], w[i])
		}
	}
}
