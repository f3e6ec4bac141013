package experiment

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/research/refdplp"
	"github.com/dplp/dplp/score"
)

// RefNoiseNote labels every row released with the authors' DPLP noise (the
// "noise" column of results.json and results.csv).
const RefNoiseNote = "authors' DPLP noise (reference-implementation §3.3, research/refdplp): NO privacy guarantee; eps_eff shows how far"

// refNoiseVersion is in the cache key of the cells released with the
// authors' DPLP noise; bump it when research/refdplp changes their results.
const refNoiseVersion = "refdplp-v1"

// refMethod reports whether cell c is released with the authors' DPLP
// noise (research/refdplp), and as which method: dplp, dplp-lin and
// dplp-umnn under the reference calibration, which exists only with the
// reference protocol (expand never pairs it with another; refMethod checks
// both anyway). Every other cell, and dplp-pub always, keeps our trainer
// and the rigorous release.
func refMethod(c cell) (refdplp.Method, bool) {
	if c.cal != calib.Reference || c.prot != protocol.Reference {
		return 0, false
	}
	switch c.method.variant {
	case "dplp":
		return refdplp.DPLP, true
	case "lin":
		return refdplp.Lin, true
	case "umnn":
		return refdplp.UMNN, true
	}
	return 0, false
}

// refLinEntry memoises one DPLP-Lin trained the authors' way: shared by
// the dplp-lin and dplp cells of a (split, predictor, eps_p).
type refLinEntry struct {
	once sync.Once
	lin  *refdplp.LinResult
	secs float64
	err  error
}

// refConfig is the authors' setting at the cell's eps_p; Config.Epochs,
// when set, replaces both epoch counts (DPLP-Lin at least 2, as it is
// evaluated after the last but one).
func (r *runner) refConfig(c cell) refdplp.Config {
	cfg := refdplp.DefaultConfig(c.eps)
	if e := r.p.cfg.Epochs; e > 0 {
		cfg.LinEpochs, cfg.DPLPEpochs = max(e, 2), e
	}
	// One noise table per split and predictor, shared by every eps_p and
	// method, as the authors rescale one draw by 1/e.
	cfg.Seed = derivedSeed("refdplp-noise", r.p.datasets[c.ds], c.pred.name, c.prot, c.sigma, c.seed)
	return cfg
}

// oneReference trains and evaluates a cell with the authors' DPLP noise
// (refMethod), caches its result and reports progress, as one does.
func (r *runner) oneReference(ctx context.Context, split *protocol.Split, u *unit, m refdplp.Method, scorer func(cell, string) (*score.Scorer, error)) error {
	c := u.c
	cfg := r.refConfig(c)
	var data []refdplp.TrainQuery
	trainData := func() ([]refdplp.TrainQuery, error) {
		if data != nil {
			return data, nil
		}
		sc, err := scorer(c, roleTrain)
		if err != nil {
			return nil, err
		}
		data, err = refdplp.TrainData(split, sc)
		return data, err
	}
	var mod refdplp.Models
	var res Result
	if m == refdplp.Lin || m == refdplp.DPLP {
		key := fmt.Sprint(r.p.datasets[c.ds], "\x00", c.pred.name, "\x00", c.prot, c.sigma, c.seed, c.eps, r.p.cfg.Epochs)
		e := r.refLin.get(key)
		e.once.Do(func() {
			d, err := trainData()
			if err != nil {
				e.err = err
				return
			}
			t0 := time.Now()
			e.lin, e.err = refdplp.TrainLin(ctx, d, cfg)
			e.secs = time.Since(t0).Seconds()
			if e.err == nil {
				r.lg.detail("experiment: trained the authors' DPLP-Lin on %s %s eps=%v seed=%d: %d epochs in %.1fs",
					r.p.datasets[c.ds], c.pred.display(), c.eps, c.seed, len(e.lin.Loss), e.secs)
			}
		})
		if e.err != nil {
			return fmt.Errorf("experiment: %s: the authors' DPLP-Lin: %w", r.describe(c), e.err)
		}
		mod.Lin = e.lin
		res.TrainSeconds = e.secs
	}
	if m == refdplp.DPLP || m == refdplp.UMNN {
		d, err := trainData()
		if err != nil {
			return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
		}
		t0 := time.Now()
		if m == refdplp.DPLP {
			mod.F, err = refdplp.TrainDPLP(ctx, d, mod.Lin.Last, cfg)
		} else {
			mod.F, err = refdplp.TrainUMNN(ctx, d, cfg)
		}
		if err != nil {
			return fmt.Errorf("experiment: %s: the authors' %s: %w", r.describe(c), m, err)
		}
		res.TrainSeconds += time.Since(t0).Seconds()
	}
	data = nil
	sc, err := scorer(c, roleTest)
	if err != nil {
		return err
	}
	t0 := time.Now()
	ev, err := refdplp.EvalData(split, sc)
	if err != nil {
		return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
	}
	er, err := refdplp.Evaluate(ctx, m, ev, mod, c.k, cfg)
	if err != nil {
		return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
	}
	res.Seconds = time.Since(t0).Seconds()
	res.TopK, res.Queries, res.ZeroNoise = er.Mean, er.Queries, er.ZeroNoise
	res.Noise = RefNoiseNote
	res.EpsEffMedian, res.EpsEffMax = finitePtr(er.EpsEffMedian), finitePtr(er.EpsEffMax)
	res.NoiseMultiplier = finitePtr(er.Multiplier)
	res.ROCAUC = finitePtr(er.ROCAUC)
	n, err := r.record(u, &res)
	if err != nil {
		return err
	}
	mt := er.Mean
	r.lg.detail("[%d/%d] %s (the authors' noise, NO guarantee): AUC@K %.4f over %d queries, eps_eff median %s max %s (%.2fs)",
		n, r.total, r.describe(c), mt.AUC, er.Queries, fmtPtr(res.EpsEffMedian), fmtPtr(res.EpsEffMax), res.Seconds)
	return nil
}

