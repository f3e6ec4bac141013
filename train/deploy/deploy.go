// Package deploy trains DPLP's transform for deployment on invariant data
// only (docs/privacy-model.md §5, §12): it samples training queries and
// their pairs from the public graph and the marks, scores them on the
// public training graph, trains the transform (package train) and compiles
// it into a deployable model (package model).
//
// Guarantee: every count, filter, sample size and random draw reads only
// the public graph G_pub (protected edges removed), the marks and the seed,
// so training on any neighbouring graph (one node's protected pairs
// toggled) gives a bit-identical model. Tests in package evaluate and the
// end-to-end audit (audit/endtoend) check it.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dplp/dplp/accountant"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/transform"
)

// SampleConfig controls Sample.
type SampleConfig struct {
	DevFrac      float64 // fraction of each query's non-protected edges held out as positives (default 0.3)
	MaxQueries   int     // training queries sampled (0: all nodes with a usable pair)
	NegPerQuery  int     // negatives per query (default 200)
	MinPositives int     // queries with fewer usable positives are skipped (default 1)
}

// Pairs is the training data of the transform before scoring: the graph
// training scores are computed on, its marks, and each training query's
// positive and negative pairs (ascending).
type Pairs struct {
	Train    *graph.Graph // scores are computed here (public graph minus held-out positives)
	Marks    *protect.Set // the marks, used with Train for Delta_s and S_max
	Queries  []int32      // ascending
	Pos, Neg [][]int32    // per query
	// Sigma is the share of edges protected when the caller knows it (an
	// experiment's protocol); 0 lets PseudoProtect estimate it from the
	// marks.
	Sigma float64
}

// Sample draws deployment training pairs for graph g with marks p: a seeded
// permutation of the nodes picks the training queries; each holds out a
// fraction of its public edges as positives (removed from the training
// graph) and samples non-protected non-edges as negatives, counting them
// with n - 1 - deg_pub(q) - |prot(q)| (every protected pair of q is a
// non-edge of G_pub). Only invariant data is read.
func Sample(g *graph.Graph, p *protect.Set, cfg SampleConfig, rng *rand.Rand) (*Pairs, error) {
	if cfg.DevFrac == 0 {
		cfg.DevFrac = 0.3
	}
	if cfg.NegPerQuery == 0 {
		cfg.NegPerQuery = 200
	}
	if cfg.MinPositives == 0 {
		cfg.MinPositives = 1
	}
	if !(cfg.DevFrac > 0 && cfg.DevFrac < 1) || cfg.NegPerQuery < 1 || cfg.MaxQueries < 0 {
		return nil, fmt.Errorf("deploy: invalid sample config %+v", cfg)
	}
	if g == nil || p == nil || p.N() != g.N() {
		return nil, fmt.Errorf("deploy: graph and marks over the same nodes are required")
	}
	pub := p.Public(g)
	n := g.N()
	order := rng.Perm(n)
	if cfg.MaxQueries > 0 && cfg.MaxQueries < n {
		order = order[:cfg.MaxQueries]
	}
	slices.Sort(order)
	held := make(map[graph.Edge]bool)
	out := &Pairs{Marks: p}
	for _, qi := range order {
		q := int32(qi)
		nb := pub.Neighbors(q)
		k := int(cfg.DevFrac * float64(len(nb)))
		if k < cfg.MinPositives || len(nb)-k < 1 {
			continue
		}
		perm := rng.Perm(len(nb))[:k]
		pos := make([]int32, 0, k)
		for _, j := range perm {
			v := nb[j]
			pos = append(pos, v)
			held[graph.Edge{U: min(q, v), V: max(q, v)}] = true
		}
		slices.Sort(pos)
		// Negatives: non-protected non-neighbours, by rejection. Both the
		// count and the rejection test read only invariant data. A
		// full-graph degree here would change every later draw when one
		// protected pair is toggled (privacy-model §5).
		want := min(cfg.NegPerQuery, n-1-pub.Degree(q)-p.Count(q))
		neg := make([]int32, 0, max(want, 0))
		seen := make(map[int32]bool, max(want, 0))
		for tries := 0; len(neg) < want && tries < 50*want+100; tries++ {
			v := int32(rng.IntN(n))
			if v == q || seen[v] || pub.HasEdge(q, v) || p.Has(q, v) {
				continue
			}
			seen[v] = true
			neg = append(neg, v)
		}
		if len(neg) == 0 {
			continue
		}
		slices.Sort(neg)
		out.Queries = append(out.Queries, q)
		out.Pos = append(out.Pos, pos)
		out.Neg = append(out.Neg, neg)
	}
	if len(out.Queries) == 0 {
		return nil, fmt.Errorf("deploy: no node has enough non-protected edges to train on")
	}
	out.Train = pub.Without(func(u, v int32) bool { return held[graph.Edge{U: u, V: v}] })
	return out, nil
}

