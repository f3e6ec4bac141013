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

// pairListModel trains and saves a pair-unit dplp-list model (eps 0.75)
// for the fixture graph and returns its path.
func pairListModel(t *testing.T) string {
	t.Helper()
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
	return mp
}

// TestListModel: the service serves a pair-unit dplp-list model. Every fresh
// list costs its eps whatever K, the guarantee names the unit, and the
// refusal before sampling uses the per-list charge.
func TestListModel(t *testing.T) {
	mp := pairListModel(t)
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

// TestListModelPartyCap: a party-unit cap of eps (--user-budget-party)
// refuses the pair-unit lists whose party-unit cost eps x L1_party/L1_pair
// exceeds eps, while the own-unit cap (none) allows them; the budget
// endpoint reports the party-unit totals. Negative control: without the
// party cap the same lists are served and their party cost is above eps.
func TestListModelPartyCap(t *testing.T) {
	mp := pairListModel(t)
	g, _, err := graph.ReadFile(testFixture(t).graph)
	if err != nil {
		t.Fatal(err)
	}
	type budget struct {
		Spent          float64  `json:"spent"`
		PartySpent     *float64 `json:"party_spent"`
		PartyUnbounded int      `json:"party_unbounded"`
		PartyRemaining *float64 `json:"party_remaining"`
		PartyCap       *float64 `json:"party_cap"`
	}
	above := map[string]float64{} // users whose list costs more than eps under the party unit
	for _, partyCap := range []float64{0, 0.75} {
		s := newTestServer(t, func(c *Config) {
			c.ModelPath = mp
			c.UserBudget = math.Inf(1)
			c.UserPartyBudget = partyCap
		})
		refused := 0
		for i := range g.N() {
			user := g.Label(int32(i))
			tok := s.token(user)
			r := s.do("POST", "/v1/users/"+user+"/recommendations?k=5", tok, "")
			var b budget
			br := s.do("GET", "/v1/users/"+user+"/budget", tok, "")
			br.json(t, &b)
			if b.PartySpent == nil || b.PartyUnbounded != 0 {
				t.Fatalf("%s: budget %s", user, br.body)
			}
			switch {
			case partyCap == 0 && r.status == 200:
				if b.PartyCap != nil || b.PartyRemaining != nil || *b.PartySpent < b.Spent {
					t.Fatalf("%s without a party cap: budget %s", user, br.body)
				}
				if *b.PartySpent > b.Spent {
					above[user] = *b.PartySpent
				}
			case partyCap > 0 && r.status == 200:
				if _, ok := above[user]; ok {
					t.Fatalf("%s: list of party cost %v served under the party cap %v", user, above[user], partyCap)
				}
				if b.PartyCap == nil || *b.PartyCap != partyCap || *b.PartySpent > partyCap || b.PartyRemaining == nil {
					t.Fatalf("%s under the party cap: budget %s", user, br.body)
				}
			case partyCap > 0 && r.status == BudgetExhaustedStatus:
				if _, ok := above[user]; !ok || !strings.Contains(string(r.body), "party unit") {
					t.Fatalf("%s refused: %s", user, r.body)
				}
				if *b.PartySpent != 0 || b.Spent != 0 {
					t.Fatalf("%s refused but charged: %s", user, br.body)
				}
				refused++
			default:
				t.Fatalf("%s (party cap %v): %d %s", user, partyCap, r.status, r.body)
			}
		}
		if partyCap == 0 && len(above) == 0 {
			t.Fatal("no list costs more under the party unit: the fixture does not discriminate")
		}
		if partyCap > 0 && refused != len(above) {
			t.Fatalf("%d refused, %d lists above the party cap", refused, len(above))
		}
	}
}
