package predict

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/score"
)

// LPResult is the outcome of the SEAL-style evaluation.
type LPResult struct {
	ROCAUCMean float64   `json:"roc_auc_mean"`
	ROCAUCCI95 float64   `json:"roc_auc_ci95"`
	Seconds    float64   `json:"seconds"`
	PerSeed    []float64 `json:"roc_auc_per_seed"`
}

// EvalLP is the non-private SEAL-style protocol: for each seed, hold out a
// fraction of g's edges as positives and as many uniformly drawn non-edges
// as negatives, fit the predictor on the remaining graph, and compute the
// full-list ROC-AUC of its scores on the held-out pairs. It reports the mean
// over seeds with a 95% confidence interval and the wall time. Cancelling
// ctx stops the evaluation (between seeds, and inside embedding training)
// with ctx.Err().
func EvalLP(ctx context.Context, g *graph.Graph, s Spec, holdout float64, seeds int, opt Options) (LPResult, error) {
	if !(holdout > 0 && holdout < 1) {
		return LPResult{}, fmt.Errorf("holdout must be in (0,1), got %v", holdout)
	}
	if seeds < 1 {
		return LPResult{}, fmt.Errorf("seeds must be >= 1")
	}
	start := time.Now()
	var res LPResult
	for i := 0; i < seeds; i++ {
		if err := ctx.Err(); err != nil {
			return LPResult{}, err
		}
		seed := opt.Seed + uint64(i)
		rng := randx.Derive(seed, 0x6c70)
		edges := g.EdgeList()
		k := int(holdout * float64(len(edges)))
		if k < 1 {
			return LPResult{}, fmt.Errorf("holdout %v of %d edges leaves no test edge", holdout, len(edges))
		}
		for j := 0; j < k; j++ {
			r := j + rng.IntN(len(edges)-j)
			edges[j], edges[r] = edges[r], edges[j]
		}
		test := edges[:k]
		held := make(map[graph.Edge]bool, k)
		for _, e := range test {
			held[e] = true
		}
		train := g.Without(func(u, v int32) bool { return held[graph.Edge{U: u, V: v}] })
		// Negatives: distinct non-edges of the full graph.
		n := g.N()
		negs := make([]graph.Edge, 0, k)
		seen := make(map[graph.Edge]bool, k)
		for tries := 0; len(negs) < k && tries < 100*k; tries++ {
			u, v := int32(rng.IntN(n)), int32(rng.IntN(n))
			if u == v {
				continue
			}
			e := graph.Edge{U: min(u, v), V: max(u, v)}
			if seen[e] || g.HasEdge(e.U, e.V) {
				continue
			}
			seen[e] = true
			negs = append(negs, e)
		}
		o := opt
		o.Seed = seed
		sc, err := s.Fit(ctx, train, protect.Empty(n), o)
		if err != nil {
			return LPResult{}, err
		}
		w := sc.NewWorker()
		var r scoreResult
		scoreOf := func(e graph.Edge) float64 {
			if r.u != e.U || !r.ok {
				w.Score(e.U, &r.res)
				r.u, r.ok = e.U, true
			}
			x, _ := w.At(e.V)
			return x
		}
		sortEdges(test)
		sortEdges(negs)
		pos := make([]float64, len(test))
		for j, e := range test {
			pos[j] = scoreOf(e)
		}
		neg := make([]float64, len(negs))
		for j, e := range negs {
			neg[j] = scoreOf(e)
		}
		res.PerSeed = append(res.PerSeed, ranking.ROCAUC(pos, neg))
	}
	res.ROCAUCMean, res.ROCAUCCI95 = ranking.MeanCI(res.PerSeed)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

type scoreResult struct {
	res score.Result
	u   int32
	ok  bool
}

// sortEdges orders pairs by first endpoint so each query is scored once.
func sortEdges(es []graph.Edge) {
	slices.SortFunc(es, func(a, b graph.Edge) int {
		if a.U != b.U {
			return int(a.U) - int(b.U)
		}
		return int(a.V) - int(b.V)
	})
}
