package graph

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"pgregory.net/rapid"
)

func TestParseTable(t *testing.T) {
	cases := []struct {
		name, in          string
		nodes             int
		edges, dup, loops int64
		extra             int64
		err               string // substring of the error, "" for success
	}{
		{name: "basic", in: "a b\nb c\n", nodes: 3, edges: 2},
		{name: "commas and tabs", in: "1,2\n2\t3\n3 , 1\n", nodes: 3, edges: 3},
		{name: "comments", in: "# c\n% k\n\n  \n1 2\n", nodes: 2, edges: 1},
		{name: "crlf", in: "1 2\r\n2 3\r\n", nodes: 3, edges: 2},
		{name: "weights", in: "1 2 0.5\n2 3 7\n3 4\n", nodes: 4, edges: 3, extra: 2},
		{name: "reciprocal", in: "1 2\n2 1\n1 2\n", nodes: 2, edges: 1, dup: 2},
		{name: "self loop", in: "1 1\n1 2\n", nodes: 2, edges: 1, loops: 1},
		{name: "no final newline", in: "x y", nodes: 2, edges: 1},
		{name: "one field", in: "1 2\n3\n", err: "test:2: expected two node labels"},
		{name: "empty", in: "# nothing\n", err: "no edges"},
		{name: "only loops", in: "1 1\n", err: "self-loop"},
		{name: "nul", in: "1 2\na\x00 b\n", err: "test:2: NUL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, rep, err := Parse(strings.NewReader(c.in), "test")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.N() != c.nodes || g.M() != c.edges || rep.DuplicatesMerged != c.dup ||
				rep.SelfLoopsDropped != c.loops || rep.ExtraColumnLines != c.extra {
				t.Fatalf("got n=%d m=%d dup=%d loops=%d extra=%d", g.N(), g.M(), rep.DuplicatesMerged, rep.SelfLoopsDropped, rep.ExtraColumnLines)
			}
		})
	}
}

func TestLabelsRoundTrip(t *testing.T) {
	g, _, err := Parse(strings.NewReader("alice bob\nbob carol\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"alice", "bob", "carol"} {
		id, ok := g.ID(l)
		if !ok || g.Label(id) != l {
			t.Fatalf("label %q -> %d,%v -> %q", l, id, ok, g.Label(id))
		}
	}
	if _, ok := g.ID("dave"); ok {
		t.Fatal("unknown label found")
	}
	a, _ := g.ID("alice")
	c, _ := g.ID("carol")
	if g.HasEdge(a, c) {
		t.Fatal("alice-carol is not an edge")
	}
}

func TestLongLine(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	g, _, err := Parse(strings.NewReader("a "+long+"\nb c\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.ID(long); !ok || g.M() != 2 {
		t.Fatal("long label lost")
	}
}

func TestCompressed(t *testing.T) {
	dir := t.TempDir()
	data := []byte("1 2\n2 3\n3 1\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	var zs bytes.Buffer
	ze, _ := zstd.NewWriter(&zs)
	ze.Write(data)
	ze.Close()
	files := map[string][]byte{"g.txt": data, "g.txt.gz": gz.Bytes(), "g.zst": zs.Bytes()}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		g, _, err := ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if g.Summary(BuildStats{}).Triangles != 1 {
			t.Fatalf("%s: triangle lost", name)
		}
	}
	bad := filepath.Join(dir, "bad.gz")
	os.WriteFile(bad, data, 0o644)
	if _, _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("bad gzip: %v", err)
	}
	if _, _, err := ReadFile(filepath.Join(dir, "missing.txt")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// bruteGraph is an adjacency-matrix reference.
func bruteGraph(n int, edges []Edge) [][]bool {
	a := make([][]bool, n)
	for i := range a {
		a[i] = make([]bool, n)
	}
	for _, e := range edges {
		if e.U != e.V {
			a[e.U][e.V], a[e.V][e.U] = true, true
		}
	}
	return a
}

func TestFromEdgesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 30).Draw(t, "n")
		m := rapid.IntRange(1, 120).Draw(t, "m")
		edges := make([]Edge, m)
		for i := range edges {
			edges[i] = Edge{int32(rapid.IntRange(0, n-1).Draw(t, "u")), int32(rapid.IntRange(0, n-1).Draw(t, "v"))}
		}
		a := bruteGraph(n, edges)
		g, st, err := FromEdges(n, edges, nil)
		var want int64
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if a[i][j] {
					want++
				}
			}
		}
		if want == 0 {
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("want ErrEmpty, got %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var loops int64
		for _, e := range edges {
			if e.U == e.V {
				loops++
			}
		}
		if g.M() != want || st.SelfLoopsDropped != loops || st.DuplicatesMerged != int64(m)-loops-want {
			t.Fatalf("m=%d want %d; stats %+v", g.M(), want, st)
		}
		var tri int64
		for i := 0; i < n; i++ {
			nb := g.Neighbors(int32(i))
			for k := 1; k < len(nb); k++ {
				if nb[k-1] >= nb[k] {
					t.Fatal("neighbours not strictly sorted")
				}
			}
			for j := 0; j < n; j++ {
				if g.HasEdge(int32(i), int32(j)) != a[i][j] {
					t.Fatalf("HasEdge(%d,%d) wrong", i, j)
				}
				for k := j + 1; k < n; k++ {
					if i < j && a[i][j] && a[j][k] && a[i][k] {
						tri++
					}
				}
			}
		}
		if got := g.Summary(st).Triangles; got != tri {
			t.Fatalf("triangles %d want %d", got, tri)
		}
		per := g.TrianglesPerNode()
		for i := 0; i < n; i++ {
			var c int64
			for j := 0; j < n; j++ {
				for k := j + 1; k < n; k++ {
					if a[i][j] && a[i][k] && a[j][k] {
						c++
					}
				}
			}
			if per[i] != c {
				t.Fatalf("node %d triangles %d want %d", i, per[i], c)
			}
		}
	})
}

