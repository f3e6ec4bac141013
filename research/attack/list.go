package attack

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
)

// DPLPList is the method name of dplp-list results.
const DPLPList = "dplp-list"

// listSim releases dplp-list lists of a game's observers in both worlds,
// as the deployed release path does (release.Recommender.sampleList): the
// base score's public part, the evidence score's s - s_pub and public
// wedge counts (when the evidence score is another score), u's zero block,
// L1(u) = Evidence(u, unit).L1 of the evidence scorer and deg(u), then
// list.Release with the game's combination. Candidates are in ascending id
// order (the release path's canonical order). One per goroutine.
type listSim struct {
	eps  float64
	comb list.Combine
	q    [2][]list.Query
	l1   [2][]float64 // L1(u) under the unit, before the test-only scale
	ids  [2][][]int32 // the explicit candidates, in q's order
	zero [2][][]int32 // the zero block's members, ascending
	scr  list.Scratch
}

func newListSim(gm *game, m *mechanism) *listSim {
	ls := &listSim{eps: m.eps, comb: gm.comb}
	var res, evr score.Result
	for b := range 2 {
		bw := gm.sc[b].NewWorker()
		var ew *score.Worker
		if gm.ev[b] != gm.sc[b] {
			ew = gm.ev[b].NewWorker()
		}
		for _, o := range gm.obs {
			bw.Score(o, &res)
			evw := bw
			if ew != nil {
				ew.Score(o, &evr)
				evw = ew
			}
			idx := make([]int, len(res.Cands))
			for j := range idx {
				idx[j] = j
			}
			slices.SortFunc(idx, func(a, c int) int { return int(res.Cands[a]) - int(res.Cands[c]) })
			l1 := gm.ev[b].Evidence(o, m.unit).L1
			q := list.Query{Zero: res.Zero, L1: l1 * m.scale, MaxEvid: gm.g[b].Degree(o)}
			ids := make([]int32, 0, len(idx))
			for _, j := range idx {
				v := res.Cands[j]
				ids = append(ids, v)
				q.Pub = append(q.Pub, res.Pub[j])
				s, ps := evw.At(v)
				q.Evid = append(q.Evid, s-ps)
				if ew != nil {
					q.Count = append(q.Count, ps)
				}
			}
			ls.q[b] = append(ls.q[b], q)
			ls.l1[b] = append(ls.l1[b], l1)
			ls.ids[b] = append(ls.ids[b], ids)
			ls.zero[b] = append(ls.zero[b], bw.ZeroCands(nil))
		}
	}
	return ls
}

// feature releases one list of observer i in world b and returns the
// target's position in it (1..k), or 0 when it is absent. Zero-block
// indexes map to the block's members in ascending order: list.Release
// draws them uniformly without replacement, and the block is exchangeable.
func (ls *listSim) feature(b, i, k int, target int32, rng *rand.Rand) (int, error) {
	q := &ls.q[b][i]
	out, err := list.Release(q, ls.eps, ls.comb, k, rng, &ls.scr)
	if err != nil {
		return 0, err
	}
	nc, zero := len(q.Pub), ls.zero[b][i]
	for j, id := range out.IDs {
		v := int32(-1)
		switch {
		case id < nc:
			v = ls.ids[b][i][id]
		case id-nc < len(zero):
			v = zero[id-nc]
		default:
			return 0, fmt.Errorf("attack: zero-block index %d outside a block of %d", id-nc, len(zero))
		}
		if v == target {
			return j + 1, nil
		}
	}
	return 0, nil
}

// l1s returns each observer's L1(u), the larger of the two worlds' (they
// are equal: L1(u) reads invariant data only).
func (ls *listSim) l1s() []float64 {
	out := make([]float64, len(ls.l1[0]))
	for i := range out {
		out[i] = max(ls.l1[0][i], ls.l1[1][i])
	}
	return out
}

// listClaim fills the claimed eps of a dplp-list observation: each of an
// observer's lists is charged accountant.PureList(list.Cost(L1(u), eps,
// comb)) (eps, or 0 when the list reads no evidence), whatever K; the
// observers' charges add (privacy-model §6). Under the pair unit a secret
// of m > 1 pairs (of one party: the triad secret is w's pairs) is covered
// by group privacy, m x the pair-unit claim (privunit.GroupCost).
func listClaim(res *Result, cfg *Config, gm *game) {
	var per float64 // every charged observer's lists cost the same eps
	charged := 0
	for _, l1 := range res.EvidenceL1 {
		if c := accountant.PureList(list.Cost(l1, cfg.Eps, gm.comb)).Eps; c > 0 {
			per = c
			charged++
		}
	}
	observers := len(gm.obs)
	free := observers - charged
	v := per * float64(charged*cfg.Lists)
	group := cfg.Unit == privunit.Pair && gm.pairs > 1
	if group {
		v = privunit.GroupCost(v, gm.pairs)
	}
	res.EpsClaimed = &v
	res.ClaimProven = true
	res.ExceedsClaim = res.EpsLowerBound > v
	l1s := make([]string, len(res.EvidenceL1))
	for i, l1 := range res.EvidenceL1 {
		l1s[i] = fmt.Sprintf("%.4g", l1)
	}
	notes := []string{
		fmt.Sprintf("proven (dplp-list: the Laplace mechanism on the private evidence vector, eps-DP per list under the %s unit whatever K; default combination, no training veto)", cfg.Unit),
		fmt.Sprintf("%d list(s) of %d picks (%d observer(s) x %d), %g per list", observers*cfg.Lists, cfg.K, observers, cfg.Lists, cfg.Eps),
		fmt.Sprintf("evidence l1 bound L1(u) under the %s unit: %s (Laplace scale L1(u)/eps)", cfg.Unit, strings.Join(l1s, ", ")),
	}
	if free > 0 {
		notes = append(notes, fmt.Sprintf("%d observer(s) with L1(u) = 0 read no evidence: 0 per list", free))
	}
	if group {
		notes = append(notes, fmt.Sprintf("group privacy: the secret is %d protected pairs of one party, %d x the pair-unit claim", gm.pairs, gm.pairs))
	}
	if observers > 1 {
		notes = append(notes, "a coalition's claim is the sum of its members' budgets (privacy-model §6)")
	}
	res.ClaimNote = strings.Join(notes, "; ")
}
