package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/release"
)

// seedStore releases seeded lists (a research run sharing the service's
// store) to users at k, through the real release path with the served
// state, so that they hold exactly the keys a seeded `dplp recommend` would
// (the automatic sticky key, or "client:"+key for an idempotency key).
func (s *testServer) seedStore(users []string, k int, opts ...release.Option) []release.Result {
	s.t.Helper()
	st := s.state.Load()
	opts = append([]release.Option{release.WithSeed(1), release.WithStore(s.store), release.WithScorer(st.sc)}, opts...)
	rec, err := release.New(st.m, st.g, st.prot, opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	res, err := rec.Recommend(context.Background(), users, k)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, r := range res {
		if !r.Seeded || !r.Fresh || r.ReleaseID == 0 {
			s.t.Fatalf("seeding the store: %+v", r)
		}
	}
	return res
}

// checkPrivate fails unless r is a private list that is not one of the
// seeded releases.
func checkPrivate(t *testing.T, what string, r recs, seeded map[int64]bool) {
	t.Helper()
	if seeded[r.ReleaseID] || r.ReleaseID == 0 || !strings.Contains(r.Guarantee, "protected-pair DP") || strings.Contains(r.Guarantee, "seeded") || strings.Contains(r.Guarantee, "NO privacy") {
		t.Fatalf("%s: %+v", what, r)
	}
}

// `dplp serve` never returns a seeded list: a store holding one for the
// user, model and K (sticky key, client key) makes the service release and
// charge a private list instead, on GET and on POST with the same
// Idempotency-Key.
func TestSeededStoreNeverServed(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.UserBudget = 100 })
	tok := s.token("n7")
	seeded := map[int64]bool{}
	for _, r := range s.seedStore([]string{"n7"}, 4) {
		seeded[r.ReleaseID] = true
	}
	for _, r := range s.seedStore([]string{"n7"}, 4, release.WithFresh(true), release.WithIdempotencyKey("client:req-1")) {
		seeded[r.ReleaseID] = true
	}
	// Negative control: the seeded lists are in the store, for this user,
	// model and K, and the newest release of (n7, model, 4) is seeded.
	modelID := s.state.Load().modelID
	newest, ok, err := s.store.Latest(context.Background(), "n7", modelID, 4, ledger.Seeded)
	if err != nil || !ok || !seeded[newest.ID] {
		t.Fatalf("seeded releases not in the store: %+v %v %v", newest, ok, err)
	}

	var first, again, keyed, replay recs
	s.do("GET", "/v1/users/n7/recommendations?k=4", tok, "").json(t, &first)
	checkPrivate(t, "first GET", first, seeded)
	if !first.Fresh || first.Cost != 2 {
		t.Fatalf("first GET re-served instead of releasing a private list: %+v", first)
	}
	s.do("GET", "/v1/users/n7/recommendations?k=4", tok, "").json(t, &again)
	checkPrivate(t, "second GET", again, seeded)
	if again.Fresh || again.ReleaseID != first.ReleaseID {
		t.Fatalf("second GET: %+v, want the private release %d re-served", again, first.ReleaseID)
	}
	s.do("POST", "/v1/users/n7/recommendations?k=4", tok, "", "Idempotency-Key", "req-1").json(t, &keyed)
	checkPrivate(t, "POST with the seeded run's key", keyed, seeded)
	if !keyed.Fresh {
		t.Fatalf("POST with a key held by a seeded release: %+v", keyed)
	}
	s.do("POST", "/v1/users/n7/recommendations?k=4", tok, "", "Idempotency-Key", "req-1").json(t, &replay)
	if replay.Fresh || replay.ReleaseID != keyed.ReleaseID {
		t.Fatalf("replay of req-1: %+v, want release %d", replay, keyed.ReleaseID)
	}
	// The responses are private in their data too: no seeded field set, no
	// seeded text.
	r := s.do("GET", "/v1/users/n7/recommendations?k=4", tok, "")
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if v, ok := raw["seeded"]; ok && v != false {
		t.Fatalf("response marked seeded: %s", r.body)
	}
	// Budget: the seeded run's two charges plus the two private ones.
	var b budgetResponse
	s.do("GET", "/v1/users/n7/budget", tok, "").json(t, &b)
	if b.Releases != 4 || b.Spent != 8 {
		t.Fatalf("budget %+v, want 4 releases, 8 spent", b)
	}
}

// /readyz is a bare status: nothing about the marks (protected pairs,
// marking users) reaches unauthenticated callers; the admin sees the state
// at GET /v1/admin/state.
func TestReadyzBare(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n1")
	before := s.do("GET", "/readyz", "", "")
	if before.status != 200 || strings.TrimSpace(string(before.body)) != `{"status":"ready"}` {
		t.Fatalf("readyz: %d %s", before.status, before.body)
	}
	var st0 stateInfo
	s.do("GET", "/v1/admin/state", adminTok, "").json(t, &st0)
	if r := s.do("PUT", "/v1/users/n1/protected", tok, `{"protected":["n5","n6"]}`); r.status != 200 {
		t.Fatalf("marks: %d %s", r.status, r.body)
	}
	after := s.do("GET", "/readyz", "", "")
	if string(after.body) != string(before.body) {
		t.Fatalf("readyz changed with a marks update: %s -> %s", before.body, after.body)
	}
	// Negative control: the admin view does change.
	var st1 stateInfo
	s.do("GET", "/v1/admin/state", adminTok, "").json(t, &st1)
	if st1.UsersWithMarks != st0.UsersWithMarks+1 || st1.ProtectedPairs <= st0.ProtectedPairs || st1.Nodes != st0.Nodes || st1.Nodes == 0 || st1.Model == "" {
		t.Fatalf("admin state %+v then %+v", st0, st1)
	}
	for _, tk := range []string{"", tok} {
		if r := s.do("GET", "/v1/admin/state", tk, ""); r.status != 401 && r.status != 403 {
			t.Fatalf("state with token %q: %d %s", tk, r.status, r.body)
		}
	}
}
