package gcn

import (
	"context"
	"github.com/dplp/dplp/internal/numeric"
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

func tinyGraph(t testing.TB) *graph.Graph {
	t.Helper()
	g, _, err := graph.FromEdges(7, []graph.Edge{{U: 0, V: 1}, {U: 0, V: 2}, {U: 1, V: 2}, {U: 2, V: 3}, {U: 3, V: 4}, {U: 4, V: 5}, {U: 3, V: 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g // node 6 is isolated
}

// TestNormAdj compares Â with a dense computation of D^-1/2 (A+I) D^-1/2.
func TestNormAdj(t *testing.T) {
	g := tinyGraph(t)
	a := normAdj(g)
	n := g.N()
	dense := make([]float64, n*n)
	for u := 0; u < n; u++ {
		for i := a.off[u]; i < a.off[u+1]; i++ {
			if i > a.off[u] && a.col[i] <= a.col[i-1] {
				t.Fatalf("row %d not sorted", u)
			}
			dense[u*n+int(a.col[i])] = a.val[i]
		}
	}
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			want := 0.0
			if u == v || g.HasEdge(int32(u), int32(v)) {
				want = 1 / math.Sqrt(float64((g.Degree(int32(u))+1)*(g.Degree(int32(v))+1)))
			}
			if math.Abs(dense[u*n+v]-want) > 1e-15 {
				t.Errorf("Â[%d,%d] = %v, want %v", u, v, dense[u*n+v], want)
			}
		}
	}
}

// refLoss recomputes the loss densely from scratch (no shared code with the
// model's forward pass beyond the parameters).
func refLoss(m *model, negs []graph.Edge) float64 {
	n, h, d := m.n, m.h, m.d
	A := make([][]float64, n)
	for u := range A {
		A[u] = make([]float64, n)
		A[u][u] = 1
		for _, v := range m.g.Neighbors(int32(u)) {
			A[u][v] = 1
		}
	}
	deg := make([]float64, n)
	for u := range A {
		for _, x := range A[u] {
			deg[u] += x
		}
	}
	mul := func(x []float64, cols int) []float64 { // Â x
		out := make([]float64, n*cols)
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if A[u][v] == 0 {
					continue
				}
				w := 1 / math.Sqrt(deg[u]*deg[v])
				for j := 0; j < cols; j++ {
					out[u*cols+j] += w * x[v*cols+j]
				}
			}
		}
		return out
	}
	xw := make([]float64, n*h)
	for u := 0; u < n; u++ {
		for j := 0; j < h; j++ {
			xw[u*h+j] = m.w1[u*h+j]
			for f := 0; f < m.k; f++ {
				xw[u*h+j] += m.feat[u*m.k+f] * m.wf[f*h+j]
			}
		}
	}
	hid := mul(xw, h)
	for i := range hid {
		hid[i] = math.Max(hid[i], 0)
	}
	q := make([]float64, n*d)
	for u := 0; u < n; u++ {
		for j := 0; j < d; j++ {
			for a := 0; a < h; a++ {
				q[u*d+j] += hid[u*h+a] * m.w2[a*d+j]
			}
		}
	}
	z := mul(q, d)
	dot := func(u, v int32) float64 {
		var s float64
		for j := 0; j < d; j++ {
			s += z[int(u)*d+j] * z[int(v)*d+j]
		}
		return s
	}
	var pos, neg float64
	edges := m.g.EdgeList()
	for _, e := range edges {
		pos += -math.Log(numeric.Sigmoid(dot(e.U, e.V)))
	}
	for _, e := range negs {
		neg += -math.Log(1 - numeric.Sigmoid(dot(e.U, e.V)))
	}
	return pos/float64(len(edges)) + neg/float64(len(negs))
}

