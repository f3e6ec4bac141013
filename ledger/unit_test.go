package ledger

import (
	"errors"
	"testing"

	"github.com/dplp/dplp/privunit"
)

// Every release records its privacy unit: a pair-unit release reads back as
// pair (Charge, Latest, LatestBatch, idempotent retries), a release without
// one as party, and SpendByUnit sums each unit separately.
func TestReleaseUnit(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		pair := testRelease("u", "pair", 1)
		pair.Unit, pair.IdemKey, pair.PartyCost = privunit.Pair, "client:1", 3
		party := testRelease("v", "party", 0.5)
		got, fresh, err := s.Charge(ctx, pair, Unlimited)
		if err != nil || !fresh || got.Unit != privunit.Pair || got.PartyCost != 3 {
			t.Fatalf("charge pair: %+v %v %v", got, fresh, err)
		}
		if got, _, err := s.Charge(ctx, party, Unlimited); err != nil || got.Unit != privunit.Party || got.PartyCost != 0.5 {
			t.Fatalf("charge party: %+v %v", got, err)
		}
		// Retry under the key: the stored release, with its unit.
		if again, fresh, err := s.Charge(ctx, pair, Unlimited); err != nil || fresh || again.Unit != privunit.Pair || again.PartyCost != 3 || again.ID != got.ID && again.ID == 0 {
			t.Fatalf("idempotent retry: %+v %v %v", again, fresh, err)
		}
		if l, ok, err := s.Latest(ctx, "u", pair.Model, pair.K, Crypto); err != nil || !ok || l.Unit != privunit.Pair || l.PartyCost != 3 {
			t.Fatalf("Latest: %+v %v %v", l, ok, err)
		}
		m, err := s.LatestBatch(ctx, []string{"u", "v"}, pair.Model, pair.K, Crypto)
		if err != nil || m["u"].Unit != privunit.Pair || m["v"].Unit != privunit.Party || m["u"].PartyCost != 3 || m["v"].PartyCost != 0.5 {
			t.Fatalf("LatestBatch: %+v %v", m, err)
		}
		us, err := s.(UnitSpender).SpendByUnit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []UnitSpend{{Unit: privunit.Party, Spent: 0.5, Rho: 0.125, Releases: 1, PartySpent: 0.5}, {Unit: privunit.Pair, Spent: 1, Rho: 0.5, Releases: 1, PartySpent: 3}}
		if len(us) != 2 || us[0] != want[0] || us[1] != want[1] {
			t.Fatalf("SpendByUnit = %+v, want %+v", us, want)
		}
		// Negative control: an unknown unit is refused, nothing recorded.
		bad := testRelease("w", "bad", 1)
		bad.Unit = privunit.Unit(7)
		if _, _, err := s.Charge(ctx, bad, Unlimited); !errors.Is(err, ErrInvalid) {
			t.Fatalf("unknown unit accepted: %v", err)
		}
		if sp, _ := s.Budget(ctx, "w"); sp.Releases != 0 {
			t.Fatalf("refused release recorded: %+v", sp)
		}
	})
}

// A store written before the unit column (schema 5) migrates with its
// releases read as party-unit.
func TestUnitMigration(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		old, err := openAt(ctx, dsn, 5, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := old.Charge(ctx, testRelease("u", "old", 1), Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		// Negative control: a pair-unit release cannot be recorded there.
		pr := testRelease("u", "pair", 1)
		pr.Unit, pr.PartyCost = privunit.Pair, Unbounded
		if _, _, err := old.Charge(ctx, pr, Unlimited); err == nil {
			t.Fatal("schema 5 store recorded a pair-unit release")
		}
		old.Close()
		s := openDSN(t, dsn)
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema || v < unitSchema {
			t.Fatalf("schema %d %v", v, err)
		}
		got, ok, err := s.Latest(ctx, "u", r.Model, r.K, Crypto)
		if err != nil || !ok || got.ID != r.ID || got.Unit != privunit.Party {
			t.Fatalf("old release after migration: %+v %v %v", got, ok, err)
		}
		if _, _, err := s.Charge(ctx, pr, Unlimited); err != nil {
			t.Fatal(err)
		}
		us, err := s.(UnitSpender).SpendByUnit(ctx)
		if err != nil || len(us) != 2 || us[0].Unit != privunit.Party || us[0].Releases != 1 || us[1].Unit != privunit.Pair || us[1].Releases != 1 {
			t.Fatalf("SpendByUnit = %+v %v", us, err)
		}
	})
}
