// Package graph holds dplp's undirected simple graph: int32 node ids in CSR
// form with sorted neighbour lists, plus the map back to the user's labels.
//
// Every other package reads graphs through this type. It is immutable after
// construction, so it may be shared by any number of goroutines.
package graph

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Graph is an undirected simple graph in compressed sparse row form.
// Node ids are dense in [0, N). Neighbours of u are Adj[Off[u]:Off[u+1]],
// sorted ascending, with no self-loops and no repeats.
type Graph struct {
	Off    []int64
	Adj    []int32
	labels []string // labels[id]; nil means the label of id is its decimal id
	index  map[string]int32
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
// length n. The edges slice is not retained.
func FromEdges(n int, edges []Edge, labels []string) (*Graph, BuildStats, error) {
	var st BuildStats
	if n <= 0 {
		return nil, st, ErrEmpty
	}
	if n > 1<<31-1 {
		return nil, st, fmt.Errorf("graph: %d nodes exceed the int32 id range", n)
	}
	if labels != nil && len(labels) != n {
		return nil, st, fmt.Errorf("graph: %d labels for %d nodes", len(labels), n)
	}
	deg := make([]int64, n+1)
	for _, e := range edges {
		if e.U < 0 || e.V < 0 || int(e.U) >= n || int(e.V) >= n {
			return nil, st, fmt.Errorf("graph: edge (%d,%d) out of range [0,%d)", e.U, e.V, n)
		}
		if e.U == e.V {
			st.SelfLoopsDropped++
			continue
		}
		deg[e.U+1]++
		deg[e.V+1]++
	}
	for i := 1; i <= n; i++ {
		deg[i] += deg[i-1]
	}
	adj := make([]int32, deg[n])
	fill := make([]int64, n)
	copy(fill, deg[:n])
	for _, e := range edges {
		if e.U == e.V {
			continue
		}
		adj[fill[e.U]] = e.V
		fill[e.U]++
		adj[fill[e.V]] = e.U
		fill[e.V]++
	}
	fill = nil
	// Sort each list and compact out repeats in place.
	off := deg
	var w int64
	var dupHalves int64
	start := int64(0)
	for u := 0; u < n; u++ {
		end := off[u+1]
		nb := adj[start:end]
		slices.Sort(nb)
		off[u] = w
		var prev int32 = -1
		for _, v := range nb {
			if v == prev {
				dupHalves++
				continue
			}
			adj[w] = v
			w++
			prev = v
		}
		start = end
	}
	off[n] = w
	st.DuplicatesMerged = dupHalves / 2
	if w == 0 {
		return nil, st, ErrEmpty
	}
	adj = slices.Clip(adj[:w])
	g := &Graph{Off: off, Adj: adj, labels: labels}
	return g, st, nil
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

// Labels returns the label table (nil when labels are decimal ids).
func (g *Graph) Labels() []string { return g.labels }

// ID looks up the node id of a user label.
func (g *Graph) ID(label string) (int32, bool) {
	if g.labels == nil {
		id, err := strconv.Atoi(label)
		if err != nil || id < 0 || id >= g.N() || strconv.Itoa(id) != label {
			return 0, false
		}
		return int32(id), true
	}
	if g.index == nil {
		g.buildIndex()
	}
	id, ok := g.index[label]
	return id, ok
}

func (g *Graph) buildIndex() {
	idx := make(map[string]int32, len(g.labels))
	for i, l := range g.labels {
		idx[l] = int32(i)
	}
	g.index = idx
}

// WithIndex precomputes the label index so that ID is safe for concurrent use.
func (g *Graph) WithIndex() *Graph {
	if g.labels != nil && g.index == nil {
		g.buildIndex()
	}
	return g
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
// that are not edges are ignored. Labels are shared. The result may have nodes
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
	return &Graph{Off: off, Adj: slices.Clip(adj), labels: g.labels, index: g.index}
}
