// Package lptest has helpers for testing link predictors: a tiny edge-list
// reader, a planted-partition generator, a SEAL-style hold-out split and
// ROC-AUC. It is meant for tests and benchmarks only.
package lptest

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ranking"
)

// ReadEdgeList reads an edge list with the project's parser.
func ReadEdgeList(path string) (*graph.Graph, error) {
	g, _, err := graph.ReadFile(path)
	return g, err
}

// Dataset returns the path of a shared dataset file (for example "yeast.txt"),
// or "" when it is absent. It looks in $DPLP_DATASETS, then in
// ../shared/datasets relative to the module root (no absolute machine path).
func Dataset(name string) string {
	var dirs []string
	if d := os.Getenv("DPLP_DATASETS"); d != "" {
		dirs = append(dirs, d)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		// file is <module>/linkclf/lptest/lptest.go
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		dirs = append(dirs, filepath.Join(root, "..", "shared", "datasets"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// PlantedPartition draws a graph of k equal blocks of size n/k with edge
// probability pin inside blocks and pout across. It returns the graph and
// the block of each node.
func PlantedPartition(n, k int, pin, pout float64, rng *rand.Rand) (*graph.Graph, []int, error) {
	if n < 2 || k < 1 || k > n {
		return nil, nil, errors.New("lptest: bad planted-partition size")
	}
	block := make([]int, n)
	for i := range block {
		block[i] = i * k / n
	}
	var edges []graph.Edge
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			p := pout
			if block[u] == block[v] {
				p = pin
			}
			if rng.Float64() < p {
				edges = append(edges, graph.Edge{U: int32(u), V: int32(v)})
			}
		}
	}
	g, _, err := graph.FromEdges(n, edges, nil)
	return g, block, err
}

// Split holds a SEAL-style hold-out split.
type Split struct {
	Train   *graph.Graph // g without the held-out edges (same node ids)
	TestPos []graph.Edge // held-out edges
	TestNeg []graph.Edge // as many non-edges of the full graph
}

// HoldOut removes a uniform fraction frac of g's edges and draws as many
// distinct non-edges of g, all with rng.
func HoldOut(g *graph.Graph, frac float64, rng *rand.Rand) (*Split, error) {
	edges := g.EdgeList()
	k := int(frac * float64(len(edges)))
	if k < 1 {
		return nil, errors.New("lptest: hold-out set would be empty")
	}
	for i := 0; i < k; i++ {
		j := i + rng.IntN(len(edges)-i)
		edges[i], edges[j] = edges[j], edges[i]
	}
	pos := slices.Clone(edges[:k])
	held := make(map[graph.Edge]bool, k)
	for _, e := range pos {
		held[e] = true
	}
	train := g.Without(func(u, v int32) bool { return held[graph.Edge{U: u, V: v}] })
	n := int64(g.N())
	if n*(n-1)/2-g.M() < 2*int64(k) {
		return nil, errors.New("lptest: graph too dense for a negative hold-out set")
	}
	seen := map[graph.Edge]bool{}
	neg := make([]graph.Edge, 0, k)
	for len(neg) < k {
		u, v := int32(rng.Int64N(n)), int32(rng.Int64N(n))
		if u == v || g.HasEdge(u, v) {
			continue
		}
		if u > v {
			u, v = v, u
		}
		e := graph.Edge{U: u, V: v}
		if seen[e] {
			continue
		}
		seen[e] = true
		neg = append(neg, e)
	}
	return &Split{Train: train, TestPos: pos, TestNeg: neg}, nil
}

// AUC is the ROC-AUC of scores (Mann-Whitney, ties counted one half).
func AUC(pos, neg []float64) float64 { return ranking.ROCAUC(pos, neg) }

// ScoreAUC scores the split's test pairs with score and returns the ROC-AUC.
func (s *Split) ScoreAUC(score func(u, v int32) float64) float64 {
	ps := make([]float64, len(s.TestPos))
	ns := make([]float64, len(s.TestNeg))
	for i, e := range s.TestPos {
		ps[i] = score(e.U, e.V)
	}
	for i, e := range s.TestNeg {
		ns[i] = score(e.U, e.V)
	}
	return AUC(ps, ns)
}
