package snapshot

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readText(t *testing.T, edges, marks, nodes string) *Dataset {
	t.Helper()
	in := Inputs{Edges: strings.NewReader(edges), EdgesName: "edges"}
	if marks != "" {
		in.Marks, in.MarksName = strings.NewReader(marks), "marks"
	}
	if nodes != "" {
		in.Nodes, in.NodesName = strings.NewReader(nodes), "nodes"
	}
	d, err := Read(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sameDataset fails unless a and b have the same ids, labels, CSR and marks.
func sameDataset(t *testing.T, what string, a, b *Dataset) {
	t.Helper()
	ga, gb := a.Graph, b.Graph
	if ga.N() != gb.N() || !slices.Equal(ga.Off, gb.Off) || !slices.Equal(ga.Adj, gb.Adj) {
		t.Fatalf("%s: graphs differ (%d vs %d nodes)", what, ga.N(), gb.N())
	}
	for i := 0; i < ga.N(); i++ {
		if ga.Label(int32(i)) != gb.Label(int32(i)) {
			t.Fatalf("%s: id %d is %q in one and %q in the other", what, i, ga.Label(int32(i)), gb.Label(int32(i)))
		}
	}
	if (a.Marks == nil) != (b.Marks == nil) || a.Marks != nil && !slices.Equal(a.Marks.Pairs(), b.Marks.Pairs()) {
		t.Fatalf("%s: marks differ", what)
	}
}

// writeLines renders pairs as an edge list, each line's endpoints swapped
// when swap says so, in the order given.
func writeLines(pairs [][2]string, swap func(i int) bool) string {
	var sb strings.Builder
	for i, p := range pairs {
		a, b := p[0], p[1]
		if swap != nil && swap(i) {
			a, b = b, a
		}
		sb.WriteString(a + " " + b + "\n")
	}
	return sb.String()
}

// TestRepresentationsLoadIdentically is the loader's metamorphic test: the
// same labels and pairs written in any line order, with endpoints in any
// order, load to the same ids, graph and marks.
func TestRepresentationsLoadIdentically(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 30; trial++ {
		n := 5 + rng.IntN(30)
		label := func(i int) string {
			switch trial % 3 {
			case 0:
				return []string{"alice", "bob", "carol", "dave", "erin", "frank"}[i%6] + strings.Repeat("x", i/6)
			case 1:
				return string(rune('0'+i%10)) + strings.Repeat("7", i/10) // decimal labels, sparse values
			}
			return []string{"n", "7", "Z", "é", "10", "a"}[i%6] + strings.Repeat("_", i/6)
		}
		var edges, marks [][2]string
		for i := 0; i < 3*n; i++ {
			a, b := rng.IntN(n), rng.IntN(n)
			if a != b {
				edges = append(edges, [2]string{label(a), label(b)})
			}
		}
		for i := 0; i < n; i++ {
			a, b := rng.IntN(n), rng.IntN(n)
			if a != b {
				marks = append(marks, [2]string{label(a), label(b)})
			}
		}
		if len(edges) == 0 {
			continue
		}
		base := readText(t, writeLines(edges, nil), writeLines(marks, nil), "")
		if !base.Graph.IsCanonical() {
			t.Fatalf("trial %d: not numbered canonically", trial)
		}
		for v := 0; v < 4; v++ {
			e, m := slices.Clone(edges), slices.Clone(marks)
			rng.Shuffle(len(e), func(i, j int) { e[i], e[j] = e[j], e[i] })
			rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
			swap := func(int) bool { return rng.IntN(2) == 0 }
			other := readText(t, writeLines(e, swap), writeLines(m, swap), "")
			sameDataset(t, "shuffled and swapped", base, other)
		}
	}
}

// TestNodeUniverse: a node whose only edge is protected exists in G and in
// the neighbouring G' without that edge, with the same ids, and reading
// succeeds identically on both.
func TestNodeUniverse(t *testing.T) {
	// "zed" has one edge, to "a", and it is protected; "a" is the first label
	// of the file in G.
	g := "zed a\na b\nb c\nc d\n"
	gp := "a b\nb c\nc d\n" // G': the protected edge is gone
	marks := "a zed\nb d\n"
	d := readText(t, g, marks, "")
	dp := readText(t, gp, marks, "")
	if _, ok := dp.Graph.ID("zed"); !ok {
		t.Fatalf("zed is not a node of G'")
	}
	if dp.Declared != 1 || d.Declared != 0 {
		t.Fatalf("declared %d and %d, want 0 and 1", d.Declared, dp.Declared)
	}
	if d.Graph.N() != dp.Graph.N() {
		t.Fatalf("node counts differ: %d vs %d", d.Graph.N(), dp.Graph.N())
	}
	for i := 0; i < d.Graph.N(); i++ {
		if d.Graph.Label(int32(i)) != dp.Graph.Label(int32(i)) {
			t.Fatalf("ids differ at %d", i)
		}
	}
	if !slices.Equal(d.Marks.Pairs(), dp.Marks.Pairs()) {
		t.Fatalf("marks differ")
	}
	// The public graphs are identical: the difference is the protected edge.
	pub, pubp := d.Marks.Public(d.Graph), dp.Marks.Public(dp.Graph)
	if !slices.Equal(pub.Off, pubp.Off) || !slices.Equal(pub.Adj, pubp.Adj) {
		t.Fatalf("public graphs differ")
	}
	// A node list declares isolated users; repeats and known labels are fine.
	dn := readText(t, gp, "", "# users\nq\nzed\nq\na\n")
	for _, l := range []string{"q", "zed"} {
		id, ok := dn.Graph.ID(l)
		if !ok || dn.Graph.Degree(id) != 0 {
			t.Fatalf("%s: not an isolated node", l)
		}
	}
	if !dn.Graph.IsCanonical() || dn.Declared != 2 {
		t.Fatalf("node list: canonical %v, declared %d", dn.Graph.IsCanonical(), dn.Declared)
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ name, edges, marks, nodes, want string }{
		{"self mark", "a b\n", "a b\nc c\n", "", "marks:2: node \"c\" cannot protect a pair with itself"},
		{"one-field mark", "a b\n", "a\n", "", "marks:1: expected two node labels"},
		{"two-field node", "a b\n", "", "x\ny z\n", "nodes:2: expected one node label, found 2 fields"},
		{"quoted node", "a b\n", "", "\"x\"\n", "nodes:1: double quote"},
		{"bad edge", "a\n", "", "", "edges:1:"},
	} {
		in := Inputs{Edges: strings.NewReader(c.edges), EdgesName: "edges"}
		if c.marks != "" {
			in.Marks, in.MarksName = strings.NewReader(c.marks), "marks"
		}
		if c.nodes != "" {
			in.Nodes, in.NodesName = strings.NewReader(c.nodes), "nodes"
		}
		_, err := Read(in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

// TestOpenSnapshot: Open reads a snapshot with its stored (synthetic or
// not) marks, and a marks file and node list on top of it.
func TestOpenSnapshot(t *testing.T) {
	dir := t.TempDir()
	d := readText(t, "b a\nc b\n", "a c\n", "")
	for _, synth := range []bool{false, true} {
		p := filepath.Join(dir, "g.dplpg")
		if err := WriteFile(p, &Snapshot{Graph: d.Graph, Marks: d.Marks, SyntheticMarks: synth}); err != nil {
			t.Fatal(err)
		}
		got, err := Open(Source{Graph: p})
		if err != nil {
			t.Fatal(err)
		}
		if !got.FromSnapshot || got.SyntheticMarks != synth {
			t.Fatalf("snapshot %v, synthetic %v (want %v)", got.FromSnapshot, got.SyntheticMarks, synth)
		}
		sameDataset(t, "snapshot", d, got)
		// A node list on top renumbers the stored marks with the graph.
		nodes := filepath.Join(dir, "nodes.txt")
		os.WriteFile(nodes, []byte("0\n"), 0o644) // "0" sorts first: every id moves
		got, err = Open(Source{Graph: p, Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		want := readText(t, "b a\nc b\n", "a c\n", "0\n")
		sameDataset(t, "snapshot + node list", want, got)
		if got.SyntheticMarks != synth {
			t.Fatalf("synthetic flag lost")
		}
		// A marks file replaces the stored marks (and is not synthetic).
		mf := filepath.Join(dir, "marks.txt")
		os.WriteFile(mf, []byte("b c\n"), 0o644)
		got, err = Open(Source{Graph: p, Marks: mf})
		if err != nil {
			t.Fatal(err)
		}
		if got.SyntheticMarks || got.Marks.Len() != 1 {
			t.Fatalf("marks file over a snapshot: synthetic %v, %d pairs", got.SyntheticMarks, got.Marks.Len())
		}
	}
	if _, err := Open(Source{}); err == nil {
		t.Fatal("no graph: no error")
	}
}

// TestWriteFileNeverReplacesASymlink: the target of a symbolic link stays
// untouched and the link stays a link.
func TestWriteFileNeverReplacesASymlink(t *testing.T) {
	dir := t.TempDir()
	d := readText(t, "a b\n", "", "")
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link.dplpg")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := WriteFile(link, &Snapshot{Graph: d.Graph}); err == nil {
		t.Fatal("a symbolic link was replaced")
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link is gone")
	}
	if raw, _ := os.ReadFile(target); string(raw) != "keep" {
		t.Fatal("the link's target changed")
	}
}
