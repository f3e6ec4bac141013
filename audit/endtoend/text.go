package endtoend

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/snapshot"
)

// Loader reads a dataset (edge list, marks, node list) from text. The
// deployment loader is snapshot.Read: every front end reads graphs and marks
// through it, so the audit loads every graph it audits, G and each
// neighbouring G', through it too. Tests replace it with a loader that
// numbers nodes by first appearance, which must fail the audit.
type Loader func(in snapshot.Inputs) (*snapshot.Dataset, error)

// text is an audited instance written as files: an edge list, a marks file
// and a node list, with string labels. Lines are label pairs in file order.
type text struct {
	labels []string    // label of the in-memory node i
	edges  [][2]string // edge list lines
	marks  [][2]string // marks file lines
	nodes  []string    // node list: labels with neither an edge nor a mark
	// first is the pair written on the edge list's first line (in-memory
	// ids): a protected edge, preferably the only edge of its endpoint, so
	// that removing it removes a node's first appearance (and only edge).
	first    [2]int32
	hasFirst bool
}

// instanceLabels gives node i a label such that the canonical order
// (graph.CompareLabels: canonical decimal labels by value, then the others
// bytewise) is a random permutation of the in-memory ids: a third of the
// nodes get decimal labels, the others non-decimal strings.
func instanceLabels(n int, r *rand.Rand) []string {
	perm := r.Perm(n)
	labels := make([]string, n)
	for i, q := range perm {
		if q%3 == 0 {
			labels[i] = strconv.Itoa(7*q + 3)
		} else {
			labels[i] = fmt.Sprintf("n-%03d", q)
		}
	}
	return labels
}

// writeText writes instance in as text. The edge lines come in a random
// order with random endpoint order, except that the first line is a
// protected edge (of a node whose edges are all protected, when there is
// one); marks lines are shuffled too, and the node list declares the nodes
// that neither an edge nor a mark names (so the loaded graph has every node
// of in).
func writeText(in instance, r *rand.Rand) *text {
	g, p := in.g, in.p
	n := g.N()
	t := &text{labels: instanceLabels(n, r)}
	edges := g.EdgeList()
	r.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	// The first line: a protected edge, preferably a node's only edge, else
	// an edge of a node whose every edge is protected.
	// rank: 3 for the only edge of a node (protected), 2 for an edge of a
	// node whose edges are all protected, 1 for another protected edge.
	rank := func(u int32) int {
		switch {
		case !loner(g, p, u):
			return 1
		case g.Degree(u) == 1:
			return 3
		}
		return 2
	}
	best, bestRank := -1, 0
	for i, e := range edges {
		if !p.Has(e.U, e.V) {
			continue
		}
		if r := max(rank(e.U), rank(e.V)); r > bestRank {
			best, bestRank = i, r
		}
	}
	if best >= 0 {
		edges[0], edges[best] = edges[best], edges[0]
		t.first, t.hasFirst = [2]int32{edges[0].U, edges[0].V}, true
		if rank(edges[0].V) > rank(edges[0].U) {
			t.first = [2]int32{edges[0].V, edges[0].U}
		}
	}
	named := make([]bool, n)
	pair := func(e graph.Edge) [2]string {
		named[e.U], named[e.V] = true, true
		a, b := t.labels[e.U], t.labels[e.V]
		if r.IntN(2) == 1 {
			a, b = b, a
		}
		return [2]string{a, b}
	}
	for _, e := range edges {
		t.edges = append(t.edges, pair(e))
	}
	marks := p.Pairs()
	r.Shuffle(len(marks), func(i, j int) { marks[i], marks[j] = marks[j], marks[i] })
	for _, e := range marks {
		t.marks = append(t.marks, pair(e))
	}
	for i := 0; i < n; i++ {
		if !named[i] {
			t.nodes = append(t.nodes, t.labels[i])
		}
	}
	return t
}

// loner reports whether u has an edge and all of u's edges are protected.
func loner(g *graph.Graph, p *protect.Set, u int32) bool {
	nb := g.Neighbors(u)
	if len(nb) == 0 {
		return false
	}
	for _, v := range nb {
		if !p.Has(u, v) {
			return false
		}
	}
	return true
}

