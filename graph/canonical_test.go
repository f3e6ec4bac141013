package graph

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestCompareLabels(t *testing.T) {
	// The canonical order: decimals by value, then the rest bytewise.
	want := []string{"0", "2", "10", "2147483647", "00", "01", "2147483648", "A", "a", "b", "é"}
	got := slices.Clone(want)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
	slices.SortFunc(got, CompareLabels)
	if !slices.Equal(got, want) {
		t.Fatalf("sorted %q, want %q", got, want)
	}
	for _, l := range want {
		if CompareLabels(l, l) != 0 {
			t.Fatalf("%q != itself", l)
		}
	}
}

func TestCanonicalAndWithNodes(t *testing.T) {
	labels := []string{"z", "5", "a", "12", "b"}
	edges := []Edge{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}}
	g, _, err := FromEdges(5, edges, labels)
	if err != nil {
		t.Fatal(err)
	}
	if g.IsCanonical() {
		t.Fatal("first-appearance labels reported canonical")
	}
	c, rank := Canonical(g)
	if !c.IsCanonical() || rank == nil {
		t.Fatal("Canonical did not renumber")
	}
	for i, l := range labels {
		if c.Label(rank[i]) != l {
			t.Fatalf("rank maps %q to %q", l, c.Label(rank[i]))
		}
		for _, v := range g.Neighbors(int32(i)) {
			if !c.HasEdge(rank[i], rank[v]) {
				t.Fatalf("edge %s-%s lost", l, labels[v])
			}
		}
	}
	if c2, r2 := Canonical(c); c2 != c || r2 != nil {
		t.Fatal("a canonical graph was renumbered")
	}
	w, wr, err := WithNodes(g, []string{"m", "5", "m", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if w.N() != 7 || !w.IsCanonical() || len(wr) != 5 {
		t.Fatalf("WithNodes: %d nodes, canonical %v, map %d", w.N(), w.IsCanonical(), len(wr))
	}
	for _, l := range []string{"m", "0"} {
		if id, ok := w.ID(l); !ok || w.Degree(id) != 0 {
			t.Fatalf("%s: not an isolated node", l)
		}
	}
	if w.M() != g.M() {
		t.Fatalf("edges %d, want %d", w.M(), g.M())
	}
	for _, bad := range []string{"a b", "#x", "q\"", "", "x\x00"} {
		if _, _, err := WithNodes(g, []string{bad}); err == nil {
			t.Errorf("label %q accepted", bad)
		}
	}
}

// TestParseCanonicalUnderRewriting: lines shuffled and endpoints swapped
// parse to the same graph, ids included.
func TestParseCanonicalUnderRewriting(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var lines []string
	for i := 0; i < 400; i++ {
		a, b := rng.IntN(90), rng.IntN(90)
		la, lb := "n"+string(rune('a'+a%26))+strings.Repeat("1", a/26), string(rune('0'+b%10))+strings.Repeat("3", b/10)
		lines = append(lines, la+" "+lb)
	}
	parse := func(ls []string) *Graph {
		g, _, err := Parse(strings.NewReader(strings.Join(ls, "\n")), "x")
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	base := parse(lines)
	for trial := 0; trial < 5; trial++ {
		ls := slices.Clone(lines)
		rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		for i, l := range ls {
			if rng.IntN(2) == 0 {
				f := strings.Fields(l)
				ls[i] = f[1] + "\t" + f[0]
			}
		}
		g := parse(ls)
		if !slices.Equal(g.Off, base.Off) || !slices.Equal(g.Adj, base.Adj) || !slices.Equal(g.Labels(), base.Labels()) {
			t.Fatalf("trial %d: a rewritten file parses differently", trial)
		}
	}
}
