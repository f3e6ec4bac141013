package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/graph"
)

// BarabasiAlbert draws a preferential-attachment graph: nodes 0..m form a
// clique, then each node t = m+1, ..., n-1 attaches m edges to distinct
// earlier nodes, each chosen with probability proportional to its current
// degree (rejecting repeats). The result has exactly m(m+1)/2 + m(n-m-1)
// edges and every node has degree >= m.
//
// Degree-proportional choice picks a uniform endpoint of a uniform existing
// edge. The edge list itself serves as the repeated-endpoint list (endpoint
// 2i is edges[i].U, 2i+1 is edges[i].V), so memory is one []graph.Edge of the
// final size plus what graph.FromEdges needs (about 200 MB for n = 10^6, m = 10).
func BarabasiAlbert(n, m int, rng *rand.Rand) (*graph.Graph, error) {
	if err := checkN(n); err != nil {
		return nil, err
	}
	if m < 1 || m >= n {
		return nil, fmt.Errorf("gen: m = %d, need 1 <= m < n = %d", m, n)
	}
	if err := checkRNG(rng); err != nil {
		return nil, err
	}
	total := int64(m)*int64(m+1)/2 + int64(m)*int64(n-m-1)
	if total > MaxEdges {
		return nil, fmt.Errorf("gen: Barabási-Albert graph would have %d edges, more than MaxEdges = %d", total, MaxEdges)
	}
	// The edge list (8 bytes per edge), FromEdges' adjacency (8 per edge)
	// and offsets (16 per node).
	if err := checkMemory("Barabási-Albert graph", n, float64(total), 16*float64(n)+16*float64(total)); err != nil {
		return nil, err
	}
	edges := make([]graph.Edge, 0, total)
	for u := 0; u <= m; u++ {
		for v := u + 1; v <= m; v++ {
			edges = append(edges, graph.Edge{U: int32(u), V: int32(v)})
		}
	}
	picks := make([]int32, m)
	for t := m + 1; t < n; t++ {
		ends := uint64(2 * len(edges)) // endpoints before t's own edges
		for k := 0; k < m; {
			x := rng.Uint64N(ends)
			e := edges[x>>1]
			v := e.U
			if x&1 == 1 {
				v = e.V
			}
			if slices.Contains(picks[:k], v) { // m is small: a linear scan beats a map
				continue
			}
			picks[k] = v
			k++
		}
		for _, v := range picks {
			edges = append(edges, graph.Edge{U: v, V: int32(t)})
		}
	}
	return build(n, edges, fmt.Sprintf("Barabási-Albert n=%d m=%d", n, m))
}
