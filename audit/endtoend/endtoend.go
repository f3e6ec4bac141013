// Package endtoend is the end-to-end privacy audit: it checks the guarantee
// of the whole deployed pipeline, not of the mechanism alone, on the paths
// and representations deployment uses. For each small graph G with marks it
//
//  1. writes G as text (an edge list with string labels whose canonical
//     order is a random permutation of the nodes, a marks file and a node
//     list) and loads it through the deployment loader, snapshot.Read; every
//     graph below is the loaded one;
//  2. trains the model on G through the deployment training path
//     (deploy.Sample, deploy.Model) and on every neighbouring graph G'
//     (toggling any subset of one node's protected pairs, marks and seed
//     unchanged), and requires bit-identical models (every field but the
//     creation time and the dataset description): training must read
//     invariant data only (docs/privacy-model.md §5), so the transform is
//     the same in G and G' and may be shared by all users. Each G' is
//     written as text too (the toggled edges' lines removed, or prepended
//     for a protected non-edge), loaded through the loader, and must be G
//     with exactly those pairs toggled under the same ids and marks (the
//     numbering and the node universe, docs/privacy-model.md §15). The first
//     line of G's edge list is a protected edge, of a node whose only edges
//     are protected when there is one, and the toggles of its endpoints come
//     first, so removing a node's first appearance and its only edge is
//     always among the neighbours audited;
//  3. representation checks: G written three more ways (every line
//     reordered, every line's endpoints swapped, lines sorted so that the
//     canonically last label appears first) must load to the same graph
//     and marks under the same ids, train a bit-identical model and release
//     identical seeded lists (release.WithSeed, every user, K = MaxK) as the
//     first load (Report.RepresentationChecks counts these trainings);
//  4. for every user u for which G' is u-neighbouring, runs the deployed
//     release path on G and on G' (release.Recommender: the real scorer and
//     worker, the calibration, the model's table, the sampler deployment
//     uses) and checks at utility level that |q(v) - q'(v)| <= Delta for
//     every candidate v and that the noise scale is the same;
//  5. computes the exact probability of every ordered list of length
//     K <= MaxK under the plan on G and on G' and checks
//     |ln P_G(list) - ln P_G'(list)| <= cost(list), the eps the ledger is
//     charged for that list (random picks x eps_p), and that the cost is
//     the same on G'. The probabilities are those of the sampler the
//     release uses: by default the exact base-2 sampler (mech/exact, exact
//     rationals; the lexicographic DPLP-pub mechanism with it inside each
//     group of equal public score), which deployment uses for every
//     crypto-seeded Recommender; the float Gumbel mechanism with
//     Config.Sampler = SamplerFloat (and for the reference calibration);
//  6. checks the exposure influence sets: a node outside u's set never
//     changes u's utilities;
//  7. the re-serve layer: in a fresh SQLite ledger (ledger.Open), seeded
//     lists are released to every user (sticky key, and an explicit
//     idempotency key for one user); private (crypto-seeded) requests for
//     the same users, model, K and key must never get one of them back
//     (nor a list marked seeded), and must not fail.
//
// Beside seeded random graphs it covers adversarial families: a hub
// protected to all of u's neighbours, stars, cliques, degree-1 queries,
// degree-2 neighbours, many protected non-edges, nodes whose only edges
// are protected; beside the triad scores, two bounded scores (a fixed pair
// function like a score file, and one computed from the graph it is given
// like a fitted embedding). By default every triad score (cn, aa, ra, jc,
// pa) and both DPLP variant families (dplp, the plain exponential
// mechanism, and dplp-pub, the lexicographic one) are audited, K <= 3.
//
// With Config.Model the audit releases that model on every graph instead
// of training (its score, variant, eps_p and table), checking its lists
// against the cost charged at its eps_p; training invariance is then not
// audited (Report.TrainingInvariance says so) and the representation
// checks compare the loads and the seeded lists only.
//
// Not covered: the Beam pipeline's per-user function (module beam has its
// own tests against release.Sampler).
//
// Negative controls (tests): the reference calibration, a training path
// that reads the full graph, a loader that numbers nodes by first
// appearance, and a "private" path that re-serves seeded lists all fail it.
package endtoend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/snapshot"
	"github.com/dplp/dplp/train/deploy"
)

