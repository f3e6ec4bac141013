package ledger

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// seededRelease is testRelease marked seeded (research noise).
func seededRelease(user, tag string, cost float64) Release {
	r := testRelease(user, tag, cost)
	r.Seeded = true
	return r
}

// Re-serve lookups and idempotency keys never cross provenances: a store
// holding a seeded release never yields it to a crypto (private) request,
// through Latest, LatestBatch or an idempotency key (the release package's
// automatic sticky key included), and a seeded request still re-serves its
// own seeded lists.
func TestProvenanceNeverMixes(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		const sticky = "sticky:test-model:k=4"
		seed := seededRelease("u", "seeded", 0.5)
		seed.IdemKey = sticky
		sr, fresh, err := s.Charge(ctx, seed, Unlimited)
		if err != nil || !fresh || !sr.Seeded || sr.Provenance() != Seeded {
			t.Fatalf("seeded charge: %+v %v %v", sr, fresh, err)
		}
		model, k := seed.Model, seed.K

		// Negative control: the seeded release is there for seeded lookups.
		if got, ok, err := s.Latest(ctx, "u", model, k, Seeded); err != nil || !ok || got.ID != sr.ID {
			t.Fatalf("Latest(Seeded) = %+v %v %v, want release %d", got, ok, err, sr.ID)
		}
		if got, err := s.LatestBatch(ctx, []string{"u"}, model, k, Seeded); err != nil || got["u"].ID != sr.ID {
			t.Fatalf("LatestBatch(Seeded) = %+v %v", got, err)
		}
		// A private request sees nothing to re-serve.
		if got, ok, err := s.Latest(ctx, "u", model, k, Crypto); err != nil || ok {
			t.Fatalf("Latest(Crypto) returned the seeded release: %+v %v %v", got, ok, err)
		}
		if got, err := s.LatestBatch(ctx, []string{"u"}, model, k, Crypto); err != nil || len(got) != 0 {
			t.Fatalf("LatestBatch(Crypto) returned %+v %v", got, err)
		}

		// The same (sticky) key on a private request: a fresh private
		// release, charged, never the seeded list.
		priv := testRelease("u", "private", 0.25)
		priv.IdemKey = sticky
		pr, fresh, err := s.Charge(ctx, priv, Unlimited)
		if err != nil || !fresh || pr.Seeded || pr.ID == sr.ID || !reflect.DeepEqual(pr.List, priv.List) {
			t.Fatalf("private charge under the seeded run's key: %+v fresh=%v %v", pr, fresh, err)
		}
		// Each key now answers its own provenance.
		if got, fresh, err := s.Charge(ctx, priv, Unlimited); err != nil || fresh || got.ID != pr.ID {
			t.Fatalf("private replay: %+v %v %v, want release %d", got, fresh, err, pr.ID)
		}
		if got, fresh, err := s.Charge(ctx, seed, Unlimited); err != nil || fresh || got.ID != sr.ID || !got.Seeded {
			t.Fatalf("seeded replay: %+v %v %v, want release %d", got, fresh, err, sr.ID)
		}
		// A newer seeded release does not hide the private one from private
		// lookups, and is what seeded lookups see.
		newer, _, err := s.Charge(ctx, seededRelease("u", "newer", 0.125), Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.Latest(ctx, "u", model, k, Crypto); err != nil || !ok || got.ID != pr.ID || got.Seeded {
			t.Fatalf("Latest(Crypto) after a newer seeded release: %+v %v %v, want %d", got, ok, err, pr.ID)
		}
		if got, ok, err := s.Latest(ctx, "u", model, k, Seeded); err != nil || !ok || got.ID != newer.ID {
			t.Fatalf("Latest(Seeded) = %+v %v %v, want %d", got, ok, err, newer.ID)
		}
		if got, err := s.LatestBatch(ctx, []string{"u", "nobody"}, model, k, Crypto); err != nil || len(got) != 1 || got["u"].ID != pr.ID {
			t.Fatalf("LatestBatch(Crypto) = %+v %v", got, err)
		}
		// Both charges count: seeded runs spend the user's budget too.
		if sp, err := s.Budget(ctx, "u"); err != nil || sp.Releases != 3 || sp.Seeded != 2 || sp.Spent != 0.875 {
			t.Fatalf("budget %+v %v", sp, err)
		}

		// Within one batch: a seeded and a private item with one key are
		// two releases; duplicates of each provenance share theirs.
		a, b := seededRelease("v", "s", 0.5), testRelease("v", "p", 0.5)
		a.IdemKey, b.IdemKey = "once", "once"
		res, err := s.ChargeBatch(ctx, []Release{a, b, a, b}, Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		if !res[0].Fresh || !res[1].Fresh || res[2].Fresh || res[3].Fresh {
			t.Fatalf("batch fresh flags %v %v %v %v", res[0].Fresh, res[1].Fresh, res[2].Fresh, res[3].Fresh)
		}
		if !res[0].Release.Seeded || res[1].Release.Seeded || res[2].Release.ID != res[0].Release.ID || res[3].Release.ID != res[1].Release.ID || res[0].Release.ID == res[1].Release.ID {
			t.Fatalf("batch releases %+v", res)
		}
		for i, r := range res {
			if r.Release.Seeded != []bool{true, false, true, false}[i] {
				t.Errorf("item %d: seeded=%v", i, r.Release.Seeded)
			}
		}

		// Unknown provenance values are invalid, not a silent "any".
		if _, _, err := s.Latest(ctx, "u", model, k, Provenance(7)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Latest(Provenance(7)): %v", err)
		}
		if _, err := s.LatestBatch(ctx, []string{"u"}, model, k, Provenance(7)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("LatestBatch(Provenance(7)): %v", err)
		}
	})
}

