package evaluate

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/gen"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/protocol"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// FitConfig controls FitSplit.
type FitConfig struct {
	DevFrac      float64 // fraction of each query's non-protected edges held out as positives (default 0.3)
	MaxQueries   int     // training queries sampled (0: all nodes with a usable pair)
	NegPerQuery  int     // negatives per query (default 200)
	MinPositives int     // queries with fewer usable positives are skipped (default 1)
}

// FitSplit prepares DPLP's training data for deployment on a whole graph g
// with marks p (privacy-model §5): it starts from the public graph G_pub
// (protected edges removed), holds out a fraction of each training query's
// non-protected edges as positives (removed from the training graph) and
// samples non-protected non-edges as negatives. Only invariant data is
// used, so the trained transform may be shared by all queries. The returned
// split has only its training fields set (Train, TrainProt, TrainQueries,
// DevPos, DevNeg).
func FitSplit(g *graph.Graph, p *protect.Set, cfg FitConfig, rng *rand.Rand) (*protocol.Split, error) {
	if cfg.DevFrac == 0 {
		cfg.DevFrac = 0.3
	}
	if cfg.NegPerQuery == 0 {
		cfg.NegPerQuery = 200
	}
	if cfg.MinPositives == 0 {
		cfg.MinPositives = 1
	}
	if !(cfg.DevFrac > 0 && cfg.DevFrac < 1) || cfg.NegPerQuery < 1 || cfg.MaxQueries < 0 {
		return nil, fmt.Errorf("evaluate: invalid fit config %+v", cfg)
	}
	pub := p.Public(g)
	n := g.N()
	order := rng.Perm(n)
	if cfg.MaxQueries > 0 && cfg.MaxQueries < n {
		order = order[:cfg.MaxQueries]
	}
	slices.Sort(order)
	held := make(map[graph.Edge]bool)
	s := &protocol.Split{Kind: protocol.Deployment, TrainProt: p}
	for _, qi := range order {
		q := int32(qi)
		nb := pub.Neighbors(q)
		k := int(cfg.DevFrac * float64(len(nb)))
		if k < cfg.MinPositives || len(nb)-k < 1 {
			continue
		}
		perm := rng.Perm(len(nb))[:k]
		pos := make([]int32, 0, k)
		for _, j := range perm {
			v := nb[j]
			pos = append(pos, v)
			held[graph.Edge{U: min(q, v), V: max(q, v)}] = true
		}
		slices.Sort(pos)
		// Negatives: non-protected non-neighbours, by rejection. Both the
		// count and the rejection test read only invariant data: the public
		// graph and the marks (a protected pair of q is never a public edge,
		// so n-1-deg_pub(q)-|prot(q)| counts the non-protected non-edges).
		// A full-graph degree here would change every later draw when one
		// protected pair is toggled (privacy-model §5).
		want := min(cfg.NegPerQuery, n-1-pub.Degree(q)-p.Count(q))
		neg := make([]int32, 0, max(want, 0))
		seen := make(map[int32]bool, max(want, 0))
		for tries := 0; len(neg) < want && tries < 50*want+100; tries++ {
			v := int32(rng.IntN(n))
			if v == q || seen[v] || pub.HasEdge(q, v) || p.Has(q, v) {
				continue
			}
			seen[v] = true
			neg = append(neg, v)
		}
		if len(neg) == 0 {
			continue
		}
		slices.Sort(neg)
		s.TrainQueries = append(s.TrainQueries, q)
		s.DevPos = append(s.DevPos, pos)
		s.DevNeg = append(s.DevNeg, neg)
	}
	if len(s.TrainQueries) == 0 {
		return nil, fmt.Errorf("evaluate: no node has enough non-protected edges to train on")
	}
	s.Train = pub.Without(func(u, v int32) bool { return held[graph.Edge{U: u, V: v}] })
	return s, nil
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
