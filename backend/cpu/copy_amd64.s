//go:build amd64 && !purego

#include "textflag.h"

// TRANSPOSE8 loads the 8×8 block of float32 whose rows start at AX, R9
// bytes apart (R10 = 3·R9), and leaves its transpose's rows in Y8–Y15
// (it clobbers AX and Y0–Y7): pairs of rows interleaved, quadruples
// within each 128-bit lane, then the lanes exchanged.
#define TRANSPOSE8 \
	VMOVUPS (AX), Y0 \
	VMOVUPS (AX)(R9*1), Y1 \
	VMOVUPS (AX)(R9*2), Y2 \
	VMOVUPS (AX)(R10*1), Y3 \
	LEAQ (AX)(R9*4), AX \
	VMOVUPS (AX), Y4 \
	VMOVUPS (AX)(R9*1), Y5 \
	VMOVUPS (AX)(R9*2), Y6 \
	VMOVUPS (AX)(R10*1), Y7 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15

// BUF8(off) stores Y8–Y15 as rows 64 bytes apart at off(BX).
#define BUF8(off) \
	VMOVUPS Y8, off+0(BX) \
	VMOVUPS Y9, off+64(BX) \
	VMOVUPS Y10, off+128(BX) \
	VMOVUPS Y11, off+192(BX) \
	VMOVUPS Y12, off+256(BX) \
	VMOVUPS Y13, off+320(BX) \
	VMOVUPS Y14, off+384(BX) \
	VMOVUPS Y15, off+448(BX)

// UNBUFROW(OP, off, dst, dst32) copies the 64 bytes at off(BX) to dst
// (and dst32, 32 bytes on) by two adjacent stores OP, through Y0 and Y1.
#define UNBUFROW(OP, off, dst, dst32) \
	VMOVUPS off(BX), Y0 \
	VMOVUPS off+32(BX), Y1 \
	OP Y0, dst \
	OP Y1, dst32

// UNBUF16(OP) copies buf's 16 rows of 64 bytes at BX to the rows at DI,
// R8 bytes apart (R11 = 3·R8), each by two adjacent stores OP; it
// clobbers AX, Y0 and Y1.
#define UNBUF16(OP) \
	MOVQ DI, AX \
	UNBUFROW(OP, 0, (AX), 32(AX)) \
	UNBUFROW(OP, 64, (AX)(R8*1), 32(AX)(R8*1)) \
	UNBUFROW(OP, 128, (AX)(R8*2), 32(AX)(R8*2)) \
	UNBUFROW(OP, 192, (AX)(R11*1), 32(AX)(R11*1)) \
	LEAQ (AX)(R8*4), AX \
	UNBUFROW(OP, 256, (AX), 32(AX)) \
	UNBUFROW(OP, 320, (AX)(R8*1), 32(AX)(R8*1)) \
	UNBUFROW(OP, 384, (AX)(R8*2), 32(AX)(R8*2)) \
	UNBUFROW(OP, 448, (AX)(R11*1), 32(AX)(R11*1)) \
	LEAQ (AX)(R8*4), AX \
	UNBUFROW(OP, 512, (AX), 32(AX)) \
	UNBUFROW(OP, 576, (AX)(R8*1), 32(AX)(R8*1)) \
	UNBUFROW(OP, 640, (AX)(R8*2), 32(AX)(R8*2)) \
	UNBUFROW(OP, 704, (AX)(R11*1), 32(AX)(R11*1)) \
	LEAQ (AX)(R8*4), AX \
	UNBUFROW(OP, 768, (AX), 32(AX)) \
	UNBUFROW(OP, 832, (AX)(R8*1), 32(AX)(R8*1)) \
	UNBUFROW(OP, 896, (AX)(R8*2), 32(AX)(R8*2)) \
	UNBUFROW(OP, 960, (AX)(R11*1), 32(AX)(R11*1))

