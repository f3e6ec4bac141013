package audit

import (
	"math"
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// eachNeighbour enumerates every u-neighbouring graph G' of (g, p)
// (protect.Neighbours: every w != u and non-empty subset of prot(w) \ {u}),
// builds u's query on G', checks the base-score bound of privacy-model §4
// (|s - s'| <= Delta_s; s_pub, Delta_s, S_max and the candidates
// unchanged), counting in rep, and calls fn with G' and its query when the
// candidates and the invariant quantities agree.
func eachNeighbour(g *graph.Graph, p *protect.Set, kind score.Kind, u int32, q *query, rep *Report, fn func(w int32, xs []int32, q2 *query) error) error {
	return eachNeighbourUnit(g, p, kind, u, q, rep, privunit.Party, fn)
}

// eachNeighbourUnit is eachNeighbour over the neighbouring graphs of a
// unit: party, every non-empty subset of one party's pairs (Definition 1);
// pair, every single protected pair. The score checks hold each toggle to
// the unit's per-candidate bound (Delta_s(u) for party, DeltaPair for
// pair), and require both bounds invariant.
func eachNeighbourUnit(g *graph.Graph, p *protect.Set, kind score.Kind, u int32, q *query, rep *Report, unit privunit.Unit, fn func(w int32, xs []int32, q2 *query) error) error {
	bound := q.info.DeltaS
	if unit == privunit.Pair {
		bound = q.info.DeltaPair
	}
	return p.Neighbours(g, u, 0, func(w int32, xs []int32, g2 *graph.Graph) error {
		if unit == privunit.Pair && len(xs) != 1 {
			return nil
		}
		q2, err := buildQuery(g2, p, kind, u)
		if err != nil {
			return err
		}
		rep.ScoreChecks++
		if !slices.Equal(q.cands, q2.cands) || q.info.DeltaS != q2.info.DeltaS || q.info.SMax != q2.info.SMax || q.info.DeltaPair != q2.info.DeltaPair {
			rep.ScoreViolations++
			return nil
		}
		for i := range q.s {
			if math.Abs(q.s[i]-q2.s[i]) > bound+tol || q.pub[i] != q2.pub[i] {
				rep.ScoreViolations++
				break
			}
		}
		return fn(w, xs, &q2)
	})
}
