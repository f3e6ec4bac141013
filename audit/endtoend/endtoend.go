// Package endtoend is the end-to-end privacy audit: it checks the guarantee
// of the whole deployed pipeline, not of the mechanism alone. For each small
// graph G with marks it
//
//  1. trains the model on G and on every neighbouring graph G' (toggling any
//     subset of one node's protected pairs, marks and seed unchanged) and
//     requires bit-identical compiled tables: training must read invariant
//     data only (docs/privacy-model.md §5), so the transform is the same in
//     G and G' and may be shared by all users;
//  2. for every user u for which G' is u-neighbouring, runs the deployed
//     release path on G and on G' (release.Recommender: the real scorer and
//     worker, the calibration, the model's table) and checks at utility
//     level that |q(v) - q'(v)| <= Delta for every candidate v and that the
//     noise scale is the same;
//  3. computes the exact probability of every ordered list of length
//     K <= MaxK under the plan on G and on G' (the exponential mechanism,
//     or the lexicographic one for dplp-pub) and checks
//     |ln P_G(list) - ln P_G'(list)| <= cost(list), the eps the ledger is
//     charged for that list (random picks x eps_p), and that the cost is
//     the same on G';
//  4. checks the exposure influence sets: a node outside u's set never
//     changes u's utilities.
//
// Beside seeded random graphs it covers adversarial families: a hub
// protected to all of u's neighbours, stars, cliques, degree-1 queries,
// degree-2 neighbours, many protected non-edges; beside the triad scores,
// two bounded scores (a fixed pair function like a score file, and one
// computed from the graph it is given like a fitted embedding).
// The reference calibration and a training path that reads the full graph
// both fail it (tests assert that).
package endtoend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train/deploy"
)

// TrainFunc trains a model on (g, p). It must be deterministic for a given
// input (same seed inside).
type TrainFunc func(g *graph.Graph, p *protect.Set) (*model.Model, error)

// Config selects what the audit covers.
type Config struct {
	Seed     uint64
	Graphs   int // random graphs per score kind (the adversarial families come on top)
	Kinds    []score.Kind
	Variant  string  // model variant trained: dplp, lin, umnn, dplp-pub
	Eps      float64 // eps_p the model is trained for and released at
	MaxK     int     // longest list audited (<= 3)
	Epochs   int     // training epochs
	Toggles  int     // neighbouring graphs per graph (0: all)
	Families bool    // include the adversarial families
	// Bounded adds two bounded predictors (Delta_s = S_max = 1): a fixed
	// pair function, like a score file, and one fitted on the graph it is
	// given, like an embedding with its link classifier.
	Bounded bool
	// Train, when set, replaces the deployment training path (tests use it
	// to inject a leaky trainer).
	Train func(kind score.Kind) TrainFunc
	// Calibration of the release (Reference must fail).
	Calibration calib.Calibration
}

// Default is what `dplp audit --end-to-end` runs.
func Default() Config {
	return Config{Seed: 1, Graphs: 3, Kinds: []score.Kind{score.CN, score.AA, score.JC}, Variant: "dplp", Eps: 0.5, MaxK: 2, Epochs: 2, Toggles: 12, Families: true, Bounded: true}
}

// Report is the audit's outcome.
type Report struct {
	Variant          string  `json:"variant"`
	Calibration      string  `json:"calibration"`
	Eps              float64 `json:"eps"`
	Graphs           int     `json:"graphs"`
	Trainings        int     `json:"trainings"`
	ModelChanges     int     `json:"model_changes"` // neighbouring graphs whose trained tables differ
	Cases            int64   `json:"cases"`         // (G, G', u, K) comparisons
	Lists            int64   `json:"lists"`
	NoisyCases       int64   `json:"noisy_cases"`        // cases where the plan adds noise (Delta > 0)
	LexCases         int64   `json:"lex_cases"`          // cases released by the lexicographic mechanism (dplp-pub)
	WorstLogRatio    float64 `json:"worst_log_ratio"`    // largest |ln P_G - ln P_G'| over all lists (InfRatio: a list possible in one graph only)
	WorstBound       float64 `json:"worst_bound"`        // the cost charged for that list
	Violations       int64   `json:"violations"`         // ln ratio > cost
	UtilityChecks    int64   `json:"utility_checks"`     // candidates compared
	UtilityViolation int64   `json:"utility_violations"` // |q - q'| > Delta or plan changed
	InfluenceChecks  int64   `json:"influence_checks"`
	InfluenceViol    int64   `json:"influence_violations"`
	Worst            string  `json:"worst_case,omitempty"`
}