// TRANSPOSE16 loads the 16×16 block of float32 whose rows start at SI,
// R9 bytes apart (R10 = 3·R9), and leaves its transpose's row r in Zr
// (it clobbers AX and Z16–Z31).
#define TRANSPOSE16 \
	MOVQ SI, AX \
	VMOVUPS (AX), Z0 \
	VMOVUPS (AX)(R9*1), Z1 \
	VMOVUPS (AX)(R9*2), Z2 \
	VMOVUPS (AX)(R10*1), Z3 \
	LEAQ (AX)(R9*4), AX \
	VMOVUPS (AX), Z4 \
	VMOVUPS (AX)(R9*1), Z5 \
	VMOVUPS (AX)(R9*2), Z6 \
	VMOVUPS (AX)(R10*1), Z7 \
	LEAQ (AX)(R9*4), AX \
	VMOVUPS (AX), Z8 \
	VMOVUPS (AX)(R9*1), Z9 \
	VMOVUPS (AX)(R9*2), Z10 \
	VMOVUPS (AX)(R10*1), Z11 \
	LEAQ (AX)(R9*4), AX \
	VMOVUPS (AX), Z12 \
	VMOVUPS (AX)(R9*1), Z13 \
	VMOVUPS (AX)(R9*2), Z14 \
	VMOVUPS (AX)(R10*1), Z15 \
	VUNPCKLPS Z1, Z0, Z16 \
	VUNPCKHPS Z1, Z0, Z17 \
	VUNPCKLPS Z3, Z2, Z18 \
	VUNPCKHPS Z3, Z2, Z19 \
	VUNPCKLPS Z5, Z4, Z20 \
	VUNPCKHPS Z5, Z4, Z21 \
	VUNPCKLPS Z7, Z6, Z22 \
	VUNPCKHPS Z7, Z6, Z23 \
	VUNPCKLPS Z9, Z8, Z24 \
	VUNPCKHPS Z9, Z8, Z25 \
	VUNPCKLPS Z11, Z10, Z26 \
	VUNPCKHPS Z11, Z10, Z27 \
	VUNPCKLPS Z13, Z12, Z28 \
	VUNPCKHPS Z13, Z12, Z29 \
	VUNPCKLPS Z15, Z14, Z30 \
	VUNPCKHPS Z15, Z14, Z31 \
	VSHUFPS $0x44, Z18, Z16, Z0 \
	VSHUFPS $0xEE, Z18, Z16, Z1 \
	VSHUFPS $0x44, Z19, Z17, Z2 \
	VSHUFPS $0xEE, Z19, Z17, Z3 \
	VSHUFPS $0x44, Z22, Z20, Z4 \
	VSHUFPS $0xEE, Z22, Z20, Z5 \
	VSHUFPS $0x44, Z23, Z21, Z6 \
	VSHUFPS $0xEE, Z23, Z21, Z7 \
	VSHUFPS $0x44, Z26, Z24, Z8 \
	VSHUFPS $0xEE, Z26, Z24, Z9 \
	VSHUFPS $0x44, Z27, Z25, Z10 \
	VSHUFPS $0xEE, Z27, Z25, Z11 \
	VSHUFPS $0x44, Z30, Z28, Z12 \
	VSHUFPS $0xEE, Z30, Z28, Z13 \
	VSHUFPS $0x44, Z31, Z29, Z14 \
	VSHUFPS $0xEE, Z31, Z29, Z15 \
	VSHUFF32X4 $0x88, Z4, Z0, Z16 \
	VSHUFF32X4 $0xDD, Z4, Z0, Z17 \
	VSHUFF32X4 $0x88, Z12, Z8, Z18 \
	VSHUFF32X4 $0xDD, Z12, Z8, Z19 \
	VSHUFF32X4 $0x88, Z18, Z16, Z0 \
	VSHUFF32X4 $0xDD, Z18, Z16, Z8 \
	VSHUFF32X4 $0x88, Z19, Z17, Z4 \
	VSHUFF32X4 $0xDD, Z19, Z17, Z12 \
	VSHUFF32X4 $0x88, Z5, Z1, Z20 \
	VSHUFF32X4 $0xDD, Z5, Z1, Z21 \
	VSHUFF32X4 $0x88, Z13, Z9, Z22 \
	VSHUFF32X4 $0xDD, Z13, Z9, Z23 \
	VSHUFF32X4 $0x88, Z22, Z20, Z1 \
	VSHUFF32X4 $0xDD, Z22, Z20, Z9 \
	VSHUFF32X4 $0x88, Z23, Z21, Z5 \
	VSHUFF32X4 $0xDD, Z23, Z21, Z13 \
	VSHUFF32X4 $0x88, Z6, Z2, Z24 \
	VSHUFF32X4 $0xDD, Z6, Z2, Z25 \
	VSHUFF32X4 $0x88, Z14, Z10, Z26 \
	VSHUFF32X4 $0xDD, Z14, Z10, Z27 \
	VSHUFF32X4 $0x88, Z26, Z24, Z2 \
	VSHUFF32X4 $0xDD, Z26, Z24, Z10 \
	VSHUFF32X4 $0x88, Z27, Z25, Z6 \
	VSHUFF32X4 $0xDD, Z27, Z25, Z14 \
	VSHUFF32X4 $0x88, Z7, Z3, Z28 \
	VSHUFF32X4 $0xDD, Z7, Z3, Z29 \
	VSHUFF32X4 $0x88, Z15, Z11, Z30 \
	VSHUFF32X4 $0xDD, Z15, Z11, Z31 \
	VSHUFF32X4 $0x88, Z30, Z28, Z3 \
	VSHUFF32X4 $0xDD, Z30, Z28, Z11 \
	VSHUFF32X4 $0x88, Z31, Z29, Z7 \
	VSHUFF32X4 $0xDD, Z31, Z29, Z15

