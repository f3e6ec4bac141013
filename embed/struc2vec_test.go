package embed

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
)

// dtwBrute minimises the cost over every monotone warping path explicitly.
func dtwBrute(a, b []degRun) float64 {
	var rec func(i, j int) float64
	rec = func(i, j int) float64 {
		c := degCost(a[i], b[j])
		if i == 0 && j == 0 {
			return c
		}
		best := math.Inf(1)
		if i > 0 {
			best = min(best, rec(i-1, j))
		}
		if j > 0 {
			best = min(best, rec(i, j-1))
		}
		if i > 0 && j > 0 {
			best = min(best, rec(i-1, j-1))
		}
		return c + best
	}
	return rec(len(a)-1, len(b)-1)
}

func randRuns(r *rand.Rand, maxLen int) []degRun {
	s := make([]degRun, 1+r.IntN(maxLen))
	for i := range s {
		s[i] = degRun{float64(r.IntN(6)), float64(1 + r.IntN(4))}
	}
	return s
}

func TestDTWMatchesBruteForce(t *testing.T) {
	r := randx.Seeded(9)
	row := make([]float64, 2)
	for range 2000 {
		a, b := randRuns(r, 6), randRuns(r, 6)
		if len(row) < len(b) {
			row = make([]float64, len(b))
		}
		got, want := dtw(a, b, row), dtwBrute(a, b)
		if math.Abs(got-want) > 1e-9*(1+want) {
			t.Fatalf("dtw(%v, %v) = %g, brute force %g", a, b, got, want)
		}
		if back := dtw(b, a, make([]float64, len(a))); math.Abs(back-got) > 1e-9*(1+got) {
			t.Fatalf("dtw not symmetric: %g vs %g", got, back)
		}
	}
}

func TestDegCost(t *testing.T) {
	for _, c := range []struct {
		a, b degRun
		want float64
	}{
		{degRun{3, 1}, degRun{3, 5}, 0},
		{degRun{2, 1}, degRun{6, 1}, 2},
		{degRun{6, 2}, degRun{2, 3}, 6},
		{degRun{0, 1}, degRun{0, 1}, 0},
		{degRun{0, 1}, degRun{4, 2}, 16},
	} {
		if got := degCost(c.a, c.b); got != c.want {
			t.Errorf("degCost(%v,%v) = %g, want %g", c.a, c.b, got, c.want)
		}
	}
}

func randomGraph(t testing.TB, n int, p float64, seed uint64) *graph.Graph {
	r := rand.New(rand.NewPCG(seed, 2))
	var es [][2]int32
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if r.Float64() < p {
				es = append(es, [2]int32{int32(u), int32(v)})
			}
		}
	}
	return mustGraph(t, n, es)
}

