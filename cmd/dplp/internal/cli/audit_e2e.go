package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/dplp/dplp/audit/endtoend"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// endToEndConfig builds the end-to-end audit's configuration from the
// flags: endtoend.Default() with the flags the user set. --variant selects
// one variant (default: dplp and dplp-pub), --sampler exact|float the
// sampler (default: deployment's, exact), --model FILE audits that model
// (its score, variant and eps_p; --variant, a --score without the model's
// score, a different --eps, a non-triad model and the reference calibration
// are refused).
func (o *auditOptions) endToEndConfig(cmd *cobra.Command) (endtoend.Config, error) {
	base, flags := o.cfg, cmd.Flags()
	cfg := endtoend.Default()
	cfg.Seed, cfg.Calibration = base.Seed, base.Calibration
	if flags.Changed("graphs") {
		cfg.Graphs = base.Graphs
	}
	if flags.Changed("k") {
		if base.MaxK < 1 || base.MaxK > 3 {
			return cfg, fmt.Errorf("--k must be in [1,3] with --end-to-end, got %d", base.MaxK)
		}
		cfg.MaxK = base.MaxK
	}
	if flags.Changed("eps") {
		cfg.Eps = base.Eps
	}
	if flags.Changed("epochs") {
		cfg.Epochs = o.epochs
	}
	if flags.Changed("toggles") {
		if o.toggles < 0 {
			return cfg, fmt.Errorf("--toggles must be >= 0 (0: all), got %d", o.toggles)
		}
		cfg.Toggles = o.toggles
	}
	if flags.Changed("sampler") {
		switch o.sampler {
		case endtoend.SamplerExact, endtoend.SamplerFloat:
			cfg.Sampler = o.sampler
		default:
			return cfg, fmt.Errorf("--sampler must be float or exact, got %q", o.sampler)
		}
	}
	if flags.Changed("score") {
		cfg.Kinds = cfg.Kinds[:0]
		for _, k := range o.kinds {
			kk, err := score.ParseKind(k)
			if err != nil {
				return cfg, err
			}
			cfg.Kinds = append(cfg.Kinds, kk)
		}
	}
	if o.variant != "" {
		v, err := evaluate.ParseVariant(o.variant)
		if err != nil {
			return cfg, err
		}
		cfg.Variants = []string{string(v)}
	}
	if o.modelPath == "" {
		return cfg, nil
	}
	// --model FILE: audit that model, or refuse.
	switch {
	case o.variant != "":
		return cfg, fmt.Errorf("give either --variant or --model, not both (--model audits the model's own variant)")
	case cfg.Calibration == calib.Reference:
		return cfg, fmt.Errorf("the reference calibration releases raw scores: it cannot audit --model")
	}
	m, err := model.Load(o.modelPath)
	if err != nil {
		return cfg, err
	}
	if _, err := score.ParseKind(m.Score); err != nil {
		return cfg, fmt.Errorf("--end-to-end --model: %s's predictor %q is not a triad score (cn, aa, ra, jc, pa): the end-to-end audit rebuilds the predictor on its own small graphs and cannot refit an embedding or a score file; audit its table with `dplp audit --model %s` (without --end-to-end)", o.modelPath, m.Score, o.modelPath)
	}
	if flags.Changed("score") && (len(o.kinds) != 1 || !strings.EqualFold(strings.TrimSpace(o.kinds[0]), m.Score)) {
		return cfg, fmt.Errorf("--end-to-end --model: the model's score is %s; --score %s does not select it", m.Score, strings.Join(o.kinds, ","))
	}
	if flags.Changed("eps") && base.Eps != m.EpsP {
		return cfg, fmt.Errorf("--end-to-end --model: the model releases at eps_p %g and its lists are charged at it; --eps %g would audit another release", m.EpsP, base.Eps)
	}
	cfg.Model, cfg.Eps = m, 0
	return cfg, nil
}

// runEndToEnd is `dplp audit --end-to-end`.
func (o *auditOptions) runEndToEnd(cmd *cobra.Command) error {
	cfg, err := o.endToEndConfig(cmd)
	if err != nil {
		return err
	}
	rep, err := endtoend.Run(cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.asJSON {
		if err := printJSON(out, rep); err != nil {
			return err
		}
	} else {
		printEndToEnd(out, rep, o.modelPath)
	}
	if !rep.Passed() {
		return exitCode(1)
	}
	return nil
}

// printEndToEnd writes the human-readable summary of an end-to-end audit.
func printEndToEnd(o io.Writer, rep *endtoend.Report, modelPath string) {
	what := "variants " + strings.Join(rep.Variants, ", ")
	if rep.Model != "" {
		what = fmt.Sprintf("model %s (variant %s, id %s)", modelPath, rep.Variant, rep.Model)
	}
	fmt.Fprintf(o, "end-to-end audit: %s, calibration %s, eps_p %g, %d graphs (random and adversarial families, each written as text and loaded through snapshot.Read)\n", what, rep.Calibration, rep.Eps, rep.Graphs)
	if rep.TrainingInvariance == "checked" {
		fmt.Fprintf(o, "trainings %d, neighbouring graphs whose trained model changed %d\n", rep.Trainings, rep.ModelChanges)
	} else {
		fmt.Fprintf(o, "training invariance: %s\n", rep.TrainingInvariance)
	}
	fmt.Fprintf(o, "representation checks %d (lines reordered, endpoints swapped, first appearances reversed: same ids, model and seeded lists), neighbouring graphs loaded from text %d (same ids and marks), violations %d\n",
		rep.RepresentationChecks, rep.NeighbourLoads, rep.RepresentationViolations)
	fmt.Fprintf(o, "re-serve checks %d (private requests on a store holding seeded releases: none comes back), violations %d\n", rep.ReserveChecks, rep.ReserveViolations)
	fmt.Fprintf(o, "utility checks %d (|q - q'| <= Delta_f, same noise scale), violations %d\n", rep.UtilityChecks, rep.UtilityViolation)
	fmt.Fprintf(o, "influence-set checks %d, violations %d\n", rep.InfluenceChecks, rep.InfluenceViol)
	fmt.Fprintf(o, "lexicographic (dplp-pub) cases %d\n", rep.LexCases)
	sampler := "the exact base-2 sampler's exact probabilities, as deployed"
	if rep.Sampler == endtoend.SamplerFloat {
		sampler = "the float Gumbel sampler's probabilities"
	}
	fmt.Fprintf(o, "list cases %d (%d with noise, %d lists; %s), worst log-ratio %.4g against the %.4g charged for that list, violations %d\n", rep.Cases, rep.NoisyCases, rep.Lists, sampler, rep.WorstLogRatio, rep.WorstBound, rep.Violations)
	if rep.Worst != "" {
		fmt.Fprintf(o, "first failure: %s\n", rep.Worst)
	}
	if rep.Passed() {
		fmt.Fprintln(o, "PASS")
	} else {
		fmt.Fprintln(o, "FAIL")
	}
}
