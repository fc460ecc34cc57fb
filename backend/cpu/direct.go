package cpu

import "github.com/peel-ml/peel/backend"

// Direct kernels (backend.KernelResolver).
//
// An executor that calls a kernel on operands of the same layouts every
// time (compiler.Program) resolves it once, when it is built, into a
// function that goes straight to the loop Exec would choose: no kernel
// lookup, no dtype switch, no layout tests, no thread-count decision.
// That dispatch is most of the cost of a call on a few elements.
//
// Only the elementwise unary, arithmetic and comparison kernels resolve,
// for contiguous operands and broadcast scalars (splats), and only at
// sizes parallelFor runs on the calling goroutine at every thread count:
// larger calls, other layouts and other kernels resolve to nil and keep
// going through Exec. A direct kernel calls the very loop Exec calls
// for the same operands (the one registered for the operation and
// dtype), so its results are bit for bit Exec's.

// resolver returns a kernel's direct form for fixed layouts, or nil.
type resolver func(params any, in, out []backend.Layout) backend.Direct

// Resolve returns the direct form of op's kernel for operands of layouts
// in and results of layouts out, or nil when there is none (the caller
// then uses Exec): see backend.KernelResolver. The elementwise kernels
// resolve for contiguous and broadcast-scalar operands of sizes that run
// on one goroutine whatever SetThreads says.
func (b *Backend) Resolve(op backend.Op, params any, in, out []backend.Layout) backend.Direct {
	t := b.kernels()
	if op.ID < 0 || op.ID >= len(t) || t[op.ID].resolve == nil || hasStorageLayout(in, out) {
		return nil // storage dtypes convert at the kernel edge, in Exec
	}
	return t[op.ID].resolve(params, in, out)
}

var _ backend.KernelResolver = (*Backend)(nil)

// How an elementwise kernel reads an operand of n elements.
const (
	readOther = iota // materialized by Exec, or read as repeated blocks
	readVec          // contiguous: element by element
	readSplat        // a broadcast scalar: one element for all
)

// readOf classifies an operand of layout l for a result of n elements
// as the elementwise kernels do (isSplatN): a single element is read as
// a vector of one, which is the same element.
func readOf(l backend.Layout, n int) int {
	a := backend.Array{Shape: l.Shape, Strides: l.Strides}
	switch {
	case a.Size() != n:
		return readOther
	case a.IsContiguous():
		return readVec
	case a.IsSplat():
		return readSplat
	}
	return readOther
}

// directSize returns the size of an elementwise result of layout out
// and whether a direct kernel may compute it: out is contiguous and the
// work is serial at every thread count.
func directSize(cost int, out backend.Layout) (int, bool) {
	a := backend.Array{Shape: out.Shape, Strides: out.Strides}
	n := a.Size()
	return n, a.IsContiguous() && serialAnyThreads(n, cost)
}

// noDirect is the direct kernel of an empty result.
func noDirect(in, out []backend.Array) {}

// unaryResolver resolves a kernel registered with registerUnary.
func unaryResolver(cost int, l unaryLoops) resolver {
	return func(_ any, in, out []backend.Layout) backend.Direct {
		if len(in) != 1 || len(out) != 1 || in[0].DType != out[0].DType {
			return nil
		}
		n, ok := directSize(l.costOf(cost, in[0].DType), out[0])
		if !ok {
			return nil
		}
		r := readOf(in[0], n)
		switch in[0].DType {
		case backend.Bool:
			return directUnary(l.b, n, r)
		case backend.Int64:
			return directUnary(l.i, n, r)
		case backend.Float32:
			return directUnary(l.f32, n, r)
		case backend.Float64:
			return directUnary(l.f64, n, r)
		}
		return nil
	}
}

