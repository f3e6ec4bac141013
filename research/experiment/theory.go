package experiment

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

// TheoryConfig parameterises the measurements of the paper's Section 5 on
// latent-space graphs (n points uniform in the D-dimensional ball of unit
// volume, an edge when the latent distance is < r), where the oracle ranking
// by latent distance is known. The mechanism is the exponential mechanism
// (Gumbel top-K) on the base score itself with the rigorous calibration,
// i.e. Algorithm 1 with f = identity; candidates are all non-neighbours of
// the query.
//
// Three sweeps share the other parameters' base values: eps_p over Eps (at
// BaseNodes, BaseK), K over K (at BaseNodes, BaseEps) and |V| over Nodes (at
// BaseEps, BaseK). The radius r is fixed for every size (as in the paper's
// model) by MeanDegree at BaseNodes.
type TheoryConfig struct {
	Nodes      []int     `json:"nodes"`
	BaseNodes  int       `json:"base_nodes"`
	Dim        int       `json:"dim"`
	MeanDegree float64   `json:"mean_degree"`
	Scores     []string  `json:"scores"`
	Eps        []float64 `json:"eps"`
	BaseEps    float64   `json:"base_eps"`
	K          []int     `json:"k"`
	BaseK      int       `json:"base_k"`
	Sigma      float64   `json:"sigma"`
	Queries    int       `json:"queries"` // queries sampled per graph (nodes with a neighbour)
	Draws      int       `json:"draws"`   // mechanism draws per query
	Seeds      int       `json:"seeds"`
}

// DefaultTheory is the theory preset: D = 2, |V| in {250, ..., 4000} (base
// 1000, mean degree 10 there), AA, CN and JC, eps_p from 1e-3 to 1e4 (base
// 30, where the mechanism is between its two limits on these graphs), K in
// {1, 2, 5, 10, 20, 30} (base 10), sigma = 0.3, 200 queries, 20 draws each,
// 3 seeds.
func DefaultTheory() TheoryConfig {
	return TheoryConfig{
		Nodes: []int{250, 500, 1000, 2000, 4000}, BaseNodes: 1000, Dim: 2, MeanDegree: 10,
		Scores: []string{"aa", "cn", "jc"},
		Eps:    []float64{1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1, 3, 10, 30, 100, 300, 1e3, 3e3, 1e4}, BaseEps: 30,
		K: []int{1, 2, 5, 10, 20, 30}, BaseK: 10,
		Sigma: 0.3, Queries: 200, Draws: 20, Seeds: 3,
	}
}

// UnmarshalJSON starts from DefaultTheory, so keys left out keep their
// default values (sigma included); unknown keys are errors.
func (t *TheoryConfig) UnmarshalJSON(b []byte) error {
	type plain TheoryConfig // without this method
	d := plain(DefaultTheory())
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("theory: %w", err)
	}
	*t = TheoryConfig(d)
	return nil
}

// fill puts DefaultTheory's values into zero fields (sigma excepted: 0 is
// meaningful).
func (t *TheoryConfig) fill() {
	d := DefaultTheory()
	if len(t.Nodes) == 0 {
		t.Nodes = d.Nodes
	}
	if t.BaseNodes == 0 {
		t.BaseNodes = d.BaseNodes
	}
	if t.Dim == 0 {
		t.Dim = d.Dim
	}
	if t.MeanDegree == 0 {
		t.MeanDegree = d.MeanDegree
	}
	if len(t.Scores) == 0 {
		t.Scores = d.Scores
	}
	if len(t.Eps) == 0 {
		t.Eps = d.Eps
	}
	if t.BaseEps == 0 {
		t.BaseEps = d.BaseEps
	}
	if len(t.K) == 0 {
		t.K = d.K
	}
	if t.BaseK == 0 {
		t.BaseK = d.BaseK
	}
	if t.Queries == 0 {
		t.Queries = d.Queries
	}
	if t.Draws == 0 {
		t.Draws = d.Draws
	}
	if t.Seeds == 0 {
		t.Seeds = d.Seeds
	}
}

