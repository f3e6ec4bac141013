package hostprobe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTouch(t *testing.T) {
	first, again, err := Touch(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if first <= 0 || again <= 0 {
		t.Fatalf("first %v, again %v: want positive durations", first, again)
	}
	for _, n := range []int64{0, -1, int64(os.Getpagesize()) - 1} {
		if _, _, err := Touch(n); err == nil || !strings.Contains(err.Error(), "at least one page") {
			t.Errorf("Touch(%d): %v, want an error naming the page", n, err)
		}
	}
}

func TestFsync(t *testing.T) {
	dir := t.TempDir()
	ds, err := Fsync(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("%d durations, want 3", len(ds))
	}
	for _, d := range ds {
		if d <= 0 {
			t.Fatalf("duration %v, want positive", d)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("Fsync left %d files in %s", len(left), dir)
	}
	missing := filepath.Join(dir, "no-such-dir")
	if _, err := Fsync(missing, 1); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Fsync into a missing directory: %v, want an error naming it", err)
	}
	if _, err := Fsync(dir, 0); err == nil {
		t.Error("Fsync with 0 syncs: no error")
	}
}

func TestQuantile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range xs {
			ds = append(ds, time.Duration(x)*time.Millisecond)
		}
		return ds
	}
	for _, c := range []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 0, 1 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond}, // rank ceil(2) = 2
		{ms(4, 1, 3, 2), 0.51, 3 * time.Millisecond},
		{ms(4, 1, 3, 2), 1, 4 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 0.5, 3 * time.Millisecond},
	} {
		in := append([]time.Duration(nil), c.ds...)
		if got := Quantile(c.ds, c.q); got != c.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.ds, c.q, got, c.want)
		}
		for i := range in {
			if in[i] != c.ds[i] {
				t.Fatalf("Quantile reordered its input")
			}
		}
	}
}
