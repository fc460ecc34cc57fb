//go:build amd64 && !purego

#include "textflag.h"
#include "consts_amd64.h"

// AVX2+FMA kernels over contiguous float32 and float64 slices; see
// simd_amd64.go for their contracts and simd_test.go for their measured
// accuracy. Every routine is a leaf working in blocks of one 256-bit
// vector (8 float32 or 4 float64 lanes). The arithmetic routines are
// unrolled four times and process whole vectors only (their callers
// finish the last few elements in Go); the transcendental ones pass their
// last partial block through a zeroed 32-byte buffer on the stack. No
// routine reads or writes outside its slices (masked loads and stores,
// VMASKMOVPS, may fault on masked-out lanes on AMD processors, so they
// are not used). Y15 and X15 are left alone.
//
// Plan 9 operand order is the reverse of Intel's: VSUBPS B, A, D is
// D = A - B, VFMADD213PS C, B, A is A = B·A + C, VFMADD231PS C, B, A is
// A = B·C + A and VFNMADD231PS C, B, A is A = A - B·C.

// The polynomial coefficients are near-minimax fits computed for peel
// (Lawson-reweighted least squares in float64 on a dense grid), rounded
// to float32: expC2…expC6 fit (e^r - 1 - r)/r² on |r| ≤ ln2/2 for
// relative error 3e-9 in e^r, tanhC0…tanhC4 fit (tanh x - x)/x³ as a
// polynomial in x² on |x| ≤ 0.55 for relative error 1e-9 in tanh.
CONST8(absMask<>, 0x7fffffff)
CONST8(signMask<>, 0x80000000)
CONST8(one<>, 0x3f800000)        // 1; also 127<<23, the exponent bias of 2^n
CONST8(two<>, 0x40000000)        // 2
CONST8(expHi<>, 0x42d00000)      // 104: e^104 overflows float32
CONST8(expLo<>, 0xc2d00000)      // -104: e^-104 rounds to 0
CONST8(log2e<>, 0x3fb8aa3b)      // 1/ln2
CONST8(magic<>, 0x4b400000)      // 1.5·2^23: adding it rounds to an integer
CONST8(ln2hi<>, 0x3f317218)      // ln2 rounded to float32
CONST8(ln2lo<>, 0xb102e308)      // ln2 - ln2hi
CONST8(expC2<>, 0x3efffffe)      // 0.49999994
CONST8(expC3<>, 0x3e2aaa49)      // 0.16666521
CONST8(expC4<>, 0x3d2aac79)      // 0.041668389
CONST8(expC5<>, 0x3c091cec)      // 0.0083687119
CONST8(expC6<>, 0x3ab5120a)      // 0.0013814580
CONST8(tanhCut<>, 0x3f0ccccd)    // 0.55: below it tanh uses its odd polynomial
CONST8(tanhMax<>, 0x41200000)    // 10: tanh rounds to 1 beyond 9.02
CONST8(tanhC0<>, 0xbeaaaaa5)     // -0.33333316
CONST8(tanhC1<>, 0x3e088693)     // 0.13332586
CONST8(tanhC2<>, 0xbd5c943c)     // -0.053852305
CONST8(tanhC3<>, 0x3cac9e77)     // 0.021071656
CONST8(tanhC4<>, 0xbbcd97d7)     // -0.0062742042

// LOADTAIL sets Y0 to the CX (1 to 7) float32 at (SI), the other lanes
// zero, through the 32-byte buffer at (SP). Clobbers AX and BX.
#define LOADTAIL \
	VXORPS  Y0, Y0, Y0; \
	VMOVUPS Y0, (SP); \
	XORQ    AX, AX; \
tailIn: \
	MOVL    (SI)(AX*4), BX; \
	MOVL    BX, (SP)(AX*4); \
	INCQ    AX; \
	CMPQ    AX, CX; \
	JB      tailIn; \
	VMOVUPS (SP), Y0

// STORETAIL stores the first CX lanes of Y0 to (DI) through the buffer
// at (SP). Clobbers AX and BX.
#define STORETAIL \
	VMOVUPS Y0, (SP); \
	XORQ    AX, AX; \
tailOut: \
	MOVL    (SP)(AX*4), BX; \
	MOVL    BX, (DI)(AX*4); \
	INCQ    AX; \
	CMPQ    AX, CX; \
	JB      tailOut

