package graph

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestFromCSR(t *testing.T) {
	g, _, err := Parse(strings.NewReader("a b\nb c\nc a\nc d\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	h, err := FromCSR(slices.Clone(g.Off), slices.Clone(g.Adj), slices.Clone(g.Labels()))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := h.ID("d"); !ok || id != 3 || h.M() != 4 || !h.HasEdge(0, 2) {
		t.Fatal("FromCSR graph differs")
	}
	for _, c := range []struct {
		off    []int64
		adj    []int32
		labels []string
		err    string
	}{
		{[]int64{0, 1, 2}, []int32{1, 0}, []string{"x", "x"}, "same label"},
		{[]int64{0, 1, 2}, []int32{1, 0}, []string{"x"}, "1 labels for 2 nodes"},
		{[]int64{0, 1, 1}, []int32{1}, nil, "not symmetric"},
		{[]int64{0, 1, 2, 3}, []int32{1, 2, 0}, nil, "not symmetric"},
		{[]int64{0, 2, 3, 4}, []int32{2, 1, 0, 0}, nil, "strictly increasing"},
		{[]int64{0, 1, 2}, []int32{-1, 0}, nil, "strictly increasing"},
		{[]int64{0, 1, 2}, []int32{0, 1}, nil, "self-loops"},
		{[]int64{1, 1, 2}, []int32{1, 0}, nil, "offsets run"},
		{[]int64{0, 2, 1, 2}, []int32{1, 0}, nil, "decrease"},
		{[]int64{0}, nil, nil, "no nodes"},
	} {
		if _, err := FromCSR(c.off, c.adj, c.labels); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("FromCSR(%v, %v, %q): %v, want %q", c.off, c.adj, c.labels, err, c.err)
		}
	}
}

// TestFromCSRSymmetryProperty: FromCSR accepts exactly the symmetric CSRs,
// checked against a direct test on random sorted adjacency lists.
func TestFromCSRSymmetryProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		off := make([]int64, n+1)
		var adj []int32
		has := map[[2]int32]bool{}
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if v != u && rapid.IntRange(0, 3).Draw(t, "e") == 0 {
					adj = append(adj, int32(v))
					has[[2]int32{int32(u), int32(v)}] = true
				}
			}
			off[u+1] = int64(len(adj))
		}
		sym := true
		for p := range has {
			if !has[[2]int32{p[1], p[0]}] {
				sym = false
			}
		}
		_, err := FromCSR(off, adj, nil)
		if (err == nil) != sym {
			t.Fatalf("symmetric %v, FromCSR error %v (off %v adj %v)", sym, err, off, adj)
		}
	})
}

// TestBuildCSRProperty checks the one CSR builder against a brute-force
// adjacency (a set of neighbours per node) on edge lists in several chunks,
// large enough in some cases for the parallel sort and merge (at least 2^16
// entries): the lists, the self-loops dropped and the duplicates merged.
func TestBuildCSRProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		m := rapid.SampledFrom([]int{0, 1, 10, 500, 40000}).Draw(t, "m")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7))
		span := rapid.IntRange(1, n).Draw(t, "span") // small spans make repeats and self-loops
		var chunks [][]Edge
		var chunk []Edge
		want := make([]map[int32]bool, n)
		var loops, pairs int64
		for i := 0; i < m; i++ {
			u := r.IntN(n)
			v := (u + r.IntN(span)) % n
			if r.IntN(2) == 0 {
				u, v = v, u
			}
			chunk = append(chunk, Edge{int32(u), int32(v)})
			if u == v {
				loops++
			} else {
				if want[u] == nil {
					want[u] = map[int32]bool{}
				}
				if want[v] == nil {
					want[v] = map[int32]bool{}
				}
				if !want[u][int32(v)] {
					pairs++
				}
				want[u][int32(v)], want[v][int32(u)] = true, true
			}
			if r.IntN(5000) == 0 {
				chunks, chunk = append(chunks, chunk), nil
			}
		}
		chunks = append(chunks, chunk)
		off, adj, st, err := buildCSR(n, chunks)
		if pairs == 0 {
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("no pairs: got %v, want ErrEmpty", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.SelfLoopsDropped != loops || st.DuplicatesMerged != int64(m)-loops-pairs {
			t.Fatalf("stats %+v, want %d self-loops and %d duplicates", st, loops, int64(m)-loops-pairs)
		}
		if len(off) != n+1 || off[0] != 0 || off[n] != int64(len(adj)) || int64(len(adj)) != 2*pairs {
			t.Fatalf("offsets %d..%d for %d entries, want %d", off[0], off[n], len(adj), 2*pairs)
		}
		for u := 0; u < n; u++ {
			got := adj[off[u]:off[u+1]]
			exp := make([]int32, 0, len(want[u]))
			for v := range want[u] {
				exp = append(exp, v)
			}
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Fatalf("node %d: %v, want %v", u, got, exp)
			}
		}
		if _, err := FromCSR(off, adj, nil); err != nil {
			t.Fatalf("the builder's CSR fails FromCSR: %v", err)
		}
	})
}

// TestFromCSRFirstBadNode: with several broken lists, the error names the
// lowest node, however the parallel check's ranges are scheduled.
func TestFromCSRFirstBadNode(t *testing.T) {
	const n = 60000 // a path: 2(n-1) entries, enough for the parallel check
	edges := make([]Edge, n-1)
	for i := range edges {
		edges[i] = Edge{int32(i), int32(i + 1)}
	}
	g, _, err := FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	for trial := 0; trial < 20; trial++ {
		adj := slices.Clone(g.Adj)
		for _, u := range []int{50000, 30001, 45000} { // reverse their two neighbours
			nb := adj[g.Off[u]:g.Off[u+1]]
			nb[0], nb[1] = nb[1], nb[0]
		}
		_, err := FromCSR(g.Off, adj, nil)
		if err == nil || !strings.Contains(err.Error(), "node 30001 is not strictly increasing") {
			t.Fatalf("error %v, want node 30001", err)
		}
	}
}
