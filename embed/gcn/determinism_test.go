package gcn

import (
	"runtime"
	"slices"
	"testing"

	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// GCN's parallel kernels partition rows, so the same seed gives
// bit-identical embeddings at GOMAXPROCS 1 and 4 (Workers 0).
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	g, err := gen.BarabasiAlbert(300, 3, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Epochs = 5
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var vecs [][]float32
	for _, procs := range []int{1, 4, 4} {
		runtime.GOMAXPROCS(procs)
		e, err := Train(g, cfg, randx.Seeded(7), nil)
		if err != nil {
			t.Fatal(err)
		}
		vecs = append(vecs, e.Vec)
	}
	for i := 1; i < len(vecs); i++ {
		if !slices.Equal(vecs[0], vecs[i]) {
			t.Errorf("run %d differs from the GOMAXPROCS=1 run", i)
		}
	}
}
