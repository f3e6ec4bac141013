package release_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/release"
)

// checkSeededResult fails unless r is marked seeded and its guarantee
// promises nothing.
func checkSeededResult(t *testing.T, what string, r release.Result) {
	t.Helper()
	g := r.Guarantee
	if !r.Seeded || g.Text != release.SeededText || g.Eps != 0 || g.Rho != 0 ||
		strings.Contains(g.Text, "protected-pair DP") || !strings.Contains(g.Text, "NO privacy guarantee") {
		t.Fatalf("%s: seeded result %+v", what, r)
	}
}

// checkPrivateResult fails unless r is a private list with a DP guarantee.
func checkPrivateResult(t *testing.T, what string, r release.Result) {
	t.Helper()
	if r.Err != nil || r.Seeded || !strings.Contains(r.Guarantee.Text, "protected-pair DP") || strings.Contains(r.Guarantee.Text, "NO privacy") {
		t.Fatalf("%s: private result %+v", what, r)
	}
}

// A store holding seeded releases never yields them to the Go API with
// crypto noise: not through the sticky lookup, not through the automatic
// sticky key, not through a caller's idempotency key. A seeded run still
// re-serves its own seeded lists, with no guarantee.
func TestProvenanceNeverMixes(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	st := openStore(t)
	const k = 6
	user := g.Label(7)

	seeded, err := release.New(m, g, p, release.WithSeed(1), release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	if seeded.Provenance() != ledger.Seeded {
		t.Fatalf("seeded Recommender has provenance %v", seeded.Provenance())
	}
	s1, err := seeded.Recommend(ctx, []string{user}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkSeededResult(t, "seeded fresh", s1[0])
	if !s1[0].Fresh || s1[0].Cost <= 0 || s1[0].ReleaseID == 0 {
		t.Fatalf("seeded list not charged: %+v", s1[0])
	}
	// Negative control: the seeded list is there to be re-served to a
	// seeded request.
	s2, err := seeded.Recommend(ctx, []string{user}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkSeededResult(t, "seeded re-served", s2[0])
	if s2[0].Fresh || s2[0].ReleaseID != s1[0].ReleaseID {
		t.Fatalf("seeded run did not re-serve its list: %+v", s2[0])
	}

	private, err := release.New(m, g, p, release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	if private.Provenance() != ledger.Crypto {
		t.Fatalf("crypto Recommender has provenance %v", private.Provenance())
	}
	p1, err := private.Recommend(ctx, []string{user}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivateResult(t, "private first", p1[0])
	if !p1[0].Fresh || p1[0].ReleaseID == s1[0].ReleaseID || p1[0].Cost <= 0 {
		t.Fatalf("private request got the seeded release: %+v (seeded %d)", p1[0], s1[0].ReleaseID)
	}
	p2, err := private.Recommend(ctx, []string{user}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivateResult(t, "private again", p2[0])
	if p2[0].Fresh || p2[0].ReleaseID != p1[0].ReleaseID {
		t.Fatalf("private list not re-served: %+v", p2[0])
	}
	// A newer seeded list (--fresh) does not shadow the private one.
	seededFresh, err := release.New(m, g, p, release.WithSeed(2), release.WithStore(st), release.WithFresh(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seededFresh.Recommend(ctx, []string{user}, k); err != nil {
		t.Fatal(err)
	}
	p3, err := private.Recommend(ctx, []string{user}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivateResult(t, "private after a newer seeded list", p3[0])
	if p3[0].ReleaseID != p1[0].ReleaseID {
		t.Fatalf("private request got release %d, want its own %d", p3[0].ReleaseID, p1[0].ReleaseID)
	}

	// A caller's idempotency key used by a seeded run first.
	user2 := g.Label(11)
	sk, _ := release.New(m, g, p, release.WithSeed(3), release.WithStore(st), release.WithFresh(true), release.WithIdempotencyKey("req-1"))
	pk, _ := release.New(m, g, p, release.WithStore(st), release.WithFresh(true), release.WithIdempotencyKey("req-1"))
	a, err := sk.Recommend(ctx, []string{user2}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkSeededResult(t, "seeded under a key", a[0])
	b, err := pk.Recommend(ctx, []string{user2}, k)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivateResult(t, "private under the seeded run's key", b[0])
	if !b[0].Fresh || b[0].ReleaseID == a[0].ReleaseID {
		t.Fatalf("the key gave the private request the seeded list: %+v", b[0])
	}

	// A whole batch (Stream, every user): with every user holding a seeded
	// list, a private batch releases and charges a private list to each.
	users := allUsers(g)[:300]
	if err := seeded.Stream(ctx, users, 3, func(int, release.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = private.Stream(ctx, users, 3, func(_ int, r release.Result) error {
		checkPrivateResult(t, "private batch", r)
		if !r.Fresh {
			t.Errorf("user %s: re-served %d, want a fresh private list", r.User, r.ReleaseID)
		}
		n++
		return nil
	})
	if err != nil || n != len(users) {
		t.Fatalf("private batch: %d results, %v", n, err)
	}
}

// The Recommender refuses a store that breaks the contract and answers a
// request with a release of the other provenance (last line of defence).
func TestProvenanceCheckedAfterStore(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	st := openStore(t)
	user := g.Label(3)
	seeded, _ := release.New(m, g, p, release.WithSeed(1), release.WithStore(st))
	if _, err := seeded.Recommend(ctx, []string{user}, 4); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		store ledger.Store
	}{
		{"lookup", mixingStore{Store: st, lookup: true}},
		{"charge", mixingStore{Store: st, charge: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := release.New(m, g, p, release.WithStore(c.store))
			if err != nil {
				t.Fatal(err)
			}
			res, err := rec.Recommend(ctx, []string{user}, 4)
			if err == nil || !strings.Contains(err.Error(), "seeded release") {
				t.Fatalf("mixing store accepted: %+v %v", res, err)
			}
		})
	}
	// Negative control: the honest store serves a private list.
	rec, _ := release.New(m, g, p, release.WithStore(st))
	res, err := rec.Recommend(ctx, []string{user}, 4)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivateResult(t, "honest store", res[0])
}

// mixingStore is a broken ledger.Store that ignores provenance: lookup
// answers LatestBatch with seeded releases, charge answers ChargeBatch with
// the newest seeded release of the user.
type mixingStore struct {
	ledger.Store
	lookup, charge bool
}

func (s mixingStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error) {
	if s.lookup {
		prov = ledger.Seeded
	}
	return s.Store.LatestBatch(ctx, users, model, k, prov)
}

func (s mixingStore) ChargeBatch(ctx context.Context, rs []ledger.Release, c ledger.Cap) ([]ledger.ChargeResult, error) {
	if !s.charge {
		return s.Store.ChargeBatch(ctx, rs, c)
	}
	out := make([]ledger.ChargeResult, len(rs))
	for i, r := range rs {
		old, ok, err := s.Store.Latest(ctx, r.User, r.Model, r.K, ledger.Seeded)
		if err != nil || !ok {
			return nil, err
		}
		out[i] = ledger.ChargeResult{Release: old}
	}
	return out, nil
}
