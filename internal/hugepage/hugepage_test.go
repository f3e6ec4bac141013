package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestSliceKeepsValues: advising changes no value, for empty, small,
// unaligned and large slices of several element types.
func TestSliceKeepsValues(t *testing.T) {
	Slice([]int64(nil))
	Slice(make([]byte, 0, 10))
	small := []int32{1, 2, 3}
	Slice(small)
	if small[0] != 1 || small[2] != 3 {
		t.Fatalf("small slice changed: %v", small)
	}
	big := make([]float64, 3<<20) // 24 MiB
	for i := range big {
		big[i] = float64(i)
	}
	Slice(big)                 // after the writes: values stay
	Slice(big[1 : len(big)-1]) // unaligned ends
	for i, v := range big {
		if v != float64(i) {
			t.Fatalf("big[%d] = %v after Advise", i, v)
		}
	}
}

// TestAdviseGivesHugePages: on Linux with transparent huge pages in
// "madvise" mode, an advised array touched afterwards is backed by huge
// pages (the mapping's AnonHugePages in /proc/self/smaps); an array that is
// not advised is not (the negative control). Skipped where THP is not in
// madvise mode (with "always" the control would be backed too; with
// "never" nothing is).
func TestAdviseGivesHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are advised on Linux only")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages not in madvise mode here (%q)", strings.TrimSpace(string(mode)))
	}
	const n = 64 << 20
	advised := make([]byte, n)
	Slice(advised)
	plain := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		advised[i] = 1
		plain[i] = 1
	}
	a := hugeKB(t, unsafe.Pointer(&advised[n/2]))
	p := hugeKB(t, unsafe.Pointer(&plain[n/2]))
	runtime.KeepAlive(advised)
	runtime.KeepAlive(plain)
	if a == 0 {
		t.Errorf("advised 64 MiB array: no huge pages in its mapping")
	}
	if p != 0 {
		t.Errorf("plain 64 MiB array: %d kB of huge pages in madvise mode (the measurement cannot tell)", p)
	}
}

// hugeKB returns the AnonHugePages (kB) of the mapping holding p.
func hugeKB(t *testing.T, p unsafe.Pointer) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	addr := uint64(uintptr(p))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

// mappingRange parses a mapping's header line "lo-hi perms ...".
func mappingRange(line string) (lo, hi uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 2 || strings.HasSuffix(f[0], ":") {
		return 0, 0, false
	}
	var l, h uint64
	if _, err := fmt.Sscanf(f[0], "%x-%x", &l, &h); err != nil {
		return 0, 0, false
	}
	return l, h, true
}
