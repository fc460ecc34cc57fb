//go:build amd64 && !purego

package cpu

// scaleRow32 and scaleRow64 are scaleRow with the assembly kernels on
// long rows. A row of at most simdChunk elements is one short assembly
// call, made directly: the caller's loop over rows is preemptible, so
// the chunking of mulVS32Vec (and its two calls' overhead on each of the
// many short rows of an outer product) is not needed.
func scaleRow32(d, v []float32, s float32) {
	if !haveSIMD || len(d) < outerSIMD || len(d) > simdChunk {
		if haveSIMD && len(d) > simdChunk {
			mulVS32Vec(d, v, s)
			return
		}
		scaleRow(d, v, s)
		return
	}
	v = v[:len(d)]
	n := len(d) &^ 7
	mulVS32AVX2(d[:n], v[:n], s)
	scaleRow(d[n:], v[n:], s)
}

func scaleRow64(d, v []float64, s float64) {
	if !haveSIMD || len(d) < outerSIMD || len(d) > simdChunk {
		if haveSIMD && len(d) > simdChunk {
			mulVS64Vec(d, v, s)
			return
		}
		scaleRow(d, v, s)
		return
	}
	v = v[:len(d)]
	n := len(d) &^ 7
	mulVS64AVX2(d[:n], v[:n], s)
	scaleRow(d[n:], v[n:], s)
}
