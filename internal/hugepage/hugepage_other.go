//go:build !linux

package hugepage

import "unsafe"

// Advise does nothing on this platform.
func Advise(p unsafe.Pointer, n uintptr) {}
