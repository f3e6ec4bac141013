package release_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// preparingStore is a real ledger whose PrepareInfluence first waits until
// want windows have been looked up (each window's sticky lookup is one
// LatestBatch call), so the windows Stream samples while the store records
// the blocks are observable; it then fails with fail, or records the
// blocks. It notes a charge made before PrepareInfluence returned.
type preparingStore struct {
	inner ledger.Store
	want  int
	fail  error

	mu       sync.Mutex
	lookups  int
	reached  chan struct{} // closed at the want-th lookup
	prepared bool
	early    bool // a charge before PrepareInfluence returned
	charges  int
	preps    int // PrepareInfluence calls
	onLookup func(n int)
}

func newPreparingStore(t *testing.T, want int, fail error) *preparingStore {
	return &preparingStore{inner: openStore(t), want: want, fail: fail, reached: make(chan struct{})}
}

// onLookup, when set, is called with the number of lookups so far.
func (s *preparingStore) setOnLookup(f func(n int)) { s.mu.Lock(); s.onLookup = f; s.mu.Unlock() }

func (s *preparingStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error) {
	s.mu.Lock()
	s.lookups++
	if s.lookups == s.want {
		close(s.reached)
	}
	n, f := s.lookups, s.onLookup
	s.mu.Unlock()
	if f != nil {
		f(n)
	}
	return s.inner.LatestBatch(ctx, users, model, k, prov)
}

func (s *preparingStore) ChargeBatch(ctx context.Context, rs []ledger.Release, cap ledger.Cap) ([]ledger.ChargeResult, error) {
	s.mu.Lock()
	s.early = s.early || !s.prepared
	s.charges++
	s.mu.Unlock()
	return s.inner.ChargeBatch(ctx, rs, cap)
}

func (s *preparingStore) PrepareInfluence(ctx context.Context, b *ledger.Blocks) error {
	s.mu.Lock()
	s.preps++
	s.mu.Unlock()
	select {
	case <-s.reached:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute): // a deadlock guard, not a timing check
		return fmt.Errorf("only %d window(s) looked up while the blocks were recorded, want %d", s.lookupCount(), s.want)
	}
	if s.fail != nil {
		return s.fail
	}
	err := s.inner.(interface {
		PrepareInfluence(context.Context, *ledger.Blocks) error
	}).PrepareInfluence(ctx, b)
	s.mu.Lock()
	s.prepared = true
	s.mu.Unlock()
	return err
}

