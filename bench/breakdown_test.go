package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClassify puts hand-made stacks (leaf first) in their categories:
// by the CPU backend's file, by package, and for the runtime's copies,
// zeroing and allocation by their callers.
func TestClassify(t *testing.T) {
	cpuFn := func(name, file string) profFrame {
		return profFrame{peelModule + "/backend/cpu." + name, "/src/peel/backend/cpu/" + file}
	}
	rt := func(name string) profFrame { return profFrame{"runtime." + name, "/go/src/runtime/x.go"} }
	pkg := func(p, name string) profFrame { return profFrame{peelModule + p + "." + name, "/src/x.go"} }
	for _, c := range []struct {
		want  string
		stack []profFrame
	}{
		{"gemm", []profFrame{cpuFn("sgemm6x32AVX512Rows", "dot_gemm512_amd64.s"), cpuFn("init.tileOf[go.shape.float32].func1", "dot_gemm.go")}},
		{"conv", []profFrame{cpuFn("sgemm6x16AVX2Taps", "dot_gemm_amd64.s")}},
		{"pack", []profFrame{cpuFn("packB[go.shape.float32]", "dot_gemm.go")}},
		{"pack", []profFrame{rt("memmove"), cpuFn("packB[go.shape.float64]", "dot_gemm.go")}},
		{"gemm", []profFrame{cpuFn("(*gemmBlock[go.shape.float32]).tiles", "dot_gemm.go")}},
		{"copy", []profFrame{rt("memmove"), cpuFn("stridedCopySerial[go.shape.float32]", "copy.go")}},
		{"copy", []profFrame{cpuFn("transpose16x16F32AVX512", "copy_amd64.s")}},
		{"conv", []profFrame{cpuFn("transposePadLhs[go.shape.float32].func1", "window_taps.go")}},
		{"elementwise", []profFrame{cpuFn("addF32AVX2", "simd_amd64.s")}},
		{"reduce", []profFrame{cpuFn("sumRows", "reduce.go")}},
		{"kernels", []profFrame{cpuFn("gatherRows", "index.go")}},
		{"sync", []profFrame{cpuFn("parallelFor", "parallel.go")}},
		{"zeroing", []profFrame{rt("memclrNoHeapPointersChunked"), rt("mallocgc"), cpuFn("makeBuf", "cpu.go")}},
		{"zeroing", []profFrame{rt("memclrNoHeapPointers"), cpuFn("transposeKernel[go.shape.float32]", "window_taps.go")}},
		{"alloc", []profFrame{rt("nextFreeFast"), rt("mallocgc"), pkg("/interp", "Bind")}},
		{"alloc", []profFrame{cpuFn("newBuf[go.shape.float32]", "buffer.go")}},
		{"gc", []profFrame{rt("scanobject"), rt("gcDrain"), rt("gcBgMarkWorker")}},
		{"gc", []profFrame{rt("scanobject"), rt("gcAssistAlloc"), rt("mallocgc")}},
		{"sync", []profFrame{rt("futex"), rt("notesleep"), rt("stopm"), rt("findRunnable"), rt("schedule")}},
		{"sync", []profFrame{rt("chanrecv"), rt("selectnbrecv"), pkg("/internal/workers", "next")}},
		{"sync", []profFrame{pkg("/internal/workers", "next")}},
		{"gemm", []profFrame{rt("asyncPreempt"), cpuFn("sgemm6x16AVX2", "dot_gemm_amd64.s")}},
		{"other", []profFrame{rt("nanotime1"), rt("sysmon")}},
		{"dispatch", []profFrame{pkg("/interp", "evalOne")}},
		{"dispatch", []profFrame{pkg("/prims", "init.func7")}},
		{"dispatch", []profFrame{pkg("", "Mul")}},
		{"autodiff", []profFrame{pkg("/autodiff", "(*Linearized).Transpose")}},
		{"autodiff", []profFrame{pkg("/transforms", "vjpAs[...].func2")}},
		{"compiler", []profFrame{pkg("/compiler", "(*Program).Run")}},
		{"model", []profFrame{pkg("/nn", "(*Linear).Forward")}},
		{"gemm", []profFrame{{"gonum.org/v1/gonum/blas/gonum.sgemmParallel", "/x.go"}}},
		{"sync", []profFrame{{"sync/atomic.(*Int32).Add", "/x.go"}}},
		{"other", []profFrame{{"os.(*File).Write", "/x.go"}}},
		{"other", nil},
	} {
		if got := classify(c.stack); got != c.want {
			t.Errorf("classify(%v) = %q, want %q", c.stack, got, c.want)
		}
		if !slices.ContainsFunc(Categories, func(k Category) bool { return k.Name == c.want }) {
			t.Errorf("%q is not one of Categories", c.want)
		}
	}
}

// pbWriter encodes protocol buffer fields for TestDecodeProfile.
type pbWriter struct{ bytes.Buffer }

