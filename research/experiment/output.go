package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/internal/atomicfile"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/research/plot"
	"github.com/dplp/dplp/research/protocol"
)

// Row is one object of results.json: the cell's configuration followed by
// its metrics (averaged over the split's evaluation queries).
type Row struct {
	Dataset     string  `json:"dataset"`
	Score       string  `json:"score"`
	Method      string  `json:"method"`
	Calibration string  `json:"calibration"`
	Protocol    string  `json:"protocol"`
	Eps         float64 `json:"eps"`
	// Budget is the per-list budget the cell's eps_p was derived from
	// ("pure:3", "approx:3,1e-06"; see Budget); absent when eps_p was given
	// directly.
	Budget string  `json:"budget,omitempty"`
	Sigma  float64 `json:"sigma"`
	K      int     `json:"k"`
	Seed   int     `json:"seed"`
	// Unit is the privacy unit of the cell (party or pair; §16) that its
	// noise is calibrated for (non-private and public-only: the same in
	// both).
	Unit string `json:"unit"`
	// EpsList is the mean eps charged per released list: ListCost for the
	// list-level methods, EpsSpent for the others (null when unbounded).
	EpsList *float64 `json:"eps_list"`
	// GapRecovered is (AUC@K - public-only) / (non-private - public-only),
	// with the public-only and non-private cells of the same dataset, score,
	// protocol, sigma, K and seed (null when either is missing or they are
	// equal).
	GapRecovered *float64 `json:"gap_recovered"`
	Result
}

// Result is what one cell measured. Beyond the metrics of ranking.TopK and
// the query count: the mean full-list ROC-AUC of the noise-free utility
// (null when no query has both labels), the number of queries released
// without noise (Delta = 0, or a(u) = 0 under the reference calibration),
// the evaluation's wall time, and for DPLP-family methods the training time
// and held-out AUC of the trained transform.
type Result struct {
	ranking.TopK
	Queries      int      `json:"queries"`
	ROCAUC       *float64 `json:"roc_auc"`
	ZeroNoise    int      `json:"zero_noise_queries"`
	Seconds      float64  `json:"seconds"`
	TrainSeconds float64  `json:"train_seconds,omitempty"`
	HeldOutAUC   *float64 `json:"held_out_auc,omitempty"`
	// EpsSpent is the mean protected-pair eps charged per released list
	// (eps_p x random picks; below K x eps_p for DPLP-pub, whose picks fixed
	// by the public scores are free; 0 for public-only; null for the
	// non-private top-K and for cells cached before the column existed).
	EpsSpent *float64 `json:"eps_spent"`
	// The cells of dplp, dplp-lin and dplp-umnn under the reference
	// calibration are released with the authors' DPLP noise (research/refdplp):
	// Noise labels them (RefNoiseNote: no guarantee), EpsEffMedian and
	// EpsEffMax are the median and largest effective eps per pick over the
	// queries with noise (2 Delta(u) / b(u), see refdplp.Evaluate), and
	// NoiseMultiplier what the authors multiply the Gumbel noise G / e by
	// (sum beta for dplp, f(1) for dplp-umnn, ||w||_2 for dplp-lin). Absent
	// for every other cell.
	Noise           string   `json:"noise,omitempty"`
	EpsEffMedian    *float64 `json:"eps_eff_median,omitempty"`
	EpsEffMax       *float64 `json:"eps_eff_max,omitempty"`
	NoiseMultiplier *float64 `json:"noise_multiplier,omitempty"`
	// ListCost is the mean eps charged per list by a list-level method
	// (dplp-list: eps, or 0 for a list that does not read the noisy
	// evidence; joint-em, oneshot-topk: eps, or 0 when the query's evidence
	// bound is 0; perturb-once: the one-time release's cost). Absent for the
	// others.
	ListCost *float64 `json:"list_cost,omitempty"`
	// Combine and ListFit are dplp-list's fitted combination and its fit.
	Combine *list.Combine   `json:"combine,omitempty"`
	ListFit *list.FitReport `json:"list_fit,omitempty"`
}

