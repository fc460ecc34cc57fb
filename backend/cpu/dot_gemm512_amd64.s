//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 GEMM micro-kernels (dot_gemm.go), the AVX2 ones of
// dot_gemm_amd64.s with 512-bit vectors and tiles of 8 rows: C[8×NR]
// (+)= A·B over k with NR = 32 float32 or 16 float64 (two vectors). A is
// a panel of 8 rows (k columns of 8 consecutive elements, lda elements
// apart), B a panel of NR columns (k rows of NR consecutive elements, ldb
// apart). The 16 accumulators are Z0–Z15, the B row is in Z16–Z17 and the
// broadcast A element in Z18 (AVX-512 has 32 vector registers; AVX2's 16
// hold 6 rows). Each accumulator sums its k products in order with FMA.
// C rows are ldc elements apart; with add the tile is added to C,
// otherwise it overwrites it. Eight rows fit the row counts of models,
// powers of two (a batch of 32, a sequence of 128), which leave a short
// edge panel for tiles of six.
//
// Plan 9 operand order: VFMADD231PS C, B, A is A = B·C + A.

#define SGEMM8X32AVX512_BODY \
	MOVQ k+0(FP), CX \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DI \
	MOVQ c+24(FP), DX \
	MOVQ ldc+32(FP), R8 \
	SHLQ $2, R8 \
	MOVQ DX, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	MOVQ lda+40(FP), R11 \
	SHLQ $2, R11 \
	ASETUP \
	MOVQ ldb+48(FP), R10 \
	SHLQ $2, R10 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	TESTQ CX, CX \
	JE sgemm8x32AVX512_store \
sgemm8x32AVX512_loop: \
	VMOVUPS (DI), Z16 \
	VMOVUPS 64(DI), Z17 \
	VBROADCASTSS A0, Z18 \
	VFMADD231PS Z16, Z18, Z0 \
	VFMADD231PS Z17, Z18, Z1 \
	VBROADCASTSS A1, Z18 \
	VFMADD231PS Z16, Z18, Z2 \
	VFMADD231PS Z17, Z18, Z3 \
	VBROADCASTSS A2, Z18 \
	VFMADD231PS Z16, Z18, Z4 \
	VFMADD231PS Z17, Z18, Z5 \
	VBROADCASTSS A3, Z18 \
	VFMADD231PS Z16, Z18, Z6 \
	VFMADD231PS Z17, Z18, Z7 \
	VBROADCASTSS A4, Z18 \
	VFMADD231PS Z16, Z18, Z8 \
	VFMADD231PS Z17, Z18, Z9 \
	VBROADCASTSS A5, Z18 \
	VFMADD231PS Z16, Z18, Z10 \
	VFMADD231PS Z17, Z18, Z11 \
	VBROADCASTSS A6, Z18 \
	VFMADD231PS Z16, Z18, Z12 \
	VFMADD231PS Z17, Z18, Z13 \
	VBROADCASTSS A7, Z18 \
	VFMADD231PS Z16, Z18, Z14 \
	VFMADD231PS Z17, Z18, Z15 \
	AADV \
	ADDQ R10, DI \
	DECQ CX \
	JNE sgemm8x32AVX512_loop \
sgemm8x32AVX512_store: \
	MOVBLZX add+56(FP), AX \
	TESTQ AX, AX \
	JE sgemm8x32AVX512_set \
	MOVQ DX, R9 \
	VADDPS (R9), Z0, Z0 \
	VADDPS 64(R9), Z1, Z1 \
	ADDQ R8, R9 \
	VADDPS (R9), Z2, Z2 \
	VADDPS 64(R9), Z3, Z3 \
	ADDQ R8, R9 \
	VADDPS (R9), Z4, Z4 \
	VADDPS 64(R9), Z5, Z5 \
	ADDQ R8, R9 \
	VADDPS (R9), Z6, Z6 \
	VADDPS 64(R9), Z7, Z7 \
	ADDQ R8, R9 \
	VADDPS (R9), Z8, Z8 \
	VADDPS 64(R9), Z9, Z9 \
	ADDQ R8, R9 \
	VADDPS (R9), Z10, Z10 \
	VADDPS 64(R9), Z11, Z11 \
	ADDQ R8, R9 \
	VADDPS (R9), Z12, Z12 \
	VADDPS 64(R9), Z13, Z13 \
	ADDQ R8, R9 \
	VADDPS (R9), Z14, Z14 \
	VADDPS 64(R9), Z15, Z15 \