// directUnary is runUnary's serial path for n elements read as r.
func directUnary[T, R elem](f func(d []R, a []T), n, r int) backend.Direct {
	switch {
	case f == nil || r == readOther:
		return nil
	case n == 0:
		return noDirect
	case r == readSplat:
		return func(in, out []backend.Array) {
			x, o := &in[0], &out[0]
			d := o.Buf.(*hostBuf[R]).s[o.Offset : o.Offset+n]
			f(d[:1], x.Buf.(*hostBuf[T]).s[x.Offset:x.Offset+1])
			fillSlice(d, d[0])
		}
	}
	return func(in, out []backend.Array) {
		x, o := &in[0], &out[0]
		f(o.Buf.(*hostBuf[R]).s[o.Offset:o.Offset+n], x.Buf.(*hostBuf[T]).s[x.Offset:x.Offset+n])
	}
}

// binaryLayout checks the layouts of a binary elementwise call whose
// result has dtype dt and returns the result's size and how each
// operand is read.
func binaryLayout(cost int, dt backend.DType, in, out []backend.Layout) (n, xr, yr int, ok bool) {
	if len(in) != 2 || len(out) != 1 || in[0].DType != in[1].DType || out[0].DType != dt {
		return 0, 0, 0, false
	}
	n, ok = directSize(cost, out[0])
	if !ok {
		return 0, 0, 0, false
	}
	return n, readOf(in[0], n), readOf(in[1], n), true
}

// arithResolver resolves a kernel registered with registerArith.
func arithResolver(cost int, o binOp[bool, int64, float32, float64]) resolver {
	return func(_ any, in, out []backend.Layout) backend.Direct {
		if len(in) != 2 {
			return nil
		}
		n, xr, yr, ok := binaryLayout(cost, in[0].DType, in, out)
		if !ok {
			return nil
		}
		switch in[0].DType {
		case backend.Bool:
			return directBinary(o.b, n, xr, yr)
		case backend.Int64:
			return directBinary(o.i, n, xr, yr)
		case backend.Float32:
			return directBinary(o.f32, n, xr, yr)
		case backend.Float64:
			return directBinary(o.f64, n, xr, yr)
		}
		return nil
	}
}

// compareResolver resolves a kernel registered with registerCompare.
func compareResolver(o binOp[bool, bool, bool, bool]) resolver {
	return func(_ any, in, out []backend.Layout) backend.Direct {
		n, xr, yr, ok := binaryLayout(costCheap, backend.Bool, in, out)
		if !ok {
			return nil
		}
		switch in[0].DType {
		case backend.Bool:
			return directBinary(o.b, n, xr, yr)
		case backend.Int64:
			return directBinary(o.i, n, xr, yr)
		case backend.Float32:
			return directBinary(o.f32, n, xr, yr)
		case backend.Float64:
			return directBinary(o.f64, n, xr, yr)
		}
		return nil
	}
}

// directBinary is runBinary's serial path for n elements with operands
// read as xr and yr. Two broadcast scalars are left to Exec.
func directBinary[T, R elem](l binLoops[T, R], n, xr, yr int) backend.Direct {
	if l.vv == nil {
		return nil
	}
	l = *l.forSize(n)
	switch {
	case n == 0 && xr != readOther && yr != readOther:
		return noDirect
	case xr == readVec && yr == readVec:
		vv := l.vv
		return func(in, out []backend.Array) {
			x, y, o := &in[0], &in[1], &out[0]
			vv(o.Buf.(*hostBuf[R]).s[o.Offset:o.Offset+n], x.Buf.(*hostBuf[T]).s[x.Offset:x.Offset+n], y.Buf.(*hostBuf[T]).s[y.Offset:y.Offset+n])
		}
	case xr == readVec && yr == readSplat:
		vs := l.vs
		return func(in, out []backend.Array) {
			x, y, o := &in[0], &in[1], &out[0]
			vs(o.Buf.(*hostBuf[R]).s[o.Offset:o.Offset+n], x.Buf.(*hostBuf[T]).s[x.Offset:x.Offset+n], y.Buf.(*hostBuf[T]).s[y.Offset])
		}
	case xr == readSplat && yr == readVec:
		sv := l.sv
		return func(in, out []backend.Array) {
			x, y, o := &in[0], &in[1], &out[0]
			sv(o.Buf.(*hostBuf[R]).s[o.Offset:o.Offset+n], x.Buf.(*hostBuf[T]).s[x.Offset], y.Buf.(*hostBuf[T]).s[y.Offset:y.Offset+n])
		}
	}
	return nil
}
