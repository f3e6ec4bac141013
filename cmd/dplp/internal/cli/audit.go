package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dplp/dplp/audit"
	"github.com/dplp/dplp/audit/endtoend"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/mech/topk"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// auditOptions holds the flag values of the audit command; cfg collects the
// audit configuration the flags and validate build.
type auditOptions struct {
	cal                string
	kinds, methods     []string
	asJSON, verbose    bool
	e2e                bool
	sampler            string
	variant, modelPath string
	epochs, toggles    int
	mechanisms, units  []string // --mechanism, --unit: the list-level audit (--unit: also the per-pick calibration)
	neighbours         string   // --neighbours: per-pick audit's neighbouring graphs (negative control)
	cfg                audit.Config
}

func newAuditCmd() *cobra.Command {
	o := &auditOptions{cfg: audit.Default()}
	cmd := &cobra.Command{
		Use:   "audit [flags]",
		Short: "Exact privacy audit of the mechanisms on small random graphs",
		Long: `Runs the exact audit of privacy-model §8. On seeded random graphs of 6-9 nodes
with protected edges and non-edges, for every query u, every other node w and
every subset of w's toggleable protected pairs, it runs each mechanism on G and
on the u-neighbouring G' and compares the exact probability of every released
list (ordered lists up to --k for the exponential mechanism, K <= 2 for Laplace
peeling, K = 1 for one-shot Laplace and staircase) with the mechanism's claimed
bound. It also checks |s - s'| <= Delta_s, that s_pub, Delta_s and S_max are
unchanged, and chi-square tests of each sampler against the exact distribution.

Prints cases, the worst log-ratio, its bound, violations and the worst case
(graph, u, w, toggled pairs). --json prints one object with keys cases,
worst_log_ratio, bound, violations (and details). Exit status 1 when anything
fails. --calibration reference audits the authors' calibration, which fails.
--variant V (or --model FILE) audits DPLP's learned utilities: the compiled
monotone table f (plus h(s_pub) for dplp-pub) with Delta_f computed exactly.

--end-to-end audits the deployed pipeline instead (package audit/endtoend):
for random graphs and adversarial families (a hub protected to all of u's
neighbours, stars, cliques, degree-1 queries, degree-2 neighbours, many
protected non-edges, nodes whose only edges are protected), each written as
text (string labels, an edge list whose first line is a protected edge, a
marks file, a node list) and loaded through the deployment loader
(snapshot.Read), it trains the model on G and on every neighbouring G' (G'
written as text too and loaded: same ids and marks required; the tables must
be bit-identical), runs the real release path for every user on both, checks
|q - q'| <= Delta_f per candidate, the exposure influence sets, and that the
exact probability of every list of length <= --k (default 3) moves by at most
the eps the ledger charges for it. The probabilities are those of the sampler
deployment uses (the exact base-2 sampler; --sampler float audits the float
one). Representation checks: G written with its lines reordered, its
endpoints swapped and its first appearances reversed must load to the same
ids, train a bit-identical model and release identical seeded lists. The
re-serve check: a seeded release in a (temporary SQLite) ledger must never
come back to a private request. By default every triad score, the two bounded
scores and the variants dplp and dplp-pub are audited (--variant V audits V
only). --model FILE releases that model (its score, variant and eps_p) on
every graph instead of training and reports training invariance as not run;
a model that is not a triad-score model is refused. JSON keys include
representation_checks, representation_violations, reserve_checks,
reserve_violations, sampler and training_invariance.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.cfg.Calibration, err = calib.ParseCalibration(o.cal); err != nil {
				return err
			}
			if o.e2e {
				return o.runEndToEnd(cmd)
			}
			if len(o.mechanisms) > 0 {
				return o.runList(cmd)
			}
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.register(cmd)
	return cmd
}

func (o *auditOptions) register(cmd *cobra.Command) {
	f, cfg := cmd.Flags(), &o.cfg
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the random graphs and sampler tests")
	f.IntVar(&cfg.Graphs, "graphs", cfg.Graphs, "random graphs per score")
	f.IntVar(&cfg.MinNodes, "min-nodes", cfg.MinNodes, "smallest graph")
	f.IntVar(&cfg.MaxNodes, "max-nodes", cfg.MaxNodes, "largest graph (<= 12)")
	f.Float64Var(&cfg.Eps, "eps", cfg.Eps, "eps_p per pick (> 0)")
	f.IntVar(&cfg.MaxK, "k", cfg.MaxK, "longest list audited for the exponential mechanism (1-4)")
	f.IntVar(&cfg.ChiSamples, "chi-samples", cfg.ChiSamples, "draws per sampler chi-square test (0 disables)")
	f.StringVar(&o.cal, "calibration", "rigorous", "rigorous (default) or reference (the authors' code; fails)")
	f.StringSliceVar(&o.kinds, "score", []string{"cn", "aa", "ra", "jc", "pa"}, "base scores to audit")
	f.StringSliceVar(&o.methods, "method", []string{"exponential", "laplace-peeling", "laplace", "staircase", "public-only"}, "mechanisms to audit")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	f.BoolVar(&o.verbose, "verbose", false, "also print every chi-square test")
	f.StringVar(&o.variant, "variant", "", "audit learned utilities: train this DPLP variant (dplp, lin, umnn, dplp-pub) per score on a synthetic graph and audit its compiled table")
	f.StringVar(&o.modelPath, "model", "", "audit the compiled transform of a saved model (its score only)")
	f.IntVar(&o.epochs, "epochs", 5, "with --variant: training epochs")
	f.StringVar(&o.sampler, "sampler", "float", "float (the mechanisms as released by default) or exact (the exact base-2 exponential mechanism of mech/exact, audited against K x its proven eps per pick); with --end-to-end the default is the deployed sampler (exact)")
	f.BoolVar(&o.e2e, "end-to-end", false, "audit the whole deployed pipeline: graphs written as text and loaded (representation checks), training on every neighbouring graph (bit-identical models required), the release path's utilities, exact list probabilities of the deployed sampler against the charged cost, influence sets, the re-serve layer (--variant V audits V only, default dplp and dplp-pub; --model FILE audits that model; --graphs, --k (<= 3), --eps, --seed, --score, --sampler, --toggles apply)")
	f.IntVar(&o.toggles, "toggles", endtoend.Default().Toggles, "with --end-to-end: neighbouring graphs audited per graph (0: all)")
	f.StringSliceVar(&o.mechanisms, "mechanism", nil, "audit the list-level mechanisms instead (docs/privacy-model.md §16): dplp-list, dplp-list-gauss (the Gaussian release, audited against its rho, §16.9), perturb-once, joint-em and/or oneshot-topk (§16.8; every list of length K <= --k, also on mixed-hub graphs), under every --unit; --graphs, --min-nodes, --max-nodes, --eps, --seed, --k and --score apply")
	f.StringSliceVar(&o.units, "unit", []string{"party", "pair"}, "with --mechanism: privacy units audited (party, pair); without: the one unit the per-pick mechanisms are calibrated for (default party; pair: the pair-unit per-candidate bound, privacy-model §16.6)")
	f.StringVar(&o.neighbours, "neighbours", "", "per-pick audit: the unit of the neighbouring graphs enumerated (default: --unit's); --unit pair --neighbours party is the negative control and must fail")
}

// listAuditJSON is the --json output of the list-level audit.
type listAuditJSON struct {
	Reports    []audit.ListReport `json:"reports"`
	Checks     int                `json:"checks"`
	Violations int                `json:"violations"`
	// Controls counts the negative controls (dplp-list, joint-em and
	// oneshot-topk at half the noise, perturb-once at twice the flip
	// strength) and ControlsCaught how many of them the audit flagged:
	// every one must be.
	Controls       int `json:"controls"`
	ControlsCaught int `json:"controls_caught"`
}

// runList runs the exact audit of the list-level mechanisms (audit.AuditList,
// audit.AuditPerturbOnce) on --graphs random graphs per unit and score:
// dplp-list with the posterior, thresholded and public-only (W = 0)
// combinations at --eps against its charged cost, and its negative control
// (half the noise, which must be caught); perturb-once likewise (twice the
// flip strength). Exit status 1 on any violation or an uncaught control.
func (o *auditOptions) runList(cmd *cobra.Command) error {
	cfg := o.cfg
	if !(cfg.Eps > 0) || cfg.Graphs < 1 || cfg.MinNodes < 3 || cfg.MaxNodes < cfg.MinNodes || cfg.MaxNodes > 12 {
		return fmt.Errorf("--eps > 0, --graphs >= 1 and 3 <= --min-nodes <= --max-nodes <= 12 are required")
	}
	var units []privunit.Unit
	for _, s := range o.units {
		u, err := privunit.Parse(s)
		if err != nil {
			return err
		}
		units = append(units, u)
	}
	var kinds, bases []score.Kind // evidence kinds, each once; base kinds
	for _, s := range o.kinds {
		k, err := score.ParseKind(s)
		if err != nil {
			return err
		}
		if ek := list.EvidenceKind(k); !slices.Contains(kinds, ek) {
			kinds = append(kinds, ek)
		}
		if !slices.Contains(bases, k) {
			bases = append(bases, k)
		}
	}
	var out listAuditJSON
	add := func(rep audit.ListReport, control bool) {
		if control {
			out.Controls++
			if !rep.Passed() {
				out.ControlsCaught++
			}
			return
		}
		out.Reports = append(out.Reports, rep)
		out.Checks += rep.Checks
		out.Violations += rep.Violations
	}
	for _, mech := range o.mechanisms {
		if m, err := topk.Parse(mech); err == nil {
			if err := o.runTopK(m, units, bases, add); err != nil {
				return err
			}
			continue
		}
		if mech != "dplp-list" && mech != "perturb-once" && mech != "dplp-list-gauss" {
			return fmt.Errorf("--mechanism: want dplp-list, dplp-list-gauss, perturb-once, joint-em or oneshot-topk, got %q", mech)
		}
		for _, unit := range units {
			rng := randx.Derive(cfg.Seed, 0x6c6973, uint64(unit))
			for gi := 0; gi < cfg.Graphs; gi++ {
				g, p, err := audit.RandomListInstance(cfg.MinNodes, cfg.MaxNodes, rng)
				if err != nil {
					return err
				}
				if mech == "perturb-once" {
					for _, f := range []float64{1, 2} {
						rep, err := audit.AuditPerturbOnce(g, p, unit, cfg.Eps, f)
						if err != nil {
							return err
						}
						add(rep, f != 1)
					}
					continue
				}
				rho := list.PriorRho(p.Public(g), p)
				if mech == "dplp-list-gauss" {
					if err := auditGauss(g, p, kinds, unit, cfg.Eps, rho, add); err != nil {
						return err
					}
					continue
				}
				combs := []list.Combine{{}, {W: 1, T: 1}}
				if d := list.DefaultPosterior(rho).Default; rho > 0 {
					combs = append(combs, *d)
				}
				for _, k := range kinds {
					var tight bool // the l1 bound is nearly attained: halved noise must be caught
					for _, c := range combs {
						rep, err := audit.AuditList(g, p, k, unit, cfg.Eps, c, 1)
						if err != nil {
							return err
						}
						rep.Mechanism = fmt.Sprintf("dplp-list %s %s", strings.ToLower(k.String()), combName(c))
						tight = tight || (c.W > 0 && rep.WorstRatio > 0.5+1e-6)
						add(rep, false)
					}
					if tight {
						rep, err := audit.AuditList(g, p, k, unit, cfg.Eps, list.Combine{W: 1}, 0.5)
						if err != nil {
							return err
						}
						add(rep, true)
					}
				}
			}
		}
	}
	pass := out.Violations == 0 && out.ControlsCaught == out.Controls && out.Controls > 0
	if o.asJSON {
		if err := printJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	} else {
		p := newPrinter(cmd.OutOrStdout(), formatTable)
		p.line("exact audit of the list-level mechanisms (docs/privacy-model.md §16): eps %g, %d graphs of %d-%d nodes per unit, seed %d", cfg.Eps, cfg.Graphs, cfg.MinNodes, cfg.MaxNodes, cfg.Seed)
		p.row("unit", "mechanism", "checks", "worst ratio / cost", "violations")
		for _, r := range summarise(out.Reports) {
			p.row(r.Unit, r.Mechanism, strconv.Itoa(r.Checks), fmt.Sprintf("%.4g", r.WorstRatio), strconv.Itoa(r.Violations))
		}
		verdict := "PASS"
		if !pass {
			verdict = "FAIL"
		}
		p.line("%d checks, %d violations; negative controls caught %d of %d: %s", out.Checks, out.Violations, out.ControlsCaught, out.Controls, verdict)
		if err := p.flush(); err != nil {
			return err
		}
	}
	if !pass {
		return exitCode(1)
	}
	return nil
}

// runTopK audits the list-level top-K mechanism m of mech/topk
// (audit.AuditTopK) under every unit, for every base score and every list
// length K = 1..--k, on --graphs random graphs per unit (the same as
// dplp-list's) and the mixed-hub instances (audit.MixedHubInstances, whose
// party toggles move scores both ways). Its negative control, noise for
// half the sensitivity, runs per unit and score on the same graphs and is
// counted when the mechanism itself reaches 0.6 of its cost there (tight
// enough that halving the noise should exceed it; with CN's evidence, i.e.
// for cn, aa and ra, it does on these graphs at every eps tried, 0.25-2).
func (o *auditOptions) runTopK(m topk.Mechanism, units []privunit.Unit, kinds []score.Kind, add func(audit.ListReport, bool)) error {
	cfg := o.cfg
	if cfg.MaxK < 1 || cfg.MaxK > 4 {
		return fmt.Errorf("--k must be in [1, 4] for %s, got %d", m, cfg.MaxK)
	}
	hubG, hubP, err := audit.MixedHubInstances()
	if err != nil {
		return err
	}
	for _, unit := range units {
		rng := randx.Derive(cfg.Seed, 0x6c6973, uint64(unit))
		gs, ps := slices.Clone(hubG), slices.Clone(hubP)
		for range cfg.Graphs {
			g, p, err := audit.RandomListInstance(cfg.MinNodes, cfg.MaxNodes, rng)
			if err != nil {
				return err
			}
			gs, ps = append(gs, g), append(ps, p)
		}
		for _, kind := range kinds {
			name := fmt.Sprintf("%s %s K=1..%d", m, strings.ToLower(kind.String()), cfg.MaxK)
			full := audit.ListReport{Unit: unit.String(), Mechanism: name}
			half := full
			for i := range gs {
				for k := 1; k <= cfg.MaxK; k++ {
					for _, f := range []float64{1, 0.5} {
						rep, err := audit.AuditTopK(gs[i], ps[i], kind, unit, m, 1, cfg.Eps, k, f)
						if err != nil {
							return err
						}
						r := &full
						if f != 1 {
							r = &half
						}
						r.Checks += rep.Checks
						r.Violations += rep.Violations
						r.WorstRatio = max(r.WorstRatio, rep.WorstRatio)
					}
				}
			}
			add(full, false)
			if full.WorstRatio > 0.6 {
				add(half, true)
			}
		}
	}
	return nil
}

// combName names a combination family for the audit table.
// auditGauss audits the Gaussian release of dplp-list (Combine.Gauss,
// privacy-model §16.9) on one graph: the default posterior combination
// made Gaussian, against its charged rho, for every evidence kind; its
// negative controls are half the noise (4x the rho: caught wherever the
// bound is more than a quarter attained) and, under the party unit, the
// noise of the pair unit's L2 bound against party neighbours.
func auditGauss(g *graph.Graph, p *protect.Set, kinds []score.Kind, unit privunit.Unit, eps, rho float64, add func(audit.ListReport, bool)) error {
	c := list.Combine{W: 1, Post: true, Rho: max(rho, 0.1), A: 0.3, Gauss: true}
	for _, k := range kinds {
		rep, err := audit.AuditList(g, p, k, unit, eps, c, 1)
		if err != nil {
			return err
		}
		rep.Mechanism = fmt.Sprintf("dplp-list-gauss %s posterior (rho)", strings.ToLower(k.String()))
		add(rep, false)
		if rep.WorstRatio > 0.25+1e-6 {
			half, err := audit.AuditList(g, p, k, unit, eps, c, 0.5)
			if err != nil {
				return err
			}
			add(half, true)
		}
		if unit == privunit.Party {
			// The pair unit's L2 under party neighbours: caught when some
			// party moves u's evidence by more than the pair bound.
			pb, err := audit.AuditListNeighbours(g, p, k, privunit.Pair, privunit.Party, eps, c, 1)
			if err != nil {
				return err
			}
			if pb.WorstRatio > 1+1e-6 {
				add(pb, true)
			}
		}
	}
	return nil
}

func combName(c list.Combine) string {
	switch {
	case c.W == 0:
		return "public-only (W = 0)"
	case c.Post:
		return "posterior"
	}
	return "threshold"
}

// summarise merges reports of the same unit and mechanism (over graphs).
func summarise(reps []audit.ListReport) []audit.ListReport {
	var out []audit.ListReport
	idx := map[[2]string]int{}
	for _, r := range reps {
		key := [2]string{r.Unit, r.Mechanism}
		i, ok := idx[key]
		if !ok {
			idx[key] = len(out)
			out = append(out, r)
			continue
		}
		out[i].Checks += r.Checks
		out[i].Violations += r.Violations
		out[i].WorstRatio = max(out[i].WorstRatio, r.WorstRatio)
	}
	return out
}

// validate parses --score and --method into cfg and checks the flags of the
// exact audit (not --end-to-end).
func (o *auditOptions) validate(cmd *cobra.Command) error {
	cfg := &o.cfg
	cfg.Kinds = cfg.Kinds[:0]
	for _, k := range o.kinds {
		kk, err := score.ParseKind(k)
		if err != nil {
			return err
		}
		cfg.Kinds = append(cfg.Kinds, kk)
	}
	cfg.Methods = cfg.Methods[:0]
	for _, m := range o.methods {
		mm, err := calib.ParseMethod(m)
		if err != nil {
			return err
		}
		if mm == calib.NonPrivate {
			return fmt.Errorf("--method nonprivate claims no guarantee and cannot be audited")
		}
		cfg.Methods = append(cfg.Methods, mm)
	}
	if err := checkEps("eps", cfg.Eps, cfg.MaxK); err != nil {
		return err
	}
	cfg.Unit, cfg.NeighboursSet = privunit.Party, false
	if cmd.Flags().Changed("unit") {
		if len(o.units) != 1 {
			return fmt.Errorf("--unit: the per-pick audit calibrates for one unit, got %v (several units are for --mechanism)", o.units)
		}
		u, err := privunit.Parse(o.units[0])
		if err != nil {
			return err
		}
		if u == privunit.Pair && cfg.Calibration == calib.Reference {
			return fmt.Errorf("--unit pair: the reference calibration runs under the party unit only")
		}
		cfg.Unit = u
	}
	if o.neighbours != "" {
		u, err := privunit.Parse(o.neighbours)
		if err != nil {
			return fmt.Errorf("--neighbours: %w", err)
		}
		cfg.Neighbours, cfg.NeighboursSet = u, true
	}
	switch {
	case o.variant != "" && o.modelPath != "":
		return fmt.Errorf("give either --variant or --model, not both")
	case o.variant != "" || o.modelPath != "":
		if cfg.Calibration == calib.Reference {
			return fmt.Errorf("the reference calibration applies to raw scores only")
		}
		if !cmd.Flags().Changed("method") {
			cfg.Methods = []calib.Method{calib.Exponential}
		}
	}
	return nil
}

// learned sets cfg's transforms from --model or --variant, if given.
func (o *auditOptions) learned(cmd *cobra.Command) error {
	cfg := &o.cfg
	if o.modelPath != "" {
		m, err := model.Load(o.modelPath)
		if err != nil {
			return err
		}
		sk, err := score.ParseKind(m.Score)
		if err != nil {
			return err
		}
		cfg.Kinds = []score.Kind{sk}
		cfg.Transforms = map[score.Kind]calib.Transform{sk: m}
		if !cmd.Flags().Changed("eps") {
			cfg.Eps = m.EpsP // audit the model at the eps it releases at
		}
		cfg.Label = "model " + o.modelPath + " (" + string(m.Variant) + ")"
		return nil
	}
	if o.variant == "" {
		return nil
	}
	v, err := evaluate.ParseVariant(o.variant)
	if err != nil {
		return err
	}
	if cfg.Transforms, err = evaluate.SyntheticTransforms(cfg.Kinds, string(v), cfg.Eps, o.epochs, cfg.Seed); err != nil {
		return err
	}
	cfg.Label = "trained " + string(v)
	return nil
}

func (o *auditOptions) run(cmd *cobra.Command) error {
	if err := o.learned(cmd); err != nil {
		return err
	}
	run := audit.Run
	switch o.sampler {
	case "float":
	case "exact":
		run = audit.RunExact // exponential mechanism only, exact base-2 sampler (docs/SAMPLING.md)
	default:
		return fmt.Errorf("--sampler must be float or exact, got %q", o.sampler)
	}
	rep, err := run(o.cfg)
	if err != nil {
		return err
	}
	if o.asJSON {
		err = printJSON(cmd.OutOrStdout(), rep)
	} else {
		err = printAudit(newPrinter(cmd.OutOrStdout(), formatTable), rep, o.verbose)
	}
	if err != nil {
		return err
	}
	if !rep.Passed() {
		return exitCode(1)
	}
	return nil
}

func printAudit(p *printer, rep *audit.Report, verbose bool) error {
	if rep.Calibration == "reference" {
		p.line("%s", calib.Warning)
	}
	p.line("exact audit: calibration %s, transform %s, eps_p %g, calibrated for the %s unit, %s-unit neighbours; %s", rep.Calibration, rep.Transform, rep.Eps, rep.Unit, rep.Neighbours, randx.Source{Seeded: true, Seed: rep.Seed})
	p.row("method", "K", "cases", "worst |ln ratio|", "bound", "proven", "violations")
	for _, r := range rep.Rows {
		p.row(r.Method, fmt.Sprint(r.K), fmt.Sprint(r.Cases), fmt.Sprintf("%.4f", r.Worst), fmt.Sprintf("%.4f", r.Bound), fmt.Sprint(r.Proven), fmt.Sprint(r.Violations))
	}
	p.line("cases %d, worst log-ratio %.4f against bound %.4f, violations %d", rep.Cases, rep.WorstLogRatio, rep.Bound, rep.Violations)
	p.line("score checks %d (|s-s'| <= Delta_s; s_pub, Delta_s, S_max invariant), violations %d", rep.ScoreChecks, rep.ScoreViolations)
	p.line("sampler chi-square tests %d, failures %d, smallest p %.3g", len(rep.Chi), rep.ChiFailures, rep.MinChiP)
	if verbose {
		for _, c := range rep.Chi {
			p.line("  chi-square %s %s K=%d: stat %.2f df %d p %.3g", c.Method, c.Score, c.K, c.Stat, c.DF, c.P)
		}
	}
	if w := rep.Worst; w != nil {
		p.line("worst case: %s on %s, K=%d, %d nodes, edges %v, protected %v", w.Method, w.Score, w.K, w.Nodes, w.Edges, w.Protected)
		p.line("  query u=%d, w=%d, toggled {w,x} for x in %v, list %v: ln P(G)=%.4f, ln P(G')=%.4f", w.U, w.W, w.Toggled, w.List, w.LogP, w.LogPPrime)
	}
	if rep.Passed() {
		p.line("PASS")
	} else {
		p.line("FAIL")
	}
	return p.flush()
}
