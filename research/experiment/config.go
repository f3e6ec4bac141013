// Package experiment is the experiment harness of the paper's Section 6: it
// expands a grid of datasets x base predictors x methods x calibrations x
// protocols x eps_p x sigma x K x seeds into cells, evaluates each cell on a
// shared split (one per dataset, protocol, sigma and seed) with shared
// fitted predictors (one per split and predictor on the test graph, and one
// on the public training graph when a DPLP-family method needs training) and
// a shared trained transform (one per dataset, predictor, variant, protocol,
// sigma, eps_p, calibration and seed), caches every finished cell on disk so
// that an interrupted run resumes, and writes results.json, results.csv,
// summary.md (tables shaped like the paper's Table 1) and plots.
//
// A second experiment, the "theory" preset, measures the quantities of the
// paper's Section 5 on latent-space graphs (see theory.go).
package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dplp/dplp/accountant"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/linkclf"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/research/protocol"
)

// Config is an experiment grid. It loads from JSON (LoadConfig; keys are the
// json tags); the dplp experiment command sets it from its flags
// (cmd/dplp/internal/cli/expflags.go). Lists are expanded as a Cartesian
// product into cells.
type Config struct {
	// Graphs are edge-list files; a dataset is named by its file's base name
	// without extension(s) ("../shared/datasets/yeast.txt" -> "yeast").
	Graphs []string `json:"graphs"`
	// Scores are base predictors (predict.Parse): the triad scores cn, aa,
	// ra, jc, pa; the embedding methods node2vec, deepwalk, line, gcn,
	// prune, struc2vec (each followed by a logistic link classifier; fitted
	// once per split on the test graph, and once on the public training
	// graph when a DPLP-family method is trained); or file:PATH (a score
	// file read against the graph's labels, with the range of Predictor;
	// the same file scores the test and the training graph, so DPLP's
	// training is invariant only if the file ignores protected pairs).
	Scores []string `json:"scores"`
	// Methods: nonprivate, public-only, dplp, dplp-lin (or lin), dplp-umnn
	// (or umnn), dplp-pub,
	// exponential, laplace, laplace-peeling, staircase, and power:A (the
	// exponential mechanism on the utility (s/S_max)^A, paper Figure 2);
	// and the list-level methods of ListMethods (dplp-list, perturb-once,
	// joint-em, oneshot-topk; joint-em:L and oneshot-topk:L weight the free
	// public score by L >= 1), for which eps is the cost of a whole list
	// (not per pick).
	Methods []string `json:"methods"`
	// Calibrations: rigorous (default) and/or reference (reproduction only;
	// does not meet the guarantee). Under reference, dplp, dplp-lin and
	// dplp-umnn are the authors' DPLP re-implemented with their noise
	// (research/refdplp; NO guarantee, every row labelled, see Result.Noise
	// and the eps_eff columns); dplp-pub is trained with the authors' data
	// choices but released with the rigorous calibration of the trained
	// transform; power:A is always rigorous.
	Calibrations []string `json:"calibrations"`
	// Protocols: clean (default), reference, deployment.
	Protocols []string `json:"protocols"`
	// Units are the privacy units (privunit: party, the default and
	// Definition 1, or pair; docs/privacy-model.md §16). They change the
	// list-level methods (ListMethods: their noise and cost) and the
	// per-pick mechanisms' noise (calib.Config.Unit: under the pair unit
	// each pick is calibrated to the pair-unit per-candidate bound,
	// score.Evidence(u, Pair).Linf, instead of Delta_s(u)); non-private and
	// public-only are the same under both. The reference calibration is
	// run under the party unit only.
	Units []string `json:"units,omitempty"`
	// Eps are the eps_p values (per pick), each in [MinEps, MaxEps].
	Eps []float64 `json:"eps"`
	// Budgets, when given, replace Eps: per-list budgets "pure:E" (eps_p =
	// E/K) or "approx:E,D" (eps_p = accountant.MaxEpsPerPick(E, D, 1, K)),
	// from which eps_p is derived for each K (see Budget). Give eps or
	// budgets, not both.
	Budgets []string `json:"budgets,omitempty"`
	// Sigma are the fractions of edges protected, each in [0, 1].
	Sigma []float64 `json:"sigma"`
	// K are the list lengths, each >= 1.
	K []int `json:"k"`
	// Seeds is the number of repetitions; seed values are 0..Seeds-1.
	Seeds int `json:"seeds"`
	// Epochs for DPLP training (0: the trainer's default; for the authors'
	// DPLP under the reference calibration, 0 keeps their 50 DPLP-Lin and 10
	// DPLP epochs and n > 0 sets both to n, DPLP-Lin at least 2).
	Epochs int `json:"epochs"`
	// NonEdgeFrac also protects this fraction of non-edges (clean and
	// deployment protocols only).
	NonEdgeFrac float64 `json:"non_edge_frac"`
	// MaxNegatives caps test and dev negatives per query (0: no cap).
	MaxNegatives int `json:"max_negatives"`
	// Workers is the number of cells evaluated at once (each evaluation is
	// itself parallel over queries); 0 means DefaultWorkers.
	Workers int `json:"workers"`
	// Predictor configures the embedding and file predictors (ignored by
	// the triad scores).
	Predictor PredictorOptions `json:"predictor"`

	// Theory, when set, makes Run measure the paper's Section 5 quantities on
	// latent-space graphs instead of running the grid above.
	Theory *TheoryConfig `json:"theory,omitempty"`
}

