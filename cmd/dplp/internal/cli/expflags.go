package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dplp/dplp/cmd/dplp/internal/predflags"
	"github.com/dplp/dplp/research/experiment"
	"github.com/spf13/pflag"
)

// expFlags are the command-line options of the experiment command. The
// research harness takes a plain experiment.Config and never sees a flag
// (.ci/deps.sh forbids pflag and cobra in research/): bind the flags with
// addExpFlags, then build the configuration with config after parsing.
type expFlags struct {
	preset     string // --preset
	configFile string // --config
	dataDir    string // --data-dir (table1 preset)
	out        string // --out

	fs   *pflag.FlagSet
	cfg  experiment.Config // flag values
	pred predflags.Values  // predictor flag values
}

// addExpFlags registers the experiment flags on fs (for cobra:
// cmd.Flags()). List flags accept comma-separated values and repeat.
func addExpFlags(fs *pflag.FlagSet) *expFlags {
	f := &expFlags{fs: fs}
	d := experiment.DefaultConfig()
	c := &f.cfg
	fs.StringVar(&f.preset, "preset", "", "start from a preset: "+strings.Join(experiment.Presets, ", ")+" (table1-emb: the six embeddings; slow, PRUNE takes minutes per fit on facebook)")
	fs.StringVar(&f.configFile, "config", "", "start from a JSON configuration file (keys as in results.json's configuration: graphs, scores, methods, ...)")
	fs.StringVar(&f.dataDir, "data-dir", "../shared/datasets", "directory of the five graphs of the table1 preset")
	fs.StringVar(&f.out, "out", "experiment-out", "output directory (results.json, results.csv, summary.md, plots/, cache/)")
	fs.StringSliceVar(&c.Graphs, "graph", nil, "edge-list file (repeatable); the dataset name is its base name without extension")
	fs.StringSliceVar(&c.Scores, "score", d.Scores, "base predictors: cn, aa, ra, jc, pa; embeddings node2vec, deepwalk, line, gcn, prune, struc2vec (fitted per split); file:PATH")
	fs.StringSliceVar(&c.Methods, "method", d.Methods, "methods: nonprivate, public-only, dplp, dplp-lin (or lin), dplp-umnn (or umnn), dplp-pub, exponential, laplace, laplace-peeling, staircase, power:A; list-level (eps = cost per list): dplp-list, dplp-list-gauss (Gaussian release, rho = eps^2/2 zCDP), perturb-once, joint-em, oneshot-topk (joint-em:L, oneshot-topk:L weight the public score by L >= 1)")
	fs.StringSliceVar(&c.Protocols, "protocol", d.Protocols, "protocols: clean, reference, deployment")
	fs.StringSliceVar(&c.Units, "unit", []string{"party"}, "privacy units: party (Definition 1, default), pair (one protected pair); change the list-level methods (dplp-list, dplp-list-gauss, perturb-once, joint-em, oneshot-topk)")
	fs.StringSliceVar(&c.Calibrations, "calibration", d.Calibrations, "calibrations: rigorous, reference (reproduction only; does NOT meet the guarantee)")
	fs.Var(newFloats(&c.Eps, d.Eps), "eps", "eps_p values (per pick), each in [1e-06, 1e+06]")
	fs.Var(&budgetList{p: &c.Budgets}, "budget", "per-list budgets replacing --eps: pure:EPS (eps_p = EPS/K) or approx:EPS,DELTA (largest eps_p whose K picks are (EPS, DELTA)-DP under zCDP); comma-separated, repeatable")
	fs.Var(newFloats(&c.Sigma, d.Sigma), "sigma", "fractions of edges protected, each in [0,1]")
	fs.IntSliceVar(&c.K, "k", d.K, "list lengths K, each >= 1")
	fs.IntVar(&c.Seeds, "seeds", d.Seeds, "repetitions (seeds 0..N-1)")
	fs.IntVar(&c.Epochs, "epochs", 0, "DPLP training epochs (0: the trainer's default)")
	fs.Float64Var(&c.NonEdgeFrac, "protect-nonedges", 0, "also protect this fraction of non-edges (clean and deployment protocols)")
	fs.IntVar(&c.MaxNegatives, "max-negatives", 0, "cap test and dev negatives per query (0: no cap)")
	fs.IntVar(&c.Workers, "workers", 0, "cells evaluated at once (each is parallel inside; 0 means 2)")
	// The predictor flags are the commands' own (predflags), so their
	// defaults cannot drift; only flags given explicitly override the
	// configuration (see config).
	predflags.Register(fs, &f.pred, false)
	return f
}

// floats is a comma-separated, repeatable list of numbers. Its help shows
// the type as "floats" and the default in shortest form ("0.1", not
// pflag's "float64Slice" and "[0.100000]"). The first Set replaces the
// default; later ones append.
type floats struct {
	p       *[]float64
	changed bool
}