// EXP8 sets Y0 = e^Y0 for Y0 in [-104, 104] or NaN, with Y13 = 1.
// Clobbers Y1–Y3.
#define EXP8 \
	VMOVUPS      magic<>(SB), Y1;         /* Y1 = x/ln2 + magic: n in the low bits */ \
	VFMADD231PS  log2e<>(SB), Y0, Y1; \
	VSUBPS       magic<>(SB), Y1, Y2;     /* Y2 = n */ \
	VFNMADD231PS ln2hi<>(SB), Y2, Y0;     /* x - n·ln2hi (exact) */ \
	VFNMADD231PS ln2lo<>(SB), Y2, Y0;     /* Y0 = r, |r| ≤ ln2/2 */ \
	VMOVUPS      expC6<>(SB), Y2; \
	VFMADD213PS  expC5<>(SB), Y0, Y2; \
	VFMADD213PS  expC4<>(SB), Y0, Y2; \
	VFMADD213PS  expC3<>(SB), Y0, Y2; \
	VFMADD213PS  expC2<>(SB), Y0, Y2;     /* Y2 = Q(r) */ \
	VMULPS       Y0, Y0, Y3; \
	VFMADD213PS  Y0, Y3, Y2;              /* Y2 = e^r - 1 */ \
	VADDPS       Y13, Y2, Y2;             /* e^r */ \
	VPSUBD       magic<>(SB), Y1, Y1;     /* Y1 = n (int32) */ \
	VPSRAD       $1, Y1, Y3;              /* Y3 = n1 = n>>1 */ \
	VPSUBD       Y3, Y1, Y1;              /* Y1 = n2 = n - n1 */ \
	VPSLLD       $23, Y3, Y3; \
	VPADDD       Y13, Y3, Y3;             /* 2^n1 */ \
	VPSLLD       $23, Y1, Y1; \
	VPADDD       Y13, Y1, Y1;             /* 2^n2 */ \
	VMULPS       Y3, Y2, Y2;              /* exact */ \
	VMULPS       Y1, Y2, Y0

// ---------------------------------------------------------------------------
// Transcendental float32 functions, 8 lanes per block. Each loop body
// loads a block into Y0 (the last partial block through LOADTAIL, its
// unused lanes 0), computes in place and stores Y0.

// func tanh32AVX2(d, a []float32)
//
// tanh|x| is x + x³·P(x²) below 0.55, P a degree-4 minimax fit, and
// 1 - 2/(e^2|x| + 1) above, with |x| clamped to 10 and e^2|x| computed as
// in exp32AVX2 (no overflow or underflow is possible there). Both
// branches run on every lane and a blend picks one; the sign of x is put
// back last, so tanh(-0) = -0. NaN lanes take the polynomial branch,
// which keeps them NaN.
TEXT ·tanh32AVX2(SB), NOSPLIT, $32-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	VMOVUPS one<>(SB), Y13
	VMOVUPS two<>(SB), Y14

tanhLoop:
	CMPQ CX, $8
	JB   tanhTail
	VMOVUPS (SI), Y0

tanhBlock:
	VANDPS absMask<>(SB), Y0, Y1 // Y1 = |x|
	VXORPS Y1, Y0, Y2            // Y2 = sign bit of x

	// Large branch: E = e^z, z = 2·min(|x|, 10) = n·ln2 + r.
	VMINPS       tanhMax<>(SB), Y1, Y3
	VADDPS       Y3, Y3, Y3               // z
	VMOVUPS      magic<>(SB), Y4
	VFMADD231PS  log2e<>(SB), Y3, Y4      // Y4 = z/ln2 + magic: n in the low bits
	VSUBPS       magic<>(SB), Y4, Y5      // Y5 = n
	VFNMADD231PS ln2hi<>(SB), Y5, Y3      // z - n·ln2hi (exact)
	VFNMADD231PS ln2lo<>(SB), Y5, Y3      // Y3 = r, |r| ≤ ln2/2
	VMOVUPS      expC6<>(SB), Y5
	VFMADD213PS  expC5<>(SB), Y3, Y5
	VFMADD213PS  expC4<>(SB), Y3, Y5
	VFMADD213PS  expC3<>(SB), Y3, Y5
	VFMADD213PS  expC2<>(SB), Y3, Y5      // Y5 = (e^r - 1 - r)/r²
	VMULPS       Y3, Y3, Y6
	VFMADD213PS  Y3, Y6, Y5               // Y5 = e^r - 1
	VADDPS       Y13, Y5, Y5              // e^r
	VPSLLD       $23, Y4, Y4
	VPADDD       Y13, Y4, Y4              // Y4 = 2^n
	VMULPS       Y4, Y5, Y5               // E
	VADDPS       Y13, Y5, Y5              // E + 1
	VDIVPS       Y5, Y14, Y5              // 2/(E + 1)
	VSUBPS       Y5, Y13, Y5              // Y5 = 1 - 2/(E + 1)

	// Small branch: |x| + |x|³·P(x²).
	VMULPS      Y1, Y1, Y6        // t = x²
	VMOVUPS     tanhC4<>(SB), Y7
	VFMADD213PS tanhC3<>(SB), Y6, Y7
	VFMADD213PS tanhC2<>(SB), Y6, Y7
	VFMADD213PS tanhC1<>(SB), Y6, Y7
	VFMADD213PS tanhC0<>(SB), Y6, Y7  // Y7 = P(t)
	VMULPS      Y1, Y6, Y6            // |x|³
	VFMADD213PS Y1, Y6, Y7            // Y7 = |x|³·P + |x|

	VCMPPS    $9, tanhCut<>(SB), Y1, Y6 // Y6 = !(|x| ≥ 0.55): small or NaN
	VBLENDVPS Y6, Y7, Y5, Y5
	VXORPS    Y2, Y5, Y0

	CMPQ CX, $8
	JB   tanhStoreTail
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     tanhLoop

