#include "textflag.h"

// func dot8AVX2(a, b *int8, n int) int32
//
// 32 components per iteration: each half is sign-extended to 16 int16s
// (VPMOVSXBW), multiplied and summed pairwise into 8 int32s (VPMADDWD),
// in two accumulators; then the 16 lanes are added up.
TEXT ·dot8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y5, Y5, Y5

loop:
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y3
	VPADDD    Y3, Y0, Y0
	VPMOVSXBW 16(SI), Y1
	VPMOVSXBW 16(DI), Y2
	VPMADDWD  Y1, Y2, Y4
	VPADDD    Y4, Y5, Y5
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JNZ       loop

	VPADDD       Y5, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	MOVL         X0, ret+24(FP)
	VZEROUPPER
	RET