// STORE16(OP) stores Z0–Z15 by OP as the rows at DI, R8 bytes apart
// (R11 = 3·R8); it clobbers BX.
#define STORE16(OP) \
	MOVQ DI, BX \
	OP Z0, (BX) \
	OP Z1, (BX)(R8*1) \
	OP Z2, (BX)(R8*2) \
	OP Z3, (BX)(R11*1) \
	LEAQ (BX)(R8*4), BX \
	OP Z4, (BX) \
	OP Z5, (BX)(R8*1) \
	OP Z6, (BX)(R8*2) \
	OP Z7, (BX)(R11*1) \
	LEAQ (BX)(R8*4), BX \
	OP Z8, (BX) \
	OP Z9, (BX)(R8*1) \
	OP Z10, (BX)(R8*2) \
	OP Z11, (BX)(R11*1) \
	LEAQ (BX)(R8*4), BX \
	OP Z12, (BX) \
	OP Z13, (BX)(R8*1) \
	OP Z14, (BX)(R8*2) \
	OP Z15, (BX)(R11*1)

// func copy512(dst, src *byte, n int)
// copy512 copies n bytes, a multiple of 256, from src to dst (which do
// not overlap) with AVX-512 loads and stores, four vectors at a time.
TEXT ·copy512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $8, CX
	JZ   done

loop:
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	ADDQ      $256, SI
	ADDQ      $256, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER

done:
	RET

