package embed

import (
	"context"
	"math/rand/v2"

	"github.com/dplp/dplp/graph"
)

// DeepWalk embeds g with uniform random walks and skip-gram (Perozzi et al.
// 2014). progress (may be nil) receives monotone (done, total) work counts,
// one unit per walk node generated or trained on, from one goroutine at a time.
// Cancelling ctx stops the run between chunks of walks (walkChunk walks
// generated, trainChunk walks trained on); DeepWalk then returns ctx.Err()
// and no embedding.
func DeepWalk(ctx context.Context, g *graph.Graph, cfg DeepWalkConfig, rng *rand.Rand, progress func(done, total int)) (*Embedding, error) {
	if err := checkAll(g, cfg.Walk, cfg.SkipGram, rng); err != nil {
		return nil, err
	}
	return walkAndTrain(ctx, g, cfg.Walk, cfg.SkipGram, uniformWalker(g), rng, progress)
}

// Node2Vec embeds g with second-order biased walks (return p, in-out q; see
// Node2VecWalks) and skip-gram (Grover & Leskovec 2016). With p = q = 1 the
// walks are uniform, as in DeepWalk. ctx and progress are as for DeepWalk.
func Node2Vec(ctx context.Context, g *graph.Graph, cfg Node2VecConfig, rng *rand.Rand, progress func(done, total int)) (*Embedding, error) {
	if err := checkAll(g, cfg.Walk, cfg.SkipGram, rng); err != nil {
		return nil, err
	}
	if err := checkPQ(cfg.P, cfg.Q); err != nil {
		return nil, err
	}
	return walkAndTrain(ctx, g, cfg.Walk, cfg.SkipGram, node2vecWalker(g, cfg.P, cfg.Q), rng, progress)
}

func checkAll(g *graph.Graph, wc WalkConfig, sc SkipGramConfig, rng *rand.Rand) error {
	if err := checkGraph(g); err != nil {
		return err
	}
	if err := wc.validate(); err != nil {
		return err
	}
	if err := sc.validate(); err != nil {
		return err
	}
	if rng == nil {
		return errNilRand
	}
	return nil
}

func walkAndTrain(ctx context.Context, g *graph.Graph, wc WalkConfig, sc SkipGramConfig, gen walkFunc, rng *rand.Rand, progress func(done, total int)) (*Embedding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seed := rng.Uint64()
	nominal := g.N() * wc.WalksPerNode * wc.WalkLength
	pm := newProgress(progress, nominal*(1+sc.Epochs))
	walks, err := runWalks(ctx, g.N(), wc, sc.workers(), seed, gen, pm)
	if err != nil {
		return nil, err
	}
	tokens := 0
	for _, w := range walks {
		tokens += len(w)
	}
	// Short walks (isolated nodes) make training smaller than nominal.
	pm.add((nominal - tokens) * sc.Epochs)
	return trainSkipGram(ctx, g.N(), walks, tokens, sc, seed, pm)
}