// PredictorOptions configure the embedding and file predictors; zero
// values take predict's defaults (the paper's settings).
type PredictorOptions struct {
	// Feature is the link classifier's edge feature: hadamard (default) or
	// absdiff (|z_u - z_v|, the authors').
	Feature string `json:"feature,omitempty"`
	// Dim is the embedding dimension (0: 80).
	Dim int `json:"dim,omitempty"`
	// Epochs are the gcn / prune training epochs (0: the paper's).
	Epochs int `json:"epochs,omitempty"`
	// P and Q are node2vec's return and in-out parameters (0: 1).
	P float64 `json:"p,omitempty"`
	Q float64 `json:"q,omitempty"`
	// Lo and Hi are the declared range of file:PATH scores (both 0: [0, 1]).
	Lo float64 `json:"lo,omitempty"`
	Hi float64 `json:"hi,omitempty"`
}

// options converts to predict.Options (without the seed).
func (o PredictorOptions) options() (predict.Options, error) {
	var feat linkclf.Feature
	if o.Feature != "" {
		f, err := linkclf.ParseFeature(strings.ToLower(strings.TrimSpace(o.Feature)))
		if err != nil {
			return predict.Options{}, fmt.Errorf("predictor feature: %w", err)
		}
		feat = f
	}
	var errs []error
	if o.Dim < 0 || o.Epochs < 0 {
		errs = append(errs, fmt.Errorf("predictor dim %d and epochs %d must be >= 0", o.Dim, o.Epochs))
	}
	if !(o.P >= 0) || !(o.Q >= 0) || math.IsInf(o.P, 0) || math.IsInf(o.Q, 0) {
		errs = append(errs, fmt.Errorf("node2vec p %v and q %v must be finite and > 0 (0: 1)", o.P, o.Q))
	}
	if (o.Lo != 0 || o.Hi != 0) && (!(o.Hi > o.Lo) || math.IsInf(o.Lo, 0) || math.IsInf(o.Hi, 0)) {
		errs = append(errs, fmt.Errorf("file score range [%v, %v]: need finite lo < hi (or both 0 for [0, 1])", o.Lo, o.Hi))
	}
	if len(errs) > 0 {
		return predict.Options{}, errors.Join(errs...)
	}
	return predict.Options{Feature: feat, Dim: o.Dim, Epochs: o.Epochs, P: o.P, Q: o.Q, Lo: o.Lo, Hi: o.Hi}, nil
}

// The accepted range of eps_p is accountant's, the same on every path.
const (
	MinEps = accountant.MinEps
	MaxEps = accountant.MaxEps
)

// CheckEps reports whether eps is a usable eps_p (accountant.CheckEps).
func CheckEps(eps float64) error { return accountant.CheckEps(eps) }

