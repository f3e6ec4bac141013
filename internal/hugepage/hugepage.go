// Package hugepage asks the operating system to back large, randomly
// accessed arrays with huge pages.
//
// Scoring scatters every wedge into per-worker accumulators of one entry
// per node: at 10 M nodes an AA worker's accumulators span 256 MB, and with
// 4 KiB pages nearly every wedge misses the TLB as well as the cache. On
// Linux, where transparent huge pages are commonly enabled only for memory
// that asks for them ("madvise" mode), Advise marks the array's whole 2 MiB
// pages MADV_HUGEPAGE before they are first touched, so the page walk of a
// random access reads one entry of a much smaller table.
//
// Advise is a hint: it changes no value, and failures (an older kernel,
// THP disabled, another OS) are ignored.
package hugepage

import "unsafe"

// Threshold is the smallest array Advise marks: smaller arrays gain
// little and their pages may be shared with other allocations.
const Threshold = 8 << 20

// Slice advises the backing array of s (see Advise).
func Slice[T any](s []T) {
	if cap(s) == 0 {
		return
	}
	var z T
	Advise(unsafe.Pointer(unsafe.SliceData(s)), uintptr(cap(s))*unsafe.Sizeof(z))
}
