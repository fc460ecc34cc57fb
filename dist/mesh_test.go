package dist_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

// TestMeshCollectives: on the devices of an in-process mesh each
// collective gives what it gives under a Vmap of as many lanes with the
// same axis name (the semantics are the same; here goroutines exchange
// their values), for 1-D and 2-D meshes.
func TestMeshCollectives(t *testing.T) {
	xs := data(0.3, 4, 8, 4)
	for _, c := range collectiveCases() {
		t.Run(c.name, func(t *testing.T) {
			want := transforms.Vmap(c.f, transforms.AxisName("i"))(xs)
			m := dist.NewMesh(dist.MeshAxis("i", 4))
			got := make([]*T, 4)
			m.Run(func(d int) { got[d] = c.f(peel.Select(xs, 0, d)) })
			for d := range 4 {
				near(t, fmt.Sprintf("device %d", d), got[d], peel.Select(want, 0, d), 0)
			}
		})
	}
	// A 2-D mesh: collectives along each axis, and over both.
	m := dist.NewMesh(dist.MeshAxis("a", 2), dist.MeshAxis("b", 3))
	ys := data(0.8, 2, 3, 5)
	type res struct{ a, b, ab, idx *T }
	got := make([]res, 6)
	m.Run(func(d int) {
		c := m.Coords(d)
		y := peel.Select(peel.Select(ys, 0, c[0]), 0, c[1])
		got[d] = res{dist.Psum(y, "a"), dist.Psum(y, "b"), dist.Psum(y, "a", "b"), dist.AxisIndex("a").Mul(10).Add(dist.AxisIndex("b"))}
	})
	for d := range 6 {
		c := m.Coords(d)
		near(t, "Psum(a)", got[d].a, peel.Select(peel.Sum(ys, 0), 0, c[1]), 1e-15)
		near(t, "Psum(b)", got[d].b, peel.Select(peel.Sum(ys, 1), 0, c[0]), 1e-15)
		near(t, "Psum(a, b)", got[d].ab, peel.Sum(ys, 0, 1), 1e-14)
		if v := got[d].idx.Item(); v != float64(10*c[0]+c[1]) {
			t.Errorf("device %d: AxisIndex %v", d, v)
		}
	}
}

// TestMeshDeterministic: the same reduction on every run and every
// device, bit for bit.
func TestMeshDeterministic(t *testing.T) {
	m := dist.NewMesh(dist.MeshAxis("i", 3))
	var first []float64
	for run := range 5 {
		out := make([]*T, 3)
		m.Run(func(d int) { out[d] = dist.Psum(data(float64(d), 1000), "i") })
		for d := range 3 {
			v := out[d].Float64s()
			if first == nil {
				first = v
			}
			for k := range v {
				if v[k] != first[k] {
					t.Fatalf("run %d device %d element %d: %v, want %v", run, d, k, v[k], first[k])
				}
			}
		}
	}
}

// TestMeshFailures: a device that panics, devices whose programs diverge
// and values that disagree in shape end with an error on Run that names
// the device, never a hang.
func TestMeshFailures(t *testing.T) {
	m := dist.NewMesh(dist.MeshAxis("i", 4))
	for _, c := range []struct {
		name string
		fn   func(d int)
		want []string
	}{
		{"a device panics", func(d int) {
			if d == 2 {
				panic("boom")
			}
			dist.Psum(data(1, 3), "i")
		}, []string{"device 2", "boom"}},
		{"a device panics with *peel.Error", func(d int) {
			if d == 1 {
				peel.Add(data(1, 3), data(1, 4))
			}
			dist.Psum(data(1, 3), "i")
			dist.Psum(data(1, 3), "i")
		}, []string{"device 1", "peel.Add"}},
		{"a device skips a collective", func(d int) {
			if d != 3 {
				dist.Psum(data(1, 3), "i")
			}
		}, []string{"finished without calling it"}},
		{"shapes disagree", func(d int) { dist.Psum(data(1, 3+d%2), "i") }, []string{"must agree in shape", "f64[3]", "f64[4]"}},
		{"collectives disagree", func(d int) {
			if d == 0 {
				dist.Pmax(data(1, 3), "i")
			} else {
				dist.Psum(data(1, 3), "i")
			}
		}, []string{"diverge"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- peel.Catch(func() { m.Run(c.fn) }) }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%q does not say %q", err, w)
					}
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run hangs")
			}
		})
	}
}

// TestMeshStress: many rounds of collectives on every device, with one
// device failing at a random round, never deadlock (run under -race).
func TestMeshStress(t *testing.T) {
	m := dist.NewMesh(dist.MeshAxis("a", 2), dist.MeshAxis("b", 2))
	var mu sync.Mutex
	for trial := range 20 {
		fail := trial % 7 // the round device 1 fails at; 6 means never
		err := peel.Catch(func() {
			m.Run(func(d int) {
				x := data(float64(d), 16)
				for round := range 6 {
					if d == 1 && round == fail {
						panic(fmt.Sprintf("trial %d", trial))
					}
					x = dist.Psum(x, "a").Div(2)
					x = dist.Ppermute(x, "b", [][2]int{{0, 1}, {1, 0}})
				}
			})
		})
		mu.Lock()
		if (fail < 6) != (err != nil) {
			t.Errorf("trial %d (device 1 fails at round %d): error %v", trial, fail, err)
		}
		mu.Unlock()
	}
}

// TestOverlapping: the in-process engine completes a started collective
// at once, so it does not overlap; a Communicator of another
// implementation (here one wrapping it) is taken to.
func TestOverlapping(t *testing.T) {
	dist.NewMesh(dist.MeshAxis("data", 2)).RunDevices(func(dv *dist.Device) {
		c := dv.Comm("data")
		if dist.Overlapping(c) {
			t.Errorf("the in-process engine says its collectives overlap")
		}
		if !dist.Overlapping(struct{ dist.Communicator }{c}) {
			t.Errorf("a communicator of another implementation is not taken to overlap")
		}
	})
}

// TestCommBroadcast: every member of an in-process axis gets the root's
// value, a fresh tensor, whichever member is the root; a root outside
// the axis and a member passing another shape are *peel.Error.
func TestCommBroadcast(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 3))
	for root := range 3 {
		got := make([]*peel.Tensor, 3)
		mesh.RunDevices(func(dv *dist.Device) {
			x := peel.FromFloat64s([]float64{float64(dv.Index), 10 + float64(dv.Index)})
			got[dv.Index] = dv.Comm("data").Broadcast(x, root)
		})
		for d, g := range got {
			if v := g.Float64s(); v[0] != float64(root) || v[1] != 10+float64(root) {
				t.Fatalf("device %d got %v from root %d", d, v, root)
			}
		}
	}
	for _, c := range []struct {
		name, want string
		f          func(dv *dist.Device)
	}{
		{"root out of range", "Broadcast from member 3 of a communicator of 3", func(dv *dist.Device) {
			dv.Comm("data").Broadcast(peel.Zeros(peel.Float64, 2), 3)
		}},
		{"shapes differ", "rank 0 has f64[2] but rank 1 has f64[3]", func(dv *dist.Device) {
			dv.Comm("data").Broadcast(peel.Zeros(peel.Float64, 2+dv.Index), 0)
		}},
	} {
		err := peel.Catch(func() { mesh.RunDevices(c.f) })
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Error(), c.want) {
			t.Fatalf("%s: got %v, want a *peel.Error with %q", c.name, err, c.want)
		}
	}
}
