package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// The exact audit of the list-level mechanisms of docs/privacy-model.md §16
// (dplp-list and perturb-once), under both privacy units.
//
// dplp-list releases the noisy evidence vector e~ = e + Laplace(b)^C(u),
// b = scale x L1(u) / eps (scale = 1 for the mechanism as deployed), and
// post-processes it with a combination fixed in advance. Its density
// factorises over candidates, so the worst log-ratio of the released
// vector's densities in G and G' over all outputs y is
//
//	sup_y sum_v (|y_v - e'_v| - |y_v - e_v|) / b = sum_v |e_v - e'_v| / b,
//
// and the audit evaluates each coordinate's term on the grid of points
// {e_v, e'_v, their midpoint, both +-1} (the supremum of |y - e'| - |y - e|
// is attained at any y beyond both points, which the grid contains), sums
// them, and compares with the charged cost list.Cost(L1(u), eps, c). It
// also requires L1(u) and the cost to be the same in G and G' (they must be
// invariant). With W = 0 the list never reads the vector: cost 0 and
// log-ratio 0 (checked: the public scores must be equal).
//
// The Gaussian release (Combine.Gauss, §16.9) adds N(0, sd^2) noise,
// sd = scale x L2(u) / eps, and is charged rho = eps^2 / 2 zCDP. The zCDP
// of a Gaussian vector release between G and G' is exact and closed-form:
// the Rényi divergence of order alpha between N(e, sd^2 I) and
// N(e', sd^2 I) is alpha ||e - e'||_2^2 / (2 sd^2), so the smallest rho
// with D_alpha <= alpha rho for every alpha is ||e - e'||_2^2 / (2 sd^2);
// the audit computes it for every neighbour and compares it with the
// charged rho (list.ZCDP), and requires L2(u) to be invariant.
//
// perturb-once flips every protected pair independently with probability
// 1/(1+e^eps) and publishes the result. Its exact log-ratio between G and
// G' is the sum over the differing pairs of ln((1-q)/q) = eps for each, so
// the audit enumerates every perturbed outcome of the toggled pairs (the
// other pairs' factors cancel) and compares with the charged cost: eps under
// the pair unit, eps x max_w |prot(w)| under the party unit.

// ListReport is the outcome of AuditList or AuditPerturbOnce.
type ListReport struct {
	Unit       string  `json:"unit"`
	Mechanism  string  `json:"mechanism"`
	Checks     int     `json:"checks"`     // (u, G') pairs checked
	Violations int     `json:"violations"` // log-ratio above the charged cost, or a non-invariant cost or bound
	WorstRatio float64 `json:"worst_ratio"`
	// WorstRatio is the largest log-ratio divided by the charged cost (0/0
	// counts as 0; x/0 with x > 0 as +Inf).
}

// Passed reports whether no violation was found.
func (r ListReport) Passed() bool { return r.Violations == 0 }

// neighboursUnder calls fn with every u-neighbouring graph of (g, p) under
// unit: one protected pair {w, x} (w, x != u) for Pair, every non-empty
// subset of one node's pairs for Party (protect.Neighbours).
func neighboursUnder(g *graph.Graph, p *protect.Set, u int32, unit privunit.Unit, fn func(w int32, xs []int32, g2 *graph.Graph) error) error {
	if unit == privunit.Party {
		return p.Neighbours(g, u, 0, fn)
	}
	for w := int32(0); int(w) < g.N(); w++ {
		for _, x := range p.Of(w) {
			if w == u || x == u || x < w {
				continue
			}
			g2, err := protect.Toggle(g, w, []int32{x})
			if err != nil {
				return err
			}
			if err := fn(w, []int32{x}, g2); err != nil {
				return err
			}
		}
	}
	return nil
}

// evidenceOf is u's evidence and public score over its candidates
// (non-neighbours v != u, ascending) on g.
func evidenceOf(sc *score.Scorer, u int32) (cands []int32, e, pub []float64) {
	w := sc.NewWorker()
	var r score.Result
	w.Score(u, &r)
	g := sc.Graph()
	for v := int32(0); int(v) < g.N(); v++ {
		if v == u || g.HasEdge(u, v) {
			continue
		}
		s, ps := w.At(v)
		cands = append(cands, v)
		e = append(e, s-ps)
		pub = append(pub, ps)
	}
	return cands, e, pub
}

// laplaceLogRatio is the supremum over the grid of the log density ratio
// of the Laplace mechanism with scale b at e versus e2 (factorised).
func laplaceLogRatio(e, e2 []float64, b float64) float64 {
	total := 0.0
	for i := range e {
		best := math.Inf(-1)
		lo, hi := min(e[i], e2[i]), max(e[i], e2[i])
		for _, y := range []float64{e[i], e2[i], (lo + hi) / 2, lo - 1, hi + 1} {
			best = max(best, (math.Abs(y-e2[i])-math.Abs(y-e[i]))/b)
		}
		total += best
	}
	return total
}

// gaussRho is the exact zCDP parameter of releasing e + N(0, sd^2 I)
// against e2 + N(0, sd^2 I): ||e - e2||_2^2 / (2 sd^2).
func gaussRho(e, e2 []float64, sd float64) float64 {
	var ss float64
	for i := range e {
		d := e[i] - e2[i]
		ss += d * d
	}
	return ss / (2 * sd * sd)
}

