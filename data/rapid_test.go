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

// Property: ShardBatches gives every member of a job the same number of
// batches of the same sizes; the members' examples together are every
// example of the shared order, each once, when size divides n; padded
// (each example at least once, the extra ones the order's first) or,
// with dropLast, its tail left out (each at most once) otherwise; and a
// member's share is the order dealt out in turn.
func TestShardBatchesDealEvenly(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		size := rapid.IntRange(1, 5).Draw(rt, "size")
		bs := rapid.IntRange(1, 12).Draw(rt, "batch")
		drop := rapid.Bool().Draw(rt, "dropLast")
		key := peel.Key(int64(rapid.IntRange(0, 1000).Draw(rt, "seed")))
		rows := make([]float64, n)
		for i := range rows {
			rows[i] = float64(i)
		}
		x := peel.FromFloat64s(rows, n, 1)
		order := Shuffle(key, n)
		count := map[int]int{}
		var sizes [][]int
		for r := range size {
			var mine []int
			var bsizes []int
			for b := range ShardBatches(key, bs, r, size, drop, x) {
				v := b[0].Float64s()
				bsizes = append(bsizes, len(v))
				for _, e := range v {
					mine = append(mine, int(e))
					count[int(e)]++
				}
			}
			for j, e := range mine {
				if k := r + j*size; e != order[k%n] {
					rt.Fatalf("member %d example %d is %d, want the order's %d-th, %d", r, j, e, k, order[k%n])
				}
			}
			sizes = append(sizes, bsizes)
		}
		for r := 1; r < size; r++ {
			if !slices.Equal(sizes[r], sizes[0]) {
				rt.Fatalf("member %d's batches %v, member 0's %v", r, sizes[r], sizes[0])
			}
		}
		per := (n + size - 1) / size
		if drop {
			per = n / size
		}
		want := NumBatches(per, bs, drop)
		if len(sizes[0]) != want {
			rt.Fatalf("%d batches, want %d", len(sizes[0]), want)
		}
		for e := range n {
			switch c := count[e]; {
			case n%size == 0 && !drop && c != 1:
				rt.Fatalf("example %d dealt %d times, want once", e, c)
			case drop && c > 1, !drop && c < 1:
				rt.Fatalf("example %d dealt %d times (dropLast %v)", e, c, drop)
			}
		}
	})
}

func TestShardBatchesErrors(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3}, 3)
	for _, c := range [][2]int{{-1, 2}, {2, 2}, {0, 0}} {
		err := peel.Catch(func() { ShardBatches(nil, 1, c[0], c[1], false, x) })
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("data.ShardBatches")) {
			t.Fatalf("rank %d of %d: got %v, want a *peel.Error naming data.ShardBatches", c[0], c[1], err)
		}
	}
	if err := peel.Catch(func() { ShardBatches(nil, 0, 0, 1, false, x) }); err == nil {
		t.Fatalf("batch size 0: no error")
	}
}