func (w *pbWriter) key(num, wire int) { w.varint(uint64(num<<3 | wire)) }
func (w *pbWriter) varint(v uint64)   { w.Write(binary.AppendUvarint(nil, v)) }
func (w *pbWriter) uint(num int, v uint64) {
	w.key(num, wireVarint)
	w.varint(v)
}
func (w *pbWriter) bytes(num int, b []byte) {
	w.key(num, wireBytes)
	w.varint(uint64(len(b)))
	w.Write(b)
}
func (w *pbWriter) msg(num int, f func(*pbWriter)) {
	var m pbWriter
	f(&m)
	w.bytes(num, m.Bytes())
}
func (w *pbWriter) packed(num int, vs ...uint64) {
	var m pbWriter
	for _, v := range vs {
		m.varint(v)
	}
	w.bytes(num, m.Bytes())
}

// TestDecodeProfile decodes a hand-encoded profile: sample types, one
// sample with packed location ids and values, one with them repeated,
// a location with an inlined call (two lines), fields it skips
// (fixed-width ones, a mapping), and errors for truncated or foreign
// input.
func TestDecodeProfile(t *testing.T) {
	var p pbWriter
	strs := []string{"", "samples", "count", "cpu", "nanoseconds", "main.leaf", "main.inlined", "main.root", "leaf.go", "root.go"}
	p.msg(pfSampleType, func(w *pbWriter) { w.uint(pvType, 1); w.uint(2, 2) })
	p.msg(pfSampleType, func(w *pbWriter) { w.uint(pvType, 3); w.uint(2, 4) })
	p.msg(pfSample, func(w *pbWriter) { w.packed(psLocation, 1, 2); w.packed(psValue, 1, 10_000_000) })
	p.msg(pfSample, func(w *pbWriter) {
		w.uint(psLocation, 2)
		w.uint(psValue, 3)
		w.uint(psValue, 30_000_000)
		w.key(9, wire64) // an unknown fixed64 field
		w.Write(make([]byte, 8))
	})
	p.msg(3, func(w *pbWriter) { w.uint(1, 1) }) // a mapping
	p.msg(pfLocation, func(w *pbWriter) {
		w.uint(plID, 1)
		w.msg(plLine, func(w *pbWriter) { w.uint(plnFunction, 1); w.uint(2, 12) })
		w.msg(plLine, func(w *pbWriter) { w.uint(plnFunction, 2) })
	})
	p.msg(pfLocation, func(w *pbWriter) {
		w.uint(plID, 2)
		w.msg(plLine, func(w *pbWriter) { w.uint(plnFunction, 3) })
	})
	for _, f := range [][3]uint64{{1, 5, 8}, {2, 6, 8}, {3, 7, 9}} {
		p.msg(pfFunction, func(w *pbWriter) { w.uint(pfnID, f[0]); w.uint(pfnName, f[1]); w.uint(pfnFile, f[2]) })
	}
	for _, s := range strs {
		p.bytes(pfStrings, []byte(s))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(p.Bytes())
	zw.Close()
	got, err := readCPUProfile(&gz)
	if err != nil {
		t.Fatal(err)
	}
	want := []profSample{
		{[]profFrame{{"main.leaf", "leaf.go"}, {"main.inlined", "leaf.go"}, {"main.root", "root.go"}}, 10_000_000},
		{[]profFrame{{"main.root", "root.go"}}, 30_000_000},
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !slices.Equal(got[i].Stack, want[i].Stack) || got[i].Nanos != want[i].Nanos {
			t.Errorf("sample %d = %v, want %v", i, got[i], want[i])
		}
	}
	b := breakdownOf(got)
	if b.CPUNs != 40e6 || b.Share["other"] != 100 {
		t.Errorf("breakdown %+v, want 40 ms, all other", b)
	}
	// A truncation anywhere is an error or a shorter profile, never a
	// panic.
	for n := range len(p.Bytes()) {
		decodeProfile(p.Bytes()[:n])
	}
	if _, err := readCPUProfile(strings.NewReader("not gzip")); err == nil {
		t.Error("a non-gzip profile decoded")
	}
	var heap pbWriter
	heap.msg(pfSampleType, func(w *pbWriter) { w.uint(pvType, 1) })
	heap.bytes(pfStrings, nil)
	heap.bytes(pfStrings, []byte("alloc_space"))
	if _, err := decodeProfile(heap.Bytes()); err == nil {
		t.Error("a profile without cpu samples decoded")
	}
}

// TestProfileWorkload profiles a 512² float32 product: runs counted, the
// shares a partition of the CPU time, and the GEMM kernels its largest
// part (they are nearly all of it).
func TestProfileWorkload(t *testing.T) {
	i := slices.IndexFunc(Workloads(), func(w Workload) bool { return w.Name == "matmul512_f32" })
	if i < 0 {
		t.Fatal("no matmul512_f32 workload")
	}
	b, err := ProfileWorkload(Workloads()[i], 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if b.Steps < 3 || b.StepNs <= 0 || b.CPUNs <= 0 {
		t.Fatalf("breakdown %+v: no runs or no time", b)
	}
	sum, top := 0.0, ""
	for c, v := range b.Share {
		sum += v
		if top == "" || v > b.Share[top] {
			top = c
		}
	}
	if math.Abs(sum-100) > 1e-9 {
		t.Errorf("shares sum to %v%%: %v", sum, b.Share)
	}
	if top != "gemm" {
		t.Errorf("largest share %q, want gemm: %v", top, b.Share)
	}
}