tanhTail:
	TESTQ CX, CX
	JZ    tanhDone
	LOADTAIL
	JMP tanhBlock

tanhStoreTail:
	STORETAIL

tanhDone:
	VZEROUPPER
	RET

// func exp32AVX2(d, a []float32)
//
// x is clamped to [-104, 104] (keeping NaN), split as n·ln2 + r with
// n = round(x/ln2) and |r| ≤ ln2/2, e^r = 1 + r + r²·Q(r) with Q a
// degree-4 minimax fit, and the result scaled by 2^n in two exact
// factors 2^⌊n/2⌋·2^(n-⌊n/2⌋), so that overflow gives +Inf and results
// below 2^-126 round once to subnormals or 0.
TEXT ·exp32AVX2(SB), NOSPLIT, $32-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VMOVUPS expLo<>(SB), Y10
	VMOVUPS expHi<>(SB), Y11
	VMOVUPS one<>(SB), Y13

expLoop:
	CMPQ CX, $8
	JB   expTail
	VMOVUPS (SI), Y0

expBlock:
	// Lanes at or below -104 (a mask's -Inf, say) give +0 whatever they
	// compute; they compute e^0 instead of e^-104, whose scaling by 2^n
	// underflows: an underflowing multiplication takes a microcode
	// assist, 17× the time of a block (a causal attention's softmax,
	// half its scores masked, spent most of its time there).
	VCMPPS  $2, Y10, Y0, Y12 // Y12 = x ≤ -104 (false for NaN)
	VANDNPS Y0, Y12, Y0      // those lanes 0
	VMAXPS  Y0, Y10, Y0      // max(-104, x), NaN kept (the second source wins)
	VMINPS  Y0, Y11, Y0      // min(104, x)
	EXP8
	VANDNPS Y0, Y12, Y0 // +0 where x ≤ -104, as e^-104 rounds

	CMPQ CX, $8
	JB   expStoreTail
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     expLoop

expTail:
	TESTQ CX, CX
	JZ    expDone
	LOADTAIL
	JMP expBlock

expStoreTail:
	STORETAIL

expDone:
	VZEROUPPER
	RET

// func logistic32AVX2(d, a []float32)
//
// LOGISTIC8 sets Y0 = logistic(Y0) for every lane (NaN kept), with
// Y11 = 104 (expHi) and Y13 = 1. Clobbers Y1–Y8.
#define LOGISTIC8 \
	VMOVAPS Y0, Y8 /* x */; \
	VANDPS absMask<>(SB), Y0, Y0; \
	VMINPS Y0, Y11, Y0 /* min(104, |x|), NaN kept */; \
	VXORPS signMask<>(SB), Y0, Y0 /* -|x| */; \
	EXP8 /* Y0 = e */; \
	VADDPS Y13, Y0, Y4 /* dh = 1 + e */; \
	VSUBPS Y13, Y4, Y5 /* dh - 1 (exact) */; \
	VSUBPS Y5, Y0, Y5 /* dl = e - (dh - 1) (exact) */; \
	VBLENDVPS Y8, Y0, Y13, Y6 /* num = x < 0 ? e : 1 (by the sign bit) */; \
	VDIVPS Y4, Y13, Y7 /* 1/dh */; \
	VMULPS Y7, Y6, Y1 /* q0 */; \
	VFNMADD231PS Y4, Y1, Y6 /* num - q0·dh */; \
	VFNMADD231PS Y5, Y1, Y6 /* ρ = num - q0·(dh + dl) */; \
	VFMADD231PS Y7, Y6, Y1 /* q0 + ρ/dh */; \
	VMOVAPS Y1, Y0

// With e = e^-|x| (EXP8, so e is in (0, 1] and never overflows; it may be
// subnormal), logistic(x) = 1/(1 + e) for x ≥ 0 and e/(1 + e) for x < 0.
// The division is compensated: 1 + e is split exactly as dh + dl, the
// quotient q0 = num·(1/dh) is refined by one Newton step against
// dh + dl, so the only errors left are e's and one final rounding.
TEXT ·logistic32AVX2(SB), NOSPLIT, $32-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VMOVUPS expHi<>(SB), Y11
	VMOVUPS one<>(SB), Y13

logisticLoop:
	CMPQ CX, $8
	JB   logisticTail
	VMOVUPS (SI), Y0

logisticBlock:
	LOGISTIC8

	CMPQ CX, $8
	JB   logisticStoreTail
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     logisticLoop

logisticTail:
	TESTQ CX, CX
	JZ    logisticDone
	LOADTAIL
	JMP logisticBlock

logisticStoreTail:
	STORETAIL

logisticDone:
	VZEROUPPER
	RET

// Constants of GELUTanh (prims.GELUTanh): its clamp, the cubic's
// coefficient c, 2k = 2·√(2/π), k and 3c, rounded to float32.
CONST8(geluTLo<>, 0xc1200000)    // -10
CONST8(geluTC<>, 0x3d372713)     // 0.044715
CONST8(geluTK2<>, 0x3fcc422a)    // 2·√(2/π)
CONST8(geluTK<>, 0x3f4c422a)     // √(2/π)
CONST8(geluTC3<>, 0x3e095d4f)    // 3·0.044715