sgemm8x32AVX512_set: \
	VMOVUPS Z0, (DX) \
	VMOVUPS Z1, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z2, (DX) \
	VMOVUPS Z3, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z4, (DX) \
	VMOVUPS Z5, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z6, (DX) \
	VMOVUPS Z7, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z8, (DX) \
	VMOVUPS Z9, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z10, (DX) \
	VMOVUPS Z11, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z12, (DX) \
	VMOVUPS Z13, 64(DX) \
	ADDQ R8, DX \
	VMOVUPS Z14, (DX) \
	VMOVUPS Z15, 64(DX) \
	VZEROUPPER

// func sgemm8x32AVX512(k int, a, b, c *float32, ldc, lda, ldb int, add bool)
#define A0 0(SI)
#define A1 4(SI)
#define A2 8(SI)
#define A3 12(SI)
#define A4 16(SI)
#define A5 20(SI)
#define A6 24(SI)
#define A7 28(SI)
#define ASETUP NOP
#define AADV ADDQ R11, SI
TEXT ·sgemm8x32AVX512(SB), NOSPLIT, $0-57
	SGEMM8X32AVX512_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef A6
#undef A7
#undef ASETUP
#undef AADV

// func sgemm8x32AVX512Rows(k int, a, b, c *float32, ldc, lda, ldb int, add bool)
//
// The same with the A panel read in place from 8 rows lda elements apart
// (A row-major, each row contiguous): no packing of A. SI points at row
// 0, BX at row 4, R12 holds 3·lda.
#define A0 (SI)
#define A1 (SI)(R11*1)
#define A2 (SI)(R11*2)
#define A3 (SI)(R12*1)
#define A4 (BX)
#define A5 (BX)(R11*1)
#define A6 (BX)(R11*2)
#define A7 (BX)(R12*1)
#define ASETUP LEAQ (R11)(R11*2), R12; LEAQ (SI)(R11*4), BX
#define AADV ADDQ $4, SI; ADDQ $4, BX
TEXT ·sgemm8x32AVX512Rows(SB), NOSPLIT, $0-57
	SGEMM8X32AVX512_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef A6
#undef A7
#undef ASETUP
#undef AADV

#define DGEMM8X16AVX512_BODY \
	MOVQ k+0(FP), CX \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DI \
	MOVQ c+24(FP), DX \
	MOVQ ldc+32(FP), R8 \
	SHLQ $3, R8 \
	MOVQ DX, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	ADDQ R8, R9 \
	PREFETCHT0 (R9) \
	PREFETCHT0 64(R9) \
	MOVQ lda+40(FP), R11 \
	SHLQ $3, R11 \
	ASETUP \
	MOVQ ldb+48(FP), R10 \
	SHLQ $3, R10 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	TESTQ CX, CX \
	JE dgemm8x16AVX512_store \
dgemm8x16AVX512_loop: \
	VMOVUPD (DI), Z16 \
	VMOVUPD 64(DI), Z17 \
	VBROADCASTSD A0, Z18 \
	VFMADD231PD Z16, Z18, Z0 \
	VFMADD231PD Z17, Z18, Z1 \
	VBROADCASTSD A1, Z18 \
	VFMADD231PD Z16, Z18, Z2 \
	VFMADD231PD Z17, Z18, Z3 \
	VBROADCASTSD A2, Z18 \
	VFMADD231PD Z16, Z18, Z4 \
	VFMADD231PD Z17, Z18, Z5 \
	VBROADCASTSD A3, Z18 \
	VFMADD231PD Z16, Z18, Z6 \
	VFMADD231PD Z17, Z18, Z7 \
	VBROADCASTSD A4, Z18 \
	VFMADD231PD Z16, Z18, Z8 \
	VFMADD231PD Z17, Z18, Z9 \
	VBROADCASTSD A5, Z18 \
	VFMADD231PD Z16, Z18, Z10 \
	VFMADD231PD Z17, Z18, Z11 \
	VBROADCASTSD A6, Z18 \
	VFMADD231PD Z16, Z18, Z12 \
	VFMADD231PD Z17, Z18, Z13 \
	VBROADCASTSD A7, Z18 \
	VFMADD231PD Z16, Z18, Z14 \
	VFMADD231PD Z17, Z18, Z15 \
	AADV \
	ADDQ R10, DI \
	DECQ CX \
	JNE dgemm8x16AVX512_loop \
