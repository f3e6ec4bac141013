package deploy

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
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
