package list

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
)

// FlipProb is randomised response's flip probability at eps:
// 1 / (1 + e^eps).
func FlipProb(eps float64) float64 { return 1 / (1 + math.Exp(eps)) }

// PerturbOnce is the perturb-once baseline (docs/privacy-model.md §16):
// every protected pair of p is flipped (edge <-> non-edge) independently
// with probability FlipProb(eps), in the canonical order of p.Pairs();
// non-protected pairs are kept. The perturbed graph is eps-DP under the
// pair unit (randomised response on the one differing pair) and
// (m x eps)-DP for a party with m protected pairs; any scorer run on it,
// and every list ranked from it, is post-processing (free).
func PerturbOnce(g *graph.Graph, p *protect.Set, eps float64, rng *rand.Rand) (*graph.Graph, error) {
	if g == nil || p == nil || p.N() != g.N() {
		return nil, errors.New("list: perturb-once needs a graph and marks over the same nodes")
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("list: eps %v must be finite and > 0", eps)
	}
	q := FlipProb(eps)
	flip := map[graph.Edge]bool{}
	for _, e := range p.Pairs() {
		if rng.Float64() < q {
			flip[graph.Edge{U: min(e.U, e.V), V: max(e.U, e.V)}] = true
		}
	}
	var edges []graph.Edge
	g.Edges(func(a, b int32) {
		e := graph.Edge{U: min(a, b), V: max(a, b)}
		if flip[e] {
			delete(flip, e)
			return
		}
		edges = append(edges, e)
	})
	for e := range flip {
		edges = append(edges, e)
	}
	out, _, err := graph.FromEdges(g.N(), edges, g.Labels())
	return out, err
}

// PerturbOnceCost is the charged cost of a perturb-once release at eps
// under unit: eps (pair unit: one pair differs), eps x max_w |prot(w)|
// (party unit, group privacy over the largest party). Every list ranked
// from the perturbed graph costs nothing more.
func PerturbOnceCost(p *protect.Set, unit privunit.Unit, eps float64) float64 {
	if unit == privunit.Pair {
		return eps
	}
	m := 0
	for w := int32(0); int(w) < p.N(); w++ {
		m = max(m, p.Count(w))
	}
	return privunit.GroupCost(eps, m)
}
