package cpu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/prims"
)

// TestGEMMKernelsRapid checks the packed GEMM with each micro-kernel
// (AVX2, and AVX-512 where the CPU has it) against a float64 loop over
// random sizes from 1 to 300 (primes and the kernels' panel widths and
// their neighbours among them), both operands' transpositions, strided
// and offset layouts, batches, and 1 to 3 threads. The data are small integers, so every
// sum is exact in float32 too.
func TestGEMMKernelsRapid(t *testing.T) {
	modes := []bool{false}
	if cpu.HasWideGEMM() {
		modes = append(modes, true)
	}
	defer cpu.SetWideGEMM(cpu.SetWideGEMM(false))
	l1, l2 := cpu.SetGEMMCaches(0, 0)
	cpu.SetGEMMCaches(l1, l2)
	defer cpu.SetGEMMCaches(l1, l2)
	defer cpu.SetRowsA(cpu.SetRowsA(true))
	defer cpu.SetSkinny(cpu.SetSkinny(true))
	sizes := []int{1, 2, 5, 6, 7, 8, 13, 15, 16, 17, 31, 32, 33, 97, 127, 191, 193, 256, 257, 293, 300}
	for _, wide := range modes {
		name := "avx2"
		if wide {
			name = "avx512"
		}
		t.Run(name, func(t *testing.T) {
			cpu.SetWideGEMM(wide)
			rapid.Check(t, func(t *rapid.T) {
				dim := func(label string) int {
					if rapid.Bool().Draw(t, label+" from the list") {
						return rapid.SampledFrom(sizes).Draw(t, label)
					}
					return rapid.IntRange(1, 300).Draw(t, label)
				}
				m, n, k := dim("m"), dim("n"), dim("k")
				for m*n*k > 1<<21 {
					// Keep the float64 reference quick.
					m, n = max(1, m/2), max(1, n/2)
				}
				as, bs, p := drawProduct(t, m, n, k, rapid.Bool().Draw(t, "lhs transposed"))
				dt := rapid.SampledFrom([]backend.DType{backend.Float32, backend.Float64}).Draw(t, "dtype")
				l := rapid.SampledFrom(stLayouts).Draw(t, "layout")
				// The blocks derive from the caches: this machine's, or
				// small ones (KC 64, NC 256 for the widest panels), so
				// that products of a few hundred cross every block.
				if rapid.Bool().Draw(t, "small caches") {
					cpu.SetGEMMCaches(16<<10, 128<<10)
				} else {
					cpu.SetGEMMCaches(l1, l2)
				}
				// A row-major A is read in place, or packed.
				cpu.SetRowsA(rapid.Bool().Draw(t, "rows of A in place"))
				// Skinny products by inner products, or packed.
				cpu.SetSkinny(rapid.Bool().Draw(t, "skinny inner products"))
				// The thread count splits the tiles and the packing of
				// large blocks (packAPar, packBPar) across workers.
				cpu.SetThreads(rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "threads"))
				defer cpu.SetThreads(0)
				rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
				dtRun(t, dt, l, dtData(rng, backend.ShapeSize(as)), as, dtData(rng, backend.ShapeSize(bs)), bs, p)
			})
		})
	}
}

// drawProduct draws a batch of none, one or three and whether B is
// stored transposed, and returns the shapes and parameters of an m×k by
// k×n product (A stored transposed with ta).
func drawProduct(t *rapid.T, m, n, k int, ta bool) (as, bs []int, p prims.DotParams) {
	nb := rapid.SampledFrom([]int{0, 1, 3}).Draw(t, "batch")
	as, bs = []int{m, k}, []int{k, n}
	p = prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	if ta {
		as, p.LhsContract = []int{k, m}, []int{0}
	}
	if rapid.Bool().Draw(t, "rhs transposed") {
		bs, p.RhsContract = []int{n, k}, []int{1}
	}
	if nb > 0 {
		as, bs = append([]int{nb}, as...), append([]int{nb}, bs...)
		p.LhsContract = []int{p.LhsContract[0] + 1}
		p.RhsContract = []int{p.RhsContract[0] + 1}
		p.LhsBatch, p.RhsBatch = []int{0}, []int{0}
	}
	return as, bs, p
}

