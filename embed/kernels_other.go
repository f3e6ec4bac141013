//go:build !amd64 || purego

package embed

const useSIMD = false

func dotSIMD(a, b *float32, n int) float32 { panic("unreachable") }

func update2SIMD(alpha float32, in, out, gin *float32, n int) { panic("unreachable") }