// GELUTARG sets Y0 = 2u = 2k·x_c·(1 + c·x_c²) for x in Y9, x_c = x
// clamped to ±10 (NaN kept). Clobbers Y1 and Y2.
#define GELUTARG \
	VMOVUPS     tanhMax<>(SB), Y1; \
	VMINPS      Y9, Y1, Y0;                /* min(10, x), NaN kept */ \
	VMOVUPS     geluTLo<>(SB), Y1; \
	VMAXPS      Y0, Y1, Y0;                /* max(-10, ·), NaN kept */ \
	VMULPS      Y0, Y0, Y1; \
	VMOVUPS     geluTC<>(SB), Y2; \
	VFMADD213PS one<>(SB), Y2, Y1;         /* 1 + c·x_c² */ \
	VMULPS      Y0, Y1, Y0; \
	VMULPS      geluTK2<>(SB), Y0, Y0

// func geluTanh32AVX2(d, a []float32)
//
// d = GELUTanh(a) = x·σ(2u) lane by lane (as geluTanhLoop computes it),
// with x·0 below -10, where σ(2u) has not quite reached 0.
TEXT ·geluTanh32AVX2(SB), NOSPLIT, $32-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VMOVUPS expHi<>(SB), Y11
	VMOVUPS one<>(SB), Y13

gtLoop:
	CMPQ CX, $8
	JB   gtTail
	VMOVUPS (SI), Y0

gtBlock:
	VMOVAPS  Y0, Y9                   // x
	GELUTARG
	LOGISTIC8                         // Y0 = σ(2u)
	VMULPS   Y0, Y9, Y0               // x·σ(2u)
	VXORPS   Y10, Y10, Y10
	VMULPS   Y10, Y9, Y10             // x·0
	VMOVUPS  geluTLo<>(SB), Y12
	VCMPPS   $1, Y12, Y9, Y12         // x < -10
	VBLENDVPS Y12, Y10, Y0, Y0

	CMPQ CX, $8
	JB   gtStoreTail
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     gtLoop

gtTail:
	TESTQ CX, CX
	JZ    gtDone
	LOADTAIL
	JMP gtBlock

gtStoreTail:
	STORETAIL

gtDone:
	VZEROUPPER
	RET

// func geluTanhGrad32AVX2(d, a []float32)
//
// d = GELUTanh′(a) = σ(2u) + 2x·σ(2u)·σ(−2u)·k(1 + 3c·x²) lane by lane,
// 1 above 10 and −0 below −10 (as geluTanhGradLoop computes it).
TEXT ·geluTanhGrad32AVX2(SB), NOSPLIT, $32-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VMOVUPS expHi<>(SB), Y11
	VMOVUPS one<>(SB), Y13

ggLoop:
	CMPQ CX, $8
	JB   ggTail
	VMOVUPS (SI), Y0

ggBlock:
	VMOVAPS  Y0, Y9                   // x
	GELUTARG
	VMOVAPS  Y0, Y14                  // 2u
	LOGISTIC8
	VMOVAPS  Y0, Y10                  // σ(2u)
	VXORPS   signMask<>(SB), Y14, Y0  // −2u
	LOGISTIC8                         // Y0 = σ(−2u)
	VMULPS   Y10, Y0, Y0              // σ(2u)·σ(−2u)
	VMULPS   Y9, Y9, Y1
	VMOVUPS  geluTC3<>(SB), Y2
	VFMADD213PS one<>(SB), Y2, Y1     // 1 + 3c·x²
	VMULPS   geluTK<>(SB), Y1, Y1     // q
	VMULPS   Y1, Y0, Y0
	VADDPS   Y9, Y9, Y1               // 2x
	VFMADD213PS Y10, Y1, Y0           // σ(2u) + 2x·σ·σ̄·q
	VMOVUPS  tanhMax<>(SB), Y12
	VCMPPS   $14, Y12, Y9, Y12        // x > 10
	VBLENDVPS Y12, Y13, Y0, Y0        // 1
	VMOVUPS  geluTLo<>(SB), Y12
	VCMPPS   $1, Y12, Y9, Y12         // x < -10
	VMOVUPS  signMask<>(SB), Y1       // −0
	VBLENDVPS Y12, Y1, Y0, Y0

	CMPQ CX, $8
	JB   ggStoreTail
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     ggLoop

ggTail:
	TESTQ CX, CX
	JZ    ggDone
	LOADTAIL
	JMP ggBlock

ggStoreTail:
	STORETAIL

ggDone:
	VZEROUPPER
	RET

