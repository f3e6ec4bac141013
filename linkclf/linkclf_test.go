package linkclf

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/linkclf/lptest"
	"github.com/dplp/dplp/randx"
)

func randomEmbedding(n, d int, r *rand.Rand) *embed.Embedding {
	e := embed.NewEmbedding(n, d)
	for i := range e.Vec {
		e.Vec[i] = float32(r.NormFloat64())
	}
	return e
}

func mustGraph(t testing.TB, n int, edges []graph.Edge) *graph.Graph {
	t.Helper()
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGradientFiniteDifferences checks the hand-written gradient of the
// regularised logistic loss against central differences.
func TestGradientFiniteDifferences(t *testing.T) {
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		for _, c := range []float64{1, 0.3} {
			t.Run(feat.String(), func(t *testing.T) {
				r := randx.Seeded(7)
				emb := randomEmbedding(30, 5, r)
				var pos, neg []graph.Edge
				for i := 0; i < 25; i++ {
					pos = append(pos, graph.Edge{U: int32(r.IntN(30)), V: int32(r.IntN(30))})
					neg = append(neg, graph.Edge{U: int32(r.IntN(30)), V: int32(r.IntN(30))})
				}
				p := newProblem(emb, feat, c, pos, neg)
				x := make([]float64, 6)
				for i := range x {
					x[i] = r.NormFloat64()
				}
				grad := make([]float64, 6)
				p.grad(grad, x)
				const h = 1e-6
				for i := range x {
					xp := append([]float64(nil), x...)
					xm := append([]float64(nil), x...)
					xp[i] += h
					xm[i] -= h
					fd := (p.loss(xp) - p.loss(xm)) / (2 * h)
					if math.Abs(fd-grad[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
						t.Errorf("coordinate %d: analytic %v, finite difference %v", i, grad[i], fd)
					}
				}
			})
		}
	}
}

// TestOptimumStationary checks that L-BFGS stops at a stationary point of the
// objective by sklearn's rule (max |gradient| of the per-pair loss <= 1e-4),
// so the fitted model is the regularised MLE, not a partial fit.
func TestOptimumStationary(t *testing.T) {
	r := randx.Seeded(3)
	g, _, err := lptest.PlantedPartition(120, 3, 0.2, 0.02, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 6, r)
	m, err := Train(emb, g, Hadamard, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	// Rebuild the training pairs exactly as Train drew them.
	r2 := randx.Seeded(4)
	pos := g.EdgeList()
	neg, err := SampleNonEdges(g, len(pos), r2)
	if err != nil {
		t.Fatal(err)
	}
	p := newProblem(emb, Hadamard, 1, pos, neg)
	w, b := m.Weights()
	x := append(w, b)
	grad := make([]float64, len(x))
	p.grad(grad, x)
	tol := 1e-4 * float64(len(pos)+len(neg))
	for i, gi := range grad {
		if math.Abs(gi) > tol {
			t.Errorf("gradient coordinate %d = %v at the fitted model", i, gi)
		}
	}
}

// TestSeparable plants a signal: nodes are random unit vectors in R^3 and
// edges join pairs at angle below ~25 degrees, so both features carry the
// link and the classifier must rank held-out edges far above non-edges.
func TestSeparable(t *testing.T) {
	r := randx.Seeded(11)
	const n = 300
	emb := embed.NewEmbedding(n, 3)
	for u := int32(0); u < n; u++ {
		row := emb.Row(u)
		var ss float64
		for i := range row {
			row[i] = float32(r.NormFloat64())
			ss += float64(row[i] * row[i])
		}
		for i := range row {
			row[i] /= float32(math.Sqrt(ss))
		}
	}
	var edges []graph.Edge
	for u := int32(0); u < n; u++ {
		for v := u + 1; v < n; v++ {
			var dot float64
			for i, a := range emb.Row(u) {
				dot += float64(a * emb.Row(v)[i])
			}
			if dot > 0.9 {
				edges = append(edges, graph.Edge{U: u, V: v})
			}
		}
	}
	g := mustGraph(t, n, edges)
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		sp, err := lptest.HoldOut(g, 0.1, randx.Seeded(12))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Train(emb, sp.Train, feat, randx.Seeded(13))
		if err != nil {
			t.Fatal(err)
		}
		if auc := sp.ScoreAUC(m.Prob); auc < 0.95 {
			t.Errorf("%v: AUC %.3f on a planted signal, want >= 0.95", feat, auc)
		}
	}
}

func TestProbRangeAndAllocations(t *testing.T) {
	r := randx.Seeded(5)
	g, _, err := lptest.PlantedPartition(60, 2, 0.3, 0.05, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 8, r)
	for i := 0; i < 8; i++ { // extreme values must still give probabilities
		emb.Vec[i] = 1e6
	}
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		m, err := Train(emb, g, feat, randx.Seeded(6))
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := m.ScoreRange(); lo != 0 || hi != 1 {
			t.Fatalf("ScoreRange = %v, %v", lo, hi)
		}
		for u := int32(0); u < int32(g.N()); u++ {
			for v := int32(0); v < int32(g.N()); v++ {
				p := m.Prob(u, v)
				if !(p >= 0 && p <= 1) {
					t.Fatalf("Prob(%d,%d) = %v", u, v, p)
				}
				if math.Abs(p-1/(1+math.Exp(-m.Logit(u, v)))) > 1e-12 {
					t.Fatalf("Prob and Logit disagree at (%d,%d)", u, v)
				}
			}
		}
		if a := testing.AllocsPerRun(100, func() { m.Prob(1, 2) }); a != 0 {
			t.Errorf("Prob allocates %v times", a)
		}
	}
}

