// The theory experiment's aggregation and report: statistics over seeds, files, plots and the summary.

package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/research/plot"
	"github.com/dplp/dplp/score"
)

// tstat aggregates a theory quantity over seeds.
// tstat is a mean over n seeds with its 95% CI half-width (0 for one seed,
// printed as n/a).
type tstat struct {
	mean, ci float64
	n        int
}

type theoryAgg struct {
	n     int
	score string
	eps   float64
	k     int
}

// theoryStats averages every quantity over seeds.
func theoryStats(rows []TheoryRow) map[theoryAgg]map[string]tstat {
	vals := map[theoryAgg]map[string][]float64{}
	for _, r := range rows {
		a := theoryAgg{r.Nodes, r.Score, r.Eps, r.K}
		m := vals[a]
		if m == nil {
			m = map[string][]float64{}
			vals[a] = m
		}
		for name, x := range map[string]float64{"rel": r.RelLoss, "lim0": r.RelLossEps0, "kk": r.KKappa, "hold": r.BoundHoldsFrac,
			"R": r.RankLoss, "Rnp": r.RankLossNonpri, "Ru": r.RankLossUnif, "B": r.TheoremBound} {
			m[name] = append(m[name], x)
		}
	}
	out := map[theoryAgg]map[string]tstat{}
	for a, m := range vals {
		o := map[string]tstat{}
		for name, xs := range m {
			mean, ci := ranking.MeanCI(xs)
			o[name] = tstat{mean, ci, len(xs)}
		}
		out[a] = o
	}
	return out
}

func writeTheory(out string, t TheoryConfig, rows []TheoryRow, lg *logger) error {
	if err := writeJSON(filepath.Join(out, "theory.json"), rows); err != nil {
		return err
	}
	header := []string{"nodes", "dim", "radius", "mean_degree", "score", "eps", "k", "seed", "queries", "rel_loss",
		"rel_loss_eps0", "k_kappa", "bound_holds_frac", "rank_loss", "rank_loss_nonprivate", "rank_loss_uniform",
		"theorem_bound", "zero_noise_queries", "seconds"}
	recs := make([][]string, len(rows))
	for i, r := range rows {
		recs[i] = []string{strconv.Itoa(r.Nodes), strconv.Itoa(r.Dim), fmtM(r.Radius), fmtF(r.MeanDegree), r.Score,
			fmtF(r.Eps), strconv.Itoa(r.K), strconv.Itoa(r.Seed), strconv.Itoa(r.Queries), fmtM(r.RelLoss),
			fmtM(r.RelLossEps0), fmtM(r.KKappa), fmtM(r.BoundHoldsFrac), fmtM(r.RankLoss), fmtM(r.RankLossNonpri),
			fmtM(r.RankLossUnif), fmtM(r.TheoremBound), strconv.Itoa(r.ZeroNoise), fmtM(r.Seconds)}
	}
	if err := writeCSV(filepath.Join(out, "theory.csv"), header, recs); err != nil {
		return err
	}
	st := theoryStats(rows)
	figs, err := theoryPlots(out, t, st)
	if err != nil {
		return err
	}
	md := theorySummary(t, rows, st, figs)
	if err := writeBytes(filepath.Join(out, "summary.md"), []byte(md)); err != nil {
		return err
	}
	lg.printf("theory: wrote theory.json, theory.csv, summary.md and %d plots to %s", len(figs), out)
	return nil
}

func theorySeries(name string, xs []float64, at func(x float64) (tstat, bool)) plot.Series {
	s := plot.Series{Name: name}
	for _, x := range xs {
		if v, ok := at(x); ok {
			s.X, s.Y, s.Err = append(s.X, x), append(s.Y, v.mean), append(s.Err, v.ci)
		}
	}
	return s
}