// ReadResults reads a results.json written by Run.
func ReadResults(path string) ([]Row, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []Row
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("experiment: %s: %w", path, err)
	}
	return rows, nil
}

func (p *plan) row(c cell, r *Result) Row {
	row := Row{Dataset: p.datasets[c.ds], Score: c.pred.name, Method: c.method.name,
		Calibration: c.cal.String(), Protocol: c.prot.String(), Eps: c.eps, Budget: c.budget, Sigma: c.sigma,
		K: c.k, Seed: c.seed, Unit: c.unit.String(), Result: *r}
	row.EpsList = r.EpsSpent
	if r.ListCost != nil {
		row.EpsList = r.ListCost
	}
	return row
}

// fillGaps sets GapRecovered of every row from the public-only and
// non-private rows of the same dataset, score, protocol, sigma, K and seed.
func fillGaps(rows []Row) {
	type key struct {
		ds, score, prot string
		sigma           float64
		k, seed         int
	}
	kOf := func(r *Row) key { return key{r.Dataset, r.Score, r.Protocol, r.Sigma, r.K, r.Seed} }
	pub, np := map[key]float64{}, map[key]float64{}
	for i := range rows {
		switch rows[i].Method {
		case calib.PublicOnly.String():
			pub[kOf(&rows[i])] = rows[i].AUC
		case calib.NonPrivate.String():
			np[kOf(&rows[i])] = rows[i].AUC
		}
	}
	for i := range rows {
		k := kOf(&rows[i])
		a, ok1 := pub[k]
		b, ok2 := np[k]
		if ok1 && ok2 && b != a {
			g := (rows[i].AUC - a) / (b - a)
			rows[i].GapRecovered = &g
		}
	}
}

// csvHeader are the columns of results.csv, in results.json's key order.
var csvHeader = []string{"dataset", "score", "method", "calibration", "protocol", "eps", "sigma", "k", "seed",
	"auc_at_k", "precision_at_k", "recall_at_k", "ndcg_at_k", "map_at_k", "mrr", "hits_at_k", "queries",
	"roc_auc", "zero_noise_queries", "seconds", "train_seconds", "held_out_auc", "eps_spent",
	"noise", "eps_eff_median", "eps_eff_max", "noise_multiplier", "budget", "unit", "eps_list", "gap_recovered"}

// fmtF formats a configuration value (eps, sigma, a power) in the shortest
// form that reads back exactly; method names such as power:A use it too.
func fmtF(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// fmtM formats a measured value with 10 significant digits: averages such as
// 0.11249999999999985 print as 0.1125 (results.json keeps full precision).
func fmtM(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }

func fmtPtr(x *float64) string {
	if x == nil {
		return ""
	}
	return fmtM(*x)
}

func (r *Row) csv() []string {
	ts := ""
	if r.TrainSeconds != 0 {
		ts = fmtM(r.TrainSeconds)
	}
	return []string{r.Dataset, r.Score, r.Method, r.Calibration, r.Protocol, fmtF(r.Eps), fmtF(r.Sigma),
		strconv.Itoa(r.K), strconv.Itoa(r.Seed), fmtM(r.AUC), fmtM(r.Precision), fmtM(r.Recall), fmtM(r.NDCG),
		fmtM(r.MAP), fmtM(r.MRR), fmtM(r.Hits), strconv.Itoa(r.Queries), fmtPtr(r.ROCAUC),
		strconv.Itoa(r.ZeroNoise), fmtM(r.Seconds), ts, fmtPtr(r.HeldOutAUC), fmtPtr(r.EpsSpent),
		r.Noise, fmtPtr(r.EpsEffMedian), fmtPtr(r.EpsEffMax), fmtPtr(r.NoiseMultiplier), r.Budget,
		r.Unit, fmtPtr(r.EpsList), fmtPtr(r.GapRecovered)}
}

// writeJSON writes v as indented JSON to path (atomically, see writeAtomic).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeBytes(path, append(data, '\n'))
}

