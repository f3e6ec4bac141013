package refdplp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dplp/dplp/ranking"
)

// EvalQuery is one query's test candidates: normalised scores, node ids
// (the noise keys), labels, and whether the authors add noise (a(q) > 0).
// Delta and XMax feed Audit: Delta bounds the change of a candidate's
// normalised score between u-neighbouring graphs (Delta_s(u) / norm(u)),
// XMax is the largest normalised score possible (S_max(u) / norm(u)).
type EvalQuery struct {
	Q     int32
	Noisy bool
	S     []float64
	IDs   []int32
	Label []bool
	NPos  int // held-out positives of the query (labelled candidates)
	Delta float64
	XMax  float64
}

// Models are the trained models a method releases with: DPLP-Lin needs
// Lin, DPLP needs Lin and F, DPLP-UMNN needs F.
type Models struct {
	Lin *LinResult
	F   *MNNResult
}

// Result is one evaluation of a method.
type Result struct {
	Mean      ranking.TopK // averaged over queries
	Queries   int
	ZeroNoise int // queries released without noise (a(q) = 0)
	// Multiplier is what the authors multiply their Gumbel noise G / e by:
	// sum_j beta_j for DPLP (negative: the Gumbel is reflected), f(1) for
	// DPLP-UMNN; for DPLP-Lin, whose noise is sum_j w_j G_j / e, the norm
	// ||w||_2 (the Gumbel scale times e with the same standard deviation).
	Multiplier float64
	// ROCAUC is the mean full-list ROC-AUC of the noise-free utility over
	// the queries with both labels (NaN when none has).
	ROCAUC float64
	// EpsEff are the effective eps per pick of the queries with noise (see
	// Audit), in query order; EpsEffMedian and EpsEffMax summarise them
	// (NaN when no query has noise).
	EpsEff                  []float64
	EpsEffMedian, EpsEffMax float64
}

// releaser computes a method's noise-free utility and noise.
type releaser struct {
	method Method
	cfg    *Config
	lin    *LinModel // Lin: the evaluated snapshot; DPLP: the last state
	w      []float64 // lin's weights
	f      *MNN
	g      groups
	mult   float64 // noise multiplier (Lin: 1, per-feature weights apply)
	b      float64 // Gumbel scale per unit of 1/e, for the audit
}

func newReleaser(method Method, mod Models, cfg *Config) (*releaser, error) {
	r := &releaser{method: method, cfg: cfg}
	switch method {
	case Lin:
		if mod.Lin == nil || mod.Lin.Eval == nil {
			return nil, fmt.Errorf("refdplp: DPLP-Lin needs a trained Lin")
		}
		r.lin = mod.Lin.Eval
		r.w = r.lin.Weights(nil)
		var s float64
		for _, w := range r.w {
			s += w * w
		}
		r.mult, r.b = 1, math.Sqrt(s)
	case DPLP:
		if mod.Lin == nil || mod.Lin.Last == nil || mod.F == nil {
			return nil, fmt.Errorf("refdplp: DPLP needs a trained Lin and UMNN")
		}
		r.lin, r.f = mod.Lin.Last, mod.F.F
		r.w = r.lin.Weights(nil)
		r.mult = r.lin.BetaSum()
		r.b = math.Abs(r.mult)
	case UMNN:
		if mod.F == nil {
			return nil, fmt.Errorf("refdplp: DPLP-UMNN needs a trained UMNN")
		}
		r.f = mod.F.F
		r.f.groups(&r.g)
		r.mult = r.f.eval(&r.g, 1)
		r.b = math.Abs(r.mult)
	default:
		return nil, fmt.Errorf("refdplp: unknown method %d", int(method))
	}
	if r.f != nil {
		r.f.groups(&r.g)
	}
	return r, nil
}

// utility is the noise-free released utility at normalised score s; feat is
// scratch of length NumFeatures.
func (r *releaser) utility(s float64, feat []float64) float64 {
	switch r.method {
	case UMNN:
		return r.f.eval(&r.g, umnnInput(s))
	}
	features(s, feat)
	nu := nuOf(r.w, feat, r.lin.B)
	if r.method == DPLP {
		return r.f.eval(&r.g, nu)
	}
	return nu
}

// noise is the evaluation noise of candidate v of query q, before the 1/e
// scale.
func (r *releaser) noise(ns *noiseStream, q, v int32) float64 {
	ns.pair(r.cfg.Seed, tableEval, q, v)
	switch r.method {
	case Lin:
		var s float64
		for _, w := range r.w {
			s += w * ns.next()
		}
		return s
	case DPLP:
		return r.mult * ns.column(colDPLPEval)
	}
	return r.mult * ns.column(colUMNN)
}

