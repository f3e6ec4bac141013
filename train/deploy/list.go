package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// ListSpec is what TrainList trains: a dplp-list model (docs/privacy-model.md
// §16) for a triad score under a privacy unit at eps per list.
type ListSpec struct {
	Score string        // triad score: cn, aa, ra, jc or pa
	Unit  privunit.Unit // the unit of the guarantee (the evidence bound L1(u) is computed under it)
	Eps   float64       // pure eps per list (> 0; accountant.CheckEps)
	K     int           // list length the combination is fitted for (0: 30)
	Seed  uint64        // seed of the sample, pseudo-protection and fit noise
	// Sample configures the training pairs (as Spec.Sample).
	Sample SampleConfig
	// FitQueries caps the training queries of the fit, evenly spaced
	// (0: 400); Reps is the number of noise draws per query (0: 4). These
	// are the research harness's values (research/experiment).
	FitQueries, Reps int
}

// ListSummary describes a TrainList run.
type ListSummary struct {
	Report       list.FitReport
	PubScale     float64
	EvScale      float64
	Rho          float64
	TrainQueries int
	Seconds      float64
}

// TrainList fits dplp-list's combination for (g, p) and returns the model
// (model.CompileList; Meta.Data is protect.Fingerprint(g, p)).
//
// Procedure (the research harness's, research/experiment listmech.go, on
// deployment training data): Sample draws training queries with held-out
// public edges as positives and non-protected non-edges as negatives;
// PseudoProtect marks a seeded share of the public training graph's edges
// pseudo-protected, so the training pairs see private evidence as the
// release does; list.TrainData scores them (base score's public part, the
// evidence of list.EvidenceKind, its l1 bound under spec.Unit); the scores
// are rescaled to the release graph's magnitude (list.MeanRatio of the mean
// positive public score of the same labelled pairs on the public graph
// G_pub to that on the training graph, meanPublic); list.Fit then keeps
// list.DefaultPosterior(rho), rho = list.PriorRho, unless the training data
// show it clearly worse than public-only (then W = 0: every list costs 0).
//
// Guarantee: every step reads only invariant data (the public graph G_pub,
// the marks and the seed), never whether a protected pair is an edge, so a
// model trained on any neighbouring graph, under either unit, is
// bit-identical (Created aside). The model's combination is therefore fixed
// before any release: part of the mechanism, not of the data.
func TrainList(ctx context.Context, g *graph.Graph, p *protect.Set, spec ListSpec) (*model.Model, ListSummary, error) {
	if err := ctx.Err(); err != nil {
		return nil, ListSummary{}, err
	}
	if !spec.Unit.Valid() {
		return nil, ListSummary{}, fmt.Errorf("deploy: invalid privacy unit %v", spec.Unit)
	}
	if err := accountant.CheckEps(spec.Eps); err != nil {
		return nil, ListSummary{}, fmt.Errorf("deploy: eps per list: %w", err)
	}
	if spec.K == 0 {
		spec.K = 30
	}
	if spec.FitQueries == 0 {
		spec.FitQueries = 400
	}
	if spec.Reps == 0 {
		spec.Reps = 4
	}
	if spec.K < 1 || spec.FitQueries < 1 || spec.Reps < 1 || spec.Sample.MaxQueries < 0 || spec.Sample.NegPerQuery < 0 {
		return nil, ListSummary{}, fmt.Errorf("deploy: K (%d), FitQueries (%d), Reps (%d) must be >= 0 (0: the default), MaxQueries (%d) and NegPerQuery (%d) >= 0",
			spec.K, spec.FitQueries, spec.Reps, spec.Sample.MaxQueries, spec.Sample.NegPerQuery)
	}
	kind, err := score.ParseKind(spec.Score)
	if err != nil {
		return nil, ListSummary{}, fmt.Errorf("deploy: dplp-list needs a triad score (cn, aa, ra, jc, pa): %w", err)
	}
	start := time.Now()
	pr, err := Sample(g, p, spec.Sample, randx.Derive(spec.Seed, 0x666974))
	if err != nil {
		return nil, ListSummary{}, err
	}
	marks, err := PseudoProtect(pr, 0, spec.Seed)
	if err != nil {
		return nil, ListSummary{}, err
	}
	evKind := list.EvidenceKind(kind)
	sc, err := score.New(pr.Train, marks, kind)
	if err != nil {
		return nil, ListSummary{}, err
	}
	ev := sc
	if evKind != kind {
		if ev, err = score.New(pr.Train, marks, evKind); err != nil {
			return nil, ListSummary{}, err
		}
	}
	stride := max(1, (len(pr.Queries)+spec.FitQueries-1)/spec.FitQueries)
	var qids []int32
	var idx []int
	for i := 0; i < len(pr.Queries); i += stride {
		qids = append(qids, pr.Queries[i])
		idx = append(idx, i)
	}
	labelled := func(j int) (pos, neg []int32) { return pr.Pos[idx[j]], pr.Neg[idx[j]] }
	qs, evPub, err := list.TrainData(sc, ev, spec.Unit, qids, labelled)
	if err != nil {
		return nil, ListSummary{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ListSummary{}, err
	}
	// Rescale to the release graph: mean positive public score of the same
	// labelled pairs on G_pub (invariant), against the training one.
	pub := p.Public(g)
	var trainPub, trainEv []float64
	for j, q := range qs {
		trainPub = append(trainPub, q.Pub...)
		trainEv = append(trainEv, evPub[j]...)
	}
	pubMean, err := meanPublic(pub, p, kind, qids, labelled)
	if err != nil {
		return nil, ListSummary{}, err
	}
	sum := ListSummary{PubScale: list.MeanRatio(pubMean, trainPub), TrainQueries: len(qids)}
	sum.EvScale = sum.PubScale
	if evKind != kind {
		evMean, err := meanPublic(pub, p, evKind, qids, labelled)
		if err != nil {
			return nil, ListSummary{}, err
		}
		sum.EvScale = list.MeanRatio(evMean, trainEv)
	}
	sum.Rho = list.PriorRho(pub, p)
	comb := list.Combine{} // public-only when there is no prior (no public edge)
	if sum.Rho > 0 {
		comb, sum.Report, err = list.Fit(list.ScaleTrain(qs, sum.PubScale, sum.EvScale), spec.Eps, spec.K,
			list.DefaultPosterior(sum.Rho), spec.Reps, randx.Derive(spec.Seed, 0x6c697374, uint64(kind), uint64(spec.Unit)))
		if err != nil {
			return nil, ListSummary{}, err
		}
	} else {
		sum.Report.Chosen = comb
	}
	sum.Seconds = time.Since(start).Seconds()
	sd := spec.Seed
	rep := sum.Report
	m, err := model.CompileList(strings.ToLower(kind.String()), spec.Unit, model.ListSpec{
		Eps: spec.Eps, Evidence: strings.ToLower(evKind.String()), Combine: comb, Rho: sum.Rho, FitK: spec.K,
		PubScale: sum.PubScale, EvScale: sum.EvScale, Fit: &rep,
	}, model.Info{Dataset: fmt.Sprintf("public graph, %d training queries (pseudo-protected)", len(qids)), Seed: &sd})
	if err != nil {
		return nil, sum, err
	}
	m.Meta.Data = protect.Fingerprint(g, p)
	return m, sum, nil
}

// meanPublic is the mean positive public score of kind, on the public
// graph pub (s = s_pub there), of the same labelled training pairs (query
// queries[j] with candidates labelled(j)) whose training-graph scores Fit
// sees: the release graph's magnitude of the very pairs the fit is about.
// Positives are held-out public edges, which are edges of pub; a pair's
// triad score does not count the pair's own edge, so they score as a
// release would score such a pair. Invariant data only (pub, the marks,
// the seeded sample).
//
// The population matters: the mean over all of a query's candidates on
// pub (what an earlier version used) is dominated by one-wedge candidates
// and is lower than the mean over labelled pairs, so the ratio came out
// near 1, the fit saw the sparse training graph's signal-to-noise ratio,
// and vetoed evidence the release graph carries (facebook AA at eps 1).
func meanPublic(pub *graph.Graph, p *protect.Set, kind score.Kind, queries []int32, labelled func(j int) (pos, neg []int32)) (float64, error) {
	sc, err := score.New(pub, p, kind)
	if err != nil {
		return 0, err
	}
	sums := make([]float64, len(queries))
	cnts := make([]int, len(queries))
	slot := make(map[int32]int, len(queries))
	for j, q := range queries {
		slot[q] = j
	}
	err = sc.EachWorker(queries, func(_ int, wk *score.Worker, r *score.Result) {
		j := slot[r.U]
		pos, neg := labelled(j)
		for _, vs := range [2][]int32{pos, neg} {
			for _, v := range vs {
				if _, x := wk.At(v); x > 0 {
					sums[j] += x
					cnts[j]++
				}
			}
		}
	})
	if err != nil {
		return 0, err
	}
	var s float64
	var n int
	for j := range sums {
		s += sums[j]
		n += cnts[j]
	}
	if n == 0 {
		return 0, nil // no public wedge: list.MeanRatio keeps the scale 1
	}
	return s / float64(n), nil
}
