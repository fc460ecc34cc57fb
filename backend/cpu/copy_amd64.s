//go:build amd64 && !purego

#include "textflag.h"

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
	// The source rows 0–7.
	MOVQ    SI, AX
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(R9*1), Y1
	VMOVUPS (AX)(R9*2), Y2
	VMOVUPS (AX)(R10*1), Y3
	LEAQ    (AX)(R9*4), AX
	VMOVUPS (AX), Y4
	VMOVUPS (AX)(R9*1), Y5
	VMOVUPS (AX)(R9*2), Y6
	VMOVUPS (AX)(R10*1), Y7
	// Pairs of rows interleaved.
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	// Quadruples within each 128-bit lane.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	// The lanes: low halves make rows 0–3, high halves rows 4–7.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
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
