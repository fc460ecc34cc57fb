//go:build amd64 && !purego

#include "textflag.h"

// The inner-product kernels of skinny products (dot_skinny.go): two rows
// of A against five rows of Bᵀ (five columns of B), each along k
// contiguous elements, into ten sums. A lane of each of the ten
// accumulators takes every LANES-th element of k; the lanes are summed
// last, (l0+l4)+(l2+l6) … by halves. AX indexes k in bytes, CX counts
// the vectors left.

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

// RED32(Y, X, OFF): the sum of Y's eight float32 lanes into OFF(DX).
#define RED32(Y, X, OFF) \
	VEXTRACTF128 $1, Y, X13 \
	VADDPS       X13, X, X \
	VHADDPS      X, X, X \
	VHADDPS      X, X, X \
	VMOVSS       X, OFF(DX)

// RED64(Y, X, OFF): the sum of Y's four float64 lanes into OFF(DX).
#define RED64(Y, X, OFF) \
	VEXTRACTF128 $1, Y, X13 \
	VADDPD       X13, X, X \
	VHADDPD      X, X, X \
	VMOVSD       X, OFF(DX)

// SKINNY_REDUCE(RED, SZ): the ten sums into c, SZ bytes an element.
#define SKINNY_REDUCE(RED, SZ) \
	RED(Y0, X0, (0*SZ)) \
	RED(Y1, X1, (1*SZ)) \
	RED(Y2, X2, (2*SZ)) \
	RED(Y3, X3, (3*SZ)) \
	RED(Y4, X4, (4*SZ)) \
	RED(Y5, X5, (5*SZ)) \
	RED(Y6, X6, (6*SZ)) \
	RED(Y7, X7, (7*SZ)) \
	RED(Y8, X8, (8*SZ)) \
	RED(Y9, X9, (9*SZ))

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
	SKINNY_REDUCE(RED32, 4)
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
	SKINNY_REDUCE(RED64, 8)
	VZEROUPPER
	RET
