package alias

import (
	"testing"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/randx"
)

func TestAliasMatchesWeights(t *testing.T) {
	cases := [][]float64{
		{1},
		{1, 1, 1, 1},
		{5, 0, 1, 3, 0.5},
		{1e-9, 1, 1e3},
		{0, 0, 7},
	}
	r := randx.Seeded(1)
	for _, w := range cases {
		a := New(w)
		if a.Len() != len(w) {
			t.Fatalf("len %d want %d", a.Len(), len(w))
		}
		obs := make([]int, len(w))
		for i := 0; i < 200000; i++ {
			obs[a.Sample(r)]++
		}
		for i, x := range w {
			if x == 0 && obs[i] != 0 {
				t.Fatalf("%v: zero-weight outcome %d drawn %d times", w, i, obs[i])
			}
		}
		if _, _, p := mech.ChiSquare(obs, w); p < 1e-6 {
			t.Fatalf("%v: frequencies %v do not match (p = %g)", w, obs, p)
		}
	}
}
