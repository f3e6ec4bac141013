//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package hostprobe

import "syscall"

// mapFresh maps n bytes of anonymous private memory, which the kernel
// backs page by page on first write.
func mapFresh(n int) ([]byte, func(), error) {
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return mem, func() { _ = syscall.Munmap(mem) }, nil
}