// writeCSV writes a header and records to path (atomically).
func writeCSV(path string, header []string, records [][]string) error {
	return atomicfile.Write(path, func(f io.Writer) error {
		w := csv.NewWriter(f)
		w.Write(header)
		w.WriteAll(records) // flushes
		return w.Error()
	})
}

// writeBytes replaces path with data through internal/atomicfile: a
// temporary file in the same directory, synced and renamed, so a reader or a
// crash never sees half a file; a path that exists and is not a regular file
// (a symbolic link, a device, a directory) is refused rather than replaced.
func writeBytes(path string, data []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func writeOutputs(out string, p *plan, rows []Row, skipped int, lg *logger) error {
	fillGaps(rows)
	if err := writeJSON(filepath.Join(out, "results.json"), rows); err != nil {
		return err
	}
	recs := make([][]string, len(rows))
	for i := range rows {
		recs[i] = rows[i].csv()
	}
	if err := writeCSV(filepath.Join(out, "results.csv"), csvHeader, recs); err != nil {
		return err
	}
	figs, err := writePlots(out, p, rows)
	if err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(out, "summary.md"), []byte(summary(p, rows, skipped, figs))); err != nil {
		return err
	}
	lg.printf("experiment: wrote results.json, results.csv, summary.md and %d plots to %s", len(figs), out)
	return nil
}

// aggKey identifies a cell up to its seed.
type aggKey struct {
	ds, score, method, cal, prot string
	eps                          float64
	budget                       string
	sigma                        float64
	k                            int
	unit                         string
}

func rowAgg(r *Row) aggKey {
	return aggKey{r.Dataset, r.Score, r.Method, r.Calibration, r.Protocol, r.Eps, r.Budget, r.Sigma, r.K, r.Unit}
}

// stat is a mean over seeds with its 95% CI half-width.
type stat struct {
	mean, ci float64
	n        int
}

// aggregate collects AUC@K over seeds.
func aggregate(rows []Row) map[aggKey]stat {
	vals := map[aggKey][]float64{}
	for i := range rows {
		k := rowAgg(&rows[i])
		vals[k] = append(vals[k], rows[i].AUC)
	}
	out := make(map[aggKey]stat, len(vals))
	for k, v := range vals {
		m, ci := ranking.MeanCI(v)
		out[k] = stat{m, ci, len(v)}
	}
	return out
}

