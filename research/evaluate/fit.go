package evaluate

import (
	"math/rand/v2"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train/deploy"
)

// FitConfig controls FitSplit (deploy.SampleConfig).
type FitConfig = deploy.SampleConfig

// FitSplit prepares DPLP's training data for deployment on a whole graph g
// with marks p (deploy.Sample: invariant data only) as a protocol.Split with
// only its training fields set (Train, TrainProt, TrainQueries, DevPos,
// DevNeg), for the research code that works on splits.
func FitSplit(g *graph.Graph, p *protect.Set, cfg FitConfig, rng *rand.Rand) (*protocol.Split, error) {
	pr, err := deploy.Sample(g, p, cfg, rng)
	if err != nil {
		return nil, err
	}
	return &protocol.Split{Kind: protocol.Deployment, TrainProt: pr.Marks, Train: pr.Train,
		TrainQueries: pr.Queries, DevPos: pr.Pos, DevNeg: pr.Neg}, nil
}

// SyntheticTransforms trains variant for each score kind on a seeded
// latent-space graph (public data only, as FitSplit) and returns the
// compiled models, for auditing learned utilities on small graphs: a
// compiled table maps x = s/S_max in [0, 1], so it applies to any graph.
func SyntheticTransforms(kinds []score.Kind, variant string, eps float64, epochs int, seed uint64) (map[score.Kind]calib.Transform, error) {
	lg, err := gen.Latent(600, 2, 0.06, randx.Derive(seed, 0x73796e))
	if err != nil {
		return nil, err
	}
	p, err := protect.Synthetic(lg.Graph, 0.3, 0.01, randx.Derive(seed, 0x70))
	if err != nil {
		return nil, err
	}
	s, err := FitSplit(lg.Graph, p, FitConfig{}, randx.Derive(seed, 0x66))
	if err != nil {
		return nil, err
	}
	out := make(map[score.Kind]calib.Transform, len(kinds))
	for _, k := range kinds {
		m, _, err := TrainModel(s, k, variant, eps, TrainOptions{Epochs: epochs}, seed)
		if err != nil {
			return nil, err
		}
		out[k] = m
	}
	return out, nil
}
