package cpu

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// packBRef is packB's definition: panel q holds columns nr·q…nr·q+nr-1
// of the kb×nb block, row by row, columns past nb zero.
func packBRef[T float32 | float64](b []T, off, rs, cs, kb, nb, nr int) []T {
	np := (nb + nr - 1) / nr
	bp := make([]T, np*nr*kb)
	for q := range np {
		for p := range kb {
			for j := range nr {
				if c := q*nr + j; c < nb {
					bp[(q*kb+p)*nr+j] = b[off+p*rs+c*cs]
				}
			}
		}
	}
	return bp
}

// TestPackBRapid checks packB against its definition on random blocks:
// rows contiguous (the assembly loop over groups of panels where the
// CPU has AVX2, with narrow last panels), columns contiguous, and
// neither, for the panel widths of every micro-kernel. The packing
// buffer starts dirty, as a reused one does.
func TestPackBRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f64 := rapid.Bool().Draw(t, "f64")
		nr := rapid.SampledFrom([]int{8, 16, 32}).Draw(t, "nr")
		kb := rapid.IntRange(0, 40).Draw(t, "kb")
		nb := rapid.IntRange(1, 300).Draw(t, "nb")
		layout := rapid.IntRange(0, 2).Draw(t, "layout")
		off := rapid.IntRange(0, 7).Draw(t, "off")
		pad := rapid.IntRange(0, 9).Draw(t, "pad")
		var rs, cs, size int
		switch layout {
		case 0: // rows contiguous
			rs, cs = nb+pad, 1
			size = off + max(kb-1, 0)*rs + nb
		case 1: // columns contiguous
			rs, cs = 1, kb+pad
			size = off + (nb-1)*cs + kb
		default:
			rs, cs = 2*nb+pad, 2
			size = off + max(kb-1, 0)*rs + 2*nb
		}
		if f64 {
			checkPackB[float64](t, size, off, rs, cs, kb, nb, nr)
		} else {
			checkPackB[float32](t, size, off, rs, cs, kb, nb, nr)
		}
	})
}

func checkPackB[T float32 | float64](t *rapid.T, size, off, rs, cs, kb, nb, nr int) {
	b := make([]T, size)
	for i := range b {
		b[i] = T(i + 1)
	}
	want := packBRef(b, off, rs, cs, kb, nb, nr)
	got := make([]T, len(want)+5)
	for i := range got {
		got[i] = -1
	}
	packB(got, b, off, rs, cs, kb, nb, nr)
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("packB(rs=%d cs=%d kb=%d nb=%d nr=%d): element %d is %v, want %v", rs, cs, kb, nb, nr, i, got[i], w)
		}
	}
	for i := len(want); i < len(got); i++ {
		if got[i] != -1 {
			t.Fatalf("packB wrote past its panels: element %d is %v", i, got[i])
		}
	}
}

// BenchmarkPackB packs a 512×512 float64 B with contiguous rows, 4 KiB
// apart (as a 512² product packs it: its stride aliases in L1), in two
// blocks of 256 rows, into the AVX2 kernels' panels of 8 columns; cold
// evicts B from L2 first, as the product's A and C do.
//
//	go test ./backend/cpu/ -run '^$' -bench PackB
func BenchmarkPackB(b *testing.B) {
	for _, cold := range []bool{false, true} {
		b.Run(fmt.Sprintf("cold=%v", cold), func(b *testing.B) {
			src := make([]float64, 512*512)
			bp := make([]float64, 256*512)
			junk := make([]float64, 1<<20)
			for b.Loop() {
				if cold {
					b.StopTimer()
					for i := range junk {
						junk[i]++
					}
					b.StartTimer()
				}
				packB(bp, src, 0, 512, 1, 256, 512, 8)
				packB(bp, src, 256*512, 512, 1, 256, 512, 8)
			}
			b.ReportMetric(float64(len(src)*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