func theoryPlots(out string, t TheoryConfig, st map[theoryAgg]map[string]tstat) ([]string, error) {
	var figs []string
	save := func(name string, f *plot.Figure) error {
		rel := filepath.Join("plots", name)
		if err := f.Save(filepath.Join(out, rel)); err != nil {
			return err
		}
		figs = append(figs, rel)
		return nil
	}
	eps := sortedF(t.Eps)
	get := func(a theoryAgg, q string) (tstat, bool) {
		m, ok := st[a]
		if !ok {
			return tstat{}, false
		}
		return m[q], true
	}
	for _, s := range t.Scores {
		sc := strings.ToLower(s)
		base := func(e float64) theoryAgg { return theoryAgg{t.BaseNodes, sc, e, t.BaseK} }
		lim, _ := get(base(eps[0]), "lim0")
		kk, _ := get(base(eps[0]), "kk")
		f := &plot.Figure{Title: fmt.Sprintf("%s: relative score loss vs eps_p (|V|=%d, K=%d)", strings.ToUpper(sc), t.BaseNodes, t.BaseK),
			XLabel: "eps_p", YLabel: "L_rel", LogX: true,
			Series: []plot.Series{theorySeries("measured L_rel", eps, func(e float64) (tstat, bool) { return get(base(e), "rel") })},
			HLines: []plot.HLine{{Name: "exact eps_p->0 limit", Y: lim.mean}, {Name: "K*kappa (Proposition bound)", Y: kk.mean}}}
		if err := save("theory_rel_loss_vs_eps_"+sc, f); err != nil {
			return nil, err
		}
		np, _ := get(base(t.BaseEps), "Rnp")
		un, _ := get(base(t.BaseEps), "Ru")
		f = &plot.Figure{Title: fmt.Sprintf("%s: ranking loss vs eps_p (|V|=%d, K=%d)", strings.ToUpper(sc), t.BaseNodes, t.BaseK),
			XLabel: "eps_p", YLabel: "R (latent-distance inversions)", LogX: true,
			Series: []plot.Series{theorySeries("private (exponential)", eps, func(e float64) (tstat, bool) { return get(base(e), "R") })},
			HLines: []plot.HLine{{Name: "non-private base ranking", Y: np.mean}, {Name: "uniform list (eps_p->0)", Y: un.mean}}}
		if err := save("theory_rank_loss_vs_eps_"+sc, f); err != nil {
			return nil, err
		}
	}
	ks := make([]float64, len(t.K))
	for i, k := range t.K {
		ks[i] = float64(k)
	}
	slices.Sort(ks)
	ns := make([]float64, len(t.Nodes))
	for i, n := range t.Nodes {
		ns[i] = float64(n)
	}
	slices.Sort(ns)
	fk := &plot.Figure{Title: fmt.Sprintf("ranking loss vs K (|V|=%d, eps_p=%v)", t.BaseNodes, t.BaseEps), XLabel: "K", YLabel: "R", XTicks: ks}
	fn := &plot.Figure{Title: fmt.Sprintf("ranking loss vs |V| (K=%d, eps_p=%v, r fixed)", t.BaseK, t.BaseEps), XLabel: "|V|", YLabel: "R",
		LogX: ns[len(ns)-1]/ns[0] >= 8, XTicks: ns}
	for _, s := range t.Scores {
		sc := strings.ToLower(s)
		for _, q := range []struct{ key, label string }{{"R", "private"}, {"Rnp", "non-private"}} {
			fk.Series = append(fk.Series, theorySeries(strings.ToUpper(sc)+" "+q.label, ks, func(k float64) (tstat, bool) {
				return get(theoryAgg{t.BaseNodes, sc, t.BaseEps, int(k)}, q.key)
			}))
			fn.Series = append(fn.Series, theorySeries(strings.ToUpper(sc)+" "+q.label, ns, func(n float64) (tstat, bool) {
				return get(theoryAgg{int(n), sc, t.BaseEps, t.BaseK}, q.key)
			}))
		}
	}
	if err := save("theory_rank_loss_vs_k", fk); err != nil {
		return nil, err
	}
	if err := save("theory_rank_loss_vs_nodes", fn); err != nil {
		return nil, err
	}
	return figs, nil
}

// trend classifies a sequence: the number of adjacent steps that go up or
// down by more than the combined CI half-widths plus a relative tolerance.
func trend(v []tstat) (ups, downs int) {
	for i := 1; i < len(v); i++ {
		d := v[i].mean - v[i-1].mean
		tol := v[i].ci + v[i-1].ci + 0.02*math.Max(math.Abs(v[i].mean), math.Abs(v[i-1].mean)) + 1e-12
		switch {
		case d > tol:
			ups++
		case d < -tol:
			downs++
		}
	}
	return
}

// trendWord describes a sequence's trend in words.
func trendWord(v []tstat) string {
	up, down := trend(v)
	switch {
	case down > 0 && up == 0:
		return "decreases"
	case up > 0 && down == 0:
		return "increases"
	case up > 0 && down > 0:
		return "is not monotone"
	}
	return "shows no significant trend"
}

func yes(b bool, y, n string) string {
	if b {
		return y
	}
	return n
}

