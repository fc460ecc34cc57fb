//go:build amd64 && !purego

#include "textflag.h"

// GEMM micro-kernels (dot_gemm.go): C[6×NR] (+)= A·B over k, A a panel
// of 6 rows (k columns of 6 consecutive elements, lda elements apart: 6
// when packed, A's column stride when read in place), B a packed panel
// of NR columns (k rows of NR consecutive elements, ldb elements apart:
// NR when packed, B's row stride when read in place), NR = 16 float32 or 8
// float64 (two 256-bit vectors). The 12 accumulators are Y0–Y11, the B
// row is in Y12–Y13 and the broadcast A element in Y14; Y15 is left
// alone. Each accumulator sums its k products in order with FMA. C rows
// are ldc elements apart; with add the tile is added to C, otherwise it
// overwrites it.
//
// Plan 9 operand order: VFMADD231PS C, B, A is A = B·C + A.

#define SGEMM6X16AVX2_BODY \
	MOVQ k+0(FP), CX \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DI \
	MOVQ c+24(FP), DX \
	MOVQ ldc+32(FP), R8 \
	SHLQ $2, R8 \
	MOVQ DX, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	MOVQ lda+40(FP), R11 \
	SHLQ $2, R11 \
	ASETUP \
	MOVQ ldb+48(FP), R10 \
	SHLQ $2, R10 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
	TESTQ CX, CX \
	JE sgemm6x16AVX2_store \
sgemm6x16AVX2_loop: \
	VMOVUPS (DI), Y12 \
	VMOVUPS 32(DI), Y13 \
	VBROADCASTSS A0, Y14 \
	VFMADD231PS Y12, Y14, Y0 \
	VFMADD231PS Y13, Y14, Y1 \
	VBROADCASTSS A1, Y14 \
	VFMADD231PS Y12, Y14, Y2 \
	VFMADD231PS Y13, Y14, Y3 \
	VBROADCASTSS A2, Y14 \
	VFMADD231PS Y12, Y14, Y4 \
	VFMADD231PS Y13, Y14, Y5 \
	VBROADCASTSS A3, Y14 \
	VFMADD231PS Y12, Y14, Y6 \
	VFMADD231PS Y13, Y14, Y7 \
	VBROADCASTSS A4, Y14 \
	VFMADD231PS Y12, Y14, Y8 \
	VFMADD231PS Y13, Y14, Y9 \
	VBROADCASTSS A5, Y14 \
	VFMADD231PS Y12, Y14, Y10 \
	VFMADD231PS Y13, Y14, Y11 \
	AADV \
	ADDQ R10, DI \
	DECQ CX \
	JNE sgemm6x16AVX2_loop \
sgemm6x16AVX2_store: \
	MOVBLZX add+56(FP), AX \
	TESTQ AX, AX \
	JE sgemm6x16AVX2_set \
	MOVQ DX, R9 \
	VADDPS (R9), Y0, Y0 \
	VADDPS 32(R9), Y1, Y1 \
	ADDQ R8, R9 \
	VADDPS (R9), Y2, Y2 \
	VADDPS 32(R9), Y3, Y3 \
	ADDQ R8, R9 \
	VADDPS (R9), Y4, Y4 \
	VADDPS 32(R9), Y5, Y5 \
	ADDQ R8, R9 \
	VADDPS (R9), Y6, Y6 \
	VADDPS 32(R9), Y7, Y7 \
	ADDQ R8, R9 \
	VADDPS (R9), Y8, Y8 \
	VADDPS 32(R9), Y9, Y9 \
	ADDQ R8, R9 \
	VADDPS (R9), Y10, Y10 \
	VADDPS 32(R9), Y11, Y11 \
sgemm6x16AVX2_set: \
	VMOVUPS Y0, (DX) \
	VMOVUPS Y1, 32(DX) \
	ADDQ R8, DX \
	VMOVUPS Y2, (DX) \
	VMOVUPS Y3, 32(DX) \
	ADDQ R8, DX \
	VMOVUPS Y4, (DX) \
	VMOVUPS Y5, 32(DX) \
	ADDQ R8, DX \
	VMOVUPS Y6, (DX) \
	VMOVUPS Y7, 32(DX) \
	ADDQ R8, DX \
	VMOVUPS Y8, (DX) \
	VMOVUPS Y9, 32(DX) \
	ADDQ R8, DX \
	VMOVUPS Y10, (DX) \
	VMOVUPS Y11, 32(DX) \
	VZEROUPPER

// func sgemm6x16AVX2(k int, a, b, c *float32, ldc, lda, ldb int, add bool)
#define A0 0(SI)
#define A1 4(SI)
#define A2 8(SI)
#define A3 12(SI)
#define A4 16(SI)
#define A5 20(SI)
#define ASETUP NOP
#define AADV ADDQ R11, SI
TEXT ·sgemm6x16AVX2(SB), NOSPLIT, $0-57
	SGEMM6X16AVX2_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef ASETUP
#undef AADV