// TestGradient checks the hand-written backward pass against central
// differences of an independent dense implementation of the loss.
func TestGradient(t *testing.T) {
	for _, deg := range []bool{false, true} {
		g := tinyGraph(t)
		cfg := Config{Hidden: 3, Dim: 4, Epochs: 1, LR: 0.01, DegreeFeatures: deg}
		r := randx.Seeded(1)
		m := newModel(g, cfg, 2, r)
		// Larger weights than Glorot so that the loss is far from flat.
		for _, p := range m.params() {
			for i := range p {
				p[i] = r.NormFloat64()
			}
		}
		negs := []graph.Edge{{U: 0, V: 4}, {U: 1, V: 6}, {U: 2, V: 5}, {U: 0, V: 3}, {U: 1, V: 5}, {U: 4, V: 6}, {U: 0, V: 5}}
		m.setNegatives(negs)
		m.forward()
		m.backward()
		if ref := refLoss(m, negs); math.Abs(ref-m.loss) > 1e-12*math.Max(1, ref) {
			t.Fatalf("loss %v, dense reference %v", m.loss, ref)
		}
		names := []string{"W1", "Wf", "W2"}
		const h = 1e-6
		for pi, p := range m.params() {
			grad := slices.Clone(m.grads()[pi])
			for i := range p {
				old := p[i]
				p[i] = old + h
				lp := refLoss(m, negs)
				p[i] = old - h
				lm := refLoss(m, negs)
				p[i] = old
				fd := (lp - lm) / (2 * h)
				if math.Abs(fd-grad[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
					t.Errorf("degree=%v %s[%d]: analytic %v, finite difference %v", deg, names[pi], i, grad[i], fd)
				}
			}
		}
	}
}

func TestAdamStep(t *testing.T) {
	// First Adam step moves each coordinate by -lr*sign(g + wd*p) (bias-corrected).
	p := [][]float64{{1, -2, 3}}
	g := [][]float64{{0.5, 0.1, -4}}
	a := numeric.NewAdam(p, 0.01, []float64{0.1}, false)
	a.Step(p, g)
	want := []float64{1 - 0.01, -2 + 0.01, 3 + 0.01} // g+wd*p = 0.6, -0.1, -3.7
	for i := range want {
		if math.Abs(p[0][i]-want[i]) > 1e-9 {
			t.Errorf("p[%d] = %v, want %v", i, p[0][i], want[i])
		}
	}
}

func TestLossDecreases(t *testing.T) {
	g, _, err := lptest.PlantedPartition(150, 3, 0.2, 0.01, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	r := randx.Seeded(3)
	m := newModel(g, cfg, 2, r)
	opt := numeric.NewAdam(m.params(), cfg.LR, []float64{0, 0, 0}, false)
	negs, err := linkclf.SampleNonEdges(g, int(g.M()), r)
	if err != nil {
		t.Fatal(err)
	}
	m.setNegatives(negs) // fixed negatives: the loss must fall steadily
	var first float64
	for ep := 0; ep < 40; ep++ {
		m.forward()
		m.backward()
		if ep == 0 {
			first = m.loss
		}
		opt.Step(m.params(), m.grads())
	}
	m.forward()
	m.backward()
	if !(m.loss < 0.8*first) {
		t.Errorf("loss %v after 40 epochs, started at %v", m.loss, first)
	}
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	g, _, err := lptest.PlantedPartition(300, 3, 0.1, 0.01, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Epochs = 5
	cfg.DegreeFeatures = true
	var ref []float32
	for _, w := range []int{1, 2, 3} {
		cfg.Workers = w
		e, err := Train(context.Background(), g, cfg, randx.Seeded(5), nil)
		if err != nil {
			t.Fatal(err)
		}
		if e.N != g.N() || e.Dim != cfg.Dim {
			t.Fatalf("shape %d×%d", e.N, e.Dim)
		}
		if ref == nil {
			ref = e.Vec
		} else if !slices.Equal(ref, e.Vec) {
			t.Errorf("workers=%d: embedding differs from workers=1", w)
		}
	}
	e, err := Train(context.Background(), g, cfg, randx.Seeded(6), nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(ref, e.Vec) {
		t.Error("different seeds gave the same embedding")
	}
}

// TestOutputOptions checks row normalisation and that the optional decay of
// the identity table changes the result.
func TestOutputOptions(t *testing.T) {
	g, _, err := lptest.PlantedPartition(120, 3, 0.15, 0.01, randx.Seeded(7))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Epochs = 10
	norm, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for u := int32(0); u < int32(norm.N); u++ {
		var ss float64
		for _, v := range norm.Row(u) {
			ss += float64(v) * float64(v)
		}
		if math.Abs(ss-1) > 1e-5 {
			t.Fatalf("row %d: squared norm %v", u, ss)
		}
	}
	cfg.Normalize = false
	raw, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Same training, so raw rows must be positive multiples of the unit rows.
	for u := int32(0); u < int32(raw.N); u++ {
		var ss, dot float64
		for j, v := range raw.Row(u) {
			ss += float64(v) * float64(v)
			dot += float64(v) * float64(norm.Row(u)[j])
		}
		if math.Abs(dot-math.Sqrt(ss)) > 1e-4*math.Sqrt(ss) {
			t.Fatalf("row %d: raw and normalised rows not parallel", u)
		}
	}
	cfg.DecayIdentity = true
	decayed, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(decayed.Vec, raw.Vec) {
		t.Error("DecayIdentity had no effect")
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
		{"zero hidden", g, mod(func(c *Config) { c.Hidden = 0 }), randx.Seeded(1)},
		{"zero dim", g, mod(func(c *Config) { c.Dim = 0 }), randx.Seeded(1)},
		{"negative epochs", g, mod(func(c *Config) { c.Epochs = -1 }), randx.Seeded(1)},
		{"inf lr", g, mod(func(c *Config) { c.LR = math.Inf(1) }), randx.Seeded(1)},
		{"negative decay", g, mod(func(c *Config) { c.WeightDecay = -1 }), randx.Seeded(1)},
		{"negative workers", g, mod(func(c *Config) { c.Workers = -1 }), randx.Seeded(1)},
		{"zero negative ratio", g, mod(func(c *Config) { c.NegRatio = 0 }), randx.Seeded(1)},
	}
	for _, tc := range tests {
		if _, err := Train(context.Background(), tc.g, tc.cfg, tc.rng, nil); err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
	complete, _, _ := graph.FromEdges(3, []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 0, V: 2}}, nil)
	if _, err := Train(context.Background(), complete, Defaults(), randx.Seeded(1), nil); err == nil {
		t.Error("complete graph (no negatives): want an error")
	}
}

func evalAUC(t testing.TB, g *graph.Graph, cfg Config, seed uint64, feat linkclf.Feature) float64 {
	t.Helper()
	return embedtest.EmbedAUC(t, g, seed, feat, func(g *graph.Graph, rng *rand.Rand) (*embed.Embedding, error) {
		return Train(context.Background(), g, cfg, rng, nil)
	})
}

func TestQualityPlantedPartition(t *testing.T) {
	g, _, err := lptest.PlantedPartition(400, 8, 0.25, 0.004, randx.Seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	if raceEnabled {
		cfg.Epochs = 30
	}
	auc := evalAUC(t, g, cfg, 10, linkclf.AbsDiff)
	t.Logf("planted partition AUC %.3f (%d epochs)", auc, cfg.Epochs)
	if auc < 0.8 {
		t.Errorf("AUC %.3f, want >= 0.8", auc)
	}
}

func loadDataset(t testing.TB, name string) *graph.Graph {
	t.Helper()
	if testing.Short() {
		t.Skip("dataset test skipped in -short mode")
	}
	path := lptest.Dataset(name)
	if path == "" {
		t.Skipf("%s not found (set DPLP_DATASETS or provide ../shared/datasets)", name)
	}
	g, err := lptest.ReadEdgeList(path)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestYeastAUC reports SEAL-style ROC-AUC on the Yeast PPI graph (bar 0.85).
func TestYeastAUC(t *testing.T) {
	if raceEnabled {
		t.Skip("dataset test skipped under the race detector")
	}
	g := loadDataset(t, "yeast.txt")
	cfg := Defaults()
	start := time.Now()
	auc := evalAUC(t, g, cfg, 1, linkclf.AbsDiff)
	t.Logf("yeast GCN hidden %d dim %d, %d epochs, |z_u-z_v| features: AUC %.4f (%v)", cfg.Hidden, cfg.Dim, cfg.Epochs, auc, time.Since(start))
	if auc < 0.85 {
		t.Errorf("yeast AUC %.4f, want >= 0.85", auc)
	}
}

func BenchmarkTrainFacebook(b *testing.B) {
	g := loadDataset(b, "facebook.txt")
	for b.Loop() {
		if _, err := Train(context.Background(), g, Defaults(), randx.Seeded(1), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStopsWhenCancelled(t *testing.T) {
	g := tinyGraph(t)
	cfg := Defaults()
	cfg.Epochs, cfg.Workers = 3, 2
	embedtest.StopsWhenCancelled(t, func(ctx context.Context, progress func(done, total int)) (*embed.Embedding, error) {
		return Train(ctx, g, cfg, randx.Seeded(1), progress)
	})
}
