package optest

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// Tolerances of the storage float dtypes: results are computed in f32
// and rounded once per op, so they are within one unit in the last place
// of the correctly rounded value (2⁻¹⁰ relative for f16, 2⁻⁷ for bf16),
// which these bound.
const (
	Float16Tol  = 1e-3
	BFloat16Tol = 8e-3
)

// storageHost reads a tensor of a storage dtype (i32, u8, f16, bf16).
func storageHost(t *peel.Tensor) []float64 {
	var out []float64
	switch t.DType() {
	case peel.Int32:
		for _, v := range t.Int32s() {
			out = append(out, float64(v))
		}
	case peel.Uint8:
		for _, v := range t.Uint8s() {
			out = append(out, float64(v))
		}
	case peel.Float16, peel.BFloat16:
		for _, v := range t.Float32s() {
			out = append(out, float64(v))
		}
	}
	return out
}

// storageTensor makes a tensor of a storage dtype from h, whose values
// are converted as Round converts them.
func storageTensor(h Host) *peel.Tensor {
	switch h.DType {
	case peel.Int32:
		d := make([]int32, len(h.Data))
		for i, v := range h.Data {
			d[i] = int32(int64(v))
		}
		return peel.FromInt32s(d, h.Shape...)
	case peel.Uint8:
		d := make([]uint8, len(h.Data))
		for i, v := range h.Data {
			d[i] = uint8(int64(v))
		}
		return peel.FromUint8s(d, h.Shape...)
	}
	d := make([]float64, len(h.Data))
	copy(d, h.Data)
	return peel.AsType(peel.FromFloat64s(d, h.Shape...), h.DType)
}

// roundStorage rounds v to a storage dtype as the tensor would store it:
// integers wrap around (v must be an integer), floats round to nearest
// even.
func roundStorage(d peel.DType, v float64) float64 {
	switch d {
	case peel.Int32:
		return float64(int32(int64(v)))
	case peel.Uint8:
		return float64(uint8(int64(v)))
	case peel.Float16:
		return backend.F16FromFloat64(v).Float64()
	case peel.BFloat16:
		return backend.BF16FromFloat64(v).Float64()
	}
	return v
}

// storageOps are the registry entries whose samples also run in the
// storage dtypes (by exact name, or by prefix for names ending in "/"):
// elementwise arithmetic, comparisons, reductions, a matmul and shape
// ops, so that every sweep runs i32, u8, f16 and bf16 under every
// transform.
var storageOps = []string{
	"peel.Add", "peel.Sub", "peel.Mul", "peel.Div", "peel.Neg", "peel.Abs", "peel.Square", "peel.Maximum", "peel.Minimum",
	"peel.Exp", "peel.Tanh", "peel.Sqrt", "peel.Sin", "peel.Floor", "peel.Round", "peel.Clip/[-1,2]",
	"peel.Equal", "peel.Less", "peel.GreaterEqual", "peel.Where", "peel.AsType/", "peel.BitwiseAnd",
	"peel.Sum/", "peel.Max/", "peel.Mean/", "peel.ArgMax/", "peel.Cumsum/", "peel.MatMul",
	"peel.Transpose", "peel.Reshape/", "peel.Concat/", "peel.Flip/", "peel.Pad/", "peel.Index/", "linalg.MatrixExp",
}

// storageVariants are the conversions storage samples are made by: every
// operand of the first dtype (the others being bool) converted to the
// second.
var storageVariants = [][2]peel.DType{
	{peel.Float32, peel.Float16}, {peel.Float32, peel.BFloat16}, {peel.Int64, peel.Int32}, {peel.Int64, peel.Uint8},
}

// noUint8 are entries whose Go scalar operands uint8 cannot hold.
var noUint8 = map[string]bool{"peel.Clip/[-1,2]": true}

func storageSelected(name string) bool {
	for _, s := range storageOps {
		if name == s || s[len(s)-1] == '/' && len(name) > len(s) && name[:len(s)] == s {
			return true
		}
	}
	return false
}

// withStorageSamples adds storage-dtype samples to the entries of
// storageOps.
func withStorageSamples(ops []Op) []Op {
	for i := range ops {
		if storageSelected(ops[i].Name) {
			ops[i] = storageVariant(ops[i])
		}
	}
	return ops
}

func storageVariant(op Op) Op {
	samples, ref := op.Samples, op.Ref
	op.Samples = func() []Sample {
		base := samples()
		out := base
		for _, s := range base {
			for _, v := range storageVariants {
				if v[1] == peel.Uint8 && noUint8[op.Name] {
					continue
				}
				if args, ok := convertSample(s.Args, v[0], v[1]); ok {
					out = append(out, Sample{Name: s.Name + "/" + v[1].String(), Args: args})
				}
			}
		}
		return out
	}
	if wideSum(op.Name) {
		// Sums of bytes are computed as i64 (see peel.Sum).
		op.Ref = func(a []Host) Host {
			b := append([]Host{}, a...)
			for i := range b {
				if b[i].DType == peel.Uint8 {
					b[i].DType = peel.Int64
				}
			}
			return ref(b)
		}
	}
	return op
}

func wideSum(name string) bool {
	for _, p := range []string{"peel.Sum/", "peel.Cumsum/"} {
		if len(name) >= len(p) && name[:len(p)] == p {
			return true
		}
	}
	return false
}

// convertSample returns args with every operand of dtype from converted
// to dtype to, when there is one and the others are bool.
func convertSample(args []*peel.Tensor, from, to peel.DType) ([]*peel.Tensor, bool) {
	found := false
	for _, a := range args {
		switch a.DType() {
		case from:
			found = true
		case peel.Bool:
		default:
			return nil, false
		}
	}
	if !found {
		return nil, false
	}
	out := make([]*peel.Tensor, len(args))
	for i, a := range args {
		out[i] = a
		if a.DType() == from {
			out[i] = peel.AsType(a, to)
		}
	}
	return out, true
}
