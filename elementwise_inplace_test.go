package peel

import (
	"runtime"
	"testing"

	"github.com/peel-ml/peel/interp"
)

func TestCopyIntoFill(t *testing.T) {
	y := Zeros(Float64, 2, 3)
	CopyInto(y, svF64([]float64{1, 2, 3}, 3)) // broadcast row
	svCheck(t, "CopyInto broadcast", y, []int{2, 3}, []float64{1, 2, 3, 1, 2, 3})
	CopyInto(y, svI64([]int64{7, 8}, 2, 1)) // converted and broadcast column
	svCheck(t, "CopyInto i64 into f64", y, []int{2, 3}, []float64{7, 7, 7, 8, 8, 8})
	CopyInto(y, 2.5)
	svCheck(t, "CopyInto scalar", y, []int{2, 3}, []float64{2.5, 2.5, 2.5, 2.5, 2.5, 2.5})

	yi := svI64([]int64{0, 0}, 2)
	CopyInto(yi, svF64([]float64{1.9, -2.7}, 2)) // float → int truncates
	svCheck(t, "CopyInto f64 into i64", yi, []int{2}, []float64{1, -2})
	yb := FromBools([]bool{false, true}, 2)
	CopyInto(yb, svF64([]float64{0, 3}, 2))
	svCheck(t, "CopyInto f64 into bool", yb, []int{2}, []float64{0, 1})

	r0 := svF64([]float64{1}, []int{}...)
	CopyInto(r0, Reshape(svF64([]float64{4}, 1, 1)))
	svCheck(t, "CopyInto rank 0", r0, []int{}, []float64{4})
	empty := Zeros(Float64, 0, 3)
	CopyInto(empty, svSeq(3))
	svCheck(t, "CopyInto empty", empty, []int{0, 3}, []float64{})

	// Overlapping source and destination (a shifted view of one buffer).
	z := svSeq(6)
	CopyInto(Narrow(z, 0, 1, 5), Narrow(z, 0, 0, 5))
	svCheck(t, "CopyInto overlapping", z, []int{6}, []float64{0, 0, 1, 2, 3, 4})
	// A reversed and a transposed view of the destination itself.
	z = svSeq(6)
	CopyInto(z, Flip(z, 0))
	svCheck(t, "CopyInto reversed self", z, []int{6}, []float64{5, 4, 3, 2, 1, 0})
	m := svSeq(3, 3)
	CopyInto(m, Transpose(m))
	svCheck(t, "CopyInto transposed self", m, []int{3, 3}, []float64{0, 3, 6, 1, 4, 7, 2, 5, 8})
	// Writing a snapshot's source keeps the snapshot's values.
	z = svSeq(4)
	snap := interp.OwnValue(z)
	CopyInto(z, Flip(z, 0))
	svCheck(t, "CopyInto after snapshot", z, []int{4}, []float64{3, 2, 1, 0})
	svCheck(t, "snapshot kept", snap, []int{4}, []float64{0, 1, 2, 3})

	if got := Fill(y, int64(3)); got != y {
		t.Fatal("Fill did not return its destination")
	}
	svCheck(t, "Fill", y, []int{2, 3}, []float64{3, 3, 3, 3, 3, 3})
	Fill(yi, 9.9)
	svCheck(t, "Fill i64", yi, []int{2}, []float64{9, 9})
	Fill(Select(y, 1, 0), svF64([]float64{-1}, []int{}...))
	svCheck(t, "Fill through Select", y, []int{2, 3}, []float64{-1, 3, 3, -1, 3, 3})

	svErr(t, "peel.CopyInto", func() { CopyInto(y, svSeq(2)) }, "cannot be broadcast")
	svErr(t, "peel.CopyInto", func() { CopyInto(y, svSeq(1, 2, 3)) }, "cannot be broadcast")
	svErr(t, "peel.CopyInto", func() { CopyInto(nil, 1.0) }, "nil")
	svErr(t, "peel.CopyInto", func() { CopyInto(y, "x") }, "string")
	svErr(t, "peel.CopyInto", func() { CopyInto(y, (*Tensor)(nil)) }, "nil")
	svErr(t, "peel.CopyInto", func() { CopyInto(BroadcastTo(svSeq(3), 2, 3), 1.0) }, "broadcast view")
	svErr(t, "peel.Fill", func() { Fill(y, svSeq(3)) }, "not a scalar")
	svErr(t, "peel.Fill", func() { Fill(BroadcastTo(svSeq(1), 4), 0) }, "broadcast view")
}

