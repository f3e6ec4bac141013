// The theory experiment's measurements: query sampling, per-query data, rank and relative losses,
// and the paper's Theorem 1 bound.

package experiment

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

// TheoryRow is one cell of the theory experiment (theory.json), averaged
// over the sampled queries and the mechanism's draws:
//
//   - rel_loss: L_rel = E[sum_{i<=K} s(u, u^A_i) - s(u, u^App_i)] (paper
//     Section 5.1), the score lost against the base ranking;
//   - rel_loss_eps0: its exact eps_p -> 0 limit, the top-K sum minus K times
//     the candidates' mean score (uniform sampling; 0 when Delta_s(u) = 0,
//     where the exact top-K is released);
//   - k_kappa: K * kappa_u with kappa_u the largest gap between consecutive
//     scores of the base ranking (the Proposition's eps_p -> 0 bound);
//     bound_holds_frac: the fraction of queries whose limit is <= it;
//   - rank_loss: R = E[sum_{i<j<=K} [d(u,u_i) - d(u,u_j)]_+] over the released
//     list (Section 5.2, the oracle's loss being 0), with its values for the
//     non-private base ranking and for a uniform random list (the eps_p -> 0
//     limit, exact);
//   - theorem_bound: the shape [2K eps(|V|) + L_rel/|V|]^(1/(KD)) of Theorem 1
//     with eps(|V|) = sqrt(2 ln(2/delta)/|V|) + 7 ln(2/delta)/(3(|V|-1)) and
//     delta = 0.05/(4K^2) (so it holds with probability 0.95); Theorem 1
//     bounds rank_loss by a constant times it.
type TheoryRow struct {
	Nodes          int     `json:"nodes"`
	Dim            int     `json:"dim"`
	Radius         float64 `json:"radius"`
	MeanDegree     float64 `json:"mean_degree"`
	Score          string  `json:"score"`
	Eps            float64 `json:"eps"`
	K              int     `json:"k"`
	Seed           int     `json:"seed"`
	Queries        int     `json:"queries"`
	RelLoss        float64 `json:"rel_loss"`
	RelLossEps0    float64 `json:"rel_loss_eps0"`
	KKappa         float64 `json:"k_kappa"`
	BoundHoldsFrac float64 `json:"bound_holds_frac"`
	RankLoss       float64 `json:"rank_loss"`
	RankLossNonpri float64 `json:"rank_loss_nonprivate"`
	RankLossUnif   float64 `json:"rank_loss_uniform"`
	TheoremBound   float64 `json:"theorem_bound"`
	ZeroNoise      int     `json:"zero_noise_queries"`
	Seconds        float64 `json:"seconds"`
}

// theoryKey is the canonical configuration of a theory cell.
type theoryKey struct {
	Version string  `json:"version"`
	Kind    string  `json:"kind"`
	Nodes   int     `json:"nodes"`
	Dim     int     `json:"dim"`
	Radius  float64 `json:"radius"`
	Score   string  `json:"score"`
	Eps     float64 `json:"eps"`
	K       int     `json:"k"`
	Sigma   float64 `json:"sigma"`
	Queries int     `json:"queries"`
	Draws   int     `json:"draws"`
	Seed    int     `json:"seed"`
}

type theoryCell struct {
	n    int
	kind score.Kind
	eps  float64
	k    int
	seed int
	key  theoryKey
	hash string
	res  *TheoryRow
}

