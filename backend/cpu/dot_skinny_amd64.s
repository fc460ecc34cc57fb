//go:build amd64 && !purego

#include "textflag.h"

// The inner-product kernels of skinny products (dot_skinny.go): two rows
// of A against five rows of Bᵀ (five columns of B), each along k
// contiguous elements, into ten sums. A lane of each of the ten
// accumulators takes every LANES-th element of k; the lanes are summed
// last, by pairs (SKINNY_REDUCE32, SKINNY_REDUCE64: several accumulators
// at once, where one at a time took a tenth of a call at k = 256). AX
// indexes k in bytes, CX counts the vectors left.

#define SKINNY_ARGS \
	MOVQ k+0(FP), CX \
	MOVQ a0+8(FP), SI \
	MOVQ a1+16(FP), DI \
	MOVQ b0+24(FP), R8 \
	MOVQ b1+32(FP), R9 \
	MOVQ b2+40(FP), R10 \
	MOVQ b3+48(FP), R11 \
	MOVQ b4+56(FP), R12 \
	MOVQ c+64(FP), DX \
	XORQ AX, AX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9

// SKINNY_STEP(LOAD, FMA): one vector of k: row 0 into Y10, row 1 into
// Y11, each column's vector into Y12 in turn.
#define SKINNY_STEP(LOAD, FMA) \
	LOAD (SI)(AX*1), Y10 \
	LOAD (DI)(AX*1), Y11 \
	LOAD (R8)(AX*1), Y12 \
	FMA  Y12, Y10, Y0 \
	FMA  Y12, Y11, Y5 \
	LOAD (R9)(AX*1), Y12 \
	FMA  Y12, Y10, Y1 \
	FMA  Y12, Y11, Y6 \
	LOAD (R10)(AX*1), Y12 \
	FMA  Y12, Y10, Y2 \
	FMA  Y12, Y11, Y7 \
	LOAD (R11)(AX*1), Y12 \
	FMA  Y12, Y10, Y3 \
	FMA  Y12, Y11, Y8 \
	LOAD (R12)(AX*1), Y12 \
	FMA  Y12, Y10, Y4 \
	FMA  Y12, Y11, Y9 \
	ADDQ $32, AX

// SKINNY_REDUCE32: the ten float32 sums into c, Y_i's lanes into c[i].
// Horizontal adds of pairs of accumulators, twice, leave the partial sums
// of Y0–Y3 and Y4–Y7 by 128-bit halves; the halves' sum is c[0:8]. Y8
// and Y9 go the same way into c[8:10]. Each sum is ((l0+l1)+(l2+l3)) +
// ((l4+l5)+(l6+l7)).
#define SKINNY_REDUCE32 \
	VHADDPS    Y1, Y0, Y10 \
	VHADDPS    Y3, Y2, Y11 \
	VHADDPS    Y11, Y10, Y10 \
	VHADDPS    Y5, Y4, Y12 \
	VHADDPS    Y7, Y6, Y13 \
	VHADDPS    Y13, Y12, Y12 \
	VPERM2F128 $0x20, Y12, Y10, Y13 \
	VPERM2F128 $0x31, Y12, Y10, Y14 \
	VADDPS     Y14, Y13, Y13 \
	VMOVUPS    Y13, (DX) \
	VHADDPS    Y9, Y8, Y10 \
	VEXTRACTF128 $1, Y10, X11 \
	VADDPS     X11, X10, X10 \
	VHADDPS    X10, X10, X10 \
	VMOVSD     X10, 32(DX)

// SKINNY_REDUCE64: the ten float64 sums into c, Y_i's lanes into c[i]:
// a horizontal add of two pairs of accumulators, whose 128-bit halves
// (one permuted, one blended) add to four sums, c[0:4] and c[4:8]; Y8 and
// Y9 into c[8:10]. Each sum is (l0+l1)+(l2+l3).
#define SKINNY_REDUCE64_4(YA, YB, YC, YD, OFF) \
	VHADDPD    YB, YA, Y10 \
	VHADDPD    YD, YC, Y11 \
	VPERM2F128 $0x21, Y11, Y10, Y12 \
	VBLENDPD   $0xC, Y11, Y10, Y13 \
	VADDPD     Y12, Y13, Y13 \
	VMOVUPD    Y13, OFF(DX)

#define SKINNY_REDUCE64 \
	SKINNY_REDUCE64_4(Y0, Y1, Y2, Y3, 0) \
	SKINNY_REDUCE64_4(Y4, Y5, Y6, Y7, 32) \
	VHADDPD    Y9, Y8, Y10 \
	VEXTRACTF128 $1, Y10, X11 \
	VADDPD     X11, X10, X10 \
	VMOVUPD    X10, 64(DX)

// func sdot2x5AVX2(k int, a0, a1, b0, b1, b2, b3, b4 *float32, c *[10]float32)
//
// c[5r+j] = Σ_{p<k} a_r[p]·b_j[p] for k a multiple of 8.
TEXT ·sdot2x5AVX2(SB), NOSPLIT, $0-72
	SKINNY_ARGS
	SHRQ $3, CX
	JZ   sdotReduce

sdotLoop:
	SKINNY_STEP(VMOVUPS, VFMADD231PS)
	DECQ CX
	JNZ  sdotLoop

sdotReduce:
	SKINNY_REDUCE32
	VZEROUPPER
	RET

// func ddot2x5AVX2(k int, a0, a1, b0, b1, b2, b3, b4 *float64, c *[10]float64)
//
// sdot2x5AVX2 in float64, for k a multiple of 4.
TEXT ·ddot2x5AVX2(SB), NOSPLIT, $0-72
	SKINNY_ARGS
	SHRQ $2, CX
	JZ   ddotReduce

ddotLoop:
	SKINNY_STEP(VMOVUPD, VFMADD231PD)
	DECQ CX
	JNZ  ddotLoop

ddotReduce:
	SKINNY_REDUCE64
	VZEROUPPER
	RET
