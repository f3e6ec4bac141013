package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
)

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

func smallSkipGram() SkipGramConfig {
	c := DefaultSkipGram()
	c.Dim = 16
	c.Window = 5
	c.Workers = 1
	// Every node of a 100-node graph is "frequent" at threshold 1e-3, so
	// downsampling would leave one epoch under-trained.
	c.Subsample = 0
	return c
}

type method struct {
	name string
	run  func(ctx context.Context, g *graph.Graph, seed uint64, progress func(int, int)) (*Embedding, error)
}

func methods() []method {
	wc := WalkConfig{WalksPerNode: 10, WalkLength: 20}
	return []method{
		{"DeepWalk", func(ctx context.Context, g *graph.Graph, seed uint64, pr func(int, int)) (*Embedding, error) {
			return DeepWalk(ctx, g, DeepWalkConfig{Walk: wc, SkipGram: smallSkipGram()}, randx.Seeded(seed), pr)
		}},
		{"Node2Vec", func(ctx context.Context, g *graph.Graph, seed uint64, pr func(int, int)) (*Embedding, error) {
			return Node2Vec(ctx, g, Node2VecConfig{P: 0.5, Q: 2, Walk: wc, SkipGram: smallSkipGram()}, randx.Seeded(seed), pr)
		}},
		{"Node2VecUniform", func(ctx context.Context, g *graph.Graph, seed uint64, pr func(int, int)) (*Embedding, error) {
			return Node2Vec(ctx, g, Node2VecConfig{P: 1, Q: 1, Walk: wc, SkipGram: smallSkipGram()}, randx.Seeded(seed), pr)
		}},
		{"Struc2Vec", func(ctx context.Context, g *graph.Graph, seed uint64, pr func(int, int)) (*Embedding, error) {
			c := DefaultStruc2Vec()
			c.SkipGram = smallSkipGram()
			return Struc2Vec(ctx, g, c, randx.Seeded(seed), pr)
		}},
	}
}

func TestDeterministicForSeed(t *testing.T) {
	g := plantedPartition(t, 80, 0.2, 0.02, 1)
	for _, m := range methods() {
		t.Run(m.name, func(t *testing.T) {
			a, err := m.run(context.Background(), g, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := m.run(context.Background(), g, 3, nil)
			c, _ := m.run(context.Background(), g, 4, nil)
			if a.N != g.N() || a.Dim != 16 || len(a.Vec) != a.N*a.Dim {
				t.Fatalf("shape N=%d Dim=%d len=%d", a.N, a.Dim, len(a.Vec))
			}
			if !slices.Equal(a.Vec, b.Vec) {
				t.Error("same seed, different embeddings")
			}
			if slices.Equal(a.Vec, c.Vec) {
				t.Error("different seeds, same embeddings")
			}
			for _, x := range a.Vec {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatal("non-finite embedding entry")
				}
			}
		})
	}
}

