package release_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// A canonical (seeded) list is a function of the candidates as a set: the
// same user input with its candidates in another order gives the same ids,
// for the keyed float plan (a walk over the ids, or noise keyed by
// candidate id with utilities on demand or all computed) and for the plans
// that sort instead (the exact sampler, the lexicographic DPLP-pub plan,
// the Laplace baseline). Without Canonical the keyed plan's list does
// depend on the order (the negative control: the test can tell).
func TestCanonicalListsIgnoreEnumerationOrder(t *testing.T) {
	g, p, m := fixture(t)
	sc, err := score.New(g, p, score.AA)
	if err != nil {
		t.Fatal(err)
	}
	w := sc.NewWorker()
	var r score.Result
	users := 0
	for v := range int32(g.N()) {
		w.Score(v, &r)
		if len(r.Cands) < 10 || r.DeltaS == 0 {
			continue
		}
		users++
		q := calib.QueryOf(&r)
		for _, tc := range []struct {
			name string
			cfg  calib.Config
		}{
			{"keyed", calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: m.EpsP, Transform: m}},
			{"keyed-linear", calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: 0.3, Transform: linT{}}},
			{"exact-sampler", calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: m.EpsP, Transform: m, ExactSampler: true}},
			{"dplp-pub", calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: 0.5, Transform: m, Lexicographic: true}},
			{"laplace", calib.Config{Method: calib.Laplace, Kind: score.AA, Eps: 0.5}},
		} {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			plan := tc.cfg.Plan(q)
			in := release.UserInput{N: g.N(), Cands: r.Cands, S: r.S, Pub: r.Pub, Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands,
				DeltaS: r.DeltaS, SMax: r.SMax, SRange: r.SRange, SLo: r.SLo, SHi: r.SHi, Canonical: true}
			// Three ways to one list: the walk over ids (with the lookup
			// by id), and without it the keyed scan with utilities on
			// demand (lazy) or all computed (eager).
			walk := in
			walk.Cand = w.CandScore
			modes := []struct {
				name  string
				in    release.UserInput
				eager bool
			}{{"walk", walk, false}, {"lazy", in, false}, {"eager", in, true}}
			var lists [3][]int32
			for j, md := range modes {
				restore := release.SetNoLazyForTest(md.eager)
				a := sampleIDs(t, plan, md.in, 12, uint64(v))
				b := sampleIDs(t, plan, permuted(md.in, uint64(v)), 12, uint64(v))
				restore()
				if !slices.Equal(a, b) {
					t.Fatalf("%s, user %d, %s: %v, permuted %v", tc.name, v, md.name, a, b)
				}
				lists[j] = a
			}
			if !slices.Equal(lists[1], lists[2]) {
				t.Fatalf("%s, user %d: utilities on demand %v, all computed %v", tc.name, v, lists[1], lists[2])
			}
		}
		if users == 40 {
			break
		}
	}
	if users < 10 {
		t.Fatalf("only %d users with candidates", users)
	}
	// Negative control: without Canonical the crypto-path list of the
	// same generator state depends on the order for some user.
	cfg := calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: m.EpsP, Transform: m}
	differ := false
	for v := range int32(g.N()) {
		w.Score(v, &r)
		if len(r.Cands) < 10 || r.DeltaS == 0 {
			continue
		}
		plan := cfg.Plan(calib.QueryOf(&r))
		in := release.UserInput{N: g.N(), Cands: r.Cands, S: r.S, Pub: r.Pub, Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands, DeltaS: r.DeltaS, SMax: r.SMax}
		if !slices.Equal(sampleIDs(t, plan, in, 12, 1), sampleIDs(t, plan, permuted(in, 1), 12, 1)) {
			differ = true
			break
		}
	}
	if !differ {
		t.Fatal("non-canonical lists never depended on the order: the test cannot tell")
	}
}

// permuted is in with its candidates (and their scores) in a random order.
func permuted(in release.UserInput, seed uint64) release.UserInput {
	r := rand.New(rand.NewPCG(seed, 77))
	perm := r.Perm(len(in.Cands))
	out := in
	out.Cands = make([]int32, len(in.Cands))
	out.S = make([]float64, len(in.S))
	if len(in.Pub) > 0 {
		out.Pub = make([]float64, len(in.Pub))
	}
	for j, i := range perm {
		out.Cands[j], out.S[j] = in.Cands[i], in.S[i]
		if len(in.Pub) > 0 {
			out.Pub[j] = in.Pub[i]
		}
	}
	return out
}

func sampleIDs(t *testing.T, plan calib.Plan, in release.UserInput, k int, seed uint64) []int32 {
	t.Helper()
	var sm release.Sampler
	out, err := sm.Sample(&plan, &in, k, randx.Seeded(seed))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(out.IDs)
}

// The seeded keyed release has the exponential mechanism's distribution:
// over the per-user generator, the first pick follows the exact
// probabilities, by the walk over ids and by the keyed scan (a fresh key
// each draw) with utilities on demand and all computed.
func TestKeyedSeededDistribution(t *testing.T) {
	g, p, _ := fixture(t)
	w, r := scoredUser(t, g, p)
	lo, hi := slices.Min(r.S), slices.Max(r.S)
	cfg := calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: r.DeltaS / (hi - lo), Transform: linT{}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	plan := cfg.Plan(calib.QueryOf(&r))
	if !plan.Keyed() || plan.Exact() {
		t.Fatal("not a keyed plan with noise")
	}
	nc := len(r.Cands)
	idx := make([]int, nc)
	for i := range idx {
		idx[i] = i
	}
	vals := plan.AppendUtilities(nil, r.S, r.Pub, idx)
	zero := mech.Utilities{Blocks: []mech.Block{{Val: plan.Utility(0, 0), Size: r.Zero}}}
	vals = append(vals, zero.Materialize(nil)...)
	exp := make([]float64, nc+1)
	for i := range nc + r.Zero {
		lp, err := mech.ExpListLogProb(vals, plan.Scale, []int{i})
		if err != nil {
			t.Fatal(err)
		}
		exp[min(i, nc)] += math.Exp(lp)
	}
	cat := map[int32]int{}
	for i, c := range r.Cands {
		cat[c] = i
	}
	for _, mode := range []string{"walk", "lazy", "eager"} {
		restore := release.SetNoLazyForTest(mode == "eager")
		var sm release.Sampler
		obs := make([]int, nc+1)
		const draws = 50000
		for d := range draws {
			in := release.UserInput{N: g.N(), Cands: r.Cands, S: r.S, Pub: r.Pub, Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands,
				DeltaS: r.DeltaS, SMax: r.SMax, Canonical: true}
			if mode == "walk" {
				in.Cand = w.CandScore
			}
			out, err := sm.Sample(&plan, &in, 1, release.UserRNG(uint64(d), "u", 0))
			if err != nil {
				t.Fatal(err)
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
			t.Fatalf("%s: chi-square %.1f df %d p %.3g", mode, stat, df, pv)
		}
	}
}
