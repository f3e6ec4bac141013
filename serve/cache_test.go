package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dplp/dplp/ledger"
)

// countingStore records the users each LatestBatch asks the store for,
// and counts Budget reads.
type countingStore struct {
	ledger.Store
	mu      sync.Mutex
	asked   [][]string
	budgets int
}

func (s *countingStore) Budget(ctx context.Context, user string) (ledger.Spend, error) {
	s.mu.Lock()
	s.budgets++
	s.mu.Unlock()
	return s.Store.Budget(ctx, user)
}

func (s *countingStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error) {
	s.mu.Lock()
	s.asked = append(s.asked, slices.Clone(users))
	s.mu.Unlock()
	return s.Store.LatestBatch(ctx, users, model, k, prov)
}

// countingSQLite opens a SQLite ledger in a temporary directory, closed at
// cleanup, and a countingStore over it.
func countingSQLite(t *testing.T) (ledger.Store, *countingStore) {
	t.Helper()
	base, err := ledger.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	return base, &countingStore{Store: base}
}

// The release path's sticky lookups (LatestBatch) are served from the cache
// for lists charged or read through this process; only misses reach the
// store, and a list released by another process is seen once the entry
// expires.
func TestCacheLatestBatch(t *testing.T) {
	ctx := context.Background()
	base, cs := countingSQLite(t)
	const ttl = 20 * time.Millisecond
	c := newCacheStore(cs, ttl, 100, 1<<20)
	rel := func(u, item string) ledger.Release {
		return ledger.Release{User: u, Model: "m", K: 1, EpsP: 0.5, Cost: 0.5, List: []string{item}, Influencers: []string{"w"}}
	}
	if _, err := c.ChargeBatch(ctx, []ledger.Release{rel("a", "x"), rel("b", "y")}, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	if _, _, err := base.Charge(ctx, rel("c", "z"), ledger.Unlimited); err != nil { // another process
		t.Fatal(err)
	}
	got, err := c.LatestBatch(ctx, []string{"a", "b", "c", "nobody"}, "m", 1, ledger.Crypto)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["a"].List[0] != "x" || got["b"].List[0] != "y" || got["c"].List[0] != "z" {
		t.Fatalf("LatestBatch = %+v", got)
	}
	if len(cs.asked) != 1 || !slices.Equal(cs.asked[0], []string{"c", "nobody"}) {
		t.Fatalf("store asked for %v, want only the misses [c nobody]", cs.asked)
	}
	if got["c"].Influencers != nil {
		t.Fatalf("influencers leaked into a list response: %+v", got["c"])
	}
	// c is cached now; nobody (no list) is not.
	if _, err := c.LatestBatch(ctx, []string{"a", "c", "nobody"}, "m", 1, ledger.Crypto); err != nil {
		t.Fatal(err)
	}
	if len(cs.asked) != 2 || !slices.Equal(cs.asked[1], []string{"nobody"}) {
		t.Fatalf("store asked for %v, want [nobody] second", cs.asked)
	}
	// A newer list of a made elsewhere shows after the entry expires.
	if _, _, err := base.Charge(ctx, rel("a", "x2"), ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	time.Sleep(latestTTLFactor*ttl + 10*time.Millisecond)
	got, err = c.LatestBatch(ctx, []string{"a"}, "m", 1, ledger.Crypto)
	if err != nil || got["a"].List[0] != "x2" {
		t.Fatalf("after expiry: %+v %v, want the newer list x2", got, err)
	}
}

// Fresh charges through the cache update the cached budget exactly as the
// store does, without reading it again; an idempotent replay changes
// nothing.
func TestCacheBudgetFollowsCharges(t *testing.T) {
	ctx := context.Background()
	base, cs := countingSQLite(t)
	c := newCacheStore(cs, time.Hour, 100, 1<<20)
	if _, err := c.cachedBudget(ctx, "u"); err != nil { // caches zero totals
		t.Fatal(err)
	}
	costs := []float64{0.1, 0.2, 0.3, 1.0 / 3, 0.7}
	for i, cost := range costs {
		r := ledger.Release{User: "u", Model: "m", K: 1, EpsP: cost, Cost: cost, Rho: cost * cost / 2, List: []string{"x"}, IdemKey: fmt.Sprint(i)}
		if _, err := c.ChargeBatch(ctx, []ledger.Release{r, r}, ledger.Unlimited); err != nil { // the second is a replay
			t.Fatal(err)
		}
	}
	got, err := c.cachedBudget(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	want, err := base.Budget(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got.Releases != len(costs) {
		t.Fatalf("cached budget %+v, store %+v", got, want)
	}
	if cs.budgets != 1 {
		t.Fatalf("%d budget reads reached the store, want 1", cs.budgets)
	}
}

// Latest lists are cached per provenance: a seeded release charged or read
// through the cache never answers a crypto lookup, from memory or from the
// store.
func TestCacheKeepsProvenancesApart(t *testing.T) {
	ctx := context.Background()
	base, cs := countingSQLite(t)
	c := newCacheStore(cs, time.Hour, 100, 1<<20)
	rel := func(u, item string, seeded bool) ledger.Release {
		return ledger.Release{User: u, Model: "m", K: 1, EpsP: 0.5, Cost: 0.5, List: []string{item}, Seeded: seeded}
	}
	// a: seeded through the cache; b: seeded by another process, then read
	// through the cache (seeded lookup).
	if _, err := c.ChargeBatch(ctx, []ledger.Release{rel("a", "sa", true)}, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	if _, _, err := base.Charge(ctx, rel("b", "sb", true), ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	// Negative control: seeded lookups see both.
	got, err := c.LatestBatch(ctx, []string{"a", "b"}, "m", 1, ledger.Seeded)
	if err != nil || len(got) != 2 || got["a"].List[0] != "sa" || got["b"].List[0] != "sb" {
		t.Fatalf("LatestBatch(Seeded) = %+v %v", got, err)
	}
	for _, u := range []string{"a", "b"} {
		if r, ok, err := c.Latest(ctx, u, "m", 1, ledger.Crypto); ok || err != nil {
			t.Fatalf("Latest(%s, Crypto) = %+v %v %v, want none", u, r, ok, err)
		}
	}
	if got, err := c.LatestBatch(ctx, []string{"a", "b"}, "m", 1, ledger.Crypto); err != nil || len(got) != 0 {
		t.Fatalf("LatestBatch(Crypto) = %+v %v, want none", got, err)
	}
	// A private list charged for a: crypto lookups see it, seeded ones
	// still see the seeded list.
	if _, err := c.ChargeBatch(ctx, []ledger.Release{rel("a", "pa", false)}, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := c.Latest(ctx, "a", "m", 1, ledger.Crypto); err != nil || !ok || r.List[0] != "pa" || r.Seeded {
		t.Fatalf("Latest(a, Crypto) = %+v %v %v", r, ok, err)
	}
	if r, ok, err := c.Latest(ctx, "a", "m", 1, ledger.Seeded); err != nil || !ok || r.List[0] != "sa" || !r.Seeded {
		t.Fatalf("Latest(a, Seeded) = %+v %v %v", r, ok, err)
	}
}

// hookStore runs a hook inside Budget, after the store's read, and can
// refuse every charge as over a cap of 0.
type hookStore struct {
	ledger.Store
	mu      sync.Mutex
	budgets int
	inRead  func()
}

func (s *hookStore) Budget(ctx context.Context, user string) (ledger.Spend, error) {
	sp, err := s.Store.Budget(ctx, user)
	s.mu.Lock()
	s.budgets++
	h := s.inRead
	s.inRead = nil
	s.mu.Unlock()
	if h != nil {
		h()
	}
	return sp, err
}

func (s *hookStore) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgets
}

// The budget cache is written through, per user: a read that overlapped a
// charge of the same user (which may or may not be in it) is not cached, a
// read that overlapped another user's charge is; a refused charge drops
// the user's entry (the store's totals differ from the cache's), and the
// next read goes to the store and is exact. Clearing a full map does not
// forget that a read overlapped a charge.
func TestCacheBudgetPerUser(t *testing.T) {
	ctx := context.Background()
	rel := func(u, item string) ledger.Release {
		return ledger.Release{User: u, Model: "m", K: 1, EpsP: 0.5, Cost: 0.5, List: []string{item}}
	}
	for _, c := range []struct {
		name        string
		chargeUsers []string   // charged, in turn, while u's budget is being read
		cap         ledger.Cap // of those charges
		maxEntries  int
		wantCached  bool // u's read is cached
	}{
		{"same user", []string{"u"}, ledger.Unlimited, 100, false},
		{"other user", []string{"v"}, ledger.Unlimited, 100, true},
		{"same user refused", []string{"u"}, ledger.Cap{Eps: 0.1, Rho: math.Inf(1), PartyEps: math.Inf(1)}, 100, false},
		{"same user, map cleared after", []string{"u", "v", "w"}, ledger.Unlimited, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, _ := countingSQLite(t)
			hs := &hookStore{Store: base}
			cs := newCacheStore(hs, time.Hour, c.maxEntries, 1<<20)
			if _, _, err := base.Charge(ctx, rel("u", "a"), ledger.Unlimited); err != nil { // spent 0.5 before
				t.Fatal(err)
			}
			hs.inRead = func() {
				for _, u := range c.chargeUsers {
					if _, err := cs.ChargeBatch(ctx, []ledger.Release{rel(u, "b")}, c.cap); err != nil {
						t.Error(err)
					}
				}
			}
			if _, err := cs.cachedBudget(ctx, "u"); err != nil {
				t.Fatal(err)
			}
			got, err := cs.cachedBudget(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			want, err := base.Budget(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("cached budget %+v, store %+v", got, want)
			}
			if reads, wantReads := hs.reads(), map[bool]int{true: 1, false: 2}[c.wantCached]; reads != wantReads {
				t.Fatalf("%d budget reads reached the store, want %d", reads, wantReads)
			}
		})
	}
}

// A refused charge drops the user's cached budget, even a valid one: the
// store's totals were not what the cache held (here: charges made by
// another process), and the next read brings the store's.
func TestCacheBudgetRefusalRereads(t *testing.T) {
	ctx := context.Background()
	base, _ := countingSQLite(t)
	hs := &hookStore{Store: base}
	cs := newCacheStore(hs, time.Hour, 100, 1<<20)
	rel := func(item string) ledger.Release {
		return ledger.Release{User: "u", Model: "m", K: 1, EpsP: 1, Cost: 1, List: []string{item}}
	}
	if sp, err := cs.cachedBudget(ctx, "u"); err != nil || sp.Spent != 0 {
		t.Fatal(sp, err)
	}
	capOf2 := ledger.Cap{Eps: 2, Rho: math.Inf(1), PartyEps: math.Inf(1)}
	for _, item := range []string{"a", "b"} { // another process spends the cap
		if _, _, err := base.Charge(ctx, rel(item), capOf2); err != nil {
			t.Fatal(err)
		}
	}
	if sp, _ := cs.cachedBudget(ctx, "u"); sp.Spent != 0 {
		t.Fatalf("cached spend %v, want the stale 0 before any refusal", sp.Spent)
	}
	res, err := cs.ChargeBatch(ctx, []ledger.Release{rel("c")}, capOf2)
	if err != nil || !errors.Is(res[0].Err, ledger.ErrBudgetExhausted) {
		t.Fatalf("charge: %+v %v, want a refusal", res, err)
	}
	if sp, err := cs.cachedBudget(ctx, "u"); err != nil || sp.Spent != 2 || sp.Releases != 2 {
		t.Fatalf("after the refusal: %+v %v, want the store's spent 2 in 2 releases", sp, err)
	}
	if hs.reads() != 2 {
		t.Fatalf("%d budget reads, want 2", hs.reads())
	}
}

// tokenCountStore counts TokenHash reads and can fail PutToken.
type tokenCountStore struct {
	ledger.Store
	reads   int
	failPut bool
}

func (s *tokenCountStore) TokenHash(ctx context.Context, user string) ([]byte, bool, error) {
	s.reads++
	return s.Store.TokenHash(ctx, user)
}

func (s *tokenCountStore) PutToken(ctx context.Context, user string, hash []byte) error {
	if s.failPut {
		return errors.New("disk on fire")
	}
	return s.Store.PutToken(ctx, user, hash)
}

// Token hashes are written through: a token issued through the cache is
// served from memory (the old one no longer), a revoked one is gone at
// once, and a failed PutToken drops the entry so that the store is read.
func TestCacheTokensWriteThrough(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		op        func(c *cacheStore) error
		wantHash  string // "" : no token
		wantReads int    // store reads by the two lookups after op
	}{
		{"put", func(c *cacheStore) error { return c.PutToken(ctx, "u", []byte("new")) }, "new", 0},
		{"revoke", func(c *cacheStore) error { return c.RevokeToken(ctx, "u") }, "", 1},
		{"failed put", func(c *cacheStore) error {
			c.Store.(*tokenCountStore).failPut = true
			if err := c.PutToken(ctx, "u", []byte("new")); err == nil {
				t.Error("PutToken succeeded")
			}
			return nil
		}, "old", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, _ := countingSQLite(t)
			ts := &tokenCountStore{Store: base}
			cs := newCacheStore(ts, time.Hour, 100, 1<<20)
			if err := cs.PutToken(ctx, "u", []byte("old")); err != nil {
				t.Fatal(err)
			}
			if h, ok, err := cs.TokenHash(ctx, "u"); err != nil || !ok || string(h) != "old" {
				t.Fatalf("before: %q %v %v", h, ok, err)
			}
			if err := c.op(cs); err != nil {
				t.Fatal(err)
			}
			ts.reads = 0
			for range 2 {
				h, ok, err := cs.TokenHash(ctx, "u")
				if err != nil || ok != (c.wantHash != "") || string(h) != c.wantHash {
					t.Fatalf("after: %q %v %v, want %q", h, ok, err, c.wantHash)
				}
			}
			if ts.reads != c.wantReads {
				t.Fatalf("%d store reads, want %d", ts.reads, c.wantReads)
			}
		})
	}
}
