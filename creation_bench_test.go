package peel_test

import (
	"testing"

	"github.com/peel-ml/peel"
)

// BenchmarkFullLarge fills fresh 1 GiB tensors of several dtypes, page
// faults included (issue 43, item 10: a fill of 8.6e9 bools took 33 s
// against numpy's 19 s). Each iteration allocates anew, as a user's Full
// does; the reported rate counts the bytes written:
//
//	go test -run '^$' -bench FullLarge -benchtime 5x .
func BenchmarkFullLarge(b *testing.B) {
	for _, c := range []struct {
		name string
		dt   peel.DType
	}{{"bool", peel.Bool}, {"u8", peel.Uint8}, {"f16", peel.Float16}, {"f32", peel.Float32}, {"f64", peel.Float64}} {
		b.Run(c.name, func(b *testing.B) {
			n := (1 << 30) / c.dt.Size()
			b.SetBytes(1 << 30)
			for b.Loop() {
				peel.Full(c.dt, 1, n)
			}
		})
	}
}
