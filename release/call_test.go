package release_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// recordingStore implements release.Store, and nothing else, over a real
// ledger: it compiles only because WithStore asks for the two calls of the
// release path. It records the lookups made and the releases charged.
type recordingStore struct {
	inner ledger.Store

	mu      sync.Mutex
	lookups int
	charged []ledger.Release
}

func (s *recordingStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error) {
	s.mu.Lock()
	s.lookups++
	s.mu.Unlock()
	return s.inner.LatestBatch(ctx, users, model, k, prov)
}

func (s *recordingStore) ChargeBatch(ctx context.Context, rs []ledger.Release, c ledger.Cap) ([]ledger.ChargeResult, error) {
	s.mu.Lock()
	s.charged = append(s.charged, rs...)
	s.mu.Unlock()
	return s.inner.ChargeBatch(ctx, rs, c)
}

// since returns the lookups made and the keys of the releases charged since
// the last call.
func (s *recordingStore) since() (lookups int, keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.charged {
		keys = append(keys, r.IdemKey)
	}
	lookups = s.lookups
	s.lookups, s.charged = 0, nil
	return lookups, keys
}

// One Recommender serves sticky, fresh and idempotent calls: each call's
// options hold for that call only (a Fresh or keyed call leaves the next
// call sticky and keyless), a fresh call never looks a list up, and a key
// re-serves its first list, charged once.
func TestPerCallIntents(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	st := &recordingStore{inner: openStore(t)}
	rec, err := release.New(m, g, p, release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	user := g.Label(9)
	sticky := "sticky:" + rec.ModelID() + ":k=5"
	const first = 0 // step index of the first list
	steps := []struct {
		name    string
		k       int
		opts    []release.CallOption
		fresh   bool   // a new list, charged
		sameAs  int    // else: the release of this step is re-served
		lookup  bool   // the store was asked for the latest list
		key     string // the key the charge went under (when one was sent)
		charged bool   // a charge was sent to the store
		err     error
	}{
		{name: "sticky first", k: 5, fresh: true, lookup: true, key: sticky, charged: true},
		{name: "sticky again", k: 5, sameAs: first, lookup: true},
		{name: "fresh", k: 5, opts: []release.CallOption{release.Fresh()}, fresh: true, charged: true},
		{name: "sticky after fresh", k: 5, sameAs: 2, lookup: true},
		{name: "keyed", k: 5, opts: []release.CallOption{release.Fresh(), release.IdempotencyKey("req-1")}, fresh: true, key: "req-1", charged: true},
		{name: "keyed retry", k: 5, opts: []release.CallOption{release.Fresh(), release.IdempotencyKey("req-1")}, sameAs: 4, key: "req-1", charged: true},
		{name: "fresh after keyed", k: 5, opts: []release.CallOption{release.Fresh()}, fresh: true, charged: true},
		{name: "key reused at another k", k: 6, opts: []release.CallOption{release.Fresh(), release.IdempotencyKey("req-1")}, key: "req-1", charged: true, err: ledger.ErrIdemConflict},
		{name: "nil option ignored", k: 5, opts: []release.CallOption{nil}, sameAs: 6, lookup: true},
	}
	ids := make([]int64, len(steps))
	for i, s := range steps {
		res, err := rec.Recommend(ctx, []string{user}, s.k, s.opts...)
		lookups, keys := st.since()
		if s.err != nil {
			if !errors.Is(err, s.err) {
				t.Fatalf("%s: err %v, want %v", s.name, err, s.err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if (lookups > 0) != s.lookup {
			t.Errorf("%s: %d lookups, want lookup %v", s.name, lookups, s.lookup)
		}
		if (len(keys) > 0) != s.charged || (s.charged && keys[0] != s.key) {
			t.Errorf("%s: charged under keys %q, want charged %v under %q", s.name, keys, s.charged, s.key)
		}
		if s.err != nil {
			continue
		}
		r := res[0]
		ids[i] = r.ReleaseID
		switch {
		case s.fresh && (!r.Fresh || r.Cost <= 0 || slices.Contains(ids[:i], r.ReleaseID)):
			t.Errorf("%s: want a new charged list, got %+v", s.name, r)
		case !s.fresh && (r.Fresh || r.Cost != 0 || r.ReleaseID != ids[s.sameAs]):
			t.Errorf("%s: want release %d re-served free, got %+v", s.name, ids[s.sameAs], r)
		}
	}
}

// Construction-time intents (WithFresh, WithIdempotencyKey) remain every
// call's defaults, and a call's option replaces them for that call.
func TestCallOptionsOverrideDefaults(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	st := &recordingStore{inner: openStore(t)}
	rec, err := release.New(m, g, p, release.WithStore(st), release.WithFresh(true), release.WithIdempotencyKey("default"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		opts []release.CallOption
		key  string
	}{
		{nil, "default"},
		{[]release.CallOption{release.IdempotencyKey("call")}, "call"},
		{[]release.CallOption{release.IdempotencyKey("")}, ""},
		{nil, "default"},
	} {
		if _, err := rec.Recommend(ctx, []string{g.Label(int32(20 + i))}, 4, c.opts...); err != nil {
			t.Fatal(err)
		}
		lookups, keys := st.since()
		if lookups != 0 || !slices.Equal(keys, []string{c.key}) {
			t.Errorf("call %d: %d lookups, keys %q; want 0 lookups (fresh by default), key %q", i, lookups, keys, c.key)
		}
	}
}

// Concurrent sticky, fresh and idempotent calls on one Recommender: the
// sticky list is charged once, every fresh call charges its own list, and
// every call under one key gets the one list charged under it.
func TestConcurrentIntentsOneRecommender(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	ls := openStore(t)
	rec, err := release.New(m, g, p, release.WithStore(ls))
	if err != nil {
		t.Fatal(err)
	}
	user := g.Label(31)
	const n = 8
	type out struct {
		kind string
		r    release.Result
		err  error
	}
	outs := make(chan out, 3*n)
	var wg sync.WaitGroup
	for i := range 3 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o out
			var res []release.Result
			switch i % 3 {
			case 0:
				o.kind = "sticky"
				res, o.err = rec.Recommend(ctx, []string{user}, 7)
			case 1:
				o.kind = "fresh"
				res, o.err = rec.Recommend(ctx, []string{user}, 5, release.Fresh())
			default:
				o.kind = "keyed"
				res, o.err = rec.Recommend(ctx, []string{user}, 5, release.Fresh(), release.IdempotencyKey("same"))
			}
			if o.err == nil {
				o.r = res[0]
			}
			outs <- o
		}()
	}
	wg.Wait()
	close(outs)
	ids := map[string]map[int64]bool{"sticky": {}, "fresh": {}, "keyed": {}}
	for o := range outs {
		if o.err != nil {
			t.Fatalf("%s: %v", o.kind, o.err)
		}
		if o.r.K != map[string]int{"sticky": 7, "fresh": 5, "keyed": 5}[o.kind] {
			t.Fatalf("%s: list for K %d", o.kind, o.r.K)
		}
		ids[o.kind][o.r.ReleaseID] = true
	}
	if len(ids["sticky"]) != 1 || len(ids["fresh"]) != n || len(ids["keyed"]) != 1 {
		t.Fatalf("distinct releases: sticky %d (want 1), fresh %d (want %d), keyed %d (want 1)", len(ids["sticky"]), len(ids["fresh"]), n, len(ids["keyed"]))
	}
	if total := totalReleases(t, ls); total != n+2 {
		t.Fatalf("%d releases charged, want %d", total, n+2)
	}
}

// WithInfluenceDict: nil and a dictionary of another graph are refused;
// one dictionary shared by Recommenders (and goroutines) is made once, on
// the first release with exposure.
func TestInfluenceDictShared(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	if _, err := release.New(m, g, p, release.WithSeed(1), release.WithInfluenceDict(nil)); err == nil {
		t.Fatal("nil influencer dictionary accepted")
	}
	other, _, err := graph.FromEdges(g.N(), g.EdgeList(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := release.New(m, g, p, release.WithSeed(1), release.WithInfluenceDict(release.NewInfluenceDict(other))); err == nil ||
		!strings.Contains(err.Error(), "another graph") {
		t.Fatalf("dictionary of another graph: %v", err)
	}

	dict := release.NewInfluenceDict(g)
	st := &recordingStore{inner: openStore(t)}
	var recs []*release.Recommender
	for range 2 {
		r, err := release.New(m, g, p, release.WithStore(st), release.WithInfluenceDict(dict))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if release.InfluenceDictMadeForTest(dict) {
		t.Fatal("dictionary made before any release")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*4)
	for i := range 2 * 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := recs[i%2].Recommend(ctx, []string{g.Label(int32(i))}, 4, release.Fresh())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !release.InfluenceDictMadeForTest(dict) {
		t.Fatal("dictionary not made by releases with exposure")
	}
}

// The influencers recorded with each fresh list are those of the user,
// whichever Recommender sharing the dictionary charged it: as charged
// (node ids into the dictionary) and as the store reads them back (labels,
// sorted bytewise).
func TestSharedDictRecordsInfluencers(t *testing.T) {
	g, p, m := fixture(t)
	dict := release.NewInfluenceDict(g)
	st := &recordingStore{inner: openStore(t)}
	users := []string{g.Label(3), g.Label(40), g.Label(41)}
	for i, u := range users {
		rec, err := release.New(m, g, p, release.WithStore(st), release.WithInfluenceDict(dict))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rec.Recommend(context.Background(), []string{u}, 5, release.Fresh()); err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.charged) != len(users) {
		t.Fatalf("%d charges, want %d", len(st.charged), len(users))
	}
	for _, r := range st.charged {
		id, _ := g.ID(r.User)
		want := release.InfluencerLabelsForTest(g, p, score.AA, id)
		if got := r.InfluencerLabels(); !slices.Equal(got, want) {
			t.Fatalf("user %s: charged influencers %q, want %q", r.User, got, want)
		}
		back, ok, err := st.inner.Latest(context.Background(), r.User, r.Model, r.K, ledger.Crypto)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if !slices.Equal(back.Influencers, want) {
			t.Fatalf("user %s: stored influencers %q, want %q", r.User, back.Influencers, want)
		}
	}
	if !slices.ContainsFunc(st.charged, func(r ledger.Release) bool { return len(r.InfluencerLabels()) > 1 }) {
		t.Fatal("no release recorded two or more influencers: the checks above prove nothing")
	}
}

// A batch over the whole graph has the store record every influence block
// first (ledger's PrepareInfluence; the threshold lowered for the test): the
// lists' recorded influencers read back as the brute-force sets, and the
// ledger verifies.
func TestBatchPreparesInfluence(t *testing.T) {
	defer release.SetPrepareMinForTest(1)()
	g, p, m := fixture(t)
	st := openStore(t)
	rec, err := release.New(m, g, p, release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	users := make([]string, g.N())
	for i := range users {
		users[i] = g.Label(int32(i))
	}
	ctx := context.Background()
	if _, err := rec.Recommend(ctx, users, 4, release.Fresh()); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for u := range int32(g.N()) {
		r, ok, err := st.Latest(ctx, g.Label(u), rec.ModelID(), 4, ledger.Crypto)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		want := release.InfluencerLabelsForTest(g, p, score.AA, u)
		if r.Cost == 0 {
			continue // nothing recorded for a free list
		}
		if len(want) == 0 {
			want = nil
		}
		got := r.Influencers
		if len(got) == 0 {
			got = nil
		}
		if !slices.Equal(got, want) {
			t.Fatalf("user %d: recorded %q, want %q", u, got, want)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no charged list checked")
	}
	if rep, err := ledger.Verify(ctx, st); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Err())
	}
}