func newFloats(p *[]float64, def []float64) *floats {
	*p = append([]float64(nil), def...)
	return &floats{p: p}
}

func (f *floats) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	s := make([]string, len(*f.p))
	for i, x := range *f.p {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (f *floats) Set(v string) error {
	var xs []float64
	for _, part := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", part)
		}
		xs = append(xs, x)
	}
	if !f.changed {
		*f.p = xs
		f.changed = true
	} else {
		*f.p = append(*f.p, xs...)
	}
	return nil
}

func (f *floats) Type() string { return "floats" }

// splitBudgets splits a comma-separated --budget value into budgets: a part
// with a colon starts a budget, a part without one continues the previous
// (the delta of approx:EPS,DELTA), so "pure:1,approx:3,1e-6" is two budgets.
func splitBudgets(v string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		switch {
		case strings.Contains(part, ":"):
			out = append(out, part)
		case len(out) == 0:
			return nil, fmt.Errorf("budget %q: want pure:EPS or approx:EPS,DELTA", v)
		default:
			out[len(out)-1] += "," + part
		}
	}
	return out, nil
}

// budgetList is the --budget flag: comma-separated and repeatable (the
// first Set replaces the default, later ones append), each budget checked
// (experiment.ParseBudget) when set.
type budgetList struct {
	p       *[]string
	changed bool
}

func (f *budgetList) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f *budgetList) Set(v string) error {
	xs, err := splitBudgets(v)
	if err != nil {
		return err
	}
	for _, x := range xs {
		if _, err := experiment.ParseBudget(x); err != nil {
			return err
		}
	}
	if !f.changed {
		*f.p = xs
		f.changed = true
	} else {
		*f.p = append(*f.p, xs...)
	}
	return nil
}

func (f *budgetList) Type() string { return "budgets" }

// config builds the configuration: the preset or configuration file when
// given (experiment.DefaultConfig otherwise), then every flag set
// explicitly on the command line on top of it, validated.
func (f *expFlags) config() (experiment.Config, error) {
	var cfg experiment.Config
	var err error
	switch {
	case f.preset != "" && f.configFile != "":
		return experiment.Config{}, fmt.Errorf("give either --preset or --config, not both")
	case f.preset != "":
		cfg, err = experiment.Preset(f.preset, f.dataDir)
	case f.configFile != "":
		cfg, err = experiment.LoadConfig(f.configFile)
	default:
		cfg = experiment.DefaultConfig()
	}
	if err != nil {
		return experiment.Config{}, err
	}
	changed := func(name string) bool { fl := f.fs.Lookup(name); return fl != nil && fl.Changed }
	set := func(name string, apply func()) {
		if changed(name) {
			apply()
		}
	}
	c := &f.cfg
	set("graph", func() { cfg.Graphs = c.Graphs })
	set("score", func() { cfg.Scores = c.Scores })
	set("method", func() { cfg.Methods = c.Methods })
	set("protocol", func() { cfg.Protocols = c.Protocols })
	set("unit", func() { cfg.Units = c.Units })
	set("calibration", func() { cfg.Calibrations = c.Calibrations })
	set("eps", func() {
		cfg.Eps = c.Eps
		if !changed("budget") {
			cfg.Budgets = nil // --eps replaces a configuration's budgets
		}
	})
	set("budget", func() {
		cfg.Budgets = c.Budgets
		if !changed("eps") {
			cfg.Eps = nil // --budget replaces the eps axis
		}
	})
	set("sigma", func() { cfg.Sigma = c.Sigma })
	set("k", func() { cfg.K = c.K })
	set("seeds", func() { cfg.Seeds = c.Seeds })
	set("epochs", func() { cfg.Epochs = c.Epochs })
	set("protect-nonedges", func() { cfg.NonEdgeFrac = c.NonEdgeFrac })
	set("max-negatives", func() { cfg.MaxNegatives = c.MaxNegatives })
	set("workers", func() { cfg.Workers = c.Workers })
	set("feature", func() { cfg.Predictor.Feature = f.pred.Feature })
	set("dim", func() { cfg.Predictor.Dim = f.pred.Dim })
	set("emb-epochs", func() { cfg.Predictor.Epochs = f.pred.Epochs })
	set("n2v-p", func() { cfg.Predictor.P = f.pred.P })
	set("n2v-q", func() { cfg.Predictor.Q = f.pred.Q })
	set("lo", func() { cfg.Predictor.Lo = f.pred.Lo })
	set("hi", func() { cfg.Predictor.Hi = f.pred.Hi })
	if cfg.Theory != nil {
		// Grid flags do not apply to the theory experiment, except seeds.
		set("seeds", func() { cfg.Theory.Seeds = c.Seeds })
	}
	return cfg, cfg.Validate()
}
