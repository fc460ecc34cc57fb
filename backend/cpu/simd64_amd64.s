//go:build amd64 && !purego

#include "textflag.h"
#include "consts_amd64.h"

// AVX2+FMA float64 exp, tanh and logistic, four lanes per vector; see
// fastmath64.go for the method and the scalar loops that perform the
// same operations in the same order, simd64_amd64.go for the contracts
// and simd64_test.go for the measured accuracy. The routines are leaves.
// A single-vector loop body loads a vector into Y0 (the last partial
// vector through a zeroed 32-byte buffer on the stack, its unused lanes
// 0), computes in place and stores Y0; tanh and logistic first run
// blocks of 64 elements in two passes (see tanh64AVX2). Y15 and X15 are
// left alone.
//
// The operations are throughput-bound (about 70 per vector for tanh,
// mostly FMAs, at three per cycle) and their long dependency chains
// (about 75 cycles for tanh, a division among them) limit how many
// vectors the processor overlaps; the code keeps the chains short.
//
// Plan 9 operand order is the reverse of Intel's: VSUBPD B, A, D is
// D = A - B, VFMADD213PD C, B, A is A = B·A + C, VFMADD231PD C, B, A is
// A = B·C + A, VFMSUB231PD C, B, A is A = B·C - A, VFNMADD231PD C, B, A
// is A = A - B·C and VBLENDVPD M, B, A, D is D = (sign of M) ? B : A.

CONST4(absMask64<>, 0x7fffffffffffffff)
CONST4(signMask64<>, 0x8000000000000000)
CONST4(one64<>, 0x3ff0000000000000)         // 1
CONST4(two64<>, 0x4000000000000000)         // 2
CONST4(half64<>, 0x3fe0000000000000)        // 0.5
CONST4(expMin64<>, 0xc087500000000000)      // -746: e^-746 rounds to 0
CONST4(expMax64<>, 0x4086300000000000)      // 710: e^710 overflows
CONST4(logisticMax64<>, 0x4087500000000000) // 746
CONST4(tanhCut64<>, 0x3fd3333333333333)     // 0.3: below it tanh uses its odd polynomial
CONST4(tanhMax64<>, 0x4034000000000000)     // 20: tanh rounds to 1 beyond 19.1
CONST4(log2e64<>, 0x3ff71547652b82fe)       // 1/ln2
CONST4(twoLog2e64<>, 0x40071547652b82fe)    // 2/ln2
CONST4(negLog2e64<>, 0xbff71547652b82fe)    // -1/ln2
CONST4(magic64<>, 0x4338000000000000)       // 1.5·2^52: adding it rounds to an integer
CONST4(ln2hi64<>, 0x3fe62e42fefa39ef)       // ln2 rounded to float64
CONST4(negLn2lo64<>, 0xbc7abc9e3b39803f)    // -(ln2 - ln2hi)
CONST4(expBias64<>, 0xbcc80000000007fe)     // 2046 - magic64 (mod 2^64)
CONST4(tanhBias64<>, 0xbcc80000000003ff)    // 1023 - magic64 (mod 2^64)

// Q(r) ≈ (e^r - 1 - r)/r² and P(t) ≈ (tanh x - x)/x³, t = x²: the
// coefficients of exp64C and tanh64C in fastmath64.go.
CONST4(expC0<>, 0x3fe000000000000a)   // 0.50000000000000111
CONST4(expC1<>, 0x3fc5555555555503)   // 0.16666666666666438
CONST4(expC2<>, 0x3fa5555555550605)   // 0.041666666666525777
CONST4(expC3<>, 0x3f81111111124d26)   // 0.0083333333334737018
CONST4(expC4<>, 0x3f56c16c184b5d16)   // 0.0013888888944871328
CONST4(expC5<>, 0x3f2a01a013d63f07)   // 0.00019841269560715738
CONST4(expC6<>, 0x3efa019988af2852)   // 2.4801491729488645e-05
CONST4(expC7<>, 0x3ec71def3bbf3e8c)   // 2.755752999995651e-06
CONST4(expC8<>, 0x3e928aedd7fc48a1)   // 2.7630763809004153e-07
CONST4(expC9<>, 0x3e5add8d8a19494f)   // 2.5020391652906529e-08
CONST4(tanhC0<>, 0xbfd5555555555555)  // -0.33333333333333331
CONST4(tanhC1<>, 0x3fc1111111110c2f)  // 0.13333333333329864
CONST4(tanhC2<>, 0xbfaba1ba1b8ef8da)  // -0.053968253959725224
CONST4(tanhC3<>, 0x3f9664f47ad09593)  // 0.021869487758655003
CONST4(tanhC4<>, 0xbf8226deb2e41bac)  // -0.0088632009833541012
CONST4(tanhC5<>, 0x3f6d6b7e1d5d4a32)  // 0.0035912955453707646
CONST4(tanhC6<>, 0xbf57ab6f08d508cb)  // -0.0014446815797133801
CONST4(tanhC7<>, 0x3f40c0469c9ce6b3)  // 0.00051120231476105835

// LOADTAIL sets Y0 to the CX (1 to 3) float64 at (SI), the other lanes
// zero, through the 32-byte buffer at (SP). Clobbers AX and BX.
#define LOADTAIL \
	VXORPD  Y0, Y0, Y0; \
	VMOVUPD Y0, (SP); \
	XORQ    AX, AX; \
tailIn: \
	MOVQ    (SI)(AX*8), BX; \
	MOVQ    BX, (SP)(AX*8); \
	INCQ    AX; \
	CMPQ    AX, CX; \
	JB      tailIn; \
	VMOVUPD (SP), Y0

// STORETAIL stores the first CX lanes of Y0 to (DI) through the buffer
// at (SP). Clobbers AX and BX.
#define STORETAIL \
	VMOVUPD Y0, (SP); \
	XORQ    AX, AX; \
tailOut: \
	MOVQ    (SP)(AX*8), BX; \
	MOVQ    BX, (DI)(AX*8); \
	INCQ    AX; \
	CMPQ    AX, CX; \
	JB      tailOut