// DefaultWorkers is the number of cells evaluated at once when
// Config.Workers is 0. Two beat one on the 2-core machine even though each
// evaluation and training is parallel inside (table1 on yeast: 30 s against
// 53 s; pb: 6.9 s against 10.3 s): small cells leave cores idle.
const DefaultWorkers = 2

// AllMethods are the method names of the paper's comparison plus the
// baselines of privacy-model §10, in table column order.
var AllMethods = []string{"nonprivate", "public-only", "dplp", "dplp-lin", "dplp-umnn", "dplp-pub",
	"exponential", "laplace", "laplace-peeling", "staircase"}

// ListMethods are the list-level methods (docs/privacy-model.md §16): one
// charge eps per list whatever K (dplp-list: Laplace on the private evidence
// vector, mech/list; dplp-list-gauss: Gaussian noise on it, sd L2/eps, a
// rho = eps^2/2 zCDP charge, the zCDP of an eps-DP list; joint-em: the joint exponential mechanism over
// length-K sequences, and oneshot-topk: one-shot Gumbel top-K, both on the
// public score plus the private evidence, mech/topk, §16.8), or once for
// every list (perturb-once: randomised response on every protected pair).
// Triad scores, clean or deployment protocol, rigorous calibration only.
var ListMethods = []string{"dplp-list", "dplp-list-gauss", "perturb-once", "joint-em", "oneshot-topk"}

// DefaultConfig is one score (AA), all methods, eps_p = 0.1, sigma = 0.3,
// K = 30, one seed, clean protocol, rigorous calibration, and no graphs.
func DefaultConfig() Config {
	return Config{
		Scores:       []string{"aa"},
		Methods:      slices.Clone(AllMethods),
		Calibrations: []string{"rigorous"},
		Protocols:    []string{"clean"},
		Units:        []string{"party"},
		Eps:          []float64{0.1},
		Sigma:        []float64{0.3},
		K:            []int{30},
		Seeds:        1,
	}
}

// LoadConfig reads a JSON configuration. Keys not given keep DefaultConfig's
// values; unknown keys are errors. Relative graph paths and file:PATH score
// paths are resolved against the configuration file's directory.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("experiment: %s: %w", path, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("experiment: %s: trailing data after the JSON object", path)
	}
	dir := filepath.Dir(path)
	for i, g := range cfg.Graphs {
		if g != "" && !filepath.IsAbs(g) {
			cfg.Graphs[i] = filepath.Join(dir, g)
		}
	}
	for i, sc := range cfg.Scores {
		t := strings.TrimSpace(sc)
		if f, ok := strings.CutPrefix(t, "file:"); ok && f != "" && !filepath.IsAbs(f) {
			cfg.Scores[i] = "file:" + filepath.Join(dir, f)
		}
	}
	if len(cfg.Budgets) > 0 {
		// Budgets replace the default eps axis; eps given too is an error
		// (Validate).
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			if _, ok := keys["eps"]; !ok {
				cfg.Eps = nil
			}
		}
	}
	if cfg.Theory != nil {
		cfg.Theory.fill()
	}
	return cfg, nil
}

// Presets names the presets of Preset.
var Presets = []string{"table1", "table1-emb", "theory"}

