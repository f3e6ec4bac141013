//go:build amd64 && !purego

#include "textflag.h"

// func dotSIMD(a, b *float32, n int) float32
TEXT ·dotSIMD(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

loop16:
	CMPQ CX, $16
	JL   tail8
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop16

tail8:
	CMPQ CX, $8
	JL   reduce
	VMOVUPS (SI), Y2
	VFMADD231PS (DI), Y2, Y0

reduce:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func update2SIMD(alpha float32, in, out, gin *float32, n int)
TEXT ·update2SIMD(SB), NOSPLIT, $0-40
	MOVSS        alpha+0(FP), X0
	VBROADCASTSS X0, Y0
	MOVQ in+8(FP), SI
	MOVQ out+16(FP), DI
	MOVQ gin+24(FP), DX
	MOVQ n+32(FP), CX

loop:
	CMPQ CX, $8
	JL   done
	VMOVUPS (DI), Y1           // o
	VMOVUPS (DX), Y2           // e
	VFMADD231PS Y1, Y0, Y2     // e += g*o
	VFMADD231PS (SI), Y0, Y1   // o += g*in
	VMOVUPS Y2, (DX)
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  loop

done:
	VZEROUPPER
	RET
