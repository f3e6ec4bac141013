package release

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplp/dplp/mech"
)

// TestMapPicksAnonymous: anonymous zero-block picks (the lazy path's: the
// t-th reported as len(Cands)+t) mapped from the block's list (a block small
// against the graph) release every ordered choice of members equally often.
// Negative control: the same picks mapped as indexes of the list (the
// eager path's reading) always give the first members, and fail.
func TestMapPicksAnonymous(t *testing.T) {
	members := []int32{11, 23, 37, 41, 59}
	in := &UserInput{
		N: 1000, Cands: []int32{1, 2}, Zero: len(members),
		InZero:   func(v int32) bool { return false }, // never used: the list is taken (Zero x 8 < N)
		ZeroList: func(dst []int32) []int32 { return append(dst[:0], members...) },
	}
	nc := len(in.Cands)
	picks := []int{nc, 1, nc + 1, nc + 2} // candidate 1 between the block's first and later picks
	pos := map[int32]int{}
	for i, m := range members {
		pos[m] = i
	}
	for _, ident := range []bool{true, false} {
		var sm Sampler
		sm.idx = append(sm.idx, 0, 1) // the candidates' order on the eager path
		rng := rand.New(rand.NewPCG(5, 6))
		// Categories: the ordered triple of members (5 x 4 x 3).
		obs := make([]int, 125)
		const draws = 60000
		for range draws {
			ids, err := sm.mapPicks(in, picks, ident, rng, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 4 || ids[1] != in.Cands[1] {
				t.Fatalf("ident %v: %v", ident, ids)
			}
			a, b, c := pos[ids[0]], pos[ids[2]], pos[ids[3]]
			if a == b || a == c || b == c {
				t.Fatalf("ident %v: a member twice: %v", ident, ids)
			}
			obs[a*25+b*5+c]++
		}
		var o []int
		var exp []float64
		for a := range 5 {
			for b := range 5 {
				for c := range 5 {
					if a != b && a != c && b != c {
						o = append(o, obs[a*25+b*5+c])
						exp = append(exp, 1.0/60)
					}
				}
			}
		}
		_, _, pv := mech.ChiSquare(o, exp)
		if ident && !(pv > 1e-4) {
			t.Fatalf("anonymous picks: chi-square p %.3g\nobs %v", pv, o)
		}
		if !ident && pv > 1e-4 {
			t.Fatalf("picks read as list indexes pass (p %.3g): the negative control cannot fail", pv)
		}
	}
}

// TestFlattenHeld: a held input copied out lists its candidates in
// HeldAt's order with their scores and states their exact range (the
// stated one may be a lower bound), so the paths that read every
// candidate see what a listed input gives them.
func TestFlattenHeld(t *testing.T) {
	cands := []int32{7, 3, 9, 4}
	sc := []float64{0.5, 2.25, 0.75, 1}
	in := UserInput{N: 12, Zero: 3, Held: len(cands), HeldAt: func(i int) (int32, float64) { return cands[i], sc[i] },
		SRange: true, SLo: 0.1, SHi: 2.25, Canonical: true}
	var sm Sampler
	for range 2 { // the second time into the sampler's reused buffers
		f := sm.flatten(&in)
		if !slices.Equal(f.Cands, cands) || !slices.Equal(f.S, sc) || f.Held != 0 || f.HeldAt != nil || f.Pub != nil {
			t.Fatalf("flattened to %v %v (held %d)", f.Cands, f.S, f.Held)
		}
		if !f.SRange || f.SLo != 0.5 || f.SHi != 2.25 || f.Zero != 3 || f.N != 12 || !f.Canonical {
			t.Fatalf("flattened range %v [%v, %v], zero %d, n %d, canonical %v", f.SRange, f.SLo, f.SHi, f.Zero, f.N, f.Canonical)
		}
	}
	if in.Held != 4 || in.SLo != 0.1 {
		t.Fatal("flatten changed its input")
	}
}
