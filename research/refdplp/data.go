package refdplp

import (
	"fmt"
	"sync/atomic"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
)

// normaliser is the reference calibration's plan for a query: its Utility
// is the authors' s / (Delta + 1) (or s when Delta <= 1.01), and Exact
// tells a query without noise (a(q) = 0).
func normaliser(kind score.Kind, a, maxDeg int) calib.Plan {
	c := calib.Config{Method: calib.Exponential, Calibration: calib.Reference, Kind: kind, Eps: 1}
	return c.Plan(calib.Query{RefA: a, RefMaxDeg: maxDeg})
}

// TrainData builds the authors' training pairs from a reference split:
// every training query's dev positives (with their protection flags) and
// dev negatives, scored by sc on split.Train and normalised with a(q) and
// the maximum degree of split.Train (reference-implementation §2.1, §3.1).
func TrainData(s *protocol.Split, sc *score.Scorer) ([]TrainQuery, error) {
	if s.Kind != protocol.Reference || s.RefTrainA == nil {
		return nil, fmt.Errorf("refdplp: the authors' DPLP needs a reference-protocol split")
	}
	if sc.Graph() != s.Train {
		return nil, fmt.Errorf("refdplp: the training scorer must score the split's training graph")
	}
	out := make([]TrainQuery, len(s.TrainQueries))
	idx := make(map[int32]int, len(s.TrainQueries))
	for i, q := range s.TrainQueries {
		idx[q] = i
	}
	err := sc.EachWorker(s.TrainQueries, func(_ int, wk *score.Worker, r *score.Result) {
		i := idx[r.U]
		p := normaliser(sc.Kind(), s.RefTrainA[i], s.RefTrainMaxDeg)
		t := TrainQuery{Q: r.U, Noisy: !p.Exact()}
		for _, v := range s.DevPos[i] {
			sv, pv := wk.At(v)
			t.Pos = append(t.Pos, p.Utility(sv, pv))
			t.PosID = append(t.PosID, v)
			t.PosProt = append(t.PosProt, s.TrainProt.Has(r.U, v))
		}
		for _, v := range s.DevNeg[i] {
			sv, pv := wk.At(v)
			t.Neg = append(t.Neg, p.Utility(sv, pv))
			t.NegID = append(t.NegID, v)
		}
		out[i] = t
	})
	return out, err
}

// EvalData builds the test candidates of a reference split: each query's
// test positives and negatives scored by sc on split.Test and normalised
// with a(q) and the maximum degree of split.Test, with the scorer's
// Delta_s(u) and S_max(u) normalised the same way for the audit.
func EvalData(s *protocol.Split, sc *score.Scorer) ([]EvalQuery, error) {
	if s.Kind != protocol.Reference || s.RefA == nil {
		return nil, fmt.Errorf("refdplp: the authors' DPLP needs a reference-protocol split")
	}
	if sc.Graph() != s.Test {
		return nil, fmt.Errorf("refdplp: the evaluation scorer must score the split's test graph")
	}
	out := make([]EvalQuery, len(s.Queries))
	idx := make(map[int32]int, len(s.Queries))
	for i, q := range s.Queries {
		idx[q] = i
	}
	var bad atomic.Bool
	err := sc.EachWorker(s.Queries, func(_ int, wk *score.Worker, r *score.Result) {
		i := idx[r.U]
		p := normaliser(sc.Kind(), s.RefA[i], s.RefMaxDeg)
		e := EvalQuery{Q: r.U, Noisy: !p.Exact(), NPos: len(s.TestPos[i]),
			Delta: p.Utility(r.DeltaS, r.DeltaS), XMax: p.Utility(r.SMax, r.SMax)}
		for _, v := range s.Candidates(i, nil) {
			sv, pv := wk.At(v)
			e.S = append(e.S, p.Utility(sv, pv))
			e.IDs = append(e.IDs, v)
			e.Label = append(e.Label, s.Label(i, v))
		}
		if len(e.S) == 0 {
			bad.Store(true)
		}
		out[i] = e
	})
	if err == nil && bad.Load() {
		err = fmt.Errorf("refdplp: a query has no candidate")
	}
	return out, err
}