// inputs are t's files as snapshot.Inputs.
func (t *text) inputs(name string) snapshot.Inputs {
	pairs := func(ls [][2]string) string {
		var sb strings.Builder
		for _, l := range ls {
			sb.WriteString(l[0])
			sb.WriteByte(' ')
			sb.WriteString(l[1])
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	in := snapshot.Inputs{
		Edges: strings.NewReader(pairs(t.edges)), EdgesName: name + ".edges",
		Marks: strings.NewReader(pairs(t.marks)), MarksName: name + ".marks",
	}
	if len(t.nodes) > 0 {
		in.Nodes, in.NodesName = strings.NewReader(strings.Join(t.nodes, "\n")+"\n"), name+".nodes"
	}
	return in
}

// representation is one way of writing the same (label set, graph, marks).
type representation struct {
	name string
	t    *text
}

// representations writes t three more ways: every line reordered (edges,
// marks and the node list), every line's endpoints swapped, and the lines
// sorted so that the label first appearing is the canonically last one
// (first appearances in reverse canonical order).
func (t *text) representations(r *rand.Rand) []representation {
	clone := func() *text {
		c := *t
		c.edges, c.marks, c.nodes = slices.Clone(t.edges), slices.Clone(t.marks), slices.Clone(t.nodes)
		return &c
	}
	reordered := clone()
	for _, ls := range [][][2]string{reordered.edges, reordered.marks} {
		r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	}
	slices.Reverse(reordered.nodes)
	swapped := clone()
	for _, ls := range [][][2]string{swapped.edges, swapped.marks} {
		for i := range ls {
			ls[i][0], ls[i][1] = ls[i][1], ls[i][0]
		}
	}
	last := clone()
	for _, ls := range [][][2]string{last.edges, last.marks} {
		for i := range ls {
			if graph.CompareLabels(ls[i][0], ls[i][1]) < 0 {
				ls[i][0], ls[i][1] = ls[i][1], ls[i][0] // larger label first
			}
		}
		slices.SortFunc(ls, func(a, b [2]string) int {
			if c := graph.CompareLabels(b[0], a[0]); c != 0 {
				return c
			}
			return graph.CompareLabels(b[1], a[1])
		})
	}
	return []representation{{"lines-reordered", reordered}, {"endpoints-swapped", swapped}, {"first-appearance-reversed", last}}
}

// toggled is t with the pairs {w, x}, x in xs, toggled (labels): an edge's
// line is removed, a non-edge becomes a line prepended to the file (so it is
// its endpoints' first appearance). Marks and node list are unchanged: the
// node universe of G' is G's.
func (t *text) toggled(wl string, xls []string) *text {
	c := *t
	flip := make(map[[2]string]bool, len(xls))
	for _, x := range xls {
		flip[[2]string{min(wl, x), max(wl, x)}] = true
	}
	c.edges = nil
	var added [][2]string
	present := map[[2]string]bool{}
	for _, l := range t.edges {
		key := [2]string{min(l[0], l[1]), max(l[0], l[1])}
		if flip[key] {
			present[key] = true
			continue
		}
		c.edges = append(c.edges, l)
	}
	for _, x := range xls {
		key := [2]string{min(wl, x), max(wl, x)}
		if !present[key] {
			added = append(added, [2]string{x, wl})
		}
	}
	c.edges = append(added, c.edges...)
	return &c
}

// sameGraph reports whether a and b are the same graph with the same ids
// (labels of every id, adjacency).
func sameGraph(a, b *graph.Graph) bool {
	if a.N() != b.N() || !slices.Equal(a.Off, b.Off) || !slices.Equal(a.Adj, b.Adj) {
		return false
	}
	for i := int32(0); int(i) < a.N(); i++ {
		if a.Label(i) != b.Label(i) {
			return false
		}
	}
	return true
}

// sameMarks reports whether a and b mark the same pairs of ids.
func sameMarks(a, b *protect.Set) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.N() == b.N() && slices.Equal(a.Pairs(), b.Pairs())
}

// encodes reports whether the loaded (g, p) is instance in under labels:
// the same node universe, and the same edges and marks between the same
// labels (whatever the ids).
func encodes(in instance, labels []string, g *graph.Graph, p *protect.Set) error {
	if g.N() != in.g.N() {
		return fmt.Errorf("%d nodes loaded, the instance has %d", g.N(), in.g.N())
	}
	if p == nil || p.N() != g.N() {
		return fmt.Errorf("marks not loaded over the graph's nodes")
	}
	ids := make([]int32, len(labels))
	for i, l := range labels {
		id, ok := g.ID(l)
		if !ok {
			return fmt.Errorf("label %q is not a node of the loaded graph", l)
		}
		ids[i] = id
	}
	if g.M() != in.g.M() || p.Len() != in.p.Len() {
		return fmt.Errorf("%d edges and %d marks loaded, the instance has %d and %d", g.M(), p.Len(), in.g.M(), in.p.Len())
	}
	for _, e := range in.g.EdgeList() {
		if !g.HasEdge(ids[e.U], ids[e.V]) {
			return fmt.Errorf("edge %s-%s missing", labels[e.U], labels[e.V])
		}
	}
	for _, e := range in.p.Pairs() {
		if !p.Has(ids[e.U], ids[e.V]) {
			return fmt.Errorf("mark %s-%s missing", labels[e.U], labels[e.V])
		}
	}
	return nil
}
