package line

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/embed/embedtest"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/linkclf"
	"github.com/dplp/dplp/linkclf/lptest"
	"github.com/dplp/dplp/randx"
)

// refLoss is LINE's per-sample loss in float64.
func refLoss(src, tgt []float64, d int, u int32, targets []int32) float64 {
	xu := src[int(u)*d : int(u)*d+d]
	var l float64
	for k, t := range targets {
		var x float64
		for c := range xu {
			x += xu[c] * tgt[int(t)*d+c]
		}
		if k == 0 {
			l -= math.Log(1 / (1 + math.Exp(-x)))
		} else {
			l -= math.Log(1 / (1 + math.Exp(x)))
		}
	}
	return l
}

// TestStepGradient checks that one SGD step moves every parameter by exactly
// -rho times the finite-difference gradient of the per-sample loss, for the
// first-order case (one shared table) and the second-order case (vertex and
// context tables).
func TestStepGradient(t *testing.T) {
	const n, d = 7, 4
	r := randx.Seeded(1)
	rnd := func() []float64 {
		s := make([]float64, n*d)
		for i := range s {
			s[i] = r.NormFloat64()
		}
		return s
	}
	u := int32(2)
	targets := []int32{5, 0, 6, 3} // positive first, distinct, none equal to u
	const rho, h = 0.1, 1e-6
	check := func(name string, params []float64, loss func() float64, after []float64) {
		for i := range params {
			old := params[i]
			params[i] = old + h
			lp := loss()
			params[i] = old - h
			lm := loss()
			params[i] = old
			fd := (lp - lm) / (2 * h)
			step := after[i] - old
			if math.Abs(step-(-rho*fd)) > 1e-7 {
				t.Errorf("%s[%d]: step %v, want -rho*grad = %v", name, i, step, -rho*fd)
			}
		}
	}
	t.Run("first", func(t *testing.T) {
		tab := rnd()
		after := slices.Clone(tab)
		step(after, after, d, u, targets, rho, make([]float64, d))
		check("x", tab, func() float64 { return refLoss(tab, tab, d, u, targets) }, after)
	})
	t.Run("second", func(t *testing.T) {
		vert, ctx := rnd(), rnd()
		va, ca := slices.Clone(vert), slices.Clone(ctx)
		step(va, ca, d, u, targets, rho, make([]float64, d))
		loss := func() float64 { return refLoss(vert, ctx, d, u, targets) }
		check("x", vert, loss, va)
		check("c", ctx, loss, ca)
	})
}

func chiSquare(counts []int, probs []float64, total int) float64 {
	var c2 float64
	for i, c := range counts {
		e := probs[i] * float64(total)
		c2 += (float64(c) - e) * (float64(c) - e) / e
	}
	return c2
}

// chiBound is a far-tail bound (about 5 standard deviations) for a
// chi-square statistic with df degrees of freedom.
func chiBound(df int) float64 { return float64(df) + 5*math.Sqrt(2*float64(df)) }