// Passed reports whether nothing was violated.
func (r *Report) Passed() bool {
	return r.ModelChanges == 0 && r.Violations == 0 && r.UtilityViolation == 0 && r.InfluenceViol == 0
}

const tol = 1e-9

// InfRatio stands for an infinite log-ratio (a list possible in one graph
// and impossible in the other), so JSON stays numeric.
const InfRatio = 1e9

// DeployTrain is the deployment training path (what `dplp train` runs) at
// a small number of epochs, with held-out epoch selection turned off so that
// the compiled tables are those of the last epoch: on graphs this small the
// initialisation often wins the selection, and a model that ignores its
// data would pass the comparison trivially. (The selection reads the same
// invariant data; evaluate's differential test covers it with selection on.)
func DeployTrain(kind score.Kind, variant string, eps float64, epochs int, seed uint64) TrainFunc {
	return Predictor{Name: kind.String(), Kind: kind}.train(variant, eps, epochs, seed)
}

// Predictor builds a base scorer on a graph: a triad kind, or a bounded
// score given by Fit (a fixed pair function, like a score file, or one
// computed from the graph it is given, like a fitted embedding).
type Predictor struct {
	Name string
	Kind score.Kind                          // a triad kind, or score.Bounded
	Fit  func(g *graph.Graph) score.PairFunc // bounded only, values in [0, 1]
}

func (pd Predictor) scorer(g *graph.Graph, p *protect.Set) (*score.Scorer, error) {
	if pd.Fit == nil {
		return score.New(g, p, pd.Kind)
	}
	return score.NewBounded(g, p, pd.Name, 0, 1, pd.Fit(g))
}

func (pd Predictor) train(variant string, eps float64, epochs int, seed uint64) TrainFunc {
	return func(g *graph.Graph, p *protect.Set) (*model.Model, error) {
		pr, err := deploy.Sample(g, p, deploy.SampleConfig{NegPerQuery: 40}, randx.Derive(seed, 0x666974))
		if err != nil {
			return nil, err
		}
		sc, err := pd.scorer(pr.Train, pr.Marks)
		if err != nil {
			return nil, err
		}
		m, _, err := deploy.Model(context.Background(), pr, sc, pd.Name, variant, eps, LastEpoch(epochs), seed)
		return m, err
	}
}

// boundedPredictors are the two bounded scores of Config.Bounded.
func boundedPredictors() []Predictor {
	fixed := func(g *graph.Graph) score.PairFunc {
		return func(u, v int32) float64 {
			a, b := g.Label(min(u, v)), g.Label(max(u, v))
			h := uint64(14695981039346656037)
			for _, c := range []byte(a + "\x00" + b) {
				h = (h ^ uint64(c)) * 1099511628211
			}
			return float64(h>>11) / (1 << 53)
		}
	}
	fitted := func(g *graph.Graph) score.PairFunc {
		return func(u, v int32) float64 {
			c := 0
			for _, z := range g.Neighbors(u) {
				if g.HasEdge(z, v) {
					c++
				}
			}
			return float64(c) / float64(1+c)
		}
	}
	return []Predictor{{Name: "file:hashed", Kind: score.Bounded, Fit: fixed}, {Name: "fitted:cn-ratio", Kind: score.Bounded, Fit: fitted}}
}

// LastEpoch are training options that keep the last epoch (no held-out
// selection).
func LastEpoch(epochs int) deploy.Options {
	return deploy.Options{Epochs: epochs, HeldOutEvery: math.MaxInt32}
}

// instance is one audited graph.
type instance struct {
	name string
	g    *graph.Graph
	p    *protect.Set
}