// PseudoProtect returns the marks dplp-pub trains with: the pairs' marks
// plus a seeded fraction sigma of the edges of the public training graph,
// marked pseudo-protected. Pseudo-protected edges stay in the graph, so they
// count in s but not in s_pub, and they raise Delta_s(u) as real marks do at
// release: the training pairs then see private evidence (s > s_pub) as the
// release does, and f learns what it is worth. Only invariant data is read
// and the draw uses seed alone, so neighbouring graphs give identical marks.
//
// sigma <= 0 selects pr.Sigma when set, otherwise the invariant share of
// marks |marks| / (|E(Train)| + |marks|), capped at 0.5 (marks include
// protected non-edges, so this over-estimates the protected share of edges).
func PseudoProtect(pr *Pairs, sigma float64, seed uint64) (*protect.Set, error) {
	if sigma <= 0 {
		sigma = pr.Sigma
	}
	if sigma <= 0 {
		m := float64(pr.Marks.Len())
		sigma = min(0.5, m/(float64(pr.Train.M())+m))
	}
	pseudo, err := protect.Synthetic(pr.Train, sigma, 0, randx.Derive(seed, 0x70736575646f))
	if err != nil {
		return nil, err
	}
	pairs := append(pr.Marks.Pairs(), pseudo.Pairs()...)
	return protect.New(pr.Train.N(), pairs)
}

// Data scores the training pairs with sc, which must score pr.Train: every
// query's positives and negatives, with Delta_s and S_max from the same
// scorer. Every heldOutEvery-th query (by position) goes to the held-out
// set used for model selection; heldOutEvery <= 0 means none. posOf, when
// non-nil, replaces a query's positives (the reference protocol's
// DPLP-Lin trains on non-protected positives only).
func Data(pr *Pairs, sc *score.Scorer, heldOutEvery int, posOf func(i int, dst []int32) []int32) (tr, held []train.Query, err error) {
	if sc.Graph() != pr.Train {
		return nil, nil, fmt.Errorf("deploy: the training scorer must score the training graph")
	}
	out := make([]train.Query, len(pr.Queries))
	pos := make(map[int32]int, len(pr.Queries))
	for i, q := range pr.Queries {
		pos[q] = i
	}
	var mu sync.Mutex
	scratch := make([][]int32, runtime.GOMAXPROCS(0))
	err = sc.EachWorker(pr.Queries, func(w int, wk *score.Worker, r *score.Result) {
		i := pos[r.U]
		pp := pr.Pos[i]
		if posOf != nil {
			scratch[w] = posOf(i, scratch[w])
			pp = scratch[w]
		}
		q := train.Query{SMax: r.SMax, DeltaS: r.DeltaS,
			Pos: make([]float64, len(pp)), PubPos: make([]float64, len(pp)),
			Neg: make([]float64, len(pr.Neg[i])), PubNeg: make([]float64, len(pr.Neg[i]))}
		for j, v := range pp {
			q.Pos[j], q.PubPos[j] = wk.At(v)
		}
		for j, v := range pr.Neg[i] {
			q.Neg[j], q.PubNeg[j] = wk.At(v)
		}
		mu.Lock()
		out[i] = q
		mu.Unlock()
	})
	if err != nil {
		return nil, nil, err
	}
	for i, q := range out {
		if q.SMax <= 0 || len(q.Pos) == 0 || len(q.Neg) == 0 {
			continue
		}
		if heldOutEvery > 0 && i%heldOutEvery == heldOutEvery-1 {
			held = append(held, q)
		} else {
			tr = append(tr, q)
		}
	}
	if len(tr) == 0 {
		return nil, nil, fmt.Errorf("deploy: no training query has both positive and negative pairs")
	}
	return tr, held, nil
}

