// Constant-defining macros shared by the package's assembly files.

// CONST8 defines a 32-byte read-only constant holding eight copies of the
// 32-bit pattern bits.
#define CONST8(name, bits) \
	DATA name+0(SB)/4, $bits; \
	DATA name+4(SB)/4, $bits; \
	DATA name+8(SB)/4, $bits; \
	DATA name+12(SB)/4, $bits; \
	DATA name+16(SB)/4, $bits; \
	DATA name+20(SB)/4, $bits; \
	DATA name+24(SB)/4, $bits; \
	DATA name+28(SB)/4, $bits; \
	GLOBL name(SB), RODATA|NOPTR, $32

// CONST4 defines a 32-byte read-only constant holding four copies of the
// 64-bit pattern bits.
#define CONST4(name, bits) \
	DATA name+0(SB)/8, $bits; \
	DATA name+8(SB)/8, $bits; \
	DATA name+16(SB)/8, $bits; \
	DATA name+24(SB)/8, $bits; \
	GLOBL name(SB), RODATA|NOPTR, $32