// EXPCORE computes e^z ≈ 2^n(s + lo) (exp64Core) for Y0 = z in
// [-746, 710] or NaN, with Y13 = 1: Y1 = z/ln2 + magic64, whose
// representation is that of magic64 plus n, Y2 = s, Y3 = lo. Clobbers
// Y0 and Y4–Y7.
#define EXPCORE \
	VMOVUPD      magic64<>(SB), Y1; \
	VFMADD231PD  log2e64<>(SB), Y0, Y1;    /* Y1 = z/ln2 + magic: n in the low bits */ \
	EXPREST

// EXPREST is EXPCORE with Y1 = z/ln2 + magic64 already computed.
#define EXPREST \
	VSUBPD       magic64<>(SB), Y1, Y4;    /* n */ \
	VMULPD       negLn2lo64<>(SB), Y4, Y5; /* Y5 = rl = -n·ln2lo */ \
	VFNMADD231PD ln2hi64<>(SB), Y4, Y0;    /* Y0 = r = z - n·ln2hi (exact) */ \
	VMULPD       Y0, Y0, Y6;               /* Y6 = r² */ \
	VMOVUPD      expC2<>(SB), Y7; \
	VFMADD213PD  expC1<>(SB), Y0, Y7;      /* c1 + c2·r */ \
	VMOVUPD      expC4<>(SB), Y2; \
	VFMADD213PD  expC3<>(SB), Y0, Y2;      /* c3 + c4·r */ \
	VFMADD231PD  Y6, Y2, Y7;               /* Y7 = b0 = c1 + … + c4·r³ */ \
	VMOVUPD      expC6<>(SB), Y4; \
	VFMADD213PD  expC5<>(SB), Y0, Y4;      /* c5 + c6·r */ \
	VMOVUPD      expC8<>(SB), Y2; \
	VFMADD213PD  expC7<>(SB), Y0, Y2;      /* c7 + c8·r */ \
	VFMADD231PD  Y6, Y2, Y4;               /* b1 = c5 + … + c8·r³ */ \
	VMULPD       Y6, Y6, Y3;               /* r⁴ */ \
	VFMADD231PD  expC9<>(SB), Y3, Y4;      /* b1 + c9·r⁴ */ \
	VFMADD213PD  Y7, Y3, Y4;               /* Q1 = b0 + r⁴(b1 + c9·r⁴) */ \
	VFMADD213PD  expC0<>(SB), Y0, Y4;      /* Y4 = Q = c0 + r·Q1 */ \
	VFMADD213PD  expC0<>(SB), Y0, Y7;      /* Y7 = Qa = c0 + r·b0 ≈ Q */ \
	VMOVAPD      Y6, Y3; \
	VFMSUB231PD  Y0, Y0, Y3;               /* r·r - r², exact */ \
	VFMADD231PD  Y6, Y5, Y3;               /* m = r²·rl + (r·r - r²) */ \
	VFMADD213PD  Y5, Y0, Y5;               /* rl·r + rl */ \
	VFMADD231PD  Y3, Y7, Y5;               /* c = rl·(1 + r) + m·Qa */ \
	VADDPD       Y13, Y0, Y2;              /* Y2 = s = 1 + r */ \
	VSUBPD       Y2, Y13, Y3; \
	VADDPD       Y0, Y3, Y3;               /* e1 = (1 - s) + r, exact */ \
	VADDPD       Y3, Y5, Y3;               /* c + e1 */ \
	VFMADD231PD  Y6, Y4, Y3                /* Y3 = lo = r²·Q + (c + e1) */

// EXPSCALE sets Y4 = 2^⌊n/2⌋ and Y1 = 2^(n-⌊n/2⌋) from Y1 as EXPCORE
// leaves it, for n in [-1076, 1024].
#define EXPSCALE \
	VPADDQ expBias64<>(SB), Y1, Y1; /* k = n + 2046 > 0 */ \
	VPSRLQ $1, Y1, Y4;              /* ⌊n/2⌋ + 1023 */ \
	VPSUBQ Y4, Y1, Y1;              /* n - ⌊n/2⌋ + 1023 */ \
	VPSLLQ $52, Y4, Y4; \
	VPSLLQ $52, Y1, Y1

// func exp64AVX2(d, a []float64)
TEXT ·exp64AVX2(SB), NOSPLIT, $32-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VMOVUPD expMin64<>(SB), Y10
	VMOVUPD expMax64<>(SB), Y11
	VMOVUPD one64<>(SB), Y13

expLoop:
	CMPQ    CX, $4
	JB      expTail
	VMOVUPD (SI), Y0

expBlock:
	// Lanes at or below -746 (a mask's -Inf, say) give +0 whatever they
	// compute; they compute e^0 instead, since the underflowing scaling
	// takes a microcode assist (11× the time of a block; as exp32AVX2).
	VCMPPD  $2, Y10, Y0, Y12 // Y12 = x ≤ -746 (false for NaN)
	VANDNPD Y0, Y12, Y0      // those lanes 0
	VMAXPD  Y0, Y10, Y0      // max(-746, x), NaN kept (the second source wins)
	VMINPD  Y0, Y11, Y0      // min(710, x)
	EXPCORE
	VADDPD  Y3, Y2, Y2 // s + lo, rounded
	EXPSCALE
	VMULPD  Y4, Y2, Y2  // exact
	VMULPD  Y1, Y2, Y0  // rounds to +Inf, a subnormal or 0 at the extremes
	VANDNPD Y0, Y12, Y0 // +0 where x ≤ -746, as e^-746 rounds

	CMPQ    CX, $4
	JB      expStoreTail
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $4, CX
	JMP     expLoop

expTail:
	TESTQ CX, CX
	JZ    expDone
	LOADTAIL
	JMP   expBlock

expStoreTail:
	STORETAIL

expDone:
	VZEROUPPER
	RET

