// Package protect holds protection marks: the set of protected pairs of a
// graph (privacy-model §1). Protection is per pair and symmetric: {a, b} is
// protected when a marks b or b marks a. A protected pair may be an edge or a
// non-edge. Marks are public metadata, so everything here is invariant between
// neighbouring graphs.
package protect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/graph"
)

// Set is an immutable set of protected pairs over nodes [0, N), stored as a
// CSR of sorted per-node lists prot(w) (each pair appears in both lists).
type Set struct {
	off []int64
	adj []int32
}

// New builds a Set on n nodes from pairs in any order. Self-pairs are
// rejected; repeated and reciprocal pairs are merged. The CSR is made by the
// graph package's builder (graph.FromEdges), the one dplp has.
func New(n int, pairs []graph.Edge) (*Set, error) {
	for _, p := range pairs {
		if p.U == p.V {
			return nil, fmt.Errorf("protect: node %d cannot protect itself", p.U)
		}
		if p.U < 0 || p.V < 0 || int(p.U) >= n || int(p.V) >= n {
			return nil, fmt.Errorf("protect: pair (%d,%d) out of range [0,%d)", p.U, p.V, n)
		}
	}
	if len(pairs) == 0 {
		return Empty(n), nil
	}
	g, _, err := graph.FromEdges(n, pairs, nil)
	if err != nil {
		return nil, fmt.Errorf("protect: %w", err)
	}
	return &Set{off: g.Off, adj: g.Adj}, nil
}

// Empty is a set with no protected pairs on n nodes.
func Empty(n int) *Set { return &Set{off: make([]int64, n+1)} }

// N is the number of nodes the set is defined over.
func (s *Set) N() int { return len(s.off) - 1 }

// Len is the number of protected pairs.
func (s *Set) Len() int64 { return int64(len(s.adj)) / 2 }

// Of returns prot(w), sorted ascending. The slice aliases the set.
func (s *Set) Of(w int32) []int32 { return s.adj[s.off[w]:s.off[w+1]] }

// CSR returns the set's compressed rows: prot(w) is adj[off[w]:off[w+1]]
// (ascending). The slices alias the set: read them, never modify them.
// They let a caller that walks many rows read ahead (package score
// prefetches them).
func (s *Set) CSR() (off []int64, adj []int32) { return s.off, s.adj }

// Count is |prot(w)|.
func (s *Set) Count(w int32) int { return int(s.off[w+1] - s.off[w]) }

// Has reports whether {a, b} is protected.
func (s *Set) Has(a, b int32) bool {
	if s.Count(a) > s.Count(b) {
		a, b = b, a
	}
	_, ok := slices.BinarySearch(s.Of(a), b)
	return ok
}

// Pairs returns every protected pair once with U < V.
func (s *Set) Pairs() []graph.Edge {
	out := make([]graph.Edge, 0, s.Len())
	for u := 0; u < s.N(); u++ {
		for _, v := range s.Of(int32(u)) {
			if int32(u) < v {
				out = append(out, graph.Edge{U: int32(u), V: v})
			}
		}
	}
	return out
}

// Public returns G_pub: g with every protected edge removed (privacy-model §5).
func (s *Set) Public(g *graph.Graph) *graph.Graph {
	return g.Without(func(u, v int32) bool { return s.Has(u, v) })
}

// Synthetic marks a seeded fraction sigma of g's edges protected (chosen
// uniformly without replacement, floor(sigma*M) of them) and, when
// nonEdgeFrac > 0, for every node w a fraction nonEdgeFrac of w's non-edges
// {w, x} with x > w, so every non-edge is considered once.
func Synthetic(g *graph.Graph, sigma, nonEdgeFrac float64, rng *rand.Rand) (*Set, error) {
	if !(sigma >= 0 && sigma <= 1) {
		return nil, fmt.Errorf("protect: sigma %v not in [0,1]", sigma)
	}
	if !(nonEdgeFrac >= 0 && nonEdgeFrac <= 1) {
		return nil, fmt.Errorf("protect: non-edge fraction %v not in [0,1]", nonEdgeFrac)
	}
	edges := g.EdgeList()
	k := int(sigma * float64(len(edges)))
	// Partial Fisher-Yates: the first k entries are a uniform sample.
	for i := 0; i < k; i++ {
		j := i + rng.IntN(len(edges)-i)
		edges[i], edges[j] = edges[j], edges[i]
	}
	pairs := edges[:k:k]
	if nonEdgeFrac > 0 {
		n := g.N()
		for w := 0; w < n; w++ {
			nb := g.Neighbors(int32(w))
			// Non-edges {w, x} with x > w, sampled by Bernoulli(nonEdgeFrac)
			// draws with geometric skips so the cost is proportional to the output.
			x := w
			for {
				x += 1 + geomSkip(rng, nonEdgeFrac)
				if x >= n {
					break
				}
				if _, isEdge := slices.BinarySearch(nb, int32(x)); isEdge {
					continue
				}
				pairs = append(pairs, graph.Edge{U: int32(w), V: int32(x)})
			}
		}
	}
	return New(g.N(), pairs)
}

// geomSkip returns the number of failures before the next success of a
// Bernoulli(p) sequence.
func geomSkip(rng *rand.Rand, p float64) int {
	if p >= 1 {
		return 0
	}
	u := 1 - rng.Float64() // (0, 1]
	s := math.Log(u) / math.Log1p(-p)
	if s > 1<<40 {
		return 1 << 40
	}
	return int(s)
}

// Renumber returns the set with node i renamed rank[i] on n >= len(rank)
// nodes (rank maps old ids to distinct new ids below n, as graph.Canonical
// and graph.WithNodes return; nodes beyond len(rank) have no marks).
func (s *Set) Renumber(n int, rank []int32) (*Set, error) {
	if len(rank) != s.N() {
		return nil, fmt.Errorf("protect: renumbering %d nodes with a map of %d", s.N(), len(rank))
	}
	pairs := s.Pairs()
	for i, p := range pairs {
		pairs[i] = graph.Edge{U: rank[p.U], V: rank[p.V]}
	}
	return New(n, pairs)
}
