package release

import (
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

// TestSampleEveryMethodDistinctCandidates drives the Sampler through
// InputOf for every release method, with the zero block drawn by rejection
// and listed: lists are full-length, distinct, and never name the user or
// a neighbour.
func TestSampleEveryMethodDistinctCandidates(t *testing.T) {
	g, err := gen.BarabasiAlbert(400, 2, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := score.New(g, p, score.CN)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []calib.Method{calib.Exponential, calib.Laplace, calib.LaplacePeeling, calib.Staircase, calib.NonPrivate, calib.PublicOnly} {
		for _, listed := range []bool{false, true} {
			cfg := calib.Config{Method: m, Kind: score.CN, Eps: 0.1}
			w := sc.NewWorker()
			var r score.Result
			var sm Sampler
			rng := randx.Seeded(3)
			for u := int32(0); u < 400; u += 7 {
				w.Score(u, &r)
				plan := cfg.Plan(calib.QueryOf(&r))
				in := InputOf(w, &r, g.N(), false)
				if listed {
					in.InZero = nil
				}
				out, err := sm.Sample(&plan, &in, 30, rng)
				if err != nil {
					t.Fatal(err)
				}
				if len(out.IDs) != min(30, r.NumCandidates()) {
					t.Fatalf("%v: list of %d", m, len(out.IDs))
				}
				seen := map[int32]bool{}
				for _, v := range out.IDs {
					if v == u || g.HasEdge(u, v) || seen[v] {
						t.Fatalf("%v: invalid or repeated candidate %d for %d", m, v, u)
					}
					seen[v] = true
				}
			}
		}
	}
}
