package embed

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/ranking"
)

// aucOf is the probability that a random positive outscores a random
// negative (ties count one half).
func aucOf(pos, neg []float64) float64 { return ranking.ROCAUC(pos, neg) }

func TestAUCOf(t *testing.T) {
	if a := aucOf([]float64{3, 4}, []float64{1, 2}); a != 1 {
		t.Errorf("perfect AUC %v", a)
	}
	if a := aucOf([]float64{1, 2}, []float64{1, 2}); a != 0.5 {
		t.Errorf("tied AUC %v", a)
	}
}

// linkSplit holds out frac of the edges and draws as many non-edges of g.
func linkSplit(g *graph.Graph, frac float64, r *rand.Rand) (train *graph.Graph, testPos, testNeg, trainNeg []graph.Edge) {
	es := g.EdgeList()
	r.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
	k := int(frac * float64(len(es)))
	testPos = es[:k]
	held := map[graph.Edge]bool{}
	for _, e := range testPos {
		held[e] = true
	}
	train = g.Without(func(u, v int32) bool { return held[graph.Edge{U: u, V: v}] })
	nonEdges := func(m int) []graph.Edge {
		var out []graph.Edge
		for len(out) < m {
			u, v := int32(r.IntN(g.N())), int32(r.IntN(g.N()))
			if u != v && !g.HasEdge(u, v) {
				out = append(out, graph.Edge{U: min(u, v), V: max(u, v)})
			}
		}
		return out
	}
	return train, testPos, nonEdges(k), nonEdges(len(es) - k)
}

// logisticAUC trains an L2-regularised logistic classifier on edge features
// of training edges vs training non-edges and returns its test AUC.
func logisticAUC(e *Embedding, feat func(a, b []float32, out []float64), trainPos, trainNeg, testPos, testNeg []graph.Edge) float64 {
	d := e.Dim
	x := make([]float64, d)
	w := make([]float64, d+1)
	type ex struct {
		e graph.Edge
		y float64
	}
	var data []ex
	for _, p := range trainPos {
		data = append(data, ex{p, 1})
	}
	for _, p := range trainNeg {
		data = append(data, ex{p, 0})
	}
	// Standardise features.
	mean, sd := make([]float64, d), make([]float64, d)
	for _, z := range data {
		feat(e.Row(z.e.U), e.Row(z.e.V), x)
		for i := range x {
			mean[i] += x[i]
			sd[i] += x[i] * x[i]
		}
	}
	for i := range mean {
		mean[i] /= float64(len(data))
		sd[i] = math.Sqrt(max(sd[i]/float64(len(data))-mean[i]*mean[i], 1e-12))
	}
	score := func(p graph.Edge) float64 {
		feat(e.Row(p.U), e.Row(p.V), x)
		s := w[d]
		for i := range x {
			x[i] = (x[i] - mean[i]) / sd[i]
			s += w[i] * x[i]
		}
		return s
	}
	r := rand.New(rand.NewPCG(1, 1))
	for ep := range 30 {
		r.Shuffle(len(data), func(i, j int) { data[i], data[j] = data[j], data[i] })
		lr := 0.05 / (1 + float64(ep))
		for _, z := range data {
			s := score(z.e)
			g := 1/(1+math.Exp(-s)) - z.y
			for i := range x {
				w[i] -= lr * (g*x[i] + 1e-4*w[i])
			}
			w[d] -= lr * g
		}
	}
	var ps, ns []float64
	for _, p := range testPos {
		ps = append(ps, score(p))
	}
	for _, p := range testNeg {
		ns = append(ns, score(p))
	}
	return aucOf(ps, ns)
}

// TestLinkPredictionQuality reports held-out link prediction AUCs of the
// paper-default embeddings on Yeast and USAir: cosine similarity, and a
// logistic classifier on Hadamard and on |z_u - z_v| (the reference code's
// features). Not run with -short or -race (it trains at full size).
func TestLinkPredictionQuality(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("full-size embedding; skipped with -short and -race")
	}
	hadamard := func(a, b []float32, out []float64) {
		for i := range out {
			out[i] = float64(a[i]) * float64(b[i])
		}
	}
	absdiff := func(a, b []float32, out []float64) {
		for i := range out {
			out[i] = math.Abs(float64(a[i]) - float64(b[i]))
		}
	}
	for _, ds := range []struct {
		file     string
		minCos   float64
		minLogit float64
	}{{"yeast.txt", 0.85, 0.88}, {"usair.txt", 0.70, 0.85}} {
		g := loadDataset(t, ds.file)
		train, tp, tn, trn := linkSplit(g, 0.1, randx.Seeded(42))
		trainPos := train.EdgeList()
		// With p = q = 1 Node2Vec and DeepWalk are the same algorithm
		// (TestNode2VecUniformIsDeepWalk), so Yeast runs only Node2Vec.
		type run struct {
			name string
			run  func() (*Embedding, error)
		}
		runs := []run{{"Node2Vec", func() (*Embedding, error) {
			return Node2Vec(context.Background(), train, DefaultNode2Vec(), randx.Seeded(1), nil)
		}}}
		if ds.file == "usair.txt" {
			runs = append(runs, run{"DeepWalk", func() (*Embedding, error) {
				return DeepWalk(context.Background(), train, DefaultDeepWalk(), randx.Seeded(2), nil)
			}})
		}
		for _, m := range runs {
			e, err := m.run()
			if err != nil {
				t.Fatal(err)
			}
			var ps, ns []float64
			for _, p := range tp {
				ps = append(ps, cosine(e.Row(p.U), e.Row(p.V)))
			}
			for _, p := range tn {
				ns = append(ns, cosine(e.Row(p.U), e.Row(p.V)))
			}
			cos := aucOf(ps, ns)
			had := logisticAUC(e, hadamard, trainPos, trn, tp, tn)
			l1 := logisticAUC(e, absdiff, trainPos, trn, tp, tn)
			t.Logf("%s %s: AUC cosine %.3f, logistic(Hadamard) %.3f, logistic(|diff|) %.3f", ds.file, m.name, cos, had, l1)
			if cos < ds.minCos || max(had, l1) < ds.minLogit {
				t.Errorf("%s %s: AUC below sanity floor", ds.file, m.name)
			}
		}
	}
}
