package serve

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/train/deploy"
)

// TestListModel: the service serves a pair-unit dplp-list model. Every fresh
// list costs its eps whatever K, the guarantee names the unit, and the
// refusal before sampling uses the per-list charge.
func TestListModel(t *testing.T) {
	fx := testFixture(t)
	g, _, err := graph.ReadFile(fx.graph)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.ReadFile(fx.prot, g)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := deploy.TrainList(context.Background(), g, p, deploy.ListSpec{Score: "cn", Unit: privunit.Pair, Eps: 0.75, K: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(t.TempDir(), "list.json")
	if err := model.Save(mp, m); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, func(c *Config) { c.ModelPath = mp; c.UserBudget = 2 * 0.75 }) // two lists
	tok := s.token("n9")
	var costs []float64
	for _, k := range []int{3, 15} {
		r := s.do("POST", "/v1/users/n9/recommendations?k="+map[int]string{3: "3", 15: "15"}[k], tok, "")
		if r.status != 200 {
			t.Fatalf("k %d: %d %s", k, r.status, r.body)
		}
		var resp recsResponse
		r.json(t, &resp)
		if len(resp.Recommendations) != k || !strings.Contains(resp.Guarantee, "pair") {
			t.Fatalf("k %d: %d recommendations, guarantee %q", k, len(resp.Recommendations), resp.Guarantee)
		}
		costs = append(costs, resp.Cost)
	}
	// The fitted combination reads the evidence (W > 0 on this fixture), so
	// each list costs eps, whatever K.
	for _, c := range costs {
		if math.Abs(c-0.75) > 1e-12 {
			t.Fatalf("list costs %v, want 0.75 each whatever K", costs)
		}
	}
	r := s.do("POST", "/v1/users/n9/recommendations?k=20", tok, "")
	if r.status != BudgetExhaustedStatus || !strings.Contains(string(r.body), "costs up to eps 0.75") {
		t.Fatalf("third list: %d %s", r.status, r.body)
	}
}
