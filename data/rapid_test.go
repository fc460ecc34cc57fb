package data

import (
	"bytes"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"pgregory.net/rapid"
)

// Property: for any number of rows, batch size, dropLast and key, the
// batches partition the rows (each at most once, all of them unless
// dropped from the tail), batches are full except the last, and the
// count is NumBatches.
func TestBatchesPartition(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		bs := rapid.IntRange(1, 45).Draw(rt, "batch")
		drop := rapid.Bool().Draw(rt, "dropLast")
		seed := rapid.Int64().Draw(rt, "seed")
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i)
		}
		x := peel.FromInt64s(v)
		var rows []int64
		count := 0
		for b := range Batches(peel.Key(seed), bs, drop, x) {
			m := b[0].Shape()[0]
			if m == 0 || m > bs || (drop && m != bs) {
				rt.Fatalf("batch of %d rows (size %d, dropLast %v)", m, bs, drop)
			}
			if m < bs && len(rows)+m != n {
				rt.Fatalf("a short batch before the end")
			}
			rows = append(rows, b[0].Int64s()...)
			count++
		}
		if count != NumBatches(n, bs, drop) {
			rt.Fatalf("%d batches, want %d", count, NumBatches(n, bs, drop))
		}
		want := n
		if drop {
			want = n / bs * bs
		}
		slices.Sort(rows)
		if len(rows) != want || len(slices.Compact(slices.Clone(rows))) != want {
			rt.Fatalf("rows %v: want %d distinct", rows, want)
		}
		if !drop && !slices.Equal(rows, v) {
			rt.Fatalf("rows %v do not cover every row", rows)
		}
	})
}

// Property: WriteNPY then ReadNPY is the identity for any supported
// dtype and shape.
func TestNPYRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		shape := rapid.SliceOfN(rapid.IntRange(0, 4), 0, 4).Draw(rt, "shape")
		n := 1
		for _, d := range shape {
			n *= d
		}
		var x *peel.Tensor
		switch rapid.IntRange(0, 3).Draw(rt, "dtype") {
		case 0:
			x = peel.FromFloat64s(rapid.SliceOfN(rapid.Float64(), n, n).Draw(rt, "v"), shape...)
		case 1:
			x = peel.FromFloat32s(rapid.SliceOfN(rapid.Float32(), n, n).Draw(rt, "v"), shape...)
		case 2:
			x = peel.FromInt64s(rapid.SliceOfN(rapid.Int64(), n, n).Draw(rt, "v"), shape...)
		default:
			x = peel.FromBools(rapid.SliceOfN(rapid.Bool(), n, n).Draw(rt, "v"), shape...)
		}
		var buf bytes.Buffer
		if err := WriteNPY(&buf, x); err != nil {
			rt.Fatal(err)
		}
		if hdr := bytes.IndexByte(buf.Bytes(), '\n') + 1; hdr%64 != 0 {
			rt.Fatalf("data start at byte %d, not a multiple of 64", hdr)
		}
		y, err := ReadNPY(&buf)
		if err != nil {
			rt.Fatal(err)
		}
		if y.DType() != x.DType() || !slices.Equal(y.Shape(), x.Shape()) || y.String() != x.String() {
			rt.Fatalf("round trip of %v gave %v", x, y)
		}
		if buf.Len() != 0 {
			rt.Fatalf("%d bytes left unread", buf.Len())
		}
	})
}
