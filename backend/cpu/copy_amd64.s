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
