package dist_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

// inGoroutine runs f in a goroutine of its own and returns its result,
// re-panicking here with what f panicked with.
func inGoroutine(f func() *T) *T {
	var r *T
	var p any
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { p = recover() }()
		r = f()
	}()
	wg.Wait()
	if p != nil {
		panic(p)
	}
	return r
}

// TestCollectivesInGoroutines: a collective in a goroutine the function
// starts inside Vmap(f, AxisName("i")) finds the axis through its
// operand's levels, as every other primitive finds its level: each
// collective, forward and forward mode, equals the same function without
// the goroutine, and so does the whole per-lane gradient when the
// goroutine is started through dist.WithAxes (the backward pass applies
// collectives to cotangents that do not vary along the axis, which find
// it through the goroutine). Only AxisIndex, which has no operand, needs
// WithAxes.
func TestCollectivesInGoroutines(t *testing.T) {
	xs := data(0.3, 4, 8, 4)
	dir := data(1.1, 4, 8, 4)
	named := transforms.AxisName("i")
	for _, c := range collectiveCases() {
		t.Run(c.name, func(t *testing.T) {
			want := transforms.Vmap(c.f, named)(xs)
			wrap := func(x *T) *T { return inGoroutine(func() *T { return c.f(x) }) }
			if c.name == "AxisIndex" {
				if err := peel.Catch(func() { transforms.Vmap(wrap, named)(xs) }); err == nil || !strings.Contains(err.Error(), "dist.WithAxes") {
					t.Errorf("AxisIndex in a goroutine of its own: %v, want an error naming dist.WithAxes", err)
				}
				wrap = func(x *T) *T {
					var r *T
					done := make(chan struct{})
					go dist.WithAxes(func() { defer close(done); r = c.f(x) })()
					<-done
					return r
				}
			}
			near(t, "in a goroutine", transforms.Vmap(wrap, named)(xs), want, 0)
			// Forward mode in the goroutine.
			jvp := func(x, d *T) *T {
				_, tt := transforms.JVP(c.f, x, d)
				return tt
			}
			_, wantT := transforms.JVP(transforms.Vmap(c.f, named), xs, dir)
			gotT := transforms.Vmap2(func(x, d *T) *T {
				if c.name == "AxisIndex" {
					return jvp(x, d)
				}
				return inGoroutine(func() *T { return jvp(x, d) })
			}, named)(xs, dir)
			near(t, "JVP in a goroutine", gotT, wantT, 1e-14)
			// The per-lane gradient in a goroutine started with WithAxes.
			loss := func(x *T) *T { return c.f(x.Tanh()).Sin().Sum() }
			wantG := transforms.Vmap(transforms.Grad(loss), named)(xs)
			gotG := transforms.Vmap(func(x *T) *T {
				var r *T
				var p any
				done := make(chan struct{})
				go dist.WithAxes(func() {
					defer close(done)
					defer func() { p = recover() }()
					r = transforms.Grad(loss)(x)
				})()
				<-done
				if p != nil {
					panic(p)
				}
				return r
			}, named)(xs)
			near(t, "Grad in a goroutine started with WithAxes", gotG, wantG, 1e-14)
		})
	}
}

// TestCollectivesInGoroutinesShardMap: inside ShardMap's function the
// mesh's axis names live on the level of the body's trace, so a
// goroutine the function starts applies collectives over them as the
// function itself does.
func TestCollectivesInGoroutinesShardMap(t *testing.T) {
	x := data(0.1, 8, 6)
	m := dist.NewMesh(dist.MeshAxis("data", 4))
	f := func(x *T) *T { return dist.Psum(x.Square().Sum(), "data") }
	g := func(x *T) *T { return dist.AllGather(x.Mul(2), "data", dist.Tiled()) }
	for _, c := range []struct {
		name string
		f    func(*T) *T
		out  dist.Spec
	}{{"Psum", f, dist.P()}, {"AllGather", g, dist.P()}} {
		want := transforms.ShardMap(c.f, m, dist.P("data"), c.out)(x)
		got := transforms.ShardMap(func(x *T) *T { return inGoroutine(func() *T { return c.f(x) }) }, m, dist.P("data"), c.out)(x)
		near(t, fmt.Sprintf("%s in a goroutine inside ShardMap", c.name), got, want, 0)
	}
}