func TestCommunitiesSeparate(t *testing.T) {
	g := plantedPartition(t, 100, 0.25, 0.01, 2)
	for _, m := range methods() {
		if m.name == "Struc2Vec" { // structural, not proximity-based
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			e, err := m.run(context.Background(), g, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			var same, cross float64
			var ns, nc int
			for u := range int32(g.N()) {
				for v := u + 1; v < int32(g.N()); v++ {
					c := cosine(e.Row(u), e.Row(v))
					if (u < 50) == (v < 50) {
						same += c
						ns++
					} else {
						cross += c
						nc++
					}
				}
			}
			same /= float64(ns)
			cross /= float64(nc)
			t.Logf("mean cosine: same community %.3f, across %.3f", same, cross)
			if same < cross+0.2 {
				t.Errorf("communities not separated: %.3f vs %.3f", same, cross)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	g := plantedPartition(t, 40, 0.3, 0.05, 3)
	for _, m := range methods() {
		t.Run(m.name, func(t *testing.T) {
			last, total, calls := 0, -1, 0
			_, err := m.run(context.Background(), g, 1, func(done, tot int) {
				calls++
				if total == -1 {
					total = tot
				}
				if tot != total || done <= last || done > tot {
					t.Fatalf("bad progress (%d, %d) after (%d, %d)", done, tot, last, total)
				}
				last = done
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls == 0 || last != total {
				t.Errorf("progress ended at %d of %d after %d calls", last, total, calls)
			}
		})
	}
}

// TestCancelStops cancels each method from its progress callback, at the
// first report and at the first report past half the work (training), and
// before the call: the method returns context.Canceled and no embedding,
// and reports nothing more (one worker, so nothing was in flight).
func TestCancelStops(t *testing.T) {
	g := plantedPartition(t, 40, 0.3, 0.05, 3)
	for _, m := range methods() {
		for _, at := range []float64{0, 0.5} {
			t.Run(fmt.Sprintf("%s/at%v", m.name, at), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cancelled, after := false, 0
				e, err := m.run(ctx, g, 1, func(done, total int) {
					if cancelled {
						after++
					} else if float64(done) > at*float64(total) {
						cancel()
						cancelled = true
					}
				})
				if !errors.Is(err, context.Canceled) || e != nil {
					t.Fatalf("embedding %v, err %v; want context.Canceled", e != nil, err)
				}
				if !cancelled || after != 0 {
					t.Errorf("cancelled %v, %d reports after cancelling", cancelled, after)
				}
			})
		}
		t.Run(m.name+"/before", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			reports := 0
			e, err := m.run(ctx, g, 1, func(int, int) { reports++ })
			if !errors.Is(err, context.Canceled) || e != nil || reports != 0 {
				t.Fatalf("embedding %v, err %v, %d reports; want context.Canceled and nothing run", e != nil, err, reports)
			}
		})
	}
}

func TestGraphWithIsolatedNodes(t *testing.T) {
	g := mustGraph(t, 6, [][2]int32{{0, 1}, {1, 2}, {2, 0}})
	g = g.Without(func(u, v int32) bool { return false })
	for _, m := range methods() {
		e, err := m.run(context.Background(), g, 1, nil)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if e.N != 6 {
			t.Fatalf("%s: N = %d", m.name, e.N)
		}
	}
	// No edges at all (possible after removing held-out edges).
	empty := g.Without(func(u, v int32) bool { return true })
	for _, m := range methods() {
		if _, err := m.run(context.Background(), empty, 1, nil); err != nil {
			t.Fatalf("%s on edgeless graph: %v", m.name, err)
		}
	}
}

func TestMethodErrors(t *testing.T) {
	g := plantedPartition(t, 20, 0.3, 0.05, 3)
	r := randx.Seeded(1)
	dw := DefaultDeepWalk()
	dw.Walk.WalksPerNode = 0
	if _, err := DeepWalk(context.Background(), g, dw, r, nil); err == nil {
		t.Error("DeepWalk: zero walks accepted")
	}
	if _, err := DeepWalk(context.Background(), nil, DefaultDeepWalk(), r, nil); err == nil {
		t.Error("DeepWalk: nil graph accepted")
	}
	nv := DefaultNode2Vec()
	nv.Q = -1
	if _, err := Node2Vec(context.Background(), g, nv, r, nil); err == nil {
		t.Error("Node2Vec: q < 0 accepted")
	}
	nv = DefaultNode2Vec()
	nv.SkipGram.Window = 0
	if _, err := Node2Vec(context.Background(), g, nv, r, nil); err == nil {
		t.Error("Node2Vec: window 0 accepted")
	}
	if _, err := Node2Vec(context.Background(), g, DefaultNode2Vec(), nil, nil); err == nil {
		t.Error("Node2Vec: nil rand accepted")
	}
}

func TestEmbeddingRow(t *testing.T) {
	e := NewEmbedding(3, 2)
	copy(e.Vec, []float32{1, 2, 3, 4, 5, 6})
	if r := e.Row(1); !slices.Equal(r, []float32{3, 4}) || cap(r) != 2 {
		t.Errorf("Row(1) = %v (cap %d)", r, cap(r))
	}
}

func TestNode2VecUniformIsDeepWalk(t *testing.T) {
	g := plantedPartition(t, 50, 0.2, 0.05, 4)
	dw := DefaultDeepWalk()
	dw.SkipGram = smallSkipGram()
	nv := DefaultNode2Vec()
	nv.SkipGram = smallSkipGram()
	a, err := DeepWalk(context.Background(), g, dw, randx.Seeded(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Node2Vec(context.Background(), g, nv, randx.Seeded(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Vec, b.Vec) {
		t.Error("Node2Vec(p=q=1) differs from DeepWalk for the same seed")
	}
}
