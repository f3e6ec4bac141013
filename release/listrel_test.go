package release_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// listModel is a dplp-list model for the fixture graph (the default
// posterior combination, so every list with evidence reads it).
func listModel(t *testing.T, unit privunit.Unit, eps float64) *model.Model {
	t.Helper()
	g, p, _ := fixture(t)
	rho := list.PriorRho(p.Public(g), p)
	m, err := model.CompileList("aa", unit, model.ListSpec{Eps: eps, Evidence: "cn", Combine: *list.DefaultPosterior(rho).Default,
		Rho: rho, FitK: 30, PubScale: 1, EvScale: 1}, model.Info{Dataset: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func openLedger(t *testing.T) ledger.Store {
	t.Helper()
	st, err := ledger.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A dplp-list list costs its eps whatever K (one charge per list, 0 when it
// reads no evidence), the ledger row records the unit, and the guarantee
// says the unit and the group-privacy cost. Negative control: the per-pick
// model's cost grows with K.
func TestListReleaseCostPerList(t *testing.T) {
	g, p, pm := fixture(t)
	ctx := context.Background()
	users := allUsers(g)[:120]
	for _, tc := range []struct {
		unit privunit.Unit
		eps  float64
	}{{privunit.Pair, 1}, {privunit.Party, 3}} {
		m := listModel(t, tc.unit, tc.eps)
		st := openLedger(t)
		rec, err := release.New(m, g, p, release.WithStore(st))
		if err != nil {
			t.Fatal(err)
		}
		if !rec.ListLevel() || rec.Unit() != tc.unit || rec.EpsList() != tc.eps {
			t.Fatalf("recommender: list %v unit %v eps %v", rec.ListLevel(), rec.Unit(), rec.EpsList())
		}
		costs := map[int][]float64{}
		for _, k := range []int{5, 30} {
			labels := make([]string, len(users))
			for i, u := range users {
				labels[i] = g.Label(u)
			}
			res, err := rec.Recommend(ctx, labels, k)
			if err != nil {
				t.Fatal(err)
			}
			noisy := 0
			for _, r := range res {
				if !r.Fresh || r.Seeded || len(r.List) != min(k, r.Candidates) {
					t.Fatalf("k=%d user %s: fresh %v seeded %v list %d of %d", k, r.User, r.Fresh, r.Seeded, len(r.List), r.Candidates)
				}
				if r.Cost != 0 && r.Cost != tc.eps {
					t.Fatalf("k=%d user %s: cost %v, want 0 or eps %v", k, r.User, r.Cost, tc.eps)
				}
				if r.Guarantee.Unit != tc.unit.String() || r.Guarantee.EpsList != tc.eps {
					t.Fatalf("guarantee %+v", r.Guarantee)
				}
				if r.Cost > 0 {
					noisy++
					want := accountant.PureList(tc.eps)
					if r.Guarantee.Eps != want.Eps || r.Guarantee.Rho != want.Rho || !strings.Contains(r.Guarantee.Text, "under the "+tc.unit.String()+" unit") {
						t.Fatalf("guarantee %+v", r.Guarantee)
					}
					if tc.unit == privunit.Pair && !strings.Contains(r.Guarantee.Text, "under the party unit ") {
						t.Fatalf("pair-unit text without its party-unit cost: %q", r.Guarantee.Text)
					}
				}
				costs[k] = append(costs[k], r.Cost)
				rel, ok, err := st.Latest(ctx, r.User, rec.ModelID(), k, ledger.Crypto)
				if err != nil || !ok || rel.Unit != tc.unit || rel.Cost != r.Cost || rel.ID != r.ReleaseID {
					t.Fatalf("ledger row %+v %v %v", rel, ok, err)
				}
			}
			if noisy == 0 {
				t.Fatalf("k=%d: no list read the evidence", k)
			}
		}
		// Same users, same data: the list's cost does not depend on K.
		if !slices.Equal(costs[5], costs[30]) {
			t.Fatalf("costs differ between K = 5 and K = 30")
		}
		// Re-serve: free, same guarantee unit.
		again, err := rec.Recommend(ctx, []string{g.Label(users[0])}, 5)
		if err != nil || again[0].Fresh || again[0].Cost != 0 || again[0].Guarantee.Unit != tc.unit.String() {
			t.Fatalf("re-serve %+v %v", again, err)
		}
		us, err := st.(ledger.UnitSpender).SpendByUnit(ctx)
		if err != nil || len(us) != 1 || us[0].Unit != tc.unit {
			t.Fatalf("spend by unit %+v %v", us, err)
		}
	}
	// Negative control: the per-pick model charges per pick.
	rec, err := release.New(pm, g, p, release.WithStore(openLedger(t)))
	if err != nil {
		t.Fatal(err)
	}
	var c5, c30 float64
	for _, k := range []int{5, 30} {
		res, err := rec.Recommend(ctx, []string{g.Label(users[1])}, k)
		if err != nil {
			t.Fatal(err)
		}
		if k == 5 {
			c5 = res[0].Cost
		} else {
			c30 = res[0].Cost
		}
		if res[0].Guarantee.Unit != "party" {
			t.Fatalf("per-pick guarantee unit %q", res[0].Guarantee.Unit)
		}
	}
	if !(c30 > c5) {
		t.Fatalf("per-pick costs %v (K=5) and %v (K=30): the control does not discriminate", c5, c30)
	}
}

// Seeded dplp-list lists are byte-identical across runs and Recommenders,
// marked seeded with SeededText, and charged as crypto lists; another seed
// gives other lists (negative control).
func TestListReleaseSeeded(t *testing.T) {
	g, p, _ := fixture(t)
	m := listModel(t, privunit.Pair, 1)
	users := allUsers(g)
	run := func(seed uint64) map[string][]string {
		rec, err := release.New(m, g, p, release.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		err = rec.Stream(context.Background(), users, 10, func(_ int, r release.Result) error {
			if !r.Seeded || r.Guarantee.Text != release.SeededText || r.Guarantee.Eps != 0 {
				t.Fatalf("seeded result %+v", r)
			}
			if r.Cost != 0 && r.Cost != 1 {
				t.Fatalf("seeded list charged %v", r.Cost)
			}
			out[r.User] = r.List
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	same, diff := true, 0
	for u, l := range a {
		same = same && slices.Equal(l, b[u])
		if !slices.Equal(l, c[u]) {
			diff++
		}
	}
	if !same {
		t.Fatal("seeded lists differ between runs")
	}
	if diff == 0 {
		t.Fatal("seeds 7 and 8 gave the same lists")
	}
	// The exact sampler is refused for list models.
	if _, err := release.New(m, g, p, release.WithSeed(1), release.WithExactSampler()); err == nil {
		t.Fatal("exact sampler accepted for a dplp-list model")
	}
}

// Every dplp-list release records its party-unit cost: eps for a
// party-unit model, eps x L1_party(u)/L1_pair(u) of the evidence score for
// a pair-unit one (0 for a free list); a party-unit cap refuses the lists
// whose party cost would exceed it although the own-unit cap allows them.
func TestListPartyCost(t *testing.T) {
	g, p, pm := fixture(t)
	ctx := context.Background()
	users := allUsers(g)[:120]
	labels := make([]string, len(users))
	for i, u := range users {
		labels[i] = g.Label(u)
	}
	ev, err := score.New(g, p, score.CN)
	if err != nil {
		t.Fatal(err)
	}
	wantParty := func(unit privunit.Unit, u int32, cost float64) float64 {
		if unit == privunit.Party || cost == 0 {
			return cost
		}
		return cost * max(1, ev.Evidence(u, privunit.Party).L1/ev.Evidence(u, privunit.Pair).L1)
	}
	var pairCosts []float64
	for _, tc := range []struct {
		name string
		m    *model.Model
		unit privunit.Unit
	}{{"pair list", listModel(t, privunit.Pair, 1), privunit.Pair}, {"party list", listModel(t, privunit.Party, 1), privunit.Party}, {"per-pick", pm, privunit.Party}} {
		t.Run(tc.name, func(t *testing.T) {
			st := openLedger(t)
			rec, err := release.New(tc.m, g, p, release.WithStore(st))
			if err != nil {
				t.Fatal(err)
			}
			res, err := rec.Recommend(ctx, labels, 10)
			if err != nil {
				t.Fatal(err)
			}
			above := 0
			for i, r := range res {
				rel, ok, err := st.Latest(ctx, r.User, rec.ModelID(), 10, ledger.Crypto)
				if err != nil || !ok {
					t.Fatalf("%s: %v %v", r.User, ok, err)
				}
				want := r.Cost
				if tc.m.Variant == model.VariantList {
					want = wantParty(tc.unit, users[i], r.Cost)
				}
				if math.Abs(rel.PartyCost-want) > 1e-12*want || rel.PartyCost < rel.Cost {
					t.Fatalf("%s: party cost %v, want %v (cost %v)", r.User, rel.PartyCost, want, rel.Cost)
				}
				if rel.PartyCost > rel.Cost {
					above++
				}
				if tc.unit == privunit.Pair {
					pairCosts = append(pairCosts, rel.PartyCost)
					// The guarantee states the recorded party-unit cost.
					if r.Cost > 0 && !strings.Contains(r.Guarantee.Text, fmt.Sprintf("under the party unit %g-DP", rel.PartyCost)) {
						t.Fatalf("%s: guarantee %q does not state the party cost %v", r.User, r.Guarantee.Text, rel.PartyCost)
					}
				}
			}
			if tc.unit == privunit.Pair && above == 0 {
				t.Fatal("no pair-unit list costs more under the party unit: the fixture does not discriminate")
			}
			if tc.unit == privunit.Party && above != 0 {
				t.Fatalf("%d party-unit releases with party cost above cost", above)
			}
		})
	}
	// The party cap: between the smallest and the largest party cost of a
	// pair-unit list; the own-unit cap (eps 1 per list) allows every list.
	slices.Sort(pairCosts)
	capP := pairCosts[len(pairCosts)-1] * 0.999
	if !(capP >= 1) {
		t.Fatalf("party costs %v", pairCosts)
	}
	st := openLedger(t)
	rec, err := release.New(listModel(t, privunit.Pair, 1), g, p, release.WithStore(st),
		release.WithCap(ledger.Cap{Eps: 1, Rho: math.Inf(1), PartyEps: capP}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rec.Recommend(ctx, labels, 10)
	var refusedErr *release.RefusedError
	if err != nil && !errors.As(err, &refusedErr) {
		t.Fatal(err)
	}
	refused := 0
	for i, r := range res {
		want := wantParty(privunit.Pair, users[i], 1)
		switch {
		case r.Err != nil:
			var be *ledger.BudgetError
			if !errors.As(r.Err, &be) || !be.PartyRefused() || !(want > capP) {
				t.Fatalf("%s refused (party cost %v, cap %v): %v", r.User, want, capP, r.Err)
			}
			refused++
		case r.Cost > 0 && want > capP:
			t.Fatalf("%s: list of party cost %v released under the party cap %v", r.User, want, capP)
		}
	}
	if refused == 0 {
		t.Fatal("the party cap refused nothing")
	}
	// Invalid party caps are refused.
	if _, err := release.New(pm, g, p, release.WithCap(ledger.Cap{Eps: 1, Rho: 1, PartyEps: math.NaN()})); err == nil {
		t.Fatal("NaN party cap accepted")
	}
}

// TestListTextParty: a pair-unit list states its party-unit cost when it
// is bounded, group privacy otherwise; a party-unit list states neither.
func TestListTextParty(t *testing.T) {
	ch := accountant.PureList(1)
	for _, tc := range []struct {
		unit  privunit.Unit
		party float64
		want  string
	}{
		{privunit.Pair, 7.5, "under the party unit 7.5-DP"},
		{privunit.Pair, math.Inf(1), "a party with m protected pairs gets m x 1"},
		{privunit.Party, 1, "any subset of one party's protected pairs (Definition 1)"},
	} {
		if got := release.ListText(ch, tc.unit, tc.party); !strings.Contains(got, tc.want) {
			t.Errorf("%v party %v: %q lacks %q", tc.unit, tc.party, got, tc.want)
		}
	}
}