dgemm8x16AVX512_store: \
	MOVBLZX add+56(FP), AX \
	TESTQ AX, AX \
	JE dgemm8x16AVX512_set \
	MOVQ DX, R9 \
	VADDPD (R9), Z0, Z0 \
	VADDPD 64(R9), Z1, Z1 \
	ADDQ R8, R9 \
	VADDPD (R9), Z2, Z2 \
	VADDPD 64(R9), Z3, Z3 \
	ADDQ R8, R9 \
	VADDPD (R9), Z4, Z4 \
	VADDPD 64(R9), Z5, Z5 \
	ADDQ R8, R9 \
	VADDPD (R9), Z6, Z6 \
	VADDPD 64(R9), Z7, Z7 \
	ADDQ R8, R9 \
	VADDPD (R9), Z8, Z8 \
	VADDPD 64(R9), Z9, Z9 \
	ADDQ R8, R9 \
	VADDPD (R9), Z10, Z10 \
	VADDPD 64(R9), Z11, Z11 \
	ADDQ R8, R9 \
	VADDPD (R9), Z12, Z12 \
	VADDPD 64(R9), Z13, Z13 \
	ADDQ R8, R9 \
	VADDPD (R9), Z14, Z14 \
	VADDPD 64(R9), Z15, Z15 \
dgemm8x16AVX512_set: \
	VMOVUPD Z0, (DX) \
	VMOVUPD Z1, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z2, (DX) \
	VMOVUPD Z3, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z4, (DX) \
	VMOVUPD Z5, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z6, (DX) \
	VMOVUPD Z7, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z8, (DX) \
	VMOVUPD Z9, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z10, (DX) \
	VMOVUPD Z11, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z12, (DX) \
	VMOVUPD Z13, 64(DX) \
	ADDQ R8, DX \
	VMOVUPD Z14, (DX) \
	VMOVUPD Z15, 64(DX) \
	VZEROUPPER

// func dgemm8x16AVX512(k int, a, b, c *float64, ldc, lda, ldb int, add bool)
#define A0 0(SI)
#define A1 8(SI)
#define A2 16(SI)
#define A3 24(SI)
#define A4 32(SI)
#define A5 40(SI)
#define A6 48(SI)
#define A7 56(SI)
#define ASETUP NOP
#define AADV ADDQ R11, SI
TEXT ·dgemm8x16AVX512(SB), NOSPLIT, $0-57
	DGEMM8X16AVX512_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef A6
#undef A7
#undef ASETUP
#undef AADV

// func dgemm8x16AVX512Rows(k int, a, b, c *float64, ldc, lda, ldb int, add bool)
//
// The same with the A panel read in place from 8 rows lda elements apart
// (A row-major, each row contiguous): no packing of A. SI points at row
// 0, BX at row 4, R12 holds 3·lda.
#define A0 (SI)
#define A1 (SI)(R11*1)
#define A2 (SI)(R11*2)
#define A3 (SI)(R12*1)
#define A4 (BX)
#define A5 (BX)(R11*1)
#define A6 (BX)(R11*2)
#define A7 (BX)(R12*1)
#define ASETUP LEAQ (R11)(R11*2), R12; LEAQ (SI)(R11*4), BX
#define AADV ADDQ $8, SI; ADDQ $8, BX
TEXT ·dgemm8x16AVX512Rows(SB), NOSPLIT, $0-57
	DGEMM8X16AVX512_BODY
	RET
#undef A0
#undef A1
#undef A2
#undef A3
#undef A4
#undef A5
#undef A6
#undef A7
#undef ASETUP
#undef AADV


// Tap micro-kernels (window_taps.go): the 8×NR tile of C = Σ over ntaps
// taps t of A_t·B_t, A_t the packed 8-row panel of k columns at a +
// t·astride, B_t the k rows (ldb apart) of NR elements at b + offs[t],
// strides and offsets in elements; C rows ldc apart, overwritten. The
// accumulators stay in registers across the taps: one store of the
// tile instead of a load and a store per tap. Registers as the 8-row
// GEMM kernels'.

// func sgemm8x32AVX512Taps(ntaps, k int, a, b *float32, offs *int, astride, ldb int, c *float32, ldc int)
TEXT ·sgemm8x32AVX512Taps(SB), NOSPLIT, $0-72
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
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
sgemm8x32AVX512Taps_tap:
	MOVQ R13, SI
	MOVQ (BX), DI
	SHLQ $2, DI
	ADDQ R9, DI
	MOVQ R12, CX
