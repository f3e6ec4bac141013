package protect

import (
	"fmt"
	"slices"

	"github.com/dplp/dplp/graph"
)

// Toggle returns a copy of g in which the pairs {w, x}, x in xs, are
// toggled (an edge becomes a non-edge and vice versa); labels are kept. With
// xs a subset of prot(w) \ {u}, the result is u-neighbouring to g
// (privacy-model §2). An edgeless result is a valid graph of n isolated
// nodes.
func Toggle(g *graph.Graph, w int32, xs []int32) (*graph.Graph, error) {
	n := g.N()
	if w < 0 || int(w) >= n {
		return nil, fmt.Errorf("protect: toggle node %d out of range [0,%d)", w, n)
	}
	flip := make(map[graph.Edge]bool, len(xs))
	for _, x := range xs {
		if x < 0 || int(x) >= n || x == w {
			return nil, fmt.Errorf("protect: toggle pair {%d,%d} invalid for %d nodes", w, x, n)
		}
		flip[graph.Edge{U: min(w, x), V: max(w, x)}] = true
	}
	edges := make([]graph.Edge, 0, int(g.M())+len(xs))
	g.Edges(func(u, v int32) {
		if !flip[graph.Edge{U: u, V: v}] {
			edges = append(edges, graph.Edge{U: u, V: v})
		}
	})
	for e := range flip {
		if !g.HasEdge(e.U, e.V) {
			edges = append(edges, e)
		}
	}
	slices.SortFunc(edges, func(a, b graph.Edge) int {
		if a.U != b.U {
			return int(a.U - b.U)
		}
		return int(a.V - b.V)
	})
	if len(edges) == 0 {
		// FromEdges refuses an empty edge list: g without any edge is the
		// valid graph of n isolated nodes, with g's labels.
		return g.Without(func(int32, int32) bool { return true }), nil
	}
	out, _, err := graph.FromEdges(n, edges, g.Labels())
	return out, err
}

// Neighbours calls fn with every graph that is u-neighbouring to g under
// the marks s, one per node w != u and non-empty subset of prot(w) \ {u}
// (at most maxSubsets subsets per w, the first ones in binary order, when
// maxSubsets > 0). It stops at the first error fn returns.
func (s *Set) Neighbours(g *graph.Graph, u int32, maxSubsets int, fn func(w int32, xs []int32, g2 *graph.Graph) error) error {
	n := g.N()
	for w := int32(0); int(w) < n; w++ {
		if w == u {
			continue
		}
		var tog []int32
		for _, x := range s.Of(w) {
			if x != u {
				tog = append(tog, x)
			}
		}
		if len(tog) > 20 {
			tog = tog[:20]
		}
		count := 0
		for mask := 1; mask < 1<<len(tog); mask++ {
			if maxSubsets > 0 && count >= maxSubsets {
				break
			}
			count++
			var xs []int32
			for i, x := range tog {
				if mask&(1<<i) != 0 {
					xs = append(xs, x)
				}
			}
			g2, err := Toggle(g, w, xs)
			if err != nil {
				return err
			}
			if err := fn(w, xs, g2); err != nil {
				return err
			}
		}
	}
	return nil
}
