package calib

import (
	"testing"

	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

func TestReleaseDistinctCandidates(t *testing.T) {
	g, err := gen.BarabasiAlbert(400, 2, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Method{Exponential, Laplace, LaplacePeeling, Staircase, NonPrivate, PublicOnly} {
		sc, err := score.New(g, p, score.CN)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Method: m, Kind: score.CN, Eps: 0.1}
		w := sc.NewWorker()
		var r score.Result
		var rl Releaser
		rng := randx.Seeded(3)
		for u := int32(0); u < 400; u += 7 {
			w.Score(u, &r)
			plan := cfg.Plan(QueryOf(&r))
			list, err := rl.Release(&plan, w, &r, 30, rng, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != min(30, r.NumCandidates()) {
				t.Fatalf("%v: list of %d", m, len(list))
			}
			seen := map[int32]bool{}
			for _, v := range list {
				if v == u || g.HasEdge(u, v) || seen[v] {
					t.Fatalf("%v: invalid or repeated candidate %d for %d", m, v, u)
				}
				seen[v] = true
			}
		}
	}
}
