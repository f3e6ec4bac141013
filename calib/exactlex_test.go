package calib

import (
	"math"
	"math/big"
	"slices"
	"testing"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/exact"
	"github.com/dplp/dplp/randx"
)

// exactLexProb is the exact probability of an ordered list under
// exactLexTopK: positions must follow the public-key groups in decreasing
// order, and the picks from each group are that group's exact top-t list.
func exactLexProb(t *testing.T, s *exact.Sampler, vals, pub []float64, list []int) *big.Rat {
	t.Helper()
	keys := slices.Clone(pub)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	slices.Reverse(keys)
	pos := 0
	p := big.NewRat(1, 1)
	for _, key := range keys {
		var members []int
		var gv []float64
		for i, pk := range pub {
			if pk == key {
				members = append(members, i)
				gv = append(gv, vals[i])
			}
		}
		take := min(len(members), len(list)-pos)
		var sub []int
		for _, v := range list[pos : pos+take] {
			j := slices.Index(members, v)
			if j < 0 {
				return new(big.Rat) // out of group order: impossible
			}
			sub = append(sub, j)
		}
		if take > 0 {
			q, err := s.ListProb(&mech.Utilities{Vals: gv}, sub)
			if err != nil {
				t.Fatal(err)
			}
			p.Mul(p, q)
		}
		pos += take
		if pos == len(list) {
			break
		}
	}
	return p
}

// The exact lexicographic sampler matches its exact distribution
// (chi-square) and its list probabilities move by at most picks x
// EpsPerPick between neighbouring utilities.
func TestExactLexicographic(t *testing.T) {
	const eps, delta, k = 0.8, 1.0, 3
	vals := []float64{0.3, 1.2, 0.1, 2.0, 0.4, 0.9}
	pub := []float64{2, 2, 1, 1, 1, 0}
	s, err := exact.New(eps, delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lists [][]int
	var rec func(cur []int)
	rec = func(cur []int) {
		if len(cur) == k {
			lists = append(lists, slices.Clone(cur))
			return
		}
		for i := range vals {
			if !slices.Contains(cur, i) {
				rec(append(cur, i))
			}
		}
	}
	rec(nil)
	probs := make([]float64, len(lists))
	total := new(big.Rat)
	for i, l := range lists {
		p := exactLexProb(t, s, vals, pub, l)
		total.Add(total, p)
		probs[i], _ = p.Float64()
	}
	if total.Cmp(big.NewRat(1, 1)) != 0 {
		t.Fatalf("probabilities sum to %v", total)
	}
	// Sampling.
	r := randx.Seeded(3)
	u := &mech.Utilities{Vals: vals}
	obs := make([]int, len(lists))
	for range 30000 {
		got, err := exactLexTopK(u, pub, k, eps, delta, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(lists, func(l []int) bool { return slices.Equal(l, got) })
		if i < 0 {
			t.Fatalf("list %v not enumerable", got)
		}
		obs[i]++
	}
	if _, _, pv := mech.ChiSquare(obs, probs); !(pv > 1e-6) {
		t.Fatalf("exact lexicographic sampler does not match its distribution (p = %v)", pv)
	}
	// Privacy: neighbouring utilities (each moves by at most delta).
	cfg := Config{Method: Exponential, Eps: eps, Lexicographic: true, ExactSampler: true}
	plan := cfg.Plan(Query{DeltaS: delta, SMax: 10})
	picks, err := plan.Picks(u, pub, k)
	if err != nil {
		t.Fatal(err)
	}
	bound := float64(picks) * s.EpsPerPick()
	for _, shift := range [][]float64{{1, -1, 0, 1, -1, 1}, {-1, -1, -1, 1, 1, 1}, {0.5, 1, -0.25, -1, 0, 0}} {
		v2 := slices.Clone(vals)
		for i := range v2 {
			v2[i] += shift[i] * delta
		}
		for _, l := range lists {
			a, b := exactLexProb(t, s, vals, pub, l), exactLexProb(t, s, v2, pub, l)
			if a.Sign() == 0 || b.Sign() == 0 {
				if a.Sign() != b.Sign() {
					t.Fatalf("list %v possible in one neighbour only", l)
				}
				continue
			}
			fa, _ := a.Float64()
			fb, _ := b.Float64()
			if lr := math.Abs(math.Log(fa) - math.Log(fb)); lr > bound+1e-9 {
				t.Fatalf("list %v: ln ratio %v > %d picks x %v", l, lr, picks, s.EpsPerPick())
			}
		}
	}
}