// TestSamplingFrequencies checks that arcs are drawn proportionally to their
// weights and negatives proportionally to weighted degree^0.75.
func TestSamplingFrequencies(t *testing.T) {
	g, _, err := graph.FromEdges(6, []graph.Edge{{U: 0, V: 1}, {U: 0, V: 2}, {U: 0, V: 3}, {U: 1, V: 2}, {U: 3, V: 4}, {U: 4, V: 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, weighted := range []bool{false, true} {
		var w []float64
		aw := make([]float64, len(g.Adj))
		for i := range aw {
			aw[i] = 1
			if weighted {
				aw[i] = float64(1 + i%4)
			}
		}
		if weighted {
			w = aw
		}
		s := newSampler(g, w)
		r := randx.Seeded(2)
		const draws = 200_000
		arcCount := make([]int, len(g.Adj))
		nodeCount := make([]int, g.N())
		for i := 0; i < draws; i++ {
			arcCount[s.arcs.Sample(r)]++
			nodeCount[s.noise.Sample(r)]++
		}
		var sw float64
		for _, v := range aw {
			sw += v
		}
		arcP := make([]float64, len(aw))
		for i, v := range aw {
			arcP[i] = v / sw
		}
		if c2 := chiSquare(arcCount, arcP, draws); c2 > chiBound(len(aw)-1) {
			t.Errorf("weighted=%v arcs: chi-square %.1f", weighted, c2)
		}
		nodeP := make([]float64, g.N())
		var sn float64
		for u := 0; u < g.N(); u++ {
			var deg float64
			for a := g.Off[u]; a < g.Off[u+1]; a++ {
				deg += aw[a]
			}
			nodeP[u] = math.Pow(deg, 0.75)
			sn += nodeP[u]
		}
		for u := range nodeP {
			nodeP[u] /= sn
		}
		if c2 := chiSquare(nodeCount, nodeP, draws); c2 > chiBound(g.N()-1) {
			t.Errorf("weighted=%v noise: chi-square %.1f", weighted, c2)
		}
		// The source of each arc must be the CSR row it lives in.
		for u := 0; u < g.N(); u++ {
			for a := g.Off[u]; a < g.Off[u+1]; a++ {
				if s.src[a] != int32(u) {
					t.Fatalf("arc %d: source %d, want %d", a, s.src[a], u)
				}
			}
		}
	}
}

func smallGraph(t testing.TB) *graph.Graph {
	t.Helper()
	g, _, err := lptest.PlantedPartition(120, 4, 0.2, 0.01, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDeterministicSingleWorker(t *testing.T) {
	g := smallGraph(t)
	cfg := Defaults()
	cfg.Workers = 1
	cfg.Samples = 10_000
	for _, o := range []Order{Both, First, Second} {
		cfg.Order = o
		a, err := Train(context.Background(), g, cfg, randx.Seeded(5), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Train(context.Background(), g, cfg, randx.Seeded(5), nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Train(context.Background(), g, cfg, randx.Seeded(6), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Vec, b.Vec) {
			t.Errorf("%v: same seed, different embeddings", o)
		}
		if slices.Equal(a.Vec, c.Vec) {
			t.Errorf("%v: different seeds, same embedding", o)
		}
		if a.N != g.N() || a.Dim != 80 {
			t.Errorf("%v: shape %d×%d", o, a.N, a.Dim)
		}
	}
}

// TestOutputNormalised checks the concatenation of two unit-norm halves.
func TestOutputNormalised(t *testing.T) {
	g := smallGraph(t)
	cfg := Defaults()
	cfg.Workers = 1
	cfg.Samples = 20_000
	cfg.Dim = 16
	e, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for u := int32(0); u < int32(e.N); u++ {
		row := e.Row(u)
		for h := 0; h < 2; h++ {
			var ss float64
			for _, v := range row[h*8 : h*8+8] {
				ss += float64(v) * float64(v)
			}
			if math.Abs(ss-1) > 1e-5 {
				t.Fatalf("node %d half %d: squared norm %v", u, h, ss)
			}
		}
	}
}

func TestProgress(t *testing.T) {
	g := smallGraph(t)
	cfg := Defaults()
	cfg.Workers = 1
	cfg.Samples = 35_000
	var last, calls int
	_, err := Train(context.Background(), g, cfg, randx.Seeded(1), func(done, total int) {
		if total != 35_000 || done < last || done > total {
			t.Errorf("progress(%d, %d) after %d", done, total, last)
		}
		last = done
		calls++
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != 35_000 || calls < 2 {
		t.Errorf("progress ended at %d after %d calls", last, calls)
	}
}

func TestConfigErrors(t *testing.T) {
	g := smallGraph(t)
	empty := g.Without(func(u, v int32) bool { return true })
	mod := func(f func(*Config)) Config { c := Defaults(); f(&c); return c }
	tests := []struct {
		name string
		g    *graph.Graph
		cfg  Config
		rng  *rand.Rand
	}{
		{"nil graph", nil, Defaults(), randx.Seeded(1)},
		{"no edges", empty, Defaults(), randx.Seeded(1)},
		{"nil rng", g, Defaults(), nil},
		{"zero dim", g, mod(func(c *Config) { c.Dim = 0 }), randx.Seeded(1)},
		{"odd dim", g, mod(func(c *Config) { c.Dim = 7 }), randx.Seeded(1)},
		{"bad order", g, mod(func(c *Config) { c.Order = 5 }), randx.Seeded(1)},
		{"negative negatives", g, mod(func(c *Config) { c.Negatives = -1 }), randx.Seeded(1)},
		{"nan rho", g, mod(func(c *Config) { c.Rho0 = math.NaN() }), randx.Seeded(1)},
		{"negative samples", g, mod(func(c *Config) { c.Samples = -1 }), randx.Seeded(1)},
		{"negative workers", g, mod(func(c *Config) { c.Workers = -1 }), randx.Seeded(1)},
		{"zero budget", g, mod(func(c *Config) { c.SamplesPerArc, c.MinSamples = 0, 0 }), randx.Seeded(1)},
	}
	for _, tc := range tests {
		if _, err := Train(context.Background(), tc.g, tc.cfg, tc.rng, nil); err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
	// Odd dimensions are fine for a single order.
	if _, err := Train(context.Background(), g, mod(func(c *Config) { c.Dim, c.Order, c.Samples = 7, First, 1000 }), randx.Seeded(1), nil); err != nil {
		t.Errorf("odd dim, first order: %v", err)
	}
}

// evalAUC is the SEAL-style protocol with this package's trainer.
func evalAUC(t testing.TB, g *graph.Graph, cfg Config, seed uint64, feat linkclf.Feature) float64 {
	t.Helper()
	return embedtest.EmbedAUC(t, g, seed, feat, func(g *graph.Graph, rng *rand.Rand) (*embed.Embedding, error) {
		return Train(context.Background(), g, cfg, rng, nil)
	})
}

// TestQualityPlantedPartition: on a graph with strong communities LINE must
// separate held-out edges from non-edges far better than chance. The
// achievable AUC is below 1 because 1/8 of the random non-edges fall inside a
// community.
func TestQualityPlantedPartition(t *testing.T) {
	g, _, err := lptest.PlantedPartition(400, 8, 0.25, 0.004, randx.Seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	workers := []int{1, 2}
	if raceEnabled {
		workers = []int{1} // Hogwild races by design
	}
	for _, w := range workers {
		cfg := Defaults()
		cfg.Workers = w
		cfg.Hogwild = w > 1
		cfg.Samples = 400_000
		if raceEnabled {
			cfg.Samples = 150_000
		}
		auc := evalAUC(t, g, cfg, 10, linkclf.AbsDiff)
		t.Logf("planted partition, %d workers: AUC %.3f", w, auc)
		if auc < 0.8 {
			t.Errorf("%d workers: AUC %.3f, want >= 0.8", w, auc)
		}
	}
}

// TestYeastAUC reports SEAL-style ROC-AUC on the Yeast PPI graph (bar 0.80).
func TestYeastAUC(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("dataset test skipped in -short mode and under the race detector")
	}
	path := lptest.Dataset("yeast.txt")
	if path == "" {
		t.Skip("yeast.txt not found (set DPLP_DATASETS or provide ../shared/datasets)")
	}
	g, err := lptest.ReadEdgeList(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	start := time.Now()
	auc := evalAUC(t, g, cfg, 1, linkclf.AbsDiff)
	t.Logf("yeast LINE(%v) dim %d, %d samples, |z_u-z_v| features: AUC %.4f (%v)", cfg.Order, cfg.Dim, cfg.TotalSamples(g.M()), auc, time.Since(start))
	if auc < 0.80 {
		t.Errorf("yeast AUC %.4f, want >= 0.80", auc)
	}
}

func benchTrain(b *testing.B, name string) {
	path := lptest.Dataset(name)
	if path == "" {
		b.Skipf("%s not found", name)
	}
	g, err := lptest.ReadEdgeList(path)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Defaults()
	for b.Loop() {
		if _, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrainYeast(b *testing.B)    { benchTrain(b, "yeast.txt") }
func BenchmarkTrainFacebook(b *testing.B) { benchTrain(b, "facebook.txt") }

func TestStopsWhenCancelled(t *testing.T) {
	g := smallGraph(t)
	cfg := Defaults()
	cfg.Workers = 1
	cfg.Samples = 3 * rhoEvery
	embedtest.StopsWhenCancelled(t, func(ctx context.Context, progress func(done, total int)) (*embed.Embedding, error) {
		return Train(ctx, g, cfg, randx.Seeded(1), progress)
	})
}
