package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	dto "github.com/prometheus/client_model/go"
)

const adminTok = "test-admin-token-0123456789abcdefghij"

// fixture is a small labelled graph, marks and trained model on disk.
type fixture struct {
	dir, graph, prot, model string
	labels                  []string
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
)

// testFixture builds (once per test binary) a random geometric graph of 60
// nodes labelled n0..n59, marks on every 4th edge, and an AA model.
func testFixture(t testing.TB) fixture {
	fixOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dplp-serve-test-")
		if err != nil {
			fixErr = err
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 60
		xs, ys := make([]float64, n), make([]float64, n)
		labels := make([]string, n)
		for i := range n {
			xs[i], ys[i] = rng.Float64(), rng.Float64()
			labels[i] = fmt.Sprintf("n%d", i)
		}
		var eb, pb strings.Builder
		e := 0
		for i := range n {
			for j := i + 1; j < n; j++ {
				if math.Hypot(xs[i]-xs[j], ys[i]-ys[j]) < 0.25 {
					fmt.Fprintf(&eb, "n%d n%d\n", i, j)
					if e%4 == 0 {
						fmt.Fprintf(&pb, "n%d n%d\n", i, j)
					}
					e++
				}
			}
		}
		fx := fixture{dir: dir, graph: filepath.Join(dir, "g.txt"), prot: filepath.Join(dir, "p.txt"), model: filepath.Join(dir, "m.json"), labels: labels}
		if err := os.WriteFile(fx.graph, []byte(eb.String()), 0o600); err != nil {
			fixErr = err
			return
		}
		if err := os.WriteFile(fx.prot, []byte(pb.String()), 0o600); err != nil {
			fixErr = err
			return
		}
		g, _, err := graph.ReadFile(fx.graph)
		if err != nil {
			fixErr = err
			return
		}
		p, err := protect.ReadFile(fx.prot, g)
		if err != nil {
			fixErr = err
			return
		}
		m, err := dplp.Train(context.Background(), g, p, dplp.TrainSpec{Score: "aa", EpsP: 0.5, Epochs: 2, Seed: 1})
		if err != nil {
			fixErr = err
			return
		}
		fixErr = model.Save(fx.model, m)
		fix = fx
	})
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

type testServer struct {
	*Server
	t     testing.TB
	fx    fixture
	store ledger.Store
}

// newTestServer starts a Server on a fresh SQLite store (synchronous=normal:
// tests) with cfg's fields overriding the defaults.
func newTestServer(t testing.TB, mod func(*Config)) *testServer {
	fx := testFixture(t)
	st, err := ledger.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "l.db")+"?synchronous=normal")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{GraphPath: fx.graph, ProtectedPath: fx.prot, ModelPath: fx.model, Store: st, AdminToken: adminTok,
		UserBudget: math.Inf(1), KMax: 20, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); st.Close() })
	return &testServer{Server: s, t: t, fx: fx, store: st}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

func (r reply) problem(t testing.TB) Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q (want application/problem+json): %s", r.status, ct, r.body)
	}
	var p Problem
	r.json(t, &p)
	if p.Status != r.status || p.Type == "" || p.Title == "" {
		t.Fatalf("malformed problem for status %d: %s", r.status, r.body)
	}
	return p
}

func (s *testServer) do(method, path, token string, body string, hdr ...string) reply {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return reply{w.Code, w.Header(), w.Body.Bytes()}
}