// TANHEXP computes e^z = 2^n(s + lo), z = 2·min(|x|, 20), for Y0 = x:
// Y1 = z/ln2 + magic64, Y2 = s, Y3 = lo (EXPCORE). Clobbers Y0 and
// Y4–Y7.
#define TANHEXP \
	VANDPD       absMask64<>(SB), Y0, Y0; \
	VMINPD       tanhMax64<>(SB), Y0, Y0; \
	VMOVUPD      magic64<>(SB), Y1; \
	VFMADD231PD  twoLog2e64<>(SB), Y0, Y1; /* z/ln2 + magic, without waiting for z */ \
	VADDPD       Y0, Y0, Y0;               /* z */ \
	EXPREST

// TANHEND sets Y0 = tanh x from Y0 = x and TANHEXP's Y1–Y3, with Y13 = 1
// and Y14 = 2: 1 - 2/(E + 1) for |x| ≥ 0.3 and the odd polynomial below
// (or for NaN), both computed and one picked by a blend. Clobbers Y1–Y11.
#define TANHEND \
	VANDPD       absMask64<>(SB), Y0, Y8;  /* Y8 = |x| */ \
	VXORPD       Y8, Y0, Y9;               /* Y9 = sign bit of x */ \
	/* Small branch: |x| + |x|³·P(x²). */ \
	VMULPD       Y8, Y8, Y10;              /* t = x² */ \
	VMOVUPD      tanhC7<>(SB), Y11; \
	VFMADD213PD  tanhC6<>(SB), Y10, Y11; \
	VFMADD213PD  tanhC5<>(SB), Y10, Y11; \
	VFMADD213PD  tanhC4<>(SB), Y10, Y11; \
	VFMADD213PD  tanhC3<>(SB), Y10, Y11; \
	VFMADD213PD  tanhC2<>(SB), Y10, Y11; \
	VFMADD213PD  tanhC1<>(SB), Y10, Y11; \
	VFMADD213PD  tanhC0<>(SB), Y10, Y11;   /* P(t) */ \
	VMULPD       Y8, Y10, Y10;             /* |x|³ */ \
	VFMADD213PD  Y8, Y10, Y11;             /* Y11 = |x|³·P + |x| */ \
	/* Large branch: 1 - 2/(E + 1), with D = E + 1 = Dh + Dl. */ \
	VPADDQ       tanhBias64<>(SB), Y1, Y1; \
	VPSLLQ       $52, Y1, Y1;              /* f = 2^n */ \
	VMULPD       Y1, Y2, Y4;               /* Eh = f·s */ \
	VMULPD       Y1, Y3, Y6;               /* T = f·lo */ \
	VFMADD213PD  Y13, Y1, Y2;              /* A = f·s + 1 */ \
	VFMADD213PD  Y2, Y1, Y3;               /* Dh = f·lo + A */ \
	VSUBPD       Y4, Y2, Y4; \
	VSUBPD       Y4, Y13, Y4;              /* 1 - (A - Eh) */ \
	VSUBPD       Y2, Y3, Y5; \
	VSUBPD       Y5, Y6, Y5;               /* T - (Dh - A) */ \
	VADDPD       Y5, Y4, Y4;               /* Dl */ \
	VDIVPD       Y3, Y14, Y6;              /* q0 = 2/Dh */ \
	VMULPD       Y6, Y4, Y4;               /* q0·Dl */ \
	VFNMADD213PD Y14, Y6, Y3;              /* 2 - q0·Dh, exact */ \
	VSUBPD       Y4, Y3, Y3;               /* ρ = 2 - q0·Dh - q0·Dl */ \
	VMULPD       half64<>(SB), Y6, Y5;     /* q0/2 */ \
	VSUBPD       Y6, Y13, Y1;              /* h = 1 - q0 */ \
	VSUBPD       Y1, Y13, Y2; \
	VSUBPD       Y6, Y2, Y2;               /* e = (1 - h) - q0, exact */ \
	VFNMADD231PD Y5, Y3, Y2;               /* e - ρ·q0/2 */ \
	VADDPD       Y2, Y1, Y1;               /* h + (e - ρ·q0/2) */ \
	VCMPPD       $9, tanhCut64<>(SB), Y8, Y4; /* !(|x| ≥ 0.3): small or NaN */ \
	VBLENDVPD    Y4, Y11, Y1, Y1; \
	VXORPD       Y9, Y1, Y0

// func tanh64AVX2(d, a []float64)
//
// Blocks of 64 elements run in two passes: the first computes TANHEXP
// for each vector into a buffer on the stack, the second TANHEND. The
// loops of both passes have shorter dependency chains than one loop
// doing both, so that the processor overlaps more iterations (a tenth
// faster on AMD Zen 4). The last few vectors run one at a time. The
// frame holds the 32-byte tail buffer and 16 × 96 bytes for the block.
TEXT ·tanh64AVX2(SB), 0, $1568-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VMOVUPD one64<>(SB), Y13
	VMOVUPD two64<>(SB), Y14

tanhBlock64:
	CMPQ CX, $64
	JB   tanhLoop
	XORQ AX, AX
	LEAQ 32(SP), BX

tanhPass1:
	VMOVUPD (SI)(AX*1), Y0
	TANHEXP
	VMOVUPD Y1, (BX)
	VMOVUPD Y2, 32(BX)
	VMOVUPD Y3, 64(BX)
	ADDQ    $96, BX
	ADDQ    $32, AX
	CMPQ    AX, $512
	JB      tanhPass1
	XORQ    AX, AX
	LEAQ    32(SP), BX

tanhPass2:
	VMOVUPD (SI)(AX*1), Y0
	VMOVUPD (BX), Y1
	VMOVUPD 32(BX), Y2
	VMOVUPD 64(BX), Y3
	TANHEND
	VMOVUPD Y0, (DI)(AX*1)
	ADDQ    $96, BX
	ADDQ    $32, AX
	CMPQ    AX, $512
	JB      tanhPass2
	ADDQ    $512, SI
	ADDQ    $512, DI
	SUBQ    $64, CX
	JMP     tanhBlock64

