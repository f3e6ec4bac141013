package protocol

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dplp/dplp/graph"
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
	workers := max(1, min(runtime.GOMAXPROCS(0), n))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stamp := make([]int32, n)
			for i := range stamp {
				stamp[i] = -1
			}
			for {
				i := int32(next.Add(1) - 1)
				if int(i) >= n {
					return
				}
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
			}
		}()
	}
	wg.Wait()
	return out
}
