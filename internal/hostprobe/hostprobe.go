// Package hostprobe measures the machine properties that the scale figures
// of docs/SCALE.md depend on besides the code: how fast the operating
// system hands out fresh memory (the first write to each page of a new
// mapping, which on a virtual machine may also wait for the hypervisor),
// how fast the same pages are written once mapped, and how long a durable
// write (write plus fsync) of a file in a given directory takes.
//
// A 10 M-node release touches about 10 GB of fresh memory (its heap) and
// writes an 8.6 GB ledger through the page cache, and every charge
// transaction ends in a sync: on a host where fresh pages come at 0.3 GB/s
// instead of several GB/s, the same code takes a minute longer. `dplp bench
// host` prints these figures so that figures measured on different days
// can be compared with the host they were measured on.
//
// The measurements are wall-clock times of single runs; nothing here
// asserts a speed.
package hostprobe

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// Touch maps bytes of fresh anonymous memory, writes one byte to each page
// (timed: first), writes each page again (timed: again; the pages are
// mapped by then) and unmaps the memory. bytes must be at least one page.
func Touch(bytes int64) (first, again time.Duration, err error) {
	page := int64(os.Getpagesize())
	if bytes < page {
		return 0, 0, fmt.Errorf("hostprobe: %d bytes to touch, want at least one page (%d)", bytes, page)
	}
	if int64(int(bytes)) != bytes {
		return 0, 0, fmt.Errorf("hostprobe: %d bytes do not fit in this platform's int", bytes)
	}
	mem, free, err := mapFresh(int(bytes))
	if err != nil {
		return 0, 0, fmt.Errorf("hostprobe: mapping %d bytes: %w", bytes, err)
	}
	defer free()
	pass := func(b byte) time.Duration {
		start := time.Now()
		for i := 0; i < len(mem); i += int(page) {
			mem[i] = b
		}
		return time.Since(start)
	}
	first = pass(1)
	again = pass(2)
	return first, again, nil
}

// Fsync writes a page-sized block to the start of a new temporary file in
// dir and syncs it (os.File.Sync: fsync) n times, and returns the time of
// each write plus sync. The file is removed afterwards.
func Fsync(dir string, n int) ([]time.Duration, error) {
	if n < 1 {
		return nil, fmt.Errorf("hostprobe: %d syncs, want at least 1", n)
	}
	f, err := os.CreateTemp(dir, "dplp-hostprobe-*")
	if err != nil {
		return nil, fmt.Errorf("hostprobe: creating a file in %s: %w", dir, err)
	}
	name := f.Name()
	block := make([]byte, os.Getpagesize())
	times := make([]time.Duration, 0, n)
	for i := range n {
		block[0] = byte(i)
		start := time.Now()
		if _, err = f.WriteAt(block, 0); err != nil {
			break
		}
		if err = f.Sync(); err != nil {
			break
		}
		times = append(times, time.Since(start))
	}
	err = errors.Join(err, f.Close(), os.Remove(name))
	if err != nil {
		return nil, fmt.Errorf("hostprobe: syncing %s: %w", name, err)
	}
	return times, nil
}

// Quantile is the q-quantile (0 <= q <= 1) of ds by the nearest rank, or
// 0 for no durations. ds is not modified.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q * float64(len(s)))) // the rank, 1-based
	return s[min(max(i-1, 0), len(s)-1)]
}
