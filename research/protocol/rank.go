package protocol

import (
	"cmp"
	"context"
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
)

// RankByTriangles returns every node id sorted by decreasing number of
// triangles it belongs to, ties by increasing id (the paper's Section 6 rule,
// used by the clean and deployment protocols).
func RankByTriangles(g *graph.Graph) []int32 {
	return rankBy(g.TrianglesPerNode())
}

// RankByW2 returns every node id sorted by decreasing |W2(i)|, ties by
// increasing id, where W2(i) = ∪_{x ∈ N(i)} N(x) is the set of endpoints of
// walks of exactly two steps (it contains i when deg(i) ≥ 1). This is what the
// authors' code ranks by (reference-implementation §1.2); Python's stable sort
// keeps ties in node-index order, which equals increasing id because
// graph.Parse numbers nodes by first appearance like networkx.
func RankByW2(g *graph.Graph) []int32 {
	return rankBy(w2Sizes(g))
}

func rankBy[T cmp.Ordered](key []T) []int32 {
	order := make([]int32, len(key))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(key[b], key[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// w2Sizes computes |W2(i)| for every node with a per-worker stamp array;
// cost is the sum over nodes x of deg(x)^2.
func w2Sizes(g *graph.Graph) []int64 {
	n := g.N()
	out := make([]int64, n)
	newStamp := func(int) []int32 {
		stamp := make([]int32, n)
		for i := range stamp {
			stamp[i] = -1
		}
		return stamp
	}
	par.Run(context.Background(), n, par.Options{}, newStamp, func(stamp []int32, node int) error {
		i := int32(node)
		var c int64
		for _, x := range g.Neighbors(i) {
			for _, y := range g.Neighbors(x) {
				if stamp[y] != i {
					stamp[y] = i
					c++
				}
			}
		}
		out[i] = c
		return nil
	})
	return out
}