func (s *testServer) token(user string) string {
	s.t.Helper()
	r := s.do("POST", "/v1/admin/users", adminTok, `{"user":`+jsonString(user)+`}`)
	if r.status != http.StatusCreated {
		s.t.Fatalf("create %s: %d %s", user, r.status, r.body)
	}
	var out createUserResponse
	r.json(s.t, &out)
	if out.User != user || out.Token == "" {
		s.t.Fatalf("create %s: %s", user, r.body)
	}
	return out.Token
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestErrors is the table of every route's errors (and a success each).
func TestErrors(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MaxBodyBytes = 256 })
	n1, n2 := s.token("n1"), s.token("n2")
	revoked := s.token("n3")
	if r := s.do("DELETE", "/v1/admin/users/n3/token", adminTok, ""); r.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	forged := n1[:strings.IndexByte(n1, '.')+1] + strings.Repeat("A", 43)
	big := `{"user":"` + strings.Repeat("x", 300) + `"}`
	cases := []struct {
		name, method, path, token, body string
		hdr                             []string
		status                          int
		typ                             string
	}{
		// authentication and authorisation
		{"no token", "GET", "/v1/users/n1/budget", "", "", nil, 401, TypeUnauthorized},
		{"garbage token", "GET", "/v1/users/n1/budget", "nonsense", "", nil, 401, TypeUnauthorized},
		{"forged secret", "GET", "/v1/users/n1/budget", forged, "", nil, 401, TypeUnauthorized},
		{"revoked token", "GET", "/v1/users/n3/budget", revoked, "", nil, 401, TypeUnauthorized},
		{"other user's budget", "GET", "/v1/users/n2/budget", n1, "", nil, 403, TypeForbidden},
		{"other user's list", "GET", "/v1/users/n2/recommendations?k=3", n1, "", nil, 403, TypeForbidden},
		{"other user's fresh list", "POST", "/v1/users/n2/recommendations?k=3", n1, "", nil, 403, TypeForbidden},
		{"other user's marks", "GET", "/v1/users/n2/protected", n1, "", nil, 403, TypeForbidden},
		{"set other user's marks", "PUT", "/v1/users/n2/protected", n1, `{"protected":["n5"]}`, nil, 403, TypeForbidden},
		{"admin on user route", "GET", "/v1/users/n1/budget", adminTok, "", nil, 403, TypeForbidden},
		{"user on admin route", "POST", "/v1/admin/users", n1, `{"user":"n4"}`, nil, 403, TypeForbidden},
		{"user revokes", "DELETE", "/v1/admin/users/n2/token", n1, "", nil, 403, TypeForbidden},
		{"user reloads", "POST", "/v1/admin/reload", n2, "", nil, 403, TypeForbidden},
		{"user reads the state", "GET", "/v1/admin/state", n2, "", nil, 403, TypeForbidden},
		{"no token on the state", "GET", "/v1/admin/state", "", "", nil, 401, TypeUnauthorized},
		{"state with parameter", "GET", "/v1/admin/state?x=1", adminTok, "", nil, 400, TypeInvalidRequest},
		{"no token on admin route", "POST", "/v1/admin/reload", "", "", nil, 401, TypeUnauthorized},
		{"bad token on admin route", "POST", "/v1/admin/users", "x.y", `{"user":"n4"}`, nil, 401, TypeUnauthorized},
		// not found
		{"unknown user label", "POST", "/v1/admin/users", adminTok, `{"user":"nobody"}`, nil, 404, TypeNotFound},
		{"revoke unknown label", "DELETE", "/v1/admin/users/nobody/token", adminTok, "", nil, 404, TypeNotFound},
		{"unknown route", "GET", "/v2/x", "", "", nil, 404, TypeNotFound},
		{"method not allowed", "DELETE", "/v1/users/n1/budget", n1, "", nil, 405, TypeMethodNotAllowed},
		// invalid requests
		{"k missing", "GET", "/v1/users/n1/recommendations", n1, "", nil, 400, TypeInvalidRequest},
		{"k zero", "GET", "/v1/users/n1/recommendations?k=0", n1, "", nil, 400, TypeInvalidRequest},
		{"k negative", "POST", "/v1/users/n1/recommendations?k=-2", n1, "", nil, 400, TypeInvalidRequest},
		{"k non-numeric", "GET", "/v1/users/n1/recommendations?k=ten", n1, "", nil, 400, TypeInvalidRequest},
		{"k over k-max", "GET", "/v1/users/n1/recommendations?k=21", n1, "", nil, 400, TypeInvalidRequest},
		{"k twice", "GET", "/v1/users/n1/recommendations?k=2&k=3", n1, "", nil, 400, TypeInvalidRequest},
		{"unknown parameter", "GET", "/v1/users/n1/recommendations?k=2&seed=1", n1, "", nil, 400, TypeInvalidRequest},
		{"bad query escape", "GET", "/v1/users/n1/recommendations?k=%zz", n1, "", nil, 400, TypeInvalidRequest},
		{"body on fresh", "POST", "/v1/users/n1/recommendations?k=2", n1, `{"seed":1}`, nil, 400, TypeInvalidRequest},
		{"bad idempotency key", "POST", "/v1/users/n1/recommendations?k=2", n1, "", []string{"Idempotency-Key", "has space"}, 400, TypeInvalidRequest},
		{"empty create body", "POST", "/v1/admin/users", adminTok, "", nil, 400, TypeInvalidRequest},
		{"create missing user", "POST", "/v1/admin/users", adminTok, `{}`, nil, 400, TypeInvalidRequest},
		{"create null user", "POST", "/v1/admin/users", adminTok, `{"user":null}`, nil, 400, TypeInvalidRequest},
		{"create unknown field", "POST", "/v1/admin/users", adminTok, `{"user":"n4","admin":true}`, nil, 400, TypeInvalidRequest},
		{"create trailing data", "POST", "/v1/admin/users", adminTok, `{"user":"n4"} {}`, nil, 400, TypeInvalidRequest},
		{"create not an object", "POST", "/v1/admin/users", adminTok, `["n4"]`, nil, 400, TypeInvalidRequest},
		{"create wrong type", "POST", "/v1/admin/users", adminTok, `{"user":4}`, nil, 400, TypeInvalidRequest},
		{"create body too large", "POST", "/v1/admin/users", adminTok, big, nil, 413, TypeTooLarge},
		{"marks unknown label", "PUT", "/v1/users/n1/protected", n1, `{"protected":["n5","ghost","ghost2"]}`, nil, 400, TypeInvalidRequest},
		{"marks self", "PUT", "/v1/users/n1/protected", n1, `{"protected":["n1"]}`, nil, 400, TypeInvalidRequest},
		{"marks missing field", "PUT", "/v1/users/n1/protected", n1, `{"marks":["n5"]}`, nil, 400, TypeInvalidRequest},
		{"marks not a list", "PUT", "/v1/users/n1/protected", n1, `{"protected":"n5"}`, nil, 400, TypeInvalidRequest},
		{"reload with body", "POST", "/v1/admin/reload", adminTok, `{"force":true}`, nil, 400, TypeInvalidRequest},
		{"budget with parameter", "GET", "/v1/users/n1/budget?x=1", n1, "", nil, 400, TypeInvalidRequest},
		// successes
		{"create", "POST", "/v1/admin/users", adminTok, `{"user":"n4"}`, nil, 201, ""},
		{"sticky", "GET", "/v1/users/n1/recommendations?k=3", n1, "", nil, 200, ""},
		{"fresh", "POST", "/v1/users/n1/recommendations?k=3", n1, "{}", nil, 200, ""},
		{"budget", "GET", "/v1/users/n1/budget", n1, "", nil, 200, ""},
		{"marks", "PUT", "/v1/users/n1/protected", n1, `{"protected":["n5"]}`, nil, 200, ""},
		{"marks read", "GET", "/v1/users/n1/protected", n1, "", nil, 200, ""},
		{"revoke", "DELETE", "/v1/admin/users/n4/token", adminTok, "", nil, 204, ""},
		{"reload", "POST", "/v1/admin/reload", adminTok, "", nil, 200, ""},
		{"state", "GET", "/v1/admin/state", adminTok, "", nil, 200, ""},
		{"healthz", "GET", "/healthz", "", "", nil, 200, ""},
		{"readyz", "GET", "/readyz", "", "", nil, 200, ""},
		{"metrics", "GET", "/metrics", "", "", nil, 200, ""},
		{"openapi", "GET", "/openapi.json", "", "", nil, 200, ""},
	}
	doc := loadDoc(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(c.method, c.path, c.token, c.body, c.hdr...)
			if r.status != c.status {
				t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, r.status, c.status, r.body)
			}
			if c.typ != "" {
				if p := r.problem(t); p.Type != c.typ {
					t.Fatalf("type %q, want %q: %s", p.Type, c.typ, r.body)
				}
			} else if r.status != 204 && strings.Contains(r.header.Get("Content-Type"), "problem") {
				t.Fatalf("success with a problem document: %s", r.body)
			}
			doc.checkStatus(t, s.Server, c.method, c.path, r.status)
		})
	}
	// The problem for unknown marks names them.
	r := s.do("PUT", "/v1/users/n1/protected", n1, `{"protected":["n5","ghost","ghost2","ghost"]}`)
	p := r.problem(t)
	if !slices.Equal(p.Unknown, []string{"ghost", "ghost2"}) || !strings.Contains(p.Detail, `"ghost2"`) {
		t.Fatalf("unknown labels not named: %s", r.body)
	}
}

