package release

// The guarantee a released list states, from its picks or its charge.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dplp/dplp/accountant"

	"github.com/dplp/dplp/calib"
)

// guarantee describes a list of picks random picks whose noise was seeded
// or not. A seeded list gets no guarantee: SeededText, and no epsilon or rho
// (the picks are still reported: what the list was charged for). It is a
// function of (picks, seeded) for a given Recommender, asked for every list
// (twice: the charge, then the result), so it is computed once per picks
// count (guarantees) rather than formatted anew: at 10 M users that was
// 18 s of CPU.
func (r *Recommender) guarantee(picks int, seeded bool) Guarantee {
	return r.guarantees.get(picks, seeded, r.newGuarantee)
}

// guarantees caches a Recommender's per-pick guarantees by picks count,
// for counts below the largest asked so far (at least guaranteeMin, at most
// guaranteeMax: a list of more picks has its guarantee computed each time,
// so a huge K never builds a huge table): the table is replaced, never
// changed, so readers need no lock.
type guarantees struct {
	mu  sync.Mutex                     // taken to grow tab
	tab atomic.Pointer[[2][]Guarantee] // [seeded][picks]
}

const (
	guaranteeMin = 64
	guaranteeMax = 4096
)

// get returns the guarantee of (picks, seeded), computing it
// (and the table up to picks) with compute the first time.
func (c *guarantees) get(picks int, seeded bool, compute func(int, bool) Guarantee) Guarantee {
	s := 0
	if seeded {
		s = 1
	}
	if t := c.tab.Load(); t != nil && picks >= 0 && picks < len(t[s]) {
		return t[s][picks]
	}
	if picks < 0 || picks >= guaranteeMax {
		return compute(picks, seeded)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tab.Load()
	if t != nil && picks < len(t[s]) {
		return t[s][picks]
	}
	n := max(guaranteeMin, picks+1)
	if t != nil {
		n = max(n, 2*len(t[0]))
	}
	n = min(n, guaranteeMax)
	var nt [2][]Guarantee
	for si := range nt {
		nt[si] = make([]Guarantee, n)
		for p := range nt[si] {
			nt[si][p] = compute(p, si == 1)
		}
	}
	c.tab.Store(&nt)
	return nt[s][picks]
}

// newGuarantee computes guarantee(picks, seeded).
func (r *Recommender) newGuarantee(picks int, seeded bool) Guarantee {
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