// Preset returns a named configuration: "table1" (the paper's Table 1 over
// the five graphs of dataDir: AA, CN, JC, PA; all methods; eps_p = 0.1,
// sigma = 0.3, K = 30; 3 seeds; clean protocol, rigorous calibration; add
// reference protocol/calibration with flags), "table1-emb" (the same
// setting with the six embedding predictors node2vec, deepwalk, line, gcn,
// prune, struc2vec) or "theory" (paper Section 5 on latent-space graphs).
// dataDir "" means ../shared/datasets.
//
// table1-emb is slow: every (dataset, seed) fits each embedding twice (on
// the test graph, and on the public training graph for DPLP's training),
// 180 fits in all; PRUNE takes minutes per fit on facebook, struc2vec and
// node2vec tens of seconds. Lower the cost with --seeds 1, --emb-epochs
// (gcn, prune), --dim, or fewer --score / --graph values; --max-negatives
// caps the evaluation's candidates but not the fits.
func Preset(name, dataDir string) (Config, error) {
	switch l := strings.ToLower(name); l {
	case "table1", "table1-emb":
		if dataDir == "" {
			dataDir = filepath.Join("..", "shared", "datasets")
		}
		cfg := DefaultConfig()
		cfg.Graphs = nil
		for _, d := range []string{"facebook", "usair", "twitter", "yeast", "pb"} {
			cfg.Graphs = append(cfg.Graphs, filepath.Join(dataDir, d+".txt"))
		}
		cfg.Scores = []string{"aa", "cn", "jc", "pa"}
		if l == "table1-emb" {
			cfg.Scores = slices.Clone(predict.Embedding)
		}
		cfg.Seeds = 3
		return cfg, nil
	case "theory":
		cfg := DefaultConfig()
		t := DefaultTheory()
		cfg.Theory = &t
		return cfg, nil
	}
	return Config{}, fmt.Errorf("experiment: unknown preset %q (want %s)", name, strings.Join(Presets, ", "))
}

// methodSpec is a parsed method name.
type methodSpec struct {
	name    string       // canonical name
	mech    calib.Method // release mechanism (unused by list-level methods)
	list    string       // a ListMethods name; "" for per-pick methods
	variant string       // DPLP variant for evaluate.TrainTransform; "" for none
	power   float64      // > 0 for power:A
	pubW    float64      // joint-em:L, oneshot-topk:L: the public weight L (0: 1)
}

// trained reports whether the method needs a trained transform.
func (m methodSpec) trained() bool { return m.variant != "" }

// epsFree reports whether results do not depend on eps_p or calibration.
func (m methodSpec) epsFree() bool {
	return m.list == "" && (m.mech == calib.NonPrivate || m.mech == calib.PublicOnly)
}

var dplpVariants = map[string]string{"dplp": "dplp", "dplp-lin": "lin", "dplp-umnn": "umnn", "dplp-pub": "dplp-pub"}

// methodAliases are the variant names of dplp train (lin, umnn) accepted
// as methods; they name the methods dplp-lin and dplp-umnn.
var methodAliases = map[string]string{"lin": "dplp-lin", "umnn": "dplp-umnn"}

// parseMethod parses a method name.
func parseMethod(s string) (methodSpec, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	if a, ok := methodAliases[l]; ok {
		l = a
	}
	if v, ok := dplpVariants[l]; ok {
		return methodSpec{name: l, mech: calib.Exponential, variant: v}, nil
	}
	if slices.Contains(ListMethods, l) {
		return methodSpec{name: l, mech: calib.Exponential, list: l}, nil
	}
	for _, lm := range []string{"joint-em", "oneshot-topk"} {
		if a, ok := strings.CutPrefix(l, lm+":"); ok {
			x, err := strconv.ParseFloat(a, 64)
			if err != nil || !(x >= 1) || math.IsInf(x, 0) {
				return methodSpec{}, fmt.Errorf("experiment: method %q: the public weight must be a finite number >= 1", s)
			}
			return methodSpec{name: lm + ":" + strconv.FormatFloat(x, 'g', -1, 64), mech: calib.Exponential, list: lm, pubW: x}, nil
		}
	}
	if a, ok := strings.CutPrefix(l, "power:"); ok {
		x, err := strconv.ParseFloat(a, 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return methodSpec{}, fmt.Errorf("experiment: method %q: power must be a finite number > 0", s)
		}
		return methodSpec{name: "power:" + strconv.FormatFloat(x, 'g', -1, 64), mech: calib.Exponential, power: x}, nil
	}
	m, err := calib.ParseMethod(l)
	if err != nil {
		return methodSpec{}, fmt.Errorf("experiment: unknown method %q (want %s, %s, power:A, joint-em:L or oneshot-topk:L)", s, strings.Join(AllMethods, ", "), strings.Join(ListMethods, ", "))
	}
	return methodSpec{name: m.String(), mech: m}, nil
}