// theoryCells lists the union of the three sweeps, deduplicated.
func (t *TheoryConfig) cells(radius float64) []*theoryCell {
	type pt struct {
		n   int
		eps float64
		k   int
	}
	var pts []pt
	seen := map[pt]bool{}
	add := func(x pt) {
		if !seen[x] {
			seen[x] = true
			pts = append(pts, x)
		}
	}
	for _, e := range t.Eps {
		add(pt{t.BaseNodes, e, t.BaseK})
	}
	for _, k := range t.K {
		add(pt{t.BaseNodes, t.BaseEps, k})
	}
	for _, n := range t.Nodes {
		add(pt{n, t.BaseEps, t.BaseK})
	}
	var out []*theoryCell
	for _, s := range t.Scores {
		kind, _ := score.ParseKind(s)
		for _, x := range pts {
			for seed := 0; seed < t.Seeds; seed++ {
				c := &theoryCell{n: x.n, kind: kind, eps: x.eps, k: x.k, seed: seed}
				c.key = theoryKey{Version: CodeVersion, Kind: "theory", Nodes: x.n, Dim: t.Dim, Radius: radius,
					Score: scoreName(kind), Eps: x.eps, K: x.k, Sigma: t.Sigma, Queries: t.Queries, Draws: t.Draws, Seed: seed}
				c.hash = hashKey(c.key)
				out = append(out, c)
			}
		}
	}
	return out
}

// queryData is what a theory cell needs of one query, computed once per
// (graph, score): candidate scores and latent distances, the base ranking's
// prefix sums and largest consecutive gap, and the uniform-list limits.
type queryData struct {
	s, d         []float64 // per candidate (non-neighbours of u)
	prefix       []float64 // prefix[i] = sum of the i largest scores
	kappa        float64
	meanS        float64
	pairGap      float64 // mean over ordered distinct candidate pairs of [d_a - d_b]_+
	deltaS, sMax float64
}

// sampleQueries draws up to q nodes with at least one neighbour and one
// non-neighbour, ascending.
func sampleQueries(lg *gen.LatentGraph, q int, r interface{ IntN(int) int }) []int32 {
	var elig []int32
	for u := int32(0); int(u) < lg.N(); u++ {
		if d := lg.Degree(u); d >= 1 && d < lg.N()-1 {
			elig = append(elig, u)
		}
	}
	for i := len(elig) - 1; i > 0; i-- { // Fisher-Yates
		j := r.IntN(i + 1)
		elig[i], elig[j] = elig[j], elig[i]
	}
	elig = elig[:min(q, len(elig))]
	slices.Sort(elig)
	return elig
}

// theoryQueryData scores every query against all its candidates.
func theoryQueryData(lgr *gen.LatentGraph, prot *protect.Set, kind score.Kind, queries []int32) ([]queryData, error) {
	sc, err := score.New(lgr.Graph, prot, kind)
	if err != nil {
		return nil, err
	}
	idx := make(map[int32]int, len(queries))
	for i, q := range queries {
		idx[q] = i
	}
	out := make([]queryData, len(queries))
	err = sc.EachWorker(queries, func(_ int, wk *score.Worker, r *score.Result) {
		u := r.U
		q := &out[idx[u]]
		nb := lgr.Neighbors(u)
		m := lgr.N() - 1 - len(nb)
		q.s, q.d = make([]float64, 0, m), make([]float64, 0, m)
		j := 0
		for v := int32(0); int(v) < lgr.N(); v++ {
			if j < len(nb) && nb[j] == v {
				j++
				continue
			}
			if v == u {
				continue
			}
			s, _ := wk.At(v)
			q.s = append(q.s, s)
			q.d = append(q.d, lgr.Dist(u, v))
		}
		q.deltaS, q.sMax = r.DeltaS, r.SMax
		desc := slices.Clone(q.s)
		slices.SortFunc(desc, func(a, b float64) int { return cmp.Compare(b, a) })
		q.prefix = make([]float64, len(desc)+1)
		for i, x := range desc {
			q.prefix[i+1] = q.prefix[i] + x
			if i > 0 {
				q.kappa = math.Max(q.kappa, desc[i-1]-x)
			}
		}
		q.meanS = q.prefix[len(desc)] / float64(len(desc))
		q.pairGap = meanPairGap(q.d)
	})
	return out, err
}

// meanPairGap is the mean over ordered pairs of distinct candidates (a, b)
// of [d_a - d_b]_+, the expected rank loss of one pair of a uniform random
// list: with d sorted ascending, the sum over a < b of d_(b) - d_(a) is
// sum_i d_(i) (2i - m + 1) (0-based), in O(m log m).
func meanPairGap(d []float64) float64 {
	m := len(d)
	if m < 2 {
		return 0
	}
	asc := slices.Clone(d)
	slices.Sort(asc)
	var gap float64
	for i, x := range asc {
		gap += x * float64(2*i-m+1)
	}
	return gap / (float64(m) * float64(m-1))
}

