package snapshot

import (
	"os"
	"testing"
)

// BenchmarkLoad loads the snapshot named by DPLP_BENCH_SNAPSHOT (skipped when
// unset), e.g. one written by `dplp convert --graph /tmp/ba1m.txt --out /tmp/ba1m.dplpg`.
func BenchmarkLoad(b *testing.B) {
	path := os.Getenv("DPLP_BENCH_SNAPSHOT")
	if path == "" {
		b.Skip("set DPLP_BENCH_SNAPSHOT to a snapshot file")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
