//go:build !race

package cpu

import (
	"testing"

	"github.com/peel-ml/peel/backend"
)

// TestBufferAllocs: a small buffer is one allocation, from Alloc or
// FromHost (header and elements together), a larger one two (header and
// elements); AdoptHost allocates only the header; a buffer the cache
// hands out again allocates nothing (its header is reused with it).
// (Not under the race detector, whose instrumentation allocates.)
func TestBufferAllocs(t *testing.T) {
	be := New()
	for _, c := range []struct {
		dt   backend.DType
		n    int
		want float64
	}{
		{backend.Float32, 0, 1}, {backend.Float32, 1, 1}, {backend.Float32, 16, 1}, {backend.Float32, smallMax, 1},
		{backend.Float32, smallMax + 1, 2}, {backend.Float64, 8, 1}, {backend.Float64, 16, 1}, {backend.Float64, 17, 2},
		{backend.Bool, smallMax, 1}, {backend.Int64, 3, 1}, {backend.Float16, 5, 1}, {backend.Uint8, 1000, 2},
	} {
		if got := testing.AllocsPerRun(100, func() { sinkBuf = be.Alloc(c.dt, c.n) }); got != c.want {
			t.Errorf("Alloc(%v, %d): %v allocations, want %v", c.dt, c.n, got, c.want)
		}
	}
	var small, large any = make([]float32, 16), make([]float32, 1000)
	for _, c := range []struct {
		name string
		f    func()
		want float64
	}{
		{"FromHost(f32[16])", func() { sinkBuf = be.FromHost(small) }, 1},
		{"FromHost(f32[1000])", func() { sinkBuf = be.FromHost(large) }, 2},
		{"AdoptHost(f32[16])", func() { sinkBuf = be.AdoptHost(small) }, 1},
		{"AllocUninit and Recycle of f32[2048]", func() {
			buf, cached := be.AllocUninit(backend.Float32, 2048)
			if cached {
				be.Recycle(buf)
			}
		}, 0},
	} {
		if got := testing.AllocsPerRun(100, c.f); got != c.want {
			t.Errorf("%s: %v allocations, want %v", c.name, got, c.want)
		}
	}
}