// DatasetName is a graph file's base name without extension(s), compression
// suffixes included: "dir/yeast.txt.zst" -> "yeast".
func DatasetName(path string) string {
	b := filepath.Base(path)
	for _, z := range []string{".gz", ".zst", ".bz2", ".xz"} {
		b = strings.TrimSuffix(b, z)
	}
	if e := filepath.Ext(b); e != "" && e != b {
		b = strings.TrimSuffix(b, e)
	}
	return b
}

// plan is a validated, parsed configuration.
type plan struct {
	cfg      Config
	datasets []string // names, parallel to cfg.Graphs
	preds    []predictor
	popt     predict.Options   // predictor options, without the seed
	fileSHA  map[string]string // file:PATH predictors: PATH -> content hash (set by run)
	methods  []methodSpec
	cals     []calib.Calibration
	prots    []protocol.Kind
	units    []privunit.Unit
	budgets  []Budget // parsed Config.Budgets; when non-empty they replace Config.Eps
}

// Validate checks the configuration and reports every problem found.
func (c *Config) Validate() error {
	_, err := c.parse(true)
	return err
}

func (c *Config) parse(checkFiles bool) (*plan, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	p := &plan{cfg: *c}
	if c.Theory != nil {
		t := *c.Theory
		t.fill() // zero fields take DefaultTheory's values
		if err := t.validate(); err != nil {
			return nil, err
		}
		return p, nil
	}
	if len(c.Graphs) == 0 {
		bad("no graphs given")
	}
	seen := map[string]string{}
	for _, g := range c.Graphs {
		name := DatasetName(g)
		if g == "" || name == "" {
			bad("empty graph path")
			continue
		}
		if prev, ok := seen[name]; ok {
			bad("graphs %s and %s have the same dataset name %q", prev, g, name)
		}
		seen[name] = g
		p.datasets = append(p.datasets, name)
		if checkFiles {
			if st, err := os.Stat(g); err != nil {
				bad("graph %s: %v", g, err)
			} else if st.IsDir() {
				bad("graph %s is a directory", g)
			}
		}
	}
	list := func(what string, xs []string, parse func(string) error) {
		if len(xs) == 0 {
			bad("no %s given", what)
		}
		dup := map[string]bool{}
		for _, x := range xs {
			k := strings.ToLower(strings.TrimSpace(x))
			if dup[k] {
				bad("%s %q listed twice", what, x)
			}
			dup[k] = true
			if err := parse(x); err != nil {
				errs = append(errs, err)
			}
		}
	}
	shown := map[string]string{}
	list("scores", c.Scores, func(s string) error {
		spec, err := predict.Parse(s)
		if err != nil {
			return err
		}
		pr := predictor{name: spec.Name, spec: spec}
		if prev, ok := shown[pr.display()]; ok {
			return fmt.Errorf("scores %s and %s have the same display name %s", prev, pr.name, pr.display())
		}
		shown[pr.display()] = pr.name
		if checkFiles && spec.File != "" {
			if st, err := os.Stat(spec.File); err != nil {
				return fmt.Errorf("score %s: %v", s, err)
			} else if st.IsDir() {
				return fmt.Errorf("score %s: %s is a directory", s, spec.File)
			}
		}
		p.preds = append(p.preds, pr)
		return nil
	})
	if o, err := c.Predictor.options(); err != nil {
		errs = append(errs, err)
	} else {
		p.popt = o
	}
	methodSeen := map[string]string{}
	list("methods", c.Methods, func(s string) error {
		m, err := parseMethod(s)
		p.methods = append(p.methods, m)
		if err == nil {
			if prev, ok := methodSeen[m.name]; ok && !strings.EqualFold(strings.TrimSpace(prev), strings.TrimSpace(s)) {
				return fmt.Errorf("methods %q and %q are the same method %s", prev, s, m.name)
			}
			methodSeen[m.name] = s
		}
		return err
	})
	list("calibrations", c.Calibrations, func(s string) error {
		k, err := calib.ParseCalibration(s)
		p.cals = append(p.cals, k)
		return err
	})
	list("protocols", c.Protocols, func(s string) error {
		k, err := protocol.ParseKind(s)
		p.prots = append(p.prots, k)
		return err
	})
	if len(c.Units) == 0 {
		p.units = []privunit.Unit{privunit.Party}
	} else {
		list("units", c.Units, func(s string) error {
			u, err := privunit.Parse(s)
			if err == nil && strings.TrimSpace(s) == "" {
				err = errors.New("empty privacy unit")
			}
			p.units = append(p.units, u)
			return err
		})
	}
	if slices.ContainsFunc(p.methods, func(m methodSpec) bool { return m.list != "" }) {
		if slices.Contains(p.prots, protocol.Reference) {
			bad("the list-level methods (%s) need the clean or deployment protocol (the reference protocol's candidates include neighbours of the query)", strings.Join(ListMethods, ", "))
		}
		if slices.Contains(p.cals, calib.Reference) {
			bad("the list-level methods (%s) have no reference calibration", strings.Join(ListMethods, ", "))
		}
		if len(c.Budgets) > 0 {
			bad("the list-level methods (%s) take --eps, the cost of a whole list, not budgets", strings.Join(ListMethods, ", "))
		}
		for _, pr := range p.preds {
			if !pr.spec.Triad {
				bad("the list-level methods (%s) need a triad score (cn, aa, ra, jc, pa), not %s", strings.Join(ListMethods, ", "), pr.name)
			}
		}
	}
	switch {
	case len(c.Eps) == 0 && len(c.Budgets) == 0:
		bad("no eps values or budgets given")
	case len(c.Eps) > 0 && len(c.Budgets) > 0:
		bad("give eps values (per pick) or budgets (per list), not both")
	}
	budgetSeen := map[string]string{}
	for _, s := range c.Budgets {
		b, err := ParseBudget(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := budgetSeen[b.String()]; ok {
			bad("budgets %q and %q are the same budget %s", prev, s, b)
			continue
		}
		budgetSeen[b.String()] = s
		p.budgets = append(p.budgets, b)
		for _, k := range c.K {
			if k < 1 {
				continue // reported below
			}
			e, err := b.EpsPerPick(k)
			if err == nil {
				err = CheckEps(e)
			}
			if err != nil {
				bad("budget %s at k %d: %v", b, k, err)
			}
		}
	}
	for _, e := range c.Eps {
		if err := CheckEps(e); err != nil {
			errs = append(errs, err)
		}
	}
	if len(c.Sigma) == 0 {
		bad("no sigma values given")
	}
	for _, s := range c.Sigma {
		if !(s >= 0 && s <= 1) {
			bad("sigma %v: must be in [0, 1]", s)
		}
	}
	if len(c.K) == 0 {
		bad("no k values given")
	}
	for _, k := range c.K {
		if k < 1 {
			bad("k %d: must be >= 1", k)
		}
	}
	if hasDup(c.Eps) || hasDup(c.Sigma) || hasDup(c.K) {
		bad("eps, sigma and k lists must not repeat a value")
	}
	if c.Seeds < 1 {
		bad("seeds %d: must be >= 1", c.Seeds)
	}
	if c.Epochs < 0 {
		bad("epochs %d: must be >= 0", c.Epochs)
	}
	if !(c.NonEdgeFrac >= 0 && c.NonEdgeFrac <= 1) {
		bad("non-edge fraction %v: must be in [0, 1]", c.NonEdgeFrac)
	}
	if c.NonEdgeFrac > 0 && slices.Contains(p.prots, protocol.Reference) {
		bad("the reference protocol never protects non-edges: non-edge fraction must be 0 with it")
	}
	if c.MaxNegatives < 0 {
		bad("max negatives %d: must be >= 0", c.MaxNegatives)
	}
	if c.Workers < 0 {
		bad("workers %d: must be >= 0", c.Workers)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("experiment: invalid configuration: %w", errors.Join(errs...))
	}
	return p, nil
}

func hasDup[T comparable](xs []T) bool {
	seen := make(map[T]bool, len(xs))
	for _, x := range xs {
		if seen[x] {
			return true
		}
		seen[x] = true
	}
	return false
}