// func copy256(dst, src *byte, n int)
// copy256 is copy512 with AVX2 loads and stores, eight vectors at a
// time.
TEXT ·copy256(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $8, CX
	JZ   done256

loop256:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VMOVDQU 128(SI), Y4
	VMOVDQU 160(SI), Y5
	VMOVDQU 192(SI), Y6
	VMOVDQU 224(SI), Y7
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	VMOVDQU Y4, 128(DI)
	VMOVDQU Y5, 160(DI)
	VMOVDQU Y6, 192(DI)
	VMOVDQU Y7, 224(DI)
	ADDQ    $256, SI
	ADDQ    $256, DI
	DECQ    CX
	JNZ     loop256
	VZEROUPPER

done256:
	RET

// func transpose8x8F32AVX2(d *float32, ld int, s *float32, ls int, n int)
//
// Transposes n 8×8 blocks of float32: block b reads 8 rows of 8
// elements at s + 8b + k·ls (k < 8) and writes its columns as the rows
// d + 8b·ld + k·ld; ld and ls are in elements. Unpacks, shuffles and a
// lane permute, 24 instructions a block.
TEXT ·transpose8x8F32AVX2(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	MOVQ s+16(FP), SI
	MOVQ ls+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), CX
	TESTQ CX, CX
	JE   tdone
	LEAQ (R9)(R9*2), R10 // 3·ls
	LEAQ (R8)(R8*2), R11 // 3·ld
tloop:
	MOVQ    SI, AX
	TRANSPOSE8
	MOVQ    DI, BX
	VMOVUPS Y8, (BX)
	VMOVUPS Y9, (BX)(R8*1)
	VMOVUPS Y10, (BX)(R8*2)
	VMOVUPS Y11, (BX)(R11*1)
	LEAQ    (BX)(R8*4), BX
	VMOVUPS Y12, (BX)
	VMOVUPS Y13, (BX)(R8*1)
	VMOVUPS Y14, (BX)(R8*2)
	VMOVUPS Y15, (BX)(R11*1)
	ADDQ    $32, SI
	LEAQ    (BX)(R8*4), DI
	DECQ    CX
	JNE     tloop
tdone:
	VZEROUPPER
	RET

// func fillBytesAVX2(d *byte, n int, pat *byte, nt bool)
//
// Fills n bytes (a multiple of 128) at d with the 32-byte pattern at
// pat, 128 bytes an iteration; with nt, the stores are non-temporal
// (they skip the cache and its read of each destination line, for fills
// larger than the caches) and d must be 32-byte aligned.
TEXT ·fillBytesAVX2(SB), NOSPLIT, $0-25
	MOVQ    d+0(FP), DI
	MOVQ    n+8(FP), CX
	MOVQ    pat+16(FP), SI
	VMOVDQU (SI), Y0
	SHRQ    $7, CX
	JZ      fdone
	MOVBLZX nt+24(FP), AX
	TESTQ   AX, AX
	JNE     fnt
floop:
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	ADDQ    $128, DI
	DECQ    CX
	JNE     floop
	JMP     fdone
fnt:
	VMOVNTDQ Y0, (DI)
	VMOVNTDQ Y0, 32(DI)
	VMOVNTDQ Y0, 64(DI)
	VMOVNTDQ Y0, 96(DI)
	ADDQ     $128, DI
	DECQ     CX
	JNE      fnt
	SFENCE
fdone:
	VZEROUPPER
	RET

// func transpose16x16F32AVX512(d *float32, ld int, s *float32, ls int, n int, nt bool)
//
// Transposes n 16×16 blocks of float32, side by side along d's rows:
// block b reads 16 rows of 16 elements at s + (16b+k)·ls (k < 16) and
// writes its columns as the rows d + 16b + k·ld; ld and ls are in
// elements. Every load and store is a whole 64-byte vector, so each
// cache line of either side is touched once; with nt the stores are
// non-temporal (d and ld·4 must then be multiples of 64). Unpacks and
// shuffles within 128-bit lanes, then two rounds of lane shuffles.
TEXT ·transpose16x16F32AVX512(SB), NOSPLIT, $0-41
	MOVQ    d+0(FP), DI
	MOVQ    ld+8(FP), R8
	SHLQ    $2, R8
	MOVQ    s+16(FP), SI
	MOVQ    ls+24(FP), R9
	SHLQ    $2, R9
	MOVQ    n+32(FP), CX
	MOVBLZX nt+40(FP), DX
	TESTQ   CX, CX
	JE      xdone
	LEAQ    (R9)(R9*2), R10 // 3·ls
	LEAQ    (R8)(R8*2), R11 // 3·ld
	MOVQ    R9, R12
	SHLQ    $4, R12         // 16·ls: the next block's source
xloop:
	TRANSPOSE16
	TESTQ   DX, DX
	JNE     xnt
	STORE16(VMOVUPS)
	JMP     xnext
xnt:
	STORE16(VMOVNTPS)
xnext:
	ADDQ    R12, SI
	ADDQ    $64, DI
	DECQ    CX
	JNE     xloop
	TESTQ   DX, DX
	JE      xdone
	SFENCE
xdone:
	VZEROUPPER
	RET

// func transpose16x16F32AVX2(d *float32, ld int, s *float32, ls int, n int, nt bool, buf *float32)
//
// transpose16x16F32AVX512 on AVX2: each 16×16 block is transposed as
// four 8×8 blocks into buf (256 elements, rows 64 bytes apart), whose
// rows are then stored whole, so that with nt each destination line is
// written by two adjacent non-temporal stores (half lines written apart
// would each flush a write-combining buffer).
TEXT ·transpose16x16F32AVX2(SB), NOSPLIT, $0-56
	MOVQ    d+0(FP), DI
	MOVQ    ld+8(FP), R8
	SHLQ    $2, R8
	MOVQ    s+16(FP), SI
	MOVQ    ls+24(FP), R9
	SHLQ    $2, R9
	MOVQ    n+32(FP), CX
	MOVBLZX nt+40(FP), DX
	MOVQ    buf+48(FP), BX
	TESTQ   CX, CX
	JE      ydone
	LEAQ    (R9)(R9*2), R10 // 3·ls
	LEAQ    (R8)(R8*2), R11 // 3·ld
	MOVQ    R9, R12
	SHLQ    $4, R12         // 16·ls: the next block's source
yloop:
	MOVQ    SI, AX
	TRANSPOSE8
	BUF8(0)
	LEAQ    32(SI), AX
	TRANSPOSE8
	BUF8(512)
	LEAQ    (SI)(R9*8), AX
	TRANSPOSE8
	BUF8(32)
	LEAQ    (SI)(R9*8), AX
	ADDQ    $32, AX
	TRANSPOSE8
	BUF8(544)
	TESTQ   DX, DX
	JNE     ynt
	UNBUF16(VMOVUPS)
	JMP     ynext
ynt:
	UNBUF16(VMOVNTPS)
ynext:
	ADDQ    R12, SI
	ADDQ    $64, DI
	DECQ    CX
	JNE     yloop
	TESTQ   DX, DX
	JE      ydone
	SFENCE
ydone:
	VZEROUPPER
	RET

// func packPanelsAVX2(dst, src *byte, rows, panels, chunk, ls, ldp int)
//
// Packs rows×panels chunks of chunk bytes (a multiple of 64): the chunk
// of row r and panel q, at src + r·ls + q·chunk, goes to dst + q·ldp +
// r·chunk. Row by row, each row's chunks in order: the loads stream
// along the source rows.
TEXT ·packPanelsAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ panels+24(FP), R9
	MOVQ chunk+32(FP), R10
	MOVQ ls+40(FP), R11
	MOVQ ldp+48(FP), R12
	TESTQ R8, R8
	JZ   packdone
	TESTQ R9, R9
	JZ   packdone

packrow:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, CX

packpanel:
	XORQ R13, R13

packchunk:
	VMOVDQU (AX)(R13*1), Y0
	VMOVDQU 32(AX)(R13*1), Y1
	VMOVDQU Y0, (BX)(R13*1)
	VMOVDQU Y1, 32(BX)(R13*1)
	ADDQ    $64, R13
	CMPQ    R13, R10
	JB      packchunk
	ADDQ    R10, AX
	ADDQ    R12, BX
	DECQ    CX
	JNZ     packpanel
	ADDQ    R11, SI
	ADDQ    R10, DI
	DECQ    R8
	JNZ     packrow
	VZEROUPPER

packdone:
	RET