// A store written before provenance-aware keys (schema 3: keys unique per
// user) that holds a seeded sticky release is migrated so that a private
// request under the same key gets its own private list.
func TestProvenanceMigration(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		old, err := openAt(ctx, dsn, 3, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		seed := seededRelease("u", "old-seeded", 0.5)
		seed.IdemKey = "sticky:test-model:k=4"
		sr, _, err := old.Charge(ctx, seed, Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		// Negative control: at schema 3 the key is taken for every
		// provenance (the unique index refuses a second release).
		priv := testRelease("u", "private", 0.25)
		priv.IdemKey = seed.IdemKey
		if _, _, err := old.Charge(ctx, priv, Unlimited); err == nil {
			t.Fatal("schema 3 accepted a second release under one (user, key)")
		}
		old.Close()

		s := openDSN(t, dsn)
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema || LatestSchema < 4 {
			t.Fatalf("schema %d %v", v, err)
		}
		pr, fresh, err := s.Charge(ctx, priv, Unlimited)
		if err != nil || !fresh || pr.Seeded || pr.ID == sr.ID {
			t.Fatalf("private charge after migration: %+v %v %v", pr, fresh, err)
		}
		if got, ok, err := s.Latest(ctx, "u", seed.Model, seed.K, Crypto); err != nil || !ok || got.ID != pr.ID {
			t.Fatalf("Latest(Crypto) = %+v %v %v", got, ok, err)
		}
		if got, fresh, err := s.Charge(ctx, seed, Unlimited); err != nil || fresh || got.ID != sr.ID {
			t.Fatalf("seeded replay after migration: %+v %v %v", got, fresh, err)
		}
		// Keys stay unique within a provenance.
		if err := s.(*sqlStore).b.write(ctx, func(q querier) error {
			return q.exec(ctx, `INSERT INTO releases (user_id, model, k, list, eps_p, cost, rho, seeded, idem_key, created, influencers)
				VALUES ('u', 'm', 1, '[]', 0, 0, 0, 1, ?, ?, '[]')`, seed.IdemKey, fmtTime(sr.Time))
		}); err == nil {
			t.Fatal("a second seeded release under one (user, key) was accepted")
		}
	})
}

func TestProvenanceString(t *testing.T) {
	for _, c := range []struct {
		p    Provenance
		want string
	}{{Crypto, "crypto"}, {Seeded, "seeded"}, {ProvenanceOf(true), "seeded"}, {ProvenanceOf(false), "crypto"}, {Provenance(9), "Provenance(9)"}} {
		if got := fmt.Sprint(c.p); got != c.want {
			t.Errorf("%d: %q, want %q", uint8(c.p), got, c.want)
		}
	}
}
