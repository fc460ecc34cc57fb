package cpu

import (
	"math/bits"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernel of threefry2x32, the block cipher under peel's PRNG.

func init() {
	register(prims.Threefry2x32, true, threefryKernel)
}

// ---------------------------------------------------------------------------
// threefry2x32

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011): key words k0, k1 and the parity word
// k0^k1^threefryParity form the key schedule, injected every 4 rounds.
const threefryParity = 0x1BD11BDA

// threefry2x32 encrypts the counter (x0, x1) under the key (k0, k1).
func threefry2x32(k0, k1, x0, x1 uint32) (uint32, uint32) {
	y0, y1, _, _ := threefryPair(k0, k1, x0, x1, k0, k1, x0, x1)
	return y0, y1
}

// threefryPair encrypts two blocks, a under key (ka0, ka1) and b under
// (kb0, kb1), with their rounds interleaved: each round depends on the
// previous one, so two independent chains run twice as fast as one.
// Rounds use the rotations 13, 15, 26, 6 and 17, 29, 16, 24 in turn, and
// the key schedule (k0, k1, k2) is injected every 4 rounds.
func threefryPair(ka0, ka1, a0, a1, kb0, kb1, b0, b1 uint32) (uint32, uint32, uint32, uint32) {
	ka2, kb2 := ka0^ka1^threefryParity, kb0^kb1^threefryParity
	a0, a1, b0, b1 = a0+ka0, a1+ka1, b0+kb0, b1+kb1
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 13)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 15)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 26)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 6)
	a0, a1, b0, b1 = a0+ka1, a1+ka2+1, b0+kb1, b1+kb2+1
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 17)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 29)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 16)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 24)
	a0, a1, b0, b1 = a0+ka2, a1+ka0+2, b0+kb2, b1+kb0+2
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 13)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 15)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 26)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 6)
	a0, a1, b0, b1 = a0+ka0, a1+ka1+3, b0+kb0, b1+kb1+3
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 17)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 29)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 16)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 24)
	a0, a1, b0, b1 = a0+ka1, a1+ka2+4, b0+kb1, b1+kb2+4
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 13)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 15)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 26)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 6)
	return a0 + ka2, a1 + ka0 + 5, b0 + kb2, b1 + kb0 + 5
}

// threefryMix is one round on two blocks.
func threefryMix(a0, a1, b0, b1 uint32, r int) (uint32, uint32, uint32, uint32) {
	a0 += a1
	b0 += b1
	return a0, bits.RotateLeft32(a1, r) ^ a0, b0, bits.RotateLeft32(b1, r) ^ b0
}

// wordsIn is a threefry operand: a contiguous slice (step 1) or a single
// broadcast element (step 0).
type wordsIn struct {
	w    []int64
	step int
}

func threefryKernel(_ any, in, out []backend.Array) {
	y0, y1 := i64s(out[0]), i64s(out[1])
	n := len(y0)
	if n == 0 {
		return
	}
	var ops [4]wordsIn
	for k := range ops {
		a := in[k]
		buf, ok := a.Buf.(*i64Buf)
		if !ok {
			badDType(prims.Threefry2x32, a.Buf.DType())
		}
		if isSplatIn(a) {
			ops[k] = wordsIn{w: buf.s[a.Offset : a.Offset+1]}
		} else {
			ops[k] = wordsIn{w: buf.s[a.Offset : a.Offset+n], step: 1}
		}
	}
	parallelFor(n, 2*costHeavy, func(lo, hi int) {
		k0, k1, c0, c1 := ops[0], ops[1], ops[2], ops[3]
		word := func(o wordsIn, i int) uint32 { return uint32(o.w[i*o.step]) }
		i := lo
		for ; i+2 <= hi; i += 2 {
			j := i + 1
			a0, a1, b0, b1 := threefryPair(word(k0, i), word(k1, i), word(c0, i), word(c1, i),
				word(k0, j), word(k1, j), word(c0, j), word(c1, j))
			y0[i], y1[i], y0[j], y1[j] = int64(a0), int64(a1), int64(b0), int64(b1)
		}
		if i < hi {
			a0, a1 := threefry2x32(word(k0, i), word(k1, i), word(c0, i), word(c1, i))
			y0[i], y1[i] = int64(a0), int64(a1)
		}
	})
}
