package endtoend

// One instance's checks: the toggles, training invariance, the
// representations, and each list's probability against its charged cost.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
)

// toggle is one node w with its toggleable pairs, in the order masks take
// them.
type toggle struct {
	w  int32
	xs []int32
}

// toggleOrder lists every node with protected pairs: first the endpoints
// of the edge list's first line (its partner first, so the first mask
// removes that line), then nodes whose edges are all protected, then the
// others by id.
func toggleOrder(g *graph.Graph, p *protect.Set, t *text) []toggle {
	n := g.N()
	done := make([]bool, n)
	var out []toggle
	add := func(w int32, first int32) {
		if done[w] || p.Count(w) == 0 {
			return
		}
		done[w] = true
		xs := slices.Clone(p.Of(w))
		if i := slices.Index(xs, first); i > 0 {
			xs[0], xs[i] = xs[i], xs[0]
		}
		out = append(out, toggle{w, xs})
	}
	if t.hasFirst {
		a, _ := g.ID(t.labels[t.first[0]])
		b, _ := g.ID(t.labels[t.first[1]])
		add(a, b)
		add(b, a)
	}
	for w := int32(0); int(w) < n; w++ {
		if loner(g, p, w) {
			add(w, -1)
		}
	}
	for w := int32(0); int(w) < n; w++ {
		add(w, -1)
	}
	return out
}

