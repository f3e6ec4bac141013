package endtoend

// The deployed release path on an audited graph: Recommenders, seeded
// lists and model comparison.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
)

// recommender builds the Recommender of the audited release on (g, p).
func (a *auditor) recommender(m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set, opts ...release.Option) (*release.Recommender, error) {
	cfg := a.cfg
	if cfg.Calibration == calib.Reference {
		return release.NewMechanism(calib.Config{Method: calib.Exponential, Calibration: calib.Reference, Kind: pd.Kind, Eps: cfg.Eps}, "reference", g, p, opts...)
	}
	if pd.Fit == nil {
		return release.New(m, g, p, opts...)
	}
	sc, err := pd.scorer(g, p)
	if err != nil {
		return nil, err
	}
	return release.New(m, g, p, append(opts, release.WithScorer(sc))...)
}

// viewer is the audited release: no ledger (nothing leaves), the sampler
// whose probabilities are computed.
func (a *auditor) viewer(m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set) (*release.Recommender, error) {
	return a.recommender(m, pd, g, p, release.WithoutLedger(), release.WithSampler(a.sampler))
}

// sameModel reports whether a and b are the same model but for what may
// differ between runs on the same data (creation time, dataset text).
func sameModel(a, b *model.Model) (bool, error) {
	core := func(m *model.Model) ([]byte, error) {
		c := *m
		c.Meta.Created, c.Meta.Dataset = time.Time{}, ""
		return json.Marshal(&c)
	}
	ja, err := core(a)
	if err != nil {
		return false, err
	}
	jb, err := core(b)
	if err != nil {
		return false, err
	}
	return string(ja) == string(jb), nil
}

// seededLists releases a seeded list to every user of g (label order), as
// `dplp recommend --seed` does.
func (a *auditor) seededLists(m *model.Model, pd Predictor, g *graph.Graph, p *protect.Set) ([][]string, error) {
	rec, err := a.recommender(m, pd, g, p, release.WithSeed(a.cfg.Seed))
	if err != nil {
		return nil, err
	}
	res, err := rec.Recommend(context.Background(), sortedLabels(g), a.cfg.MaxK)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(res))
	for i, x := range res {
		out[i] = x.List
	}
	return out, nil
}

func sortedLabels(g *graph.Graph) []string {
	ids := g.ByLabel()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = g.Label(id)
	}
	return out
}