// bruteDistances computes f_k(u,v) from all-pairs hop distances.
func bruteDistances(g *graph.Graph, layers int) func(u, v int32) []float64 {
	n := g.N()
	const inf = math.MaxInt32
	d := make([][]int, n)
	for u := range n {
		d[u] = make([]int, n)
		for v := range n {
			d[u][v] = inf
		}
		d[u][u] = 0
		for _, v := range g.Neighbors(int32(u)) {
			d[u][v] = 1
		}
	}
	for k := range n {
		for i := range n {
			for j := range n {
				if d[i][k] != inf && d[k][j] != inf && d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	ring := func(u int32, k int) []degRun {
		cnt := map[int]int{}
		for x := range n {
			if d[u][x] == k {
				cnt[g.Degree(int32(x))]++
			}
		}
		var runs []degRun
		for deg, c := range cnt {
			runs = append(runs, degRun{float64(deg), float64(c)})
		}
		sort.Slice(runs, func(i, j int) bool { return runs[i].deg < runs[j].deg })
		return runs
	}
	return func(u, v int32) []float64 {
		var f []float64
		acc := 0.0
		for k := 0; k < layers; k++ {
			ru, rv := ring(u, k), ring(v, k)
			if len(ru) == 0 || len(rv) == 0 {
				break
			}
			acc += dtwBrute(ru, rv)
			f = append(f, acc)
		}
		return f
	}
}

func mustRings(t *testing.T, g *graph.Graph, layers, workers int) [][][]degRun {
	t.Helper()
	seqs, err := ringSequences(context.Background(), g, layers, workers)
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

func mustDistances(t *testing.T, seqs [][][]degRun, p *pairGraph, layers, workers int) [][]float64 {
	t.Helper()
	dist, err := structuralDistances(context.Background(), seqs, p, layers, workers, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dist
}

func TestStructuralDistancesMatchBruteForce(t *testing.T) {
	for seed := range uint64(6) {
		g := randomGraph(t, 9, 0.25, seed) // sparse: several components and isolated nodes
		for _, layers := range []int{1, 3, 6} {
			p := candidatePairs(g, g.N()-1) // every pair
			seqs := mustRings(t, g, layers, 3)
			dist := mustDistances(t, seqs, p, layers, 3)
			brute := bruteDistances(g, layers)
			for u := range int32(g.N()) {
				if len(p.of(u)) != g.N()-1 {
					t.Fatalf("node %d has %d candidates, want all", u, len(p.of(u)))
				}
				for i := p.off[u]; i < p.off[u+1]; i++ {
					v := p.v[i]
					want := brute(u, v)
					got := dist[i]
					if len(got) != len(want) {
						t.Fatalf("seed %d layers %d (%d,%d): %v, want %v", seed, layers, u, v, got, want)
					}
					for k := range want {
						if math.Abs(got[k]-want[k]) > 1e-9*(1+want[k]) {
							t.Fatalf("seed %d layers %d f_%d(%d,%d) = %g, want %g", seed, layers, k, u, v, got[k], want[k])
						}
					}
				}
			}
		}
	}
}

func TestCandidatePairs(t *testing.T) {
	g := randomGraph(t, 60, 0.08, 3)
	for _, c := range []int{1, 4, 12, 59} {
		p := candidatePairs(g, c)
		for u := range int32(g.N()) {
			cs := p.of(u)
			if !slices.IsSorted(cs) || len(slices.Compact(slices.Clone(cs))) != len(cs) || slices.Contains(cs, u) {
				t.Fatalf("c=%d: bad candidate list of %d: %v", c, u, cs)
			}
			for _, v := range cs {
				if _, ok := slices.BinarySearch(p.of(v), u); !ok {
					t.Fatalf("c=%d: %d->%d not symmetric", c, u, v)
				}
			}
			// u has at least c candidates within the c-th smallest degree gap.
			var gaps []int
			for v := range int32(g.N()) {
				if v != u {
					gaps = append(gaps, abs(g.Degree(u)-g.Degree(v)))
				}
			}
			slices.Sort(gaps)
			within := 0
			for _, v := range cs {
				if abs(g.Degree(u)-g.Degree(v)) <= gaps[c-1] {
					within++
				}
			}
			if within < c {
				t.Fatalf("c=%d: node %d has %d candidates within degree gap %d", c, u, within, gaps[c-1])
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// barbell: two K_m joined through a path of length len(path)+1; node i and
// mirror(i) are structurally equivalent.
func barbell(t testing.TB, m, path int) (*graph.Graph, func(int32) int32) {
	n := 2*m + path
	var es [][2]int32
	for c := range 2 {
		base := c * (m + path)
		for i := range m {
			for j := i + 1; j < m; j++ {
				es = append(es, [2]int32{int32(base + i), int32(base + j)})
			}
		}
	}
	// chain: m-1 (bridge of clique 0), m..m+path-1, m+path (bridge of clique 1)
	for i := m - 1; i < m+path; i++ {
		es = append(es, [2]int32{int32(i), int32(i + 1)})
	}
	return mustGraph(t, n, es), func(u int32) int32 { return int32(n-1) - u }
}

func TestStruc2VecWalksStayOnCandidates(t *testing.T) {
	g, _ := barbell(t, 6, 3)
	p := candidatePairs(g, 4)
	seqs := mustRings(t, g, 4, 2)
	ml := buildLayers(p, mustDistances(t, seqs, p, 4, 2), 4)
	walks, err := runWalks(context.Background(), g.N(), WalkConfig{WalksPerNode: 20, WalkLength: 12}, 2, 5, ml.walker(0.3), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range walks {
		if len(w) != 12 {
			t.Fatalf("walk length %d", len(w))
		}
		for i := 1; i < len(w); i++ {
			if _, ok := slices.BinarySearch(p.of(w[i-1]), w[i]); !ok {
				t.Fatalf("walk step %d -> %d is not a candidate pair", w[i-1], w[i])
			}
		}
	}
}

func TestStruc2VecLayerStep(t *testing.T) {
	// In-layer transitions must be ∝ exp(-f_k); check layer 0 of a star plus
	// path, where f_0(u,v) = max/min degree ratio - 1.
	g := mustGraph(t, 7, [][2]int32{{0, 1}, {0, 2}, {0, 3}, {0, 4}, {4, 5}, {5, 6}})
	p := candidatePairs(g, g.N()-1)
	seqs := mustRings(t, g, 1, 1)
	ml := buildLayers(p, mustDistances(t, seqs, p, 1, 1), 1)
	u := int32(4) // degree 2
	nb := ml.nbr[0][u]
	probs := make([]float64, len(nb))
	var sum float64
	for i, v := range nb {
		a, b := float64(g.Degree(u)), float64(g.Degree(v))
		probs[i] = math.Exp(-(max(a, b)/min(a, b) - 1))
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	counts := make([]int, len(nb))
	r := randx.Seeded(2)
	w := ml.walker(0.3) // one layer: every step is in-layer
	out := make([]int32, 2)
	for range 100000 {
		w(u, r, out)
		i, _ := slices.BinarySearch(nb, out[1])
		counts[i]++
	}
	if pv := chiSquarePValue(t, counts, probs); pv < 1e-4 {
		t.Errorf("chi-square p = %g; counts %v probs %v", pv, counts, probs)
	}
}

func TestStruc2VecMirrorSimilarity(t *testing.T) {
	g, mirror := barbell(t, 8, 5)
	cfg := DefaultStruc2Vec()
	cfg.SkipGram.Dim = 16
	cfg.SkipGram.Workers = 1
	cfg.Walk = WalkConfig{WalksPerNode: 20, WalkLength: 20}
	cfg.Candidates = g.N() - 1
	e, err := Struc2Vec(context.Background(), g, cfg, randx.Seeded(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Path nodes: cosine to their mirror vs to other path nodes.
	var mirrorSim, otherSim float64
	var nm, no int
	for u := int32(8); u < 13; u++ {
		for v := int32(8); v < 13; v++ {
			if u == v {
				continue
			}
			if v == mirror(u) {
				mirrorSim += cosine(e.Row(u), e.Row(v))
				nm++
			} else {
				otherSim += cosine(e.Row(u), e.Row(v))
				no++
			}
		}
	}
	mirrorSim /= float64(nm)
	otherSim /= float64(no)
	t.Logf("path nodes: mirror cosine %.3f, other %.3f", mirrorSim, otherSim)
	if mirrorSim <= otherSim+0.1 {
		t.Errorf("mirror nodes not more similar: %.3f vs %.3f", mirrorSim, otherSim)
	}
}

func TestStruc2VecErrors(t *testing.T) {
	g, _ := barbell(t, 4, 1)
	r := randx.Seeded(1)
	for i, f := range []func(c *Struc2VecConfig){
		func(c *Struc2VecConfig) { c.Layers = 0 },
		func(c *Struc2VecConfig) { c.StayProb = 0 },
		func(c *Struc2VecConfig) { c.StayProb = 1.5 },
		func(c *Struc2VecConfig) { c.StayProb = math.NaN() },
		func(c *Struc2VecConfig) { c.Candidates = -1 },
		func(c *Struc2VecConfig) { c.Walk.WalkLength = 0 },
		func(c *Struc2VecConfig) { c.SkipGram.Dim = 0 },
	} {
		c := DefaultStruc2Vec()
		f(&c)
		if _, err := Struc2Vec(context.Background(), g, c, r, nil); err == nil {
			t.Errorf("bad config %d: no error", i)
		}
	}
}