func (t *TheoryConfig) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for _, n := range append(slices.Clone(t.Nodes), t.BaseNodes) {
		if n < 10 {
			bad("theory: |V| = %d: need at least 10 nodes", n)
		}
	}
	if t.Dim < 1 || t.Dim > 10 {
		bad("theory: dim %d: need 1..10", t.Dim)
	}
	if !(t.MeanDegree >= 1) || math.IsInf(t.MeanDegree, 0) || t.MeanDegree > float64(t.BaseNodes-1) {
		bad("theory: mean degree %v: need a finite value in [1, base_nodes-1]", t.MeanDegree)
	}
	if len(t.Scores) == 0 {
		bad("theory: no scores given")
	}
	for _, s := range t.Scores {
		if _, err := score.ParseKind(s); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range append(slices.Clone(t.Eps), t.BaseEps) {
		if err := CheckEps(e); err != nil {
			bad("theory: %v", err)
		}
	}
	for _, k := range append(slices.Clone(t.K), t.BaseK) {
		if k < 1 {
			bad("theory: k %d: must be >= 1", k)
		}
	}
	if len(t.Nodes) == 0 || len(t.Eps) == 0 || len(t.K) == 0 {
		bad("theory: nodes, eps and k lists must not be empty")
	}
	if hasDup(t.Nodes) || hasDup(t.Eps) || hasDup(t.K) || hasDup(t.Scores) {
		bad("theory: lists must not repeat a value")
	}
	if !(t.Sigma >= 0 && t.Sigma <= 1) {
		bad("theory: sigma %v: must be in [0, 1]", t.Sigma)
	}
	if t.Queries < 1 || t.Draws < 1 || t.Seeds < 1 {
		bad("theory: queries, draws and seeds must be >= 1")
	}
	if len(errs) > 0 {
		return fmt.Errorf("experiment: invalid theory configuration: %w", errors.Join(errs...))
	}
	return nil
}

// Random streams of the theory experiment.
const (
	streamTheoryGraph = 0x7467 + iota
	streamTheoryProt
	streamTheoryQueries
)

func runTheory(ctx context.Context, t TheoryConfig, out string, lg *logger) error {
	t.fill()
	if err := t.validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "cache"), 0o755); err != nil {
		return err
	}
	radius, err := gen.RadiusForMeanDegree(t.BaseNodes, t.Dim, t.MeanDegree)
	if err != nil {
		return err
	}
	cells := t.cells(radius)
	var todo []*theoryCell
	for _, c := range cells {
		var r TheoryRow
		if readCache(cachePath(out, c.hash), c.key, &r) {
			c.res = &r
		} else {
			todo = append(todo, c)
		}
	}
	lg.printf("theory: %d cells, %d cached, %d to run (D=%d, r=%.4g); output in %s", len(cells), len(cells)-len(todo), len(todo), t.Dim, radius, out)
	slices.SortStableFunc(todo, func(a, b *theoryCell) int {
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.seed, b.seed), cmp.Compare(a.kind, b.kind))
	})
	bar := startTracker(lg.track, "theory", len(todo))
	defer bar.Finish()
	done := 0
	for start := 0; start < len(todo); {
		c0 := todo[start]
		end := start + 1
		for end < len(todo) && todo[end].n == c0.n && todo[end].seed == c0.seed {
			end++
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("theory: interrupted after %d of %d cells (finished cells are cached; rerun to resume): %w", done, len(todo), err)
		}
		seed := uint64(c0.seed)
		lgr, err := gen.Latent(c0.n, t.Dim, radius, randx.Derive(seed, streamTheoryGraph, uint64(c0.n)))
		if err != nil {
			return err
		}
		prot, err := protect.Synthetic(lgr.Graph, t.Sigma, 0, randx.Derive(seed, streamTheoryProt, uint64(c0.n)))
		if err != nil {
			return err
		}
		queries := sampleQueries(lgr, t.Queries, randx.Derive(seed, streamTheoryQueries, uint64(c0.n)))
		if len(queries) == 0 {
			return fmt.Errorf("theory: latent graph with %d nodes has no node with a neighbour", c0.n)
		}
		meanDeg := 2 * float64(lgr.M()) / float64(lgr.N())
		for s := start; s < end; {
			kind := todo[s].kind
			e := s + 1
			for e < end && todo[e].kind == kind {
				e++
			}
			qd, err := theoryQueryData(lgr, prot, kind, queries)
			if err != nil {
				return err
			}
			for _, c := range todo[s:e] {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("theory: interrupted after %d of %d cells (finished cells are cached; rerun to resume): %w", done, len(todo), err)
				}
				t0 := time.Now()
				row := theoryMeasure(qd, c, t)
				row.Radius, row.MeanDegree, row.Seconds = radius, meanDeg, time.Since(t0).Seconds()
				if err := writeCache(cachePath(out, c.hash), c.key, &row); err != nil {
					return err
				}
				c.res = &row
				done++
				bar.Add(1)
				lg.detail("[%d/%d] theory n=%d %s eps=%v k=%d seed=%d: L_rel %.4g (eps->0: %.4g, K*kappa %.4g), R %.4g (%.2fs)",
					done, len(todo), c.n, scoreName(c.kind), c.eps, c.k, c.seed, row.RelLoss, row.RelLossEps0, row.KKappa, row.RankLoss, row.Seconds)
			}
			s = e
		}
		start = end
	}
	bar.Finish()
	rows := make([]TheoryRow, len(cells))
	for i, c := range cells {
		rows[i] = *c.res
	}
	return writeTheory(out, t, rows, lg)
}
