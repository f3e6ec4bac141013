package snapshot

import (
	"os"
	"testing"

	"github.com/dplp/dplp/graph"
)

// BenchmarkLoad loads the snapshot named by DPLP_BENCH_SNAPSHOT (skipped when
// unset), e.g. one written by `dplp convert --graph /tmp/ba1m.txt --out /tmp/ba1m.dplpg`.
func BenchmarkLoad(b *testing.B) {
	path := benchSnapshot(b, true)
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFromCSR times graph.FromCSR's checks (the list checks and the
// symmetry check) on the arrays of the snapshot named by DPLP_BENCH_SNAPSHOT.
func BenchmarkFromCSR(b *testing.B) {
	path := benchSnapshot(b, false)
	s, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(s.Graph.Adj)) * 4)
	for b.Loop() {
		if _, err := graph.FromCSR(s.Graph.Off, s.Graph.Adj, s.Graph.Labels()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFile times reading the snapshot named by DPLP_BENCH_SNAPSHOT
// with its payload checksum (readFile), without the checks.
func BenchmarkReadFile(b *testing.B) {
	path := benchSnapshot(b, true)
	for b.Loop() {
		if _, _, ok, err := readFile(path); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// benchSnapshot returns the snapshot named by DPLP_BENCH_SNAPSHOT, skipping
// the benchmark when it is unset; with perFile, b's bytes per operation are
// the file's size.
func benchSnapshot(b *testing.B, perFile bool) string {
	path := os.Getenv("DPLP_BENCH_SNAPSHOT")
	if path == "" {
		b.Skip("set DPLP_BENCH_SNAPSHOT to a snapshot file")
	}
	if perFile {
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(st.Size())
	}
	return path
}
