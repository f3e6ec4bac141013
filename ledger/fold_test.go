package ledger

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestFoldAccMatchesMap: the fold's accumulator (dense arrays for canonical
// decimal labels, a map for the rest) gives exactly the parties and sums of
// a plain map summing in the same order, for labels of every kind:
// canonical numbers, leading zeros, signs, exponents, numbers past the dense
// limit, text.
func TestFoldAccMatchesMap(t *testing.T) {
	// A small dense limit, so that labels on both sides of it are cheap.
	old := denseFoldLimit
	denseFoldLimit = 4096
	t.Cleanup(func() { denseFoldLimit = old })
	pool := []string{"0", "7", "12", "007", "00", "-1", "+3", "1e3", " 5", "5 ", "99999999", "4095", "4096",
		"123456789", "alice", "", "*", "日本", "1.5"}
	for i := 0; i < 60; i++ {
		pool = append(pool, strconv.Itoa(rand.IntN(6000))) // both sides of the limit
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		acc := newFoldAcc()
		ref := map[string][2]float64{}
		for range 2000 {
			w := pool[r.IntN(len(pool))]
			cost, rho := r.Float64()*3, r.Float64()
			acc.add(w, cost, rho)
			e := ref[w]
			ref[w] = [2]float64{e[0] + cost, e[1] + rho}
		}
		parties, sums := acc.sorted()
		want := make([]string, 0, len(ref))
		for w := range ref {
			want = append(want, w)
		}
		slices.Sort(want)
		if !slices.Equal(parties, want) {
			t.Fatalf("parties %q, want %q", parties, want)
		}
		for i, w := range parties {
			if sums[i] != ref[w] {
				t.Fatalf("party %q: sums %v, want %v", w, sums[i], ref[w])
			}
		}
	}
	for _, c := range []struct {
		s  string
		v  int
		ok bool
	}{{"0", 0, true}, {"42", 42, true}, {"4095", 4095, true}, {"4096", 0, false}, {"99999999", 0, false}, {"042", 0, false}, {"", 0, false}, {"4a", 0, false}, {"-4", 0, false}} {
		if v, ok := decimalLabel(c.s); ok != c.ok || (ok && v != c.v) {
			t.Errorf("decimalLabel(%q) = %d, %v; want %d, %v", c.s, v, ok, c.v, c.ok)
		}
	}
}