// func sgemm6x16AVX2Rows(k int, a, b, c *float32, ldc, lda, ldb int, add bool)
//
// The same with the A panel read in place from 6 rows lda elements apart
// (A row-major, each row contiguous): no packing of A.
#define A0 (SI)
#define A1 (SI)(R11*1)
#define A2 (SI)(R11*2)
#define A3 (BX)
#define A4 (SI)(R11*4)
#define A5 (BX)(R11*2)
#define ASETUP LEAQ (R11)(R11*2), BX; ADDQ SI, BX
#define AADV ADDQ $4, SI; ADDQ $4, BX
TEXT ·sgemm6x16AVX2Rows(SB), NOSPLIT, $0-57
	SGEMM6X16AVX2_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef ASETUP
#undef AADV

#define DGEMM6X8AVX2_BODY \
	MOVQ k+0(FP), CX \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DI \
	MOVQ c+24(FP), DX \
	MOVQ ldc+32(FP), R8 \
	SHLQ $3, R8 \
	MOVQ DX, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 63(R9) \
	MOVQ lda+40(FP), R11 \
	SHLQ $3, R11 \
	ASETUP \
	MOVQ ldb+48(FP), R10 \
	SHLQ $3, R10 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
	TESTQ CX, CX \
	JE dgemm6x8AVX2_store \
dgemm6x8AVX2_loop: \
	VMOVUPD (DI), Y12 \
	VMOVUPD 32(DI), Y13 \
	VBROADCASTSD A0, Y14 \
	VFMADD231PD Y12, Y14, Y0 \
	VFMADD231PD Y13, Y14, Y1 \
	VBROADCASTSD A1, Y14 \
	VFMADD231PD Y12, Y14, Y2 \
	VFMADD231PD Y13, Y14, Y3 \
	VBROADCASTSD A2, Y14 \
	VFMADD231PD Y12, Y14, Y4 \
	VFMADD231PD Y13, Y14, Y5 \
	VBROADCASTSD A3, Y14 \
	VFMADD231PD Y12, Y14, Y6 \
	VFMADD231PD Y13, Y14, Y7 \
	VBROADCASTSD A4, Y14 \
	VFMADD231PD Y12, Y14, Y8 \
	VFMADD231PD Y13, Y14, Y9 \
	VBROADCASTSD A5, Y14 \
	VFMADD231PD Y12, Y14, Y10 \
	VFMADD231PD Y13, Y14, Y11 \
	AADV \
	ADDQ R10, DI \
	DECQ CX \
	JNE dgemm6x8AVX2_loop \
dgemm6x8AVX2_store: \
	MOVBLZX add+56(FP), AX \
	TESTQ AX, AX \
	JE dgemm6x8AVX2_set \
	MOVQ DX, R9 \
	VADDPD (R9), Y0, Y0 \
	VADDPD 32(R9), Y1, Y1 \
	ADDQ R8, R9 \
	VADDPD (R9), Y2, Y2 \
	VADDPD 32(R9), Y3, Y3 \
	ADDQ R8, R9 \
	VADDPD (R9), Y4, Y4 \
	VADDPD 32(R9), Y5, Y5 \
	ADDQ R8, R9 \
	VADDPD (R9), Y6, Y6 \
	VADDPD 32(R9), Y7, Y7 \
	ADDQ R8, R9 \
	VADDPD (R9), Y8, Y8 \
	VADDPD 32(R9), Y9, Y9 \
	ADDQ R8, R9 \
	VADDPD (R9), Y10, Y10 \
	VADDPD 32(R9), Y11, Y11 \
dgemm6x8AVX2_set: \
	VMOVUPD Y0, (DX) \
	VMOVUPD Y1, 32(DX) \
	ADDQ R8, DX \
	VMOVUPD Y2, (DX) \
	VMOVUPD Y3, 32(DX) \
	ADDQ R8, DX \
	VMOVUPD Y4, (DX) \
	VMOVUPD Y5, 32(DX) \
	ADDQ R8, DX \
	VMOVUPD Y6, (DX) \
	VMOVUPD Y7, 32(DX) \
	ADDQ R8, DX \
	VMOVUPD Y8, (DX) \
	VMOVUPD Y9, 32(DX) \
	ADDQ R8, DX \
	VMOVUPD Y10, (DX) \
	VMOVUPD Y11, 32(DX) \
	VZEROUPPER

// func dgemm6x8AVX2(k int, a, b, c *float64, ldc, lda, ldb int, add bool)
#define A0 0(SI)
#define A1 8(SI)
#define A2 16(SI)
#define A3 24(SI)
#define A4 32(SI)
#define A5 40(SI)
#define ASETUP NOP
#define AADV ADDQ R11, SI
TEXT ·dgemm6x8AVX2(SB), NOSPLIT, $0-57
	DGEMM6X8AVX2_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef ASETUP
#undef AADV