// Run executes the audit.
func Run(cfg Config) (*Report, error) {
	if cfg.MaxK < 1 || cfg.MaxK > 3 {
		return nil, errors.New("endtoend: max K must be in [1,3]")
	}
	if !(cfg.Eps > 0) || math.IsInf(cfg.Eps, 0) {
		return nil, errors.New("endtoend: eps must be finite and > 0")
	}
	rep := &Report{Variant: cfg.Variant, Calibration: cfg.Calibration.String(), Eps: cfg.Eps}
	r := randx.Derive(cfg.Seed, 0xe2e)
	preds := make([]Predictor, 0, len(cfg.Kinds)+2)
	for _, k := range cfg.Kinds {
		preds = append(preds, Predictor{Name: k.String(), Kind: k})
	}
	if cfg.Bounded && cfg.Calibration != calib.Reference {
		preds = append(preds, boundedPredictors()...)
	}
	for _, pd := range preds {
		kind := pd.Kind
		var insts []instance
		for i := 0; i < cfg.Graphs; i++ {
			g, p, err := randomInstance(r, 14+r.IntN(7), 0.3)
			if err != nil {
				return nil, err
			}
			insts = append(insts, instance{fmt.Sprintf("random-%d", i), g, p})
		}
		if cfg.Families {
			fams, err := families(r)
			if err != nil {
				return nil, err
			}
			insts = append(insts, fams...)
		}
		train := pd.train(cfg.Variant, cfg.Eps, cfg.Epochs, cfg.Seed)
		if cfg.Train != nil && pd.Fit == nil {
			train = cfg.Train(kind)
		}
		for _, in := range insts {
			if err := auditInstance(cfg, rep, pd, in, train); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", pd.Name, in.name, err)
			}
			rep.Graphs++
		}
	}
	return rep, nil
}

func recommender(cfg Config, m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set) (*release.Recommender, error) {
	if cfg.Calibration == calib.Reference {
		return release.NewMechanism(calib.Config{Method: calib.Exponential, Calibration: calib.Reference, Kind: pd.Kind, Eps: cfg.Eps}, "reference", g, p, release.WithoutLedger())
	}
	if pd.Fit == nil {
		return release.New(m, g, p, release.WithoutLedger())
	}
	sc, err := pd.scorer(g, p)
	if err != nil {
		return nil, err
	}
	return release.New(m, g, p, release.WithScorer(sc), release.WithoutLedger())
}

