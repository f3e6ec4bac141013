package endtoend

// The audited graphs: random instances and the adversarial families.

import (
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
)

// randomInstance draws a G(n, p) graph with 30% of edges and 5% of
// non-edges protected.
func randomInstance(r *rand.Rand, n int, p float64) (*graph.Graph, *protect.Set, error) {
	var edges, prot []graph.Edge
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			e := graph.Edge{U: int32(a), V: int32(b)}
			if r.Float64() < p {
				edges = append(edges, e)
				if r.Float64() < 0.3 {
					prot = append(prot, e)
				}
			} else if r.Float64() < 0.05 {
				prot = append(prot, e)
			}
		}
	}
	return build(n, edges, prot)
}

func build(n int, edges, prot []graph.Edge) (*graph.Graph, *protect.Set, error) {
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		return nil, nil, err
	}
	p, err := protect.New(n, prot)
	return g, p, err
}

// families are the adversarial structures, each planted into a random
// 16-node graph (so that training has public data to learn from).
func families(r *rand.Rand) ([]instance, error) {
	var out []instance
	base := func() ([]graph.Edge, []graph.Edge, int) {
		n := 16
		var edges, prot []graph.Edge
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if r.Float64() < 0.3 {
					edges = append(edges, graph.Edge{U: int32(a), V: int32(b)})
				}
			}
		}
		return edges, prot, n
	}
	add := func(name string, edges, prot []graph.Edge, n int) error {
		g, p, err := build(n, dedup(edges), dedup(prot))
		if err != nil {
			return err
		}
		out = append(out, instance{name, g, p})
		return nil
	}
	e := func(a, b int) graph.Edge { return graph.Edge{U: int32(min(a, b)), V: int32(max(a, b))} }
	// A hub protected to all of u's neighbours: u = 16 with neighbours 0..3,
	// hub 17 adjacent to them by protected edges.
	{
		edges, prot, n := base()
		u, hub := n, n+1
		for z := 0; z < 4; z++ {
			edges = append(edges, e(u, z), e(hub, z))
			prot = append(prot, e(hub, z))
		}
		edges = append(edges, e(hub, 5))
		if err := add("hub-protected-to-neighbours", edges, prot, n+2); err != nil {
			return nil, err
		}
	}
	// A star whose leaves' spokes are protected.
	{
		edges, prot, n := base()
		c := n
		for z := 0; z < 8; z++ {
			edges = append(edges, e(c, z))
			if z%2 == 0 {
				prot = append(prot, e(c, z))
			}
		}
		if err := add("star", edges, prot, n+1); err != nil {
			return nil, err
		}
	}
	// A clique of 6 with protected internal edges and non-edges to outside.
	{
		edges, prot, n := base()
		for a := n; a < n+6; a++ {
			for b := a + 1; b < n+6; b++ {
				edges = append(edges, e(a, b))
				if (a+b)%3 == 0 {
					prot = append(prot, e(a, b))
				}
			}
			prot = append(prot, e(a, a-n))
		}
		edges = append(edges, e(n, 0))
		if err := add("clique", edges, prot, n+6); err != nil {
			return nil, err
		}
	}
	// Degree-1 queries and degree-2 neighbours: a path 16-17-18 hanging off
	// node 0, protected pairs around it.
	{
		edges, prot, n := base()
		edges = append(edges, e(n, n+1), e(n+1, 0), e(n+2, n+1))
		prot = append(prot, e(n+1, 0), e(n+2, 3), e(n, 5))
		if err := add("degree-1-and-2", edges, prot, n+3); err != nil {
			return nil, err
		}
	}
	// Nodes whose only edges are protected: a loner with one protected edge
	// (the edge list's first line, so removing it removes the loner's first
	// appearance and its only edge) and a node with two, both protected.
	{
		edges, prot, n := base()
		edges = append(edges, e(n, 0), e(n+1, 1), e(n+1, 2))
		prot = append(prot, e(n, 0), e(n+1, 1), e(n+1, 2), e(n+1, 7))
		if err := add("only-edges-protected", edges, prot, n+2); err != nil {
			return nil, err
		}
	}
	// Many protected non-edges.
	{
		edges, prot, n := base()
		have := map[graph.Edge]bool{}
		for _, x := range edges {
			have[x] = true
		}
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if !have[e(a, b)] && r.Float64() < 0.25 {
					prot = append(prot, e(a, b))
				}
			}
		}
		if err := add("many-protected-non-edges", edges, prot, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func dedup(es []graph.Edge) []graph.Edge {
	slices.SortFunc(es, func(a, b graph.Edge) int {
		if a.U != b.U {
			return int(a.U - b.U)
		}
		return int(a.V - b.V)
	})
	return slices.Compact(es)
}