// func dgemm6x8AVX2Rows(k int, a, b, c *float64, ldc, lda, ldb int, add bool)
//
// The same with the A panel read in place from 6 rows lda elements apart
// (A row-major, each row contiguous): no packing of A.
#define A0 (SI)
#define A1 (SI)(R11*1)
#define A2 (SI)(R11*2)
#define A3 (BX)
#define A4 (SI)(R11*4)
#define A5 (BX)(R11*2)
#define ASETUP LEAQ (R11)(R11*2), BX; ADDQ SI, BX
#define AADV ADDQ $8, SI; ADDQ $8, BX
TEXT ·dgemm6x8AVX2Rows(SB), NOSPLIT, $0-57
	DGEMM6X8AVX2_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef ASETUP
#undef AADV

// Tap micro-kernels (window_taps.go): the 6×NR tile of C = Σ over ntaps
// taps t of A_t·B_t, A_t the packed 6-row panel of k columns at a +
// t·astride, B_t the k rows (ldb apart) of NR elements at b + offs[t],
// strides and offsets in elements; C rows ldc apart, overwritten. The
// accumulators stay in registers across the taps: one store of the
// tile instead of a load and a store per tap.

// func sgemm6x16AVX2Taps(ntaps, k int, a, b *float32, offs *int, astride, ldb int, c *float32, ldc int)
TEXT ·sgemm6x16AVX2Taps(SB), NOSPLIT, $0-72
	MOVQ ntaps+0(FP), AX
	MOVQ k+8(FP), R12
	MOVQ a+16(FP), R13
	MOVQ b+24(FP), R9
	MOVQ offs+32(FP), BX
	MOVQ astride+40(FP), R11
	SHLQ $2, R11
	MOVQ ldb+48(FP), R10
	SHLQ $2, R10
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
sgemm6x16AVX2Taps_tap:
	MOVQ R13, SI
	MOVQ (BX), DI
	SHLQ $2, DI
	ADDQ R9, DI
	MOVQ R12, CX
sgemm6x16AVX2Taps_k:
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	VBROADCASTSS 0(SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 4(SI), Y14
	VFMADD231PS Y12, Y14, Y2
	VFMADD231PS Y13, Y14, Y3
	VBROADCASTSS 8(SI), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 12(SI), Y14
	VFMADD231PS Y12, Y14, Y6
	VFMADD231PS Y13, Y14, Y7
	VBROADCASTSS 16(SI), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 20(SI), Y14
	VFMADD231PS Y12, Y14, Y10
	VFMADD231PS Y13, Y14, Y11
	ADDQ $24, SI
	ADDQ R10, DI
	DECQ CX
	JNE sgemm6x16AVX2Taps_k
	ADDQ R11, R13
	ADDQ $8, BX
	DECQ AX
	JNE sgemm6x16AVX2Taps_tap
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// func dgemm6x8AVX2Taps(ntaps, k int, a, b *float64, offs *int, astride, ldb int, c *float64, ldc int)
TEXT ·dgemm6x8AVX2Taps(SB), NOSPLIT, $0-72
	MOVQ ntaps+0(FP), AX
	MOVQ k+8(FP), R12
	MOVQ a+16(FP), R13
	MOVQ b+24(FP), R9
	MOVQ offs+32(FP), BX
	MOVQ astride+40(FP), R11
	SHLQ $3, R11
	MOVQ ldb+48(FP), R10
	SHLQ $3, R10
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R8
	SHLQ $3, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
dgemm6x8AVX2Taps_tap:
	MOVQ R13, SI
	MOVQ (BX), DI
	SHLQ $3, DI
	ADDQ R9, DI
	MOVQ R12, CX
dgemm6x8AVX2Taps_k:
	VMOVUPD (DI), Y12
	VMOVUPD 32(DI), Y13
	VBROADCASTSD 0(SI), Y14
	VFMADD231PD Y12, Y14, Y0
	VFMADD231PD Y13, Y14, Y1
	VBROADCASTSD 8(SI), Y14
	VFMADD231PD Y12, Y14, Y2
	VFMADD231PD Y13, Y14, Y3
	VBROADCASTSD 16(SI), Y14
	VFMADD231PD Y12, Y14, Y4
	VFMADD231PD Y13, Y14, Y5
	VBROADCASTSD 24(SI), Y14
	VFMADD231PD Y12, Y14, Y6
	VFMADD231PD Y13, Y14, Y7
	VBROADCASTSD 32(SI), Y14
	VFMADD231PD Y12, Y14, Y8
	VFMADD231PD Y13, Y14, Y9
	VBROADCASTSD 40(SI), Y14
	VFMADD231PD Y12, Y14, Y10
	VFMADD231PD Y13, Y14, Y11
	ADDQ $48, SI
	ADDQ R10, DI
	DECQ CX
	JNE dgemm6x8AVX2Taps_k
	ADDQ R11, R13
	ADDQ $8, BX
	DECQ AX
	JNE dgemm6x8AVX2Taps_tap
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y2, (DX)
	VMOVUPD Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y4, (DX)
	VMOVUPD Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y6, (DX)
	VMOVUPD Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y8, (DX)
	VMOVUPD Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y10, (DX)
	VMOVUPD Y11, 32(DX)
	VZEROUPPER
	RET
