package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/train/deploy"
	"github.com/dplp/dplp/transform"
	"github.com/spf13/cobra"
)

// trainFlags are the hyperparameters shared by train, demo and experiments.
type trainFlags struct {
	epochs, patience, quadNodes int
	lr, wd, margin, tau         float64
	hidden                      []int
	exponents                   string
}

func (t *trainFlags) register(cmd *cobra.Command) {
	d := train.DefaultConfig(train.DPLP, 1)
	f := cmd.Flags()
	f.IntVar(&t.epochs, "epochs", d.Epochs, "maximum training epochs")
	f.IntVar(&t.patience, "patience", d.Patience, "stop after this many epochs without held-out improvement (0: never)")
	f.Float64Var(&t.lr, "lr", d.LR, "Adam learning rate (paper: 0.1)")
	f.Float64Var(&t.wd, "weight-decay", d.WeightDecay, "L2 weight decay (paper: 1e-5)")
	f.Float64Var(&t.margin, "margin", d.Margin, "hinge margin rho (paper: 0.1)")
	f.Float64Var(&t.tau, "tau", transform.DefaultTau, "power-basis temperature tau")
	f.IntSliceVar(&t.hidden, "hidden", []int{transform.DefaultWidth}, "hidden layer widths of the UMNN integrand")
	f.IntVar(&t.quadNodes, "quad-nodes", transform.DefaultQuadNodes, "Clenshaw-Curtis quadrature intervals")
	f.StringVar(&t.exponents, "exponents", "paper", "power basis exponents: paper (a_j = 1/2 + (j-1)/100, 170 of them) or reference (the authors' code)")
}

// config builds a train.Config for variant v at eps.
func (t *trainFlags) config(v train.Variant, eps float64) (train.Config, error) {
	c := train.DefaultConfig(v, eps)
	if t.epochs < 1 {
		return c, fmt.Errorf("--epochs must be >= 1")
	}
	if t.patience < 0 {
		return c, fmt.Errorf("--patience must be >= 0")
	}
	for name, x := range map[string]float64{"lr": t.lr, "tau": t.tau} {
		if err := checkPos(name, x); err != nil {
			return c, err
		}
	}
	if !(t.wd >= 0) || !(t.margin >= 0) || math.IsInf(t.wd, 0) || math.IsInf(t.margin, 0) {
		return c, fmt.Errorf("--weight-decay and --margin must be finite and >= 0")
	}
	for _, h := range t.hidden {
		if h < 1 {
			return c, fmt.Errorf("--hidden widths must be >= 1")
		}
	}
	if t.quadNodes < 2 {
		return c, fmt.Errorf("--quad-nodes must be >= 2")
	}
	switch t.exponents {
	case "paper":
	case "reference":
		c.Exponents = transform.ReferenceExponents()
	default:
		return c, fmt.Errorf("--exponents must be paper or reference, got %q", t.exponents)
	}
	c.Epochs, c.Patience, c.LR, c.WeightDecay, c.Margin = t.epochs, t.patience, t.lr, t.wd, t.margin
	c.Tau, c.Hidden, c.QuadNodes = t.tau, t.hidden, t.quadNodes
	return c, c.Validate()
}

// trainOptions holds the flag values of the train command and, after
// validate, the parsed predictor, variant and training configuration.
type trainOptions struct {
	path, kind, variant, out string
	unit                     string
	fitK                     int
	eps                      float64
	seed                     uint64
	devFrac                  float64
	maxQueries, negPerQuery  int
	pf                       protFlags
	tf                       trainFlags
	predf                    predFlags

	spec predict.Spec
	v    train.Variant
	cfg  train.Config
	list bool          // --variant dplp-list
	u    privunit.Unit // parsed --unit
}

