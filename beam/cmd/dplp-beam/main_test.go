package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusedBeforeWork: bad flags and a non-regular --out are refused
// before the pipeline runs, and nothing is written beside --out.
func TestRefusedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	for _, c := range []struct {
		flags map[string]string
		want  string
	}{
		{map[string]string{"out": outDir}, "is not a regular file"},
		{map[string]string{"out": filepath.Join(dir, "o"), "hub-chunk": "0"}, "--hub-chunk must be >= 1"},
		{map[string]string{"out": filepath.Join(dir, "o"), "k": "0"}, "--k must be >= 1"},
		{map[string]string{"out": filepath.Join(dir, "o"), "seed": ""}, "needs --store"},
	} {
		base := map[string]string{"graph": "g.txt", "model": "m.json", "k": "5", "seed": "1", "hub-chunk": "2048", "store": ""}
		for k, v := range c.flags {
			base[k] = v
		}
		for k, v := range base {
			if err := flag.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		err := run(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.flags, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files written beside --out: %v", entries)
	}
}