tanhLoop:
	CMPQ    CX, $4
	JB      tanhTail
	VMOVUPD (SI), Y0

tanhBlock:
	VMOVAPD Y0, Y12
	TANHEXP
	VMOVAPD Y12, Y0
	TANHEND

	CMPQ    CX, $4
	JB      tanhStoreTail
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $4, CX
	JMP     tanhLoop

tanhTail:
	TESTQ CX, CX
	JZ    tanhDone
	LOADTAIL
	JMP   tanhBlock

tanhStoreTail:
	STORETAIL

tanhDone:
	VZEROUPPER
	RET

// LOGEXP computes u = e^-|x| = 2^n(s + lo) for Y0 = x, with Y11 = 746:
// Y1 = -|x|/ln2 + magic64, Y2 = s, Y3 = lo (EXPCORE). Clobbers Y0 and
// Y4–Y7.
#define LOGEXP \
	VANDPD      absMask64<>(SB), Y0, Y0; \
	VMINPD      Y0, Y11, Y0;              /* min(746, |x|), NaN kept */ \
	VMOVUPD     magic64<>(SB), Y1; \
	VFMADD231PD negLog2e64<>(SB), Y0, Y1; /* z/ln2 + magic, without waiting for z */ \
	VXORPD      signMask64<>(SB), Y0, Y0; /* z = -|x| */ \
	EXPREST

// LOGEND sets Y0 = logistic(x) from Y0 = x and LOGEXP's Y1–Y3, with
// Y10 = 0 and Y13 = 1. Clobbers Y1–Y9.
#define LOGEND \
	VMOVAPD      Y0, Y8;                  /* x */ \
	EXPSCALE;                             /* Y4, Y1 = 2^n in two factors */ \
	VMULPD       Y1, Y4, Y0;              /* f = 2^n (0 below 2^-1075) */ \
	VMULPD       Y0, Y2, Y5;              /* Eh = f·s */ \
	VMOVAPD      Y13, Y6; \
	VFMADD231PD  Y0, Y2, Y6;              /* A = f·s + 1 */ \
	VMULPD       Y0, Y3, Y9;              /* T = f·lo */ \
	VMOVAPD      Y6, Y7; \
	VFMADD231PD  Y0, Y3, Y7;              /* Dh = f·lo + A */ \
	VSUBPD       Y13, Y6, Y0; \
	VSUBPD       Y0, Y5, Y5;              /* Eh - (A - 1) */ \
	VSUBPD       Y6, Y7, Y6; \
	VSUBPD       Y6, Y9, Y9;              /* T - (Dh - A) */ \
	VADDPD       Y9, Y5, Y9;              /* Dl */ \
	VADDPD       Y3, Y2, Y5; \
	VSUBPD       Y5, Y2, Y2; \
	VADDPD       Y2, Y3, Y3;              /* (s - (s + lo)) + lo */ \
	VBLENDVPD    Y8, Y5, Y13, Y2;         /* numerator: x < 0 ? s + lo : 1 */ \
	VBLENDVPD    Y8, Y3, Y10, Y3; \
	VBLENDVPD    Y8, Y4, Y13, Y4;         /* scale: x < 0 ? 2^n : 1 */ \
	VBLENDVPD    Y8, Y1, Y13, Y1; \
	VDIVPD       Y7, Y13, Y6;             /* c = 1/Dh */ \
	VMULPD       Y6, Y2, Y5;              /* q0 = nh·c */ \
	VFNMADD231PD Y7, Y5, Y2;              /* nh - q0·Dh, exact */ \
	VFNMADD231PD Y9, Y5, Y3;              /* nl - q0·Dl */ \
	VADDPD       Y3, Y2, Y2;              /* ρ */ \
	VFMADD231PD  Y6, Y2, Y5;              /* q = q0 + ρ·c */ \
	VMULPD       Y4, Y5, Y5; \
	VMULPD       Y1, Y5, Y0

// func logistic64AVX2(d, a []float64)
//
// Blocks of 64 elements run in two passes, LOGEXP and LOGEND, as in
// tanh64AVX2.
TEXT ·logistic64AVX2(SB), 0, $1568-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	VXORPD  Y10, Y10, Y10
	VMOVUPD logisticMax64<>(SB), Y11
	VMOVUPD one64<>(SB), Y13

logisticBlock64:
	CMPQ CX, $64
	JB   logisticLoop
	XORQ AX, AX
	LEAQ 32(SP), BX

logisticPass1:
	VMOVUPD (SI)(AX*1), Y0
	LOGEXP
	VMOVUPD Y1, (BX)
	VMOVUPD Y2, 32(BX)
	VMOVUPD Y3, 64(BX)
	ADDQ    $96, BX
	ADDQ    $32, AX
	CMPQ    AX, $512
	JB      logisticPass1
	XORQ    AX, AX
	LEAQ    32(SP), BX

logisticPass2:
	VMOVUPD (SI)(AX*1), Y0
	VMOVUPD (BX), Y1
	VMOVUPD 32(BX), Y2
	VMOVUPD 64(BX), Y3
	LOGEND
	VMOVUPD Y0, (DI)(AX*1)
	ADDQ    $96, BX
	ADDQ    $32, AX
	CMPQ    AX, $512
	JB      logisticPass2
	ADDQ    $512, SI
	ADDQ    $512, DI
	SUBQ    $64, CX
	JMP     logisticBlock64

logisticLoop:
	CMPQ    CX, $4
	JB      logisticTail
	VMOVUPD (SI), Y0

logisticBlock:
	VMOVAPD Y0, Y12
	LOGEXP
	VMOVAPD Y12, Y0
	LOGEND

	CMPQ    CX, $4
	JB      logisticStoreTail
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $4, CX
	JMP     logisticLoop

logisticTail:
	TESTQ CX, CX
	JZ    logisticDone
	LOADTAIL
	JMP   logisticBlock

