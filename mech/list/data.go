package list

import (
	"errors"
	"sync"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// The training data of dplp-list's combination, shared by the deployment
// trainer (train/deploy.TrainList) and the research harness
// (research/experiment): both fit the combination on invariant data only
// (docs/privacy-model.md §12, §16), a public training graph whose edges are
// partly marked pseudo-protected, labelled with held-out public pairs.

// EvidenceKind is the score whose private evidence dplp-list releases for a
// base score: the protected-wedge count (CN's evidence, l1 sensitivity 1
// under the pair unit) for CN, AA and RA, whose own evidence would need the
// larger bound of their weights and degree shifts (score.Scorer.Evidence)
// for a signal of a fraction of a wedge each; the score's own evidence for
// JC and PA. The public part of the ranking is always the base score's own
// s_pub.
func EvidenceKind(k score.Kind) score.Kind {
	switch k {
	case score.AA, score.RA:
		return score.CN
	}
	return k
}

// PriorRho is the posterior family's prior scale: private evidence per
// public wedge, estimated as |marks| / |non-protected edges of g| (both
// invariant: the marks are public and non-protected pairs do not change; an
// over-estimate when marks include non-edges). 0 when g has no
// non-protected edge.
func PriorRho(g *graph.Graph, p *protect.Set) float64 {
	var pub int64
	g.Edges(func(a, b int32) {
		if !p.Has(a, b) {
			pub++
		}
	})
	if pub == 0 {
		return 0
	}
	return float64(p.Len()) / float64(pub)
}

// MeanPositive is the mean of the positive values of xs (0 when none).
func MeanPositive(xs []float64) float64 {
	var s float64
	var n int
	for _, x := range xs {
		if x > 0 {
			s += x
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// MeanRatio is the factor the training scores are rescaled by: the mean
// positive public score of the release's candidates (release, computed by
// the caller from invariant public scores) over that of the training
// candidates (train), at least 1; 1 when either is 0. The training graph
// holds a fraction of the release graph's edges, so its wedge counts,
// public and pseudo-private alike, are smaller while the noise is the same:
// a fit on the raw training data would see a lower signal-to-noise ratio
// than the release, and the rescaling restores the release's scale.
func MeanRatio(release float64, train []float64) float64 {
	t := MeanPositive(train)
	if release == 0 || t == 0 {
		return 1
	}
	return max(1, release/t)
}

// ScaleTrain returns copies of the training queries with public scores
// multiplied by f and evidence and public counts by g (MeanRatio).
func ScaleTrain(qs []TrainQuery, f, g float64) []TrainQuery {
	out := make([]TrainQuery, len(qs))
	for i, q := range qs {
		t := q
		t.Pub = make([]float64, len(q.Pub))
		t.Evid = make([]float64, len(q.Evid))
		for j := range q.Pub {
			t.Pub[j], t.Evid[j] = f*q.Pub[j], g*q.Evid[j]
		}
		if q.Count != nil {
			t.Count = make([]float64, len(q.Count))
			for j := range q.Count {
				t.Count[j] = g * q.Count[j]
			}
		}
		out[i] = t
	}
	return out
}

// TrainData builds the training queries of Fit: for each query qids[j]
// with labelled candidates (pos, neg = labelled(j)), the public score of
// sc (the base score) and the evidence s - s_pub of ev (EvidenceKind of
// the base score; ev == sc for JC and PA) of every candidate, positives
// first, and the bounds ev.Evidence(q, unit).L1 and L2. When ev != sc, Count is
// ev's public score (the posterior family's wedge counts). Both scorers
// must score the same (invariant training) graph with the same marks. It
// also returns ev's public scores of the candidates per query (evPub, for
// MeanRatio of the evidence).
func TrainData(sc, ev *score.Scorer, unit privunit.Unit, qids []int32, labelled func(j int) (pos, neg []int32)) (qs []TrainQuery, evPub [][]float64, err error) {
	if sc == nil || ev == nil || sc.Graph() != ev.Graph() {
		return nil, nil, errors.New("list: training data needs two scorers of the same graph")
	}
	if !unit.Valid() {
		return nil, nil, errors.New("list: invalid privacy unit")
	}
	out := make([]TrainQuery, len(qids))
	evPub = make([][]float64, len(qids))
	slot := make(map[int32]int, len(qids))
	for j, q := range qids {
		slot[q] = j
	}
	var mu sync.Mutex
	err = sc.EachWorker(qids, func(_ int, wk *score.Worker, res *score.Result) {
		j := slot[res.U]
		pos, neg := labelled(j)
		var tq TrainQuery
		for _, v := range pos {
			tq.Label = append(tq.Label, true)
			_, ps := wk.At(v)
			tq.Pub = append(tq.Pub, ps)
		}
		for _, v := range neg {
			tq.Label = append(tq.Label, false)
			_, ps := wk.At(v)
			tq.Pub = append(tq.Pub, ps)
		}
		mu.Lock()
		out[j] = tq
		mu.Unlock()
	})
	if err != nil {
		return nil, nil, err
	}
	err = ev.EachWorker(qids, func(_ int, wk *score.Worker, res *score.Result) {
		j := slot[res.U]
		pos, neg := labelled(j)
		mu.Lock()
		tq := &out[j]
		mu.Unlock()
		pubs := make([]float64, 0, len(pos)+len(neg))
		var evid []float64
		for _, vs := range [2][]int32{pos, neg} {
			for _, v := range vs {
				s, ps := wk.At(v)
				evid = append(evid, s-ps)
				pubs = append(pubs, ps)
			}
		}
		bd := ev.Evidence(res.U, unit)
		mu.Lock()
		tq.Evid, tq.L1, tq.L2 = evid, bd.L1, bd.L2
		if ev != sc {
			tq.Count = pubs
		}
		evPub[j] = pubs
		mu.Unlock()
	})
	if err != nil {
		return nil, nil, err
	}
	return out, evPub, nil
}
