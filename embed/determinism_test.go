package embed

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// The same seed gives bit-identical embeddings at GOMAXPROCS 1 and 4 with
// the default configurations (Workers 0 = GOMAXPROCS): training is
// deterministic unless Hogwild is asked for. Before, default runs trained
// with GOMAXPROCS Hogwild workers and differed from run to run.
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	g, err := gen.BarabasiAlbert(300, 3, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	small := func(sg SkipGramConfig) SkipGramConfig {
		sg.Dim = 16
		sg.Workers = 0
		return sg
	}
	methods := map[string]func(g *graph.Graph) (*Embedding, error){
		"deepwalk": func(g *graph.Graph) (*Embedding, error) {
			c := DefaultDeepWalk()
			c.Walk = WalkConfig{WalksPerNode: 4, WalkLength: 20}
			c.SkipGram = small(c.SkipGram)
			return DeepWalk(context.Background(), g, c, randx.Seeded(7), nil)
		},
		"node2vec": func(g *graph.Graph) (*Embedding, error) {
			c := DefaultNode2Vec()
			c.P, c.Q = 0.5, 2
			c.Walk = WalkConfig{WalksPerNode: 4, WalkLength: 20}
			c.SkipGram = small(c.SkipGram)
			return Node2Vec(context.Background(), g, c, randx.Seeded(7), nil)
		},
		"struc2vec": func(g *graph.Graph) (*Embedding, error) {
			c := DefaultStruc2Vec()
			c.Layers = 3
			c.Walk = WalkConfig{WalksPerNode: 2, WalkLength: 10}
			c.SkipGram = small(c.SkipGram)
			c.SkipGram.Epochs = 2
			return Struc2Vec(context.Background(), g, c, randx.Seeded(7), nil)
		},
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for name, fit := range methods {
		var vecs [][]float32
		for _, procs := range []int{1, 4, 4} {
			runtime.GOMAXPROCS(procs)
			e, err := fit(g)
			if err != nil {
				t.Fatal(err)
			}
			vecs = append(vecs, e.Vec)
		}
		for i := 1; i < len(vecs); i++ {
			if !slices.Equal(vecs[0], vecs[i]) {
				t.Errorf("%s: run %d differs from the GOMAXPROCS=1 run", name, i)
			}
		}
	}
}
