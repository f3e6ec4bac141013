package release_test

import (
	"math"
	"slices"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/exact"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// TestSampleScoresDistribution: the deployment sampler's first pick, with
// utilities computed only for proposed candidates (calib.Plan.SampleScores)
// and with every utility computed (the eager path), follows the exact
// probabilities of the exponential mechanism on the user's candidates
// (exact.Sampler.ListProb; the zero block as one category).
func TestSampleScoresDistribution(t *testing.T) {
	g, p, m := fixture(t)
	w, r := scoredUser(t, g, p)
	// The model's transform: SampleScores applies to it.
	mcfg := calib.Config{Method: calib.Exponential, Calibration: calib.Rigorous, Kind: score.AA, Eps: m.EpsP, Transform: m, ExactSampler: true}
	mplan := mcfg.Plan(calib.QueryOf(&r))
	if _, ok, err := mplan.SampleScores(r.S, []mech.Block{{Val: mplan.Utility(0, 0), Size: r.Zero}}, 1, randx.Seeded(1), nil); !ok || err != nil {
		t.Fatalf("SampleScores does not apply to a model's plan (ok %v, err %v)", ok, err)
	}
	// A linear transform with eps chosen so that the candidates' utilities
	// span about half a bucket of the exact sampler (weights up to about
	// 1.6x apart), where a sampler that ignored them would fail.
	lo, hi := slices.Min(r.S), slices.Max(r.S)
	eps := r.DeltaS / (hi - lo)
	cfg := calib.Config{Method: calib.Exponential, Calibration: calib.Rigorous, Kind: score.AA, Eps: eps, Transform: linT{}, ExactSampler: true}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	plan := cfg.Plan(calib.QueryOf(&r))
	if plan.Exact() {
		t.Fatal("an exact plan")
	}
	idx := make([]int, len(r.Cands))
	for i := range idx {
		idx[i] = i
	}
	uv := mech.Utilities{Vals: plan.AppendUtilities(nil, r.S, r.Pub, idx), Blocks: []mech.Block{{Val: plan.Utility(0, 0), Size: r.Zero}}}
	ex, err := exact.New(eps, plan.Delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Categories: candidate i, then the zero block.
	nc := len(r.Cands)
	exp := make([]float64, nc+1)
	for i := range nc + r.Zero {
		pr, err := ex.ListProb(&uv, []int{i})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := pr.Float64()
		exp[min(i, nc)] += f
	}
	cat := map[int32]int{}
	for i, c := range r.Cands {
		cat[c] = i
	}
	// held: the candidates served in place (UserInput.HeldAt, as a
	// scorer's table serves them after score.Worker.ScoreHeld) with a
	// loose lower bound of the scores.
	held := heldInput(g, w, &r, lo/2, hi)
	for _, mode := range []string{"lazy", "eager", "held"} {
		eager := mode == "eager"
		restore := release.SetNoLazyForTest(eager)
		var sm release.Sampler
		rng := randx.Seeded(11)
		obs := make([]int, nc+1)
		const draws = 200000
		for range draws {
			in := release.UserInput{N: g.N(), Cands: r.Cands, S: r.S, Pub: r.Pub, Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands, DeltaS: r.DeltaS, SMax: r.SMax}
			if mode == "held" {
				in = held
			}
			out, err := sm.Sample(&plan, &in, 1, rng)
			if err != nil {
				t.Fatal(err)
			}
			if out.Picks != 1 || len(out.IDs) != 1 {
				t.Fatalf("picks %d, ids %v", out.Picks, out.IDs)
			}
			if i, ok := cat[out.IDs[0]]; ok {
				obs[i]++
			} else if w.InZero(out.IDs[0]) {
				obs[nc]++
			} else {
				t.Fatalf("released %d, neither a candidate nor in the zero block", out.IDs[0])
			}
		}
		restore()
		if stat, df, pv := mech.ChiSquare(obs, exp); !(pv > 1e-4) {
			t.Fatalf("%s: chi-square %.1f df %d p %.3g\nobs %v\nexp %v", mode, stat, df, pv, obs, exp)
		}
	}
}

// linT is the utility 3s (its sensitivity 3 Delta_s), with exact bounds
// (multiplication by a positive constant is monotone in floating point).
type linT struct{}

func (linT) Utility(s, _, _ float64) float64                    { return 3 * s }
func (linT) Delta(ds, _ float64) float64                        { return 3 * ds }
func (linT) ScoreUtility(s, _ float64) float64                  { return 3 * s }
func (linT) UtilityBounds(lo, hi, _ float64) (float64, float64) { return 3 * lo, 3 * hi }

// scoredUser scores the fixture's users with AA until one has at least 20
// scored candidates, a zero block and Delta_s > 0; w holds its query.
func scoredUser(t *testing.T, g *graph.Graph, p *protect.Set) (*score.Worker, score.Result) {
	t.Helper()
	sc, err := score.New(g, p, score.AA)
	if err != nil {
		t.Fatal(err)
	}
	w := sc.NewWorker()
	var r score.Result
	for v := range int32(g.N()) {
		w.Score(v, &r)
		if len(r.Cands) >= 20 && r.Zero > 0 && r.DeltaS > 0 {
			return w, r
		}
	}
	t.Fatal("no user with 20 scored candidates")
	return nil, r
}

// heldInput is the input of the user r scored (by w) with its candidates
// held rather than listed: HeldAt serves r's Cands and S in their order,
// with lo and hi as the range stated for them.
func heldInput(g *graph.Graph, w *score.Worker, r *score.Result, lo, hi float64) release.UserInput {
	return release.UserInput{N: g.N(), Held: len(r.Cands), HeldAt: func(i int) (int32, float64) { return r.Cands[i], r.S[i] },
		Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands, DeltaS: r.DeltaS, SMax: r.SMax, SRange: true, SLo: lo, SHi: hi}
}

// TestSampleHeldMatchesListed: a user's candidates served in place
// (UserInput.Held) give the list the same candidates listed give, pick for
// pick with the same generator: the exact sampler reading the proposed
// candidates in place when it applies (the same range stated), and every
// other plan (an exact plan, the Gumbel sampler, a seeded canonical run)
// the candidates copied out.
func TestSampleHeldMatchesListed(t *testing.T) {
	g, p, m := fixture(t)
	w, r := scoredUser(t, g, p)
	lo, hi := slices.Min(r.S), slices.Max(r.S)
	base := calib.Config{Method: calib.Exponential, Calibration: calib.Rigorous, Kind: score.AA, Eps: m.EpsP, Transform: m, ExactSampler: true}
	gumbel := base
	gumbel.ExactSampler = false
	wide := base
	wide.Transform, wide.Eps = linT{}, 8*r.DeltaS/(hi-lo) // utilities over many buckets: every one computed
	for _, tc := range []struct {
		name      string
		cfg       calib.Config
		deltaS    float64 // 0: exact (no noise)
		canonical bool
		lo        float64 // the range stated for the held scores
	}{
		{"exact sampler", base, r.DeltaS, false, lo},
		{"exact sampler, loose lower bound", base, r.DeltaS, false, lo / 4},
		{"exact sampler, wide utilities", wide, r.DeltaS, false, lo},
		{"gumbel", gumbel, r.DeltaS, false, lo},
		{"no noise", base, 0, false, lo},
		{"seeded canonical", base, r.DeltaS, true, lo / 4},
		{"seeded canonical, gumbel (keyed)", gumbel, r.DeltaS, true, 0},
		{"gumbel, loose lower bound", gumbel, r.DeltaS, false, lo / 4},
		{"exact sampler, bounds refused (NaN)", base, r.DeltaS, false, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			q := calib.QueryOf(&r)
			q.DeltaS = tc.deltaS
			plan := tc.cfg.Plan(q)
			listed := release.UserInput{N: g.N(), Cands: r.Cands, S: r.S, Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands,
				DeltaS: tc.deltaS, SMax: r.SMax, SRange: true, SLo: tc.lo, SHi: hi, Canonical: tc.canonical, Cand: w.CandScore}
			if tc.canonical || !plan.ScoresApply() {
				listed.SLo = lo // copied out, the held scores get their exact range
			}
			held := heldInput(g, w, &r, tc.lo, hi)
			held.DeltaS, held.Canonical, held.Cand = tc.deltaS, tc.canonical, w.CandScore
			var sl, sh release.Sampler
			for seed := range uint64(40) {
				for _, k := range []int{1, 5, 30} {
					a, errA := sl.Sample(&plan, &listed, k, randx.Seeded(seed))
					b, errB := sh.Sample(&plan, &held, k, randx.Seeded(seed))
					if errA != nil || errB != nil {
						t.Fatalf("seed %d k %d: errors %v, %v", seed, k, errA, errB)
					}
					if !slices.Equal(a.IDs, b.IDs) || a.Picks != b.Picks || a.Candidates != b.Candidates || a.Exact != b.Exact {
						t.Fatalf("seed %d k %d: held %v (picks %d of %d), listed %v (picks %d of %d)", seed, k, b.IDs, b.Picks, b.Candidates, a.IDs, a.Picks, a.Candidates)
					}
				}
			}
		})
	}
	// A held input with listed candidates too, or without its lookup, is
	// refused.
	plan := base.Plan(calib.QueryOf(&r))
	bad := heldInput(g, w, &r, lo, hi)
	bad.Cands, bad.S = r.Cands[:1], r.S[:1]
	var sm release.Sampler
	if _, err := sm.Sample(&plan, &bad, 5, randx.Seeded(1)); err == nil {
		t.Fatal("held and listed candidates together accepted")
	}
	bad = heldInput(g, w, &r, lo, hi)
	bad.HeldAt = nil
	if _, err := sm.Sample(&plan, &bad, 5, randx.Seeded(1)); err == nil {
		t.Fatal("held candidates without HeldAt accepted")
	}
}
