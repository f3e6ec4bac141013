// Package graph holds dplp's undirected simple graph: int32 node ids in CSR
// form with sorted neighbour lists, plus the map back to the user's labels.
//
// Every other package reads graphs through this type. A Graph is immutable:
// every constructor (FromEdges, FromCSR, Parse and ReadFile, Without) builds
// all of it, the label index included, before returning it, and no method
// writes to it afterwards. It may therefore be shared by any number of
// goroutines without locking. The exported Off and Adj slices, and the
// slices returned by Neighbors and Labels, alias the graph and must not be
// modified.
package graph

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Graph is an undirected simple graph in compressed sparse row form.
// Node ids are dense in [0, N). Neighbours of u are Adj[Off[u]:Off[u+1]],
// sorted ascending, with no self-loops and no repeats. A Graph is never
// modified after construction (see the package documentation).
type Graph struct {
	Off    []int64
	Adj    []int32
	labels []string   // labels[id]; nil means the label of id is its decimal id
	index  labelIndex // built by newGraph, with the graph
}

// newGraph assembles a graph from a checked CSR and builds its label index
// (which checks that labels are distinct), so the graph is complete, and
// never changes, once returned. FromCSR builds the index alongside its own
// checks, and Without shares the index of the graph it derives from.
func newGraph(off []int64, adj []int32, labels []string) (*Graph, error) {
	index, err := newLabelIndex(labels)
	if err != nil {
		return nil, err
	}
	return &Graph{Off: off, Adj: adj, labels: labels, index: index}, nil
}

// Edge is an undirected pair of node ids.
type Edge struct{ U, V int32 }

// BuildStats reports what construction merged or dropped.
type BuildStats struct {
	SelfLoopsDropped int64 // lines with u == v
	DuplicatesMerged int64 // repeated or reciprocal copies of an edge already present
}

// ErrEmpty is returned when a graph would have no edges.
var ErrEmpty = errors.New("graph has no edges")

// FromEdges builds a graph on n nodes from an edge list in any order. Self-loops
// are dropped and repeated or reciprocal pairs merged, both counted in the
// returned stats. labels may be nil (labels are then the decimal ids) or have
// length n, all distinct (two equal labels are an error). The edges slice is
// not retained.
func FromEdges(n int, edges []Edge, labels []string) (*Graph, BuildStats, error) {
	return fromEdgeChunks(n, [][]Edge{edges}, labels)
}

// N is the number of nodes.
func (g *Graph) N() int { return len(g.Off) - 1 }

// M is the number of undirected edges.
func (g *Graph) M() int64 { return int64(len(g.Adj)) / 2 }

// Degree of u.
func (g *Graph) Degree(u int32) int { return int(g.Off[u+1] - g.Off[u]) }

// Neighbors of u, sorted ascending. The slice aliases the graph: do not modify.
func (g *Graph) Neighbors(u int32) []int32 { return g.Adj[g.Off[u]:g.Off[u+1]] }

// HasEdge reports whether {u, v} is an edge (binary search in the shorter list).
func (g *Graph) HasEdge(u, v int32) bool {
	if u == v {
		return false
	}
	if g.Degree(u) > g.Degree(v) {
		u, v = v, u
	}
	_, ok := slices.BinarySearch(g.Neighbors(u), v)
	return ok
}

// MaxDegree is the largest degree.
func (g *Graph) MaxDegree() int {
	m := 0
	for u := 0; u < g.N(); u++ {
		if d := g.Degree(int32(u)); d > m {
			m = d
		}
	}
	return m
}

// Label is the user's label of node id.
func (g *Graph) Label(id int32) string {
	if g.labels == nil {
		return strconv.Itoa(int(id))
	}
	return g.labels[id]
}

// AppendLabel appends Label(id) to dst without allocating a string (for
// callers formatting many labels, such as a released list). Decimal-id
// labels are formatted rather than read from the label table.
func (g *Graph) AppendLabel(dst []byte, id int32) []byte {
	if g.DecimalLabels() {
		return strconv.AppendInt(dst, int64(id), 10)
	}
	return append(dst, g.labels[id]...)
}

// DecimalLabels reports whether every node's label is its decimal id
// (with or without a label table).
func (g *Graph) DecimalLabels() bool { return g.labels == nil || g.index.decimal }

// Labels returns the label table (nil when labels are decimal ids).
func (g *Graph) Labels() []string { return g.labels }

// ByLabel returns every node id ordered by label, bytewise (the order of
// SQLite's BINARY and PostgreSQL's "C" collation). A batch released in
// this order reaches the ledger's per-user indexes as appends rather than
// scattered inserts, which keeps a large batch's write volume linear in
// its size (release.Recommender.Stream's documentation has the figures).
func (g *Graph) ByLabel() []int32 {
	if g.DecimalLabels() {
		return decimalLexOrder(g.N())
	}
	ids := make([]int32, g.N())
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(x, y int32) int { return strings.Compare(g.labels[x], g.labels[y]) })
	return ids
}

// decimalLexOrder returns 0..n-1 ordered by their decimal strings,
// bytewise ("0", "1", "10", "100", ..., "11", ..., "2", ...), in O(n)
// without sorting: a preorder walk of the decimal trie of 1..n-1 after "0".
// (Sorting ten million formatted ids took 12 s.)
func decimalLexOrder(n int) []int32 {
	ids := make([]int32, 0, n)
	if n == 0 {
		return ids
	}
	ids = append(ids, 0)
	last := n - 1
	cur := 1
	for len(ids) < n {
		ids = append(ids, int32(cur))
		if cur <= last/10 { // cur*10 <= last: descend to the first child
			cur *= 10
			continue
		}
		// Climb while cur is the last sibling (digit 9) or its next sibling
		// is beyond last, then step to the next sibling.
		for cur%10 == 9 || cur+1 > last {
			cur /= 10
		}
		cur++
	}
	return ids
}

// ID looks up the node id of a user label. It only reads the index built
// with the graph.
func (g *Graph) ID(label string) (int32, bool) {
	if g.index.decimal {
		return decimalID(label, g.N())
	}
	return g.index.lookup(g.labels, label)
}

// Edges calls fn for every undirected edge once, with u < v.
func (g *Graph) Edges(fn func(u, v int32)) {
	for u := 0; u < g.N(); u++ {
		for _, v := range g.Neighbors(int32(u)) {
			if int32(u) < v {
				fn(int32(u), v)
			}
		}
	}
}

// EdgeList returns every undirected edge once, with U < V, in id order.
func (g *Graph) EdgeList() []Edge {
	out := make([]Edge, 0, g.M())
	g.Edges(func(u, v int32) { out = append(out, Edge{u, v}) })
	return out
}

// Without returns a copy of g with the given undirected edges removed. Pairs
// that are not edges are ignored. Labels and their index are shared. The result may have nodes
// of degree zero; it is never an error for it to have no edges.
func (g *Graph) Without(remove func(u, v int32) bool) *Graph {
	n := g.N()
	off := make([]int64, n+1)
	adj := make([]int32, 0, len(g.Adj))
	for u := 0; u < n; u++ {
		off[u] = int64(len(adj))
		for _, v := range g.Neighbors(int32(u)) {
			a, b := int32(u), v
			if a > b {
				a, b = b, a
			}
			if !remove(a, b) {
				adj = append(adj, v)
			}
		}
	}
	off[n] = int64(len(adj))
	// Same labels, so the same (immutable) index.
	return &Graph{Off: off, Adj: slices.Clip(adj), labels: g.labels, index: g.index}
}
