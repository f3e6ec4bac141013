package serve

import (
	"context"
	"fmt"
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
