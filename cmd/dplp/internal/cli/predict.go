package cli

import (
	"context"
	"fmt"

	"github.com/dplp/dplp/cmd/dplp/internal/predflags"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/linkclf"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// predFlags configure the embedding and file predictors (cmd/dplp/internal/predflags:
// the same flags, defaults and help as the experiment configuration).
type predFlags struct{ v predflags.Values }

func (f *predFlags) register(cmd *cobra.Command) { predflags.Register(cmd.Flags(), &f.v, true) }

// spec records the predictor and the flags' options in a model.
func (f *predFlags) spec(name string) *model.PredictorSpec {
	return &model.PredictorSpec{Name: name, Feature: f.v.Feature, Dim: f.v.Dim, Epochs: f.v.Epochs, P: f.v.P, Q: f.v.Q, Lo: f.v.Lo, Hi: f.v.Hi, Seed: f.v.EmbedSeed}
}

// fromModel sets the predictor options from the model's recorded pipeline,
// so a release needs no predictor flags; a flag given with another value
// than the model's is an error (the model was not built for it). A model
// file without a recorded pipeline (older files) keeps the flags, with a
// notice.
func (f *predFlags) fromModel(cmd *cobra.Command, m *model.Model) error {
	ps := m.Predictor
	if ps == nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "notice: this model file does not record its predictor options (written by an older dplp): using the predictor flags; retrain to record them")
		return nil
	}
	if ps.Name != m.Score {
		return fmt.Errorf("model: predictor %q does not match the model's score %q", ps.Name, m.Score)
	}
	fl := cmd.Flags()
	check := func(flag string, given, recorded any) error {
		if fl.Changed(flag) && given != recorded {
			return fmt.Errorf("--%s %v conflicts with the model, trained with %v: drop the flag (the model records its predictor) or retrain", flag, given, recorded)
		}
		return nil
	}
	for _, c := range []error{
		check("feature", f.v.Feature, ps.Feature), check("dim", f.v.Dim, ps.Dim), check("emb-epochs", f.v.Epochs, ps.Epochs),
		check("n2v-p", f.v.P, ps.P), check("n2v-q", f.v.Q, ps.Q), check("lo", f.v.Lo, ps.Lo), check("hi", f.v.Hi, ps.Hi),
		check("embed-seed", f.v.EmbedSeed, ps.Seed),
	} {
		if c != nil {
			return c
		}
	}
	f.v.Feature, f.v.Dim, f.v.Epochs, f.v.P, f.v.Q, f.v.Lo, f.v.Hi, f.v.EmbedSeed = ps.Feature, ps.Dim, ps.Epochs, ps.P, ps.Q, ps.Lo, ps.Hi, ps.Seed
	return nil
}

func (f *predFlags) options(desc string) (predict.Options, error) {
	feat, err := linkclf.ParseFeature(f.v.Feature)
	if err != nil {
		return predict.Options{}, err
	}
	if f.v.Dim < 0 || f.v.Epochs < 0 {
		return predict.Options{}, fmt.Errorf("--dim and --emb-epochs must be >= 0")
	}
	for _, c := range []error{checkPos("n2v-p", f.v.P), checkPos("n2v-q", f.v.Q), checkFinite("lo", f.v.Lo), checkFinite("hi", f.v.Hi)} {
		if c != nil {
			return predict.Options{}, c
		}
	}
	if !(f.v.Hi > f.v.Lo) {
		return predict.Options{}, fmt.Errorf("--lo must be below --hi, got [%v, %v]", f.v.Lo, f.v.Hi)
	}
	o := predict.Options{Seed: f.v.EmbedSeed, Feature: feat, Dim: f.v.Dim, Epochs: f.v.Epochs, P: f.v.P, Q: f.v.Q, Lo: f.v.Lo, Hi: f.v.Hi}
	return o, nil
}

// fit builds the named predictor's scorer on g, with a progress bar for
// embedding training; cancelling ctx stops the training.
func (f *predFlags) fit(ctx context.Context, name string, g *graph.Graph, p *protect.Set) (*score.Scorer, error) {
	spec, err := predict.Parse(name)
	if err != nil {
		return nil, err
	}
	opt, err := f.options(name)
	if err != nil {
		return nil, err
	}
	if spec.Method != "" {
		fb := &fitBar{desc: "training " + spec.Method, fits: 1}
		opt.Progress = fb.update
		defer fb.finish()
	}
	return spec.Fit(ctx, g, p, opt)
}

