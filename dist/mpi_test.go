package dist_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
)

// rankData is rank r's operand in TestWorldCollectives: every process can
// make every rank's, so each checks its own results without the others.
func rankData(r, n int, dt peel.DType) *T {
	return peel.AsType(data(float64(r)+0.5, n, 3), dt)
}

// TestWorldCollectives checks every Communicator collective of the job's
// processes (World: MPI with the mpi build tag, run under mpirun -np 2 and
// -np 3 by CI; one process otherwise) against the result computed from
// every rank's operand, for f64, f32 and i64 (exact: every rank adds in
// the same order only in MPI's own reductions, so floats compare to
// rounding).
func TestWorldCollectives(t *testing.T) {
	w := dist.World()
	r, n := w.Rank(), w.Size()
	t.Logf("rank %d of %d (MPI build: %v)", r, n, dist.MPIEnabled)
	// Started collectives overlap the caller's work with a progress
	// goroutine only (forced either way by PEEL_MPI_PROGRESS); a job of
	// one process without MPI is the in-process engine.
	switch mode := os.Getenv("PEEL_MPI_PROGRESS"); {
	case !dist.MPIEnabled && dist.Overlapping(w):
		t.Errorf("the in-process world says its collectives overlap")
	case dist.MPIEnabled && mode != "" && dist.Overlapping(w) != (mode == "thread"):
		t.Errorf("PEEL_MPI_PROGRESS=%s but Overlapping is %v", mode, dist.Overlapping(w))
	}
	for _, dt := range []peel.DType{peel.Float64, peel.Float32, peel.Int64, peel.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			all := make([]*T, n)
			for k := range n {
				all[k] = rankData(k, n, dt)
			}
			f64 := func(x *T) *T { return peel.AsType(x, peel.Float64) }
			tol := 1e-12
			switch dt {
			case peel.Float32:
				tol = 1e-5
			case peel.BFloat16:
				// bfloat16 travels as its own bits over MPI, each step of
				// a reduction rounding to 8 bits of mantissa.
				tol = 1.0 / 64
			}
			sum := all[0]
			for _, a := range all[1:] {
				sum = peel.Add(sum, a)
			}
			near(t, "AllReduce(sum)", f64(w.AllReduce(all[r], dist.Sum)), f64(sum), tol)
			near(t, "AllReduce(max)", f64(w.AllReduce(all[r], dist.Max)), f64(peel.Max(peel.Stack(all, 0), 0)), 0)
			near(t, "AllGather", f64(w.AllGather(all[r])), f64(peel.Stack(all, 0)), 0)
			// ReduceScatter and AllToAll take n blocks: rank r's operand
			// stacked n times, scaled by the block index.
			blocks := func(k int) *T {
				bs := make([]*T, n)
				for j := range n {
					bs[j] = peel.Mul(all[k], int64(j+1))
				}
				return peel.Stack(bs, 0)
			}
			wantRS := peel.Mul(sum, int64(r+1))
			near(t, "ReduceScatter", f64(w.ReduceScatter(blocks(r))), f64(wantRS), tol)
			got := make([]*T, n)
			for k := range n {
				got[k] = peel.Mul(all[k], int64(r+1))
			}
			near(t, "AllToAll", f64(w.AllToAll(blocks(r))), f64(peel.Stack(got, 0)), 0)
			ring := make([][2]int, n)
			for k := range n {
				ring[k] = [2]int{k, (k + 1) % n}
			}
			near(t, "Permute (ring)", f64(w.Permute(all[r], ring)), f64(all[(r+n-1)%n]), 0)
			for root := range n {
				x := all[r]
				got := w.Broadcast(x, root)
				near(t, fmt.Sprintf("Broadcast from %d", root), f64(got), f64(all[root]), 0)
				if got == x {
					t.Errorf("Broadcast returned its operand itself")
				}
				near(t, "Broadcast left its operand alone", f64(x), f64(rankData(r, n, dt)), 0)
			}
			// Non-blocking: two started before either is waited for,
			// waited for in the other order.
			r1 := w.IAllReduce(all[r], dist.Sum)
			r2 := w.IAllReduce(peel.Neg(all[r]), dist.Max)
			near(t, "IAllReduce(max)", f64(r2.Wait()), f64(peel.Max(peel.Stack(all, 0).Neg(), 0)), 0)
			near(t, "IAllReduce(sum)", f64(r1.Wait()), f64(sum), tol)
			near(t, "IAllReduce(sum) waited twice", f64(r1.Wait()), f64(sum), tol)
			near(t, "IAllReduce left its operand alone", f64(all[r]), f64(rankData(r, n, dt)), 0)
			// A blocking collective between a start and its Wait: the
			// started reduction goes first on every rank (deferred ones
			// run before the next collective).
			r4 := w.IAllReduce(all[r], dist.Sum)
			near(t, "AllGather after a start", f64(w.AllGather(all[r])), f64(peel.Stack(all, 0)), 0)
			near(t, "IAllReduce waited after an AllGather", f64(r4.Wait()), f64(sum), tol)
			// In place: the operand given up becomes the result.
			mine := peel.Clone(all[r])
			r3 := w.IAllReduceInPlace(mine, dist.Sum)
			near(t, "IAllReduceInPlace(sum)", f64(r3.Wait()), f64(sum), tol)
			if dist.MPIEnabled && n > 1 && r3.Wait() != mine {
				t.Errorf("IAllReduceInPlace of a whole tensor did not reduce in place")
			}
			// IAllGather: two started, a blocking collective between,
			// waited for in the other order.
			g1 := w.IAllGather(all[r])
			g2 := w.IAllGather(peel.Neg(all[r]))
			near(t, "AllReduce after two IAllGathers", f64(w.AllReduce(all[r], dist.Sum)), f64(sum), tol)
			near(t, "IAllGather (second)", f64(g2.Wait()), f64(peel.Neg(peel.Stack(all, 0))), 0)
			near(t, "IAllGather (first)", f64(g1.Wait()), f64(peel.Stack(all, 0)), 0)
			near(t, "IAllGather waited twice", f64(g1.Wait()), f64(peel.Stack(all, 0)), 0)
			near(t, "IAllGather left its operand alone", f64(all[r]), f64(rankData(r, n, dt)), 0)
			view := peel.Narrow(peel.Concat([]*T{all[r], all[r]}, 0), 0, n, n)
			near(t, "IAllReduceInPlace of a view", f64(w.IAllReduceInPlace(view, dist.Sum).Wait()), f64(sum), tol)
			w.Barrier()
		})
	}
	// Operands that are views (an offset into a buffer, a transpose)
	// and dtypes that travel converted (f16 as f32, bool as u8).
	t.Run("views-and-converted", func(t *testing.T) {
		big := rankData(r, n+2, peel.Float64) // [n+2, 3]
		want := peel.Narrow(rankData(0, n+2, peel.Float64), 0, 1, n)
		for k := 1; k < n; k++ {
			want = peel.Add(want, peel.Narrow(rankData(k, n+2, peel.Float64), 0, 1, n))
		}
		near(t, "AllReduce(offset view)", w.AllReduce(peel.Narrow(big, 0, 1, n), dist.Sum), want, 1e-12)
		near(t, "AllReduce(transpose)", w.AllReduce(peel.Transpose(peel.Narrow(big, 0, 1, n)), dist.Sum), peel.Transpose(want), 1e-12)
		h := w.AllReduce(peel.AsType(peel.Narrow(big, 0, 1, n), peel.Float16), dist.Sum)
		if h.DType() != peel.Float16 {
			t.Errorf("AllReduce of f16 gave %s", h.TypeString())
		}
		near(t, "AllReduce(f16)", peel.AsType(h, peel.Float64), want, 1e-2*float64(n))
		// The max of the ranks' masks: the elements where any rank's
		// value passes the threshold.
		thr := 0.5 + float64(n-1)
		anyAbove := peel.Greater(peel.Narrow(rankData(0, n+2, peel.Float64), 0, 1, n), thr)
		for k := 1; k < n; k++ {
			anyAbove = peel.LogicalOr(anyAbove, peel.Greater(peel.Narrow(rankData(k, n+2, peel.Float64), 0, 1, n), thr))
		}
		b := w.AllReduce(peel.Greater(peel.Narrow(big, 0, 1, n), thr), dist.Max)
		near(t, "AllReduce(bool, max)", peel.AsType(b, peel.Float64), peel.AsType(anyAbove, peel.Float64), 0)
	})
	if s := fmt.Sprint(dist.World().Size()); s != fmt.Sprint(n) {
		t.Fatalf("World changed size: %s", s)
	}
}