func TestTokens(t *testing.T) {
	s := newTestServer(t, nil)
	a := s.token("n1")
	if r := s.do("GET", "/v1/users/n1/budget", a, ""); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// Stored hashed: the store holds SHA-256(token), not the token.
	h, ok, err := s.store.TokenHash(context.Background(), "n1")
	if err != nil || !ok || bytes.Contains(h, []byte(a)) || len(h) != 32 {
		t.Fatalf("stored hash %x ok=%v err=%v", h, ok, err)
	}
	// Re-issuing replaces the old token at once (cache included).
	b := s.token("n1")
	if a == b {
		t.Fatal("re-issued token equals the old one")
	}
	if r := s.do("GET", "/v1/users/n1/budget", a, ""); r.status != 401 {
		t.Fatalf("old token after re-issue: %d", r.status)
	}
	if r := s.do("GET", "/v1/users/n1/budget", b, ""); r.status != 200 {
		t.Fatalf("new token: %d", r.status)
	}
	// Revocation takes effect at once (cache included).
	if r := s.do("DELETE", "/v1/admin/users/n1/token", adminTok, ""); r.status != 204 {
		t.Fatalf("revoke: %d", r.status)
	}
	if r := s.do("GET", "/v1/users/n1/budget", b, ""); r.status != 401 {
		t.Fatalf("revoked token: %d", r.status)
	}
	// Token format: base64url(label) "." base64url(32 random bytes).
	u, ok := tokenUser(b)
	if !ok || u != "n1" {
		t.Fatalf("tokenUser(%q) = %q, %v", b, u, ok)
	}
	for _, bad := range []string{"", ".", "bjE.", "bjE.short", "!!." + strings.Repeat("A", 43), "." + strings.Repeat("A", 43)} {
		if _, ok := tokenUser(bad); ok {
			t.Errorf("tokenUser(%q) accepted", bad)
		}
	}
}

type recs struct {
	recsResponse
	Remaining *float64 `json:"remaining"`
}

