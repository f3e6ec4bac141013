//go:build unix

package atomicfile

import (
	"path/filepath"
	"syscall"
	"testing"
)

func makeFifo(t *testing.T, dir string) string {
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Logf("no fifo: %v", err)
		return ""
	}
	return p
}
