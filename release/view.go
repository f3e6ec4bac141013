package release

// What one user's release reads (the audits' view) and its influence set.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/dplp/dplp/calib"
)

// UserView is one user's scored candidates as the deployed path sees them:
// every candidate (zero block included) with its utility under the plan,
// and the plan itself. The exact end-to-end audit computes list
// probabilities from it; it is O(N) per user and meant for small graphs.
type UserView struct {
	IDs       []int32   // candidates, ascending
	Utilities []float64 // utility of IDs[i]
	Pub       []float64 // s_pub of IDs[i]
	Plan      calib.Plan
}

// View scores user u with the real worker and calibrates the plan exactly
// as a release does.
func (r *Recommender) View(u int32) (UserView, error) {
	if u < 0 || int(u) >= r.g.N() {
		return UserView{}, fmt.Errorf("release: user id %d out of range", u)
	}
	if r.list != nil {
		return UserView{}, errors.New("release: a dplp-list model has no per-candidate utilities (audit it with audit.AuditList)")
	}
	ws := r.state()
	defer r.pool.Put(ws)
	ws.w.Score(u, &ws.r)
	res := &ws.r
	plan := r.cfg.Plan(calib.QueryOf(res))
	if err := checkPlan(&plan); err != nil {
		return UserView{}, err
	}
	type c struct {
		id     int32
		q, pub float64
	}
	all := make([]c, 0, len(res.Cands)+res.Zero)
	for i, v := range res.Cands {
		all = append(all, c{v, plan.Utility(res.S[i], res.Pub[i]), res.Pub[i]})
	}
	for _, v := range ws.w.ZeroCands(nil) {
		all = append(all, c{v, plan.Utility(0, 0), 0})
	}
	slices.SortFunc(all, func(a, b c) int { return cmp.Compare(a.id, b.id) })
	v := UserView{Plan: plan}
	for _, x := range all {
		v.IDs = append(v.IDs, x.id)
		v.Utilities = append(v.Utilities, x.q)
		v.Pub = append(v.Pub, x.pub)
	}
	return v, nil
}

// Influencers returns the node ids whose protected pairs can change u's
// utilities (all = every party), as charged to exposure.
func (r *Recommender) Influencers(u int32) (ids []int32, all bool) { return r.infl.ids(u) }
