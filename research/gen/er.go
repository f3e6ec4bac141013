package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/graph"
)

// ErdosRenyi draws G(n, p): every pair is an edge independently with
// probability p. It uses geometric skipping (Batagelj and Brandes 2005), so
// the cost is proportional to the number of edges rather than n^2.
func ErdosRenyi(n int, p float64, rng *rand.Rand) (*graph.Graph, error) {
	if err := checkN(n); err != nil {
		return nil, err
	}
	if !(p > 0 && p <= 1) {
		return nil, fmt.Errorf("gen: p = %g, need 0 < p <= 1", p)
	}
	if err := checkRNG(rng); err != nil {
		return nil, err
	}
	np := pairs(n)
	exp := p * float64(np)
	if exp > float64(MaxEdges) {
		return nil, fmt.Errorf("gen: G(n,p) would have about %.3g edges, more than MaxEdges = %d", exp, MaxEdges)
	}
	if err := checkMemory("G(n,p)", n, exp, 16*float64(n)+16*exp); err != nil {
		return nil, err
	}
	edges := make([]graph.Edge, 0, int(exp+4*math.Sqrt(exp)+16))
	what := fmt.Sprintf("G(n,p) n=%d p=%g", n, p)
	if p == 1 {
		for v := 1; v < n; v++ {
			for u := 0; u < v; u++ {
				edges = append(edges, graph.Edge{U: int32(u), V: int32(v)})
			}
		}
		return build(n, edges, what)
	}
	// Pairs (w, v), w < v, in row-major order; the gap to the next edge is
	// geometric with success probability p.
	lq := math.Log1p(-p)
	n64 := int64(n)
	v, w := int64(1), int64(-1)
	for v < n64 {
		skip := math.Floor(math.Log1p(-rng.Float64()) / lq)
		if skip >= float64(np) { // past the last pair
			break
		}
		w += 1 + int64(skip)
		for w >= v && v < n64 {
			w -= v
			v++
		}
		if v < n64 {
			edges = append(edges, graph.Edge{U: int32(w), V: int32(v)})
		}
	}
	return build(n, edges, what)
}

// ErdosRenyiM draws G(n, m): m distinct pairs chosen uniformly among all
// n(n-1)/2. Pair indices are drawn with replacement, sorted and deduplicated
// until m distinct remain (for m more than half of all pairs, the missing
// pairs are drawn instead); by symmetry the resulting set is uniform.
func ErdosRenyiM(n int, m int64, rng *rand.Rand) (*graph.Graph, error) {
	if err := checkN(n); err != nil {
		return nil, err
	}
	np := pairs(n)
	if m < 1 || m > np {
		return nil, fmt.Errorf("gen: m = %d, need 1 <= m <= n(n-1)/2 = %d", m, np)
	}
	if m > MaxEdges {
		return nil, fmt.Errorf("gen: m = %d is more than MaxEdges = %d", m, MaxEdges)
	}
	// Sampled pair indices (8 bytes each, up to twice as many while
	// deduplicating) on top of the edge list and FromEdges.
	if err := checkMemory("G(n,m)", n, float64(m), 16*float64(n)+16*float64(m)+16*float64(min(m, np-m))); err != nil {
		return nil, err
	}
	if err := checkRNG(rng); err != nil {
		return nil, err
	}
	edges := make([]graph.Edge, 0, m)
	if m <= np/2 {
		for _, i := range sampleDistinct(np, m, rng) {
			edges = append(edges, pairAt(i))
		}
	} else {
		skip := sampleDistinct(np, np-m, rng)
		j := 0
		for i := int64(0); i < np; i++ {
			if j < len(skip) && skip[j] == i {
				j++
				continue
			}
			edges = append(edges, pairAt(i))
		}
	}
	return build(n, edges, fmt.Sprintf("G(n,m) n=%d m=%d", n, m))
}

// sampleDistinct returns k distinct uniform values of [0, N), sorted.
func sampleDistinct(N, k int64, rng *rand.Rand) []int64 {
	out := make([]int64, 0, k)
	for int64(len(out)) < k {
		for range k - int64(len(out)) {
			out = append(out, rng.Int64N(N))
		}
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out
}

// pairAt decodes the row-major index i = v(v-1)/2 + u of the pair u < v.
func pairAt(i int64) graph.Edge {
	v := int64((1 + math.Sqrt(1+8*float64(i))) / 2)
	for v*(v-1)/2 > i {
		v--
	}
	for (v+1)*v/2 <= i {
		v++
	}
	return graph.Edge{U: int32(i - v*(v-1)/2), V: int32(v)}
}
