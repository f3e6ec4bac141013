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
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
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