// TestSkinnyGEMMRapid checks the inner-product path of skinny products
// (at most 16 columns, k from 64, A's rows contiguous: dot_skinny.go)
// against the float64 loop: every column count to 16 (pairs of rows and
// groups of five columns, and those short of it), k with and without a
// tail past the vectors, B stored either way (its columns read in place
// or packed), strided and offset layouts, batches, 1 to 3 threads, and
// rows enough (from 250) for the workers to split the pairs of rows.
func TestSkinnyGEMMRapid(t *testing.T) {
	defer cpu.SetSkinny(cpu.SetSkinny(true))
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.OneOf(rapid.IntRange(1, 70), rapid.IntRange(250, 400)).Draw(t, "m")
		n := rapid.IntRange(1, 16).Draw(t, "n")
		k := rapid.IntRange(64, 300).Draw(t, "k")
		as, bs, p := drawProduct(t, m, n, k, false)
		dt := rapid.SampledFrom([]backend.DType{backend.Float32, backend.Float64}).Draw(t, "dtype")
		l := rapid.SampledFrom(stLayouts).Draw(t, "layout")
		cpu.SetThreads(rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "threads"))
		defer cpu.SetThreads(0)
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		dtRun(t, dt, l, dtData(rng, backend.ShapeSize(as)), as, dtData(rng, backend.ShapeSize(bs)), bs, p)
	})
}

// TestGEMMParallelPacking checks products large enough that the packing
// of A and B is split across workers (packAPar, packBPar), at 1 to 3
// threads, against the float64 loop: sizes around the block sizes
// (192-row A blocks, 256-wide B blocks), 2 KiB row strides (which are
// packed, not read in place), every layout and both transpositions.
func TestGEMMParallelPacking(t *testing.T) {
	defer cpu.SetThreads(0)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, threads := range []int{1, 2, 3} {
		cpu.SetThreads(threads)
		for _, d := range [][3]int{{256, 512, 256}, {193, 257, 300}, {384, 33, 256}, {200, 300, 97}} {
			m, n, k := d[0], d[1], d[2]
			for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
				for _, l := range stLayouts {
					for _, ta := range []bool{false, true} {
						as, p := []int{m, k}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
						if ta {
							as, p.LhsContract = []int{k, m}, []int{0}
						}
						dtRun(t, dt, l, dtData(rng, m*k), as, dtData(rng, k*n), []int{k, n}, p)
					}
				}
			}
		}
	}
}

// TestProductLayoutsSameBits checks that a product gives the same bits
// however its operands are laid out (row-major, stored transposed, a
// strided view, broadcast): a compiled program copies an operand or reads
// a broadcast one in place where the equation evaluated alone reads a
// view, and the two must agree bit for bit. The shapes are skinny ones
// (the inner-product path), and a tall one of 10 columns that two
// threads split; the values are not exact in
// any order of summation. At one to three threads. It is a property of
// peel's own GEMM: gonum's BLAS (the portable path) and OpenBLAS (-tags
// openblas) read transposed operands through their flags, summing in
// other orders, and promise no such thing.
func TestProductLayoutsSameBits(t *testing.T) {
	if !cpu.OwnGEMM() {
		t.Skipf("products run on %s here, not on peel's GEMM", map[bool]string{true: "gonum's BLAS (the portable path)", false: "OpenBLAS"}[cpu.Path() == "purego"])
	}
	defer cpu.SetThreads(0)
	for _, threads := range []int{1, 2, 3} {
		cpu.SetThreads(threads)
		testProductLayouts(t)
	}
}