// Constants of sinCos32AVX2, float64: the reduction's 2/π, rounding magic
// and two-part π/2, and the Taylor coefficients of fastmath.go's sinCosC.
CONST8(sinLimit<>, 0x497fffff)             // below float32(2^20)
CONST4(trigMagic<>, 0x4338000000000000)   // 1.5·2^52
CONST4(twoOverPi<>, 0x3fe45f306dc9c883)   // 2/π
CONST4(pio2Hi<>, 0x3ff921fb54442d18)      // π/2 rounded to float64
CONST4(pio2Lo<>, 0x3c91a62633145c07)      // π/2 - pio2Hi
CONST4(oneD<>, 0x3ff0000000000000)        // 1
CONST4(sinS1<>, 0xbfc5555555555555)       // -1/3!
CONST4(sinS2<>, 0x3f81111111111111)       // 1/5!
CONST4(sinS3<>, 0xbf2a01a01a01a01a)       // -1/7!
CONST4(sinS4<>, 0x3ec71de3a556c734)       // 1/9!
CONST4(sinS5<>, 0xbe5ae64567f544e4)       // -1/11!
CONST4(cosC1<>, 0xbfe0000000000000)       // -1/2!
CONST4(cosC2<>, 0x3fa5555555555555)       // 1/4!
CONST4(cosC3<>, 0xbf56c16c16c16c17)       // -1/6!
CONST4(cosC4<>, 0x3efa01a01a01a01a)       // 1/8!
CONST4(cosC5<>, 0xbe927e4fb7789f5c)       // -1/10!

// SINCOS4 sets s = sin(z + q·π/2) for the four float64 z ≥ 0 (below 2^20)
// in z, with q (0 or 1) in each int64 lane of Y12. Clobbers z, n, t, c.
// z = j·π/2 + r with j = round(z·2/π) in n's low bits; z - j·pio2Hi is
// exact with FMA (a multiple of 2^-52 below 1), so r has one rounding
// and the pio2Lo product's, far below r's ulp.
#define SINCOS4(z, n, t, s, c) \
	VMOVUPD      trigMagic<>(SB), n; \
	VFMADD231PD  twoOverPi<>(SB), z, n;  /* n = z·2/π + magic: j in the low bits */ \
	VSUBPD       trigMagic<>(SB), n, t;  /* t = j */ \
	VFNMADD231PD pio2Hi<>(SB), t, z; \
	VFNMADD231PD pio2Lo<>(SB), t, z;     /* z = r, |r| ≤ π/4 */ \
	VMULPD       z, z, t;                /* t = r² */ \
	VMOVUPD      sinS5<>(SB), s; \
	VFMADD213PD  sinS4<>(SB), t, s; \
	VFMADD213PD  sinS3<>(SB), t, s; \
	VFMADD213PD  sinS2<>(SB), t, s; \
	VFMADD213PD  sinS1<>(SB), t, s; \
	VMULPD       t, s, s; \
	VFMADD213PD  z, z, s;                /* s = sin r */ \
	VMOVUPD      cosC5<>(SB), c; \
	VFMADD213PD  cosC4<>(SB), t, c; \
	VFMADD213PD  cosC3<>(SB), t, c; \
	VFMADD213PD  cosC2<>(SB), t, c; \
	VFMADD213PD  cosC1<>(SB), t, c; \
	VFMADD213PD  oneD<>(SB), t, c;       /* c = cos r */ \
	VPADDQ       Y12, n, n;              /* j + q */ \
	VPSLLQ       $63, n, t;              /* sign bit: j + q odd */ \
	VBLENDVPD    t, c, s, s; \
	VPSRLQ       $1, n, n; \
	VPSLLQ       $63, n, n;              /* sign bit: bit 1 of j + q */ \
	VXORPD       n, s, s

// func sinCos32AVX2(d, a []float32, q uint64) int
//
// sin a[i] (q = 0) or cos a[i] = sin(a[i] + π/2) (q = 1), 8 lanes per
// block evaluated in float64 as two halves of 4 (VCVTPS2PD, SINCOS4,
// VCVTPD2PS, rounding once), the algorithm of fastmath.go's sinCos32 with
// a two-part π/2: |x| is reduced, and the sign of x is put back last for
// sin. A block holding NaN, ±Inf or |x| ≥ 2^20 is not computed: the
// kernel stops before it, without storing it, and returns the number of
// elements done (len(d) when there is no such block).
TEXT ·sinCos32AVX2(SB), NOSPLIT, $32-64
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	MOVQ         q+48(FP), AX
	MOVQ         CX, R8
	VMOVQ        AX, X12
	VPBROADCASTQ X12, Y12 // q in each int64 lane
	DECQ         AX       // q = 0: all ones; q = 1: 0
	MOVL         $0x80000000, BX
	ANDL         BX, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13 // the sign bits the result takes from x

sinCosLoop:
	CMPQ    CX, $8
	JB      sinCosTail
	VMOVUPS (SI), Y14