// TrainFunc trains a model on (g, p). It must be deterministic for a given
// input (same seed inside).
type TrainFunc func(g *graph.Graph, p *protect.Set) (*model.Model, error)

// Config selects what the audit covers.
type Config struct {
	Seed   uint64
	Graphs int // random graphs per score kind (the adversarial families come on top)
	Kinds  []score.Kind
	// Variants are the model variants trained (dplp, lin, umnn,
	// dplp-pub), audited one after the other.
	Variants []string
	Eps      float64 // eps_p the model is trained for and released at
	MaxK     int     // longest list audited (<= 3)
	Epochs   int     // training epochs
	Toggles  int     // neighbouring graphs per graph (0: all)
	Families bool    // include the adversarial families
	// Bounded adds two bounded predictors (Delta_s = S_max = 1): a fixed
	// pair function, like a score file, and one fitted on the graph it is
	// given, like an embedding with its link classifier.
	Bounded bool
	// Sampler is the sampler the audited releases use and whose list
	// probabilities are computed: SamplerAuto (deployment's: exact),
	// SamplerExact or SamplerFloat.
	Sampler string
	// Representations turns the representation checks on.
	Representations bool
	// Reserve turns the re-serve check on.
	Reserve bool
	// Model, when set, is released on every graph in place of a trained
	// model (its score and variant are audited, at its eps_p); training
	// invariance is not audited. Kinds, Variants and Bounded are ignored,
	// and Eps must be 0 or the model's eps_p.
	Model *model.Model
	// Load replaces the deployment loader (snapshot.Read); tests use it to
	// inject a loader that numbers by first appearance.
	Load Loader
	// Train, when set, replaces the deployment training path (tests use it
	// to inject a leaky trainer).
	Train func(kind score.Kind) TrainFunc
	// Calibration of the release (Reference must fail).
	Calibration calib.Calibration
}

// DefaultVariants are the variants the default audit trains: one of each
// family, the plain exponential mechanism (dplp; lin and umnn release the
// same way with another table) and the lexicographic one (dplp-pub).
var DefaultVariants = []string{"dplp", "dplp-pub"}

// Default is what `dplp audit --end-to-end` runs: every triad score and the
// two bounded scores, variants dplp and dplp-pub, K <= 3, the exact
// sampler, 2 random graphs per score plus the adversarial families, 8
// neighbouring graphs each, representation and re-serve checks on.
func Default() Config {
	return Config{Seed: 1, Graphs: 2, Kinds: score.Kinds(), Variants: DefaultVariants, Eps: 0.5, MaxK: 3, Epochs: 2, Toggles: 8,
		Families: true, Bounded: true, Representations: true, Reserve: true}
}