func (s *preparingStore) lookupCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// While the store records the influence blocks, Stream samples windows
// ahead (up to readyMax, here 3, plus the one in flight) and charges none
// of them; afterwards the backlog is charged and emitted in the order of
// users, each user charged once for its sticky list, and every fresh list
// is emitted after its charge is in the ledger. A failed recording stops the stream with
// nothing charged.
func TestStreamSamplesWhilePreparing(t *testing.T) {
	defer release.SetPrepareMinForTest(1)()
	defer release.SetReadyMaxForTest(3)()
	g, p, m := fixture(t)
	var users []int32
	for len(users) < 7*4096+11 { // eight windows, every user in several
		users = append(users, allUsers(g)...)
	}

	st := newPreparingStore(t, 4, nil) // 3 ready and 1 in flight
	rec, err := release.New(m, g, p, release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string][]string{}
	emitted := 0
	err = rec.Stream(context.Background(), users, 5, func(i int, r release.Result) error {
		if i != emitted {
			return fmt.Errorf("result %d emitted after %d results", i, emitted)
		}
		emitted++
		if r.Err != nil {
			return r.Err
		}
		if r.User != g.Label(users[i]) {
			return fmt.Errorf("result %d is for %s, want %s", i, r.User, g.Label(users[i]))
		}
		if prev, ok := lists[r.User]; ok && !slices.Equal(prev, r.List) {
			return fmt.Errorf("user %s got %v, then %v", r.User, prev, r.List)
		}
		lists[r.User] = r.List
		if r.Fresh { // charged before it is emitted
			rel, ok, err := st.inner.Latest(context.Background(), r.User, rec.ModelID(), 5, ledger.Crypto)
			if err != nil || !ok || !slices.Equal(rel.List, r.List) {
				return fmt.Errorf("result %d emitted with its charge not in the ledger (found %v, %v)", i, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.early {
		t.Fatal("a window was charged before the blocks were recorded")
	}
	if emitted != len(users) || len(lists) != g.N() {
		t.Fatalf("%d results for %d users, %d distinct users, want %d", emitted, len(users), len(lists), g.N())
	}
	sp, err := st.inner.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sp {
		if s.Releases != 1 {
			t.Fatalf("user %s charged %d times", s.User, s.Releases)
		}
	}
	if len(sp) != g.N() {
		t.Fatalf("%d users charged, want %d", len(sp), g.N())
	}

	boom := errors.New("recording failed")
	st2 := newPreparingStore(t, 4, boom)
	rec2, err := release.New(m, g, p, release.WithStore(st2))
	if err != nil {
		t.Fatal(err)
	}
	err = rec2.Stream(context.Background(), users, 5, func(int, release.Result) error { return errors.New("emitted") })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the recording's error", err)
	}
	if st2.charges != 0 || totalReleases(t, st2.inner) != 0 {
		t.Fatalf("%d charge(s) after the recording failed", st2.charges)
	}
}

// The backlog of sampled windows is about one list in 5, between 24 and
// 512 windows of 4,096.
func TestReadyWindows(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, 24}, {65536, 24}, {511_999, 24}, {512_000, 25}, {1_000_000, 48}, {5_000_000, 244}, {10_000_000, 488}, {10_485_759, 511}, {10_485_760, 512}, {1 << 31, 512},
	} {
		if got := release.ReadyWindowsForTest(c.n); got != c.want {
			t.Errorf("%d users: %d windows, want %d", c.n, got, c.want)
		}
	}
}

// A stream cancelled while the store records the blocks returns the
// context's error once the recording and the windows in flight have
// stopped, with nothing charged.
func TestStreamCancelWhilePreparing(t *testing.T) {
	defer release.SetPrepareMinForTest(1)()
	defer release.SetReadyMaxForTest(3)()
	g, p, m := fixture(t)
	var users []int32
	for len(users) < 7*4096 {
		users = append(users, allUsers(g)...)
	}
	st := newPreparingStore(t, 1000, nil) // the recording waits for lookups that never come
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st.setOnLookup(func(n int) {
		if n == 2 {
			cancel()
		}
	})
	rec, err := release.New(m, g, p, release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	err = rec.Stream(ctx, users, 5, func(int, release.Result) error { return errors.New("emitted") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if st.charges != 0 || totalReleases(t, st.inner) != 0 {
		t.Fatalf("%d charge(s) after the cancellation", st.charges)
	}
}

// TestOneWindowMatchesPipeline: a batch of one window (a service's
// request) is prepared, charged and emitted without the pipeline; its
// seeded lists and results are those the pipeline gives the same users in
// a batch of several windows (seeded lists depend on the seed and the user
// only), and a cancelled context charges nothing.
func TestOneWindowMatchesPipeline(t *testing.T) {
	g, p, m := fixture(t)
	var users []int32
	for len(users) < 2*4096+7 { // three windows
		users = append(users, allUsers(g)...)
	}
	rec, err := release.New(m, g, p, release.WithSeed(9), release.WithoutLedger())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	piped := map[string]release.Result{}
	err = rec.Stream(ctx, users, 6, func(_ int, r release.Result) error {
		piped[r.User] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		pair := users[i : i+2] // two users, in this order
		var got []release.Result
		err := rec.Stream(ctx, pair, 6, func(j int, r release.Result) error {
			if j != len(got) {
				return fmt.Errorf("result %d emitted after %d", j, len(got))
			}
			got = append(got, r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range got {
			want := piped[g.Label(pair[j])]
			if r.User != want.User || !slices.Equal(r.List, want.List) || r.Guarantee != want.Guarantee || r.Cost != want.Cost {
				t.Fatalf("result %d of %v alone: %+v; in the pipeline: %+v", j, pair, r, want)
			}
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := rec.Stream(cctx, users[:3], 6, func(int, release.Result) error { return errors.New("emitted after cancel") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled one-window stream: %v", err)
	}
}

// A recording started before New (StartPreparation, WithPreparation) is
// what Stream waits for: it samples windows meanwhile, charges none before
// the recording ends, does not record the blocks again, and releases the
// same seeded lists as a Recommender without it.
func TestPreparationStartedEarly(t *testing.T) {
	defer release.SetPrepareMinForTest(1)()
	g, p, m := fixture(t)
	var users []int32
	for len(users) < 3*4096 {
		users = append(users, allUsers(g)...)
	}
	lists := func(rec *release.Recommender) [][]string {
		var out [][]string
		err := rec.Stream(context.Background(), users, 5, func(_ int, r release.Result) error {
			if r.Err != nil {
				return r.Err
			}
			out = append(out, r.List)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	plainSt := openStore(t)
	plain, err := release.New(m, g, p, release.WithStore(plainSt), release.WithSeed(9))
	if err != nil {
		t.Fatal(err)
	}
	want := lists(plain)

	st := newPreparingStore(t, 2, nil) // the recording waits for two windows' lookups
	pr := release.StartPreparation(context.Background(), st, g, p, score.AA, len(users))
	if pr == nil {
		t.Fatal("no preparation for a batch of the whole graph")
	}
	rec, err := release.New(m, g, p, release.WithStore(st), release.WithSeed(9), release.WithPreparation(pr))
	if err != nil {
		t.Fatal(err)
	}
	got := lists(rec)
	if err := pr.Wait(); err != nil {
		t.Fatal(err)
	}
	if st.early || st.preps != 1 {
		t.Fatalf("charged before the recording ended %v, recordings %d (want 1)", st.early, st.preps)
	}
	if len(got) != len(want) {
		t.Fatalf("%d lists, want %d", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("list %d: %v with the early recording, %v without", i, got[i], want[i])
		}
	}
	// The windows sampled while the blocks were recorded built their
	// releases when charged (lean windows): the ledger holds the same
	// releases, influence sets included, as without the early recording.
	lean := 0
	for u := range int32(g.N()) {
		ctx := context.Background()
		a, okA, errA := plainSt.Latest(ctx, g.Label(u), plain.ModelID(), 5, ledger.Seeded)
		b, okB, errB := st.inner.Latest(ctx, g.Label(u), rec.ModelID(), 5, ledger.Seeded)
		if errA != nil || errB != nil || !okA || !okB {
			t.Fatalf("user %s: releases %v %v, %v %v", g.Label(u), okA, errA, okB, errB)
		}
		if !slices.Equal(a.List, b.List) || a.Cost != b.Cost || a.Rho != b.Rho || a.PartyCost != b.PartyCost ||
			!slices.Equal(a.InfluencerLabels(), b.InfluencerLabels()) {
			t.Fatalf("user %s: release %+v with the early recording, %+v without", g.Label(u), b, a)
		}
		if len(a.InfluencerLabels()) > 0 {
			lean++
		}
	}
	if lean == 0 {
		t.Fatal("no release records an influence set")
	}
	// A later batch does not record again.
	lists(rec)
	if st.preps != 1 {
		t.Fatalf("%d recordings after a second batch", st.preps)
	}
}

// New refuses a preparation made for another store or graph; a batch
// that records nothing first has no preparation.
func TestPreparationMismatch(t *testing.T) {
	defer release.SetPrepareMinForTest(1)()
	g, p, m := fixture(t)
	st := openStore(t)
	pr := release.StartPreparation(context.Background(), st, g, p, score.AA, g.N())
	if pr == nil {
		t.Fatal("no preparation")
	}
	defer pr.Wait()
	if _, err := release.New(m, g, p, release.WithStore(openStore(t)), release.WithPreparation(pr)); err == nil {
		t.Fatal("a preparation for another store was accepted")
	}
	if other := release.StartPreparation(context.Background(), st, g, p, score.AA, g.N()/2-1); other != nil {
		t.Fatal("a preparation for less than half of the graph")
	}
	if release.StartPreparation(context.Background(), nil, g, p, score.AA, g.N()) != nil {
		t.Fatal("a preparation without a store")
	}
	if release.StartPreparation(context.Background(), st, g, p, score.JC, g.N()) != nil {
		t.Fatal("a preparation for a score without influence blocks")
	}
}