sinCosBlock:
	VANDPS   absMask<>(SB), Y14, Y0
	VPCMPGTD sinLimit<>(SB), Y0, Y1 // NaN, ±Inf or |x| ≥ 2^20
	VPTEST   Y1, Y1
	JNZ      sinCosSlow
	VEXTRACTF128 $1, Y0, X6
	VCVTPS2PD    X0, Y0
	VCVTPS2PD    X6, Y6
	SINCOS4(Y0, Y1, Y2, Y3, Y4)
	SINCOS4(Y6, Y7, Y8, Y9, Y10)
	VCVTPD2PSY   Y3, X3
	VCVTPD2PSY   Y9, X9
	VINSERTF128  $1, X9, Y3, Y3
	VANDPS       Y13, Y14, Y0
	VXORPS       Y3, Y0, Y0

	CMPQ    CX, $8
	JB      sinCosStoreTail
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     sinCosLoop

sinCosTail:
	TESTQ CX, CX
	JZ    sinCosDone
	LOADTAIL
	VMOVUPS Y0, Y14
	JMP     sinCosBlock

sinCosStoreTail:
	STORETAIL

sinCosDone:
	MOVQ R8, ret+56(FP)
	VZEROUPPER
	RET

sinCosSlow:
	SUBQ CX, R8
	MOVQ R8, ret+56(FP)
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// Arithmetic, float32 (LANES 8) and float64 (LANES 4): four vectors (128
// bytes) per iteration, then single vectors; the len(d) mod LANES last
// elements are left to the caller. Registers on entry: DI = d, SI = a,
// DX = b (VV), Y4 = the broadcast scalar (VS, SV), CX = len(d).

// BINVV: d = a OP b.
#define BINVV(OP, LANES) \
vvLoop4: \
	CMPQ    CX, $(4*LANES); \
	JB      vvLoop1; \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	OP      (DX), Y0, Y0; \
	OP      32(DX), Y1, Y1; \
	OP      64(DX), Y2, Y2; \
	OP      96(DX), Y3, Y3; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ    $128, SI; \
	ADDQ    $128, DX; \
	ADDQ    $128, DI; \
	SUBQ    $(4*LANES), CX; \
	JMP     vvLoop4; \
vvLoop1: \
	CMPQ    CX, $LANES; \
	JB      vvDone; \
	VMOVUPS (SI), Y0; \
	OP      (DX), Y0, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, SI; \
	ADDQ    $32, DX; \
	ADDQ    $32, DI; \
	SUBQ    $LANES, CX; \
	JMP     vvLoop1; \
vvDone: \
	VZEROUPPER; \
	RET

// BINVS: d = a OP s.
#define BINVS(OP, LANES) \
vsLoop4: \
	CMPQ    CX, $(4*LANES); \
	JB      vsLoop1; \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	OP      Y4, Y0, Y0; \
	OP      Y4, Y1, Y1; \
	OP      Y4, Y2, Y2; \
	OP      Y4, Y3, Y3; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ    $128, SI; \
	ADDQ    $128, DI; \
	SUBQ    $(4*LANES), CX; \
	JMP     vsLoop4; \
vsLoop1: \
	CMPQ    CX, $LANES; \
	JB      vsDone; \
	VMOVUPS (SI), Y0; \
	OP      Y4, Y0, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, SI; \
	ADDQ    $32, DI; \
	SUBQ    $LANES, CX; \
	JMP     vsLoop1; \
vsDone: \
	VZEROUPPER; \
	RET

// BINSV: d = s OP a.
#define BINSV(OP, LANES) \
svLoop4: \
	CMPQ    CX, $(4*LANES); \
	JB      svLoop1; \
	OP      (SI), Y4, Y0; \
	OP      32(SI), Y4, Y1; \
	OP      64(SI), Y4, Y2; \
	OP      96(SI), Y4, Y3; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ    $128, SI; \
	ADDQ    $128, DI; \
	SUBQ    $(4*LANES), CX; \
	JMP     svLoop4; \
svLoop1: \
	CMPQ    CX, $LANES; \
	JB      svDone; \
	OP      (SI), Y4, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, SI; \
	ADDQ    $32, DI; \
	SUBQ    $LANES, CX; \
	JMP     svLoop1; \
svDone: \
	VZEROUPPER; \
	RET

// func addVV32AVX2(d, a, b []float32)
TEXT ·addVV32AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VADDPS, 8)

// func subVV32AVX2(d, a, b []float32)
TEXT ·subVV32AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VSUBPS, 8)

// func mulVV32AVX2(d, a, b []float32)
TEXT ·mulVV32AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VMULPS, 8)

// func divVV32AVX2(d, a, b []float32)
TEXT ·divVV32AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VDIVPS, 8)

// func addVS32AVX2(d, a []float32, s float32)
TEXT ·addVS32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINSV(VADDPS, 8)

// func subVS32AVX2(d, a []float32, s float32)
TEXT ·subVS32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINVS(VSUBPS, 8)

// func subSV32AVX2(d, a []float32, s float32)
TEXT ·subSV32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINSV(VSUBPS, 8)

// func mulVS32AVX2(d, a []float32, s float32)
TEXT ·mulVS32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINSV(VMULPS, 8)

// func divVS32AVX2(d, a []float32, s float32)
TEXT ·divVS32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINVS(VDIVPS, 8)

// func divSV32AVX2(d, a []float32, s float32)
TEXT ·divSV32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINSV(VDIVPS, 8)

