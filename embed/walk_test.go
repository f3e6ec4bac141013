package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplp/dplp/embed/alias"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
	"gonum.org/v1/gonum/stat/distuv"
)

// chiSquarePValue returns the p-value of observed counts against expected
// probabilities (cells with zero probability must have zero counts).
func chiSquarePValue(t *testing.T, counts []int, probs []float64) float64 {
	t.Helper()
	total := 0
	for _, c := range counts {
		total += c
	}
	var stat float64
	df := -1
	for i, p := range probs {
		if p == 0 {
			if counts[i] != 0 {
				t.Fatalf("outcome %d has probability 0 but was drawn %d times", i, counts[i])
			}
			continue
		}
		e := p * float64(total)
		stat += (float64(counts[i]) - e) * (float64(counts[i]) - e) / e
		df++
	}
	if df < 1 {
		return 1
	}
	return 1 - distuv.ChiSquared{K: float64(df)}.CDF(stat)
}

func mustGraph(t testing.TB, n int, edges [][2]int32) *graph.Graph {
	t.Helper()
	es := make([]graph.Edge, len(edges))
	for i, e := range edges {
		es[i] = graph.Edge{U: e[0], V: e[1]}
	}
	g, _, err := graph.FromEdges(n, es, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAliasMatchesWeights(t *testing.T) {
	cases := [][]float64{
		{1},
		{1, 1, 1, 1},
		{0.1, 0.2, 0.3, 0.4},
		{5, 0, 1, 0, 3},
		{1e-6, 1, 1000},
		{3, 3, 1, 0.5, 0.25, 7, 2, 2, 0.01},
	}
	for ci, w := range cases {
		t.Run(fmt.Sprint(ci), func(t *testing.T) {
			a := alias.New(w)
			if a.Len() != len(w) {
				t.Fatalf("Len %d, want %d", a.Len(), len(w))
			}
			var sum float64
			for _, x := range w {
				sum += x
			}
			probs := make([]float64, len(w))
			for i, x := range w {
				probs[i] = x / sum
			}
			r := randx.Seeded(uint64(ci))
			counts := make([]int, len(w))
			for range 200000 {
				counts[a.Sample(r)]++
			}
			if p := chiSquarePValue(t, counts, probs); p < 1e-4 {
				t.Errorf("chi-square p = %g; counts %v, probs %v", p, counts, probs)
			}
		})
	}
}

// testGraph: t=0 with neighbours {1,2,3}; v=1 with neighbours {0,2,3,4,5,6};
// so from (t=0, v=1): x=0 returns, x=2,3 are adjacent to t, x=4,5,6 are not.
func testGraph(t testing.TB) *graph.Graph {
	return mustGraph(t, 8, [][2]int32{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {4, 5}, {6, 7}})
}

func TestNode2VecStepDistribution(t *testing.T) {
	g := testGraph(t)
	for _, pq := range [][2]float64{{1, 1}, {0.25, 1}, {4, 1}, {1, 0.25}, {1, 4}, {0.1, 0.5}, {2, 0.2}, {0.5, 3}} {
		p, q := pq[0], pq[1]
		t.Run(fmt.Sprintf("p=%v,q=%v", p, q), func(t *testing.T) {
			w := newN2VWalker(g, p, q)
			nb := g.Neighbors(1)
			probs := make([]float64, len(nb))
			var sum float64
			for i, x := range nb {
				switch {
				case x == 0:
					probs[i] = 1 / p
				case g.HasEdge(0, x):
					probs[i] = 1
				default:
					probs[i] = 1 / q
				}
				sum += probs[i]
			}
			for i := range probs {
				probs[i] /= sum
			}
			r := randx.Seeded(7)
			counts := make([]int, len(nb))
			for range 200000 {
				x := w.step(0, 1, r)
				i, ok := slices.BinarySearch(nb, x)
				if !ok {
					t.Fatalf("step to non-neighbour %d", x)
				}
				counts[i]++
			}
			if pv := chiSquarePValue(t, counts, probs); pv < 1e-4 {
				t.Errorf("chi-square p = %g; counts %v, probs %v", pv, counts, probs)
			}
		})
	}
}

// TestNode2VecStepDetectsBias makes sure the chi-square check has power:
// a sampler drawing with the wrong q is rejected.
func TestNode2VecStepDetectsBias(t *testing.T) {
	g := testGraph(t)
	w := newN2VWalker(g, 1, 0.8) // samples with q = 0.8 ...
	nb := g.Neighbors(1)
	probs := []float64{1, 1, 1, 1, 1, 1} // ... tested against q = 1
	for i := range probs {
		probs[i] /= 6
	}
	r := randx.Seeded(7)
	counts := make([]int, len(nb))
	for range 200000 {
		x := w.step(0, 1, r)
		i, _ := slices.BinarySearch(nb, x)
		counts[i]++
	}
	if pv := chiSquarePValue(t, counts, probs); pv > 1e-6 {
		t.Errorf("biased sampler not detected: p = %g", pv)
	}
}

func TestUniformWalkSteps(t *testing.T) {
	g := testGraph(t)
	// Empirical distribution of the node after 1 in walks started at 1.
	walks, err := UniformWalks(context.Background(), g, WalkConfig{WalksPerNode: 20000, WalkLength: 2}, 2, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	nb := g.Neighbors(1)
	counts := make([]int, len(nb))
	for _, w := range walks {
		if w[0] == 1 {
			i, ok := slices.BinarySearch(nb, w[1])
			if !ok {
				t.Fatalf("step 1 -> %d is not an edge", w[1])
			}
			counts[i]++
		}
	}
	probs := make([]float64, len(nb))
	for i := range probs {
		probs[i] = 1 / float64(len(nb))
	}
	if pv := chiSquarePValue(t, counts, probs); pv < 1e-4 {
		t.Errorf("chi-square p = %g; counts %v", pv, counts)
	}
}

func TestWalksValidAndReproducible(t *testing.T) {
	g := plantedPartition(t, 60, 0.2, 0.02, 5)
	cfg := WalkConfig{WalksPerNode: 3, WalkLength: 15}
	for _, pq := range [][2]float64{{1, 1}, {0.5, 2}, {4, 0.25}} {
		var ref [][]int32
		for _, workers := range []int{1, 2, 5} {
			walks, err := Node2VecWalks(context.Background(), g, pq[0], pq[1], cfg, workers, randx.Seeded(11))
			if err != nil {
				t.Fatal(err)
			}
			if len(walks) != g.N()*cfg.WalksPerNode {
				t.Fatalf("%d walks, want %d", len(walks), g.N()*cfg.WalksPerNode)
			}
			starts := make([]int, g.N())
			for _, w := range walks {
				starts[w[0]]++
				if g.Degree(w[0]) > 0 && len(w) != cfg.WalkLength {
					t.Fatalf("walk length %d", len(w))
				}
				for i := 1; i < len(w); i++ {
					if !g.HasEdge(w[i-1], w[i]) {
						t.Fatalf("walk step %d -> %d is not an edge", w[i-1], w[i])
					}
				}
			}
			for u, c := range starts {
				if c != cfg.WalksPerNode {
					t.Fatalf("node %d starts %d walks", u, c)
				}
			}
			if ref == nil {
				ref = walks
			} else if !slices.EqualFunc(ref, walks, slices.Equal) {
				t.Errorf("p,q=%v: walks differ between worker counts", pq)
			}
		}
	}
}

func TestIsolatedNodeWalks(t *testing.T) {
	g := mustGraph(t, 4, [][2]int32{{0, 1}, {1, 2}}) // node 3 isolated
	for _, pq := range [][2]float64{{1, 1}, {2, 0.5}} {
		walks, err := Node2VecWalks(context.Background(), g, pq[0], pq[1], WalkConfig{WalksPerNode: 2, WalkLength: 5}, 0, randx.Seeded(1))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range walks {
			if w[0] == 3 && len(w) != 1 {
				t.Errorf("walk from isolated node: %v", w)
			}
		}
	}
}

func TestWalkErrors(t *testing.T) {
	g := testGraph(t)
	good := WalkConfig{WalksPerNode: 1, WalkLength: 5}
	r := randx.Seeded(1)
	for name, f := range map[string]func() error{
		"nil graph": func() error { _, err := UniformWalks(context.Background(), nil, good, 1, r); return err },
		"zero walks": func() error {
			_, err := UniformWalks(context.Background(), g, WalkConfig{WalksPerNode: 0, WalkLength: 5}, 1, r)
			return err
		},
		"zero length": func() error {
			_, err := Node2VecWalks(context.Background(), g, 1, 1, WalkConfig{WalksPerNode: 1, WalkLength: 0}, 1, r)
			return err
		},
		"p=0":      func() error { _, err := Node2VecWalks(context.Background(), g, 0, 1, good, 1, r); return err },
		"q=NaN":    func() error { _, err := Node2VecWalks(context.Background(), g, 1, math.NaN(), good, 1, r); return err },
		"q=Inf":    func() error { _, err := Node2VecWalks(context.Background(), g, 1, math.Inf(1), good, 1, r); return err },
		"nil rand": func() error { _, err := UniformWalks(context.Background(), g, good, 1, nil); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWalksCancelled(t *testing.T) {
	g := testGraph(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	good := WalkConfig{WalksPerNode: 2, WalkLength: 5}
	if w, err := UniformWalks(ctx, g, good, 2, randx.Seeded(1)); !errors.Is(err, context.Canceled) || w != nil {
		t.Errorf("UniformWalks: %d walks, err %v; want context.Canceled", len(w), err)
	}
	if w, err := Node2VecWalks(ctx, g, 0.5, 2, good, 2, randx.Seeded(1)); !errors.Is(err, context.Canceled) || w != nil {
		t.Errorf("Node2VecWalks: %d walks, err %v; want context.Canceled", len(w), err)
	}
}

// plantedPartition returns two communities of n/2 nodes with edge
// probabilities pin inside and pout across.
func plantedPartition(t testing.TB, n int, pin, pout float64, seed uint64) *graph.Graph {
	r := rand.New(rand.NewPCG(seed, 1))
	var es [][2]int32
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			p := pout
			if (u < n/2) == (v < n/2) {
				p = pin
			}
			if r.Float64() < p {
				es = append(es, [2]int32{int32(u), int32(v)})
			}
		}
	}
	return mustGraph(t, n, es)
}
