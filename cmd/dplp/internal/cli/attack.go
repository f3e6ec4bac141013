package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/attack"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// attackOptions holds the flag values of the attack command and, after
// validate, the parsed attack, score, method, calibration and unit.
type attackOptions struct {
	path, scoreName, methodName, calName, attackName, unitName string
	eps                                                        float64
	k, trials, lists, sybils, calibGames, histLists            int
	seed                                                       uint64
	onePair, asJSON                                            bool
	pf                                                         protFlags

	at       attack.Kind
	kind     score.Kind
	m        calib.Method
	cal      calib.Calibration
	unit     privunit.Unit
	dplpList bool // --method dplp-list
}

func newAttackCmd() *cobra.Command {
	o := &attackOptions{}
	cmd := &cobra.Command{
		Use:   "attack --graph FILE (--protected FILE | --sigma X) --score S --method M [--unit party|pair] --eps E --k K --attack triad|sybil|no-noise --trials N",
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

Privacy unit (--unit, docs/privacy-model.md §16): party (the default,
Definition 1: any subset of one party's protected pairs) or pair (one
protected pair). The per-pick mechanisms keep their party-unit calibration
(Delta_s(u) bounds a whole party), which implies the pair-unit guarantee at
the same cost: their lists and claims are the same under both units.
--method dplp-list (the Laplace mechanism on the private evidence vector, eps
per list whatever K; attacked with its default combination, without the
training check's veto) is calibrated to its evidence bound L1(u) under the
unit, which is smaller under the pair unit; under the pair unit a secret of m
pairs is claimed m x eps per list (group privacy: use --one-pair for the
pair unit's own neighbouring graphs). Results that are not per-pick
party-unit carry "unit" (and dplp-list results eps_list and evidence_l1).

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
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	cmd.AddCommand(newAttackReportCmd())
	return cmd
}

func (o *attackOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.path, "graph", "", "edge list file")
	f.StringVar(&o.scoreName, "score", "aa", "base score: cn, aa, ra, jc or pa")
	f.StringVar(&o.methodName, "method", "exponential", "release mechanism: exponential, laplace, laplace-peeling, staircase, nonprivate, public-only, or dplp-list (list-level: --eps per list)")
	f.StringVar(&o.calName, "calibration", "rigorous", "rigorous, or reference (the authors' code; does not meet the guarantee)")
	f.StringVar(&o.unitName, "unit", "party", "privacy unit: party (Definition 1) or pair (one protected pair; recalibrates dplp-list)")
	f.Float64Var(&o.eps, "eps", 0.1, "eps_p per pick (> 0); dplp-list: eps per list")
	f.IntVar(&o.k, "k", 10, "list length K (>= 1)")
	f.StringVar(&o.attackName, "attack", "triad", "triad, sybil or no-noise")
	f.IntVar(&o.trials, "trials", 1000, "evaluated trials (games), >= 2")
	f.IntVar(&o.lists, "lists", 1, "fresh lists each observer requests per trial (each charged K x eps_p)")
	f.IntVar(&o.sybils, "sybils", 3, "sybil attack: number of fake users")
	f.BoolVar(&o.onePair, "one-pair", false, "triad, no-noise: the secret is a single protected pair {w, x}, not all of w's pairs into N(u)")
	f.IntVar(&o.calibGames, "calib-games", 0, "simulated games per hypothesis to choose the threshold (0: --trials)")
	f.IntVar(&o.histLists, "hist-lists", 0, "simulated lists per hypothesis and observer for the likelihood ratios (0: 4000)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the whole experiment (targets, simulations, trials)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.pf.register(cmd, "protect-seed")
}

func (o *attackOptions) validate() error {
	var err error
	if o.at, err = attack.ParseKind(o.attackName); err != nil {
		return err
	}
	if o.kind, err = score.ParseKind(o.scoreName); err != nil {
		return fmt.Errorf("--score: %w (the attacks support the triad scores)", err)
	}
	if o.unit, err = privunit.Parse(o.unitName); err != nil {
		return fmt.Errorf("--unit: want party or pair, got %q", o.unitName)
	}
	o.dplpList = strings.EqualFold(strings.TrimSpace(o.methodName), attack.DPLPList)
	if !o.dplpList {
		if o.m, err = calib.ParseMethod(o.methodName); err != nil {
			return err
		}
	}
	if o.cal, err = calib.ParseCalibration(o.calName); err != nil {
		return err
	}
	if o.dplpList && o.cal != calib.Rigorous {
		return fmt.Errorf("--calibration %s: dplp-list is calibrated to its evidence bound L1(u) under --unit; it has no reference calibration", o.cal)
	}
	if o.m != calib.NonPrivate && o.m != calib.PublicOnly {
		if err := checkEps("eps", o.eps, 0); err != nil {
			return err
		}
	}
	switch {
	case o.k < 1:
		return fmt.Errorf("--k must be >= 1, got %d", o.k)
	case o.trials < 2:
		return fmt.Errorf("--trials must be >= 2, got %d", o.trials)
	case o.lists < 1:
		return fmt.Errorf("--lists must be >= 1, got %d", o.lists)
	case o.sybils < 1 || o.sybils > 64:
		return fmt.Errorf("--sybils must be in [1,64], got %d", o.sybils)
	case o.calibGames < 0 || o.histLists < 0:
		return fmt.Errorf("--calib-games and --hist-lists must be >= 0")
	}
	return nil
}

func (o *attackOptions) run(cmd *cobra.Command) error {
	g, prot, err := loadGraphMarks(cmd, o.path, &o.pf, false)
	if err != nil {
		return err
	}
	if o.cal == calib.Reference {
		fmt.Fprintln(cmd.ErrOrStderr(), calib.Warning)
	}
	cfg := attack.Config{Attack: o.at, Method: o.m, Calibration: o.cal, Score: o.kind, Eps: o.eps, Unit: o.unit, DPLPList: o.dplpList,
		K: o.k, Lists: o.lists, Trials: o.trials, Sybils: o.sybils, OnePair: o.onePair, CalibGames: o.calibGames, HistLists: o.histLists, Seed: o.seed}
	bar := progress.New(int64(o.trials), "attack "+o.at.String())
	cfg.OnTrial = func() { bar.Add(1) }
	res, err := attack.Run(g, prot, cfg)
	bar.Finish()
	if err != nil {
		return err
	}
	res.Graph = o.path
	out := cmd.OutOrStdout()
	if o.asJSON {
		return printJSON(out, res)
	}
	return o.print(out, res)
}

// print writes the human-readable summary of an attack result.
func (o *attackOptions) print(out io.Writer, res *attack.Result) error {
	bw := bufio.NewWriter(out)
	epsDesc := fmt.Sprintf("eps_p %g", o.eps)
	switch {
	case o.dplpList:
		epsDesc = fmt.Sprintf("eps %g per list (whatever K)", o.eps)
	case o.m == calib.NonPrivate || o.m == calib.PublicOnly:
		epsDesc = "no noise"
	}
	unit := ""
	if res.Unit != "" { // per-pick party-unit results keep their header
		unit = ", " + res.Unit + " unit"
	}
	fmt.Fprintf(bw, "attack %s on %s: %s, %s, %s, K %d, %d list(s) per observer%s; %s\n",
		res.Attack, o.path, res.Release(), res.Score, epsDesc, o.k, o.lists, unit, randx.Source{Seeded: true, Seed: o.seed})
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
}

func newAttackReportCmd() *cobra.Command {
	var plotBase, csvPath, title string
	cmd := &cobra.Command{
		Use:   "report RESULTS.jsonl ... [--plot BASE] [--csv FILE]",
		Short: "Tabulate (markdown) and plot saved attack results",
		Long: `Reads files of "dplp attack --json" outputs (one object per line), prints a
markdown table (one row per graph, release, unit and eps; per attack
"accuracy / eps_lb (claim)", * = claim not proven, bold = eps_lb above the
claim; a unit column when some result is not under the party unit), and
optionally writes all results as CSV (with unit and eps_list columns) and a
plot of eps_lb against the claimed eps (BASE.png and BASE.svg; results without
a claim are left out).`,
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