// epsEffList renders, under a reference-calibration table, the audit of the
// cells released with the authors' DPLP noise: per dataset and score, each
// such method's median effective eps per pick (mean over seeds of the
// per-split median over queries with noise) and the largest (max over
// seeds), beside the nominal eps_p. Empty when no row has them.
func epsEffList(p *plan, rows []Row, prot, cal string, eps float64, budget string, sigma float64, k int, unit string) string {
	type agg struct {
		med []float64
		max float64
	}
	vals := map[aggKey]*agg{}
	for i := range rows {
		r := &rows[i]
		if r.EpsEffMedian == nil || r.EpsEffMax == nil {
			continue
		}
		key := rowAgg(r)
		a := vals[key]
		if a == nil {
			a = &agg{}
			vals[key] = a
		}
		a.med = append(a.med, *r.EpsEffMedian)
		a.max = max(a.max, *r.EpsEffMax)
	}
	var b strings.Builder
	for _, ds := range p.datasets {
		for _, pr := range p.preds {
			var parts []string
			for _, m := range p.methods {
				a := vals[aggKey{ds, pr.name, m.name, cal, prot, eps, budget, sigma, k, unit}]
				if a == nil {
					continue
				}
				mean, _ := ranking.MeanCI(a.med)
				parts = append(parts, fmt.Sprintf("%s median %.3g, max %.3g", m.name, mean, a.max))
			}
			if len(parts) > 0 {
				fmt.Fprintf(&b, "- %s %s: %s\n", ds, pr.display(), strings.Join(parts, "; "))
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return fmt.Sprintf("Effective eps per pick of the authors' DPLP noise (`eps_eff_median`, `eps_eff_max`; nominal eps_p = %s): "+
		"2 Delta(u) / b(u), Delta(u) the largest change of the released noise-free utility over the query's candidates "+
		"when the normalised score moves by Delta_s(u) / norm(u), b(u) the Gumbel scale actually used (|sum beta| / e for "+
		"dplp, |f(1)| / e for dplp-umnn; for dplp-lin, whose noise sum_j w_j G_j / e is not a Gumbel, ||w||_2 / e, the "+
		"Gumbel scale of equal variance: an equivalent, not a bound). Queries without noise (zero_noise_queries) have no "+
		"finite eps and are left out. Training on protected pairs is not counted:\n\n%s\n", fmtF(eps), b.String())
}