func auditInstance(cfg Config, rep *Report, pd Predictor, in instance, train TrainFunc) error {
	m, err := train(in.g, in.p)
	if err != nil {
		return err
	}
	rep.Trainings++
	rec, err := recommender(cfg, m, pd, in.g, in.p)
	if err != nil {
		return err
	}
	n := in.g.N()
	views := make([]release.UserView, n)
	for u := int32(0); int(u) < n; u++ {
		if views[u], err = rec.View(u); err != nil {
			return err
		}
	}
	toggles := 0
	for w := int32(0); int(w) < n; w++ {
		xsAll := in.p.Of(w)
		if len(xsAll) == 0 {
			continue
		}
		for mask := 1; mask < 1<<min(len(xsAll), 6); mask++ {
			if cfg.Toggles > 0 && toggles >= cfg.Toggles {
				return nil
			}
			var xs []int32
			for i, x := range xsAll[:min(len(xsAll), 6)] {
				if mask&(1<<i) != 0 {
					xs = append(xs, x)
				}
			}
			toggles++
			g2, err := protect.Toggle(in.g, w, xs)
			if err != nil {
				return err
			}
			m2, err := train(g2, in.p)
			if err != nil {
				return err
			}
			rep.Trainings++
			if !slices.Equal(m.F, m2.F) || !slices.Equal(m.H, m2.H) {
				rep.ModelChanges++
				if rep.Worst == "" {
					rep.Worst = fmt.Sprintf("%s: training on the graph with node %d's pairs %v toggled changes the model", in.name, w, xs)
				}
			}
			// Each user is audited with its own model pair (m on G, m2 on G'):
			// a changed model is a failure above, and its effect on the lists
			// is measured here too.
			rec2, err := recommender(cfg, m2, pd, g2, in.p)
			if err != nil {
				return err
			}
			for u := int32(0); int(u) < n; u++ {
				if u == w || slices.Contains(xs, u) {
					continue // G' is not u-neighbouring when a toggled pair is incident to u
				}
				v2, err := rec2.View(u)
				if err != nil {
					return err
				}
				if err := compare(cfg, rep, in, rec, u, w, xs, &views[u], &v2); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// compare checks one (G, G', u).
func compare(cfg Config, rep *Report, in instance, rec *release.Recommender, u, w int32, xs []int32, a, b *release.UserView) error {
	if !slices.Equal(a.IDs, b.IDs) {
		rep.UtilityViolation++
		return nil
	}
	delta := a.Plan.Delta
	if a.Plan.Scale != b.Plan.Scale || a.Plan.Delta != b.Plan.Delta {
		rep.UtilityViolation++
		note(rep, fmt.Sprintf("%s: u=%d: noise scale changes (%g -> %g) when node %d's pairs %v are toggled", in.name, u, a.Plan.Scale, b.Plan.Scale, w, xs))
	}
	changed := false
	for i := range a.Utilities {
		rep.UtilityChecks++
		d := math.Abs(a.Utilities[i] - b.Utilities[i])
		if d > delta*(1+1e-12)+tol {
			rep.UtilityViolation++
			note(rep, fmt.Sprintf("%s: u=%d: utility of %d moves by %g > Delta %g when node %d's pairs %v are toggled", in.name, u, a.IDs[i], d, delta, w, xs))
		}
		if d != 0 {
			changed = true
		}
	}
	// Influence sets: if w is outside u's set, nothing may change.
	rep.InfluenceChecks++
	ids, all := rec.Influencers(u)
	if changed && !all && !slices.Contains(ids, w) {
		rep.InfluenceViol++
		note(rep, fmt.Sprintf("%s: u=%d: node %d is outside u's influence set but its pairs %v change u's utilities", in.name, u, w, xs))
	}
	nc := len(a.IDs)
	for k := 1; k <= min(cfg.MaxK, nc); k++ {
		rep.Cases++
		worst, bound, err := worstRatio(cfg, a, b, k)
		if err != nil {
			return err
		}
		rep.Lists += int64(permCount(nc, k))
		if worst > rep.WorstLogRatio || rep.Cases == 1 {
			rep.WorstLogRatio, rep.WorstBound = worst, bound
		}
		if !a.Plan.Exact() {
			rep.NoisyCases++
		}
		if a.Plan.Lexicographic() {
			rep.LexCases++
		}
		if worst > bound+tol*(1+bound) {
			rep.Violations++
			note(rep, fmt.Sprintf("%s: u=%d, K=%d: ln ratio %g > charged %g when node %d's pairs %v are toggled", in.name, u, k, worst, bound, w, xs))
		}
	}
	return nil
}

func note(rep *Report, s string) {
	if rep.Worst == "" {
		rep.Worst = s
	}
}

func permCount(n, k int) int {
	c := 1
	for i := 0; i < k; i++ {
		c *= n - i
	}
	return c
}

// worstRatio enumerates every ordered list of length k and returns the
// largest |ln P_G - ln P_G'| and the cost the ledger charges for a list of
// length k: eps_p x the plan's random picks (Plan.Picks: k for the
// exponential mechanism, fewer for the lexicographic DPLP-pub where the
// public scores fix positions, 0 with Delta = 0), computed on G; the cost
// must be the same on G' (it may read invariant data only). The
// lexicographic mechanism's list probabilities come from
// mech.LexListLogProb over the public scores.
func worstRatio(cfg Config, a, b *release.UserView, k int) (worst, bound float64, err error) {
	u := &mech.Utilities{Vals: a.Utilities}
	picks, err := a.Plan.Picks(u, a.Pub, k)
	if err != nil {
		return 0, 0, err
	}
	picks2, err := b.Plan.Picks(&mech.Utilities{Vals: b.Utilities}, b.Pub, k)
	if err != nil {
		return 0, 0, err
	}
	if picks2 != picks {
		return InfRatio, a.Plan.ListCost(picks), nil // the charged cost itself leaks
	}
	bound = a.Plan.ListCost(picks)
	logp := func(v *release.UserView, list []int) (float64, error) {
		if v.Plan.Lexicographic() {
			return mech.LexListLogProb(v.Pub, v.Utilities, v.Plan.Scale, list)
		}
		return mech.ExpListLogProb(v.Utilities, v.Plan.Scale, list)
	}
	list := make([]int, 0, k)
	used := make([]bool, len(a.IDs))
	var rec func() error
	rec = func() error {
		if len(list) == k {
			pa, err := logp(a, list)
			if err != nil {
				return err
			}
			pb, err := logp(b, list)
			if err != nil {
				return err
			}
			switch {
			case math.IsInf(pa, -1) && math.IsInf(pb, -1):
			case math.IsInf(pa, -1) || math.IsInf(pb, -1):
				worst = InfRatio
			default:
				worst = max(worst, math.Abs(pa-pb))
			}
			return nil
		}
		for i := range a.IDs {
			if !used[i] {
				used[i] = true
				list = append(list, i)
				if err := rec(); err != nil {
					return err
				}
				list = list[:len(list)-1]
				used[i] = false
			}
		}
		return nil
	}
	err = rec()
	return worst, bound, err
}

// randomInstance draws a G(n, p) graph with 30% of edges and 5% of
// non-edges protected.
func randomInstance(r *rand.Rand, n int, p float64) (*graph.Graph, *protect.Set, error) {
	var edges, prot []graph.Edge
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			e := graph.Edge{U: int32(a), V: int32(b)}
			if r.Float64() < p {
				edges = append(edges, e)
				if r.Float64() < 0.3 {
					prot = append(prot, e)
				}
			} else if r.Float64() < 0.05 {
				prot = append(prot, e)
			}
		}
	}
	return build(n, edges, prot)
}

func build(n int, edges, prot []graph.Edge) (*graph.Graph, *protect.Set, error) {
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		return nil, nil, err
	}
	p, err := protect.New(n, prot)
	return g, p, err
}

// families are the adversarial structures, each planted into a random
// 16-node graph (so that training has public data to learn from).
func families(r *rand.Rand) ([]instance, error) {
	var out []instance
	base := func() ([]graph.Edge, []graph.Edge, int) {
		n := 16
		var edges, prot []graph.Edge
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if r.Float64() < 0.3 {
					edges = append(edges, graph.Edge{U: int32(a), V: int32(b)})
				}
			}
		}
		return edges, prot, n
	}
	add := func(name string, edges, prot []graph.Edge, n int) error {
		g, p, err := build(n, dedup(edges), dedup(prot))
		if err != nil {
			return err
		}
		out = append(out, instance{name, g, p})
		return nil
	}
	e := func(a, b int) graph.Edge { return graph.Edge{U: int32(min(a, b)), V: int32(max(a, b))} }
	// A hub protected to all of u's neighbours: u = 16 with neighbours 0..3,
	// hub 17 adjacent to them by protected edges.
	{
		edges, prot, n := base()
		u, hub := n, n+1
		for z := 0; z < 4; z++ {
			edges = append(edges, e(u, z), e(hub, z))
			prot = append(prot, e(hub, z))
		}
		edges = append(edges, e(hub, 5))
		if err := add("hub-protected-to-neighbours", edges, prot, n+2); err != nil {
			return nil, err
		}
	}
	// A star whose leaves' spokes are protected.
	{
		edges, prot, n := base()
		c := n
		for z := 0; z < 8; z++ {
			edges = append(edges, e(c, z))
			if z%2 == 0 {
				prot = append(prot, e(c, z))
			}
		}
		if err := add("star", edges, prot, n+1); err != nil {
			return nil, err
		}
	}
	// A clique of 6 with protected internal edges and non-edges to outside.
	{
		edges, prot, n := base()
		for a := n; a < n+6; a++ {
			for b := a + 1; b < n+6; b++ {
				edges = append(edges, e(a, b))
				if (a+b)%3 == 0 {
					prot = append(prot, e(a, b))
				}
			}
			prot = append(prot, e(a, a-n))
		}
		edges = append(edges, e(n, 0))
		if err := add("clique", edges, prot, n+6); err != nil {
			return nil, err
		}
	}
	// Degree-1 queries and degree-2 neighbours: a path 16-17-18 hanging off
	// node 0, protected pairs around it.
	{
		edges, prot, n := base()
		edges = append(edges, e(n, n+1), e(n+1, 0), e(n+2, n+1))
		prot = append(prot, e(n+1, 0), e(n+2, 3), e(n, 5))
		if err := add("degree-1-and-2", edges, prot, n+3); err != nil {
			return nil, err
		}
	}
	// Many protected non-edges.
	{
		edges, prot, n := base()
		have := map[graph.Edge]bool{}
		for _, x := range edges {
			have[x] = true
		}
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if !have[e(a, b)] && r.Float64() < 0.25 {
					prot = append(prot, e(a, b))
				}
			}
		}
		if err := add("many-protected-non-edges", edges, prot, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func dedup(es []graph.Edge) []graph.Edge {
	slices.SortFunc(es, func(a, b graph.Edge) int {
		if a.U != b.U {
			return int(a.U - b.U)
		}
		return int(a.V - b.V)
	})
	return slices.Compact(es)
}
