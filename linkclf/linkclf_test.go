package linkclf

import (
	"fmt"
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
// regularised logistic loss against central differences, on raw and on
// standardised features.
func TestGradientFiniteDifferences(t *testing.T) {
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		for _, tc := range []struct {
			c   float64
			std bool
		}{{1, false}, {0.3, false}, {1, true}, {0.3, true}} {
			c := tc.c
			t.Run(fmt.Sprintf("%v/C=%v/std=%v", feat, c, tc.std), func(t *testing.T) {
				r := randx.Seeded(7)
				emb := randomEmbedding(30, 5, r)
				var pos, neg []graph.Edge
				for i := 0; i < 25; i++ {
					pos = append(pos, graph.Edge{U: int32(r.IntN(30)), V: int32(r.IntN(30))})
					neg = append(neg, graph.Edge{U: int32(r.IntN(30)), V: int32(r.IntN(30))})
				}
				p := newProblem(emb, feat, c, pos, neg)
				if tc.std {
					p.standardize()
				}
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
// so the fitted model is the regularised MLE, not a partial fit. With
// standardisation the stored weights are mapped back to the standardised
// coordinates first, which also checks that folding the scaling into the
// weights is exact.
func TestOptimumStationary(t *testing.T) {
	r := randx.Seeded(3)
	g, _, err := lptest.PlantedPartition(120, 3, 0.2, 0.02, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 6, r)
	for i := int32(0); i < int32(g.N()); i++ { // uneven scales and offsets
		row := emb.Row(i)
		row[1] = 5*row[1] + 3
		row[4] *= 0.01
	}
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		for _, std := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/std=%v", feat, std), func(t *testing.T) {
				cfg := Defaults()
				cfg.Feature, cfg.Standardize = feat, std
				m, err := TrainConfig(emb, g, cfg, randx.Seeded(4))
				if err != nil {
					t.Fatal(err)
				}
				// Rebuild the training pairs exactly as TrainConfig drew them.
				r2 := randx.Seeded(4)
				pos := g.EdgeList()
				neg, err := SampleNonEdges(g, len(pos), r2)
				if err != nil {
					t.Fatal(err)
				}
				p := newProblem(emb, feat, 1, pos, neg)
				w, b := m.Weights()
				if std {
					p.standardize()
					for j := range w {
						b += w[j] * p.mean[j]
						if p.inv[j] == 0 {
							t.Fatalf("dimension %d treated as constant", j)
						}
						w[j] /= p.inv[j]
					}
				}
				x := append(w, b)
				grad := make([]float64, len(x))
				p.grad(grad, x)
				tol := 1e-4 * float64(len(pos)+len(neg))
				for i, gi := range grad {
					if math.Abs(gi) > tol {
						t.Errorf("gradient coordinate %d = %v at the fitted model (tolerance %v)", i, gi, tol)
					}
				}
			})
		}
	}
}

// TestStandardizeInvariance rescales (and, for |z_u - z_v|, shifts) one
// embedding dimension. Standardised features are unchanged by that, so the
// predictions must be too; without standardisation the L2 penalty acts on a
// weight of a different scale and, when the dimension shrinks, the
// predictions move (the control that shows the test can fail; growing it
// only weakens an already small penalty, so it has no control).
func TestStandardizeInvariance(t *testing.T) {
	r := randx.Seeded(21)
	g, _, err := lptest.PlantedPartition(150, 3, 0.15, 0.02, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 4, r)
	// Give dimension 0 a real signal so its weight matters: the community.
	for u := int32(0); u < int32(g.N()); u++ {
		emb.Row(u)[0] = float32(int(u)%3) + 0.3*float32(r.NormFloat64())
	}
	for _, tc := range []struct {
		feat        Feature
		scale, bias float32
		control     bool
	}{
		{AbsDiff, 0.02, 7, true}, {AbsDiff, 40, -3, false}, {Hadamard, 0.05, 0, true}, {Hadamard, -30, 0, false},
	} {
		t.Run(fmt.Sprintf("%v/%v", tc.feat, tc.scale), func(t *testing.T) {
			mod := embed.NewEmbedding(emb.N, emb.Dim)
			copy(mod.Vec, emb.Vec)
			for u := int32(0); u < int32(mod.N); u++ {
				mod.Row(u)[0] = tc.scale*mod.Row(u)[0] + tc.bias
			}
			maxDiff := func(std bool) float64 {
				cfg := Defaults()
				cfg.Feature, cfg.Standardize = tc.feat, std
				m1, err := TrainConfig(emb, g, cfg, randx.Seeded(22))
				if err != nil {
					t.Fatal(err)
				}
				m2, err := TrainConfig(mod, g, cfg, randx.Seeded(22))
				if err != nil {
					t.Fatal(err)
				}
				var d float64
				for u := int32(0); u < int32(g.N()); u++ {
					for v := u + 1; v < int32(g.N()); v++ {
						d = max(d, math.Abs(m1.Prob(u, v)-m2.Prob(u, v)))
					}
				}
				return d
			}
			if d := maxDiff(true); d > 1e-4 {
				t.Errorf("standardised: predictions moved by up to %.2g after rescaling a dimension", d)
			}
			if d := maxDiff(false); tc.control && d < 1e-2 {
				t.Errorf("raw features: predictions moved by only %.2g; the control is too weak", d)
			}
		})
	}
}

// TestStandardizeMoments checks that the standardised training features
// have mean 0 and variance 1 in every dimension (brute force over the pairs).
func TestStandardizeMoments(t *testing.T) {
	r := randx.Seeded(41)
	emb := randomEmbedding(40, 5, r)
	for u := int32(0); u < 40; u++ {
		emb.Row(u)[2] = 100*emb.Row(u)[2] - 50
	}
	var pos, neg []graph.Edge
	for i := 0; i < 60; i++ {
		pos = append(pos, graph.Edge{U: int32(r.IntN(40)), V: int32(r.IntN(40))})
		neg = append(neg, graph.Edge{U: int32(r.IntN(40)), V: int32(r.IntN(40))})
	}
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		p := newProblem(emb, feat, 1, pos, neg)
		p.standardize()
		sum, sq := make([]float64, 5), make([]float64, 5)
		f := make([]float64, 5)
		for _, e := range append(append([]graph.Edge(nil), pos...), neg...) {
			p.features(e.U, e.V, f)
			for j := range f {
				z := (f[j] - p.mean[j]) * p.inv[j]
				sum[j] += z
				sq[j] += z * z
			}
		}
		for j := range sum {
			m, v := sum[j]/120, sq[j]/120-(sum[j]/120)*(sum[j]/120)
			if math.Abs(m) > 1e-9 || math.Abs(v-1) > 1e-9 {
				t.Errorf("%v dimension %d: standardised mean %v, variance %v", feat, j, m, v)
			}
		}
	}
}

