// Package checkpoint saves and loads trees of tensors — parameters,
// optimizer states, batch-norm running statistics, any tree peel's
// transforms accept — as safetensors files, the format Hugging Face,
// torch and JAX users exchange weights in:
//
//	err := checkpoint.Save("model.safetensors", params)
//	params, err = checkpoint.Load("model.safetensors", params) // like: the structure, shapes and dtypes expected
//
// A safetensors file is an 8-byte little-endian header length, a JSON
// header mapping each tensor's name to its dtype, shape and byte range,
// and the tensors' bytes, row-major and little-endian. A leaf's name is
// its tree path without the leading dot ("L1.W", "[0].b", `["k"]`), and
// the header's "__metadata__" records the format ("peel"), its version
// and peel's. Every peel dtype has its safetensors name (F64, F32, F16,
// BF16, I64, I32, U8, BOOL).
//
// Save writes a temporary file next to the target, syncs it and renames
// it over the target, so a crash never leaves a partial checkpoint in
// place of a good one. Load reads each tensor from the file straight
// into the tensor's memory (one copy, never the whole file), after
// checking the header against like: every missing, extra, mis-shaped or
// mistyped leaf is reported by path in one *peel.Error. Read loads a
// file whatever its names (a torch state_dict saved with safetensors).
// Malformed files — a header longer than the file, offsets outside the
// data, overlapping or missing bytes, unknown dtypes — are errors, never
// panics or allocations beyond the file's size.
package checkpoint