func newTrainCmd() *cobra.Command {
	o := &trainOptions{}
	cmd := &cobra.Command{
		Use:   "train --graph FILE (--protected FILE | --sigma X) --score S --variant dplp|lin|umnn|dplp-pub|dplp-list [--unit party|pair] --eps E --out MODEL",
		Short: "Train DPLP's monotone transform and save a compiled model",
		Long: `Trains the learned monotone transform f of DPLP (paper Sections 4.2-4.3) on
invariant data only (privacy-model §5): scores are computed on the public graph
(all protected edges removed), training pairs are non-protected (a fraction of
each node's public edges held out as positives, non-protected non-edges as
negatives), and a held-out part of the training queries chooses the epoch.
The objective is the paper's pairwise hinge on the utility the mechanism
actually samples from, f(s)/Delta_f(u) + (2/eps_p) Gumbel, with noise redrawn
every epoch. The result is compiled into an exactly monotone piecewise-linear
table (Delta_f exact) and saved with a checksum.

Variants: dplp (power basis feeding a monotone neural network), lin (power
basis alone, DPLP-Lin), umnn (monotone network on the raw score, DPLP-UMNN),
dplp-pub (adds a learned monotone h of the zero-sensitivity public score, which
costs no privacy; privacy-model §10).

--variant dplp-list trains the list-level mechanism (privacy-model §16): no
transform; each list releases the private evidence of all of the user's
candidates once with Laplace noise calibrated to its l1 bound under --unit, and
costs --eps per LIST whatever K (0 when it reads no evidence). How the public
score and the noisy evidence are combined is fitted here, on invariant data
only: the public training graph with a seeded share of its edges marked
pseudo-protected, at the noise of --eps, for lists of --fit-k (the research
harness's procedure). Triad scores only (cn, aa, ra, jc, pa).

--unit is the privacy unit recorded in the model and stated by every release:
party (default; paper Definition 1: any subset of one party's protected pairs)
or pair (one protected pair; a party with m protected pairs gets m x eps by
group privacy). The per-pick variants are calibrated to the party unit (their
Delta_s(u) bounds a whole party), which implies the same pair-unit guarantee:
they record unit party and refuse --unit pair; use --variant dplp-list for a
pair-unit calibration.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *trainOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.path, "graph", "", "edge list file")
	f.StringVar(&o.kind, "score", "", "base score: cn, aa, ra, jc, pa, node2vec, deepwalk, line, gcn, prune, struc2vec or file:PATH")
	f.StringVar(&o.variant, "variant", "dplp", "dplp, lin, umnn, dplp-pub or dplp-list")
	f.StringVar(&o.unit, "unit", "party", "privacy unit: party (Definition 1) or pair (dplp-list only)")
	f.IntVar(&o.fitK, "fit-k", 30, "dplp-list: list length the combination is fitted for")
	f.Float64Var(&o.eps, "eps", 0, "eps_p per pick the model is trained for (> 0); with dplp-list, eps per list")
	f.StringVar(&o.out, "out", "", "model file to write")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the training split, initialisation and training noise (training uses public data only)")
	f.Float64Var(&o.devFrac, "dev-frac", 0.3, "fraction of each node's public edges held out as training positives")
	f.IntVar(&o.maxQueries, "max-queries", 5000, "training queries sampled uniformly from all nodes (a seeded, public choice; 0: every node). Bounds training time on large graphs: per query, scoring costs its wedges")
	f.IntVar(&o.negPerQuery, "neg-per-query", 200, "negatives sampled per training query")
	o.pf.register(cmd, "protect-seed")
	o.tf.register(cmd)
	o.predf.register(cmd)
}

func (o *trainOptions) validate() error {
	var err error
	if o.spec, err = predict.Parse(o.kind); err != nil {
		return err
	}
	if o.u, err = privunit.Parse(o.unit); err != nil {
		return fmt.Errorf("--unit: want party or pair, got %q", o.unit)
	}
	if mv, err := model.ParseVariant(o.variant); err == nil && mv.ListLevel() {
		return o.validateList()
	}
	if o.v, err = deploy.ParseVariant(o.variant); err != nil {
		return fmt.Errorf("%w (or dplp-list)", err)
	}
	if o.u == privunit.Pair {
		return fmt.Errorf("--unit pair: variant %s is calibrated to the party unit (Delta_s(u) bounds a whole party's protected pairs), which already implies the pair-unit guarantee; train it with --unit party, or use --variant dplp-list for a pair-unit calibration", o.v)
	}
	if err := checkEps("eps", o.eps, 0); err != nil {
		return err
	}
	if o.out == "" {
		return fmt.Errorf("--out MODEL is required")
	}
	if err := checkFrac("dev-frac", o.devFrac); err != nil || o.devFrac == 0 || o.devFrac == 1 {
		return fmt.Errorf("--dev-frac must be in (0,1), got %v", o.devFrac)
	}
	if o.maxQueries < 0 || o.negPerQuery < 1 {
		return fmt.Errorf("--max-queries must be >= 0 and --neg-per-query >= 1")
	}
	o.cfg, err = o.tf.config(o.v, o.eps)
	return err
}

// validateList checks the flags of --variant dplp-list.
func (o *trainOptions) validateList() error {
	o.list = true
	if !o.spec.Triad {
		return fmt.Errorf("--variant dplp-list needs a triad score (cn, aa, ra, jc, pa), got %q", o.kind)
	}
	if err := accountant.CheckEps(o.eps); err != nil {
		return fmt.Errorf("--eps (per list): %w", err)
	}
	if o.fitK < 1 {
		return fmt.Errorf("--fit-k must be >= 1, got %d", o.fitK)
	}
	if o.out == "" {
		return fmt.Errorf("--out MODEL is required")
	}
	if err := checkFrac("dev-frac", o.devFrac); err != nil || o.devFrac == 0 || o.devFrac == 1 {
		return fmt.Errorf("--dev-frac must be in (0,1), got %v", o.devFrac)
	}
	if o.maxQueries < 0 || o.negPerQuery < 1 {
		return fmt.Errorf("--max-queries must be >= 0 and --neg-per-query >= 1")
	}
	return nil
}

// runList trains and saves a dplp-list model.
func (o *trainOptions) runList(cmd *cobra.Command, g *graph.Graph, prot *protect.Set) error {
	start := time.Now()
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt)
	defer stop()
	m, sum, err := deploy.TrainList(ctx, g, prot, deploy.ListSpec{Score: o.spec.Name, Unit: o.u, Eps: o.eps, K: o.fitK, Seed: o.seed,
		Sample: deploy.SampleConfig{DevFrac: o.devFrac, MaxQueries: o.maxQueries, NegPerQuery: o.negPerQuery}})
	if err != nil {
		return err
	}
	m.Predictor = o.predf.spec(o.spec.Name)
	m.Meta.Dataset = fmt.Sprintf("%s: public graph, %d training queries (pseudo-protected)", o.path, sum.TrainQueries)
	if err := model.Save(o.out, m); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	l := m.List
	fmt.Fprintf(w, "model %s: score %s, variant %s, unit %s, eps %g per list (whatever K; 0 when a list reads no evidence)\n", o.out, m.Score, m.Variant, m.Unit, l.Eps)
	fmt.Fprintf(w, "evidence %s, combination %+v (prior rho %.4g, scales %.3g/%.3g), fitted for K = %d\n", l.Evidence, l.Combine, l.Rho, l.PubScale, l.EvScale, l.FitK)
	if l.Combine.W == 0 {
		fmt.Fprintf(w, "note: the training data vetoed the evidence at this eps: every list is the public-only ranking and costs 0\n")
	}
	fmt.Fprintf(w, "training queries %d, training AUC@%d %.4f (public-only %.4f)\n", sum.TrainQueries, l.FitK, sum.Report.AUC, sum.Report.PublicAUC)
	fmt.Fprintf(w, "total time %.2f s\n", time.Since(start).Seconds())
	return nil
}

func (o *trainOptions) run(cmd *cobra.Command) error {
	g, prot, err := loadGraphMarks(cmd, o.path, &o.pf, false)
	if err != nil {
		return err
	}
	if o.list {
		return o.runList(cmd, g, prot)
	}
	errw := cmd.ErrOrStderr()
	fmt.Fprintf(errw, "training seed %d: fixes the training split, initialisation and training noise (public data only); the model is deployable, and lists released with it draw their own noise\n", o.seed)
	start := time.Now()
	pairs, err := deploy.Sample(g, prot, deploy.SampleConfig{DevFrac: o.devFrac, MaxQueries: o.maxQueries, NegPerQuery: o.negPerQuery}, randx.Derive(o.seed, 0x666974))
	if err != nil {
		return err
	}
	bar := progress.New(int64(o.cfg.Epochs), "training "+string(o.v))
	opt := deploy.Options{Config: &o.cfg, OnEpoch: func(p train.Progress) {
		bar.Add(1)
		fmt.Fprintf(errw, "epoch %3d  loss %.5f  held-out AUC %.4f\n", p.Epoch, p.Loss, p.HeldOutAUC)
	}}
	// An interrupt stops the predictor's and the transform's training
	// promptly, with an error instead of a half-written model.
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt)
	defer stop()
	// The predictor is fitted on the public training graph only.
	sc, err := o.predf.fit(ctx, o.kind, pairs.Train, pairs.Marks)
	if err != nil {
		return err
	}
	m, sum, err := deploy.Model(ctx, pairs, sc, o.spec.Name, string(o.v), o.eps, opt, o.seed)
	bar.Finish()
	if err != nil {
		return err
	}
	m.Predictor = o.predf.spec(o.spec.Name)
	m.Meta.Dataset = fmt.Sprintf("%s: public graph, %d training queries", o.path, len(pairs.Queries))
	m.Meta.Data = protect.Fingerprint(g, prot)
	if err := model.Save(o.out, m); err != nil {
		return err
	}
	o.print(cmd.OutOrStdout(), m, sum, start)
	return nil
}

// print reports the saved model and its training.
func (o *trainOptions) print(w io.Writer, m *model.Model, sum deploy.Summary, start time.Time) {
	fmt.Fprintf(w, "model %s: score %s, variant %s, eps_p %g, unit %s\n", o.out, m.Score, m.Variant, m.EpsP, m.PrivacyUnit())
	fmt.Fprintf(w, "training queries %d, epochs %d, best epoch %d, held-out AUC %.4f\n", sum.TrainQueries, sum.Epochs, sum.BestEpoch, sum.HeldOutAUC)
	fmt.Fprintf(w, "total time %.2f s (training %.2f s, %.3f s per epoch)\n", time.Since(start).Seconds(), sum.Seconds, sum.Seconds/math.Max(1, float64(sum.Epochs)))
}