// func addVV64AVX2(d, a, b []float64)
TEXT ·addVV64AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VADDPD, 4)

// func subVV64AVX2(d, a, b []float64)
TEXT ·subVV64AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VSUBPD, 4)

// func mulVV64AVX2(d, a, b []float64)
TEXT ·mulVV64AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VMULPD, 4)

// func divVV64AVX2(d, a, b []float64)
TEXT ·divVV64AVX2(SB), NOSPLIT, $0-72
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	BINVV(VDIVPD, 4)

// func addVS64AVX2(d, a []float64, s float64)
TEXT ·addVS64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINSV(VADDPD, 4)

// func subVS64AVX2(d, a []float64, s float64)
TEXT ·subVS64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINVS(VSUBPD, 4)

// func subSV64AVX2(d, a []float64, s float64)
TEXT ·subSV64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINSV(VSUBPD, 4)

// func mulVS64AVX2(d, a []float64, s float64)
TEXT ·mulVS64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINSV(VMULPD, 4)

// func xorVS32AVX2(d, a []float32, s float32)
//
// d = a XOR s, bit by bit: with s = −0, the negation (the sign bit
// flipped, NaNs' too).
TEXT ·xorVS32AVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSS s+48(FP), Y4
	BINSV(VXORPS, 8)

// func xorVS64AVX2(d, a []float64, s float64)
TEXT ·xorVS64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINSV(VXORPD, 4)

// func divVS64AVX2(d, a []float64, s float64)
TEXT ·divVS64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINVS(VDIVPD, 4)

// func divSV64AVX2(d, a []float64, s float64)
TEXT ·divSV64AVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y4
	BINSV(VDIVPD, 4)

// func addWiden32AVX2(acc []float64, s []float32)
//
// acc[i] += float64(s[i]) for len(acc) elements, a multiple of 8 (the
// caller runs the rest). The conversion is exact.
TEXT ·addWiden32AVX2(SB), NOSPLIT, $0-48
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	SHRQ $3, CX
	JZ   addWidenDone

addWidenLoop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VADDPD    (DI), Y0, Y0
	VADDPD    32(DI), Y1, Y1
	VMOVUPD   Y0, (DI)
	VMOVUPD   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       addWidenLoop

addWidenDone:
	VZEROUPPER
	RET

// func sumWiden32AVX2(s []float32) float64
//
// The sum of the first len(s) elements, a multiple of 16 (the caller
// adds the rest), each converted to float64 (exactly) and added in four
// float64 accumulators of four lanes, combined at the end.
TEXT ·sumWiden32AVX2(SB), NOSPLIT, $0-32
	MOVQ   s_base+0(FP), SI
	MOVQ   s_len+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	SHRQ   $4, CX
	JZ     sumWidenDone

sumWidenLoop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      $64, SI
	DECQ      CX
	JNZ       sumWidenLoop

sumWidenDone:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VMOVSD       X0, ret+24(FP)
	VZEROUPPER
	RET

// func maxKey32AVX2(s []float32) (m float32, nan bool)
//
// The largest of s (len(s) a positive multiple of 16) in the order where
// -0 < +0, and whether s holds a NaN (then m means nothing). Each
// element's bits become a key that orders as signed integers as the
// floats do (negative floats: the magnitude bits flipped), the keys'
// maximum is taken with VPMAXSD, and turned back into a float.
TEXT ·maxKey32AVX2(SB), NOSPLIT, $0-29
	MOVQ      s_base+0(FP), SI
	MOVQ      s_len+8(FP), CX
	VPCMPEQD  Y0, Y0, Y0
	VPSLLD    $31, Y0, Y0 // the least key, MinInt32
	VMOVDQU   Y0, Y1
	VPXOR     Y2, Y2, Y2 // NaN lanes
	SHRQ      $4, CX

maxKeyLoop:
	VMOVUPS   (SI), Y3
	VMOVUPS   32(SI), Y4
	VCMPPS    $3, Y3, Y3, Y5 // unordered: NaN
	VCMPPS    $3, Y4, Y4, Y6
	VPOR      Y5, Y2, Y2
	VPOR      Y6, Y2, Y2
	VPSRAD    $31, Y3, Y5
	VPSRAD    $31, Y4, Y6
	VPSRLD    $1, Y5, Y5
	VPSRLD    $1, Y6, Y6
	VPXOR     Y3, Y5, Y5
	VPXOR     Y4, Y6, Y6
	VPMAXSD   Y5, Y0, Y0
	VPMAXSD   Y6, Y1, Y1
	ADDQ      $64, SI
	DECQ      CX
	JNZ       maxKeyLoop

	VPMAXSD      Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXSD      X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPMAXSD      X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPMAXSD      X1, X0, X0
	VPSRAD       $31, X0, X1 // the key back to the float's bits
	VPSRLD       $1, X1, X1
	VPXOR        X0, X1, X0
	VMOVSS       X0, m+24(FP)
	VMOVMSKPS    Y2, AX
	TESTL        AX, AX
	SETNE        nan+28(FP)
	VZEROUPPER
	RET