func TestStickyAndFresh(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.UserBudget = 100 })
	tok := s.token("n7")
	var first, again, fresh recs
	s.do("GET", "/v1/users/n7/recommendations?k=4", tok, "").json(t, &first)
	s.do("GET", "/v1/users/n7/recommendations?k=4", tok, "").json(t, &again)
	if !first.Fresh || first.Cost != 4*0.5 || len(first.Recommendations) != 4 || first.Spent != 2 || first.Remaining == nil || *first.Remaining != 98 {
		t.Fatalf("first sticky list: %+v", first)
	}
	if again.Fresh || again.Cost != 0 || !slices.Equal(again.Recommendations, first.Recommendations) || again.Spent != 2 {
		t.Fatalf("second sticky list should be re-served free: %+v", again)
	}
	if !strings.Contains(first.Guarantee, "protected-pair DP") || strings.Contains(first.Guarantee, "seeded") || first.EpsP != 0.5 || first.K != 4 {
		t.Fatalf("guarantee: %+v", first)
	}
	s.do("POST", "/v1/users/n7/recommendations?k=4", tok, "").json(t, &fresh)
	if !fresh.Fresh || fresh.Cost != 2 || fresh.Spent != 4 || fresh.ReleaseID == first.ReleaseID {
		t.Fatalf("fresh list: %+v", fresh)
	}
	var b budgetResponse
	s.do("GET", "/v1/users/n7/budget", tok, "").json(t, &b)
	if b.Releases != 2 || b.Spent != 4 || b.Cap == nil || *b.Cap != 100 || *b.Remaining != 96 {
		t.Fatalf("budget: %+v", b)
	}
	// No seeded noise anywhere in the service.
	st := s.state.Load()
	if st.rec.Seeded() {
		t.Fatal("seeded Recommender in the service")
	}
	rel, ok, err := s.store.Latest(context.Background(), "n7", st.modelID, 4, ledger.Crypto)
	if err != nil || !ok || rel.Seeded {
		t.Fatalf("stored release seeded or missing: %+v %v %v", rel, ok, err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n8")
	var a, b, c recs
	s.do("POST", "/v1/users/n8/recommendations?k=5", tok, "", "Idempotency-Key", "req-1").json(t, &a)
	s.do("POST", "/v1/users/n8/recommendations?k=5", tok, "", "Idempotency-Key", "req-1").json(t, &b)
	s.do("POST", "/v1/users/n8/recommendations?k=5", tok, "", "Idempotency-Key", "req-2").json(t, &c)
	if !a.Fresh || b.Fresh || b.Cost != 0 || b.ReleaseID != a.ReleaseID || !slices.Equal(a.Recommendations, b.Recommendations) {
		t.Fatalf("retry with the same key: %+v then %+v", a, b)
	}
	if !c.Fresh || c.ReleaseID == a.ReleaseID {
		t.Fatalf("another key: %+v", c)
	}
	r := s.do("POST", "/v1/users/n8/recommendations?k=6", tok, "", "Idempotency-Key", "req-1")
	if r.status != http.StatusConflict || r.problem(t).Type != TypeIdemConflict {
		t.Fatalf("same key, other k: %d %s", r.status, r.body)
	}
	// A client key cannot collide with the sticky key of the release package.
	var st recs
	s.do("GET", "/v1/users/n8/recommendations?k=5", tok, "").json(t, &st)
	s.do("POST", "/v1/users/n8/recommendations?k=5", tok, "", "Idempotency-Key", "sticky:"+s.state.Load().modelID+":k=5").json(t, &b)
	if !b.Fresh {
		t.Fatalf("client key collided with the sticky key: %+v", b)
	}
	var bud budgetResponse
	s.do("GET", "/v1/users/n8/budget", tok, "").json(t, &bud)
	if bud.Releases != 3 {
		t.Fatalf("releases %d, want 3 (req-1, req-2, sticky:...; the sticky GET re-served the newest)", bud.Releases)
	}
}

func TestBudgetExhausted(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.UserBudget = 2 * 3 * 0.5 }) // two lists of 3
	tok := s.token("n9")
	for i := range 2 {
		if r := s.do("POST", "/v1/users/n9/recommendations?k=3", tok, ""); r.status != 200 {
			t.Fatalf("list %d: %d %s", i, r.status, r.body)
		}
	}
	r := s.do("POST", "/v1/users/n9/recommendations?k=3", tok, "")
	p := r.problem(t)
	if r.status != BudgetExhaustedStatus || p.Type != TypeBudgetExhausted || p.Spent == nil || *p.Spent != 3 || *p.Cost != 1.5 || *p.Cap != 3 {
		t.Fatalf("third list: %d %s", r.status, r.body)
	}
	// The sticky list for k=3 exists (the newest fresh one): free.
	if r := s.do("GET", "/v1/users/n9/recommendations?k=3", tok, ""); r.status != 200 {
		t.Fatalf("sticky re-serve after exhaustion: %d %s", r.status, r.body)
	}
	// A sticky list for a new k must be released: refused.
	if r := s.do("GET", "/v1/users/n9/recommendations?k=2", tok, ""); r.status != BudgetExhaustedStatus || r.problem(t).Type != TypeBudgetExhausted {
		t.Fatalf("new sticky list after exhaustion: %d %s", r.status, r.body)
	}
	var b budgetResponse
	s.do("GET", "/v1/users/n9/budget", tok, "").json(t, &b)
	if b.Releases != 2 || *b.Remaining != 0 {
		t.Fatalf("budget: %+v", b)
	}
}

// TestConcurrentFresh: 40 concurrent fresh requests with a cap allowing 3
// lists give exactly 3 lists (group commit included).
func TestConcurrentFresh(t *testing.T) {
	for _, group := range []bool{true, false} {
		t.Run(fmt.Sprintf("group=%v", group), func(t *testing.T) {
			s := newTestServer(t, func(c *Config) { c.UserBudget = 3 * 5 * 0.5; c.NoGroupCommit = !group })
			tok := s.token("n10")
			other := s.token("n11")
			// The goroutines only record replies; every check runs on the
			// test goroutine (t.Fatal must not be called from others).
			replies := make([]reply, 40)
			var wg sync.WaitGroup
			for i := range replies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					replies[i] = s.do("POST", "/v1/users/n10/recommendations?k=5", tok, "")
					if i%4 == 0 { // another user's requests in the same groups
						s.do("POST", "/v1/users/n11/recommendations?k=1", other, "")
					}
				}()
			}
			wg.Wait()
			counts := map[int]int{}
			for _, r := range replies {
				counts[r.status]++
				if r.status == BudgetExhaustedStatus {
					if p := r.problem(t); p.Type != TypeBudgetExhausted {
						t.Errorf("403 of type %s", r.body)
					}
				}
			}
			if counts[200] != 3 || counts[BudgetExhaustedStatus] != 37 {
				t.Fatalf("statuses %v, want 3 x 200 and 37 x %d", counts, BudgetExhaustedStatus)
			}
			sp, _ := s.store.Budget(context.Background(), "n10")
			if sp.Releases != 3 || sp.Spent != 7.5 {
				t.Fatalf("ledger: %+v", sp)
			}
			sp, _ = s.store.Budget(context.Background(), "n11")
			if sp.Releases != 10 {
				t.Fatalf("other user's ledger: %+v", sp)
			}
		})
	}
}

