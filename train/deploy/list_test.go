package deploy

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

// TrainList reads only invariant data: training on a neighbouring graph
// (one protected pair toggled) gives the same model under either unit; the
// unit and eps are recorded and shape the fit. Bad specs are refused.
func TestTrainListInvariant(t *testing.T) {
	lg, err := gen.Latent(400, 2, 0.08, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	g := lg.Graph
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	pairs := p.Pairs()
	e := pairs[len(pairs)/2]
	g2, err := protect.Toggle(g, e.U, []int32{e.V})
	if err != nil {
		t.Fatal(err)
	}
	if g2.M() == g.M() {
		t.Fatal("toggle did not change the graph")
	}
	enc := func(m *model.Model) string {
		m.Meta.Created, m.Meta.Data = time.Time{}, ""
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ctx := context.Background()
	for _, unit := range []privunit.Unit{privunit.Pair, privunit.Party} {
		spec := ListSpec{Score: "aa", Unit: unit, Eps: 1, Seed: 5}
		m1, _, err := TrainList(ctx, g, p, spec)
		if err != nil {
			t.Fatal(err)
		}
		if m1.PrivacyUnit() != unit || m1.List.Eps != 1 || m1.List.FitK != 30 || m1.Meta.Data != protect.Fingerprint(g, p) {
			t.Fatalf("model %+v %+v", m1, m1.List)
		}
		m2, _, err := TrainList(ctx, g2, p, spec)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := enc(m1), enc(m2); a != b {
			t.Fatalf("unit %v: neighbouring graphs trained different models:\n%s\n%s", unit, a, b)
		}
		// Negative control: another seed changes the fit data.
		spec.Seed = 6
		m3, _, err := TrainList(ctx, g, p, spec)
		if err != nil {
			t.Fatal(err)
		}
		if enc(m3) == enc(m1) {
			t.Fatal("seed does not reach the model: the invariance check cannot fail")
		}
	}
	for _, bad := range []ListSpec{
		{Score: "node2vec", Eps: 1},
		{Score: "aa", Eps: 0},
		{Score: "aa", Eps: 1, Unit: privunit.Unit(5)},
		{Score: "aa", Eps: 1, K: -1},
	} {
		if _, _, err := TrainList(ctx, g, p, bad); err == nil {
			t.Fatalf("spec %+v accepted", bad)
		}
	}
}

// meanPublic averages the public score on the public graph over exactly the
// labelled pairs it is given (positive scores only): brute force over the
// pairs agrees, and a population of all candidates gives another number
// (the mistake it replaced: that population made the scale about 1).
func TestMeanPublicLabelledPairs(t *testing.T) {
	lg, err := gen.Latent(300, 2, 0.1, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	g := lg.Graph
	p, err := protect.Synthetic(g, 0.4, 0, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Sample(g, p, SampleConfig{}, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	pub := p.Public(g)
	qids := pr.Queries[:min(40, len(pr.Queries))]
	labelled := func(j int) (pos, neg []int32) { return pr.Pos[j], pr.Neg[j] }
	for _, kind := range []score.Kind{score.CN, score.AA} {
		got, err := meanPublic(pub, p, kind, qids, labelled)
		if err != nil {
			t.Fatal(err)
		}
		var sum, all float64
		var n, nall int
		for j, q := range qids {
			pos, neg := labelled(j)
			for _, v := range append(append([]int32(nil), pos...), neg...) {
				if x := bruteTriad(pub, kind, q, v); x > 0 {
					sum += x
					n++
				}
			}
			for v := int32(0); v < int32(pub.N()); v++ {
				if v != q && !pub.HasEdge(q, v) {
					if x := bruteTriad(pub, kind, q, v); x > 0 {
						all += x
						nall++
					}
				}
			}
		}
		if n == 0 || nall == 0 {
			t.Fatalf("%v: no positive score among %d queries", kind, len(qids))
		}
		if want := sum / float64(n); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%v: meanPublic %v, brute force over the labelled pairs %v", kind, got, want)
		}
		if other := all / float64(nall); math.Abs(got-other) < 1e-3*other {
			t.Errorf("%v: labelled-pair mean %v equals the all-candidate mean %v: the test cannot tell the populations apart", kind, got, other)
		}
	}
}

// bruteTriad is CN or AA of (u, v) on g from the definition.
func bruteTriad(g *graph.Graph, kind score.Kind, u, v int32) float64 {
	var s float64
	for _, w := range g.Neighbors(u) {
		if w == v || !g.HasEdge(w, v) {
			continue
		}
		switch kind {
		case score.CN:
			s++
		case score.AA:
			s += 1 / math.Log(float64(g.Degree(w)))
		}
	}
	return s
}
