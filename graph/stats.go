package graph

import (
	"context"
	"sync/atomic"

	"github.com/dplp/dplp/internal/par"
)

// Stats are the summary numbers printed by `dplp stats`.
type Stats struct {
	Nodes            int     `json:"nodes"`
	Edges            int64   `json:"edges"`
	DuplicatesMerged int64   `json:"duplicates_merged"`
	SelfLoopsDropped int64   `json:"self_loops_dropped"`
	MaxDegree        int     `json:"max_degree"`
	MeanDegree       float64 `json:"mean_degree"`
	Triangles        int64   `json:"triangles"`
	Transitivity     float64 `json:"transitivity"`
}

// Summary computes the statistics of g; bs supplies what construction merged.
func (g *Graph) Summary(bs BuildStats) Stats {
	tri := g.TrianglesPerNode()
	var t3 int64 // sum of per-node counts = 3 x triangles
	for _, t := range tri {
		t3 += t
	}
	var triples float64
	for u := 0; u < g.N(); u++ {
		d := float64(g.Degree(int32(u)))
		triples += d * (d - 1) / 2
	}
	st := Stats{
		Nodes:            g.N(),
		Edges:            g.M(),
		DuplicatesMerged: bs.DuplicatesMerged,
		SelfLoopsDropped: bs.SelfLoopsDropped,
		MaxDegree:        g.MaxDegree(),
		MeanDegree:       2 * float64(g.M()) / float64(g.N()),
		Triangles:        t3 / 3,
	}
	if triples > 0 {
		st.Transitivity = float64(t3) / triples
	}
	return st
}

// TrianglesPerNode returns, for every node, the number of triangles it is in.
// It orients each edge from lower to higher (degree, id) rank so every
// triangle is found once, with cost O(sum over edges of min degree), and runs
// in parallel over nodes.
func (g *Graph) TrianglesPerNode() []int64 {
	n := g.N()
	rank := func(u int32) int64 { return int64(g.Degree(u))<<32 | int64(u) }
	// Forward adjacency: higher-ranked neighbours only, as a CSR.
	foff := make([]int64, n+1)
	for u := 0; u < n; u++ {
		ru := rank(int32(u))
		c := int64(0)
		for _, v := range g.Neighbors(int32(u)) {
			if rank(v) > ru {
				c++
			}
		}
		foff[u+1] = foff[u] + c
	}
	fadj := make([]int32, foff[n])
	for u := 0; u < n; u++ {
		ru := rank(int32(u))
		k := foff[u]
		for _, v := range g.Neighbors(int32(u)) {
			if rank(v) > ru {
				fadj[k] = v
				k++
			}
		}
	}
	counts := make([]int64, n)
	// mark[x] = u+1 when x is a forward neighbour of u: one per worker.
	newMark := func(int) []int32 { return make([]int32, n) }
	par.Run(context.Background(), n, par.Options{Chunk: 256}, newMark, func(mark []int32, u int) error {
		fu := fadj[foff[u]:foff[u+1]]
		for _, x := range fu {
			mark[x] = int32(u) + 1
		}
		for _, v := range fu {
			for _, x := range fadj[foff[v]:foff[v+1]] {
				if mark[x] == int32(u)+1 {
					atomic.AddInt64(&counts[u], 1)
					atomic.AddInt64(&counts[v], 1)
					atomic.AddInt64(&counts[x], 1)
				}
			}
		}
		return nil
	})
	return counts
}