// TestConcurrentStickyFirst: concurrent first requests for one sticky list
// get one list, charged once.
func TestConcurrentStickyFirst(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n12")
	replies := make([]reply, 20)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = s.do("GET", "/v1/users/n12/recommendations?k=6", tok, "")
		}()
	}
	wg.Wait()
	lists := make([][]string, len(replies))
	for i, r := range replies { // checked on the test goroutine
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var out recs
		r.json(t, &out)
		lists[i] = out.Recommendations
	}
	for _, l := range lists[1:] {
		if !slices.Equal(l, lists[0]) {
			t.Fatalf("different sticky lists: %v vs %v", l, lists[0])
		}
	}
	sp, _ := s.store.Budget(context.Background(), "n12")
	if sp.Releases != 1 || sp.Spent != 3 {
		t.Fatalf("ledger: %+v", sp)
	}
}

func TestMarks(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n1")
	before := s.state.Load()
	g := before.g
	u, _ := g.ID("n1")
	// Pick a non-edge and an edge of n1 not already protected.
	var nonEdge, edge string
	for v := range g.N() {
		v := int32(v)
		if v == u || before.prot.Has(u, v) {
			continue
		}
		if g.HasEdge(u, v) && edge == "" {
			edge = g.Label(v)
		}
		if !g.HasEdge(u, v) && nonEdge == "" {
			nonEdge = g.Label(v)
		}
	}
	r := s.do("PUT", "/v1/users/n1/protected", tok, `{"protected":[`+jsonString(nonEdge)+`,`+jsonString(edge)+`,`+jsonString(edge)+`]}`)
	var m marksResponse
	r.json(t, &m)
	want := []string{edge, nonEdge}
	slices.Sort(want)
	if r.status != 200 || !slices.Equal(m.Protected, want) || !strings.Contains(m.Note, "not retroactively") {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	after := s.state.Load()
	if after == before || after.prot.Len() != before.prot.Len()+2 {
		t.Fatalf("state not rebuilt: %d -> %d pairs", before.prot.Len(), after.prot.Len())
	}
	for _, x := range want {
		v, _ := g.ID(x)
		if !after.prot.Has(u, v) {
			t.Fatalf("pair {n1, %s} not protected after PUT", x)
		}
	}
	s.do("GET", "/v1/users/n1/protected", tok, "").json(t, &m)
	if !slices.Equal(m.Protected, want) {
		t.Fatalf("GET: %+v", m)
	}
	// Lists released after the change use the new marks; clearing restores.
	if r := s.do("GET", "/v1/users/n1/recommendations?k=3", tok, ""); r.status != 200 {
		t.Fatalf("list after marks: %d %s", r.status, r.body)
	}
	s.do("PUT", "/v1/users/n1/protected", tok, `{"protected":[]}`).json(t, &m)
	if len(m.Protected) != 0 || s.state.Load().prot.Len() != before.prot.Len() {
		t.Fatalf("clearing marks: %+v, %d pairs", m, s.state.Load().prot.Len())
	}
}

// TestOneRecommenderPerState: sticky, fresh and idempotent requests are
// served by the state's one Recommender (none is built per request: the
// state stays the same); a marks rebuild builds a new Recommender on the
// same graph and keeps the graph's influencer dictionary; a reload (a new graph)
// gets a new one.
func TestOneRecommenderPerState(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n4")
	st0 := s.state.Load()
	if st0.rec == nil || st0.dict == nil {
		t.Fatalf("state without a Recommender or label dict: %+v", st0)
	}
	for _, c := range []struct {
		method string
		hdr    []string
	}{
		{"GET", nil},
		{"POST", nil},
		{"POST", []string{"Idempotency-Key", "one-rec"}},
		{"POST", []string{"Idempotency-Key", "one-rec"}},
	} {
		if r := s.do(c.method, "/v1/users/n4/recommendations?k=3", tok, "", c.hdr...); r.status != 200 {
			t.Fatalf("%s %v: %d %s", c.method, c.hdr, r.status, r.body)
		}
		if st := s.state.Load(); st != st0 || st.rec != st0.rec {
			t.Fatalf("%s %v changed the served state", c.method, c.hdr)
		}
	}
	if r := s.do("PUT", "/v1/users/n4/protected", tok, `{"protected":["n30"]}`); r.status != 200 {
		t.Fatalf("PUT marks: %d %s", r.status, r.body)
	}
	st1 := s.state.Load()
	if st1 == st0 || st1.rec == st0.rec || st1.g != st0.g || st1.dict != st0.dict {
		t.Fatalf("marks rebuild: new state %v, new Recommender %v, same graph %v, same influencer dictionary %v (want all true)",
			st1 != st0, st1.rec != st0.rec, st1.g == st0.g, st1.dict == st0.dict)
	}
	if r := s.do("POST", "/v1/admin/reload", adminTok, ""); r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	st2 := s.state.Load()
	if st2.g == st1.g || st2.dict == st1.dict || st2.rec == st1.rec {
		t.Fatal("reload kept the previous graph's influencer dictionary or Recommender")
	}
	if r := s.do("POST", "/v1/users/n4/recommendations?k=3", tok, ""); r.status != 200 {
		t.Fatalf("fresh list after reload: %d %s", r.status, r.body)
	}
}

// TestMarksRefresh: marks set through another process (here: directly in
// the store) are picked up by the refresh loop.
func TestMarksRefresh(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MarksRefresh = 20 * time.Millisecond })
	before := s.state.Load()
	if err := s.store.SetMarks(context.Background(), "n2", []string{"n40", "n41"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.state.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("refresh did not pick up the new marks")
		}
		time.Sleep(10 * time.Millisecond)
	}
	u, _ := before.g.ID("n2")
	v, _ := before.g.ID("n40")
	if !s.state.Load().prot.Has(u, v) {
		t.Fatal("refreshed state lacks the new pair")
	}
}