// sensitivity is max over the query's distinct normalised scores s of the
// change of the utility when s moves by at most delta within [0, xMax]
// (the utility is increasing in s).
func (r *releaser) sensitivity(uniq, util []float64, delta, xMax float64, feat []float64) float64 {
	var d float64
	if !(delta > 0) {
		return 0
	}
	for i, s := range uniq {
		hi := min(s+delta, max(xMax, s))
		lo := max(s-delta, 0)
		u := util[i]
		d = max(d, r.utility(hi, feat)-u, u-r.utility(lo, feat))
	}
	return d
}

// Evaluate releases the top-k list of every query with method's noise (the
// evaluation draw) and scores it with ranking.Evaluate; it also audits each
// query with noise (see Audit).
//
// Audit: for a query with noise, the released utility is u(s) plus noise
// of Gumbel scale b(u) = |multiplier| / e (DPLP, DPLP-UMNN; reflected when
// the multiplier is negative). Its effective eps per pick is
// 2 Delta_u(u) / b(u), the eps of an exponential mechanism with that scale
// on a utility of sensitivity Delta_u(u) = max over the query's candidates
// of the change of u when the normalised score moves by Delta (u is
// increasing: evaluated at s +- Delta within [0, XMax]). The nominal value
// (each feature's sensitivity taken as 1 and scale 1/e) is eps_p. For
// DPLP-Lin the noise sum_j w_j G_j / e is not a Gumbel; b(u) = ||w||_2 / e is
// the Gumbel scale with the same standard deviation (an equivalent, not a
// bound). Queries without noise have no finite eps (counted in ZeroNoise).
func Evaluate(ctx context.Context, method Method, qs []EvalQuery, mod Models, k int, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if k < 1 {
		return Result{}, fmt.Errorf("refdplp: k must be >= 1")
	}
	rel0, err := newReleaser(method, mod, &cfg)
	if err != nil {
		return Result{}, err
	}
	per := make([]ranking.TopK, len(qs))
	roc := make([]float64, len(qs))
	eff := make([]float64, len(qs))
	sc := cfg.scale()
	err = parallel(ctx, len(qs), func(i int) {
		r := *rel0 // groups are read-only after newReleaser
		q := &qs[i]
		feat := make([]float64, NumFeatures)
		ns := newNoiseStream()
		uniq := slices.Clone(q.S)
		slices.Sort(uniq)
		uniq = slices.Compact(uniq)
		util := make([]float64, len(uniq))
		for j, s := range uniq {
			util[j] = r.utility(s, feat)
		}
		n := len(q.S)
		type cand struct {
			y   float64
			tie uint64
			pos bool
		}
		cs := make([]cand, n)
		var pos, neg []float64
		for p, s := range q.S {
			j, _ := slices.BinarySearch(uniq, s)
			y := util[j]
			if q.Label[p] {
				pos = append(pos, y)
			} else {
				neg = append(neg, y)
			}
			if q.Noisy {
				y += sc * r.noise(ns, q.Q, q.IDs[p])
			}
			cs[p] = cand{y: y, tie: tieKey(pairKey(cfg.Seed, tableEval, q.Q, q.IDs[p])), pos: q.Label[p]}
		}
		slices.SortFunc(cs, func(a, b cand) int {
			return cmp.Or(cmp.Compare(b.y, a.y), cmp.Compare(a.tie, b.tie))
		})
		rel := make([]bool, min(k, n))
		for p := range rel {
			rel[p] = cs[p].pos
		}
		per[i] = ranking.Evaluate(rel, q.NPos, k)
		roc[i] = ranking.ROCAUC(pos, neg)
		eff[i] = math.NaN()
		if q.Noisy {
			d := r.sensitivity(uniq, util, q.Delta, q.XMax, feat)
			eff[i] = 2 * d / (r.b * sc)
		}
	})
	if err != nil {
		return Result{}, err
	}
	res := Result{Queries: len(qs), Multiplier: rel0.mult, EpsEffMedian: math.NaN(), EpsEffMax: math.NaN()}
	if method == Lin {
		res.Multiplier = rel0.b
	}
	var nroc int
	for i := range per {
		res.Mean.Add(per[i])
		if !math.IsNaN(roc[i]) {
			nroc++
		}
		if !qs[i].Noisy {
			res.ZeroNoise++
			continue
		}
		res.EpsEff = append(res.EpsEff, eff[i])
	}
	if len(qs) > 0 {
		res.Mean.Scale(1 / float64(len(qs)))
	}
	if res.ROCAUC = math.NaN(); nroc > 0 {
		res.ROCAUC = rocSum(roc) / float64(nroc)
	}
	if len(res.EpsEff) > 0 {
		s := slices.Clone(res.EpsEff)
		slices.Sort(s)
		res.EpsEffMax = s[len(s)-1]
		if len(s)%2 == 1 {
			res.EpsEffMedian = s[len(s)/2]
		} else {
			res.EpsEffMedian = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
	}
	return res, nil
}

// rocSum adds the finite per-query ROC-AUCs in query order.
func rocSum(roc []float64) float64 {
	var s float64
	for _, r := range roc {
		if !math.IsNaN(r) {
			s += r
		}
	}
	return s
}