logisticStoreTail:
	STORETAIL

logisticDone:
	VZEROUPPER
	RET

// erf and GELU of float32 lanes, evaluated in float64 four lanes at a
// time (eight for GELU with AVX-512, below) and rounded once to float32
// (GELU′ is in float32 lanes: gelugrad_amd64.s). Three fits, computed
// for peel (P and H by Lawson-reweighted least squares in float64, W by
// Chebyshev interpolation in 50-digit arithmetic):
//
//   - erf(a) = a·P(a²) for a < 1, P of degree 7 (relative error 3.3e-11);
//   - for GELU, erf(z) = z·W(z²) for |z| < 2, W of degree 14
//     fitted to erf(√t)/√t on t ∈ [0, 4] and rounded to float64
//     (absolute error 1.7e-14 over a dense sweep, so Φ = ½ + ½·erf(z)
//     to 3.4e-12 relative);
//   - erfc(c) = e^(-c²)·u·H(u), u = 1/c, for 1 ≤ c ≤ 11, H of degree 12
//     fitted to erfc(c)·e^(c²)·c on u ∈ [1/11, 1] (relative error 1.8e-9).
//
// c² of a float32 (or of a float32 over √2, to within one rounding) is
// exact or nearly so in float64, and e^(-c²) is EXPCORE's. Both branches
// run on every lane and a blend picks one; NaN lanes take the polynomial
// branch, which keeps them NaN.
CONST4(eleven64<>, 0x4026000000000000)     // 11
CONST4(rsqrt264<>, 0x3fe6a09e667f3bcc)     // 1/√2
CONST4(negSixteen64<>, 0xc030000000000000) // -16
CONST4(erfP0<>, 0x3ff20dd7504007ec)        // 1.128379167058024
CONST4(erfP1<>, 0xbfd8127465fb949b)        // -0.3761263843465003
CONST4(erfP2<>, 0x3fbce2f0798a0310)        // 0.11283781974090012
CONST4(erfP3<>, 0xbf9b829a7a48c248)        // -0.026865400041233195
CONST4(erfP4<>, 0x3f75628ede084b80)        // 0.0052209454302268865
CONST4(erfP5<>, 0xbf4bcbe99d7d3c80)        // -0.0008482828807049453
CONST4(erfP6<>, 0x3f1d8268e05f7800)        // 0.00011256947627155678
CONST4(erfP7<>, 0xbee4383fc4882000)        // -9.641515263517086e-06
CONST4(erfW0<>, 0x3ff20dd750429b3f)    // 1.1283791670955023
CONST4(erfW1<>, 0xbfd812746b032975)    // -0.37612638903069434
CONST4(erfW2<>, 0x3fbce2f219eca3fd)    // 0.11283791668815009
CONST4(erfW3<>, 0xbf9b82ce2e6f7bf1)    // -0.026866170486638145
CONST4(erfW4<>, 0x3f7565bca68dcfba)    // 0.005223977009212117
CONST4(erfW5<>, 0xbf4c02d824823965)    // -0.0008548312553260771
CONST4(erfW6<>, 0x3f1f9a0c33c40ab5)    // 0.00012055110432033607
CONST4(erfW7<>, 0xbeef4be1bf2ae1b1)    // -1.4923292814259704e-05
CONST4(erfW8<>, 0x3ebb96cc8f343614)    // 1.6444360511654216e-06
CONST4(erfW9<>, 0xbe85d5fd9081ffe9)    // -1.626901353669879e-07
CONST4(erfW10<>, 0x3e4ef843e1d17b83)   // 1.4421430322661158e-08
CONST4(erfW11<>, 0xbe132fe862a47349)   // -1.116838519729602e-09
CONST4(erfW12<>, 0x3dd367c9d720977c)   // 7.059651976010553e-11
CONST4(erfW13<>, 0xbd8bd6dfe7542c09)   // -3.16496812027159e-12
CONST4(erfW14<>, 0x3d3493ae32dd7c97)   // 7.31037517137807e-14
CONST4(erfcH0<>, 0x3fe20dd7f0cbe61c) // 0.564189882569909
CONST4(erfcH1<>, 0xbec4ce5e0c7c0000) // -2.4802830899117723e-06
CONST4(erfcH2<>, 0xbfd21145a2ede402) // -0.28230420027790626
CONST4(erfcH3<>, 0x3f77d1c8855208e8) // 0.005815299305256462
CONST4(erfcH4<>, 0x3fd67eefda12f770) // 0.35149761482522646
CONST4(erfcH5<>, 0x3fe0a9eb6b5d69c2) // 0.5207421395273786
CONST4(erfcH6<>, 0xc00bd5c48de33f69) // -3.479378803727674
CONST4(erfcH7<>, 0x401cee8384ed3c6a) // 7.232923581104027
CONST4(erfcH8<>, 0xc021cb1c4a60e429) // -8.896700214698358
CONST4(erfcH9<>, 0x401c6ec70e2dd5eb) // 7.1081812110401
CONST4(erfcH10<>, 0xc00d2fd30bd9ba8d) // -3.6483517576046496
CONST4(erfcH11<>, 0x3ff19699874a44b2) // 1.099267509915347
CONST4(erfcH12<>, 0xbfc2fb5ebe10ecec) // -0.14829620628902462

// ERFP sets R = P(T) (erf(a)/a for T = a²). R and T are Y registers.
#define ERFP(T, R) \
	VMOVUPD     erfP7<>(SB), R; \
	VFMADD213PD erfP6<>(SB), T, R; \
	VFMADD213PD erfP5<>(SB), T, R; \
	VFMADD213PD erfP4<>(SB), T, R; \
	VFMADD213PD erfP3<>(SB), T, R; \
	VFMADD213PD erfP2<>(SB), T, R; \
	VFMADD213PD erfP1<>(SB), T, R; \
	VFMADD213PD erfP0<>(SB), T, R

