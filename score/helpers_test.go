package score

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
)

// randomInstance draws a graph on n nodes with edge probability pe and a
// protection set marking each edge with probability pp and each non-edge
// with probability pn. Edge 0-1 is always present and never protected, so
// toggling protected pairs never empties the graph.
func randomInstance(t testing.TB, rng *rand.Rand, n int, pe, pp, pn float64) (*graph.Graph, *protect.Set, []graph.Edge) {
	t.Helper()
	edges := []graph.Edge{{U: 0, V: 1}}
	var prot []graph.Edge
	for a := int32(0); int(a) < n; a++ {
		for b := a + 1; int(b) < n; b++ {
			if a == 0 && b == 1 {
				continue
			}
			if rng.Float64() < pe {
				edges = append(edges, graph.Edge{U: a, V: b})
				if rng.Float64() < pp {
					prot = append(prot, graph.Edge{U: a, V: b})
				}
			} else if rng.Float64() < pn {
				prot = append(prot, graph.Edge{U: a, V: b})
			}
		}
	}
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(n, prot)
	if err != nil {
		t.Fatal(err)
	}
	return g, p, edges
}

// barabasiAlbert grows a preferential-attachment graph: a clique on m+1
// nodes, then each new node links to m distinct nodes drawn proportionally
// to degree.
func barabasiAlbert(t testing.TB, n, m int, seed uint64) *graph.Graph {
	t.Helper()
	rng := randx.Seeded(seed)
	var edges []graph.Edge
	var ends []int32 // every edge endpoint once: uniform draws are degree-proportional
	for a := 0; a <= m; a++ {
		for b := a + 1; b <= m; b++ {
			edges = append(edges, graph.Edge{U: int32(a), V: int32(b)})
			ends = append(ends, int32(a), int32(b))
		}
	}
	picked := make([]int32, 0, m)
	for v := m + 1; v < n; v++ {
		picked = picked[:0]
		for len(picked) < m {
			x := ends[rng.IntN(len(ends))]
			dup := false
			for _, y := range picked {
				dup = dup || y == x
			}
			if !dup {
				picked = append(picked, x)
			}
		}
		for _, x := range picked {
			edges = append(edges, graph.Edge{U: int32(v), V: x})
			ends = append(ends, int32(v), x)
		}
	}
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// readEdgeList reads a dataset with the project's parser; ok is false if
// path is missing.
func readEdgeList(t testing.TB, path string) (*graph.Graph, bool) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return nil, false
	}
	g, _, err := graph.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return g, true
}

// bruteSensitivity evaluates the §4 table straight from the definitions.
func bruteSensitivity(g *graph.Graph, p *protect.Set, k Kind, u int32) (deltaS, sMax float64) {
	n := int32(g.N())
	du := float64(g.Degree(u))
	b, c, mp := 0, 0, 0
	for _, w := range g.Neighbors(u) {
		for x := int32(0); x < n; x++ {
			if x != u && x != w && p.Has(w, x) {
				b = 1
			}
		}
	}
	for w := int32(0); w < n; w++ {
		if w == u {
			continue
		}
		cw, pw := 0, 0
		for x := int32(0); x < n; x++ {
			if x == w || !p.Has(w, x) {
				continue
			}
			if g.HasEdge(u, x) {
				cw++
			}
			if x != u {
				pw++
			}
		}
		c, mp = max(c, cw), max(mp, pw)
	}
	switch k {
	case CN:
		return float64(max(b, c)), du
	case AA:
		return float64(b+c) / math.Ln2, du / math.Ln2
	case RA:
		return float64(b+c) / 2, du / 2
	case JC:
		return 1, 1
	default:
		return du * float64(max(1, mp)), du * float64(n-1)
	}
}

// sensitivityByNeighbours is DeltaS of the §4 table for AA, RA and CN
// from the same definitions as bruteSensitivity, in time linear in the
// protected partners of u's neighbours instead of quadratic in N: b(u) is
// 1 when a neighbour x of u has a protected partner other than u, and c(u)
// the largest number of neighbours x of u that one node w != u is a
// protected partner of. For queries of large graphs (hubs of tens of
// thousands), where bruteSensitivity's N^2 loop is too slow and the
// scorer's pass over every node is what is being checked.
func sensitivityByNeighbours(g *graph.Graph, p *protect.Set, k Kind, u int32) float64 {
	b, c := 0, 0
	cnt := map[int32]int{}
	for _, x := range g.Neighbors(u) {
		for _, w := range p.Of(x) {
			if w == u {
				continue
			}
			b = 1
			cnt[w]++
			c = max(c, cnt[w])
		}
	}
	switch k {
	case CN:
		return float64(max(b, c))
	case AA:
		return float64(b+c) / math.Ln2
	default: // RA
		return float64(b+c) / 2
	}
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
