package endtoend

import (
	"context"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train/deploy"
)

func small() Config {
	c := Default()
	c.Graphs, c.Toggles = 2, 6
	return c
}

// The deployed pipeline passes for every variant.
func TestEndToEndPasses(t *testing.T) {
	for _, v := range []string{"dplp", "lin", "umnn", "dplp-pub"} {
		t.Run(v, func(t *testing.T) {
			cfg := small()
			cfg.Variant = v
			rep, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Passed() {
				t.Fatalf("%+v", rep)
			}
			if rep.NoisyCases == 0 || rep.UtilityChecks == 0 || rep.Trainings < 10 {
				t.Fatalf("audit covered nothing: %+v", rep)
			}
			if (v == "dplp-pub") != (rep.LexCases > 0) {
				t.Fatalf("variant %s: %d lexicographic cases", v, rep.LexCases)
			}
		})
	}
}

// The authors' calibration fails: users without protected edges of their
// own get the exact top-K.
func TestEndToEndReferenceFails(t *testing.T) {
	cfg := small()
	cfg.Calibration = calib.Reference
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || rep.Violations == 0 {
		t.Fatalf("reference calibration passed: %+v", rep)
	}
}

// A training path that reads the full graph (protected edges put back into
// the training graph) fails: the model changes between neighbours.
func TestEndToEndLeakyTrainingFails(t *testing.T) {
	cfg := small()
	cfg.Kinds = []score.Kind{score.CN}
	cfg.Train = func(kind score.Kind) TrainFunc {
		return func(g *graph.Graph, p *protect.Set) (*model.Model, error) {
			pr, err := deploy.Sample(g, p, deploy.SampleConfig{NegPerQuery: 40}, randx.Derive(1, 0x666974))
			if err != nil {
				return nil, err
			}
			tr := pr.Train
			pr.Train = g.Without(func(u, v int32) bool { return !tr.HasEdge(u, v) && !p.Has(u, v) })
			sc, err := score.New(pr.Train, pr.Marks, kind)
			if err != nil {
				return nil, err
			}
			m, _, err := deploy.Model(context.Background(), pr, sc, kind.String(), "dplp", 0.5, LastEpoch(2), 1)
			return m, err
		}
	}
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || rep.ModelChanges == 0 {
		t.Fatalf("leaky training passed: %+v", rep)
	}
}
