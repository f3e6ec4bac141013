package protect

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dplp/dplp/graph"
	"pgregory.net/rapid"
)

// TestFingerprint: neighbouring graphs (a protected edge toggled) share a
// fingerprint; a public edge, a mark or a label changes it.
func TestFingerprint(t *testing.T) {
	build := func(edges []graph.Edge, labels []string) *graph.Graph {
		g, _, err := graph.FromEdges(5, edges, labels)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	base := []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 2, V: 3}, {U: 3, V: 4}}
	marks, err := New(5, []graph.Edge{{U: 1, V: 2}, {U: 0, V: 4}})
	if err != nil {
		t.Fatal(err)
	}
	g := build(base, nil)
	f := Fingerprint(g, marks)
	// Toggling protected pairs: {1,2} removed, {0,4} added.
	gp := build([]graph.Edge{{U: 0, V: 1}, {U: 2, V: 3}, {U: 3, V: 4}, {U: 0, V: 4}}, nil)
	if Fingerprint(gp, marks) != f {
		t.Fatal("a neighbouring graph has another fingerprint")
	}
	other, _ := New(5, []graph.Edge{{U: 1, V: 2}})
	for name, got := range map[string]string{
		"public edge removed": Fingerprint(build([]graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 2, V: 3}}, nil), marks),
		"mark removed":        Fingerprint(g, other),
		"labels changed":      Fingerprint(build(base, []string{"0", "1", "2", "3", "x"}), marks),
		"no marks":            Fingerprint(g, nil),
	} {
		if got == f {
			t.Errorf("%s: same fingerprint", name)
		}
	}
}

// TestFingerprintMatchesReference: the parallel, merge-based encoding hashes
// the same bytes as the sequential one with a Has lookup per edge, for
// decimal and labelled graphs, with and without marks (protected non-edges
// included), and across several chunks and windows of nodes.
func TestFingerprintMatchesReference(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, n int, r *rand.Rand, labelled, marked bool) {
		edges := []graph.Edge{{U: 0, V: int32(n - 1)}} // at least one edge
		var pairs []graph.Edge
		for range r.IntN(4*n + 1) {
			u, v := int32(r.IntN(n)), int32(r.IntN(n))
			if u != v {
				edges = append(edges, graph.Edge{U: u, V: v})
			}
		}
		var labels []string
		if labelled {
			for i := range n {
				labels = append(labels, fmt.Sprintf("n%x", i*7919%(n+13)+i*(n+13)))
			}
		}
		g, _, err := graph.FromEdges(n, edges, labels)
		if err != nil {
			t.Fatalf("graph: %v", err)
		}
		var s *Set
		if marked {
			for _, e := range edges {
				if r.IntN(3) == 0 {
					pairs = append(pairs, e)
				}
			}
			for range r.IntN(n + 1) { // non-edges may be protected too
				u, v := int32(r.IntN(n)), int32(r.IntN(n))
				if u != v {
					pairs = append(pairs, graph.Edge{U: u, V: v})
				}
			}
			if s, err = New(g.N(), pairs); err != nil {
				t.Fatalf("marks: %v", err)
			}
		}
		if got, want := Fingerprint(g, s), fingerprintRef(g, s); got != want {
			t.Fatalf("n %d labelled %v marked %v: %s, reference %s", n, labelled, marked, got, want)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 60).Draw(rt, "n")
		seed := rapid.Uint64().Draw(rt, "seed")
		check(rt, n, rand.New(rand.NewPCG(seed, 1)), rapid.Bool().Draw(rt, "labelled"), rapid.Bool().Draw(rt, "marked"))
	})
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{fingerprintChunk - 1, fingerprintChunk + 1, 9*fingerprintChunk + 5} {
		for _, lm := range [][2]bool{{false, true}, {true, true}, {false, false}} {
			check(t, n, r, lm[0], lm[1])
		}
	}
}

// fingerprintRef is Fingerprint as first written: one pass, Has per edge.
// The parallel encoding must hash exactly the same bytes.
func fingerprintRef(g *graph.Graph, s *Set) string {
	h := sha256.New()
	var buf []byte
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	buf = append(buf, "dplp-data-v1\x00"...)
	buf = binary.AppendUvarint(buf, uint64(g.N()))
	for u := 0; u < g.N(); u++ {
		l := g.Label(int32(u))
		buf = binary.AppendUvarint(buf, uint64(len(l)))
		buf = append(buf, l...)
		if len(buf) > 1<<16 {
			flush()
		}
	}
	// Public adjacency, then marks, each list prefixed by its length.
	for u := 0; u < g.N(); u++ {
		nb := g.Neighbors(int32(u))
		pub := 0
		for _, v := range nb {
			if s == nil || !s.Has(int32(u), v) {
				pub++
			}
		}
		buf = binary.AppendUvarint(buf, uint64(pub))
		for _, v := range nb {
			if s == nil || !s.Has(int32(u), v) {
				buf = binary.AppendUvarint(buf, uint64(v))
			}
		}
		if len(buf) > 1<<16 {
			flush()
		}
	}
	if s != nil {
		for w := 0; w < s.N(); w++ {
			m := s.Of(int32(w))
			buf = binary.AppendUvarint(buf, uint64(len(m)))
			for _, x := range m {
				buf = binary.AppendUvarint(buf, uint64(x))
			}
			if len(buf) > 1<<16 {
				flush()
			}
		}
	}
	flush()
	return "v1:" + hex.EncodeToString(h.Sum(nil))
}