// theorySummary renders the tables and the machine-generated verdict.
func theorySummary(t TheoryConfig, rows []TheoryRow, st map[theoryAgg]map[string]tstat, figs []string) string {
	var b strings.Builder
	eps := sortedF(t.Eps)
	ks := slices.Clone(t.K)
	slices.Sort(ks)
	ns := slices.Clone(t.Nodes)
	slices.Sort(ns)
	fmt.Fprintf(&b, "# Theory check (paper Section 5) on latent-space graphs\n\n")
	var r0 TheoryRow
	if len(rows) > 0 {
		r0 = rows[0]
	}
	fmt.Fprintf(&b, "Latent-space graphs: |V| points uniform in the %d-dimensional ball of unit volume, an edge when the latent "+
		"distance is < r = %.4g (mean degree %v at |V| = %d; r is fixed for every |V|). sigma = %v of the edges protected, "+
		"%d queries per graph (nodes with a neighbour), %d mechanism draws per query, %d seeds (mean ± 95%% CI over seeds; seeded "+
		"generators, reproducible). Mechanism: exponential mechanism (Gumbel top-K) on the base score with the rigorous "+
		"calibration (Algorithm 1 with f = identity), candidates = all non-neighbours. Code version `%s`.\n\n",
		t.Dim, r0.Radius, t.MeanDegree, t.BaseNodes, t.Sigma, t.Queries, t.Draws, t.Seeds, CodeVersion)
	b.WriteString("Quantities (per query, then averaged): L_rel = E[sum of the K best scores - sum of the released list's scores]; " +
		"L_rel(eps_p->0) = its exact limit (uniform list); K·kappa = the Proposition's bound on that limit; " +
		"R = E[sum over i<j<=K of [d(u,u_i) - d(u,u_j)]_+] (the oracle ranking has R = 0); B = Theorem 1's bound shape " +
		"[2K·eps(|V|) + L_rel/|V|]^(1/(KD)) with delta = 0.05/(4K²).\n\n")
	f := func(s tstat) string {
		if s.n == 1 {
			return fmt.Sprintf("%.4g ± n/a", s.mean)
		}
		return fmt.Sprintf("%.4g ± %.2g", s.mean, s.ci)
	}
	var verdicts []string
	for _, s := range t.Scores {
		sc := strings.ToLower(s)
		S := strings.ToUpper(sc)
		at := func(n int, e float64, k int) map[string]tstat { return st[theoryAgg{n, sc, e, k}] }
		fmt.Fprintf(&b, "## %s\n\n### eps_p sweep (|V| = %d, K = %d)\n\n", S, t.BaseNodes, t.BaseK)
		b.WriteString("| eps_p | L_rel | L_rel(eps_p->0) | K·kappa | bound holds (share of queries) | R | R non-private | R uniform | B |\n|---|---|---|---|---|---|---|---|---|\n")
		var rel, rr []tstat
		for _, e := range eps {
			m := at(t.BaseNodes, e, t.BaseK)
			rel, rr = append(rel, m["rel"]), append(rr, m["R"])
			fmt.Fprintf(&b, "| %v | %s | %s | %s | %.3f | %s | %s | %s | %.4f |\n", e, f(m["rel"]), f(m["lim0"]), f(m["kk"]),
				m["hold"].mean, f(m["R"]), f(m["Rnp"]), f(m["Ru"]), m["B"].mean)
		}
		fmt.Fprintf(&b, "\n### K sweep (|V| = %d, eps_p = %v)\n\n| K | L_rel | R | R non-private | R uniform | B |\n|---|---|---|---|---|---|\n", t.BaseNodes, t.BaseEps)
		var rk []tstat
		for _, k := range ks {
			m := at(t.BaseNodes, t.BaseEps, k)
			rk = append(rk, m["R"])
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.4f |\n", k, f(m["rel"]), f(m["R"]), f(m["Rnp"]), f(m["Ru"]), m["B"].mean)
		}
		fmt.Fprintf(&b, "\n### |V| sweep (K = %d, eps_p = %v, r fixed)\n\n| |V| | L_rel | R | R non-private | R uniform | B |\n|---|---|---|---|---|---|\n", t.BaseK, t.BaseEps)
		var rn, bn []tstat
		for _, n := range ns {
			m := at(n, t.BaseEps, t.BaseK)
			rn, bn = append(rn, m["R"]), append(bn, m["B"])
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.4f |\n", n, f(m["rel"]), f(m["R"]), f(m["Rnp"]), f(m["Ru"]), m["B"].mean)
		}
		b.WriteString("\n")

		// Verdict for this score.
		lo, hi := at(t.BaseNodes, eps[0], t.BaseK), at(t.BaseNodes, eps[len(eps)-1], t.BaseK)
		lim0, kk, hold := lo["lim0"].mean, lo["kk"].mean, lo["hold"].mean
		relHi, relLo := hi["rel"].mean, lo["rel"].mean
		infOK := relHi <= 0.02*lim0+1e-9
		zeroReached := math.Abs(relLo-lim0) <= 0.05*lim0+lo["rel"].ci+1e-9
		up, _ := trend(rel)
		upR, _ := trend(rr)
		_, downK := trend(rk)
		var v strings.Builder
		fmt.Fprintf(&v, "**%s.** ", S)
		fmt.Fprintf(&v, "eps_p -> infinity: L_rel falls to %.3g at eps_p = %v (%.1f%% of its eps_p -> 0 value %.3g), %s. ",
			relHi, eps[len(eps)-1], 100*relHi/math.Max(lim0, 1e-300), lim0,
			yes(infOK, "which agrees with lim L_rel = 0", "which does not yet show lim L_rel = 0 within the measured range"))
		fmt.Fprintf(&v, "eps_p -> 0: the measured L_rel at eps_p = %v is %.3g against the exact limit %.3g (%s); the Proposition's "+
			"bound K·kappa averages %.3g and holds for %.1f%% of the queries, so the bound %s. ",
			eps[0], relLo, lim0, yes(zeroReached, "reached", "not yet reached"), kk, 100*hold,
			yes(hold >= 1, "agrees with the measurements",
				"does NOT agree with the measurements (its proof bounds s(u,u_i) - s(u,w) by kappa, the largest gap between "+
					"consecutive scores, which does not bound gaps between distant ranks; the eps_p -> 0 limit is the top-K sum minus K times the mean score)"))
		fmt.Fprintf(&v, "L_rel is %s in eps_p and R is %s in eps_p (R goes from %.3g, near the uniform list's %.3g, to %.3g, near the "+
			"non-private %.3g). ", yes(up == 0, "non-increasing", fmt.Sprintf("not monotone (%d significant rises)", up)),
			yes(upR == 0, "non-increasing", fmt.Sprintf("not monotone (%d significant rises)", upR)),
			lo["R"].mean, lo["Ru"].mean, hi["R"].mean, hi["Rnp"].mean)
		fmt.Fprintf(&v, "R %s with K, as Theorem 1's bound does. ", yes(downK == 0, "grows", fmt.Sprintf("does not grow monotonically (%d significant falls)", downK)))
		var rnp []tstat
		for _, n := range ns {
			rnp = append(rnp, at(n, t.BaseEps, t.BaseK)["Rnp"])
		}
		fmt.Fprintf(&v, "With r fixed, as |V| grows from %d to %d the non-private R %s (%.3g to %.3g) and the private R %s (%.3g to %.3g), "+
			"while the bound shape B %s (%.3g to %.3g)%s. B's exponent 1/(KD) = %.3g keeps it near 1 (above 1 where 2K·eps(|V|) > 1), "+
			"so Theorem 1 constrains R only up to its unstated constant and these measurements cannot formally contradict it.",
			ns[0], ns[len(ns)-1], trendWord(rnp), rnp[0].mean, rnp[len(rnp)-1].mean, trendWord(rn), rn[0].mean, rn[len(rn)-1].mean,
			trendWord(bn), bn[0].mean, bn[len(bn)-1].mean,
			yes(trendWord(rn) == "increases" && trendWord(bn) == "decreases",
				": the private R's trend runs against the bound's shape (a likely cause, not checked here: Delta_s(u) grows with the degree, which grows with |V| at fixed r, "+
					"so the noise may grow faster than the score gaps)", ""),
			1/float64(t.BaseK*t.Dim))
		verdicts = append(verdicts, v.String())
	}
	b.WriteString("## Verdict (machine-generated)\n\n")
	for _, v := range verdicts {
		b.WriteString(v + "\n\n")
	}
	if len(figs) > 0 {
		b.WriteString("## Plots\n\n")
		for _, f := range figs {
			fmt.Fprintf(&b, "- [%s](%s.png) ([svg](%s.svg))\n", filepath.Base(f), f, f)
		}
	}
	return b.String()
}

// scoreName is the lower-case score name used in outputs ("aa").
func scoreName(k score.Kind) string { return strings.ToLower(k.String()) }