// ERFW(T, R) sets R = W(T), erf(z) = z·W(z²) for |z| < 2 (see above).
#define ERFW(T, R) \
	VMOVUPD     erfW14<>(SB), R; \
	VFMADD213PD erfW13<>(SB), T, R; \
	VFMADD213PD erfW12<>(SB), T, R; \
	VFMADD213PD erfW11<>(SB), T, R; \
	VFMADD213PD erfW10<>(SB), T, R; \
	VFMADD213PD erfW9<>(SB), T, R; \
	VFMADD213PD erfW8<>(SB), T, R; \
	VFMADD213PD erfW7<>(SB), T, R; \
	VFMADD213PD erfW6<>(SB), T, R; \
	VFMADD213PD erfW5<>(SB), T, R; \
	VFMADD213PD erfW4<>(SB), T, R; \
	VFMADD213PD erfW3<>(SB), T, R; \
	VFMADD213PD erfW2<>(SB), T, R; \
	VFMADD213PD erfW1<>(SB), T, R; \
	VFMADD213PD erfW0<>(SB), T, R

// ERFCEXP sets Y2 = e^(-b²) for Y14 = b, 0 ≤ b ≤ 11: ERFC's first
// half. Clobbers Y0–Y4.
#define ERFCEXP \
	VMULPD      Y14, Y14, Y0; \
	VXORPD      signMask64<>(SB), Y0, Y0; \
	EXPCORE; \
	VADDPD      Y3, Y2, Y2; \
	EXPSCALE; \
	VMULPD      Y4, Y2, Y2; \
	VMULPD      Y1, Y2, Y2     /* Y2 = e^(-b²) */

// ERFC sets Y2 = e^(-b²) and Y5 = erfc(c), c = max(b, 1), for Y14 = b,
// 0 ≤ b ≤ 11, with Y13 = 1 (below 1, Y5 is not erfc(b)). Clobbers
// Y0–Y7 and Y14 (to u = 1/c).
#define ERFC \
	ERFCEXP; \
	VMAXPD      Y14, Y13, Y14; /* c = max(1, b) */ \
	VDIVPD      Y14, Y13, Y14; /* u = 1/c */ \
	VMOVUPD     erfcH12<>(SB), Y5; \
	VFMADD213PD erfcH11<>(SB), Y14, Y5; \
	VFMADD213PD erfcH10<>(SB), Y14, Y5; \
	VFMADD213PD erfcH9<>(SB), Y14, Y5; \
	VFMADD213PD erfcH8<>(SB), Y14, Y5; \
	VFMADD213PD erfcH7<>(SB), Y14, Y5; \
	VFMADD213PD erfcH6<>(SB), Y14, Y5; \
	VFMADD213PD erfcH5<>(SB), Y14, Y5; \
	VFMADD213PD erfcH4<>(SB), Y14, Y5; \
	VFMADD213PD erfcH3<>(SB), Y14, Y5; \
	VFMADD213PD erfcH2<>(SB), Y14, Y5; \
	VFMADD213PD erfcH1<>(SB), Y14, Y5; \
	VFMADD213PD erfcH0<>(SB), Y14, Y5; \
	VMULPD      Y14, Y5, Y5; \
	VMULPD      Y2, Y5, Y5   /* erfc(c) */

// The kernels below process len(d) rounded down to a multiple of 4 (the
// caller does the rest), four float32 a loop: a VCVTPS2PD load and a
// VCVTPD2PSY store around the float64 body.

// func erf32AVX2(d, a []float32)
//
// erf|x| = a·P(a²) below 1 and 1 − erfc(min(a, 11)) above (erf rounds
// to 1 long before 11); the sign of x is put back last, so erf(-0) = -0.
TEXT ·erf32AVX2(SB), NOSPLIT, $0-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	SHRQ    $2, CX
	JZ      erfDone
	VMOVUPD one64<>(SB), Y13

erfLoop:
	VCVTPS2PD (SI), Y0
	VANDPD    signMask64<>(SB), Y0, Y9 // the sign of x
	VANDPD    absMask64<>(SB), Y0, Y8  // a = |x|
	VMULPD    Y8, Y8, Y10              // a²
	ERFP(Y10, Y11)
	VMULPD    Y8, Y11, Y11             // a·P(a²)
	VMOVUPD   eleven64<>(SB), Y14
	VMINPD    Y8, Y14, Y14             // min(11, a)
	ERFC
	VSUBPD    Y5, Y13, Y5              // 1 − erfc(c)
	VCMPPD    $9, Y13, Y8, Y6          // !(a ≥ 1): small or NaN
	VBLENDVPD Y6, Y11, Y5, Y5
	VORPD     Y9, Y5, Y5
	VCVTPD2PSY Y5, X0
	VMOVUPS   X0, (DI)
	ADDQ      $16, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       erfLoop

erfDone:
	VZEROUPPER
	RET

// GELUSMALL then GELULARGE set Y5 = Φ(x) and Y2 = e^(-min(s, 11)²),
// s = |x|/√2, for Y8 = x, with Y13 = 1: Φ = ½ + ½·erf(x/√2) where s < 2
// (W's fit), else ½·erfc(s) for x < 0 and 1 − ½·erfc(s) for x ≥ 0, s
// clamped to [2, 11] (Φ is below 1e-53 past 11), so the small values of
// Φ for negative x keep their relative accuracy (no 1 − erf
// cancellation; below s = 2, Φ ≥ 0.0023 and the cancellation costs 8 of
// float64's 53 bits). A kernel whose four lanes are all small (or NaN)
// skips GELULARGE, whose blend would pick GELUSMALL's value in every
// lane: the same bits, a fraction of the work (the inputs of a
// network's GELU are mostly small: |x| < 2.8 holds 99.5% of a normal
// distribution's, where |x| < 1.4, the reach of P, held 84%, and a group
// of four all small half the time, a branch mispredicted every other
// group). Together they clobber Y0–Y7, Y9–Y12 and Y14.

