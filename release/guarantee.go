package release

// The guarantee a released list states, from its picks or its charge.

import (
	"fmt"

	"github.com/dplp/dplp/accountant"

	"github.com/dplp/dplp/calib"
)

// guarantee describes a list of picks random picks whose noise was seeded
// or not. A seeded list gets no guarantee: SeededText, and no epsilon or rho
// (the picks are still reported: what the list was charged for).
func (r *Recommender) guarantee(picks int, seeded bool) Guarantee {
	e := r.cfg.Eps
	eps, proven := r.cfg.Guarantee(picks)
	g := Guarantee{Mechanism: r.cfg.Method.String() + " mechanism", EpsP: e, Picks: picks, Eps: eps}
	if r.cfg.Method == calib.Exponential {
		g.Mechanism = "exponential mechanism (Gumbel top-K)"
		if r.cfg.ExactSampler {
			g.Mechanism = "exponential mechanism (exact base-2 sampler)"
		}
		if r.cfg.Transform != nil {
			g.Mechanism += " on the DPLP utility"
		}
		if r.cfg.Lex() {
			g.Mechanism = "lexicographic DPLP-pub (exact public-score order; exponential mechanism on f(s) within ties)"
		}
		g.Rho = accountant.PerPick(e, picks).Rho // the one privacy map
	}
	switch {
	case seeded:
		g.Eps, g.Rho = 0, 0
		g.Text = SeededText
	case picks == 0 && r.cfg.Method != calib.NonPrivate:
		g.Eps = 0
		g.Text = "0-protected-pair DP: no protected pair can change this user's utilities (exact top-K)"
	case !proven:
		g.Text = fmt.Sprintf("no proven protected-pair DP bound for a list of %d under %s", picks, r.cfg.Method)
	default:
		g.Text = fmt.Sprintf("%g-protected-pair DP for this user (%d picks x eps_p %g, basic composition); rho %g zCDP", eps, picks, e, g.Rho)
	}
	g.Unit = "party"
	return g
}

// guaranteeFor is the guarantee of a list charged cost (picks random picks
// for a per-pick mechanism; partyCost the party-unit cost the ledger
// records with a dplp-list list, +Inf when unbounded or not computed).
func (r *Recommender) guaranteeFor(cost, partyCost float64, picks int, seeded bool) Guarantee {
	if r.list != nil {
		return r.listGuarantee(cost, partyCost, seeded)
	}
	return r.guarantee(picks, seeded)
}
