//go:build !amd64 || purego

package score

import "unsafe"

// prefetch is a hint only (see prefetch_amd64.go); without an
// implementation for this architecture it does nothing.
func prefetch(a, list unsafe.Pointer, lines int) {}
