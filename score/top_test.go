package score

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// TestTopCandidatesBruteForce: a query's top candidates are the first n of
// all its candidates sorted by s descending, s_pub descending, id ascending,
// with s and s_pub from the brute-force Pair (the zero block sorts last, in
// id order). CN, JC and PA are exact, so the order is compared exactly.
func TestTopCandidatesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for trial := 0; trial < 20; trial++ {
		n := 5 + rng.IntN(30)
		g, p, _ := randomInstance(t, rng, n, 0.15, 0.4, 0.05)
		for _, k := range []Kind{CN, JC, PA} {
			sc, err := New(g, p, k)
			if err != nil {
				t.Fatal(err)
			}
			queries := []int32{0, int32(n - 1), int32(rng.IntN(n))}
			top := 1 + rng.IntN(n)
			all, err := sc.TopCandidatesAll(queries, top, nil)
			if err != nil {
				t.Fatal(err)
			}
			for qi, u := range queries {
				var want []Candidate
				for v := int32(0); int(v) < n; v++ {
					if v != u && !g.HasEdge(u, v) {
						s, pub := Pair(g, p, k, u, v)
						want = append(want, Candidate{v, s, pub})
					}
				}
				slices.SortFunc(want, func(a, b Candidate) int {
					return cmp.Or(cmp.Compare(b.S, a.S), cmp.Compare(b.Pub, a.Pub), cmp.Compare(a.V, b.V))
				})
				got := all[qi]
				dS, sMax := sc.Sensitivity(u)
				if got.U != u || got.Candidates != len(want) || got.DeltaS != dS || got.SMax != sMax {
					t.Fatalf("%v query %d: %+v, want %d candidates, Delta_s %v, S_max %v", k, u, got, len(want), dS, sMax)
				}
				if w := want[:min(top, len(want))]; !slices.Equal(got.Best, w) {
					t.Fatalf("%v query %d top %d:\n got %v\nwant %v", k, u, top, got.Best, w)
				}
				one, err := sc.TopCandidates(u, top)
				if err != nil || !slices.Equal(one.Best, got.Best) {
					t.Fatalf("TopCandidates(%d) = %v, %v; TopCandidatesAll gave %v", u, one.Best, err, got.Best)
				}
			}
		}
	}
}

func TestTopCandidatesErrors(t *testing.T) {
	g, p, _ := randomInstance(t, rand.New(rand.NewPCG(1, 1)), 10, 0.3, 0.2, 0)
	sc, err := New(g, p, AA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.TopCandidates(0, 0); err == nil {
		t.Error("top 0 accepted")
	}
	if _, err := sc.TopCandidates(10, 3); err == nil {
		t.Error("query out of range accepted")
	}
	var calls atomic.Int64
	all, err := sc.TopCandidatesAll([]int32{3, 4, 3}, 2, func() { calls.Add(1) })
	if err != nil || len(all) != 3 || all[0].U != 3 || all[1].U != 4 || all[2].U != 3 || calls.Load() != 2 {
		t.Fatalf("repeated query: %v, %v, %d done calls", all, err, calls.Load())
	}
}
