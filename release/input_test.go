package release

import (
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
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

// TestZeroBlockRepeatCheck: mapPicks checks rejection draws of the zero
// block for repeats by scanning the list (short lists) or with a set (long
// ones). Both must consume the generator identically and give the same
// lists, and the lists must be distinct and valid.
func TestZeroBlockRepeatCheck(t *testing.T) {
	g, err := gen.BarabasiAlbert(600, 2, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(6))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := score.New(g, p, score.CN)
	if err != nil {
		t.Fatal(err)
	}
	// Protected pairs give noise (Delta_s > 0) and eps 0.01 makes it nearly
	// uniform: most picks are zero-block members, drawn in any position.
	cfg := calib.Config{Method: calib.Exponential, Kind: score.CN, Eps: 0.01}
	zeroFirst := 0 // lists whose first pick is a zero-block member
	defer func(v int) { scanMax = v }(scanMax)
	for _, k := range []int{5, 30, 200} {
		var lists [2][][]int32
		for pass, sm := range []int{0, 1 << 30} { // every check by set, every check by scan
			scanMax = sm
			w := sc.NewWorker()
			var r score.Result
			var s Sampler
			rng := randx.Seeded(5)
			for u := int32(0); u < 600; u += 11 {
				w.Score(u, &r)
				plan := cfg.Plan(calib.QueryOf(&r))
				in := InputOf(w, &r, g.N(), false)
				out, err := s.Sample(&plan, &in, k, rng)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[int32]bool{}
				for _, v := range out.IDs {
					if v == u || g.HasEdge(u, v) || seen[v] {
						t.Fatalf("k=%d: invalid or repeated candidate %d for %d", k, v, u)
					}
					seen[v] = true
				}
				if plan.Scale == 0 {
					t.Fatalf("user %d: no noise (Delta_s = 0); the test needs zero-block picks in every position", u)
				}
				if len(out.IDs) > 0 && !slices.Contains(r.Cands, out.IDs[0]) {
					zeroFirst++
				}
				lists[pass] = append(lists[pass], out.IDs)
			}
		}
		for i := range lists[0] {
			if !slices.Equal(lists[0][i], lists[1][i]) {
				t.Fatalf("k=%d, query %d: set %v, scan %v", k, i, lists[0][i], lists[1][i])
			}
		}
	}
	if zeroFirst == 0 {
		t.Fatal("no list starts with a zero-block pick: the repeat checks are not exercised")
	}
}

// TestListLabels: a list's labels, formatted into one string for decimal
// labels or taken from the label table, are the graph's labels.
func TestListLabels(t *testing.T) {
	dec, err := gen.BarabasiAlbert(50, 2, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	named, _, err := graph.Parse(strings.NewReader("alice bob\nbob carol\ncarol dave\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g   *graph.Graph
		ids []int32
	}{
		{dec, nil},
		{dec, []int32{0, 7, 49, 10}},
		{dec, func() []int32 { // more labels than the stack arrays hold
			ids := make([]int32, 45)
			for i := range ids {
				ids[i] = int32(i)
			}
			return ids
		}()},
		{named, []int32{3, 0, 2}},
	} {
		got := listLabels(tc.g, tc.ids)
		if len(got) != len(tc.ids) {
			t.Fatalf("%d labels for %d ids", len(got), len(tc.ids))
		}
		for i, v := range tc.ids {
			if got[i] != tc.g.Label(v) {
				t.Fatalf("label %d of %v: %q, want %q", i, tc.ids, got[i], tc.g.Label(v))
			}
		}
	}
}