func TestWithout(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var edges []Edge
	for i := 0; i < 200; i++ {
		edges = append(edges, Edge{int32(r.IntN(40)), int32(r.IntN(40))})
	}
	g, _, err := FromEdges(40, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	drop := func(u, v int32) bool { return (u+v)%3 == 0 }
	h := g.Without(drop)
	if h.N() != g.N() {
		t.Fatal("node count changed")
	}
	var kept int64
	g.Edges(func(u, v int32) {
		if h.HasEdge(u, v) == drop(u, v) {
			t.Fatalf("edge %d-%d wrong after Without", u, v)
		}
		if !drop(u, v) {
			kept++
		}
	})
	if h.M() != kept {
		t.Fatalf("m=%d want %d", h.M(), kept)
	}
}

func TestSharedDatasets(t *testing.T) {
	dir := "../../shared/datasets"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("skipping: %s absent (dataset statistics need ../shared beside the repo)", dir)
	}
	want := map[string]Stats{
		"facebook.txt": {4039, 88234, 0, 0, 1045, 43.69, 1612010, 0.519},
		"usair.txt":    {332, 2126, 0, 0, 139, 12.81, 12181, 0.396},
		"twitter.txt":  {235, 10862, 5095, 0, 228, 92.44, 241991, 0.581},
		"yeast.txt":    {2375, 11693, 0, 0, 118, 9.85, 60689, 0.469},
		"pb.txt":       {1222, 16714, 2307, 0, 351, 27.36, 101043, 0.226},
	}
	for name, w := range want {
		g, rep, err := ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := g.Summary(rep.BuildStats)
		round := func(x float64, d float64) float64 { return float64(int64(x*d+0.5)) / d }
		s.MeanDegree, s.Transitivity = round(s.MeanDegree, 100), round(s.Transitivity, 1000)
		if s != w {
			t.Errorf("%s: got %+v want %+v", name, s, w)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1 2\n", "a,b,3\n# x\n", "1 1\n", "", "x\n", "% c\r\n1\t2\n2 1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g, rep, err := Parse(strings.NewReader(in), "fuzz")
		if err != nil {
			if g != nil {
				t.Fatal("graph returned with error")
			}
			return
		}
		if g.M() == 0 || g.N() < 2 {
			t.Fatal("empty graph accepted")
		}
		if rep.EdgeLines != g.M()+rep.SelfLoopsDropped+rep.DuplicatesMerged {
			t.Fatalf("lines %d != m %d + loops %d + dups %d", rep.EdgeLines, g.M(), rep.SelfLoopsDropped, rep.DuplicatesMerged)
		}
		for u := 0; u < g.N(); u++ {
			id, ok := g.ID(g.Label(int32(u)))
			if !ok || id != int32(u) {
				t.Fatal("label map not a bijection")
			}
			for _, v := range g.Neighbors(int32(u)) {
				if !g.HasEdge(v, int32(u)) || v == int32(u) {
					t.Fatal("asymmetric or self edge")
				}
			}
		}
	})
}

func TestOpenProgressCountsFileBytes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.txt")
	data := []byte(strings.Repeat("1 2\n", 1000))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var n int
	r, c, err := OpenProgress(p, func(k int) { n += k })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := Parse(r, p); err != nil {
		t.Fatal(err)
	}
	if n != len(data) {
		t.Fatalf("progress reported %d bytes, file has %d", n, len(data))
	}
}

// TestAppendLabel: AppendLabel appends exactly Label, for decimal and
// named labels.
func TestAppendLabel(t *testing.T) {
	named, _, err := Parse(strings.NewReader("alice bob\nbob carol\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	dec, _, err := Parse(strings.NewReader("0 1\n1 2\n3 4\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	sparse, _, err := Parse(strings.NewReader("0 1\n1 2\n3 12345\n"), "t") // decimal labels, not the ids
	if err != nil {
		t.Fatal(err)
	}
	if named.DecimalLabels() || !dec.DecimalLabels() || sparse.DecimalLabels() {
		t.Fatalf("DecimalLabels: named %v, decimal ids %v, sparse decimals %v", named.DecimalLabels(), dec.DecimalLabels(), sparse.DecimalLabels())
	}
	bare, _, err := FromEdges(3, []Edge{{U: 0, V: 1}, {U: 1, V: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Graph{named, dec, sparse, bare} {
		for id := int32(0); id < int32(g.N()); id++ {
			if got := string(g.AppendLabel([]byte("x,"), id)); got != "x,"+g.Label(id) {
				t.Fatalf("AppendLabel(%d) = %q, want %q", id, got, "x,"+g.Label(id))
			}
		}
	}
}
