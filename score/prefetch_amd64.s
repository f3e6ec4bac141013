//go:build amd64 && !purego

#include "textflag.h"

// func prefetch(a, list unsafe.Pointer, lines int)
TEXT ·prefetch(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), AX
	TESTQ AX, AX
	JZ   lists
	PREFETCHT0 (AX)

lists:
	MOVQ list+8(FP), SI
	MOVQ lines+16(FP), CX
	TESTQ CX, CX
	JLE  done

loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  loop

done:
	RET
