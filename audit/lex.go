package audit

import (
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech"
)

// The exact audit of the lexicographic mechanism (DPLP-pub,
// docs/privacy-model.md §11). Its lists are ranked by s_pub first, so
// their exact probabilities come from mech.LexListLogProb on (s_pub,
// utility), and each list is checked against its own cost: eps_p times
// its number of random picks (calib.Plan.Picks), which may be well below
// K x eps_p. The cost must also be the same in G and G' (it is computed
// from invariant data only); a difference counts as a violation.

// exactDistQ is exactDist for every plan: the lexicographic plan's list
// distribution on (pub, vals), any other plan's as exactDist.
func exactDistQ(cfg *calib.Config, plan *calib.Plan, vals, pub []float64, k int) (dist, bool, error) {
	if !plan.Lexicographic() {
		return exactDist(cfg, plan, vals, k)
	}
	lists := allLists(len(vals), k)
	d := dist{lists: lists, logp: make([]float64, len(lists))}
	for i, l := range lists {
		lp, err := mech.LexListLogProb(pub, vals, plan.Scale, l)
		if err != nil {
			return d, false, err
		}
		d.logp[i] = lp
	}
	return d, true, nil
}

// listBound is the eps a released list of length k of this query may
// reveal: the lexicographic plan's cost of the list (its random picks x
// eps_p, computed in G), otherwise claimed. invariant is false when the
// lexicographic cost differs between G and G' (plan2, pub2), which would
// make the cost itself leak. The cost reads the public scores and the
// candidate count only (never the utilities).
func listBound(claimed float64, plan, plan2 *calib.Plan, pub, pub2 []float64, k int) (bound float64, invariant bool, err error) {
	if !plan.Lexicographic() {
		return claimed, true, nil
	}
	picks, err := plan.Picks(&mech.Utilities{Vals: make([]float64, len(pub))}, pub, k)
	if err != nil {
		return 0, false, err
	}
	picks2, err := plan2.Picks(&mech.Utilities{Vals: make([]float64, len(pub2))}, pub2, k)
	if err != nil {
		return 0, false, err
	}
	return plan.ListCost(picks), picks == picks2, nil
}
