package graph

import (
	"os"
	"testing"
)

// BenchmarkReadFile parses the file named by DPLP_BENCH_GRAPH (skipped when
// unset), e.g. a graph from `dplp gen ba --n 1000000 --m 10 --out /tmp/ba1m.txt`.
func BenchmarkReadFile(b *testing.B) {
	path := os.Getenv("DPLP_BENCH_GRAPH")
	if path == "" {
		b.Skip("set DPLP_BENCH_GRAPH to an edge-list file")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, _, err := ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSummary times `dplp stats`'s computation after parsing.
func BenchmarkSummary(b *testing.B) {
	path := os.Getenv("DPLP_BENCH_GRAPH")
	if path == "" {
		b.Skip("set DPLP_BENCH_GRAPH to an edge-list file")
	}
	g, rep, err := ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		g.Summary(rep.BuildStats)
	}
}