// Report is the audit's outcome.
type Report struct {
	Variant     string   `json:"variant"` // the variants audited, comma-separated
	Variants    []string `json:"variants"`
	Calibration string   `json:"calibration"`
	Sampler     string   `json:"sampler"` // exact or float: whose list probabilities were computed
	Eps         float64  `json:"eps"`
	Model       string   `json:"model,omitempty"` // with Config.Model: its id
	Graphs      int      `json:"graphs"`
	Trainings   int      `json:"trainings"`
	// TrainingInvariance is "checked", or why it was not run.
	TrainingInvariance string `json:"training_invariance"`
	ModelChanges       int    `json:"model_changes"` // neighbouring graphs whose trained model differs
	// NeighbourLoads counts neighbouring graphs written as text and loaded
	// through the loader (each must be G with the pairs toggled, same ids).
	NeighbourLoads int64 `json:"neighbour_loads"`
	// RepresentationChecks counts G written another way, loaded, trained
	// (unless Config.Model) and released with a seed, compared with G.
	RepresentationChecks     int64 `json:"representation_checks"`
	RepresentationViolations int64 `json:"representation_violations"`
	// ReserveChecks counts private requests checked against a store
	// holding seeded releases.
	ReserveChecks     int64   `json:"reserve_checks"`
	ReserveViolations int64   `json:"reserve_violations"`
	Cases             int64   `json:"cases"` // (G, G', u, K) comparisons
	Lists             int64   `json:"lists"`
	NoisyCases        int64   `json:"noisy_cases"`        // cases where the plan adds noise (Delta > 0)
	LexCases          int64   `json:"lex_cases"`          // cases released by the lexicographic mechanism (dplp-pub)
	WorstLogRatio     float64 `json:"worst_log_ratio"`    // largest |ln P_G - ln P_G'| over all lists (InfRatio: a list possible in one graph only)
	WorstBound        float64 `json:"worst_bound"`        // the cost charged for that list
	Violations        int64   `json:"violations"`         // ln ratio > cost
	UtilityChecks     int64   `json:"utility_checks"`     // candidates compared
	UtilityViolation  int64   `json:"utility_violations"` // |q - q'| > Delta or plan changed
	InfluenceChecks   int64   `json:"influence_checks"`
	InfluenceViol     int64   `json:"influence_violations"`
	Worst             string  `json:"worst_case,omitempty"`
}

