package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dplp/dplp/privunit"
)

var inf = math.Inf(1)

// pairRelease is a pair-unit release of cost and party cost pc.
func pairRelease(user, tag string, cost, pc float64) Release {
	r := testRelease(user, tag, cost)
	r.Unit, r.PartyCost = privunit.Pair, pc
	return r
}

// partyCapCase is one charge against a cap and what the ledger must do.
type partyCapCase struct {
	name string
	r    Release
	cap  Cap
	// partyRefused: refused by the party-unit cap (BudgetError naming the
	// party unit); ok: accepted. Neither: refused by another cap.
	ok, partyRefused bool
	// the user's totals after the charge
	spent, partySpent float64
	partyUnb          int
}

// partyCapCases run in order against one store: each case's totals include
// the accepted charges before it (users are separate where that matters).
var partyCapCases = []partyCapCase{
	// A pair-unit list of cost 1 whose party cost is 3: the own-unit cap 2
	// allows it, the party cap 2 refuses it.
	{name: "pair list over the party cap", r: pairRelease("a", "1", 1, 3), cap: Cap{Eps: 2, Rho: inf, PartyEps: 2}, partyRefused: true},
	{name: "same list, no party cap", r: pairRelease("a", "2", 1, 3), cap: Cap{Eps: 2, Rho: inf, PartyEps: inf}, ok: true, spent: 1, partySpent: 3},
	{name: "second list: own unit 2 <= 2 but party 6 > 5", r: pairRelease("a", "3", 1, 3), cap: Cap{Eps: 2, Rho: inf, PartyEps: 5}, partyRefused: true, spent: 1, partySpent: 3},
	{name: "second list within both caps", r: pairRelease("a", "4", 1, 3), cap: Cap{Eps: 2, Rho: inf, PartyEps: 6}, ok: true, spent: 2, partySpent: 6},
	{name: "own-unit cap refuses first", r: pairRelease("a", "5", 1, 1), cap: Cap{Eps: 2, Rho: inf, PartyEps: inf}, spent: 2, partySpent: 6},
	// Party-unit releases: party cost = cost.
	{name: "party release over the party cap", r: testRelease("b", "1", 1), cap: Cap{Eps: 10, Rho: inf, PartyEps: 0.5}, partyRefused: true},
	{name: "party release within", r: testRelease("b", "2", 1), cap: Cap{Eps: 10, Rho: inf, PartyEps: 1}, ok: true, spent: 1, partySpent: 1},
	// Unbounded party cost: refused under any finite party cap.
	{name: "unbounded under a finite party cap", r: pairRelease("c", "1", 0.1, inf), cap: Cap{Eps: 10, Rho: inf, PartyEps: 1e300}, partyRefused: true},
	{name: "unbounded without a party cap", r: pairRelease("c", "2", 0.1, inf), cap: Cap{Eps: 10, Rho: inf, PartyEps: inf}, ok: true, spent: 0.1, partyUnb: 1},
	{name: "user unbounded: a finite party cap refuses even a cheap party release", r: testRelease("c", "3", 0.01), cap: Cap{Eps: 10, Rho: inf, PartyEps: 1e300}, partyRefused: true, spent: 0.1, partyUnb: 1},
	{name: "user unbounded, no party cap", r: testRelease("c", "4", 0.5), cap: Cap{Eps: 10, Rho: inf, PartyEps: inf}, ok: true, spent: 0.6, partySpent: 0.5, partyUnb: 1},
	// A list of cost 0 costs 0 under the party unit too.
	{name: "free pair list under a zero party cap", r: pairRelease("d", "1", 0, 0), cap: Cap{Eps: 0, Rho: inf, PartyEps: 0}, ok: true},
}

