package line

import (
	"runtime"
	"slices"
	"testing"

	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// The same seed gives bit-identical embeddings at GOMAXPROCS 1 and 4 with
// the default configuration (Workers 0); before, Workers 0 meant GOMAXPROCS
// Hogwild workers, each with its own generator, and runs differed.
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	g, err := gen.BarabasiAlbert(300, 3, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Dim = 16
	cfg.Samples = 100_000
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