func TestArithInPlace(t *testing.T) {
	y := svSeq(2, 3)
	if got := AddInPlace(y, svF64([]float64{10, 20, 30}, 3)); got != y {
		t.Fatal("AddInPlace did not return its destination")
	}
	svCheck(t, "AddInPlace", y, []int{2, 3}, []float64{10, 21, 32, 13, 24, 35})
	SubInPlace(y, 1)
	svCheck(t, "SubInPlace", y, []int{2, 3}, []float64{9, 20, 31, 12, 23, 34})
	MulInPlace(y, svF64([]float64{2, -1}, 2, 1))
	svCheck(t, "MulInPlace", y, []int{2, 3}, []float64{18, 40, 62, -12, -23, -34})
	DivInPlace(y, 2)
	svCheck(t, "DivInPlace", y, []int{2, 3}, []float64{9, 20, 31, -6, -11.5, -17})
	AddInPlace(y, svI64([]int64{1, 1, 1}, 3)) // i64 source into f64 destination
	svCheck(t, "AddInPlace i64 source", y, []int{2, 3}, []float64{10, 21, 32, -5, -10.5, -16})

	yi := svI64([]int64{1, 2, 3}, 3)
	AddInPlace(yi, 2)
	MulInPlace(yi, svI64([]int64{3}, 1))
	SubInPlace(yi, FromBools([]bool{true, false, true}, 3))
	svCheck(t, "i64 in place", yi, []int{3}, []float64{8, 12, 14})

	y32 := FromFloat32s([]float32{1, 2}, 2)
	AddInPlace(y32, 0.5) // a Go float is weak: stays f32
	svCheck(t, "f32 += 0.5", y32, []int{2}, []float64{1.5, 2.5})

	// Through aliases: views of views see the write and write the base.
	base := Zeros(Float64, 3, 4)
	v := Narrow(Transpose(base), 0, 1, 2) // base[:, 1:3]^T, shape [2, 3]
	AddInPlace(v, svF64([]float64{1, 2, 3, 4, 5, 6}, 2, 3))
	svCheck(t, "AddInPlace through Narrow(Transpose)", base, []int{3, 4}, []float64{0, 1, 4, 0, 0, 2, 5, 0, 0, 3, 6, 0})
	w := Select(base, 1, 2) // column 2, aliases v's second row
	MulInPlace(w, 10)
	svCheck(t, "alias sees MulInPlace", v, []int{2, 3}, []float64{1, 2, 3, 40, 50, 60})
	SubInPlace(Index(v, 0), Index(v, 1)) // source aliases the destination's base
	svCheck(t, "SubInPlace aliased source", base, []int{3, 4}, []float64{0, -39, 40, 0, 0, -48, 50, 0, 0, -57, 60, 0})

	svErr(t, "peel.AddInPlace", func() { AddInPlace(yi, 0.5) }, "result type f64 can't be cast", "i64")
	svErr(t, "peel.AddInPlace", func() { AddInPlace(yi, svF64([]float64{1}, 1)) }, "can't be cast")
	svErr(t, "peel.AddInPlace", func() { AddInPlace(y32, svF64([]float64{1}, 1)) }, "result type f64", "f32")
	svErr(t, "peel.SubInPlace", func() { SubInPlace(FromBools([]bool{true}, 1), true) }, "bool")
	svErr(t, "peel.MulInPlace", func() { MulInPlace(y, svSeq(2)) }, "cannot be broadcast")
	svErr(t, "peel.MulInPlace", func() { MulInPlace(nil, 1) }, "nil")
	svErr(t, "peel.DivInPlace", func() { DivInPlace(yi, 2) }, "can't be cast", "floating-point")
	svErr(t, "peel.AddInPlace", func() { AddInPlace(BroadcastTo(svSeq(3), 2, 3), 1.0) }, "broadcast view")
	svErr(t, "peel.AddInPlace", func() { AddInPlace(y, []float64{1}) }, "[]float64")
}

// TestCopyIntoReadsSourceInPlace: CopyInto of a same-shape source copies
// it once, straight into the destination, with no intermediate buffer
// (it made a full copy of the source first, then copied that).
func TestCopyIntoReadsSourceInPlace(t *testing.T) {
	const n = 1 << 20
	src, dst := Ones(Float32, n), Zeros(Float32, n)
	CopyInto(dst, src)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 4 {
		CopyInto(dst, src)
	}
	runtime.ReadMemStats(&after)
	if b := after.TotalAlloc - before.TotalAlloc; b > n {
		t.Errorf("4 CopyInto calls of %d f32 allocated %d bytes", n, b)
	}
	svCheck(t, "CopyInto", Sum(dst), []int{}, []float64{n})
}
