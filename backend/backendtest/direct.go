package backendtest

// Checks of the Backend methods called directly, and of concurrent use.

import (
	"fmt"
	"slices"
	"sync"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// stridedMap returns the buffer index of every element of an array of
// the given shape, strides (nil: contiguous) and offset.
func stridedMap(shape, strides []int, offset int) []int {
	if strides == nil {
		strides = backend.ContiguousStrides(shape)
	}
	m := make([]int, backend.ShapeSize(shape))
	forEachIndex(shape, func(k int, idx []int) { m[k] = offset + ravel(idx, strides) })
	return m
}

// rawArray is a strided array over a shared buffer, for the direct
// Backend checks.
type rawArray struct {
	shape, strides []int
	offset         int
}

func (r rawArray) String() string {
	return fmt.Sprintf("shape %v strides %v offset %d", r.shape, r.strides, r.offset)
}

func (r rawArray) on(buf backend.Buffer) backend.Array {
	return backend.Array{Buf: buf, Shape: slices.Clone(r.shape), Strides: slices.Clone(r.strides), Offset: r.offset}
}

// backendCases checks Alloc, FromHost, ToHost and Copy directly.
func backendCases(s *suite) {
	b := s.b
	for _, dt := range allDTypes {
		for _, n := range []int{0, 1, 7, 1000} {
			desc := fmt.Sprintf("Alloc(%v, %d)", dt, n)
			s.try(desc, func() {
				buf := b.Alloc(dt, n)
				if buf.Len() != n || buf.DType() != dt {
					s.failf("%s: buffer has %d elements of %v", desc, buf.Len(), buf.DType())
					return
				}
				got, ok := hostArray(dt, []int{n}, b.ToHost(backend.Array{Buf: buf, Shape: []int{n}}))
				if !ok {
					s.failf("%s: ToHost returned the wrong type", desc)
					return
				}
				s.expectArray(check{desc: desc + " is zeroed", signedZero: true}, got, newArray(dt, []int{n}))
			})
		}
		for _, shape := range [][]int{{}, {0}, {7}, {2, 3}} {
			desc := describe("FromHost/ToHost", dt, shape)
			s.try(desc, func() {
				a := s.draw(dt, shape, copyValues)
				data := a.host()
				buf := b.FromHost(data)
				if buf.Len() != a.size() || buf.DType() != dt {
					s.failf("%s: buffer has %d elements of %v", desc, buf.Len(), buf.DType())
					return
				}
				clobber(data)
				arr := backend.Array{Buf: buf, Shape: slices.Clone(shape)}
				out := b.ToHost(arr)
				got, ok := hostArray(dt, shape, out)
				if !ok {
					s.failf("%s: ToHost returned %T", desc, out)
					return
				}
				s.expectArray(check{desc: desc + " (FromHost must copy its data)", signedZero: true}, got, a)
				clobber(out)
				again, _ := hostArray(dt, shape, b.ToHost(arr))
				s.expectArray(check{desc: desc + " (ToHost must return a copy)", signedZero: true}, again, a)
			})
		}

		// ToHost of strided arrays over one 60-element buffer.
		base := s.draw(dt, []int{60}, copyValues)
		buf := b.FromHost(base.host())
		for _, r := range []rawArray{
			{[]int{3, 4}, nil, 5},
			{[]int{4, 3}, []int{1, 4}, 0},
			{[]int{2, 3}, []int{12, 2}, 1},
			{[]int{3}, []int{-2}, 10},
			{[]int{2, 2}, []int{-5, -1}, 20},
			{[]int{4}, []int{0}, 7},
			{[]int{2, 3}, []int{0, 1}, 3},
			{[]int{}, nil, 9},
			{[]int{}, []int{}, 4},
			{[]int{0, 3}, []int{3, 1}, 0},
			{[]int{3, 0}, []int{-1, 1}, 2},
			{[]int{2, 3, 2}, []int{1, 10, -4}, 30},
			{[]int{1, 5}, []int{100, 1}, 50},
		} {
			desc := fmt.Sprintf("ToHost of %v[%s]", dt, r)
			s.try(desc, func() {
				got, ok := hostArray(dt, r.shape, b.ToHost(r.on(buf)))
				if !ok {
					s.failf("%s: ToHost returned the wrong type", desc)
					return
				}
				s.expectArray(check{desc: desc, signedZero: true}, got, base.take(r.shape, stridedMap(r.shape, r.strides, r.offset), array{}))
			})
		}

		// Copy between distinct buffers and within one (src may alias dst).
		type copyCase struct {
			name     string
			dst, src rawArray
			same     bool
		}
		for _, c := range []copyCase{
			{"contiguous", rawArray{[]int{3, 4}, nil, 0}, rawArray{[]int{3, 4}, nil, 0}, false},
			{"offsets", rawArray{[]int{3, 4}, nil, 7}, rawArray{[]int{3, 4}, nil, 11}, false},
			{"transposed source", rawArray{[]int{4, 3}, nil, 2}, rawArray{[]int{4, 3}, []int{1, 4}, 0}, false},
			{"strided destination", rawArray{[]int{3, 4}, []int{10, 2}, 1}, rawArray{[]int{3, 4}, nil, 0}, false},
			{"reversed source", rawArray{[]int{2, 5}, nil, 0}, rawArray{[]int{2, 5}, []int{-5, -1}, 40}, false},
			{"reversed destination", rawArray{[]int{2, 5}, []int{-1, -2}, 40}, rawArray{[]int{2, 5}, nil, 3}, false},
			{"broadcast source", rawArray{[]int{3, 4}, nil, 0}, rawArray{[]int{3, 4}, []int{0, 1}, 9}, false},
			{"scalar broadcast", rawArray{[]int{2, 3, 4}, nil, 1}, rawArray{[]int{2, 3, 4}, []int{0, 0, 0}, 30}, false},
			{"rank 0", rawArray{[]int{}, nil, 5}, rawArray{[]int{}, nil, 6}, false},
			{"size 0", rawArray{[]int{0, 4}, nil, 0}, rawArray{[]int{0, 4}, []int{1, 9}, 3}, false},
			{"rank 4", rawArray{[]int{2, 1, 3, 2}, nil, 0}, rawArray{[]int{2, 1, 3, 2}, []int{1, 7, 2, 20}, 5}, false},
			{"shift left in place", rawArray{[]int{8}, nil, 0}, rawArray{[]int{8}, nil, 1}, true},
			{"shift right in place", rawArray{[]int{8}, nil, 1}, rawArray{[]int{8}, nil, 0}, true},
			{"reverse in place", rawArray{[]int{9}, nil, 2}, rawArray{[]int{9}, []int{-1}, 10}, true},
			{"transpose in place", rawArray{[]int{4, 4}, nil, 3}, rawArray{[]int{4, 4}, []int{1, 4}, 3}, true},
			{"identical arrays", rawArray{[]int{3, 4}, []int{8, 2}, 1}, rawArray{[]int{3, 4}, []int{8, 2}, 1}, true},
			{"2-D shift in place", rawArray{[]int{3, 4}, []int{6, 1}, 0}, rawArray{[]int{3, 4}, []int{6, 1}, 7}, true},
		} {
			desc := fmt.Sprintf("Copy of %v, %s: dst %v, src %v", dt, c.name, c.dst, c.src)
			s.try(desc, func() {
				dstA := s.draw(dt, []int{60}, copyValues)
				srcA := dstA
				dbuf := b.FromHost(dstA.host())
				sbuf := dbuf
				if !c.same {
					srcA = s.draw(dt, []int{60}, copyValues)
					sbuf = b.FromHost(srcA.host())
				}
				b.Copy(c.dst.on(dbuf), c.src.on(sbuf))
				want := dstA.clone()
				dm := stridedMap(c.dst.shape, c.dst.strides, c.dst.offset)
				sm := stridedMap(c.src.shape, c.src.strides, c.src.offset)
				for k := range dm {
					want.set(dm[k], srcA, sm[k])
				}
				got, ok := hostArray(dt, []int{60}, b.ToHost(backend.Array{Buf: dbuf, Shape: []int{60}}))
				if !ok {
					s.failf("%s: ToHost returned the wrong type", desc)
					return
				}
				s.expectArray(check{desc: desc + " (the whole destination buffer)", signedZero: true}, got, want)
			})
		}
	}
}

// clobber overwrites a host slice.
func clobber(data any) {
	switch d := data.(type) {
	case []bool:
		for k := range d {
			d[k] = !d[k]
		}
	case []int64:
		for k := range d {
			d[k] = 424242
		}
	case []float32:
		for k := range d {
			d[k] = 424242
		}
	case []float64:
		for k := range d {
			d[k] = 424242
		}
	}
}

// concurrentCase runs kernels from several goroutines at once; under the
// race detector it also finds unsynchronized state in the backend.
func concurrentCase(s *suite) {
	if !s.b.Has(prims.Add.Op) || !s.b.Has(prims.ReduceSum.Op) {
		s.t.Skip("needs the add and reduce_sum kernels")
	}
	const workers, rounds = 6, 10
	type job struct{ x, y array }
	jobs := make([][]job, workers)
	for w := range jobs {
		for range rounds {
			jobs[w] = append(jobs[w], job{s.draw(backend.Float64, []int{64, 48}, finiteValues), s.draw(backend.Float64, []int{64, 48}, finiteValues)})
		}
	}
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, stack := caught(func() {
				for i, j := range jobs[w] {
					sum := interp.Bind1(prims.Add, nil, s.tensor(j.x), s.tensor(j.y))
					red := interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{1}}, sum)
					want, allow := refReduce(binaryOps[0].mustApply(j.x, j.y), []int{1}, sumReduce)
					got := readTensor(red)
					for k := range want.f {
						if !floatClose(got.f[k], want.f[k], allow[k], false) {
							mu.Lock()
							errs = append(errs, fmt.Sprintf("worker %d round %d: row %d sums to %v, want %v", w, i, k, got.f[k], want.f[k]))
							mu.Unlock()
							return
						}
					}
				}
			})
			if r != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("worker %d panicked: %v\n%s", w, r, stack))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		s.failf("concurrent add and reduce_sum: %s", e)
	}
}

// mustApply is apply without the tolerance.
func (o binaryOp) mustApply(x, y array) array {
	out, _ := o.apply(x, y)
	return out
}
