package release_test

import (
	"context"
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
					if tc.unit == privunit.Pair && !strings.Contains(r.Guarantee.Text, "a party with m protected pairs gets m x") {
						t.Fatalf("pair-unit text without group privacy: %q", r.Guarantee.Text)
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