// TestConstantDimension: a dimension with no variance over the training
// pairs must not produce NaN or huge weights; it gets weight 0.
func TestConstantDimension(t *testing.T) {
	r := randx.Seeded(31)
	g, _, err := lptest.PlantedPartition(80, 2, 0.2, 0.02, r)
	if err != nil {
		t.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 3, r)
	for u := int32(0); u < int32(g.N()); u++ {
		emb.Row(u)[1] = 0.7 // |diff| is 0, the product 0.49, for every pair
	}
	for _, feat := range []Feature{AbsDiff, Hadamard} {
		m, err := Train(emb, g, feat, randx.Seeded(32))
		if err != nil {
			t.Fatal(err)
		}
		w, b := m.Weights()
		if w[1] != 0 || math.IsNaN(b) || math.IsNaN(w[0]) || math.IsNaN(w[2]) {
			t.Errorf("%v: weights %v, intercept %v; want weight 0 on the constant dimension", feat, w, b)
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
	for _, c := range []struct{ max, want int }{{50, 50}, {0, int(g.M())}, {int(g.M()) + 10, int(g.M())}} {
		cfg := Defaults()
		cfg.MaxPositives = c.max
		m, err := TrainConfig(emb, g, cfg, randx.Seeded(3))
		if err != nil {
			t.Fatal(err)
		}
		if pos, neg := m.TrainingPairs(); pos != c.want || neg != c.want {
			t.Errorf("MaxPositives %d: trained on %d positives and %d negatives, want %d of each", c.max, pos, neg, c.want)
		}
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

// BenchmarkTrain fits the classifier on a 2000-node graph with 80-dimensional
// random embeddings, with and without standardisation.
func BenchmarkTrain(b *testing.B) {
	r := randx.Seeded(1)
	g, _, err := lptest.PlantedPartition(2000, 10, 0.02, 0.001, r)
	if err != nil {
		b.Fatal(err)
	}
	emb := randomEmbedding(g.N(), 80, r)
	for _, std := range []bool{false, true} {
		b.Run(fmt.Sprintf("std=%v", std), func(b *testing.B) {
			cfg := Defaults()
			cfg.Standardize = std
			for b.Loop() {
				if _, err := TrainConfig(emb, g, cfg, randx.Seeded(2)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