func (s stat) String() string {
	if s.n == 0 {
		return "–"
	}
	if s.n == 1 { // no interval from one seed
		return fmt.Sprintf("%.3f ± n/a", s.mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", s.mean, s.ci)
}

// validCombo reports whether a calibration/protocol pair is expanded.
func validCombo(cal calib.Calibration, prot protocol.Kind) bool {
	return cal != calib.Reference || prot == protocol.Reference
}

// summary renders summary.md: one table shaped like the paper's Table 1
// per (protocol, calibration, eps, sigma, k), rows dataset x score, columns
// methods, cells mean ± 95% CI of AUC@K over seeds; the best private method
// of each row in bold.
func summary(p *plan, rows []Row, skipped int, figs []string) string {
	c := &p.cfg
	agg := aggregate(rows)
	var b strings.Builder
	fmt.Fprintf(&b, "# Experiment summary\n\n")
	fmt.Fprintf(&b, "Datasets: %s. Scores: %s. Seeds: %d (0..%d; seeded generators: reproducible, NOT for deployment). "+
		"Code version `%s`.\n\n", strings.Join(p.datasets, ", "), strings.Join(displays(p.preds), ", "), c.Seeds, c.Seeds-1, CodeVersion)
	fmt.Fprintf(&b, "Cells are AUC@K (the authors' semantics: a query with no positive in its top K scores 0) averaged over the "+
		"evaluation queries of one split, then mean ± 95%% CI (Student t) over seeds (n/a with one seed). Bold: the best method other than the "+
		"non-private one. Under the clean and deployment protocols, DPLP-family and exponential lists cost at most K·eps_p "+
		"(pure protected-pair DP; training reads the public graph and the marks only); public-only costs 0; "+
		"one-shot Laplace and staircase have no proven guarantee for K > 1.\n\n")
	if slices.ContainsFunc(p.preds, func(pr predictor) bool { return !pr.spec.Triad }) {
		b.WriteString("Embedding and file predictors score in [0, 1] (a logistic link classifier's probability for " +
			"embeddings) with Delta_s = S_max = 1 and no public part, so public-only ranks their candidates as ties. " +
			"Embeddings are fitted per split on the test graph for evaluation and on the public training graph for " +
			"DPLP-family training.\n\n")
	}
	if len(p.budgets) > 0 {
		b.WriteString("Budgets are per released list: `pure:E` gives eps_p = E/K per pick (basic composition of pure DP); " +
			"`approx:E,D` gives the largest eps_p whose K picks are (E, D)-DP under zCDP (each pick of the exponential " +
			"mechanism is eps_p-bounded-range, hence eps_p^2/8-zCDP; tight conversion to (eps, delta), " +
			"accountant.MaxEpsPerPick), which is larger than E/K. The exponential mechanism and DPLP spend exactly the " +
			"budget; the lexicographic DPLP-pub is charged only for its random picks (positions fixed by the public " +
			"scores are free), so its actual spend is at most the budget; public-only and non-private do not depend on it.\n\n")
	}
	hasRef := slices.Contains(p.cals, calib.Reference)
	if hasRef {
		fmt.Fprintf(&b, "**%s.** Rows with calibration `reference` do not meet the guarantee; they exist only to compare "+
			"with the authors' published numbers. Under the reference calibration, dplp, dplp-lin and dplp-umnn are "+
			"the authors' own DPLP re-implemented (research/refdplp): their power features, training and noise "+
			"(DPLP-Lin: an independent Gumbel per power feature; DPLP: the Gumbel times the sum of the raw DPLP-Lin "+
			"parameters; DPLP-UMNN: times f(1)), which carry NO guarantee; their rows say so in the `noise` column, and "+
			"`eps_eff_median` / `eps_eff_max` measure the effective eps per pick their noise gives. dplp-pub is trained "+
			"with the authors' data choices but released with the rigorous calibration of the trained transform, and "+
			"power:A is always rigorous.\n\n", calib.Warning)
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "%d cells pairing the reference calibration with a non-reference protocol were skipped "+
			"(the reference calibration's per-query count exists only in the reference protocol).\n\n", skipped)
	}
	for _, prot := range p.prots {
		for _, cal := range p.cals {
			if !validCombo(cal, prot) {
				continue
			}
			for _, a := range p.axis() {
				for _, sigma := range c.Sigma {
					for _, k := range c.K {
						eps, budget := a.at(k)
						if budget == "" {
							fmt.Fprintf(&b, "## protocol %s, calibration %s, eps_p = %s, sigma = %s, K = %d\n\n", prot, cal, fmtF(eps), fmtF(sigma), k)
						} else {
							fmt.Fprintf(&b, "## protocol %s, calibration %s, budget %s per list (eps_p = %.6g per pick), sigma = %s, K = %d\n\n",
								prot, cal, budget, eps, fmtF(sigma), k)
						}
						switch {
						case cal == calib.Reference:
							b.WriteString("*Reference calibration: does NOT meet the protected-pair DP guarantee.*\n\n")
						case prot == protocol.Reference:
							b.WriteString("*Reference protocol: the authors' split reads protected data (queries, filters and DPLP " +
								"training pairs scored on graphs with protected edges), so NO method here carries the stated " +
								"guarantee, whatever the calibration; the numbers are for comparison with the paper only.*\n\n")
						}
						for _, unit := range p.units {
							if len(p.units) > 1 {
								fmt.Fprintf(&b, "Privacy unit: %s.\n\n", unit)
							}
							us := unit.String()
							b.WriteString(table(p, agg, prot.String(), cal.String(), eps, budget, sigma, k, us))
							b.WriteString("\n")
							b.WriteString(epsSpentTable(p, rows, prot.String(), cal.String(), eps, budget, sigma, k, us))
							b.WriteString(epsEffList(p, rows, prot.String(), cal.String(), eps, budget, sigma, k, us))
						}
					}
				}
			}
		}
	}
	if len(figs) > 0 {
		b.WriteString("## Plots\n\n")
		for _, f := range figs {
			fmt.Fprintf(&b, "- [%s](%s.png) ([svg](%s.svg))\n", filepath.Base(f), f, f)
		}
	}
	return b.String()
}

func displays(ps []predictor) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.display()
	}
	return out
}