// Passed reports whether nothing was violated.
func (r *Report) Passed() bool {
	return r.ModelChanges == 0 && r.Violations == 0 && r.UtilityViolation == 0 && r.InfluenceViol == 0 &&
		r.RepresentationViolations == 0 && r.ReserveViolations == 0
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

// auditor is one run's state.
type auditor struct {
	cfg     *Config
	rep     *Report
	sampler string
	load    Loader
	trained bool // training invariance audited (no Config.Model)
	// lists caches allLists(n, k) by (n, k); probsG caches the list
	// probabilities of the current instance's users on G by (u, k) (G's
	// view is compared with every neighbour's).
	lists  map[[2]int][][]int
	probsG map[[2]int][]float64
}

func (a *auditor) note(s string) {
	if a.rep.Worst == "" {
		a.rep.Worst = s
	}
}

// Run executes the audit. Invalid configurations (K outside [1, 3], eps
// not finite and > 0, unknown variants or sampler, a model whose score is
// not a triad score, or whose eps_p differs from Eps) are errors.
func Run(cfg Config) (*Report, error) {
	if cfg.MaxK < 1 || cfg.MaxK > 3 {
		return nil, errors.New("endtoend: max K must be in [1,3]")
	}
	a := &auditor{cfg: &cfg, load: cfg.Load, trained: cfg.Model == nil}
	if a.load == nil {
		a.load = snapshot.Read
	}
	var err error
	if a.sampler, err = resolveSampler(&cfg); err != nil {
		return nil, err
	}
	preds := make([]Predictor, 0, len(cfg.Kinds)+2)
	rep := &Report{Calibration: cfg.Calibration.String(), Sampler: a.sampler, TrainingInvariance: "checked"}
	a.rep = rep
	if m := cfg.Model; m != nil {
		if cfg.Calibration == calib.Reference {
			return nil, errors.New("endtoend: the reference calibration releases raw scores, not a model")
		}
		if cfg.Train != nil {
			return nil, errors.New("endtoend: give a model or a training path, not both")
		}
		kind, err := score.ParseKind(m.Score)
		if err != nil {
			return nil, fmt.Errorf("endtoend: the model's predictor %q is not a triad score (cn, aa, ra, jc, pa): the end-to-end audit cannot rebuild it on its graphs", m.Score)
		}
		if cfg.Eps != 0 && cfg.Eps != m.EpsP {
			return nil, fmt.Errorf("endtoend: the model releases at eps_p %g, not %g: its lists are charged at its own eps_p", m.EpsP, cfg.Eps)
		}
		id, err := m.ID()
		if err != nil {
			return nil, err
		}
		cfg.Eps, cfg.Variants, cfg.Bounded = m.EpsP, []string{string(m.Variant)}, false
		preds = append(preds, Predictor{Name: kind.String(), Kind: kind})
		rep.Model = id
		rep.TrainingInvariance = "not run: the given model is released on every graph (no training to compare)"
	} else {
		for _, k := range cfg.Kinds {
			preds = append(preds, Predictor{Name: k.String(), Kind: k})
		}
		if cfg.Bounded && cfg.Calibration != calib.Reference {
			preds = append(preds, boundedPredictors()...)
		}
	}
	if !(cfg.Eps > 0) || math.IsInf(cfg.Eps, 0) {
		return nil, errors.New("endtoend: eps must be finite and > 0")
	}
	if len(cfg.Variants) == 0 {
		return nil, errors.New("endtoend: no variant to audit")
	}
	for _, v := range cfg.Variants {
		if _, err := deploy.ParseVariant(v); err != nil {
			return nil, err
		}
	}
	rep.Variants, rep.Variant, rep.Eps = slices.Clone(cfg.Variants), strings.Join(cfg.Variants, ","), cfg.Eps
	for _, variant := range cfg.Variants {
		for pi, pd := range preds {
			// The same graphs for every variant.
			r := randx.Derive(cfg.Seed, 0xe2e, uint64(pi))
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
			var train TrainFunc
			if a.trained {
				train = pd.train(variant, cfg.Eps, cfg.Epochs, cfg.Seed)
				if cfg.Train != nil && pd.Fit == nil {
					train = cfg.Train(pd.Kind)
				}
			}
			for ii, in := range insts {
				t := writeText(in, randx.Derive(cfg.Seed, 0x7e47, uint64(pi), uint64(ii)))
				if err := a.instance(pd, variant, in, t, train, randx.Derive(cfg.Seed, 0x4e9, uint64(pi), uint64(ii))); err != nil {
					return nil, fmt.Errorf("%s/%s/%s: %w", variant, pd.Name, in.name, err)
				}
				rep.Graphs++
			}
		}
	}
	return rep, nil
}

// recommender builds the Recommender of the audited release on (g, p).
func (a *auditor) recommender(m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set, opts ...release.Option) (*release.Recommender, error) {
	cfg := a.cfg
	if cfg.Calibration == calib.Reference {
		return release.NewMechanism(calib.Config{Method: calib.Exponential, Calibration: calib.Reference, Kind: pd.Kind, Eps: cfg.Eps}, "reference", g, p, opts...)
	}
	if pd.Fit == nil {
		return release.New(m, g, p, opts...)
	}
	sc, err := pd.scorer(g, p)
	if err != nil {
		return nil, err
	}
	return release.New(m, g, p, append(opts, release.WithScorer(sc))...)
}

// viewer is the audited release: no ledger (nothing leaves), the sampler
// whose probabilities are computed.
func (a *auditor) viewer(m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set) (*release.Recommender, error) {
	return a.recommender(m, pd, g, p, release.WithoutLedger(), release.WithSampler(a.sampler))
}

// sameModel reports whether a and b are the same model but for what may
// differ between runs on the same data (creation time, dataset text).
func sameModel(a, b *model.Model) (bool, error) {
	core := func(m *model.Model) ([]byte, error) {
		c := *m
		c.Meta.Created, c.Meta.Dataset = time.Time{}, ""
		return json.Marshal(&c)
	}
	ja, err := core(a)
	if err != nil {
		return false, err
	}
	jb, err := core(b)
	if err != nil {
		return false, err
	}
	return string(ja) == string(jb), nil
}

// seededLists releases a seeded list to every user of g (label order), as
// `dplp recommend --seed` does.
func (a *auditor) seededLists(m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set) ([][]string, error) {
	rec, err := a.recommender(m, pd, g, p, release.WithSeed(a.cfg.Seed))
	if err != nil {
		return nil, err
	}
	res, err := rec.Recommend(context.Background(), sortedLabels(g), a.cfg.MaxK)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(res))
	for i, x := range res {
		out[i] = x.List
	}
	return out, nil
}

