package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/research/experiment"
	"github.com/spf13/cobra"
)

func newExperimentCmd() *cobra.Command {
	var flags *expFlags
	cmd := &cobra.Command{
		Use:   "experiment [--preset table1|table1-emb|theory | --config FILE] [grid flags] [--unit party,pair] [--out DIR]",
		Short: "Run a grid of experiments: datasets x scores x methods x eps (or budgets) x sigma x K x seeds",
		Long:  experimentLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runExperiment(cmd, flags) },
	}
	flags = addExpFlags(cmd.Flags())
	return cmd
}

// experimentLong is the experiment command's help text.
const experimentLong = `Runs the paper's protocol over a grid of cells (dataset, score, method,
calibration, protocol, eps_p, sigma, K, seed). For each split (dataset, protocol,
sigma, seed) it holds out test pairs, draws protection marks, trains DPLP's
transforms when a DPLP method is asked for, and releases a top-K list for every
query with every method. Writes to --out (default experiment-out): results.json (one object per cell with
keys dataset, score, method, calibration, protocol, eps, sigma, k, seed,
auc_at_k, precision_at_k, recall_at_k, ndcg_at_k, map_at_k, mrr, hits_at_k,
queries), results.csv, summary.md (Table 1-shaped tables with 95% confidence
intervals over seeds; n/a with one seed) and plots/ (PNG and SVG: AUC@K vs eps_p, vs sigma, vs the
power a of f(s) = s^a). Finished cells are cached under --out/cache, so an
interrupted run resumes. Scores are any predictor (cn, aa, ra, jc, pa,
node2vec, deepwalk, line, gcn, prune, struc2vec, file:PATH). Presets: table1
(the paper's Table 1 setting on the five graphs of --data-dir, triad scores),
table1-emb (the same for the six embedding predictors; slow) and theory
(latent-space checks of the paper's Section 5). Results of --calibration reference do NOT meet the stated guarantee.
Methods lin and umnn are accepted for dplp-lin and dplp-umnn. eps_p values
must lie in [1e-06, 1e+06]. Instead of --eps (per pick), --budget gives the
budget per list: pure:EPS (eps_p = EPS/K) or approx:EPS,DELTA (the largest
eps_p whose K picks compose to (EPS, DELTA)-DP under zCDP, accountant's
MaxEpsPerPick); each cell then also records its budget (key and column
budget) next to the derived eps_p. DPLP-pub is charged only for its random
picks, so its spend is at most the budget. Output files are replaced atomically and must be
regular files. Everything is seeded (seeds 0..N-1) and reproducible: embedding
predictors train deterministically, so equal seeds give equal results on any
number of cores.

Privacy units (--unit party,pair; docs/privacy-model.md §16): party is Definition 1
(any subset of one party's protected pairs), pair is one protected pair; a party
with m pairs gets m x eps under the pair unit. The list-level methods dplp-list
(the private evidence of every candidate released once with Laplace noise on its
l1 bound, the list ranked by post-processing; one charge eps per list whatever K),
dplp-list-gauss (the same with Gaussian noise on its l2 bound: rho = eps^2/2 zCDP
per list, no pure-DP bound; eps_list is then sqrt(2 rho), the zCDP axis of Laplace)
and perturb-once (randomised response on every protected pair, then the unchanged
scorer; eps per pair once, eps x the largest party under the party unit), joint-em
(the joint exponential mechanism of Gillenwater et al. 2022 over length-K
sequences) and oneshot-topk (one-shot Gumbel top-K, equal to K peeled exponential
mechanisms at eps/K), which select the list from the public score plus the private
evidence calibrated to the evidence's per-candidate bound under the unit, take
--eps as the cost of a whole list and are calibrated for the unit of their cell.
The per-pick mechanisms take --eps per pick and are calibrated for the unit of
their cell too: under pair, to the pair-unit per-candidate bound (1 for CN)
instead of Delta_s(u); the reference calibration runs under party only. Rows
carry unit, eps_list (mean eps charged per list) and gap_recovered ((AUC@K -
public-only) / (non-private - public-only), same dataset, score, sigma, K, seed).`

// runExperiment runs the grid the flags describe, with a warning for every
// reproduction mode that carries no guarantee.
func runExperiment(cmd *cobra.Command, flags *expFlags) error {
	cfg, err := flags.config()
	if err != nil {
		return err
	}
	if flags.out == "" {
		return fmt.Errorf("--out DIR is required")
	}
	for _, c := range cfg.Calibrations {
		if c == "reference" {
			fmt.Fprintln(cmd.ErrOrStderr(), calib.Warning)
		}
	}
	for _, p := range cfg.Protocols {
		if p == "reference" {
			fmt.Fprintln(cmd.ErrOrStderr(), "WARNING: the reference protocol reads protected data (the authors' split and training pairs): no method under it carries the stated guarantee, whatever the calibration")
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	opts := experiment.Options{Log: cmd.ErrOrStderr()}
	if progress.Enabled() {
		opts.Progress = func(label string, total int) experiment.Tracker { return progress.New(int64(total), label) }
	}
	if err := experiment.RunWith(ctx, cfg, flags.out, opts); err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (results.json, results.csv, summary.md, plots/) in %.1f s; randomness: seeded generators (seeds 0..%d), reproducible\n",
		flags.out, time.Since(start).Seconds(), max(cfg.Seeds, 1)-1)
	return err
}
