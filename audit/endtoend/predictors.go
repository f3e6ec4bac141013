package endtoend

// The predictors audited and how their models are trained (on G and on
// every neighbouring G').

import (
	"context"
	"math"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train/deploy"
)

// DeployTrain is the deployment training path (what `dplp train` runs) at
// a small number of epochs, with held-out epoch selection turned off so that
// the compiled tables are those of the last epoch: on graphs this small the
// initialisation often wins the selection, and a model that ignores its
// data would pass the comparison trivially. (The selection reads the same
// invariant data; evaluate's differential test covers it with selection on.)
func DeployTrain(kind score.Kind, variant string, eps float64, epochs int, seed uint64) TrainFunc {
	return Predictor{Name: kind.String(), Kind: kind}.train(variant, eps, epochs, seed)
}

// Predictor builds a base scorer on a graph: a triad kind, or a bounded
// score given by Fit (a fixed pair function, like a score file, or one
// computed from the graph it is given, like a fitted embedding).
type Predictor struct {
	Name string
	Kind score.Kind                          // a triad kind, or score.Bounded
	Fit  func(g *graph.Graph) score.PairFunc // bounded only, values in [0, 1]
}

func (pd Predictor) scorer(g *graph.Graph, p *protect.Set) (*score.Scorer, error) {
	if pd.Fit == nil {
		return score.New(g, p, pd.Kind)
	}
	return score.NewBounded(g, p, pd.Name, 0, 1, pd.Fit(g))
}

func (pd Predictor) train(variant string, eps float64, epochs int, seed uint64) TrainFunc {
	return func(g *graph.Graph, p *protect.Set) (*model.Model, error) {
		pr, err := deploy.Sample(g, p, deploy.SampleConfig{NegPerQuery: 40}, randx.Derive(seed, 0x666974))
		if err != nil {
			return nil, err
		}
		sc, err := pd.scorer(pr.Train, pr.Marks)
		if err != nil {
			return nil, err
		}
		m, _, err := deploy.Model(context.Background(), pr, sc, pd.Name, variant, eps, LastEpoch(epochs), seed)
		return m, err
	}
}

// boundedPredictors are the two bounded scores of Config.Bounded.
func boundedPredictors() []Predictor {
	fixed := func(g *graph.Graph) score.PairFunc {
		return func(u, v int32) float64 {
			a, b := g.Label(min(u, v)), g.Label(max(u, v))
			h := uint64(14695981039346656037)
			for _, c := range []byte(a + "\x00" + b) {
				h = (h ^ uint64(c)) * 1099511628211
			}
			return float64(h>>11) / (1 << 53)
		}
	}
	fitted := func(g *graph.Graph) score.PairFunc {
		return func(u, v int32) float64 {
			c := 0
			for _, z := range g.Neighbors(u) {
				if g.HasEdge(z, v) {
					c++
				}
			}
			return float64(c) / float64(1+c)
		}
	}
	return []Predictor{{Name: "file:hashed", Kind: score.Bounded, Fit: fixed}, {Name: "fitted:cn-ratio", Kind: score.Bounded, Fit: fitted}}
}

// LastEpoch are training options that keep the last epoch (no held-out
// selection).
func LastEpoch(epochs int) deploy.Options {
	return deploy.Options{Epochs: epochs, HeldOutEvery: math.MaxInt32}
}
