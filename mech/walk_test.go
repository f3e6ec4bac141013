package mech

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// mapCands is a Candidates of a map from id to utility.
type mapCands map[int32]float64

func (m mapCands) At(v int32) (float64, bool) {
	x, ok := m[v]
	return x, ok
}

// walkCases: utilities of the candidates among ids [0, n); the other ids
// are not candidates.
var walkCases = []struct {
	name  string
	n     int
	cands mapCands
	scale float64
}{
	{"all", 4, mapCands{0: 0, 1: 1, 2: 2, 3: 0.5}, 1},
	{"holes", 7, mapCands{1: 1.5, 2: 0.2, 4: 0, 6: 0}, 0.8},
	{"ties", 6, mapCands{0: 1, 2: 1, 3: 0, 5: 1}, 0.7},
	{"peaked", 5, mapCands{0: 3, 1: 0, 4: 2.5}, 0.4},
}

// Over the generator, the walk's lists have the exact probabilities of the
// exponential mechanism on the candidates (k = 1..3).
func TestWalkTopKMatchesExactListProbabilities(t *testing.T) {
	draws := 60000
	if testing.Short() {
		draws = 15000
	}
	seed := uint64(300)
	for _, c := range walkCases {
		ids := make([]int32, 0, len(c.cands))
		for v := range c.cands {
			ids = append(ids, v)
		}
		slices.Sort(ids)
		vals := make([]float64, len(ids))
		hi := math.Inf(-1)
		for i, v := range ids {
			vals[i] = c.cands[v]
			hi = max(hi, vals[i])
		}
		pos := map[int32]int{}
		for i, v := range ids {
			pos[v] = i
		}
		for k := 1; k <= min(3, len(ids)); k++ {
			lists := enumLists(len(ids), k)
			exact := expProbs(t, vals, c.scale, lists)
			seed++
			r := seeded(seed)
			counts := countLists(t, lists, len(ids), draws, func(d []int) ([]int, error) {
				got, err := WalkTopK(c.n, c.cands, hi, k, c.scale, r, nil)
				d = d[:0]
				for _, v := range got {
					d = append(d, pos[v])
				}
				return d, err
			})
			if stat, df, p := ChiSquare(counts, exact); p < pMin {
				t.Errorf("%s k=%d: chi2 = %.1f df %d p = %.2g", c.name, k, stat, df, p)
			}
		}
	}
}

// Negative control: a walk that gives the draws to ids in a fixed order
// (0, 1, 2, ...) instead of a random one is rejected by the same test.
func TestWalkTopKNegativeControl(t *testing.T) {
	c := walkCases[0]
	vals := []float64{0, 1, 2, 0.5}
	lists := enumLists(4, 2)
	r := seeded(8)
	counts := countLists(t, lists, 4, 20000, func(d []int) ([]int, error) {
		// The order statistics in id order: the largest draw to id 0.
		z := 0.0
		type kv struct {
			p float64
			i int
		}
		var all []kv
		for j := range c.n {
			z += r.ExpFloat64() / float64(c.n-j)
			all = append(all, kv{vals[j] + c.scale*-math.Log(z), j})
		}
		slices.SortFunc(all, func(a, b kv) int { return cmpF(b.p, a.p) })
		return append(d[:0], all[0].i, all[1].i), nil
	})
	if _, _, p := ChiSquare(counts, expProbs(t, vals, c.scale, lists)); p > 1e-6 {
		t.Errorf("draws in id order accepted: p = %g", p)
	}
}

// The walk returns distinct candidates, min(k, candidates) of them, and
// refuses a utility above its bound.
func TestWalkTopKProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "n")
		cands := mapCands{}
		for v := range int32(n) {
			if rapid.IntRange(0, 3).Draw(t, "in") > 0 {
				cands[v] = float64(rapid.IntRange(-8, 8).Draw(t, "v")) / 4
			}
		}
		k := rapid.IntRange(1, 40).Draw(t, "k")
		scale := rapid.SampledFrom([]float64{0.05, 0.5, 3}).Draw(t, "scale")
		got, err := WalkTopK(n, cands, 2, k, scale, seeded(rapid.Uint64().Draw(t, "seed")), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != min(k, len(cands)) {
			t.Fatalf("%d ids for k %d and %d candidates", len(got), k, len(cands))
		}
		seen := map[int32]bool{}
		for _, v := range got {
			if _, ok := cands[v]; !ok || seen[v] {
				t.Fatalf("id %d: candidate %v, repeated %v", v, ok, seen[v])
			}
			seen[v] = true
		}
	})
	if _, err := WalkTopK(3, mapCands{0: 1, 1: 5}, 2, 2, 1, seeded(1), nil); err == nil {
		t.Error("a utility above its bound was accepted")
	}
	if _, err := WalkTopK(3, mapCands{0: 1}, 2, 1, 0, seeded(1), nil); err == nil {
		t.Error("scale 0 was accepted")
	}
}

// With many ids and utilities that span little of the noise, the walk
// visits about k ids.
func TestWalkTopKVisitsFew(t *testing.T) {
	const n = 1 << 20
	cc := &countingCands{}
	if _, err := WalkTopK(n, cc, 0.01, 30, 1, seeded(4), nil); err != nil {
		t.Fatal(err)
	}
	if est := WalkSteps(n, n, 30, 0, 0.01, 1); cc.calls > 100 || est > 31 {
		t.Errorf("%d ids visited, estimate %.1f", cc.calls, est)
	}
}

type countingCands struct{ calls int }

func (c *countingCands) At(v int32) (float64, bool) {
	c.calls++
	return float64(v%2) * 0.01, true
}

func TestIDSet(t *testing.T) {
	var s idSet
	for round := range 3 {
		s.reset(10 * round)
		want := map[int32]bool{}
		r := seeded(uint64(round))
		for range 5000 {
			v := int32(r.IntN(3000))
			if got := s.add(v); got == want[v] {
				t.Fatalf("add(%d) = %v with %v in the set", v, got, want[v])
			}
			want[v] = true
		}
	}
}

func BenchmarkWalkTopK(b *testing.B) {
	r := seeded(1)
	cc := &countingCands{}
	var dst []int32
	for b.Loop() {
		dst, _ = WalkTopK(100000, cc, 0.01, 30, 1, r, dst)
	}
}
