package interp

import "github.com/peel-ml/peel/backend"

// Int32s returns a copy of the elements of an int32 tensor.
// It panics with *Error if t is not an int32 tensor or is a tracer.
func (t *Tensor) Int32s() []int32 {
	t.checkRead("Int32s", Int32)
	return t.host("Int32s").([]int32)
}

// Uint8s returns a copy of the elements of a uint8 tensor.
// It panics with *Error if t is not a uint8 tensor or is a tracer.
func (t *Tensor) Uint8s() []uint8 {
	t.checkRead("Uint8s", Uint8)
	return t.host("Uint8s").([]uint8)
}

// widened returns the elements of a float16 or bfloat16 tensor widened
// exactly to float32.
func (t *Tensor) widened(op string) []float32 {
	var out []float32
	switch h := t.host(op).(type) {
	case []backend.F16:
		out = make([]float32, len(h))
		for i, v := range h {
			out[i] = v.Float32()
		}
	case []backend.BF16:
		out = make([]float32, len(h))
		for i, v := range h {
			out[i] = v.Float32()
		}
	}
	return out
}

// storageItem returns the one element of a host slice of a storage
// dtype as a float64, and whether h is one.
func storageItem(h any) (float64, bool) {
	switch v := h.(type) {
	case []int32:
		return float64(v[0]), true
	case []uint8:
		return float64(v[0]), true
	case []backend.F16:
		return v[0].Float64(), true
	case []backend.BF16:
		return v[0].Float64(), true
	}
	return 0, false
}
