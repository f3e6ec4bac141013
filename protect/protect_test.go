package protect

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
)

func mustGraph(t *testing.T, s string) *graph.Graph {
	t.Helper()
	g, _, err := graph.Parse(strings.NewReader(s), "g")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestParseMarks(t *testing.T) {
	g := mustGraph(t, "a b\nb c\nc d\n")
	cases := []struct{ in, err string }{
		{"a b\nb a\na d\n", ""},
		{"a b\nzz a\n", "p:2: unknown node label \"zz\""},
		{"a a\n", "p:1: node \"a\" cannot protect"},
		{"a\n", "p:1: expected two node labels"},
	}
	for _, c := range cases {
		s, err := Parse(strings.NewReader(c.in), "p", g)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%q: err %v want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		id := func(l string) int32 { x, _ := g.ID(l); return x }
		if s.Len() != 2 || !s.Has(id("a"), id("b")) || !s.Has(id("b"), id("a")) || !s.Has(id("d"), id("a")) || s.Has(id("b"), id("c")) {
			t.Fatalf("wrong set: %v", s.Pairs())
		}
		if got := s.Of(id("a")); len(got) != 2 {
			t.Fatalf("prot(a) = %v", got)
		}
		var buf bytes.Buffer
		if err := s.Write(&buf, g); err != nil {
			t.Fatal(err)
		}
		back, err := Parse(&buf, "w", g)
		if err != nil || back.Len() != s.Len() {
			t.Fatalf("round trip: %v %v", err, back)
		}
	}
}

func TestSynthetic(t *testing.T) {
	var edges []graph.Edge
	r := randx.Seeded(3)
	for i := 0; i < 3000; i++ {
		edges = append(edges, graph.Edge{U: int32(r.IntN(300)), V: int32(r.IntN(300))})
	}
	g, _, err := graph.FromEdges(300, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Synthetic(g, 0.3, 0, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(0.3 * float64(g.M())); s.Len() != want {
		t.Fatalf("len %d want %d", s.Len(), want)
	}
	for _, p := range s.Pairs() {
		if !g.HasEdge(p.U, p.V) {
			t.Fatal("sigma-only set contains a non-edge")
		}
	}
	s2, _ := Synthetic(g, 0.3, 0, randx.Seeded(1))
	if !equalPairs(s.Pairs(), s2.Pairs()) {
		t.Fatal("not reproducible for equal seeds")
	}
	// Non-edge marks: about frac of all non-edges, none of them edges beyond the sigma part.
	s3, err := Synthetic(g, 0, 0.1, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	nonEdges := float64(300*299/2) - float64(g.M())
	got := float64(s3.Len())
	if sd := math.Sqrt(nonEdges * 0.1 * 0.9); math.Abs(got-0.1*nonEdges) > 5*sd {
		t.Fatalf("non-edge marks %v, want about %v", got, 0.1*nonEdges)
	}
	for _, p := range s3.Pairs() {
		if g.HasEdge(p.U, p.V) {
			t.Fatal("non-edge sampling marked an edge")
		}
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := Synthetic(g, bad, 0, r); err == nil {
			t.Fatalf("sigma %v accepted", bad)
		}
		if _, err := Synthetic(g, 0.1, bad, r); err == nil {
			t.Fatalf("non-edge fraction %v accepted", bad)
		}
	}
	pub := s.Public(g)
	if pub.M() != g.M()-s.Len() {
		t.Fatalf("public graph has %d edges, want %d", pub.M(), g.M()-s.Len())
	}
}

func equalPairs(a, b []graph.Edge) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzParseMarks(f *testing.F) {
	g, _, err := graph.Parse(strings.NewReader("a b\nb c\nc d\nd a\n"), "g")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"a b\n", "a c\n# x\n", "a a\n", "z a\n", "a,b,c\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in), "fuzz", g)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") && !strings.HasPrefix(err.Error(), "protect:") {
				t.Fatalf("error without location: %v", err)
			}
			return
		}
		for _, p := range s.Pairs() {
			if p.U == p.V || !s.Has(p.V, p.U) {
				t.Fatal("self or asymmetric pair")
			}
		}
	})
}
