package evaluate

import (
	"testing"

	"github.com/dplp/dplp/audit"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
)

func testSplit(t *testing.T, kind protocol.Kind) *protocol.Split {
	t.Helper()
	lg, err := gen.Latent(800, 2, 0.06, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	cfg := protocol.DefaultConfig()
	cfg.Kind = kind
	cfg.Sigma = 0.3
	s, err := protocol.Build(lg.Graph, cfg, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunMethods(t *testing.T) {
	s := testSplit(t, protocol.Clean)
	res := map[calib.Method]Result{}
	for _, m := range []calib.Method{calib.NonPrivate, calib.PublicOnly, calib.Exponential, calib.Laplace, calib.Staircase, calib.LaplacePeeling} {
		r, err := Run(s, calib.Config{Method: m, Kind: score.AA, Eps: 0.1}, 30, 7)
		if err != nil {
			t.Fatal(err)
		}
		if r.Queries != len(s.Queries) || r.Mean.AUC < 0 || r.Mean.AUC > 1 {
			t.Fatalf("%v: %+v", m, r)
		}
		res[m] = r
		t.Logf("%-16v AUC@30 %.3f P@30 %.3f NDCG %.3f ROC %.3f zero-noise %d/%d", m, r.Mean.AUC, r.Mean.Precision, r.Mean.NDCG, r.ROCAUC, r.ZeroNoise, r.Queries)
	}
	if !(res[calib.NonPrivate].Mean.AUC > res[calib.Exponential].Mean.AUC+0.05) {
		t.Fatal("non-private AA should beat the exponential mechanism at eps 0.1")
	}
	again, _ := Run(s, calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: 0.1}, 30, 7)
	if again.Mean != res[calib.Exponential].Mean {
		t.Fatal("not reproducible for a seed")
	}
}

func TestTrainingDataInvariant(t *testing.T) {
	s := testSplit(t, protocol.Clean)
	tr, held, err := TrainingData(s, score.CN, 5, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) == 0 || len(held) == 0 {
		t.Fatalf("train %d held %d", len(tr), len(held))
	}
	for _, q := range tr {
		for _, x := range append(q.Pos, q.Neg...) {
			if x < 0 || x > q.SMax {
				t.Fatalf("score %v outside [0, %v]", x, q.SMax)
			}
		}
	}
	// The training graph holds no protected edge (privacy-model §5).
	s.Train.Edges(func(u, v int32) {
		if s.TrainProt.Has(u, v) {
			t.Fatalf("protected edge %d-%d in the training graph", u, v)
		}
	})
}

func TestTrainAndRunDPLP(t *testing.T) {
	s := testSplit(t, protocol.Clean)
	for _, v := range []string{"dplp", "dplp-lin", "dplp-umnn", "dplp-pub"} {
		m, sum, err := TrainModel(s, score.AA, v, 1, TrainOptions{Epochs: 3}, 1)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		r, err := Run(s, calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: 1, Transform: m}, 30, 3)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-9s epochs %d best %d held-out %.3f: AUC@30 %.3f", v, sum.Epochs, sum.BestEpoch, sum.HeldOutAUC, r.Mean.AUC)
		if r.Queries == 0 || r.Mean.AUC <= 0 {
			t.Fatalf("%s: %+v", v, r)
		}
	}
}

func TestFitSplitUsesPublicData(t *testing.T) {
	lg, err := gen.Latent(500, 2, 0.08, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(lg.Graph, 0.3, 0.01, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	s, err := FitSplit(lg.Graph, p, FitConfig{}, randx.Seeded(6))
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range s.TrainQueries {
		for _, v := range s.DevPos[i] {
			if p.Has(q, v) || !lg.HasEdge(q, v) || s.Train.HasEdge(q, v) {
				t.Fatalf("bad positive %d-%d", q, v)
			}
		}
		for _, v := range s.DevNeg[i] {
			if p.Has(q, v) || lg.HasEdge(q, v) || v == q {
				t.Fatalf("bad negative %d-%d", q, v)
			}
		}
	}
	s.Train.Edges(func(u, v int32) {
		if p.Has(u, v) {
			t.Fatal("protected edge in the training graph")
		}
	})
	if _, _, err := TrainModel(s, score.CN, "dplp", 0.5, TrainOptions{Epochs: 2}, 1); err != nil {
		t.Fatal(err)
	}
}

func TestAuditTrainedTransforms(t *testing.T) {
	for _, v := range []string{"dplp", "lin", "umnn", "dplp-pub"} {
		tr, err := SyntheticTransforms(score.Kinds(), v, 0.5, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		cfg := audit.Default()
		cfg.Graphs = 2
		cfg.ChiSamples = 3000
		cfg.Methods = []calib.Method{calib.Exponential}
		cfg.Transforms, cfg.Label = tr, v
		rep, err := audit.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Passed() || rep.Cases == 0 {
			t.Fatalf("%s: audit failed: %+v", v, rep.Worst)
		}
	}
}