func sortedLabels(g *graph.Graph) []string {
	ids := g.ByLabel()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = g.Label(id)
	}
	return out
}

// toggle is one node w with its toggleable pairs, in the order masks take
// them.
type toggle struct {
	w  int32
	xs []int32
}

// toggleOrder lists every node with protected pairs: first the endpoints
// of the edge list's first line (its partner first, so the first mask
// removes that line), then nodes whose edges are all protected, then the
// others by id.
func toggleOrder(g *graph.Graph, p *protect.Set, t *text) []toggle {
	n := g.N()
	done := make([]bool, n)
	var out []toggle
	add := func(w int32, first int32) {
		if done[w] || p.Count(w) == 0 {
			return
		}
		done[w] = true
		xs := slices.Clone(p.Of(w))
		if i := slices.Index(xs, first); i > 0 {
			xs[0], xs[i] = xs[i], xs[0]
		}
		out = append(out, toggle{w, xs})
	}
	if t.hasFirst {
		a, _ := g.ID(t.labels[t.first[0]])
		b, _ := g.ID(t.labels[t.first[1]])
		add(a, b)
		add(b, a)
	}
	for w := int32(0); int(w) < n; w++ {
		if loner(g, p, w) {
			add(w, -1)
		}
	}
	for w := int32(0); int(w) < n; w++ {
		add(w, -1)
	}
	return out
}