func TestReload(t *testing.T) {
	fx := testFixture(t)
	dir := t.TempDir()
	gp, pp, mp := filepath.Join(dir, "g.txt"), filepath.Join(dir, "p.txt"), filepath.Join(dir, "m.json")
	for _, c := range [][2]string{{fx.graph, gp}, {fx.prot, pp}, {fx.model, mp}} {
		b, _ := os.ReadFile(c[0])
		os.WriteFile(c[1], b, 0o600)
	}
	s := newTestServer(t, func(c *Config) { c.GraphPath, c.ProtectedPath, c.ModelPath = gp, pp, mp })
	if r := s.do("POST", "/v1/admin/users", adminTok, `{"user":"newcomer"}`); r.status != 404 {
		t.Fatalf("unknown user before reload: %d", r.status)
	}
	nodes := s.state.Load().g.N()
	f, err := os.OpenFile(gp, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("newcomer n1\nnewcomer n2\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := s.do("POST", "/v1/admin/reload", adminTok, "")
	var inf stateInfo
	r.json(t, &inf)
	if r.status != 200 || inf.Nodes != nodes+1 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	tok := s.token("newcomer")
	if r := s.do("GET", "/v1/users/newcomer/recommendations?k=3", tok, ""); r.status != 200 {
		t.Fatalf("list for the new node: %d %s", r.status, r.body)
	}
	// A broken model: 422, the previous state stays.
	os.WriteFile(mp, []byte("{not a model"), 0o600)
	prev := s.state.Load()
	r = s.do("POST", "/v1/admin/reload", adminTok, "")
	if r.status != 422 || r.problem(t).Type != TypeReloadFailed || s.state.Load() != prev {
		t.Fatalf("broken reload: %d %s", r.status, r.body)
	}
	if r := s.do("GET", "/v1/users/newcomer/recommendations?k=3", tok, ""); r.status != 200 {
		t.Fatalf("serving after a failed reload: %d", r.status)
	}
}

// TestReloadUnderLoad: lists keep being served while the state is swapped.
func TestReloadUnderLoad(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n3")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad sync.Map
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r := s.do("POST", "/v1/users/n3/recommendations?k=2", tok, ""); r.status != 200 {
					bad.Store(r.status, string(r.body))
				}
			}
		}()
	}
	for range 5 {
		if r := s.do("POST", "/v1/admin/reload", adminTok, ""); r.status != 200 {
			t.Fatalf("reload: %d %s", r.status, r.body)
		}
	}
	close(stop)
	wg.Wait()
	bad.Range(func(k, v any) bool { t.Errorf("status %v during reload: %v", k, v); return true })
}