// partyCapProblems runs partyCapCases against s and returns what went
// wrong (nothing for a correct store).
func partyCapProblems(ctx context.Context, s BudgetStore) ([]string, error) {
	var out []string
	for _, c := range partyCapCases {
		got, fresh, err := s.Charge(ctx, c.r, c.cap)
		var be *BudgetError
		switch {
		case c.ok && (err != nil || !fresh):
			out = append(out, fmt.Sprintf("%s: refused: %v", c.name, err))
		case !c.ok && err == nil:
			out = append(out, fmt.Sprintf("%s: accepted (party cost %v, cap %+v)", c.name, got.PartyCost, c.cap))
		case !c.ok && (!errors.As(err, &be) || !errors.Is(err, ErrBudgetExhausted)):
			return nil, fmt.Errorf("%s: %w", c.name, err)
		case !c.ok && be.PartyRefused() != c.partyRefused:
			out = append(out, fmt.Sprintf("%s: party refusal %v, want %v: %v", c.name, be.PartyRefused(), c.partyRefused, err))
		case !c.ok && c.partyRefused && !strings.Contains(err.Error(), "party unit"):
			out = append(out, fmt.Sprintf("%s: the error does not name the party unit: %v", c.name, err))
		case c.ok && got.PartyCost != c.r.PartyCost && !(c.r.Unit == privunit.Party && got.PartyCost == c.r.Cost):
			out = append(out, fmt.Sprintf("%s: recorded party cost %v", c.name, got.PartyCost))
		}
		sp, err := s.Budget(ctx, c.r.User)
		if err != nil {
			return nil, err
		}
		if math.Abs(sp.Spent-c.spent) > 1e-12 || math.Abs(sp.PartySpent-c.partySpent) > 1e-12 || sp.PartyUnbounded != c.partyUnb {
			out = append(out, fmt.Sprintf("%s: totals %+v, want spent %v, party %v, unbounded %d", c.name, sp, c.spent, c.partySpent, c.partyUnb))
		}
		if want := c.partySpent; c.partyUnb > 0 && !math.IsInf(sp.PartyTotal(), 1) || c.partyUnb == 0 && sp.PartyTotal() != want {
			out = append(out, fmt.Sprintf("%s: PartyTotal %v", c.name, sp.PartyTotal()))
		}
	}
	return out, nil
}

// The party-unit cap: a pair-unit list's party cost is charged and capped,
// an unbounded party cost is refused under a finite party cap, and the
// own-unit cap stays the sum of own-unit costs.
func TestPartyCap(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		probs, err := partyCapProblems(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probs {
			t.Error(p)
		}
		// Verify agrees with the totals; SpendByUnit sums party costs per unit.
		rep, err := Verify(ctx, s)
		if err != nil || !rep.OK() {
			t.Fatalf("verify: %v %v", rep.Err(), err)
		}
		us, err := s.(UnitSpender).SpendByUnit(ctx)
		if err != nil || len(us) != 2 {
			t.Fatalf("SpendByUnit %+v %v", us, err)
		}
		if us[0].PartySpent != 1.5 || us[0].PartyUnbounded != 0 || us[1].PartySpent != 6 || us[1].PartyUnbounded != 1 {
			t.Fatalf("SpendByUnit %+v", us)
		}
		// In a batch each item sees the party costs accepted before it.
		res, err := s.ChargeBatch(ctx, []Release{pairRelease("e", "1", 1, 2), pairRelease("e", "2", 1, 2), pairRelease("e", "3", 0.5, 0.5)}, Cap{Eps: 10, Rho: inf, PartyEps: 3})
		if err != nil {
			t.Fatal(err)
		}
		var be *BudgetError
		if res[0].Err != nil || !errors.As(res[1].Err, &be) || !be.PartyRefused() || res[2].Err != nil {
			t.Fatalf("batch: %v / %v / %v", res[0].Err, res[1].Err, res[2].Err)
		}
		if sp, _ := s.Budget(ctx, "e"); sp.Spent != 1.5 || sp.PartySpent != 2.5 {
			t.Fatalf("batch totals %+v", sp)
		}
	})
}

// ignorePartyCap is a broken store: it charges without the party cap.
type ignorePartyCap struct{ Store }

func (s ignorePartyCap) Charge(ctx context.Context, r Release, c Cap) (Release, bool, error) {
	c.PartyEps = inf
	return s.Store.Charge(ctx, r, c)
}

// Negative control: partyCapProblems catches a store that ignores the
// party-unit cap.
func TestPartyCapNegativeControl(t *testing.T) {
	ctx := ctxT(t)
	s := sqliteFixture.open(t)
	probs, err := partyCapProblems(ctx, ignorePartyCap{s})
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) == 0 {
		t.Fatal("a store that ignores the party cap passed the party-cap checks")
	}
	t.Logf("caught: %s", strings.Join(probs, "; "))
}

