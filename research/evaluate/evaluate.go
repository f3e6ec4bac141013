// Package evaluate runs one evaluation cell of the paper's protocol: it
// prepares DPLP's training data from a split (privacy-model §5: scores on
// the split's training graph, non-protected pairs only in the clean
// protocol), and releases and scores a top-K list for every evaluation query
// under a calibrated mechanism.
package evaluate

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/train/deploy"
)

// TrainingData scores the split's training pairs for the transform: every
// training query's dev positives and negatives, scored on split.Train with
// split.TrainProt, with Delta_s and S_max from the same scorer. Every
// heldOutEvery-th training query (a deterministic choice by position) goes
// to the held-out set used for early stopping and model selection;
// heldOutEvery <= 0 means none.
//
// In the clean protocol split.Train is the public graph and dev pairs are
// non-protected, so the data (and anything trained on it) is invariant
// between neighbouring graphs. publicOnly restricts positives to
// non-protected ones also in the reference protocol (what the authors'
// DPLP-Lin trains on).
func TrainingData(s *protocol.Split, kind score.Kind, heldOutEvery int, publicOnly bool) (tr, held []train.Query, err error) {
	sc, err := score.New(s.Train, s.TrainProt, kind)
	if err != nil {
		return nil, nil, err
	}
	return TrainingDataFrom(s, sc, heldOutEvery, publicOnly)
}

// TrainingDataFrom is TrainingData with a prepared scorer, which must score
// split.Train with split.TrainProt (for example an embedding predictor fitted
// on the training graph).
func TrainingDataFrom(s *protocol.Split, sc *score.Scorer, heldOutEvery int, publicOnly bool) (tr, held []train.Query, err error) {
	if sc.Graph() != s.Train {
		return nil, nil, fmt.Errorf("evaluate: the training scorer must score the split's training graph")
	}
	var posOf func(int, []int32) []int32
	if publicOnly {
		posOf = s.DevPosPublic
	}
	return deploy.Data(pairsOf(s), sc, heldOutEvery, posOf)
}

// Result is the outcome of one method on one split.
type Result struct {
	Mean    ranking.TopK // averaged over queries
	Queries int
	// ROCAUC is the mean full-list ROC-AUC of the (noise-free) utility over
	// queries with both labels; meaningful for non-private rankings.
	ROCAUC float64
	// ZeroNoise counts queries released without noise (Delta = 0 in the
	// rigorous mode; a(u) = 0 in the reference mode).
	ZeroNoise int
	// EpsSpent is the mean protected-pair eps charged per released list
	// (calib.Plan.ListCost of its random picks, Plan.Picks): K x eps_p for
	// the exponential mechanism, less for the lexicographic DPLP-pub (picks
	// fixed by the public scores are free), 0 for public-only, +Inf for
	// the non-private top-K.
	EpsSpent float64
	// Picks is the mean number of random picks per list.
	Picks float64
}

// Run releases a top-k list for every evaluation query of the split under
// cfg, scoring candidates on split.Test with split.Prot, and averages the
// ranking. Noise for query i is drawn from randx.Derive(seed, i), so results
// do not depend on scheduling.
func Run(s *protocol.Split, cfg calib.Config, k int, seed uint64) (Result, error) {
	sc, err := score.New(s.Test, s.Prot, cfg.Kind)
	if err != nil {
		return Result{}, err
	}
	return RunScorer(s, sc, cfg, k, seed)
}

// RunScorer is Run with a prepared scorer, which must score split.Test with
// split.Prot (for example an embedding predictor fitted on the test graph).
func RunScorer(s *protocol.Split, sc *score.Scorer, cfg calib.Config, k int, seed uint64) (Result, error) {
	if k < 1 {
		return Result{}, fmt.Errorf("evaluate: k must be >= 1")
	}
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if sc.Graph() != s.Test {
		return Result{}, fmt.Errorf("evaluate: the scorer must score the split's test graph")
	}
	nw := runtime.GOMAXPROCS(0)
	type acc struct {
		cands  []int32
		sv, pv []float64
		sm     release.Sampler
		rel    []bool
		pos    []float64
		neg    []float64
		_      [64]byte
	}
	accs := make([]acc, nw)
	// Per-query results, summed in query order afterwards so that the
	// floating-point total does not depend on scheduling.
	perQ := make([]ranking.TopK, len(s.Queries))
	rocQ := make([]float64, len(s.Queries))
	zeroQ := make([]bool, len(s.Queries))
	costQ := make([]float64, len(s.Queries))
	picksQ := make([]int, len(s.Queries))
	idx := make(map[int32]int, len(s.Queries))
	for i, q := range s.Queries {
		idx[q] = i
	}
	var firstErr atomic.Value
	err := sc.EachWorker(s.Queries, func(w int, wk *score.Worker, r *score.Result) {
		a := &accs[w]
		i := idx[r.U]
		info := calib.Query{DeltaS: r.DeltaS, SMax: r.SMax}
		if cfg.Unit == privunit.Pair {
			// The pair-unit per-candidate bound (invariant, score/unitsens.go).
			info.DeltaPair = sc.Evidence(r.U, privunit.Pair).Linf
		}
		if s.RefA != nil {
			info.RefA, info.RefMaxDeg = s.RefA[i], s.RefMaxDeg
		}
		plan := cfg.Plan(info)
		zeroQ[i] = plan.Exact()
		a.cands = s.Candidates(i, a.cands)
		a.sv, a.pv = a.sv[:0], a.pv[:0]
		a.pos, a.neg = a.pos[:0], a.neg[:0]
		for _, v := range a.cands {
			sv, pv := wk.At(v)
			a.sv, a.pv = append(a.sv, sv), append(a.pv, pv)
			if q := plan.Utility(sv, pv); s.Label(i, v) {
				a.pos = append(a.pos, q)
			} else {
				a.neg = append(a.neg, q)
			}
		}
		// The release path's sampler over the evaluation candidates (no
		// zero block: every candidate is listed).
		in := release.UserInput{N: s.Test.N(), Cands: a.cands, S: a.sv, Pub: a.pv}
		out, err := a.sm.Sample(&plan, &in, k, randx.Derive(seed, uint64(i)))
		if err != nil {
			firstErr.CompareAndSwap(nil, err)
			return
		}
		picksQ[i] = out.Picks
		costQ[i] = plan.ListCost(picksQ[i])
		a.rel = a.rel[:0]
		for _, v := range out.IDs {
			a.rel = append(a.rel, s.Label(i, v))
		}
		perQ[i] = ranking.Evaluate(a.rel, len(s.TestPos[i]), k)
		rocQ[i] = ranking.ROCAUC(a.pos, a.neg)
	})
	if err != nil {
		return Result{}, err
	}
	if e := firstErr.Load(); e != nil {
		return Result{}, e.(error)
	}
	var res Result
	var roc float64
	var nroc int
	for i := range perQ {
		res.Mean.Add(perQ[i])
		if zeroQ[i] {
			res.ZeroNoise++
		}
		res.EpsSpent += costQ[i]
		res.Picks += float64(picksQ[i])
		if !math.IsNaN(rocQ[i]) {
			roc += rocQ[i]
			nroc++
		}
	}
	res.Queries = len(s.Queries)
	if res.Queries > 0 {
		res.Mean.Scale(1 / float64(res.Queries))
		res.EpsSpent /= float64(res.Queries)
		res.Picks /= float64(res.Queries)
	}
	res.ROCAUC = math.NaN()
	if nroc > 0 {
		res.ROCAUC = roc / float64(nroc)
	}
	return res, nil
}