// GELUSMALL sets Y12 = ½ + ½·erf(z), z = x/√2 (Φ where s = |z| < 2),
// Y9 = s and Y7 to the lanes where !(s ≥ 2), for Y8 = x. Clobbers Y10,
// Y11.
#define GELUSMALL \
	VMULPD      rsqrt264<>(SB), Y8, Y10;  /* z = x/√2 */ \
	VANDPD      absMask64<>(SB), Y10, Y9; /* s = |z| */ \
	VMULPD      Y9, Y9, Y11; \
	ERFW(Y11, Y12); \
	VMULPD      Y10, Y12, Y12;            /* erf(z) for s < 2 */ \
	VMOVUPD     half64<>(SB), Y7; \
	VFMADD213PD half64<>(SB), Y7, Y12;    /* Y12 = ½ + ½·erf(z) */ \
	VCMPPD      $9, two64<>(SB), Y9, Y7   /* !(s ≥ 2): small or NaN */

// GELULARGE finishes after GELUSMALL: Y5 = Φ(x), Y2 =
// e^(-min(s, 11)²).
#define GELULARGE \
	VMOVUPD     eleven64<>(SB), Y14; \
	VMINPD      Y9, Y14, Y14;             /* min(11, s) */ \
	ERFC; \
	VMULPD      half64<>(SB), Y5, Y5;     /* ½·erfc(c): Φ for x < 0 */ \
	VSUBPD      Y5, Y13, Y6;              /* 1 − ½·erfc(c): Φ for x ≥ 0 */ \
	VBLENDVPD   Y8, Y5, Y6, Y6;           /* the sign of x picks */ \
	VCMPPD      $9, two64<>(SB), Y9, Y7;  /* !(s ≥ 2): small or NaN */ \
	VBLENDVPD   Y7, Y12, Y6, Y5

// func gelu32AVX2(d, a []float32)
//
// GELU(x) = max(x, −16)·Φ(x): x below −16 gives −0, as the Reference
// does, and −∞ no NaN.
TEXT ·gelu32AVX2(SB), NOSPLIT, $0-48
	MOVQ    d_base+0(FP), DI
	MOVQ    d_len+8(FP), CX
	MOVQ    a_base+24(FP), SI
	SHRQ    $2, CX
	JZ      geluDone
	VMOVUPD one64<>(SB), Y13

geluLoop:
	VCVTPS2PD (SI), Y8
	GELUSMALL
	VMOVMSKPD Y7, AX
	CMPL      AX, $15
	JNE       geluLarge
	VMOVAPD   Y12, Y5 // every lane small: Φ is GELUSMALL's
	JMP       geluScale

geluLarge:
	GELULARGE

geluScale:
	VMOVUPD    negSixteen64<>(SB), Y6
	VMAXPD     Y8, Y6, Y6 // max(-16, x), NaN kept
	VMULPD     Y6, Y5, Y5
	VCVTPD2PSY Y5, X0
	VMOVUPS    X0, (DI)
	ADDQ       $16, SI
	ADDQ       $16, DI
	DECQ       CX
	JNZ        geluLoop

geluDone:
	VZEROUPPER
	RET

// The AVX-512 form of GELU: the macros above on eight float64
// lanes (Z registers, constants broadcast from their first lane, K1 and
// K2 for the lane masks), the same operations lane by lane, so the same
// bits as the AVX2 kernel. Their Horner chains (erfc's thirteen terms,
// exp's) are latency-bound four lanes at a time; eight in flight take
// about the time of four, on a Zen 4's 256-bit units as on full-width
// ones. GELUSMALL512 compares with Z16 = 2 and leaves the small lanes'
// mask in K1 (not Z7).

#define EXPCORE512 \
	VBROADCASTSD magic64<>(SB), Z1; \
	VFMADD231PD.BCST log2e64<>(SB), Z0, Z1;    /* Z1 = z/ln2 + magic: n in the low bits */ \
	EXPREST512

#define EXPREST512 \
	VSUBPD.BCST magic64<>(SB), Z1, Z4;    /* n */ \
	VMULPD.BCST negLn2lo64<>(SB), Z4, Z5; /* Z5 = rl = -n·ln2lo */ \
	VFNMADD231PD.BCST ln2hi64<>(SB), Z4, Z0;    /* Z0 = r = z - n·ln2hi (exact) */ \
	VMULPD       Z0, Z0, Z6;               /* Z6 = r² */ \
	VBROADCASTSD expC2<>(SB), Z7; \
	VFMADD213PD.BCST expC1<>(SB), Z0, Z7;      /* c1 + c2·r */ \
	VBROADCASTSD expC4<>(SB), Z2; \
	VFMADD213PD.BCST expC3<>(SB), Z0, Z2;      /* c3 + c4·r */ \
	VFMADD231PD  Z6, Z2, Z7;               /* Z7 = b0 = c1 + … + c4·r³ */ \
	VBROADCASTSD expC6<>(SB), Z4; \
	VFMADD213PD.BCST expC5<>(SB), Z0, Z4;      /* c5 + c6·r */ \
	VBROADCASTSD expC8<>(SB), Z2; \
	VFMADD213PD.BCST expC7<>(SB), Z0, Z2;      /* c7 + c8·r */ \
	VFMADD231PD  Z6, Z2, Z4;               /* b1 = c5 + … + c8·r³ */ \
	VMULPD       Z6, Z6, Z3;               /* r⁴ */ \
	VFMADD231PD.BCST expC9<>(SB), Z3, Z4;      /* b1 + c9·r⁴ */ \
	VFMADD213PD  Z7, Z3, Z4;               /* Q1 = b0 + r⁴(b1 + c9·r⁴) */ \
	VFMADD213PD.BCST expC0<>(SB), Z0, Z4;      /* Z4 = Q = c0 + r·Q1 */ \
	VFMADD213PD.BCST expC0<>(SB), Z0, Z7;      /* Z7 = Qa = c0 + r·b0 ≈ Q */ \
	VMOVAPD      Z6, Z3; \
	VFMSUB231PD  Z0, Z0, Z3;               /* r·r - r², exact */ \
	VFMADD231PD  Z6, Z5, Z3;               /* m = r²·rl + (r·r - r²) */ \
	VFMADD213PD  Z5, Z0, Z5;               /* rl·r + rl */ \
	VFMADD231PD  Z3, Z7, Z5;               /* c = rl·(1 + r) + m·Qa */ \
	VADDPD       Z13, Z0, Z2;              /* Z2 = s = 1 + r */ \
	VSUBPD       Z2, Z13, Z3; \
	VADDPD       Z0, Z3, Z3;               /* e1 = (1 - s) + r, exact */ \
	VADDPD       Z3, Z5, Z3;               /* c + e1 */ \
	VFMADD231PD  Z6, Z4, Z3                /* Z3 = lo = r²·Q + (c + e1) */