func testProductLayouts(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(5, 6))
	type layout struct {
		name string
		make func(vals []float64, rows, cols int, dt backend.DType) backend.Array
	}
	host := func(vals []float64, dt backend.DType) backend.Buffer {
		if dt == backend.Float32 {
			f := make([]float32, len(vals))
			for i, v := range vals {
				f[i] = float32(v)
			}
			return be.FromHost(f)
		}
		return be.FromHost(append([]float64(nil), vals...))
	}
	layouts := []layout{
		{"row-major", func(v []float64, r, c int, dt backend.DType) backend.Array {
			return backend.Array{Buf: host(v, dt), Shape: []int{r, c}}
		}},
		{"transposed", func(v []float64, r, c int, dt backend.DType) backend.Array {
			tv := make([]float64, len(v))
			for i := range r {
				for j := range c {
					tv[j*r+i] = v[i*c+j]
				}
			}
			return backend.Array{Buf: host(tv, dt), Shape: []int{r, c}, Strides: []int{1, r}}
		}},
		{"strided", func(v []float64, r, c int, dt backend.DType) backend.Array {
			sv := make([]float64, 2*len(v)+3)
			for i := range r {
				for j := range c {
					sv[3+2*(i*c+j)] = v[i*c+j]
				}
			}
			return backend.Array{Buf: host(sv, dt), Shape: []int{r, c}, Strides: []int{2 * c, 2}, Offset: 3}
		}},
	}
	bits := func(a backend.Array) []uint64 {
		var out []uint64
		switch h := be.ToHost(a).(type) {
		case []float32:
			for _, v := range h {
				out = append(out, uint64(math.Float32bits(v)))
			}
		case []float64:
			for _, v := range h {
				out = append(out, math.Float64bits(v))
			}
		}
		return out
	}
	p := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		// Narrow products of 32 rows or more (with A read transposed
		// they run as Cᵀ = Bᵀ·Aᵀ where K fits one contracting block:
		// 64, 100; 130 does not on a 32 KiB L1).
		for _, s := range [][3]int{{2, 130, 2}, {7, 64, 10}, {33, 200, 5}, {128, 256, 10}, {9, 100, 15}, {64, 64, 16}, {40, 100, 12}, {64, 130, 16}, {96, 16, 8}} {
			m, k, n := s[0], s[1], s[2]
			av, bv := make([]float64, m*k), make([]float64, k*n)
			for i := range av {
				av[i] = rng.NormFloat64()
			}
			for i := range bv {
				bv[i] = rng.NormFloat64()
			}
			splat := rng.NormFloat64()
			var want []uint64
			for _, la := range append(layouts, layout{"broadcast", func(_ []float64, r, c int, dt backend.DType) backend.Array {
				return backend.Array{Buf: host([]float64{splat}, dt), Shape: []int{r, c}, Strides: []int{0, 0}}
			}}) {
				for _, lb := range layouts {
					a := la.make(av, m, k, dt)
					if la.name == "broadcast" {
						// The reference: the broadcast A materialized.
						full := make([]float64, m*k)
						for i := range full {
							full[i] = splat
						}
						ref := backend.Array{Buf: be.Alloc(dt, m*n), Shape: []int{m, n}}
						be.Exec(prims.DotGeneral.Op, p, []backend.Array{layouts[0].make(full, m, k, dt), lb.make(bv, k, n, dt)}, []backend.Array{ref})
						o := backend.Array{Buf: be.Alloc(dt, m*n), Shape: []int{m, n}}
						be.Exec(prims.DotGeneral.Op, p, []backend.Array{a, lb.make(bv, k, n, dt)}, []backend.Array{o})
						if !slices.Equal(bits(o), bits(ref)) {
							t.Errorf("%v %dx%dx%d: A broadcast, B %s: not the bits of A materialized", dt, m, k, n, lb.name)
						}
						continue
					}
					o := backend.Array{Buf: be.Alloc(dt, m*n), Shape: []int{m, n}}
					be.Exec(prims.DotGeneral.Op, p, []backend.Array{a, lb.make(bv, k, n, dt)}, []backend.Array{o})
					got := bits(o)
					if want == nil {
						want = got
						continue
					}
					if !slices.Equal(got, want) {
						t.Errorf("%v %dx%dx%d: A %s, B %s: not the bits of both row-major", dt, m, k, n, la.name, lb.name)
					}
				}
			}
		}
	}
}

// TestGEMMEdgeTilesAllocs checks that the packed GEMM's edge tiles,
// computed into a buffer on the stack and merged, allocate nothing: a
// product with an edge tile in every row and column panel (100×100 by
// 100×100, and 98×100 by 100×98 for the AVX2 tiles' 6 rows) makes no
// more allocations than one whose tiles all are full (96×96), but for
// two of slack (a collection between the runs may empty the GEMM's
// buffer pool). A buffer that escaped would cost 16 allocations a
// product here.
func TestGEMMEdgeTilesAllocs(t *testing.T) {
	if !cpu.OwnGEMM() {
		t.Skip("products run on a BLAS here, not on peel's GEMM")
	}
	defer cpu.SetThreads(0)
	cpu.SetThreads(1)
	be := cpu.New()
	p := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		allocs := func(m, k, n int) float64 {
			in := []backend.Array{
				{Buf: be.Alloc(dt, m*k), Shape: []int{m, k}},
				{Buf: be.Alloc(dt, k*n), Shape: []int{k, n}},
			}
			out := []backend.Array{{Buf: be.Alloc(dt, m*n), Shape: []int{m, n}}}
			args := make([]backend.Array, 2)
			return testing.AllocsPerRun(20, func() {
				copy(args, in)
				be.Exec(prims.DotGeneral.Op, p, args, out)
			})
		}
		full := allocs(96, 100, 96)
		for _, s := range [][3]int{{100, 100, 100}, {98, 100, 98}} {
			if got := allocs(s[0], s[1], s[2]); got > full+2 {
				t.Errorf("%v %dx%dx%d: %v allocations per product, %v with no edge tiles", dt, s[0], s[1], s[2], got, full)
			}
		}
	}
}