// AuditList checks dplp-list with combination c at eps under unit on
// (g, p) for score kind and every query u: every u-neighbouring G' is
// enumerated and the released vector's worst log density ratio is compared
// with the charged cost (for a Gaussian combination: the exact zCDP
// against the charged rho; WorstRatio is then a ratio of rhos).
// noiseFactor multiplies the noise scale (1: the mechanism; 0.5: the
// halved-noise negative control, which must fail).
func AuditList(g *graph.Graph, p *protect.Set, kind score.Kind, unit privunit.Unit, eps float64, c list.Combine, noiseFactor float64) (ListReport, error) {
	return AuditListNeighbours(g, p, kind, unit, unit, eps, c, noiseFactor)
}

// AuditListNeighbours is AuditList with the bounds (and so the noise and
// the charge) of unit and the neighbouring graphs of nb: with nb = unit it
// is AuditList; unit = Pair with nb = Party is the negative control of the
// party unit's bounds (a party moves several coordinates at once), which
// must fail wherever some party holds two pairs that move u's evidence.
func AuditListNeighbours(g *graph.Graph, p *protect.Set, kind score.Kind, unit, nb privunit.Unit, eps float64, c list.Combine, noiseFactor float64) (ListReport, error) {
	rep := ListReport{Unit: unit.String(), Mechanism: "dplp-list"}
	if nb != unit {
		rep.Unit = unit.String() + " (" + nb.String() + " neighbours)"
	}
	if c.Gauss {
		rep.Mechanism = "dplp-list-gauss"
	}
	if !(eps > 0) || !(noiseFactor > 0) {
		return rep, fmt.Errorf("audit: eps %v and noise factor %v must be > 0", eps, noiseFactor)
	}
	sc, err := score.New(g, p, kind)
	if err != nil {
		return rep, err
	}
	for u := int32(0); int(u) < g.N(); u++ {
		cands, e, pub := evidenceOf(sc, u)
		bd := sc.Evidence(u, unit)
		bound := c.Bound(bd.L1, bd.L2)
		cost := list.Cost(bound, eps, c)
		if c.Gauss {
			cost = list.ZCDP(bound, eps, c)
		}
		b := noiseFactor * list.Scale(bound, eps)
		err := neighboursUnder(g, p, u, nb, func(_ int32, _ []int32, g2 *graph.Graph) error {
			sc2, err := score.New(g2, p, kind)
			if err != nil {
				return err
			}
			cands2, e2, pub2 := evidenceOf(sc2, u)
			rep.Checks++
			bd2 := sc2.Evidence(u, unit)
			if len(cands) != len(cands2) || c.Bound(bd2.L1, bd2.L2) != bound {
				rep.Violations++
				return nil
			}
			for i := range pub {
				if pub[i] != pub2[i] || cands[i] != cands2[i] {
					rep.Violations++
					return nil
				}
			}
			var lr float64
			if c.W > 0 {
				if b == 0 {
					for i := range e {
						if e[i] != e2[i] {
							lr = math.Inf(1)
						}
					}
				} else if c.Gauss {
					lr = gaussRho(e, e2, b)
				} else {
					lr = laplaceLogRatio(e, e2, b)
				}
			}
			rep.WorstRatio = max(rep.WorstRatio, ratio(lr, cost))
			if lr > cost+tol {
				rep.Violations++
			}
			return nil
		})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func ratio(x, bound float64) float64 {
	switch {
	case x <= tol:
		return 0
	case bound == 0:
		return math.Inf(1)
	}
	return x / bound
}

// AuditPerturbOnce checks randomised response under unit on (g, p): each
// protected pair is flipped with probability q = 1/(1+exp(eps x
// strength)) (strength 1: the mechanism; 2: less noise than eps needs, the
// negative control, which must fail). For every u and u-neighbouring G' it
// computes the exact probability of every perturbed outcome of the toggled
// pairs in G and in G' and compares the worst log-ratio with
// PerturbOnceCost.
func AuditPerturbOnce(g *graph.Graph, p *protect.Set, unit privunit.Unit, eps, strength float64) (ListReport, error) {
	rep := ListReport{Unit: unit.String(), Mechanism: "perturb-once"}
	if !(eps > 0) || !(strength > 0) {
		return rep, fmt.Errorf("audit: eps %v and strength %v must be > 0", eps, strength)
	}
	q := 1 / (1 + math.Exp(eps*strength))
	cost := list.PerturbOnceCost(p, unit, eps)
	for u := int32(0); int(u) < g.N(); u++ {
		err := neighboursUnder(g, p, u, unit, func(w int32, xs []int32, g2 *graph.Graph) error {
			rep.Checks++
			// Outcomes of the toggled pairs: bit i = pair {w, xs[i]} present
			// in the output. P_G(out) = prod over i of (1-q) if out_i equals
			// the pair's state in G, else q.
			worst := math.Inf(-1)
			for out := 0; out < 1<<len(xs); out++ {
				var lp, lp2 float64
				for i, x := range xs {
					o := out&(1<<i) != 0
					f := func(h *graph.Graph) float64 {
						if h.HasEdge(w, x) == o {
							return math.Log1p(-q)
						}
						return math.Log(q)
					}
					lp += f(g)
					lp2 += f(g2)
				}
				worst = max(worst, math.Abs(lp-lp2))
			}
			rep.WorstRatio = max(rep.WorstRatio, ratio(worst, cost))
			if worst > cost+tol {
				rep.Violations++
			}
			return nil
		})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// RandomListInstance draws a small graph (nodes in [minN, maxN]) with
// protected edges and non-edges for the list audits.
func RandomListInstance(minN, maxN int, r *rand.Rand) (*graph.Graph, *protect.Set, error) {
	cfg := Default()
	cfg.MinNodes, cfg.MaxNodes = minN, maxN
	g, p, _, err := randomGraph(&cfg, r)
	return g, p, err
}