func TestProbesAndMetrics(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n1")
	s.do("GET", "/v1/users/n1/recommendations?k=2", tok, "")
	s.do("GET", "/v1/users/n2/recommendations?k=2", tok, "")
	r := s.do("GET", "/metrics", "", "")
	for _, want := range []string{
		`dplp_http_requests_total{route="GET /v1/users/{label}/recommendations",status="200"} 1`,
		`dplp_http_requests_total{route="GET /v1/users/{label}/recommendations",status="403"} 1`,
		`dplp_http_request_duration_seconds_bucket{route="POST /v1/admin/users",status="201"`,
		`dplp_releases_total{kind="fresh"} 1`,
		`dplp_eps_charged_total 1`,
		`dplp_budget_refusals_total 0`,
		`dplp_store_duration_seconds_bucket{op="charge"`,
		`dplp_group_commit_items_count 1`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	s.draining.Store(true)
	if r := s.do("GET", "/readyz", "", ""); r.status != 503 || r.problem(t).Type != TypeUnavailable {
		t.Fatalf("readyz while draining: %d", r.status)
	}
	if r := s.do("GET", "/healthz", "", ""); r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
}

// TestGracefulShutdown: cancelling Serve's context lets an in-flight
// request finish.
func TestGracefulShutdown(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, 10*time.Second) }()
	// Hold the rebuild lock so that a PUT of marks stays in flight.
	s.rebuildMu.Lock()
	got := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("PUT", "http://"+ln.Addr().String()+"/v1/users/n1/protected", strings.NewReader(`{"protected":["n30"]}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	time.Sleep(200 * time.Millisecond) // the request reaches the handler
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	s.rebuildMu.Unlock()
	if code := <-got; code != 200 {
		t.Fatalf("in-flight request: %d", code)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	fx := testFixture(t)
	base := Config{GraphPath: fx.graph, ProtectedPath: fx.prot, ModelPath: fx.model, AdminToken: adminTok, StoreDSN: "sqlite:" + filepath.Join(t.TempDir(), "x.db")}
	for name, mod := range map[string]func(*Config){
		"short admin token": func(c *Config) { c.AdminToken = "short" },
		"NaN budget":        func(c *Config) { c.UserBudget = math.NaN() },
		"negative budget":   func(c *Config) { c.UserBudget = -1 },
		"negative k-max":    func(c *Config) { c.KMax = -1 },
		"no graph":          func(c *Config) { c.GraphPath = "" },
		"missing model":     func(c *Config) { c.ModelPath = filepath.Join(fx.dir, "none") },
		"bad store":         func(c *Config) { c.StoreDSN = "mysql://x" },
	} {
		c := base
		mod(&c)
		if s, err := New(c); err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

// ---- OpenAPI ----

type openAPIDocT struct {
	Paths map[string]map[string]struct {
		Responses map[string]any `json:"responses"`
	} `json:"paths"`
}

func loadDoc(t testing.TB) openAPIDocT {
	var d openAPIDocT
	if err := json.Unmarshal(openAPIDoc, &d); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return d
}

// operation finds the documented operation answering method and path.
func (d openAPIDocT) operation(s *Server, method, path string) (string, map[string]any, bool) {
	req := httptest.NewRequest(method, path, nil)
	_, pat := s.mux.Handler(req)
	if pat == "" {
		return "", nil, false
	}
	m, p, _ := strings.Cut(pat, " ")
	op, ok := d.Paths[p][strings.ToLower(m)]
	return pat, op.Responses, ok
}

// checkStatus fails unless status is documented for the operation serving
// method and path (unrouted requests: 404 and 405 are always documented).
func (d openAPIDocT) checkStatus(t testing.TB, s *Server, method, path string, status int) {
	t.Helper()
	pat, resps, ok := d.operation(s, method, path)
	if pat == "" {
		if status != 404 && status != 405 {
			t.Errorf("unrouted %s %s answered %d", method, path, status)
		}
		return
	}
	if !ok {
		t.Errorf("route %s is not in the OpenAPI document", pat)
		return
	}
	if _, ok := resps[fmt.Sprint(status)]; !ok {
		t.Errorf("%s answered %d, not documented for it", pat, status)
	}
}

// TestOpenAPI: every registered route is documented, every documented
// operation is routed, and answers a plain request with a documented status.
func TestOpenAPI(t *testing.T) {
	s := newTestServer(t, nil)
	d := loadDoc(t)
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	json.Unmarshal(openAPIDoc, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	routes := map[string]bool{}
	for _, r := range s.Routes() {
		routes[r] = true
		m, p, _ := strings.Cut(r, " ")
		if _, ok := d.Paths[p][strings.ToLower(m)]; !ok {
			t.Errorf("route %s is not documented", r)
		}
	}
	tok := s.token("n1")
	for p, ops := range d.Paths {
		for m := range ops {
			method := strings.ToUpper(m)
			if !routes[method+" "+p] {
				t.Errorf("documented %s %s is not routed", method, p)
				continue
			}
			path := strings.ReplaceAll(p, "{label}", "n1")
			if method == "DELETE" {
				s.token("n2")
				path = strings.ReplaceAll(p, "{label}", "n2")
			}
			if strings.HasSuffix(p, "/recommendations") {
				path += "?k=2"
			}
			body := ""
			switch {
			case strings.HasSuffix(p, "/protected") && method == "PUT":
				body = `{"protected":["n3"]}`
			case p == "/v1/admin/users":
				body = `{"user":"n1"}`
			}
			token := tok
			if strings.HasPrefix(p, "/v1/admin/") {
				token = adminTok
			}
			r := s.do(method, path, token, body)
			if r.status >= 400 {
				t.Errorf("%s %s: %d %s", method, path, r.status, r.body)
			}
			d.checkStatus(t, s.Server, method, path, r.status)
			if p == "/v1/admin/users" {
				var out createUserResponse
				r.json(t, &out)
				tok = out.Token
			}
		}
	}
	// Served as JSON at /openapi.json, byte for byte.
	if r := s.do("GET", "/openapi.json", "", ""); !bytes.Equal(r.body, openAPIDoc) || r.header.Get("Content-Type") != "application/json" {
		t.Fatal("/openapi.json differs from the embedded document")
	}
}

// FuzzHandlers posts arbitrary bodies (and Idempotency-Keys) to every
// route that reads a body: never a panic, always 2xx or problem+json.
func FuzzHandlers(f *testing.F) {
	s := newTestServer(f, func(c *Config) { c.MaxBodyBytes = 4096; c.UserBudget = 1e6 })
	tok := s.token("n1")
	for _, seed := range []string{``, `{}`, `null`, `{"user":"n2"}`, `{"protected":["n2","n3"]}`, `{"protected":null}`,
		`{"user":"n1","x":1}`, `[`, `{"user":"\u0000"}`, `"str"`, `{"protected":["n1"]}`, `{} {}`, strings.Repeat("[", 5000)} {
		for route := range uint8(6) {
			f.Add(route, []byte(seed), "")
		}
	}
	f.Add(uint8(3), []byte(`{}`), "key-1")
	routes := []struct{ method, path, token string }{
		{"POST", "/v1/admin/users", adminTok},
		{"PUT", "/v1/users/n1/protected", tok},
		{"POST", "/v1/admin/reload", adminTok},
		{"POST", "/v1/users/n1/recommendations?k=2", tok},
		{"PUT", "/v1/users/n1/protected", "garbage"},
		{"DELETE", "/v1/admin/users/n9/token", adminTok},
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte, idem string) {
		rt := routes[int(route)%len(routes)]
		req := httptest.NewRequest(rt.method, rt.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+rt.token)
		if idem != "" {
			req.Header["Idempotency-Key"] = []string{idem}
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		ct := w.Header().Get("Content-Type")
		if w.Code/100 == 2 {
			if w.Code != 204 && ct != "application/json" {
				t.Fatalf("%s %s: %d with %q", rt.method, rt.path, w.Code, ct)
			}
			return
		}
		if ct != "application/problem+json" {
			t.Fatalf("%s %s: %d with %q: %s", rt.method, rt.path, w.Code, ct, w.Body)
		}
		var p Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != w.Code || p.Type == "" {
			t.Fatalf("malformed problem: %s", w.Body)
		}
		if w.Code >= 500 {
			t.Fatalf("server error: %s", w.Body)
		}
	})
}

// TestConcurrentSameKey: concurrent retries with one Idempotency-Key get one
// list, charged once (they may land in one group commit).
func TestConcurrentSameKey(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n13")
	out := make([]recs, 12)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.do("POST", "/v1/users/n13/recommendations?k=4", tok, "", "Idempotency-Key", "same")
			if r.status != 200 {
				t.Errorf("%d %s", r.status, r.body)
				return
			}
			r.json(t, &out[i])
		}()
	}
	wg.Wait()
	fresh := 0
	for _, o := range out {
		if o.Fresh {
			fresh++
		}
		if o.ReleaseID != out[0].ReleaseID || !slices.Equal(o.Recommendations, out[0].Recommendations) {
			t.Fatalf("different lists for one key: %+v vs %+v", o, out[0])
		}
	}
	sp, _ := s.store.Budget(context.Background(), "n13")
	if fresh != 1 || sp.Releases != 1 {
		t.Fatalf("%d fresh answers, %d releases; want 1 and 1", fresh, sp.Releases)
	}
}

// TestOddLabels: labels with '/', '.', '%' and non-ASCII characters work in
// paths (escaped), tokens and marks.
func TestOddLabels(t *testing.T) {
	fx := testFixture(t)
	dir := t.TempDir()
	gp := filepath.Join(dir, "g.txt")
	b, _ := os.ReadFile(fx.graph)
	odd := []string{"a/b", "x.y%z", "zoë→π"}
	extra := ""
	for _, l := range odd {
		extra += l + " n1\n" + l + " n2\n"
	}
	os.WriteFile(gp, append(b, extra...), 0o600)
	s := newTestServer(t, func(c *Config) { c.GraphPath = gp })
	for _, l := range odd {
		tok := s.token(l)
		p := "/v1/users/" + url.PathEscape(l)
		if r := s.do("GET", p+"/recommendations?k=3", tok, ""); r.status != 200 {
			t.Fatalf("%q: %d %s", l, r.status, r.body)
		}
		var bud budgetResponse
		s.do("GET", p+"/budget", tok, "").json(t, &bud)
		if bud.User != l || bud.Releases != 1 {
			t.Fatalf("%q: budget %+v", l, bud)
		}
		other := odd[0]
		if l == other {
			other = odd[1]
		}
		var m marksResponse
		s.do("PUT", p+"/protected", tok, `{"protected":[`+jsonString(other)+`]}`).json(t, &m)
		if !slices.Equal(m.Protected, []string{other}) {
			t.Fatalf("%q: marks %+v", l, m)
		}
		if r := s.do("GET", "/v1/users/"+url.PathEscape(other)+"/budget", tok, ""); r.status != 403 {
			t.Fatalf("%q reading %q: %d", l, other, r.status)
		}
		if r := s.do("DELETE", "/v1/admin/users/"+url.PathEscape(l)+"/token", adminTok, ""); r.status != 204 {
			t.Fatalf("revoke %q: %d", l, r.status)
		}
	}
}

// TestNoSeedOption: the service cannot be configured with seeded noise.
func TestNoSeedOption(t *testing.T) {
	ct := reflect.TypeOf(Config{})
	for i := range ct.NumField() {
		if strings.Contains(strings.ToLower(ct.Field(i).Name), "seed") {
			t.Fatalf("Config has a field %s", ct.Field(i).Name)
		}
	}
}

// TestMarksBurst: concurrent PUTs share rebuilds, and each returns only
// once its own marks are served.
func TestMarksBurst(t *testing.T) {
	s := newTestServer(t, nil)
	const n = 16
	toks := make([]string, n)
	for i := range n {
		toks[i] = s.token(fmt.Sprintf("n%d", i))
	}
	g := s.state.Load().g
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me, x := fmt.Sprintf("n%d", i), g.Label(int32(30+i))
			if x == me {
				x = g.Label(int32(50))
			}
			r := s.do("PUT", "/v1/users/"+me+"/protected", toks[i], `{"protected":["`+x+`"]}`)
			if r.status != 200 {
				t.Errorf("%s: %d %s", me, r.status, r.body)
				return
			}
			u, _ := g.ID(me)
			v, _ := g.ID(x)
			if !s.state.Load().prot.Has(u, v) {
				t.Errorf("PUT by %s returned before its pair was served", me)
			}
		}()
	}
	wg.Wait()
	var m dto.Metric
	if err := s.met.reloads.WithLabelValues("marks", "ok").Write(&m); err != nil {
		t.Fatal(err)
	}
	rebuilds := m.GetCounter().GetValue()
	if rebuilds < 1 || rebuilds > n {
		t.Fatalf("%v rebuilds for %d PUTs", rebuilds, n)
	}
	t.Logf("%d concurrent PUTs: %v rebuilds", n, rebuilds)
}
