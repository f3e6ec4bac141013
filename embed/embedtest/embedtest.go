// Package embedtest holds test helpers shared by the embedding packages.
package embedtest

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/linkclf"
	"github.com/dplp/dplp/linkclf/lptest"
	"github.com/dplp/dplp/randx"
)

// EmbedAUC runs the SEAL-style protocol for an embedding trainer: hold out
// 10% of g's edges and as many non-edges, embed the rest with train, fit the
// link classifier with feature feat, and return the held-out ROC-AUC.
func EmbedAUC(t testing.TB, g *graph.Graph, seed uint64, feat linkclf.Feature,
	train func(g *graph.Graph, rng *rand.Rand) (*embed.Embedding, error)) float64 {
	t.Helper()
	sp, err := lptest.HoldOut(g, 0.1, randx.Derive(seed, 0))
	if err != nil {
		t.Fatal(err)
	}
	emb, err := train(sp.Train, randx.Derive(seed, 1))
	if err != nil {
		t.Fatal(err)
	}
	m, err := linkclf.Train(emb, sp.Train, feat, randx.Derive(seed, 2))
	if err != nil {
		t.Fatal(err)
	}
	return sp.ScoreAUC(m.Prob)
}

// SameAcrossGOMAXPROCS runs fit at GOMAXPROCS 1, 4 and 4 again and fails
// unless every run gives the same vectors bit for bit (seeded training must
// not depend on the number of cores).
func SameAcrossGOMAXPROCS(t *testing.T, fit func() ([]float32, error)) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var vecs [][]float32
	for _, procs := range []int{1, 4, 4} {
		runtime.GOMAXPROCS(procs)
		v, err := fit()
		if err != nil {
			t.Fatal(err)
		}
		vecs = append(vecs, v)
	}
	for i := 1; i < len(vecs); i++ {
		if !slices.Equal(vecs[0], vecs[i]) {
			t.Errorf("run %d differs from the GOMAXPROCS=1 run", i)
		}
	}
}
