//go:build !amd64 || purego

package cpu

// scaleRow32 and scaleRow64 are scaleRow (dot_batched_amd64.go has the
// assembly forms).
func scaleRow32(d, v []float32, s float32) { scaleRow(d, v, s) }
func scaleRow64(d, v []float64, s float64) { scaleRow(d, v, s) }
