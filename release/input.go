package release

import "github.com/dplp/dplp/score"

// InputOf is the UserInput of the user res was scored for by w on a graph
// of n nodes: the candidates reached by a wedge with s and s_pub, the zero
// block (drawn by rejection through w.InZero when it is a large share of
// the graph, else listed), the candidates by id (w.CandScore), and the
// invariant Delta_s and S_max. res and w
// are read during Sample only. The research harness (attacks) drives the
// deployed Sampler through it.
func InputOf(w *score.Worker, res *score.Result, n int, canonical bool) UserInput {
	return UserInput{N: n, Cands: res.Cands, S: res.S, Pub: res.Pub, Zero: res.Zero,
		InZero: w.InZero, ZeroList: w.ZeroCands, Cand: w.CandScore, DeltaS: res.DeltaS, SMax: res.SMax,
		SRange: res.SRange, SLo: res.SLo, SHi: res.SHi, Canonical: canonical}
}