// fitBar draws one progress bar over fits consecutive fits, each reporting
// monotone (done, total) counts through update; a count lower than the last
// one starts the next fit. Nothing is drawn unless stderr is a terminal
// (progress.Bar's methods are no-ops on nil).
type fitBar struct {
	desc      string
	fits      int
	started   bool
	bar       *progress.Bar
	fit       int // index of the current fit
	last, pos int // last done of the current fit; units shown
	total     int
}

func (b *fitBar) update(done, total int) {
	if !b.started {
		b.started, b.total = true, total
		b.bar = progress.New(int64(total)*int64(b.fits), b.desc)
	}
	if done < b.last && b.fit+1 < b.fits {
		b.fit++
		b.bar.Describe(fmt.Sprintf("%s (fit %d of %d)", b.desc, b.fit+1, b.fits))
	}
	b.last = done
	if pos := b.fit*b.total + min(done, b.total); pos > b.pos {
		b.bar.Add(pos - b.pos)
		b.pos = pos
	}
}

func (b *fitBar) finish() { b.bar.Finish() }

// evalLPOptions holds the flag values of eval-lp and, after validate, the
// parsed predictor and its options.
type evalLPOptions struct {
	path, name string
	holdout    float64
	seeds      int
	asJSON     bool
	pf         predFlags

	spec predict.Spec
	opt  predict.Options
}

func newEvalLPCmd() *cobra.Command {
	o := &evalLPOptions{}
	cmd := &cobra.Command{
		Use:   "eval-lp --graph FILE --score S [--holdout 0.1] [--seeds 3] [--json]",
		Short: "Non-private SEAL-style link-prediction evaluation of a base predictor",
		Long: `Holds out --holdout of the edges as positives and as many random non-edges as
negatives, fits the predictor on the rest (embeddings and their link classifier
included), and reports the full-list ROC-AUC, averaged over --seeds splits with
a 95% confidence interval, and the wall time. --json prints {"roc_auc_mean",
"roc_auc_ci95", "seconds", ...}. Works for every score: cn, aa, ra, jc, pa,
node2vec, deepwalk, line, gcn, prune, struc2vec, file:PATH.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *evalLPOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.path, "graph", "", "edge list file")
	f.StringVar(&o.name, "score", "", "predictor: cn, aa, ra, jc, pa, node2vec, deepwalk, line, gcn, prune, struc2vec or file:PATH")
	f.Float64Var(&o.holdout, "holdout", 0.1, "fraction of edges held out, in (0,1)")
	f.IntVar(&o.seeds, "seeds", 3, "number of random splits")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.pf.register(cmd)
}

func (o *evalLPOptions) validate() error {
	var err error
	if o.spec, err = predict.Parse(o.name); err != nil {
		return err
	}
	if !(o.holdout > 0 && o.holdout < 1) {
		return fmt.Errorf("--holdout must be in (0,1), got %v", o.holdout)
	}
	if o.seeds < 1 {
		return fmt.Errorf("--seeds must be >= 1")
	}
	o.opt, err = o.pf.options(o.name)
	return err
}

func (o *evalLPOptions) run(cmd *cobra.Command) error {
	g, _, err := loadGraph(cmd, o.path)
	if err != nil {
		return err
	}
	opt := o.opt
	if o.spec.Method != "" { // embeddings take minutes per fit on large graphs
		fb := &fitBar{desc: "eval-lp " + o.spec.Method, fits: o.seeds}
		opt.Progress = fb.update
		defer fb.finish()
	}
	res, err := predict.EvalLP(cmdContext(cmd), g, o.spec, o.holdout, o.seeds, opt)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	return printEvalLP(newPrinter(cmd.OutOrStdout(), formatTable), o.spec.Name, res)
}

// printEvalLP prints an eval-lp result as a two-column table.
func printEvalLP(p *printer, name string, res predict.LPResult) error {
	p.row("score", name)
	p.row("roc_auc_mean", fmt.Sprintf("%.4f", res.ROCAUCMean))
	if len(res.PerSeed) > 1 {
		p.row("roc_auc_ci95", fmt.Sprintf("%.4f", res.ROCAUCCI95))
	} else {
		p.row("roc_auc_ci95", "n/a (one seed)")
	}
	p.row("per seed", fmt.Sprintf("%.4f", res.PerSeed))
	p.row("seconds", fmt.Sprintf("%.2f", res.Seconds))
	return p.flush()
}
