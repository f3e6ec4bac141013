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
	return workerFuncsOf(w).input(res, n, canonical)
}

// workerFuncs are a worker's lookups as the func values UserInput holds:
// made once per worker (each method value is an allocation), not per user.
type workerFuncs struct {
	inZero   func(v int32) bool
	zeroList func(dst []int32) []int32
	cand     func(v int32) (float64, bool)
	heldAt   func(i int) (int32, float64)
}

func workerFuncsOf(w *score.Worker) workerFuncs {
	return workerFuncs{inZero: w.InZero, zeroList: w.ZeroCands, cand: w.CandScore, heldAt: w.HeldAt}
}

// input is InputOf with the worker's lookups f.
func (f workerFuncs) input(res *score.Result, n int, canonical bool) UserInput {
	return UserInput{N: n, Cands: res.Cands, S: res.S, Pub: res.Pub, Zero: res.Zero,
		InZero: f.inZero, ZeroList: f.zeroList, Cand: f.cand, DeltaS: res.DeltaS, SMax: res.SMax,
		SRange: res.SRange, SLo: res.SLo, SHi: res.SHi, Canonical: canonical, Held: res.Held, HeldAt: f.heldAt}
}
