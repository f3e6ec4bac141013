package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recommend --cpuprofile writes a pprof profile of the whole command; a
// path it cannot create stops it before anything is loaded or charged.
func TestRecommendCPUProfile(t *testing.T) {
	dir, g, prot, mp := smallModel(t)
	prof := filepath.Join(dir, "cpu.prof")
	ledger := filepath.Join(dir, "l.db")
	args := []string{"recommend", "--model", mp, "--graph", g, "--protected", prot, "--all", "--k", "5", "--format", "jsonl", "--store", "sqlite:" + ledger, "--create"}
	out, stderr, err := run(t, append(args, "--cpuprofile", prof)...)
	if err != nil {
		t.Fatalf("recommend: %v\n%s", err, stderr)
	}
	if n := strings.Count(out, "\n"); n != 200 {
		t.Fatalf("%d lines, want 200", n)
	}
	b, err := os.ReadFile(prof)
	if err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) { // pprof profiles are gzipped
		t.Fatalf("profile: %v, %d bytes", err, len(b))
	}

	ledger2 := filepath.Join(dir, "l2.db")
	args[len(args)-2] = "sqlite:" + ledger2
	_, _, err = run(t, append(args, "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "cpu.prof"))...)
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("unwritable profile path: err %v", err)
	}
	if _, err := os.Stat(ledger2); !os.IsNotExist(err) {
		t.Fatalf("a ledger was created before the profile failed: %v", err)
	}
}
