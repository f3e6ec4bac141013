package protect

import (
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
	"pgregory.net/rapid"
)

// TestNewProperty checks New (built on the graph package's CSR builder)
// against a brute-force set of protected pairs: prot(w), Has, Len and
// Pairs, with repeated and reciprocal pairs merged and self-pairs refused.
func TestNewProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "n")
		var pairs []graph.Edge
		want := map[[2]int32]bool{}
		self := false
		if n > 0 {
			for k := rapid.IntRange(0, 150).Draw(t, "k"); k > 0; k-- {
				u := int32(rapid.IntRange(0, n-1).Draw(t, "u"))
				v := int32(rapid.IntRange(0, n-1).Draw(t, "v"))
				pairs = append(pairs, graph.Edge{U: u, V: v})
				self = self || u == v
				want[[2]int32{u, v}], want[[2]int32{v, u}] = true, true
			}
		}
		s, err := New(n, pairs)
		if self {
			if err == nil || !strings.Contains(err.Error(), "cannot protect itself") {
				t.Fatalf("self-pair accepted: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.N() != n || s.Len() != int64(len(want)/2) {
			t.Fatalf("N %d Len %d, want %d and %d", s.N(), s.Len(), n, len(want)/2)
		}
		for w := int32(0); int(w) < n; w++ {
			var exp []int32
			for x := int32(0); int(x) < n; x++ {
				if want[[2]int32{w, x}] {
					exp = append(exp, x)
				}
				if s.Has(w, x) != want[[2]int32{w, x}] {
					t.Fatalf("Has(%d,%d) = %v", w, x, s.Has(w, x))
				}
			}
			if !slices.Equal(s.Of(w), exp) || s.Count(w) != len(exp) {
				t.Fatalf("prot(%d) = %v, want %v", w, s.Of(w), exp)
			}
		}
		for _, p := range s.Pairs() {
			if p.U >= p.V || !want[[2]int32{p.U, p.V}] {
				t.Fatalf("pair %v", p)
			}
		}
	})
}
