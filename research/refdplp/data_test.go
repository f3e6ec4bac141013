package refdplp

import (
	"math"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
)

func refSplit(t *testing.T, kind protocol.Kind) *protocol.Split {
	t.Helper()
	g, err := gen.BarabasiAlbert(300, 4, randx.Seeded(11))
	if err != nil {
		t.Fatal(err)
	}
	s, err := protocol.Build(g, protocol.Config{Kind: kind, Sigma: 0.3}, randx.Seeded(12))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// aaOf is Adamic-Adar on g, computed directly.
func aaOf(g *graph.Graph, u, v int32) float64 {
	var s float64
	for _, z := range g.Neighbors(u) {
		if z != v && g.HasEdge(z, v) {
			s += 1 / math.Log(float64(g.Degree(z)))
		}
	}
	return s
}

// normalised is the authors' AA normalisation (reference-implementation
// §3.2): s / (a/ln 2 + 1) when a/ln 2 > 1.01, s otherwise.
func normalised(s float64, a int) float64 {
	if d := float64(a) / math.Ln2; d > 1.01 {
		return s / (d + 1)
	}
	return s
}

// The training and evaluation lists are the split's dev and test pairs,
// scored on the right graph and normalised the authors' way; noise flags
// follow a(q) > 0; a non-reference split is refused.
func TestData(t *testing.T) {
	s := refSplit(t, protocol.Reference)
	trs, _ := score.New(s.Train, s.TrainProt, score.AA)
	tes, _ := score.New(s.Test, s.Prot, score.AA)
	td, err := TrainData(s, trs)
	if err != nil {
		t.Fatal(err)
	}
	var prot, noisy int
	for i, q := range td {
		if q.Q != s.TrainQueries[i] || q.Noisy != (s.RefTrainA[i] > 0) || len(q.Pos) != len(s.DevPos[i]) || len(q.Neg) != len(s.DevNeg[i]) {
			t.Fatalf("training query %d: %+v", i, q)
		}
		for j, v := range s.DevPos[i] {
			if want := normalised(aaOf(s.Train, q.Q, v), s.RefTrainA[i]); math.Abs(q.Pos[j]-want) > 1e-12 || q.PosID[j] != v ||
				q.PosProt[j] != s.TrainProt.Has(q.Q, v) {
				t.Fatalf("query %d positive %d: %v (protected %v), want %v", q.Q, v, q.Pos[j], q.PosProt[j], want)
			}
			if q.PosProt[j] {
				prot++
			}
		}
		for j, v := range s.DevNeg[i] {
			if want := normalised(aaOf(s.Train, q.Q, v), s.RefTrainA[i]); math.Abs(q.Neg[j]-want) > 1e-12 {
				t.Fatalf("query %d negative %d: %v, want %v", q.Q, v, q.Neg[j], want)
			}
		}
		if q.Noisy {
			noisy++
		}
	}
	if prot == 0 || noisy == 0 || noisy == len(td) {
		t.Fatalf("degenerate split: %d protected positives, %d of %d queries with noise", prot, noisy, len(td))
	}
	ed, err := EvalData(s, tes)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range ed {
		if q.Q != s.Queries[i] || q.Noisy != (s.RefA[i] > 0) || len(q.S) != len(s.TestPos[i])+len(s.TestNeg[i]) || q.NPos != len(s.TestPos[i]) {
			t.Fatalf("evaluation query %d: %+v", i, q)
		}
		for j, v := range q.IDs {
			if want := normalised(aaOf(s.Test, q.Q, v), s.RefA[i]); math.Abs(q.S[j]-want) > 1e-12 || q.Label[j] != (j < q.NPos) {
				t.Fatalf("query %d candidate %d: %v, want %v", q.Q, v, q.S[j], want)
			}
		}
		ds, _ := tes.Sensitivity(q.Q)
		if want := normalised(ds, s.RefA[i]); math.Abs(q.Delta-want) > 1e-12 || !(q.XMax >= slicesMax(q.S)) {
			t.Fatalf("query %d: Delta %v (want %v), XMax %v", q.Q, q.Delta, want, q.XMax)
		}
	}
	// Wrong graphs and non-reference splits are refused.
	if _, err := TrainData(s, tes); err == nil {
		t.Fatal("training data scored on the test graph")
	}
	if _, err := EvalData(s, trs); err == nil {
		t.Fatal("evaluation data scored on the training graph")
	}
	c := refSplit(t, protocol.Clean)
	csc, _ := score.New(c.Train, c.TrainProt, score.AA)
	if _, err := TrainData(c, csc); err == nil {
		t.Fatal("the authors' DPLP trained on a clean split")
	}
	ctest, _ := score.New(c.Test, c.Prot, score.AA)
	if _, err := EvalData(c, ctest); err == nil {
		t.Fatal("the authors' DPLP evaluated on a clean split")
	}
}

func slicesMax(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
