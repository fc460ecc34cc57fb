package compiler

import (
	"math"

	"github.com/peel-ml/peel/backend"
)

// SetPoison makes every run fill the buffers it writes (arena, outputs,
// block buffers) with garbage first: NaN for floats, a large pattern for
// integers, true for bools.
func SetPoison(on bool) {
	if !on {
		poison.Store(nil)
		return
	}
	f := func(be backend.Backend, b backend.Buffer) {
		n := b.Len()
		var src any
		switch b.DType() {
		case backend.Float64:
			d := make([]float64, n)
			for i := range d {
				d[i] = math.NaN()
			}
			src = d
		case backend.Float32:
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(math.NaN())
			}
			src = d
		case backend.Int64:
			d := make([]int64, n)
			for i := range d {
				d[i] = -0x5a5a5a5a5a5a5a5a
			}
			src = d
		case backend.Bool:
			d := make([]bool, n)
			for i := range d {
				d[i] = true
			}
			src = d
		default: // storage dtypes: NaN or a pattern of alternating bits
			src = backend.HostFill(math.NaN(), b.DType(), n)
			if b.DType().IsInteger() {
				src = backend.HostFillInt(-0x5a5a5a5a5a5a5a5a, b.DType(), n)
			}
		}
		be.Copy(backend.Array{Buf: b, Shape: []int{n}}, backend.Array{Buf: be.FromHost(src), Shape: []int{n}})
	}
	poison.Store(&f)
}

// DirectCalls returns how many kernel calls of p were resolved to direct
// kernels at Build (backend.KernelResolver).
func DirectCalls(p *Program) int {
	n := 0
	for _, in := range p.instrs {
		if in.direct != nil {
			n++
		}
		if in.group != nil {
			for _, m := range in.group.members {
				if m.direct != nil {
					n++
				}
			}
		}
	}
	return n
}

// SplatVariants returns how many variants of p for broadcast inputs were
// built.
func SplatVariants(p *Program) int { return int(p.nSplats.Load()) }