// ParseVariant accepts the variant names of the CLI and experiments, in
// any case and with surrounding spaces: "dplp", "lin" or "dplp-lin", "umnn"
// or "dplp-umnn", "dplp-pub".
func ParseVariant(s string) (train.Variant, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	switch l {
	case "dplp-lin":
		l = "lin"
	case "dplp-umnn":
		l = "umnn"
	}
	v, err := train.ParseVariant(l)
	if err != nil {
		return "", fmt.Errorf("unknown DPLP variant %q (want dplp, lin or dplp-lin, umnn or dplp-umnn, dplp-pub)", s)
	}
	return v, nil
}

// Options adjust Model.
type Options struct {
	Epochs int // 0: train.DefaultConfig's
	// HeldOutEvery puts every n-th training query in the held-out set
	// (0: 5, i.e. 20%).
	HeldOutEvery int
	// Config, when non-nil, replaces train.DefaultConfig (Variant and Eps
	// are still set from the arguments).
	Config *train.Config
	// OnEpoch, if set, observes the training run (train.Observer).
	OnEpoch train.Observer
	// PseudoSigma is the fraction of the public training graph's edges
	// marked pseudo-protected for dplp-pub (PseudoProtect): 0 means
	// Pairs.Sigma or the invariant share of marks; negative turns
	// pseudo-protection off.
	PseudoSigma float64
	// SelectK is the release K the dplp-pub epoch is selected for (AUC@K;
	// 0: train.DefaultSelectK = 30).
	SelectK int
	// PosOf, when non-nil, replaces each query's positives (research
	// protocols only).
	PosOf func(i int, dst []int32) []int32
	// Dataset describes the training data in the model's metadata.
	Dataset string
}

// Summary describes a training run.
type Summary struct {
	Epochs, BestEpoch int
	HeldOutAUC        float64
	TrainQueries      int
	Seconds           float64
}

