package prune

import (
	"context"
	"github.com/dplp/dplp/internal/numeric"
	"math"
	"math/rand/v2"
	"os"
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

func tinyGraph(t testing.TB) *graph.Graph {
	t.Helper()
	g, _, err := graph.FromEdges(6, []graph.Edge{{U: 0, V: 1}, {U: 0, V: 2}, {U: 1, V: 2}, {U: 2, V: 3}, {U: 3, V: 4}, {U: 4, V: 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// refNode evaluates the ranking score and proximity representation of u
// with plain loops over the reference formulation (separate rank and
// proximity weight matrices).
func refNode(m *model, u int32) (pi float64, z []float64) {
	d, h, l := m.d, m.hid, m.lat
	e := m.emb[int(u)*d : int(u)*d+d]
	or := m.bor[0]
	lp := make([]float64, h)
	for j := 0; j < h; j++ {
		ar, ap := m.bh[j], m.bh[h+j]
		for i := 0; i < d; i++ {
			ar += e[i] * m.wh[i*2*h+j]
			ap += e[i] * m.wh[i*2*h+h+j]
		}
		or += elu(ar) * m.wor[j]
		lp[j] = elu(ap)
	}
	pi = math.Log(1 + math.Exp(or))
	z = make([]float64, l)
	for k := 0; k < l; k++ {
		o := m.bop[k]
		for j := 0; j < h; j++ {
			o += lp[j] * m.wop[j*l+k]
		}
		z[k] = math.Max(o, 0)
	}
	return pi, z
}

// refProx is z_t^T relu(W_s) z_h.
func refProx(m *model, zh, zt []float64) float64 {
	l := m.lat
	var s float64
	for i := 0; i < l; i++ {
		for j := 0; j < l; j++ {
			s += zt[i] * math.Max(m.ws[i*l+j], 0) * zh[j]
		}
	}
	return s
}

// refLoss is PRUNE's mean loss over the arcs sel.
func refLoss(m *model, a *arcs, sel []int32) float64 {
	var prox, rank float64
	for _, k := range sel {
		piH, zh := refNode(m, a.head[k])
		piT, zt := refNode(m, a.tail[k])
		s := refProx(m, zh, zt)
		prox += (s - a.pmi[k]) * (s - a.pmi[k])
		delta := -piT/a.inDeg[k] + piH/a.outDeg[k]
		rank += a.inDeg[k] * delta * delta
	}
	n := float64(len(sel))
	return prox/n + m.lambda*rank/n
}

// TestGradient checks the hand-written backward pass against central
// differences of the loop-based reference loss, for every parameter group.
// The batch repeats a node so that gradient accumulation is exercised.
func TestGradient(t *testing.T) {
	g := tinyGraph(t)
	cfg := Config{Dim: 5, Hidden: 4, Latent: 3, Lambda: 0.7, Alpha: 1, LR: 1e-3, Epochs: 1, Batch: 8}
	a := newArcs(g, cfg.Alpha)
	r := randx.Seeded(1)
	m := newModel(g.N(), cfg, r)
	// Scale up so that the ReLUs and ELUs sit in both regimes, and make some
	// entries of W_s negative (zero gradient through its ReLU).
	for _, p := range m.params() {
		for i := range p {
			p[i] = r.NormFloat64()
		}
	}
	sel := []int32{0, 3, 5, 7, 2, 9, 11, 1}
	b := newBatch(cfg, len(sel))
	b.load(a, sel)
	m.zeroGrad()
	m.forwardBackward(b)
	if ref := refLoss(m, a, sel); math.Abs(ref-b.loss) > 1e-10*math.Max(1, ref) {
		t.Fatalf("loss %v, reference %v", b.loss, ref)
	}
	names := []string{"emb", "Wh", "bh", "wor", "bor", "Wop", "bop", "Ws"}
	const h = 1e-6
	for pi, p := range m.params() {
		grad := slices.Clone(m.grads()[pi])
		for i := range p {
			old := p[i]
			p[i] = old + h
			lp := refLoss(m, a, sel)
			p[i] = old - h
			lm := refLoss(m, a, sel)
			p[i] = old
			fd := (lp - lm) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
				t.Errorf("%s[%d]: analytic %v, finite difference %v", names[pi], i, grad[i], fd)
			}
		}
	}
}

// TestPMI checks the shifted PMI targets and degrees of the arc list against
// the reference formula.
func TestPMI(t *testing.T) {
	g := tinyGraph(t)
	a := newArcs(g, 5)
	if len(a.head) != 2*int(g.M()) {
		t.Fatalf("%d arcs, want %d", len(a.head), 2*g.M())
	}
	seen := map[[2]int32]bool{}
	for k := range a.head {
		u, v := a.head[k], a.tail[k]
		if !g.HasEdge(u, v) || seen[[2]int32{u, v}] {
			t.Fatalf("arc %d = (%d,%d) not a fresh edge direction", k, u, v)
		}
		seen[[2]int32{u, v}] = true
		du, dv := float64(g.Degree(u)), float64(g.Degree(v))
		want := math.Max(0, math.Log(12/5.0/du/dv))
		if a.outDeg[k] != du || a.inDeg[k] != dv || math.Abs(a.pmi[k]-want) > 1e-15 {
			t.Errorf("arc (%d,%d): deg %v,%v pmi %v, want %v,%v,%v", u, v, a.outDeg[k], a.inDeg[k], a.pmi[k], du, dv, want)
		}
	}
}

func TestAdamFirstStep(t *testing.T) {
	// TF-style Adam's first step is -lr * g/(|g| + eps') for every coordinate.
	p := [][]float64{{1, -2}}
	a := numeric.NewAdam(p, 0.1, nil, true)
	a.Step(p, [][]float64{{3, -0.5}})
	if math.Abs(p[0][0]-0.9) > 1e-6 || math.Abs(p[0][1]+1.9) > 1e-6 {
		t.Errorf("after one step %v, want [0.9 -1.9]", p[0])
	}
}

func TestLossDecreases(t *testing.T) {
	g, _, err := lptest.PlantedPartition(80, 2, 0.2, 0.02, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.LR = 1e-3
	cfg.Hidden, cfg.Latent = 32, 16
	r := randx.Seeded(3)
	a := newArcs(g, cfg.Alpha)
	m := newModel(g.N(), cfg, r)
	opt := numeric.NewAdam(m.params(), cfg.LR, nil, true)
	all := make([]int32, len(a.head))
	for i := range all {
		all[i] = int32(i)
	}
	b := newBatch(cfg, len(all))
	b.load(a, all)
	var first float64
	for it := 0; it < 100; it++ {
		m.zeroGrad()
		m.forwardBackward(b)
		if it == 0 {
			first = b.loss
		}
		opt.Step(m.params(), m.grads())
	}
	m.zeroGrad()
	m.forwardBackward(b)
	if !(b.loss < 0.5*first) {
		t.Errorf("full-batch loss %v after 100 steps, started at %v", b.loss, first)
	}
}

func TestDeterministic(t *testing.T) {
	g, _, err := lptest.PlantedPartition(100, 2, 0.1, 0.01, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Epochs = 3
	cfg.Batch = 64
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
		t.Error("same seed, different embeddings")
	}
	if slices.Equal(a.Vec, c.Vec) {
		t.Error("different seeds, same embedding")
	}
	if a.N != g.N() || a.Dim != cfg.Dim {
		t.Errorf("shape %d×%d", a.N, a.Dim)
	}
}

func TestSmallGraphPartialBatch(t *testing.T) {
	// Fewer arcs than one batch: training must still happen.
	g := tinyGraph(t)
	cfg := Defaults()
	cfg.Epochs = 2
	start := newModel(g.N(), cfg, randx.Seeded(1)).emb
	e, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for i, v := range e.Vec {
		if v != float32(start[i]) {
			changed = true
		}
	}
	if !changed {
		t.Error("embedding did not move")
	}
}

func TestConfigErrors(t *testing.T) {
	g := tinyGraph(t)
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
		{"zero hidden", g, mod(func(c *Config) { c.Hidden = 0 }), randx.Seeded(1)},
		{"zero latent", g, mod(func(c *Config) { c.Latent = 0 }), randx.Seeded(1)},
		{"negative lambda", g, mod(func(c *Config) { c.Lambda = -1 }), randx.Seeded(1)},
		{"zero alpha", g, mod(func(c *Config) { c.Alpha = 0 }), randx.Seeded(1)},
		{"nan lr", g, mod(func(c *Config) { c.LR = math.NaN() }), randx.Seeded(1)},
		{"negative epochs", g, mod(func(c *Config) { c.Epochs = -1 }), randx.Seeded(1)},
		{"zero batch", g, mod(func(c *Config) { c.Batch = 0 }), randx.Seeded(1)},
	}
	for _, tc := range tests {
		if _, err := Train(context.Background(), tc.g, tc.cfg, tc.rng, nil); err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
}

func evalAUC(t testing.TB, g *graph.Graph, cfg Config, seed uint64, feat linkclf.Feature) float64 {
	t.Helper()
	return embedtest.EmbedAUC(t, g, seed, feat, func(g *graph.Graph, rng *rand.Rand) (*embed.Embedding, error) {
		return Train(context.Background(), g, cfg, rng, nil)
	})
}

// chungLu draws a graph with P(u~v) = min(1, w_u w_v / sum w) for
// power-law weights, so links are predictable from degrees alone.
func chungLu(n int, rng *rand.Rand) (*graph.Graph, error) {
	w := make([]float64, n)
	var sum float64
	for i := range w {
		w[i] = 60 * math.Pow(float64(i+1), -0.6)
		sum += w[i]
	}
	var edges []graph.Edge
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if rng.Float64() < math.Min(1, w[u]*w[v]/sum) {
				edges = append(edges, graph.Edge{U: int32(u), V: int32(v)})
			}
		}
	}
	g, _, err := graph.FromEdges(n, edges, nil)
	return g, err
}

func pearson(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestObjectiveFit checks that training achieves what PRUNE's objective asks:
// the proximity score z_v^T relu(W) z_u tracks the PMI target on the arcs,
// and the ranking score pi grows with degree (the optimum of the ranking term
// on an undirected graph is pi proportional to degree).
func TestObjectiveFit(t *testing.T) {
	g, err := chungLu(400, randx.Seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.LR = 1e-3
	cfg.Epochs = 30
	cfg.Hidden, cfg.Latent = 32, 16 // fast enough for the race detector
	cfg.Lambda = 1                  // weigh the ranking term up so that both terms are fitted
	m, a, err := fit(context.Background(), g, cfg, randx.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pis, degs, prox, pmi []float64
	zs := make([][]float64, g.N())
	for u := int32(0); u < int32(g.N()); u++ {
		pi, z := refNode(m, u)
		pis = append(pis, pi)
		zs[u] = z
		degs = append(degs, float64(g.Degree(u)))
	}
	for k := range a.head {
		prox = append(prox, refProx(m, zs[a.head[k]], zs[a.tail[k]]))
		pmi = append(pmi, a.pmi[k])
	}
	cp, cd := pearson(prox, pmi), pearson(pis, degs)
	t.Logf("corr(proximity score, PMI) = %.3f, corr(pi, degree) = %.3f", cp, cd)
	if cp < 0.9 {
		t.Errorf("proximity score does not fit the PMI targets (corr %.3f)", cp)
	}
	if cd < 0.5 {
		t.Errorf("ranking score does not follow degree (corr %.3f)", cd)
	}
}

// TestQualityDegreeDriven is the link-prediction smoke test. PRUNE's
// objective only covers observed edges (PMI regression plus degree-scaled
// ranking), so it learns degree-like structure rather than communities: on a
// planted partition its AUC stays at chance, while on a Chung-Lu graph, where
// degrees predict links (preferential attachment reaches 0.74 here), it must
// beat chance. The paper's learning rate (1e-4) barely moves the embeddings
// in the few hundred steps a small graph offers, so the test uses 1e-2.
func TestQualityDegreeDriven(t *testing.T) {
	if raceEnabled {
		t.Skip("too slow under the race detector; TestObjectiveFit covers training")
	}
	g, err := chungLu(400, randx.Seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.LR = 1e-2
	cfg.Epochs = 30
	auc := evalAUC(t, g, cfg, 10, linkclf.AbsDiff)
	t.Logf("Chung-Lu graph (%d edges) AUC %.3f", g.M(), auc)
	if auc < 0.6 {
		t.Errorf("AUC %.3f, want >= 0.6", auc)
	}
}

// TestYeastAUC reports SEAL-style ROC-AUC on the Yeast PPI graph with the
// paper's settings. It takes about a minute on two cores, so it only runs
// when DPLP_LONG_TESTS is set. Measured: 0.55 (|z_u - z_v|) and 0.60
// (Hadamard); with LR 1e-2 and 20 epochs 0.75 / 0.73.
func TestYeastAUC(t *testing.T) {
	if testing.Short() || raceEnabled || os.Getenv("DPLP_LONG_TESTS") == "" {
		t.Skip("long dataset test: set DPLP_LONG_TESTS=1 (skipped in -short mode and under the race detector)")
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
	t.Logf("yeast PRUNE defaults, |z_u-z_v| features: AUC %.4f (%v)", auc, time.Since(start))
	if auc < 0.52 {
		t.Errorf("yeast AUC %.4f, want >= 0.52 (better than chance)", auc)
	}
}

func TestStopsWhenCancelled(t *testing.T) {
	g := tinyGraph(t)
	cfg := Defaults()
	cfg.Epochs = 3
	embedtest.StopsWhenCancelled(t, func(ctx context.Context, progress func(done, total int)) (*embed.Embedding, error) {
		return Train(ctx, g, cfg, randx.Seeded(1), progress)
	})
}
