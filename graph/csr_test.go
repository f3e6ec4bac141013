package graph

import (
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