// TestWorldSplit: the job's processes split by the parity of their rank
// (key: the rank reversed) reduce within their group only, ranked by
// key; an in-process communicator and a negative color are *peel.Error.
func TestWorldSplit(t *testing.T) {
	w := dist.World()
	r, n := w.Rank(), w.Size()
	sub := dist.Split(w, r%2, -r)
	var members []int
	for k := n - 1; k >= 0; k-- {
		if k%2 == r%2 {
			members = append(members, k)
		}
	}
	if sub.Size() != len(members) || members[sub.Rank()] != r {
		t.Fatalf("rank %d: in a group of %d as member %d, want %d as member of %v", r, sub.Size(), sub.Rank(), len(members), members)
	}
	sum := 0.0
	for _, k := range members {
		sum += float64(k)
	}
	if got := sub.AllReduce(peel.FromFloat64s([]float64{float64(r)}), dist.Sum).Float64s()[0]; got != sum {
		t.Fatalf("rank %d: the group's sum is %v, want %v", r, got, sum)
	}
	if err := peel.Catch(func() { dist.Split(w, -1, 0) }); err == nil || !strings.Contains(err.Error(), "color -1 is negative") {
		t.Fatalf("negative color: got %v", err)
	}
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	mesh.RunDevices(func(dv *dist.Device) {
		if err := peel.Catch(func() { dist.Split(dv.Comm("data"), 0, 0) }); err == nil || !strings.Contains(err.Error(), "cannot split") {
			t.Errorf("in-process Split: got %v", err)
		}
	})
}