// instance audits one graph, written as t.
func (a *auditor) instance(pd Predictor, variant string, in instance, t *text, train TrainFunc, r *rand.Rand) error {
	cfg, rep := a.cfg, a.rep
	d, err := a.load(t.inputs(in.name))
	if err != nil {
		return fmt.Errorf("loading the graph written as text: %w", err)
	}
	if err := encodes(in, t.labels, d.Graph, d.Marks); err != nil {
		rep.RepresentationViolations++
		a.note(fmt.Sprintf("%s: the loaded graph is not the one written: %v", in.name, err))
		return nil
	}
	g, p := d.Graph, d.Marks
	a.probsG = map[[2]int][]float64{}
	m := cfg.Model
	if a.trained {
		if m, err = train(g, p); err != nil {
			return err
		}
		rep.Trainings++
	}
	rec, err := a.viewer(m, pd, g, p)
	if err != nil {
		return err
	}
	n := g.N()
	views := make([]release.UserView, n)
	for u := int32(0); int(u) < n; u++ {
		if views[u], err = rec.View(u); err != nil {
			return err
		}
	}
	if cfg.Representations {
		if err := a.representations(pd, in, t, g, p, m, train, r); err != nil {
			return err
		}
	}
	if cfg.Reserve {
		mk := func(opts ...release.Option) (*release.Recommender, error) { return a.recommender(m, pd, g, p, opts...) }
		if err := a.checkReserve(context.Background(), in.name, mk, sortedLabels(g)); err != nil {
			return err
		}
	}
	toggles := 0
	for _, tg := range toggleOrder(g, p, t) {
		w, xsAll := tg.w, tg.xs
		for mask := 1; mask < 1<<min(len(xsAll), 6); mask++ {
			if cfg.Toggles > 0 && toggles >= cfg.Toggles {
				return nil
			}
			var xs []int32
			var xls []string
			for i, x := range xsAll[:min(len(xsAll), 6)] {
				if mask&(1<<i) != 0 {
					xs = append(xs, x)
					xls = append(xls, g.Label(x))
				}
			}
			toggles++
			want, err := protect.Toggle(g, w, xs)
			if err != nil {
				return err
			}
			// G' as text, through the loader: same ids, same marks.
			rep.NeighbourLoads++
			d2, err := a.load(t.toggled(g.Label(w), xls).inputs(in.name + "-neighbour"))
			if err != nil {
				rep.RepresentationViolations++
				a.note(fmt.Sprintf("%s: the neighbouring graph with node %s's pairs %v toggled fails to load: %v", in.name, g.Label(w), xls, err))
				continue
			}
			g2, p2 := d2.Graph, d2.Marks
			same := sameGraph(g2, want) && sameMarks(p2, p)
			if !same {
				rep.RepresentationViolations++
				a.note(fmt.Sprintf("%s: the neighbouring graph with node %s's pairs %v toggled loads under other ids or marks than G (numbering or node universe depends on the protected pairs)", in.name, g.Label(w), xls))
			}
			m2 := m
			if a.trained {
				if m2, err = train(g2, p2); err != nil {
					return err
				}
				rep.Trainings++
				eq, err := sameModel(m, m2)
				if err != nil {
					return err
				}
				if !eq {
					rep.ModelChanges++
					a.note(fmt.Sprintf("%s: training on the graph with node %s's pairs %v toggled changes the model", in.name, g.Label(w), xls))
				}
			}
			if !same {
				continue // ids differ: user views cannot be compared
			}
			// Each user is audited with its own model pair (m on G, m2 on G'):
			// a changed model is a failure above, and its effect on the lists
			// is measured here too.
			rec2, err := a.viewer(m2, pd, g2, p2)
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
				if err := a.compare(in, rec, u, w, xs, &views[u], &v2); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// representations runs the representation checks of G (written as t,
// loaded as (g, p), model m).
func (a *auditor) representations(pd Predictor, in instance, t *text, g *graph.Graph, p *protect.Set, m *model.Model, train TrainFunc, r *rand.Rand) error {
	rep := a.rep
	base, err := a.seededLists(m, pd, g, p)
	if err != nil {
		return err
	}
	for _, rv := range t.representations(r) {
		rep.RepresentationChecks++
		var why []string
		d, err := a.load(rv.t.inputs(in.name + "-" + rv.name))
		if err != nil {
			rep.RepresentationViolations++
			a.note(fmt.Sprintf("%s written with %s fails to load: %v", in.name, rv.name, err))
			continue
		}
		if !sameGraph(d.Graph, g) || !sameMarks(d.Marks, p) {
			why = append(why, "loads under other ids")
		}
		m2 := m
		if a.trained {
			if m2, err = train(d.Graph, d.Marks); err != nil {
				return err
			}
			rep.Trainings++
			eq, err := sameModel(m, m2)
			if err != nil {
				return err
			}
			if !eq {
				why = append(why, "trains another model")
			}
		}
		lists, err := a.seededLists(m2, pd, d.Graph, d.Marks)
		if err != nil {
			return err
		}
		if !slices.EqualFunc(base, lists, slices.Equal[[]string]) {
			why = append(why, "releases other seeded lists")
		}
		if len(why) > 0 {
			rep.RepresentationViolations++
			a.note(fmt.Sprintf("%s written with %s %s", in.name, rv.name, strings.Join(why, ", ")))
		}
	}
	return nil
}

// compare checks one (G, G', u).
func (a *auditor) compare(in instance, rec *release.Recommender, u, w int32, xs []int32, va, vb *release.UserView) error {
	cfg, rep := a.cfg, a.rep
	if !slices.Equal(va.IDs, vb.IDs) {
		rep.UtilityViolation++
		a.note(fmt.Sprintf("%s: u=%d: the candidate set changes when node %d's pairs %v are toggled", in.name, u, w, xs))
		return nil
	}
	delta := va.Plan.Delta
	if va.Plan.Scale != vb.Plan.Scale || va.Plan.Delta != vb.Plan.Delta {
		rep.UtilityViolation++
		a.note(fmt.Sprintf("%s: u=%d: noise scale changes (%g -> %g) when node %d's pairs %v are toggled", in.name, u, va.Plan.Scale, vb.Plan.Scale, w, xs))
	}
	changed := false
	for i := range va.Utilities {
		rep.UtilityChecks++
		d := math.Abs(va.Utilities[i] - vb.Utilities[i])
		if d > delta*(1+1e-12)+tol {
			rep.UtilityViolation++
			a.note(fmt.Sprintf("%s: u=%d: utility of %d moves by %g > Delta %g when node %d's pairs %v are toggled", in.name, u, va.IDs[i], d, delta, w, xs))
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
		a.note(fmt.Sprintf("%s: u=%d: node %d is outside u's influence set but its pairs %v change u's utilities", in.name, u, w, xs))
	}
	nc := len(va.IDs)
	for k := 1; k <= min(cfg.MaxK, nc); k++ {
		rep.Cases++
		worst, bound, err := a.worstRatio(u, va, vb, k)
		if err != nil {
			return err
		}
		rep.Lists += int64(permCount(nc, k))
		if worst > rep.WorstLogRatio || rep.Cases == 1 {
			rep.WorstLogRatio, rep.WorstBound = worst, bound
		}
		if !va.Plan.Exact() {
			rep.NoisyCases++
		}
		if va.Plan.Lexicographic() {
			rep.LexCases++
		}
		if worst > bound+tol*(1+bound) {
			rep.Violations++
			a.note(fmt.Sprintf("%s: u=%d, K=%d: ln ratio %g > charged %g when node %d's pairs %v are toggled", in.name, u, k, worst, bound, w, xs))
		}
	}
	return nil
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
// must be the same on G' (it may read invariant data only). The list
// probabilities are those of the audited sampler (listLogProbs).
func (a *auditor) worstRatio(u int32, va, vb *release.UserView, k int) (worst, bound float64, err error) {
	picks, err := va.Plan.Picks(&mech.Utilities{Vals: va.Utilities}, va.Pub, k)
	if err != nil {
		return 0, 0, err
	}
	picks2, err := vb.Plan.Picks(&mech.Utilities{Vals: vb.Utilities}, vb.Pub, k)
	if err != nil {
		return 0, 0, err
	}
	if picks2 != picks {
		return InfRatio, va.Plan.ListCost(picks), nil // the charged cost itself leaks
	}
	bound = va.Plan.ListCost(picks)
	if a.lists == nil {
		a.lists = map[[2]int][][]int{}
	}
	lists, ok := a.lists[[2]int{len(va.IDs), k}]
	if !ok {
		lists = allLists(len(va.IDs), k)
		a.lists[[2]int{len(va.IDs), k}] = lists
	}
	pa, ok := a.probsG[[2]int{int(u), k}]
	if !ok {
		if pa, err = listLogProbs(a.sampler, a.cfg.Eps, va, lists); err != nil {
			return 0, 0, err
		}
		a.probsG[[2]int{int(u), k}] = pa
	}
	pb, err := listLogProbs(a.sampler, a.cfg.Eps, vb, lists)
	if err != nil {
		return 0, 0, err
	}
	for i := range lists {
		switch {
		case math.IsInf(pa[i], -1) && math.IsInf(pb[i], -1):
		case math.IsInf(pa[i], -1) || math.IsInf(pb[i], -1):
			worst = InfRatio
		default:
			worst = max(worst, math.Abs(pa[i]-pb[i]))
		}
	}
	return worst, bound, nil
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
	// Nodes whose only edges are protected: a loner with one protected edge
	// (the edge list's first line, so removing it removes the loner's first
	// appearance and its only edge) and a node with two, both protected.
	{
		edges, prot, n := base()
		edges = append(edges, e(n, 0), e(n+1, 1), e(n+1, 2))
		prot = append(prot, e(n, 0), e(n+1, 1), e(n+1, 2), e(n+1, 7))
		if err := add("only-edges-protected", edges, prot, n+2); err != nil {
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