sgemm8x32AVX512Taps_k:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	VBROADCASTSS 0(SI), Z18
	VFMADD231PS Z16, Z18, Z0
	VFMADD231PS Z17, Z18, Z1
	VBROADCASTSS 4(SI), Z18
	VFMADD231PS Z16, Z18, Z2
	VFMADD231PS Z17, Z18, Z3
	VBROADCASTSS 8(SI), Z18
	VFMADD231PS Z16, Z18, Z4
	VFMADD231PS Z17, Z18, Z5
	VBROADCASTSS 12(SI), Z18
	VFMADD231PS Z16, Z18, Z6
	VFMADD231PS Z17, Z18, Z7
	VBROADCASTSS 16(SI), Z18
	VFMADD231PS Z16, Z18, Z8
	VFMADD231PS Z17, Z18, Z9
	VBROADCASTSS 20(SI), Z18
	VFMADD231PS Z16, Z18, Z10
	VFMADD231PS Z17, Z18, Z11
	VBROADCASTSS 24(SI), Z18
	VFMADD231PS Z16, Z18, Z12
	VFMADD231PS Z17, Z18, Z13
	VBROADCASTSS 28(SI), Z18
	VFMADD231PS Z16, Z18, Z14
	VFMADD231PS Z17, Z18, Z15
	ADDQ $32, SI
	ADDQ R10, DI
	DECQ CX
	JNE sgemm8x32AVX512Taps_k
	ADDQ R11, R13
	ADDQ $8, BX
	DECQ AX
	JNE sgemm8x32AVX512Taps_tap
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z10, (DX)
	VMOVUPS Z11, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z12, (DX)
	VMOVUPS Z13, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z14, (DX)
	VMOVUPS Z15, 64(DX)
	VZEROUPPER
	RET

// func dgemm8x16AVX512Taps(ntaps, k int, a, b *float64, offs *int, astride, ldb int, c *float64, ldc int)
TEXT ·dgemm8x16AVX512Taps(SB), NOSPLIT, $0-72
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
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
dgemm8x16AVX512Taps_tap:
	MOVQ R13, SI
	MOVQ (BX), DI
	SHLQ $3, DI
	ADDQ R9, DI
	MOVQ R12, CX
dgemm8x16AVX512Taps_k:
	VMOVUPD (DI), Z16
	VMOVUPD 64(DI), Z17
	VBROADCASTSD 0(SI), Z18
	VFMADD231PD Z16, Z18, Z0
	VFMADD231PD Z17, Z18, Z1
	VBROADCASTSD 8(SI), Z18
	VFMADD231PD Z16, Z18, Z2
	VFMADD231PD Z17, Z18, Z3
	VBROADCASTSD 16(SI), Z18
	VFMADD231PD Z16, Z18, Z4
	VFMADD231PD Z17, Z18, Z5
	VBROADCASTSD 24(SI), Z18
	VFMADD231PD Z16, Z18, Z6
	VFMADD231PD Z17, Z18, Z7
	VBROADCASTSD 32(SI), Z18
	VFMADD231PD Z16, Z18, Z8
	VFMADD231PD Z17, Z18, Z9
	VBROADCASTSD 40(SI), Z18
	VFMADD231PD Z16, Z18, Z10
	VFMADD231PD Z17, Z18, Z11
	VBROADCASTSD 48(SI), Z18
	VFMADD231PD Z16, Z18, Z12
	VFMADD231PD Z17, Z18, Z13
	VBROADCASTSD 56(SI), Z18
	VFMADD231PD Z16, Z18, Z14
	VFMADD231PD Z17, Z18, Z15
	ADDQ $64, SI
	ADDQ R10, DI
	DECQ CX
	JNE dgemm8x16AVX512Taps_k
	ADDQ R11, R13
	ADDQ $8, BX
	DECQ AX
	JNE dgemm8x16AVX512Taps_tap
	VMOVUPD Z0, (DX)
	VMOVUPD Z1, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z2, (DX)
	VMOVUPD Z3, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z4, (DX)
	VMOVUPD Z5, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z6, (DX)
	VMOVUPD Z7, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z8, (DX)
	VMOVUPD Z9, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z10, (DX)
	VMOVUPD Z11, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z12, (DX)
	VMOVUPD Z13, 64(DX)
	ADDQ R8, DX
	VMOVUPD Z14, (DX)
	VMOVUPD Z15, 64(DX)
	VZEROUPPER
	RET