// table renders one Table 1-shaped markdown table.
func table(p *plan, agg map[aggKey]stat, prot, cal string, eps float64, budget string, sigma float64, k int, unit string) string {
	var b strings.Builder
	b.WriteString("| dataset | score |")
	for _, m := range p.methods {
		fmt.Fprintf(&b, " %s |", m.name)
	}
	b.WriteString("\n|---|---|")
	for range p.methods {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, ds := range p.datasets {
		for _, pr := range p.preds {
			sc := pr.name
			cells := make([]stat, len(p.methods))
			best := -1
			for i, m := range p.methods {
				cells[i] = agg[aggKey{ds, sc, m.name, cal, prot, eps, budget, sigma, k, unit}]
				if m.mech != calib.NonPrivate && cells[i].n > 0 && (best < 0 || cells[i].mean > cells[best].mean) {
					best = i
				}
			}
			fmt.Fprintf(&b, "| %s | %s |", ds, pr.display())
			for i, s := range cells {
				if i == best {
					fmt.Fprintf(&b, " **%s** |", s)
				} else {
					fmt.Fprintf(&b, " %s |", s)
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writePlots draws AUC@K vs eps_p (per dataset x score, one line per
// method; when there are >= 2 eps values), AUC@K vs sigma (paper Figure 3;
// >= 2 sigma values) and AUC@K vs the power a of power:a methods (paper
// Figure 2, one line per dataset; >= 2 powers). It returns the written
// files' paths relative to out, without extension.
func writePlots(out string, p *plan, rows []Row) ([]string, error) {
	c := &p.cfg
	agg := aggregate(rows)
	// Mean eps charged per list of every list-level cell (plot x).
	listCost := map[aggKey]float64{}
	{
		sums, ns := map[aggKey]float64{}, map[aggKey]int{}
		for i := range rows {
			if rows[i].ListCost != nil {
				k := rowAgg(&rows[i])
				sums[k] += *rows[i].ListCost
				ns[k]++
			}
		}
		for k, s := range sums {
			listCost[k] = s / float64(ns[k])
		}
	}
	var figs []string
	save := func(name string, f *plot.Figure) error {
		if len(f.Series) == 0 {
			return nil
		}
		rel := filepath.Join("plots", name)
		if err := f.Save(filepath.Join(out, rel)); err != nil {
			return err
		}
		figs = append(figs, rel)
		return nil
	}
	var nonPower []methodSpec
	var powers []methodSpec
	for _, m := range p.methods {
		if m.power > 0 {
			powers = append(powers, m)
		} else {
			nonPower = append(nonPower, m)
		}
	}
	slices.SortFunc(powers, func(a, b methodSpec) int { return cmpF(a.power, b.power) })
	eps := sortedF(c.Eps)
	sigmas := sortedF(c.Sigma)
	series := func(name string, xs []float64, at func(x float64) stat) (plot.Series, bool) {
		s := plot.Series{Name: name}
		for _, x := range xs {
			st := at(x)
			if st.n == 0 {
				continue
			}
			s.X, s.Y, s.Err = append(s.X, x), append(s.Y, st.mean), append(s.Err, st.ci)
		}
		return s, len(s.X) > 0
	}
	for _, prot := range p.prots {
		for _, cal := range p.cals {
			if !validCombo(cal, prot) {
				continue
			}
			ps, cs := prot.String(), cal.String()
			for _, k := range c.K {
				for _, ds := range p.datasets {
					for _, pr := range p.preds {
						sc, disp, slug := pr.name, pr.display(), pr.slug()
						if len(eps) >= 2 {
							for _, sigma := range sigmas {
								f := &plot.Figure{Title: fmt.Sprintf("%s, %s: AUC@%d vs eps_p (sigma=%v, %s/%s)", ds, disp, k, sigma, ps, cs),
									XLabel: "eps_p (list-level methods: eps per list)", YLabel: fmt.Sprintf("AUC@%d", k), LogX: eps[len(eps)-1]/eps[0] >= 20}
								for _, m := range nonPower {
									// List-level methods: one series per unit (their
									// eps is the cost of a whole list).
									units := p.units[:1]
									if m.list != "" {
										units = p.units
									}
									for _, un := range units {
										name := m.name
										if m.list != "" && len(p.units) > 1 {
											name += " (" + un.String() + ")"
										}
										s, ok := series(name, eps, func(e float64) stat { return agg[aggKey{ds, sc, m.name, cs, ps, e, "", sigma, k, un.String()}] })
										if ok && m.list != "" {
											// x = the mean eps charged per list (perturb-once
											// under the party unit: eps x the largest party).
											s.Name += " [x = eps_list]"
											for i := range s.X {
												if c, ok := listCost[aggKey{ds, sc, m.name, cs, ps, s.X[i], "", sigma, k, un.String()}]; ok && c > 0 {
													s.X[i] = c
												}
											}
										}
										if ok {
											f.Series = append(f.Series, s)
										}
									}
								}
								if err := save(fmt.Sprintf("auc_vs_eps_%s_%s_%s_%s_sigma%v_k%d", ds, slug, ps, cs, sigma, k), f); err != nil {
									return nil, err
								}
							}
						}
						if len(sigmas) >= 2 {
							for _, e := range eps {
								f := &plot.Figure{Title: fmt.Sprintf("%s, %s: AUC@%d vs sigma (eps_p=%v, %s/%s)", ds, disp, k, e, ps, cs),
									XLabel: "sigma (fraction of protected edges)", YLabel: fmt.Sprintf("AUC@%d", k)}
								for _, m := range nonPower {
									if s, ok := series(m.name, sigmas, func(sg float64) stat { return agg[aggKey{ds, sc, m.name, cs, ps, e, "", sg, k, p.units[0].String()}] }); ok {
										f.Series = append(f.Series, s)
									}
								}
								if err := save(fmt.Sprintf("auc_vs_sigma_%s_%s_%s_%s_eps%v_k%d", ds, slug, ps, cs, e, k), f); err != nil {
									return nil, err
								}
							}
						}
					}
				}
				if len(powers) < 2 {
					continue
				}
				as := make([]float64, len(powers))
				for i, m := range powers {
					as[i] = m.power
				}
				for _, pr := range p.preds {
					sc, disp, slug := pr.name, pr.display(), pr.slug()
					for _, e := range eps {
						for _, sigma := range sigmas {
							f := &plot.Figure{Title: fmt.Sprintf("%s: AUC@%d vs a, f(s)=s^a (eps_p=%v, sigma=%v, %s/%s)", disp, k, e, sigma, ps, cs),
								XLabel: "a", YLabel: fmt.Sprintf("AUC@%d", k), LogX: as[len(as)-1]/as[0] >= 20}
							for _, ds := range p.datasets {
								if s, ok := series(ds, as, func(a float64) stat {
									return agg[aggKey{ds, sc, "power:" + fmtF(a), cs, ps, e, "", sigma, k, p.units[0].String()}]
								}); ok {
									f.Series = append(f.Series, s)
								}
							}
							if err := save(fmt.Sprintf("auc_vs_power_%s_%s_%s_eps%v_sigma%v_k%d", slug, ps, cs, e, sigma, k), f); err != nil {
								return nil, err
							}
						}
					}
				}
			}
		}
	}
	return figs, nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortedF(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}
