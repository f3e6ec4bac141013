//go:build amd64 && !purego

package score

import "unsafe"

// prefetch asks the CPU to bring into cache the line holding a (unless
// nil) and the lines cache lines of 64 bytes starting with the one holding
// list (PREFETCHT0). It is only a hint: it never faults, whatever the
// pointers point to, and changes no result.
//
//go:noescape
func prefetch(a, list unsafe.Pointer, lines int)
