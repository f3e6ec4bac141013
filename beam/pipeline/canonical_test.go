package pipeline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
)

// representations writes one graph and its marks in several ways:
// natural order; lines shuffled with endpoints swapped, other comments and
// line ends; and the neighbour G' without the protected edge
// {"first-only", label(3)}, which is the first line of the natural file and
// the only edge of "first-only" (so in G' that node exists only through the
// marks file).
func representations(rng *rand.Rand, n, m int) (natural, shuffled, neighbour, marks string) {
	label := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprint(i * 7)
		case 1:
			return fmt.Sprintf("user-%d", i)
		case 2:
			return fmt.Sprintf("0%d", i)
		}
		return fmt.Sprintf("ü%d", i)
	}
	first := [2]string{"first-only", label(3)}
	var es [][2]string
	for range m {
		u, v := rng.IntN(n), rng.IntN(n)
		if u != v {
			es = append(es, [2]string{label(u), label(v)})
		}
	}
	var nat, nb strings.Builder
	nat.WriteString("# natural order\n")
	nb.WriteString("# natural order\n")
	fmt.Fprintf(&nat, "%s %s\n", first[0], first[1])
	for _, e := range es {
		fmt.Fprintf(&nat, "%s %s\n", e[0], e[1])
		fmt.Fprintf(&nb, "%s %s\n", e[0], e[1])
	}
	all := append([][2]string{first}, es...)
	var sh strings.Builder
	sh.WriteString("\xEF\xBB\xBF% shuffled, endpoints swapped\r\n")
	for i, j := range rng.Perm(len(all)) {
		e := all[j]
		if i%2 == 0 {
			e[0], e[1] = e[1], e[0]
		}
		if i%3 == 0 {
			fmt.Fprintf(&sh, "%s,%s\r\n", e[0], e[1])
		} else {
			fmt.Fprintf(&sh, "%s\t%s\n", e[0], e[1])
		}
	}
	var mk strings.Builder
	fmt.Fprintf(&mk, "%s %s\n", first[1], first[0])
	for _, e := range es {
		if rng.IntN(10) < 3 {
			fmt.Fprintf(&mk, "%s %s\n", e[0], e[1])
		}
	}
	return nat.String(), sh.String(), nb.String(), mk.String()
}

func users(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[:strings.Index(l, `","recommendations"`)]
	}
	return out
}

// Seeded Beam output depends only on the label set and the pairs: the same
// graph written in another order (lines shuffled, endpoints swapped) gives
// identical lists; the neighbour whose removed protected edge was the first
// appearance of its endpoint keeps every node and id (the endpoint is an
// isolated node declared by the marks file); a node list adds isolated
// nodes. Each run equals the single-machine release on graph.Parse +
// graph.WithNodes.
func TestCanonicalRepresentations(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 12))
	nat, shuf, nb, marks := representations(rng, 90, 300)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	natP, shufP, nbP, marksP := write("natural", nat), write("shuffled", shuf), write("neighbour", nb), write("marks", marks)
	nodesP := write("nodes", "# declared users\niso-1\n\n123456\r\nuser-1\n")
	mb, err := os.ReadFile(writeModel(t, dir, "aa", 1))
	if err != nil {
		t.Fatal(err)
	}
	modelPath := filepath.Join(dir, "model-aa-dplp.json")
	old := ShardBytes
	ShardBytes = 500
	defer func() { ShardBytes = old }()

	// Non-vacuous: in the natural file the first label is not the
	// canonical first, so first-appearance numbering would differ.
	g, _, err := graph.ReadFile(natP)
	if err != nil {
		t.Fatal(err)
	}
	if g.Label(0) == "first-only" {
		t.Fatal("first-only is canonically first: the neighbour case could not fail")
	}

	const k, seed = 4, 11
	run := func(name, graphPath, nodes string) []string {
		t.Helper()
		out := filepath.Join(dir, name+".jsonl")
		runBeam(t, Config{Graph: graphPath, Protected: marksP, Nodes: nodes, Model: mb, K: k, Seed: seedp(seed), Out: out, RunID: "t"})
		got := readLines(t, out)
		want := singleNodes(t, graphPath, marksP, nodes, modelPath, k, seed)
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%s: line %d:\n beam   %s\n single %s", name, i+1, got[i], want[i])
				}
			}
			t.Fatalf("%s: beam wrote %d lines, single machine %d", name, len(got), len(want))
		}
		return got
	}
	a := run("natural", natP, "")
	b := run("shuffled", shufP, "")
	if !slices.Equal(a, b) {
		t.Error("shuffled lines and swapped endpoints changed the seeded lists")
	}
	c := run("neighbour", nbP, "")
	if !slices.Equal(users(a), users(c)) {
		t.Errorf("the neighbour has another node set or numbering:\n%q\n%q", users(a), users(c))
	}
	if slices.Equal(a, c) {
		t.Log("note: the neighbour's lists are all identical to G's")
	}
	d := run("nodes", natP, nodesP)
	us := users(d)
	for _, l := range []string{`{"user":"iso-1`, `{"user":"123456`} {
		if !slices.Contains(us, l) {
			t.Errorf("declared node %s has no line", l)
		}
	}
	if len(d) != len(a)+2 {
		t.Errorf("node list: %d lines, want %d + 2 declared nodes", len(d), len(a))
	}
}