// PartyCost is validated: = Cost for party-unit releases (0 reads as
// Cost), >= Cost or +Inf for pair-unit ones.
func TestPartyCostValidation(t *testing.T) {
	s := sqliteFixture.open(t)
	ctx := ctxT(t)
	for _, tc := range []struct {
		name string
		r    Release
		ok   bool
	}{
		{"party, zero value", testRelease("u", "1", 1), true},
		{"party, = cost", func() Release { r := testRelease("u", "2", 1); r.PartyCost = 1; return r }(), true},
		{"party, != cost", func() Release { r := testRelease("u", "3", 1); r.PartyCost = 2; return r }(), false},
		{"pair, unset (0 < cost)", pairRelease("u", "4", 1, 0), false},
		{"pair, below cost", pairRelease("u", "5", 1, 0.5), false},
		{"pair, NaN", pairRelease("u", "6", 1, math.NaN()), false},
		{"pair, -Inf", pairRelease("u", "7", 1, math.Inf(-1)), false},
		{"pair, = cost", pairRelease("u", "8", 1, 1), true},
		{"pair, unbounded", pairRelease("u", "9", 1, inf), true},
		{"pair, free", pairRelease("u", "10", 0, 0), true},
	} {
		_, _, err := s.Charge(ctx, tc.r, Unlimited)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// A store written at schema 6 migrates: party-unit releases get party
// cost = cost, pair-unit ones an unbounded party cost, and the users'
// party totals are summed from them.
func TestPartyMigration(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		old, err := openAt(ctx, dsn, unitSchema, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		charge := func(s BudgetStore, r Release, c Cap) Release {
			t.Helper()
			got, _, err := s.Charge(ctx, r, c)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		p1 := charge(old, testRelease("u", "party", 1), Unlimited)
		pr := charge(old, pairRelease("u", "pair", 0.5, 0.5), Unlimited)
		charge(old, testRelease("v", "party", 2), Unlimited)
		old.Close()

		s := openDSN(t, dsn)
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema || v < partySchema {
			t.Fatalf("schema %d %v", v, err)
		}
		rs := releaseIDs(t, s)
		for _, tc := range []struct {
			id   int64
			want float64
		}{{p1.ID, 1}, {pr.ID, inf}} {
			if got := rs[tc.id]; got.PartyCost != tc.want {
				t.Errorf("release %d: party cost %v, want %v", tc.id, got.PartyCost, tc.want)
			}
		}
		for _, tc := range []struct {
			user  string
			spent float64
			unb   int
		}{{"u", 1, 1}, {"v", 2, 0}} {
			sp, err := s.Budget(ctx, tc.user)
			if err != nil || sp.PartySpent != tc.spent || sp.PartyUnbounded != tc.unb {
				t.Errorf("%s: %+v %v, want party %v unbounded %d", tc.user, sp, err, tc.spent, tc.unb)
			}
		}
		if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
			t.Fatalf("verify after migration: %v %v", rep.Err(), err)
		}
		// u's party total is unbounded: a finite party cap refuses u, not v.
		var be *BudgetError
		if _, _, err := s.Charge(ctx, testRelease("u", "new", 0.1), Cap{Eps: inf, Rho: inf, PartyEps: 100}); !errors.As(err, &be) || !be.PartyRefused() {
			t.Fatalf("u under a party cap: %v", err)
		}
		charge(s, testRelease("v", "new", 0.1), Cap{Eps: inf, Rho: inf, PartyEps: 100})
	})
}

// Verify checks party costs and party totals against the releases.
func TestVerifyParty(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		for _, tc := range []struct {
			edit, want string
		}{
			{"UPDATE spend SET party_spent = party_spent + 1 WHERE user_id = 'u'", "party-unit spent"},
			{"UPDATE spend SET party_unbounded = 2 WHERE user_id = 'u'", "party_unbounded"},
			{"UPDATE releases SET party_cost = 0.25 WHERE unit = 'pair'", "below its cost"},
			{"UPDATE releases SET party_cost = NULL WHERE unit = 'party'", "party cost"},
		} {
			t.Run(tc.want, func(t *testing.T) {
				s := fx.open(t).(*sqlStore)
				for _, r := range []Release{testRelease("u", "1", 1), pairRelease("u", "2", 0.5, 2), pairRelease("u", "3", 0.5, inf)} {
					if _, _, err := s.Charge(ctx, r, Unlimited); err != nil {
						t.Fatal(err)
					}
				}
				if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
					t.Fatalf("clean store: %v %v", rep.Err(), err)
				}
				if err := s.b.write(ctx, func(q querier) error { return q.exec(ctx, tc.edit) }); err != nil {
					t.Fatal(err)
				}
				rep, err := Verify(ctx, s)
				if err != nil || rep.OK() || !strings.Contains(rep.Err().Error(), tc.want) {
					t.Fatalf("%s: %v %v", tc.edit, rep.Err(), err)
				}
			})
		}
	})
}