// Model trains variant on pr for the base scorer sc (which must score
// pr.Train with pr.Marks; name is the predictor's name stored in the model)
// at eps_p, and compiles the deployable model (exactly monotone table,
// exact Delta_f). All randomness derives from seed. Cancelling ctx stops
// the training promptly (train.Train) and Model returns ctx's error.
func Model(ctx context.Context, pr *Pairs, sc *score.Scorer, name, variant string, eps float64, opt Options, seed uint64) (*model.Model, Summary, error) {
	v, err := ParseVariant(variant)
	if err != nil {
		return nil, Summary{}, err
	}
	every := opt.HeldOutEvery
	if every == 0 {
		every = 5
	}
	if v == train.DPLPPub && opt.PseudoSigma >= 0 && slices.Contains(score.Kinds(), sc.Kind()) {
		// Triad scores: rescore the public training graph with
		// pseudo-protected marks so that s differs from s_pub as at
		// release (PseudoProtect). Other predictors keep their scorer.
		marks, err := PseudoProtect(pr, opt.PseudoSigma, seed)
		if err != nil {
			return nil, Summary{}, err
		}
		if sc, err = score.New(pr.Train, marks, sc.Kind()); err != nil {
			return nil, Summary{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, Summary{}, err
	}
	tr, held, err := Data(pr, sc, every, opt.PosOf)
	if err != nil {
		return nil, Summary{}, err
	}
	cfg := train.DefaultConfig(v, eps)
	if opt.Config != nil {
		cfg = *opt.Config
		cfg.Variant, cfg.Eps = v, eps
	}
	if opt.Epochs > 0 {
		cfg.Epochs = opt.Epochs
	}
	if opt.SelectK > 0 {
		cfg.SelectK = opt.SelectK
	}
	cfg.OnEpoch = opt.OnEpoch
	start := time.Now()
	res, err := train.Train(ctx, cfg, tr, held, randx.Derive(seed, 0x7472, uint64(sc.Kind())))
	if err != nil {
		return nil, Summary{}, fmt.Errorf("training %s on %s: %w", v, name, err)
	}
	sum := Summary{BestEpoch: res.BestEpoch, HeldOutAUC: res.BestAUC, TrainQueries: res.TrainQueries, Seconds: time.Since(start).Seconds()}
	if n := len(res.History); n > 0 {
		sum.Epochs = res.History[n-1].Epoch
	}
	sd := seed
	ds := opt.Dataset
	if ds == "" {
		ds = "deployment training"
	}
	m, err := Compile(res, model.Info{Score: name, Dataset: fmt.Sprintf("%s, %d training queries", ds, len(tr)), Seed: &sd})
	if err != nil {
		return nil, sum, err
	}
	return m, sum, nil
}

// Compile compiles a training result into a deployable model
// (model.Compile): it tabulates res's transform on info.Grid points
// (0: transform.DefaultGrid; res.Tables makes the table exactly monotone)
// and records res.Config (without OnEpoch) and the run's statistics in the
// model's metadata.
func Compile(res *train.Result, info model.Info) (*model.Model, error) {
	if res == nil || res.F == nil {
		return nil, errors.New("model: no trained transform")
	}
	grid := info.Grid
	if grid == 0 {
		grid = transform.DefaultGrid
	}
	// model.Compile rejects a public transform and a bad eps_p before it
	// looks at the table or the configuration: leave those errors to it.
	eps := res.Config.Eps
	early := res.H != nil || !(eps > 0) || math.IsInf(eps, 0)
	cfg := res.Config
	cfg.OnEpoch = nil // not data
	conf, err := json.Marshal(cfg)
	if err != nil && !early {
		return nil, fmt.Errorf("model: encode training configuration: %w", err)
	}
	fit := model.Fit{
		Variant:        model.Variant(res.Config.Variant),
		EpsP:           res.Config.Eps,
		Config:         conf,
		BestEpoch:      res.BestEpoch,
		HeldOutAUC:     res.BestAUC,
		EarlyStopped:   res.EarlyStopped,
		TrainQueries:   res.TrainQueries,
		SkippedQueries: res.SkippedQueries,
	}
	if n := len(res.History); n > 0 {
		fit.Epochs = res.History[n-1].Epoch
	}
	ft, ht, err := res.Tables(grid)
	if err != nil && !early {
		return nil, fmt.Errorf("model: %w", err)
	}
	if ft != nil {
		fit.F = ft.Values()
	}
	if res.H != nil {
		fit.H = []float64{}
		if ht != nil {
			fit.H = ht.Values()
		}
	}
	info.Grid = grid
	return model.Compile(fit, info)
}

// Spec is what Train trains: the deployment path in one call.
type Spec struct {
	Score   string  // triad score: cn, aa, ra, jc or pa
	Variant string  // dplp, lin (dplp-lin), umnn (dplp-umnn) or dplp-pub
	EpsP    float64 // per-pick epsilon the transform is trained for (> 0)
	Seed    uint64  // seed of the sample, initialisation and training noise
	Epochs  int     // 0: the trainer's default
	Sample  SampleConfig
	// OnEpoch, if set, observes the training run (train.Observer).
	OnEpoch train.Observer
}

// Train samples, scores and trains on (g, p) for a triad score: what
// `dplp train` runs for cn, aa, ra, jc and pa. Cancelling ctx stops the
// training promptly, and Train returns ctx's error.
func Train(ctx context.Context, g *graph.Graph, p *protect.Set, spec Spec) (*model.Model, Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, Summary{}, err
	}
	if spec.Variant == "" {
		spec.Variant = "dplp"
	}
	if err := accountant.CheckEps(spec.EpsP); err != nil {
		return nil, Summary{}, fmt.Errorf("deploy: EpsP: %w", err)
	}
	if spec.Epochs < 0 || spec.Sample.MaxQueries < 0 || spec.Sample.NegPerQuery < 0 {
		return nil, Summary{}, fmt.Errorf("deploy: Epochs (%d), MaxQueries (%d) and NegPerQuery (%d) must be >= 0 (0: the default)", spec.Epochs, spec.Sample.MaxQueries, spec.Sample.NegPerQuery)
	}
	k, err := score.ParseKind(spec.Score)
	if err != nil {
		return nil, Summary{}, err
	}
	pr, err := Sample(g, p, spec.Sample, randx.Derive(spec.Seed, 0x666974))
	if err != nil {
		return nil, Summary{}, err
	}
	sc, err := score.New(pr.Train, pr.Marks, k)
	if err != nil {
		return nil, Summary{}, err
	}
	m, sum, err := Model(ctx, pr, sc, strings.ToLower(k.String()), spec.Variant, spec.EpsP, Options{Epochs: spec.Epochs, OnEpoch: spec.OnEpoch, Dataset: "public graph"}, spec.Seed)
	if err != nil {
		return nil, sum, err
	}
	m.Meta.Data = protect.Fingerprint(g, p)
	return m, sum, nil
}
