//go:build amd64 && !purego

package cpu

// scaleRow32 and scaleRow64 are scaleRow with the assembly kernels on
// long rows. A row of at most simdChunk elements is one short assembly
// call, made directly: the caller's loop over rows is preemptible, so
// the chunking of mulVS32Vec (and its two calls' overhead on each of the
// many short rows of an outer product) is not needed.
func scaleRow32(d, v []float32, s float32) {
	switch {
	case !haveSIMD || len(d) < outerSIMD:
		scaleRow(d, v, s)
	case len(d) > simdChunk:
		mulVS32Vec(d, v, s)
	default:
		v = v[:len(d)]
		n := len(d) &^ 7
		mulVS32AVX2(d[:n], v[:n], s)
		scaleRow(d[n:], v[n:], s)
	}
}

func scaleRow64(d, v []float64, s float64) {
	switch {
	case !haveSIMD || len(d) < outerSIMD:
		scaleRow(d, v, s)
	case len(d) > simdChunk:
		mulVS64Vec(d, v, s)
	default:
		v = v[:len(d)]
		n := len(d) &^ 7
		mulVS64AVX2(d[:n], v[:n], s)
		scaleRow(d[n:], v[n:], s)
	}
}
