package graph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Canonical numbering (docs/privacy-model.md §15).
//
// Node ids are part of what shapes a release: training permutes ids, draws
// negatives by id and visits nodes in id order, and seeded releases visit
// candidates in id order. So ids must depend only on the set of labels, never
// on how the input was written (line order, which endpoint comes first, which
// line names a node first). Every graph dplp reads is numbered canonically:
// ids follow CompareLabels over the node universe. Two edge lists with the
// same labels and pairs, written in any order, give the same ids, and two
// neighbouring graphs over the same node universe give the same ids.

// CompareLabels is the canonical order of node labels: canonical decimal
// labels (no sign, no leading zero, below 2^31) first, by numeric value;
// then every other label, bytewise. A graph whose labels are 0..n-1 is thus
// numbered by value (id = label). It returns -1, 0 or +1.
func CompareLabels(a, b string) int {
	va, da := decimalString(a)
	vb, db := decimalString(b)
	switch {
	case da && db:
		return cmp.Compare(va, vb)
	case da:
		return -1
	case db:
		return 1
	}
	return strings.Compare(a, b)
}

// IsCanonical reports whether g's ids follow CompareLabels (every graph
// from Parse, ReadFile and Canonical is; decimal-id graphs always are).
func (g *Graph) IsCanonical() bool {
	if g.labels == nil {
		return true
	}
	return isCanonicalLabels(g.labels)
}

func isCanonicalLabels(labels []string) bool {
	for i := 1; i < len(labels); i++ {
		if CompareLabels(labels[i-1], labels[i]) >= 0 {
			return false
		}
	}
	return true
}

// canonicalRanks returns rank[id], the position of labels[id] in the
// canonical order, or nil when labels are already in that order. Labels
// must be distinct.
func canonicalRanks(labels []string) []int32 {
	if labels == nil || isCanonicalLabels(labels) {
		return nil
	}
	n := len(labels)
	type dec struct {
		v  uint32
		id int32
	}
	var decs []dec
	var strs []int32
	for i, l := range labels {
		if v, ok := decimalString(l); ok {
			decs = append(decs, dec{v, int32(i)})
		} else {
			strs = append(strs, int32(i))
		}
	}
	order := make([]int32, 0, n)
	if len(decs) > 0 {
		top := uint32(0)
		for _, d := range decs {
			top = max(top, d.v)
		}
		if int64(top) < 4*int64(len(decs))+1024 {
			// Counting order: values are dense enough for a table.
			slot := make([]int32, int64(top)+1)
			for _, d := range decs {
				slot[d.v] = d.id + 1
			}
			for _, s := range slot {
				if s != 0 {
					order = append(order, s-1)
				}
			}
		} else {
			slices.SortFunc(decs, func(a, b dec) int { return cmp.Compare(a.v, b.v) })
			for _, d := range decs {
				order = append(order, d.id)
			}
		}
	}
	slices.SortFunc(strs, func(a, b int32) int { return strings.Compare(labels[a], labels[b]) })
	order = append(order, strs...)
	rank := make([]int32, n)
	for r, id := range order {
		rank[id] = int32(r)
	}
	return rank
}

// permuteLabels returns labels reordered so that out[rank[i]] = labels[i].
func permuteLabels(labels []string, rank []int32) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[rank[i]] = l
	}
	return out
}

// Canonical returns g numbered canonically (ids in CompareLabels order of
// the labels) and the map old id -> new id (nil when g already is, in which
// case g itself is returned).
func Canonical(g *Graph) (*Graph, []int32) {
	rank := canonicalRanks(g.labels)
	if rank == nil {
		return g, nil
	}
	return g.renumber(rank), rank
}

// renumber builds the graph with node i renamed rank[i] (a permutation).
func (g *Graph) renumber(rank []int32) *Graph {
	n := g.N()
	labels := permuteLabels(g.labels, rank)
	inv := make([]int32, n)
	for i, r := range rank {
		inv[r] = int32(i)
	}
	off := make([]int64, n+1)
	for r := 0; r < n; r++ {
		off[r+1] = off[r] + int64(g.Degree(inv[r]))
	}
	adj := make([]int32, len(g.Adj))
	parallelNodes(n, off, func(lo, hi int) int64 {
		for r := lo; r < hi; r++ {
			nb := adj[off[r]:off[r+1]]
			for i, v := range g.Neighbors(inv[r]) {
				nb[i] = rank[v]
			}
			slices.Sort(nb)
		}
		return 0
	})
	out, err := newGraph(off, adj, labels)
	if err != nil {
		panic("graph: renumbering a valid graph failed: " + err.Error())
	}
	return out
}

// WithNodes returns g with an isolated node added for every label of extra
// that is not yet a node (repeats ignored), numbered canonically, and the
// map old id -> new id (nil when nothing was added and g was canonical, in
// which case g itself is returned). It is how a declared node universe (a
// node list, the labels of a marks file) enters a graph: a node exists
// whether or not it has an edge, so removing a node's only (protected) edge
// changes neither the node set nor the ids.
func WithNodes(g *Graph, extra []string) (*Graph, []int32, error) {
	var add []string
	seen := map[string]bool{}
	for _, l := range extra {
		if _, ok := g.ID(l); ok || seen[l] {
			continue
		}
		if err := checkLabel(l); err != nil {
			return nil, nil, err
		}
		seen[l] = true
		add = append(add, l)
	}
	if len(add) == 0 {
		out, rank := Canonical(g)
		return out, rank, nil
	}
	n := g.N()
	if int64(n)+int64(len(add)) > 1<<31-1 {
		return nil, nil, fmt.Errorf("graph: %d nodes exceed the int32 id range", int64(n)+int64(len(add)))
	}
	labels := make([]string, 0, n+len(add))
	for i := 0; i < n; i++ {
		labels = append(labels, g.Label(int32(i)))
	}
	labels = append(labels, add...)
	off := make([]int64, n+len(add)+1)
	copy(off, g.Off)
	for i := n + 1; i < len(off); i++ {
		off[i] = off[n]
	}
	grown, err := newGraph(off, g.Adj, labels)
	if err != nil {
		return nil, nil, err
	}
	out, rank := Canonical(grown)
	if rank == nil {
		rank = make([]int32, n)
		for i := range rank {
			rank[i] = int32(i)
		}
	}
	return out, rank[:n], nil
}

// checkLabel applies the edge-list label rules (lines.go) to a label that
// did not come through the parser.
func checkLabel(l string) error {
	var f lineFields
	line := []byte(l + "\n")
	nextLine(line, 0, &f)
	if f.msg != "" {
		return fmt.Errorf("graph: label %q: %s", clip([]byte(l)), f.msg)
	}
	if f.n != 1 || string(f.tok[0]) != l {
		return fmt.Errorf("graph: label %q is not a valid node label (labels are single fields without separators or comment marks)", clip([]byte(l)))
	}
	return nil
}