// rankLoss is sum over i < j of [d_i - d_j]_+ for the picked list.
func rankLoss(d []float64, picks []int) float64 {
	var r float64
	for i, a := range picks {
		for _, b := range picks[i+1:] {
			if x := d[a] - d[b]; x > 0 {
				r += x
			}
		}
	}
	return r
}

// theoryMeasure runs one cell: Draws releases per query, in parallel over
// queries, each query's noise from its own stream.
func theoryMeasure(qd []queryData, c *theoryCell, t TheoryConfig) TheoryRow {
	cfg := calib.Config{Method: calib.Exponential, Calibration: calib.Rigorous, Kind: c.kind, Eps: c.eps}
	type perQ struct {
		rel, lim0, kk, hold, r, rnp, ru float64
		zero                            bool
	}
	res := make([]perQ, len(qd))
	base := derivedSeed("theory-eval", c.hash)
	type scratch struct {
		u     mech.Utilities
		picks []int
	}
	par.Run(context.Background(), len(qd), par.Options{}, func(int) *scratch { return new(scratch) }, func(sc *scratch, i int) error {
		q := &qd[i]
		k := min(c.k, len(q.s))
		plan := cfg.Plan(calib.Query{DeltaS: q.deltaS, SMax: q.sMax})
		sc.u.Vals = q.s
		rng := randx.Derive(base, uint64(i))
		p := &res[i]
		p.zero = plan.Exact()
		for range t.Draws {
			sc.picks, _ = plan.Sample(&sc.u, k, rng, sc.picks[:0]) // valid inputs: cannot fail
			var got float64
			for _, j := range sc.picks {
				got += q.s[j]
			}
			p.rel += q.prefix[k] - got
			p.r += rankLoss(q.d, sc.picks)
			sc.picks, _ = mech.ExactTopK(&sc.u, k, rng, sc.picks[:0])
			p.rnp += rankLoss(q.d, sc.picks)
		}
		p.rel /= float64(t.Draws)
		p.r /= float64(t.Draws)
		p.rnp /= float64(t.Draws)
		if !p.zero {
			p.lim0 = q.prefix[k] - float64(k)*q.meanS
		}
		p.kk = float64(k) * q.kappa
		if p.lim0 <= p.kk*(1+1e-12)+1e-12 {
			p.hold = 1
		}
		p.ru = float64(k*(k-1)/2) * q.pairGap
		return nil
	})
	row := TheoryRow{Nodes: c.n, Dim: t.Dim, Score: scoreName(c.kind), Eps: c.eps, K: c.k, Seed: c.seed, Queries: len(qd)}
	for _, p := range res { // in query order: deterministic sums
		row.RelLoss += p.rel
		row.RelLossEps0 += p.lim0
		row.KKappa += p.kk
		row.BoundHoldsFrac += p.hold
		row.RankLoss += p.r
		row.RankLossNonpri += p.rnp
		row.RankLossUnif += p.ru
		if p.zero {
			row.ZeroNoise++
		}
	}
	nq := float64(len(qd))
	row.RelLoss /= nq
	row.RelLossEps0 /= nq
	row.KKappa /= nq
	row.BoundHoldsFrac /= nq
	row.RankLoss /= nq
	row.RankLossNonpri /= nq
	row.RankLossUnif /= nq
	row.TheoremBound = theoremBound(c.n, c.k, t.Dim, row.RelLoss)
	return row
}

// theoremBound is the shape of Theorem 1's bound (see TheoryRow).
func theoremBound(n, k, dim int, relLoss float64) float64 {
	delta := 0.05 / (4 * float64(k*k))
	l := math.Log(2 / delta)
	eps := math.Sqrt(2*l/float64(n)) + 7*l/(3*float64(n-1))
	return math.Pow(2*float64(k)*eps+relLoss/float64(n), 1/float64(k*dim))
}
