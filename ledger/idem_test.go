package ledger

import (
	"testing"
)

// TestFindIdem: a release is found by (user, key, provenance) only.
func TestFindIdem(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		f, ok := s.(IdemFinder)
		if !ok {
			t.Fatal("the SQL store does not implement IdemFinder")
		}
		r := testRelease("u1", "a", 0.5)
		r.IdemKey = "client:k1"
		stored, fresh, err := s.Charge(ctx, r, Unlimited)
		if err != nil || !fresh {
			t.Fatal(err)
		}
		for _, c := range []struct {
			user, key string
			prov      Provenance
			found     bool
		}{
			{"u1", "client:k1", Crypto, true},
			{"u1", "client:k2", Crypto, false},
			{"u2", "client:k1", Crypto, false},
			{"u1", "client:k1", Seeded, false},
			{"u1", "", Crypto, false},
		} {
			got, ok, err := f.FindIdem(ctx, c.user, c.key, c.prov)
			if err != nil || ok != c.found || (ok && got.ID != stored.ID) {
				t.Errorf("%+v: found %v (%v), id %d", c, ok, err, got.ID)
			}
		}
		if _, _, err := f.FindIdem(ctx, "u1", "client:k1", Provenance(9)); err == nil {
			t.Error("an unknown provenance was accepted")
		}
	})
}