// Row kernels: d[r·k+j] = a[r·k+j] OP s[r] (ROWVS) or s[r] OP a[r·k+j]
// (ROWSV) for each of len(s) rows of k elements, k a positive multiple
// of LANES (the caller checks): a binary operation with one operand per
// row (a row's max, sum or mean broadcast along it, as in softmax and
// the norms) in one call for many rows instead of one call a row.
// Registers on entry: DI = d, SI = a, R8 = s, R9 = len(s), R10 = k.
// The commutative operations take ROWSV, whose OP reads memory.

// ROWVS: d = a OP s[r].
#define ROWVS(OP, LANES, BCAST, ESIZE) \
rvsRow: \
	TESTQ   R9, R9; \
	JZ      rvsDone; \
	BCAST   (R8), Y4; \
	MOVQ    R10, CX; \
rvsLoop4: \
	CMPQ    CX, $(4*LANES); \
	JB      rvsLoop1; \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	OP      Y4, Y0, Y0; \
	OP      Y4, Y1, Y1; \
	OP      Y4, Y2, Y2; \
	OP      Y4, Y3, Y3; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ    $128, SI; \
	ADDQ    $128, DI; \
	SUBQ    $(4*LANES), CX; \
	JMP     rvsLoop4; \
rvsLoop1: \
	TESTQ   CX, CX; \
	JZ      rvsNext; \
	VMOVUPS (SI), Y0; \
	OP      Y4, Y0, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, SI; \
	ADDQ    $32, DI; \
	SUBQ    $LANES, CX; \
	JMP     rvsLoop1; \
rvsNext: \
	ADDQ    $ESIZE, R8; \
	DECQ    R9; \
	JMP     rvsRow; \
rvsDone: \
	VZEROUPPER; \
	RET

// ROWSV: d = s[r] OP a.
#define ROWSV(OP, LANES, BCAST, ESIZE) \
rsvRow: \
	TESTQ   R9, R9; \
	JZ      rsvDone; \
	BCAST   (R8), Y4; \
	MOVQ    R10, CX; \
rsvLoop4: \
	CMPQ    CX, $(4*LANES); \
	JB      rsvLoop1; \
	OP      (SI), Y4, Y0; \
	OP      32(SI), Y4, Y1; \
	OP      64(SI), Y4, Y2; \
	OP      96(SI), Y4, Y3; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ    $128, SI; \
	ADDQ    $128, DI; \
	SUBQ    $(4*LANES), CX; \
	JMP     rsvLoop4; \
rsvLoop1: \
	TESTQ   CX, CX; \
	JZ      rsvNext; \
	OP      (SI), Y4, Y0; \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, SI; \
	ADDQ    $32, DI; \
	SUBQ    $LANES, CX; \
	JMP     rsvLoop1; \
rsvNext: \
	ADDQ    $ESIZE, R8; \
	DECQ    R9; \
	JMP     rsvRow; \
rsvDone: \
	VZEROUPPER; \
	RET

// func addRowsVS32AVX2(d, a, s []float32, k int)
TEXT ·addRowsVS32AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VADDPS, 8, VBROADCASTSS, 4)

// func subRowsVS32AVX2(d, a, s []float32, k int)
TEXT ·subRowsVS32AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWVS(VSUBPS, 8, VBROADCASTSS, 4)

// func subRowsSV32AVX2(d, a, s []float32, k int)
TEXT ·subRowsSV32AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VSUBPS, 8, VBROADCASTSS, 4)

// func mulRowsVS32AVX2(d, a, s []float32, k int)
TEXT ·mulRowsVS32AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VMULPS, 8, VBROADCASTSS, 4)

// func divRowsVS32AVX2(d, a, s []float32, k int)
TEXT ·divRowsVS32AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWVS(VDIVPS, 8, VBROADCASTSS, 4)

// func divRowsSV32AVX2(d, a, s []float32, k int)
TEXT ·divRowsSV32AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VDIVPS, 8, VBROADCASTSS, 4)

// func addRowsVS64AVX2(d, a, s []float64, k int)
TEXT ·addRowsVS64AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VADDPD, 4, VBROADCASTSD, 8)

// func subRowsVS64AVX2(d, a, s []float64, k int)
TEXT ·subRowsVS64AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWVS(VSUBPD, 4, VBROADCASTSD, 8)

// func subRowsSV64AVX2(d, a, s []float64, k int)
TEXT ·subRowsSV64AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VSUBPD, 4, VBROADCASTSD, 8)

// func mulRowsVS64AVX2(d, a, s []float64, k int)
TEXT ·mulRowsVS64AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VMULPD, 4, VBROADCASTSD, 8)

// func divRowsVS64AVX2(d, a, s []float64, k int)
TEXT ·divRowsVS64AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWVS(VDIVPD, 4, VBROADCASTSD, 8)

// func divRowsSV64AVX2(d, a, s []float64, k int)
TEXT ·divRowsSV64AVX2(SB), NOSPLIT, $0-80
	MOVQ d_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ s_len+56(FP), R9
	MOVQ k+72(FP), R10
	ROWSV(VDIVPD, 4, VBROADCASTSD, 8)
