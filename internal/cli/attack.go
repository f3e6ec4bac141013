package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/attack"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

func newAttackCmd() *cobra.Command {
	var (
		path, scoreName, methodName, calName, attackName string
		eps                                              float64
		k, trials, lists, sybils, calibGames, histLists  int
		seed                                             uint64
		onePair, asJSON                                  bool
		pf                                               protFlags
	)
	cmd := &cobra.Command{
		Use:   "attack --graph FILE (--protected FILE | --sigma X) --score S --method M --eps E --k K --attack triad|sybil|no-noise --trials N",
		Short: "Measure what an attacker learns: distinguishing games with an empirical eps lower bound",
		Long: `Plays a distinguishing game N times against the deployed release path (the
scorer, calibration and sampler that recommend uses). Each trial draws a secret
bit b; the attacker reads released top-K lists computed on G_b, where G_0 and
G_1 differ only in protected pairs not incident to the observing users
(neighbouring graphs, privacy-model §2), and guesses b with a likelihood-ratio
test on the position of the target candidate in each list, calibrated on its
own simulated copies of G_0 and G_1 (independent randomness; the threshold is
chosen on simulated games, never on the evaluated trials).

Attacks:
  triad     a query user u; the secret is whether a non-neighbour w has its
            protected pairs to u's neighbours (completing triads raises
            s(u, w)). Target chosen from public data and marks.
  sybil     S fake users (--sybils) linked to each other and to a node a read
            their own lists to learn whether the protected pair {a, c} exists.
  no-noise  triad attack on users with no protected edge of their own, for
            whom the reference calibration releases the exact top-K.

Output: TPR and FPR with Clopper-Pearson 95% intervals, accuracy, the claimed
eps of the whole observation (lists x observers x per-list guarantee; none for
nonprivate; marked unproven for one-shot Laplace/staircase with K > 1 and for
the reference calibration) and the empirical lower bound
eps_lb = max(ln(TPR_lo/FPR_hi), ln((1-FPR_hi)/(1-TPR_lo))), which is below the
true eps with probability >= 95%: eps_lb above the claim refutes the claim.
With --json, one object with keys attack, method, calibration, trials, tpr,
fpr, accuracy, eps_claimed (null: no claim), eps_lower_bound and more.

"dplp attack report RESULTS.jsonl ..." tabulates and plots saved --json outputs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			at, err := attack.ParseKind(attackName)
			if err != nil {
				return err
			}
			kind, err := score.ParseKind(scoreName)
			if err != nil {
				return fmt.Errorf("--score: %w (the attacks support the triad scores)", err)
			}
			m, err := calib.ParseMethod(methodName)
			if err != nil {
				return err
			}
			cal, err := calib.ParseCalibration(calName)
			if err != nil {
				return err
			}
			if m != calib.NonPrivate && m != calib.PublicOnly {
				if err := checkEps("eps", eps, 0); err != nil {
					return err
				}
			}
			switch {
			case k < 1:
				return fmt.Errorf("--k must be >= 1, got %d", k)
			case trials < 2:
				return fmt.Errorf("--trials must be >= 2, got %d", trials)
			case lists < 1:
				return fmt.Errorf("--lists must be >= 1, got %d", lists)
			case sybils < 1 || sybils > 64:
				return fmt.Errorf("--sybils must be in [1,64], got %d", sybils)
			case calibGames < 0 || histLists < 0:
				return fmt.Errorf("--calib-games and --hist-lists must be >= 0")
			}
			g, _, err := loadGraph(cmd, path)
			if err != nil {
				return err
			}
			prot, err := pf.load(g, false)
			if err != nil {
				return err
			}
			if cal == calib.Reference {
				fmt.Fprintln(cmd.ErrOrStderr(), calib.Warning)
			}
			cfg := attack.Config{Attack: at, Method: m, Calibration: cal, Score: kind, Eps: eps, K: k, Lists: lists,
				Trials: trials, Sybils: sybils, OnePair: onePair, CalibGames: calibGames, HistLists: histLists, Seed: seed}
			bar := progress.New(int64(trials), "attack "+at.String())
			cfg.OnTrial = func() { bar.Add(1) }
			res, err := attack.Run(g, prot, cfg)
			bar.Finish()
			if err != nil {
				return err
			}
			res.Graph = path
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(res)
			}
			bw := bufio.NewWriter(out)
			epsDesc := fmt.Sprintf("eps_p %g", eps)
			if m == calib.NonPrivate || m == calib.PublicOnly {
				epsDesc = "no noise"
			}
			fmt.Fprintf(bw, "attack %s on %s: %s, %s, %s, K %d, %d list(s) per observer; %s\n",
				res.Attack, path, res.Release(), res.Score, epsDesc, k, lists, randx.Source{Seeded: true, Seed: seed})
			fmt.Fprintf(bw, "target: observers %s; candidate %s; secret pairs", strings.Join(res.Target.Observers, " "), res.Target.Candidate)
			for _, p := range res.Target.Pairs {
				fmt.Fprintf(bw, " {%s, %s}", p[0], p[1])
			}
			fmt.Fprintln(bw)
			fmt.Fprintf(bw, "trials %d (%d with the secret pairs): TPR %.3f [%.3f, %.3f], FPR %.3f [%.3f, %.3f] (Clopper-Pearson 95%%), accuracy %.3f\n",
				res.Trials, res.Positives, res.TPR, res.TPRCI[0], res.TPRCI[1], res.FPR, res.FPRCI[0], res.FPRCI[1], res.Accuracy)
			verdict := "no claim to test"
			claimed := "none"
			if res.EpsClaimed != nil {
				claimed = fmt.Sprintf("%g (%s)", *res.EpsClaimed, res.ClaimNote)
				verdict = "consistent with the claim"
				if res.ExceedsClaim {
					verdict = "CLAIM REFUTED at 95% confidence"
				}
			}
			fmt.Fprintf(bw, "eps lower bound (95%%): %.3f; claimed: %s; %s\n", res.EpsLowerBound, claimed, verdict)
			return bw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "graph", "", "edge list file")
	f.StringVar(&scoreName, "score", "aa", "base score: cn, aa, ra, jc or pa")
	f.StringVar(&methodName, "method", "exponential", "release mechanism: exponential, laplace, laplace-peeling, staircase, nonprivate or public-only")
	f.StringVar(&calName, "calibration", "rigorous", "rigorous, or reference (the authors' code; does not meet the guarantee)")
	f.Float64Var(&eps, "eps", 0.1, "eps_p per pick (> 0)")
	f.IntVar(&k, "k", 10, "list length K (>= 1)")
	f.StringVar(&attackName, "attack", "triad", "triad, sybil or no-noise")
	f.IntVar(&trials, "trials", 1000, "evaluated trials (games), >= 2")
	f.IntVar(&lists, "lists", 1, "fresh lists each observer requests per trial (each charged K x eps_p)")
	f.IntVar(&sybils, "sybils", 3, "sybil attack: number of fake users")
	f.BoolVar(&onePair, "one-pair", false, "triad, no-noise: the secret is a single protected pair {w, x}, not all of w's pairs into N(u)")
	f.IntVar(&calibGames, "calib-games", 0, "simulated games per hypothesis to choose the threshold (0: --trials)")
	f.IntVar(&histLists, "hist-lists", 0, "simulated lists per hypothesis and observer for the likelihood ratios (0: 4000)")
	f.Uint64Var(&seed, "seed", 1, "seed of the whole experiment (targets, simulations, trials)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	pf.register(cmd, "protect-seed")
	cmd.AddCommand(newAttackReportCmd())
	return cmd
}

func newAttackReportCmd() *cobra.Command {
	var plotBase, csvPath, title string
	cmd := &cobra.Command{
		Use:   "report RESULTS.jsonl ... [--plot BASE] [--csv FILE]",
		Short: "Tabulate (markdown) and plot saved attack results",
		Long: `Reads files of "dplp attack --json" outputs (one object per line), prints a
markdown table (one row per graph, release and eps_p; per attack
"accuracy / eps_lb (claim)", * = claim not proven, bold = eps_lb above the
claim), and optionally writes all results as CSV and a plot of eps_lb against
the claimed eps (BASE.png and BASE.svg; results without a claim are left out).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var results []*attack.Result
			for _, a := range args {
				f, err := os.Open(a)
				if err != nil {
					return err
				}
				dec := json.NewDecoder(f)
				for dec.More() {
					var r attack.Result
					if err := dec.Decode(&r); err != nil {
						f.Close()
						return fmt.Errorf("%s: %w", a, err)
					}
					results = append(results, &r)
				}
				f.Close()
			}
			if len(results) == 0 {
				return fmt.Errorf("no results in %s", strings.Join(args, ", "))
			}
			if csvPath != "" {
				f, err := os.Create(csvPath)
				if err != nil {
					return err
				}
				if err := attack.WriteCSV(f, results); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if plotBase != "" {
				if err := attack.Plot(results, plotBase, title); err != nil {
					return err
				}
			}
			return attack.WriteMarkdown(cmd.OutOrStdout(), results)
		},
	}
	cmd.Flags().StringVar(&plotBase, "plot", "", "write the plot to BASE.png and BASE.svg")
	cmd.Flags().StringVar(&csvPath, "csv", "", "write every result as a CSV row")
	cmd.Flags().StringVar(&title, "title", "Measured privacy: eps lower bound vs claim", "plot title")
	return cmd
}
