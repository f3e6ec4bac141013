package cli

import (
	"fmt"
	"io"

	"github.com/dplp/dplp/audit"
	"github.com/dplp/dplp/audit/endtoend"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// runEndToEnd is `dplp audit --end-to-end`.
func runEndToEnd(cmd *cobra.Command, base audit.Config, kinds []string, variant string, epochs int, asJSON bool) error {
	cfg := endtoend.Default()
	cfg.Seed, cfg.Calibration = base.Seed, base.Calibration
	if cmd.Flags().Changed("graphs") {
		cfg.Graphs = base.Graphs
	}
	if cmd.Flags().Changed("k") {
		cfg.MaxK = min(base.MaxK, 3)
	}
	if cmd.Flags().Changed("eps") {
		cfg.Eps = base.Eps
	}
	if cmd.Flags().Changed("epochs") {
		cfg.Epochs = epochs
	}
	if cmd.Flags().Changed("score") {
		cfg.Kinds = cfg.Kinds[:0]
		for _, k := range kinds {
			kk, err := score.ParseKind(k)
			if err != nil {
				return err
			}
			cfg.Kinds = append(cfg.Kinds, kk)
		}
	}
	if variant != "" {
		v, err := evaluate.ParseVariant(variant)
		if err != nil {
			return err
		}
		cfg.Variant = string(v)
	}
	rep, err := endtoend.Run(cfg)
	if err != nil {
		return err
	}
	o := cmd.OutOrStdout()
	if asJSON {
		if err := printJSON(o, rep); err != nil {
			return err
		}
	} else {
		printEndToEnd(o, rep)
	}
	if !rep.Passed() {
		return exitCode(1)
	}
	return nil
}

// printEndToEnd writes the human-readable summary of an end-to-end audit.
func printEndToEnd(o io.Writer, rep *endtoend.Report) {
	fmt.Fprintf(o, "end-to-end audit: variant %s, calibration %s, eps_p %g, %d graphs (random and adversarial families)\n", rep.Variant, rep.Calibration, rep.Eps, rep.Graphs)
	fmt.Fprintf(o, "trainings %d, neighbouring graphs whose trained model changed %d\n", rep.Trainings, rep.ModelChanges)
	fmt.Fprintf(o, "utility checks %d (|q - q'| <= Delta_f, same noise scale), violations %d\n", rep.UtilityChecks, rep.UtilityViolation)
	fmt.Fprintf(o, "influence-set checks %d, violations %d\n", rep.InfluenceChecks, rep.InfluenceViol)
	fmt.Fprintf(o, "lexicographic (dplp-pub) cases %d\n", rep.LexCases)
	fmt.Fprintf(o, "list cases %d (%d with noise, %d lists), worst log-ratio %.4g against the %.4g charged for that list, violations %d\n", rep.Cases, rep.NoisyCases, rep.Lists, rep.WorstLogRatio, rep.WorstBound, rep.Violations)
	if rep.Worst != "" {
		fmt.Fprintf(o, "first failure: %s\n", rep.Worst)
	}
	if rep.Passed() {
		fmt.Fprintln(o, "PASS")
	} else {
		fmt.Fprintln(o, "FAIL")
	}
}