// instance audits one graph, written as t.
func (a *auditor) instance(pd Predictor, variant string, in instance, t *text, train TrainFunc, r *rand.Rand) error {
	cfg, rep := a.cfg, a.rep
	d, err := a.load(t.inputs(in.name))
	if err != nil {
		return fmt.Errorf("loading the graph written as text: %w", err)
	}
	if err := encodes(in, t.labels, d.Graph, d.Marks); err != nil {
		rep.RepresentationViolations++
		a.note(fmt.Sprintf("%s: the loaded graph is not the one written: %v", in.name, err))
		return nil
	}
	g, p := d.Graph, d.Marks
	a.probsG = map[[2]int][]float64{}
	m := cfg.Model
	if a.trained {
		if m, err = train(g, p); err != nil {
			return err
		}
		rep.Trainings++
	}
	rec, err := a.viewer(m, pd, g, p)
	if err != nil {
		return err
	}
	n := g.N()
	views := make([]release.UserView, n)
	for u := int32(0); int(u) < n; u++ {
		if views[u], err = rec.View(u); err != nil {
			return err
		}
	}
	if cfg.Representations {
		if err := a.representations(pd, in, t, g, p, m, train, r); err != nil {
			return err
		}
	}
	if cfg.Reserve {
		mk := func(opts ...release.Option) (*release.Recommender, error) { return a.recommender(m, pd, g, p, opts...) }
		if err := a.checkReserve(context.Background(), in.name, mk, sortedLabels(g)); err != nil {
			return err
		}
	}
	toggles := 0
	for _, tg := range toggleOrder(g, p, t) {
		w, xsAll := tg.w, tg.xs
		for mask := 1; mask < 1<<min(len(xsAll), 6); mask++ {
			if cfg.Toggles > 0 && toggles >= cfg.Toggles {
				return nil
			}
			var xs []int32
			var xls []string
			for i, x := range xsAll[:min(len(xsAll), 6)] {
				if mask&(1<<i) != 0 {
					xs = append(xs, x)
					xls = append(xls, g.Label(x))
				}
			}
			toggles++
			want, err := protect.Toggle(g, w, xs)
			if err != nil {
				return err
			}
			// G' as text, through the loader: same ids, same marks.
			rep.NeighbourLoads++
			d2, err := a.load(t.toggled(g.Label(w), xls).inputs(in.name + "-neighbour"))
			if err != nil {
				rep.RepresentationViolations++
				a.note(fmt.Sprintf("%s: the neighbouring graph with node %s's pairs %v toggled fails to load: %v", in.name, g.Label(w), xls, err))
				continue
			}
			g2, p2 := d2.Graph, d2.Marks
			same := sameGraph(g2, want) && sameMarks(p2, p)
			if !same {
				rep.RepresentationViolations++
				a.note(fmt.Sprintf("%s: the neighbouring graph with node %s's pairs %v toggled loads under other ids or marks than G (numbering or node universe depends on the protected pairs)", in.name, g.Label(w), xls))
			}
			m2 := m
			if a.trained {
				if m2, err = train(g2, p2); err != nil {
					return err
				}
				rep.Trainings++
				eq, err := sameModel(m, m2)
				if err != nil {
					return err
				}
				if !eq {
					rep.ModelChanges++
					a.note(fmt.Sprintf("%s: training on the graph with node %s's pairs %v toggled changes the model", in.name, g.Label(w), xls))
				}
			}
			if !same {
				continue // ids differ: user views cannot be compared
			}
			// Each user is audited with its own model pair (m on G, m2 on G'):
			// a changed model is a failure above, and its effect on the lists
			// is measured here too.
			rec2, err := a.viewer(m2, pd, g2, p2)
			if err != nil {
				return err
			}
			for u := int32(0); int(u) < n; u++ {
				if u == w || slices.Contains(xs, u) {
					continue // G' is not u-neighbouring when a toggled pair is incident to u
				}
				v2, err := rec2.View(u)
				if err != nil {
					return err
				}
				if err := a.compare(in, rec, u, w, xs, &views[u], &v2); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// representations runs the representation checks of G (written as t,
// loaded as (g, p), model m).
func (a *auditor) representations(pd Predictor, in instance, t *text, g *graph.Graph, p *protect.Set, m *model.Model, train TrainFunc, r *rand.Rand) error {
	rep := a.rep
	base, err := a.seededLists(m, pd, g, p)
	if err != nil {
		return err
	}
	for _, rv := range t.representations(r) {
		rep.RepresentationChecks++
		var why []string
		d, err := a.load(rv.t.inputs(in.name + "-" + rv.name))
		if err != nil {
			rep.RepresentationViolations++
			a.note(fmt.Sprintf("%s written with %s fails to load: %v", in.name, rv.name, err))
			continue
		}
		if !sameGraph(d.Graph, g) || !sameMarks(d.Marks, p) {
			why = append(why, "loads under other ids")
		}
		m2 := m
		if a.trained {
			if m2, err = train(d.Graph, d.Marks); err != nil {
				return err
			}
			rep.Trainings++
			eq, err := sameModel(m, m2)
			if err != nil {
				return err
			}
			if !eq {
				why = append(why, "trains another model")
			}
		}
		lists, err := a.seededLists(m2, pd, d.Graph, d.Marks)
		if err != nil {
			return err
		}
		if !slices.EqualFunc(base, lists, slices.Equal[[]string]) {
			why = append(why, "releases other seeded lists")
		}
		if len(why) > 0 {
			rep.RepresentationViolations++
			a.note(fmt.Sprintf("%s written with %s %s", in.name, rv.name, strings.Join(why, ", ")))
		}
	}
	return nil
}

// compare checks one (G, G', u).
func (a *auditor) compare(in instance, rec *release.Recommender, u, w int32, xs []int32, va, vb *release.UserView) error {
	cfg, rep := a.cfg, a.rep
	if !slices.Equal(va.IDs, vb.IDs) {
		rep.UtilityViolation++
		a.note(fmt.Sprintf("%s: u=%d: the candidate set changes when node %d's pairs %v are toggled", in.name, u, w, xs))
		return nil
	}
	delta := va.Plan.Delta
	if va.Plan.Scale != vb.Plan.Scale || va.Plan.Delta != vb.Plan.Delta {
		rep.UtilityViolation++
		a.note(fmt.Sprintf("%s: u=%d: noise scale changes (%g -> %g) when node %d's pairs %v are toggled", in.name, u, va.Plan.Scale, vb.Plan.Scale, w, xs))
	}
	changed := false
	for i := range va.Utilities {
		rep.UtilityChecks++
		d := math.Abs(va.Utilities[i] - vb.Utilities[i])
		if d > delta*(1+1e-12)+tol {
			rep.UtilityViolation++
			a.note(fmt.Sprintf("%s: u=%d: utility of %d moves by %g > Delta %g when node %d's pairs %v are toggled", in.name, u, va.IDs[i], d, delta, w, xs))
		}
		if d != 0 {
			changed = true
		}
	}
	// Influence sets: if w is outside u's set, nothing may change.
	rep.InfluenceChecks++
	ids, all := rec.Influencers(u)
	if changed && !all && !slices.Contains(ids, w) {
		rep.InfluenceViol++
		a.note(fmt.Sprintf("%s: u=%d: node %d is outside u's influence set but its pairs %v change u's utilities", in.name, u, w, xs))
	}
	nc := len(va.IDs)
	for k := 1; k <= min(cfg.MaxK, nc); k++ {
		rep.Cases++
		worst, bound, err := a.worstRatio(u, va, vb, k)
		if err != nil {
			return err
		}
		rep.Lists += int64(permCount(nc, k))
		if worst > rep.WorstLogRatio || rep.Cases == 1 {
			rep.WorstLogRatio, rep.WorstBound = worst, bound
		}
		if !va.Plan.Exact() {
			rep.NoisyCases++
		}
		if va.Plan.Lexicographic() {
			rep.LexCases++
		}
		if worst > bound+tol*(1+bound) {
			rep.Violations++
			a.note(fmt.Sprintf("%s: u=%d, K=%d: ln ratio %g > charged %g when node %d's pairs %v are toggled", in.name, u, k, worst, bound, w, xs))
		}
	}
	return nil
}

func permCount(n, k int) int {
	c := 1
	for i := 0; i < k; i++ {
		c *= n - i
	}
	return c
}

// worstRatio enumerates every ordered list of length k and returns the
// largest |ln P_G - ln P_G'| and the cost the ledger charges for a list of
// length k: eps_p x the plan's random picks (Plan.Picks: k for the
// exponential mechanism, fewer for the lexicographic DPLP-pub where the
// public scores fix positions, 0 with Delta = 0), computed on G; the cost
// must be the same on G' (it may read invariant data only). The list
// probabilities are those of the audited sampler (listLogProbs).
func (a *auditor) worstRatio(u int32, va, vb *release.UserView, k int) (worst, bound float64, err error) {
	picks, err := va.Plan.Picks(&mech.Utilities{Vals: va.Utilities}, va.Pub, k)
	if err != nil {
		return 0, 0, err
	}
	picks2, err := vb.Plan.Picks(&mech.Utilities{Vals: vb.Utilities}, vb.Pub, k)
	if err != nil {
		return 0, 0, err
	}
	if picks2 != picks {
		return InfRatio, va.Plan.ListCost(picks), nil // the charged cost itself leaks
	}
	bound = va.Plan.ListCost(picks)
	if a.lists == nil {
		a.lists = map[[2]int][][]int{}
	}
	lists, ok := a.lists[[2]int{len(va.IDs), k}]
	if !ok {
		lists = allLists(len(va.IDs), k)
		a.lists[[2]int{len(va.IDs), k}] = lists
	}
	pa, ok := a.probsG[[2]int{int(u), k}]
	if !ok {
		if pa, err = listLogProbs(a.sampler, a.cfg.Eps, va, lists); err != nil {
			return 0, 0, err
		}
		a.probsG[[2]int{int(u), k}] = pa
	}
	pb, err := listLogProbs(a.sampler, a.cfg.Eps, vb, lists)
	if err != nil {
		return 0, 0, err
	}
	for i := range lists {
		switch {
		case math.IsInf(pa[i], -1) && math.IsInf(pb[i], -1):
		case math.IsInf(pa[i], -1) || math.IsInf(pb[i], -1):
			worst = InfRatio
		default:
			worst = max(worst, math.Abs(pa[i]-pb[i]))
		}
	}
	return worst, bound, nil
}
