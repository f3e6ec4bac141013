package cli

import (
	"fmt"
	"math"
	"time"

	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/predict"
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

func newTrainCmd() *cobra.Command {
	var (
		path, kind, variant, out string
		eps                      float64
		seed                     uint64
		devFrac                  float64
		maxQueries, negPerQuery  int
		pf                       protFlags
		tf                       trainFlags
		predf                    predFlags
	)
	cmd := &cobra.Command{
		Use:   "train --graph FILE (--protected FILE | --sigma X) --score S --variant dplp|lin|umnn|dplp-pub --eps E --out MODEL",
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
costs no privacy; privacy-model §10).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := predict.Parse(kind)
			if err != nil {
				return err
			}
			v, err := deploy.ParseVariant(variant)
			if err != nil {
				return err
			}
			if err := checkEps("eps", eps, 0); err != nil {
				return err
			}
			if out == "" {
				return fmt.Errorf("--out MODEL is required")
			}
			if err := checkFrac("dev-frac", devFrac); err != nil || devFrac == 0 || devFrac == 1 {
				return fmt.Errorf("--dev-frac must be in (0,1), got %v", devFrac)
			}
			if maxQueries < 0 || negPerQuery < 1 {
				return fmt.Errorf("--max-queries must be >= 0 and --neg-per-query >= 1")
			}
			cfg, err := tf.config(v, eps)
			if err != nil {
				return err
			}
			g, _, err := loadGraph(cmd, path)
			if err != nil {
				return err
			}
			prot, err := pf.load(g, false)
			if err != nil {
				return err
			}
			errw := cmd.ErrOrStderr()
			fmt.Fprintf(errw, "training seed %d: fixes the training split, initialisation and training noise (public data only); the model is deployable, and lists released with it draw their own noise\n", seed)
			start := time.Now()
			pairs, err := deploy.Sample(g, prot, deploy.SampleConfig{DevFrac: devFrac, MaxQueries: maxQueries, NegPerQuery: negPerQuery}, randx.Derive(seed, 0x666974))
			if err != nil {
				return err
			}
			bar := progress.New(int64(cfg.Epochs), "training "+string(v))
			opt := deploy.Options{Config: &cfg, OnEpoch: func(epoch int, loss, auc float64) {
				bar.Add(1)
				fmt.Fprintf(errw, "epoch %3d  loss %.5f  held-out AUC %.4f\n", epoch, loss, auc)
			}}
			// The predictor is fitted on the public training graph only.
			sc, err := predf.fit(kind, pairs.Train, pairs.Marks)
			if err != nil {
				return err
			}
			m, sum, err := deploy.Model(pairs, sc, spec.Name, string(v), eps, opt, seed)
			bar.Finish()
			if err != nil {
				return err
			}
			m.Predictor = predf.spec(spec.Name)
			m.Meta.Dataset = fmt.Sprintf("%s: public graph, %d training queries", path, len(pairs.Queries))
			if err := model.Save(out, m); err != nil {
				return err
			}
			o := cmd.OutOrStdout()
			fmt.Fprintf(o, "model %s: score %s, variant %s, eps_p %g\n", out, m.Score, m.Variant, m.EpsP)
			fmt.Fprintf(o, "training queries %d, epochs %d, best epoch %d, held-out AUC %.4f\n", sum.TrainQueries, sum.Epochs, sum.BestEpoch, sum.HeldOutAUC)
			fmt.Fprintf(o, "total time %.2f s (training %.2f s, %.3f s per epoch)\n", time.Since(start).Seconds(), sum.Seconds, sum.Seconds/math.Max(1, float64(sum.Epochs)))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "graph", "", "edge list file")
	f.StringVar(&kind, "score", "", "base score: cn, aa, ra, jc, pa, node2vec, deepwalk, line, gcn, prune, struc2vec or file:PATH")
	f.StringVar(&variant, "variant", "dplp", "dplp, lin, umnn or dplp-pub")
	f.Float64Var(&eps, "eps", 0, "eps_p the model is trained for (> 0)")
	f.StringVar(&out, "out", "", "model file to write")
	f.Uint64Var(&seed, "seed", 1, "seed of the training split, initialisation and training noise (training uses public data only)")
	f.Float64Var(&devFrac, "dev-frac", 0.3, "fraction of each node's public edges held out as training positives")
	f.IntVar(&maxQueries, "max-queries", 5000, "training queries sampled uniformly from all nodes (a seeded, public choice; 0: every node). Bounds training time on large graphs: per query, scoring costs its wedges")
	f.IntVar(&negPerQuery, "neg-per-query", 200, "negatives sampled per training query")
	pf.register(cmd, "protect-seed")
	tf.register(cmd)
	predf.register(cmd)
	return cmd
}
