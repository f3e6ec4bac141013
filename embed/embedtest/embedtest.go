// Package embedtest holds test helpers shared by the embedding packages.
package embedtest

import (
	"context"
	"errors"
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

// StopsWhenCancelled checks the cancellation contract of an embedding
// trainer: cancelled from its progress callback at the first report, train
// returns context.Canceled and no embedding, and reports nothing more (run
// it with one worker, so that nothing is in flight); with a context
// cancelled before the call it returns context.Canceled without a report.
func StopsWhenCancelled(t *testing.T, train func(ctx context.Context, progress func(done, total int)) (*embed.Embedding, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reports := 0
	e, err := train(ctx, func(int, int) {
		reports++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || e != nil || reports != 1 {
		t.Errorf("cancelled at the first report: embedding %v, err %v, %d reports; want context.Canceled after one", e != nil, err, reports)
	}
	reports = 0
	e, err = train(ctx, func(int, int) { reports++ })
	if !errors.Is(err, context.Canceled) || e != nil || reports != 0 {
		t.Errorf("cancelled before the call: embedding %v, err %v, %d reports; want context.Canceled and no report", e != nil, err, reports)
	}
}
