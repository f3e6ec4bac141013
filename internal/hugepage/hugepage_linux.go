//go:build linux

package hugepage

import (
	"syscall"
	"unsafe"
)

const hugeSize = 2 << 20

// Advise marks the 2 MiB pages wholly inside [p, p+n) MADV_HUGEPAGE when n
// is at least Threshold. The memory must stay allocated (it is Go heap
// memory the caller keeps alive).
func Advise(p unsafe.Pointer, n uintptr) {
	if n < Threshold {
		return
	}
	lo := (uintptr(p) + hugeSize - 1) &^ (hugeSize - 1)
	hi := (uintptr(p) + n) &^ (hugeSize - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, lo-uintptr(p))), hi-lo)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // a hint: ignored when refused
}