func TestDeterministic(t *testing.T) {
	r := randx.Seeded(8)
	g, _, err := lptest.PlantedPartition(100, 2, 0.2, 0.02, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 5, r)
	m1, err := Train(emb, g, AbsDiff, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Train(emb, g, AbsDiff, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	w1, b1 := m1.Weights()
	w2, b2 := m2.Weights()
	if b1 != b2 {
		t.Fatalf("intercepts differ: %v vs %v", b1, b2)
	}
	for i := range w1 {
		if w1[i] != w2[i] {
			t.Fatalf("weight %d differs: %v vs %v", i, w1[i], w2[i])
		}
	}
}

func TestSampleNonEdges(t *testing.T) {
	r := randx.Seeded(9)
	sparse, _, err := lptest.PlantedPartition(80, 2, 0.1, 0.01, r)
	if err != nil {
		t.Fatal(err)
	}
	// A dense graph: complete graph on 12 nodes minus a few edges.
	var edges []graph.Edge
	for u := int32(0); u < 12; u++ {
		for v := u + 1; v < 12; v++ {
			if (u+v)%7 != 0 {
				edges = append(edges, graph.Edge{U: u, V: v})
			}
		}
	}
	dense := mustGraph(t, 12, edges)
	nonDense := 12*11/2 - int(dense.M())
	tests := []struct {
		name string
		g    *graph.Graph
		k    int
		want int
	}{
		{"sparse", sparse, 200, 200},
		{"dense", dense, 50, nonDense},
		{"dense-few", dense, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SampleNonEdges(tc.g, tc.k, randx.Seeded(10))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("got %d pairs, want %d", len(got), tc.want)
			}
			for _, e := range got {
				if e.U >= e.V || tc.g.HasEdge(e.U, e.V) {
					t.Fatalf("pair %v is not an ordered non-edge", e)
				}
			}
		})
	}
	complete := mustGraph(t, 3, []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 0, V: 2}})
	if _, err := SampleNonEdges(complete, 1, r); err == nil {
		t.Error("complete graph: want an error")
	}
}

func TestErrors(t *testing.T) {
	r := randx.Seeded(1)
	g := mustGraph(t, 4, []graph.Edge{{U: 0, V: 1}, {U: 2, V: 3}})
	good := randomEmbedding(4, 3, r)
	nan := randomEmbedding(4, 3, r)
	nan.Vec[2] = float32(math.NaN())
	tests := []struct {
		name string
		emb  *embed.Embedding
		g    *graph.Graph
		cfg  Config
		rng  *rand.Rand
	}{
		{"nil emb", nil, g, Defaults(), r},
		{"nil graph", good, nil, Defaults(), r},
		{"nil rng", good, g, Defaults(), nil},
		{"size mismatch", randomEmbedding(5, 3, r), g, Defaults(), r},
		{"malformed", &embed.Embedding{N: 4, Dim: 3, Vec: make([]float32, 5)}, g, Defaults(), r},
		{"nan", nan, g, Defaults(), r},
		{"bad C", good, g, Config{C: 0}, r},
		{"bad feature", good, g, Config{C: 1, Feature: 9}, r},
	}
	for _, tc := range tests {
		if _, err := TrainConfig(tc.emb, tc.g, tc.cfg, tc.rng); err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
	if _, err := ParseFeature("l2"); err == nil {
		t.Error("ParseFeature(l2): want an error")
	}
	if f, err := ParseFeature("hadamard"); err != nil || f != Hadamard {
		t.Errorf("ParseFeature(hadamard) = %v, %v", f, err)
	}
}

func TestMaxPositives(t *testing.T) {
	r := randx.Seeded(2)
	g, _, err := lptest.PlantedPartition(100, 2, 0.2, 0.02, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 4, r)
	cfg := Defaults()
	cfg.MaxPositives = 50
	if _, err := TrainConfig(emb, g, cfg, randx.Seeded(3)); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkProb(b *testing.B) {
	r := randx.Seeded(1)
	g, _, _ := lptest.PlantedPartition(200, 2, 0.1, 0.01, r)
	emb := randomEmbedding(g.N(), 80, r)
	m, err := Train(emb, g, AbsDiff, r)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var s float64
	for i := 0; b.Loop(); i++ {
		s += m.Prob(int32(i%200), int32((i*7)%200))
	}
	_ = s
}