#define EXPSCALE512 \
	VPADDQ.BCST expBias64<>(SB), Z1, Z1; /* k = n + 2046 > 0 */ \
	VPSRLQ $1, Z1, Z4;              /* ⌊n/2⌋ + 1023 */ \
	VPSUBQ Z4, Z1, Z1;              /* n - ⌊n/2⌋ + 1023 */ \
	VPSLLQ $52, Z4, Z4; \
	VPSLLQ $52, Z1, Z1

#define ERFW512(T, R) \
	VBROADCASTSD erfW14<>(SB), R; \
	VFMADD213PD.BCST erfW13<>(SB), T, R; \
	VFMADD213PD.BCST erfW12<>(SB), T, R; \
	VFMADD213PD.BCST erfW11<>(SB), T, R; \
	VFMADD213PD.BCST erfW10<>(SB), T, R; \
	VFMADD213PD.BCST erfW9<>(SB), T, R; \
	VFMADD213PD.BCST erfW8<>(SB), T, R; \
	VFMADD213PD.BCST erfW7<>(SB), T, R; \
	VFMADD213PD.BCST erfW6<>(SB), T, R; \
	VFMADD213PD.BCST erfW5<>(SB), T, R; \
	VFMADD213PD.BCST erfW4<>(SB), T, R; \
	VFMADD213PD.BCST erfW3<>(SB), T, R; \
	VFMADD213PD.BCST erfW2<>(SB), T, R; \
	VFMADD213PD.BCST erfW1<>(SB), T, R; \
	VFMADD213PD.BCST erfW0<>(SB), T, R

#define ERFCEXP512 \
	VMULPD      Z14, Z14, Z0; \
	VXORPD.BCST signMask64<>(SB), Z0, Z0; \
	EXPCORE512; \
	VADDPD      Z3, Z2, Z2; \
	EXPSCALE512; \
	VMULPD      Z4, Z2, Z2; \
	VMULPD      Z1, Z2, Z2     /* Z2 = e^(-b²) */

#define ERFC512 \
	ERFCEXP512; \
	VMAXPD      Z14, Z13, Z14; /* c = max(1, b) */ \
	VDIVPD      Z14, Z13, Z14; /* u = 1/c */ \
	VBROADCASTSD erfcH12<>(SB), Z5; \
	VFMADD213PD.BCST erfcH11<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH10<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH9<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH8<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH7<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH6<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH5<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH4<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH3<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH2<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH1<>(SB), Z14, Z5; \
	VFMADD213PD.BCST erfcH0<>(SB), Z14, Z5; \
	VMULPD      Z14, Z5, Z5; \
	VMULPD      Z2, Z5, Z5   /* erfc(c) */

#define GELUSMALL512 \
	VMULPD.BCST rsqrt264<>(SB), Z8, Z10;  /* z = x/√2 */ \
	VANDPD.BCST absMask64<>(SB), Z10, Z9; /* s = |z| */ \
	VMULPD      Z9, Z9, Z11; \
	ERFW512(Z11, Z12); \
	VMULPD      Z10, Z12, Z12;            /* erf(z) for s < 2 */ \
	VBROADCASTSD half64<>(SB), Z7; \
	VFMADD213PD.BCST half64<>(SB), Z7, Z12;    /* Z12 = ½ + ½·erf(z) */ \
	VCMPPD      $9, Z16, Z9, K1           /* !(s ≥ 2): small or NaN */

#define GELULARGE512 \
	VBROADCASTSD eleven64<>(SB), Z14; \
	VMINPD      Z9, Z14, Z14;             /* min(11, s) */ \
	ERFC512; \
	VMULPD.BCST half64<>(SB), Z5, Z5;     /* ½·erfc(c): Φ for x < 0 */ \
	VSUBPD      Z5, Z13, Z6;              /* 1 − ½·erfc(c): Φ for x ≥ 0 */ \
	VPMOVQ2M    Z8, K2;                   /* the sign of x picks */ \
	VBLENDMPD   Z5, Z6, K2, Z6; \
	VBLENDMPD   Z12, Z6, K1, Z5           /* GELUSMALL's where small */


// func gelu32AVX512(d, a []float32)
//
// gelu32AVX2 eight lanes at a time: len(d) a multiple of 8.
TEXT ·gelu32AVX512(SB), NOSPLIT, $0-48
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	SHRQ         $3, CX
	JZ           gelu512Done
	VBROADCASTSD one64<>(SB), Z13
	VBROADCASTSD two64<>(SB), Z16

gelu512Loop:
	VCVTPS2PD (SI), Z8
	GELUSMALL512
	KMOVB     K1, AX
	CMPL      AX, $0xff
	JNE       gelu512Large
	VMOVAPD   Z12, Z5 // every lane small: Φ is GELUSMALL's
	JMP       gelu512Scale

gelu512Large:
	GELULARGE512

gelu512Scale:
	VBROADCASTSD negSixteen64<>(SB), Z6
	VMAXPD       Z8, Z6, Z6 // max(-16, x), NaN kept
	VMULPD       Z6, Z5, Z5
	VCVTPD2PS    Z5, Y0
	VMOVUPS      Y0, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          gelu512Loop

gelu512Done:
	VZEROUPPER
	RET
