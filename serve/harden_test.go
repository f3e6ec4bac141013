package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/snapshot"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// doFrom is do from the peer address remote ("" keeps httptest's).
func (s *testServer) doFrom(remote, method, path, token, body string, hdr ...string) reply {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if remote != "" {
		req.RemoteAddr = remote
	}
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

// fakeClock is a settable time source for the rate limits and token
// rotation: no test depends on the wall clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func withClock(s *testServer) *fakeClock {
	c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = c.now
	return c
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnauthenticatedMemoryBounded: 6,000 requests with well-formed tokens
// claiming unique ~45 KB labels (not nodes) are all 401, reach neither the
// store nor the token cache, and leave the heap within 50 MB of where it
// started (each used to leave ~68 KB behind: ~400 MB).
func TestUnauthenticatedMemoryBounded(t *testing.T) {
	s := newTestServer(t, nil)
	tokenOps := func() uint64 { return histCount(t, s, "token_hash") }
	before, ops0 := heapInUse(), tokenOps()
	secret := strings.Repeat("A", b64.EncodedLen(secretBytes))
	pad := strings.Repeat("x", 45<<10)
	for i := range 6000 {
		tok := b64.EncodeToString([]byte(pad+strconv.Itoa(i))) + "." + secret
		if r := s.do("GET", "/v1/users/n1/budget", tok, ""); r.status != http.StatusUnauthorized {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	after := heapInUse()
	if after > before && after-before > 50<<20 {
		t.Fatalf("heap grew by %d MB under unauthenticated requests (limit 50 MB)", (after-before)>>20)
	}
	if n := tokenOps() - ops0; n != 0 {
		t.Fatalf("%d token lookups reached the store for labels that are not nodes", n)
	}
	s.cache.mu.Lock()
	cached := s.cache.tokens.len()
	s.cache.mu.Unlock()
	if cached != 0 {
		t.Fatalf("%d token cache entries for labels that are not nodes", cached)
	}
	// A short label that is a node is still looked up (and a forged
	// secret refused).
	if r := s.do("GET", "/v1/users/n1/budget", b64.EncodeToString([]byte("n1"))+"."+secret, ""); r.status != http.StatusUnauthorized {
		t.Fatalf("forged token for a node: %d", r.status)
	}
	if tokenOps()-ops0 != 1 {
		t.Fatal("a token claiming a node was not looked up")
	}
}

// histCount is the number of store calls of op observed so far.
func histCount(t *testing.T, s *testServer, op string) uint64 {
	t.Helper()
	h, err := s.met.storeLatency.GetMetricWithLabelValues(op)
	if err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := h.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// counterValue is a counter's current value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestTokenLRU: the token cache keeps within its byte budget, evicts the
// least recently used entry first and expires entries.
func TestTokenLRU(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hash := make([]byte, 32)
	per := entryBytes("u0", hash)
	for _, c := range []struct {
		name     string
		budget   int64
		puts     []string
		touch    string // read before the last put
		wantKeep []string
		wantGone []string
	}{
		{"fits", 3 * per, []string{"u0", "u1", "u2"}, "", []string{"u0", "u1", "u2"}, nil},
		{"evicts oldest", 2 * per, []string{"u0", "u1", "u2"}, "", []string{"u1", "u2"}, []string{"u0"}},
		{"evicts least recently used", 2 * per, []string{"u0", "u1", "u2"}, "u0", []string{"u0", "u2"}, []string{"u1"}},
		{"entry over budget not kept", per - 1, []string{"u0"}, "", nil, []string{"u0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTokenLRU(c.budget)
			for i, u := range c.puts {
				if i == len(c.puts)-1 && c.touch != "" {
					l.get(c.touch, t0)
				}
				l.put(u, hash, t0.Add(time.Minute))
			}
			if l.bytes > c.budget {
				t.Fatalf("%d bytes over a budget of %d", l.bytes, c.budget)
			}
			for _, u := range c.wantKeep {
				if _, ok := l.get(u, t0); !ok {
					t.Errorf("%s evicted", u)
				}
			}
			for _, u := range c.wantGone {
				if _, ok := l.get(u, t0); ok {
					t.Errorf("%s kept", u)
				}
			}
		})
	}
	l := newTokenLRU(1 << 20)
	l.put("u", hash, t0.Add(time.Second))
	if _, ok := l.get("u", t0.Add(2*time.Second)); ok || l.len() != 0 || l.bytes != 0 {
		t.Fatalf("expired entry served or kept: %d entries, %d bytes", l.len(), l.bytes)
	}
}

// TestRateLimits: per-token, per-address and failed-authentication token
// buckets, answered 429 problem+json with Retry-After.
func TestRateLimits(t *testing.T) {
	t.Run("per token: a burst of 500 at --rate-limit 50", func(t *testing.T) {
		s := newTestServer(t, func(c *Config) { c.RateLimit = 50 })
		clk := withClock(s)
		tok := s.token("n1")
		counts := map[int]int{}
		for i := range 500 {
			// Each from its own address: only the token's limit applies.
			r := s.doFrom(fmt.Sprintf("10.1.%d.%d:1", i/250, i%250), "GET", "/v1/users/n1/budget", tok, "")
			counts[r.status]++
			if r.status == http.StatusTooManyRequests {
				if p := r.problem(t); p.Type != TypeRateLimited {
					t.Fatalf("429 of type %s", p.Type)
				}
				if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
					t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
				}
			}
		}
		if counts[200] != 50 || counts[429] != 450 {
			t.Fatalf("statuses %v, want 50 x 200 and 450 x 429", counts)
		}
		if v := counterValue(t, s.met.rateLimited.WithLabelValues("user")); v != 450 {
			t.Fatalf("rate-limited metric %v", v)
		}
		clk.add(time.Second) // the bucket refills
		if r := s.doFrom("10.9.9.9:1", "GET", "/v1/users/n1/budget", tok, ""); r.status != 200 {
			t.Fatalf("after a second: %d", r.status)
		}
	})
	t.Run("per address", func(t *testing.T) {
		s := newTestServer(t, func(c *Config) { c.RateLimit = 5; c.RateBurst = 10 })
		withClock(s)
		toks := map[string]string{}
		for _, u := range []string{"n1", "n2", "n3"} {
			toks[u] = s.token(u)
		}
		got := 0
		for i := range 30 {
			u := []string{"n1", "n2", "n3"}[i%3]
			if r := s.doFrom("192.0.2.7:5", "GET", "/v1/users/"+u+"/budget", toks[u], ""); r.status == 200 {
				got++
			}
		}
		if got != 10 {
			t.Fatalf("%d requests served from one address, want the burst (10)", got)
		}
		if r := s.doFrom("192.0.2.8:5", "GET", "/v1/users/n1/budget", toks["n1"], ""); r.status != 200 {
			t.Fatalf("another address: %d", r.status)
		}
		if r := s.doFrom("192.0.2.7:5", "GET", "/healthz", "", ""); r.status != 200 {
			t.Fatalf("probes are not limited: %d", r.status)
		}
	})
	t.Run("failed authentication", func(t *testing.T) {
		s := newTestServer(t, func(c *Config) { c.AuthFailLimit = 1; c.AuthFailBurst = 3 })
		clk := withClock(s)
		tok := s.token("n1")
		var statuses []int
		for range 5 {
			statuses = append(statuses, s.doFrom("198.51.100.1:9", "GET", "/v1/users/n1/budget", "nonsense", "").status)
		}
		if fmt.Sprint(statuses) != "[401 401 401 429 429]" {
			t.Fatalf("statuses %v", statuses)
		}
		// The address is blocked, even with a good token; others are not.
		if r := s.doFrom("198.51.100.1:9", "GET", "/v1/users/n1/budget", tok, ""); r.status != 429 {
			t.Fatalf("blocked address with a good token: %d", r.status)
		}
		if r := s.doFrom("198.51.100.2:9", "GET", "/v1/users/n1/budget", tok, ""); r.status != 200 {
			t.Fatalf("other address: %d", r.status)
		}
		clk.add(time.Second)
		if r := s.doFrom("198.51.100.1:9", "GET", "/v1/users/n1/budget", tok, ""); r.status != 200 {
			t.Fatalf("after the bucket refilled: %d", r.status)
		}
	})
}

// TestLimiterBounded: a limiter tracks at most its max keys.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(1, 1, 100)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		l.take(strconv.Itoa(i), now)
	}
	if len(l.b) > 100 {
		t.Fatalf("%d keys tracked (max 100)", len(l.b))
	}
	if ok, _ := newLimiter(0, 0, 10).take("x", now); !ok {
		t.Fatal("a zero rate limits")
	}
}

func TestClientAddr(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, c := range []struct {
		name, remote string
		xff          []string
		trusted      []netip.Prefix
		want         string
	}{
		{"no proxies: header ignored", "203.0.113.5:1", []string{"1.2.3.4"}, nil, "203.0.113.5"},
		{"untrusted peer: header ignored", "203.0.113.5:1", []string{"1.2.3.4"}, proxies, "203.0.113.5"},
		{"trusted peer", "10.0.0.1:1", []string{"1.2.3.4"}, proxies, "1.2.3.4"},
		{"rightmost untrusted", "10.0.0.1:1", []string{"6.6.6.6, 1.2.3.4, 10.0.0.2"}, proxies, "1.2.3.4"},
		{"several headers", "10.0.0.1:1", []string{"6.6.6.6", "1.2.3.4"}, proxies, "1.2.3.4"},
		{"garbage stops at the last trusted hop", "10.0.0.1:1", []string{"1.2.3.4, junk, 10.0.0.3"}, proxies, "10.0.0.3"},
		{"no header", "10.0.0.1:1", nil, proxies, "10.0.0.1"},
		{"IPv6 peer", "[::1]:1", []string{"2001:db8::1"}, proxies, "2001:db8::1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for _, h := range c.xff {
				r.Header.Add("X-Forwarded-For", h)
			}
			if got := clientAddr(r, c.trusted).String(); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestAccessLog: client address and request ID (accepted and echoed, or
// generated), never a label or token.
func TestAccessLog(t *testing.T) {
	var buf lockedBuf
	s := newTestServer(t, func(c *Config) {
		c.AccessLog = true
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	tok := s.token("n1")
	r := s.doFrom("10.0.0.1:1", "GET", "/v1/users/n1/budget", tok, "", "X-Request-Id", "req-42.a", "X-Forwarded-For", "203.0.113.9")
	if r.status != 200 || r.header.Get("X-Request-Id") != "req-42.a" {
		t.Fatalf("%d, X-Request-Id %q", r.status, r.header.Get("X-Request-Id"))
	}
	r2 := s.do("GET", "/v1/users/n1/budget", tok, "", "X-Request-Id", "bad id with spaces")
	gen := r2.header.Get("X-Request-Id")
	if gen == "" || gen == "bad id with spaces" {
		t.Fatalf("invalid request ID echoed or none generated: %q", gen)
	}
	var found bool
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, `"request_id":"req-42.a"`) {
			found = strings.Contains(line, `"client":"203.0.113.9"`)
		}
		if strings.Contains(line, tok) || strings.Contains(line, tok[strings.IndexByte(tok, '.')+1:]) || strings.Contains(line, "/v1/users/n1") {
			t.Fatalf("log line holds a token or a label: %s", line)
		}
	}
	if !found {
		t.Fatalf("no access log line with the client address and request ID:\n%s", buf.String())
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestCheapRefusals: once the cap cannot pay for a list of K, requests are
// refused from the cached spend: no sampling (no call into the release
// path), no ledger transaction.
func TestCheapRefusals(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.UserBudget = 2 * 5 * 0.5 })
	tok := s.token("n1")
	for i := range 2 {
		if r := s.do("POST", "/v1/users/n1/recommendations?k=5", tok, ""); r.status != 200 {
			t.Fatalf("list %d: %d %s", i, r.status, r.body)
		}
	}
	calls, charges, early := counterValue(t, s.met.releaseCalls), histCount(t, s, "charge"), counterValue(t, s.met.earlyRefusals)
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/users/n1/recommendations?k=5"},
		{"POST", "/v1/users/n1/recommendations?k=1"},
		{"GET", "/v1/users/n1/recommendations?k=3"}, // no sticky list at k=3 yet
	} {
		for range 10 {
			r := s.do(c.method, c.path, tok, "")
			if r.status != BudgetExhaustedStatus {
				t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
			if p := r.problem(t); p.Type != TypeBudgetExhausted || p.Spent == nil || *p.Spent != 5 || p.Cap == nil || *p.Cap != 5 {
				t.Fatalf("problem %s", r.body)
			}
		}
	}
	if d := counterValue(t, s.met.releaseCalls) - calls; d != 0 {
		t.Fatalf("%v refused requests reached the release path (sampling)", d)
	}
	if d := histCount(t, s, "charge") - charges; d != 0 {
		t.Fatalf("%d ledger transactions for refused requests", d)
	}
	if d := counterValue(t, s.met.earlyRefusals) - early; d != 30 {
		t.Fatalf("%v early refusals, want 30", d)
	}
	// The sticky list at k=5 is re-served free (it is not a fresh list).
	if r := s.do("GET", "/v1/users/n1/recommendations?k=5", tok, ""); r.status != 200 {
		t.Fatalf("sticky re-serve after exhaustion: %d %s", r.status, r.body)
	}
	// A key's retry still gets its list (the key's release is in the store).
	s2 := newTestServer(t, func(c *Config) { c.UserBudget = 5 * 0.5 })
	tok2 := s2.token("n2")
	a := s2.do("POST", "/v1/users/n2/recommendations?k=5", tok2, "", "Idempotency-Key", "k1")
	b := s2.do("POST", "/v1/users/n2/recommendations?k=5", tok2, "", "Idempotency-Key", "k1")
	if a.status != 200 || b.status != 200 {
		t.Fatalf("keyed retry after exhaustion: %d then %d %s", a.status, b.status, b.body)
	}
	// A new key from the exhausted user is refused before sampling too.
	calls, charges = counterValue(t, s2.met.releaseCalls), histCount(t, s2, "charge")
	for i := range 5 {
		r := s2.do("POST", "/v1/users/n2/recommendations?k=5", tok2, "", "Idempotency-Key", fmt.Sprintf("new-%d", i))
		if r.status != BudgetExhaustedStatus {
			t.Fatalf("new key after exhaustion: %d %s", r.status, r.body)
		}
	}
	if d := counterValue(t, s2.met.releaseCalls) - calls; d != 0 {
		t.Fatalf("%v keyed refusals reached the release path (sampling)", d)
	}
	if d := histCount(t, s2, "charge") - charges; d != 0 {
		t.Fatalf("%d ledger transactions for keyed refusals", d)
	}
	// And the old key is still a retry that gets its list.
	if r := s2.do("POST", "/v1/users/n2/recommendations?k=5", tok2, "", "Idempotency-Key", "k1"); r.status != 200 {
		t.Fatalf("keyed retry after refusals: %d %s", r.status, r.body)
	}
}

// TestHeadAndPaths: HEAD is 405 everywhere (and never charges); methods
// are explicit in Allow; paths the mux would redirect get problems.
func TestHeadAndPaths(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n1")
	doc := loadDoc(t)
	for _, c := range []struct {
		path, allow string
	}{
		{"/v1/users/n1/recommendations?k=3", "GET, POST"},
		{"/v1/users/n1/budget", "GET"},
		{"/v1/users/n1/protected", "GET, PUT"},
		{"/v1/admin/state", "GET"},
		{"/healthz", "GET"},
		{"/openapi.json", "GET"},
	} {
		r := s.do("HEAD", c.path, tok, "")
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != c.allow {
			t.Errorf("HEAD %s: %d, Allow %q (want 405, %q)", c.path, r.status, r.header.Get("Allow"), c.allow)
		}
		doc.checkStatus(t, s.Server, "HEAD", c.path, r.status)
	}
	if sp, _ := s.store.Budget(context.Background(), "n1"); sp.Releases != 0 {
		t.Fatalf("HEAD released %d lists", sp.Releases)
	}
	if r := s.do("DELETE", "/v1/users/n1/budget", tok, ""); r.header.Get("Allow") != "GET" {
		t.Fatalf("Allow %q lists more than the routed methods", r.header.Get("Allow"))
	}
	for _, p := range []string{"/v1/users/n1/../n1/budget", "/v1//users/n1/budget", "/v1/./users/n1/budget", "//v1/users/n1/budget", "/v1/users/n1/budget/"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path, req.URL.RawPath = p, ""
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusNotFound || w.Header().Get("Content-Type") != "application/problem+json" || w.Header().Get("Location") != "" {
			t.Errorf("%s: %d %q %s", p, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	}
}

// TestMarksLookups: GET .../protected reads one user's marks (never all);
// PUT's unknown labels are checked in one pass and the echo is capped.
func TestMarksLookups(t *testing.T) {
	s := newTestServer(t, nil)
	tok := s.token("n1")
	if r := s.do("PUT", "/v1/users/n1/protected", tok, `{"protected":["n5","n7"]}`); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	s.store.SetMarks(context.Background(), "n2", []string{"n9"})
	var all int
	cs := &marksCounting{Store: ledger.Untimed(s.cache.Store), all: &all}
	s.cache.Store = cs
	var m marksResponse
	r := s.do("GET", "/v1/users/n1/protected", tok, "")
	r.json(t, &m)
	if r.status != 200 || strings.Join(m.Protected, ",") != "n5,n7" {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if all != 0 {
		t.Fatalf("GET .../protected read every user's marks %d time(s)", all)
	}
	got, err := ledger.UserMarks(context.Background(), s.store, "n2")
	if err != nil || strings.Join(got, ",") != "n9" {
		t.Fatalf("ledger.UserMarks: %v %v", got, err)
	}
	if got, err := ledger.UserMarks(context.Background(), s.store, "nobody"); err != nil || got != nil {
		t.Fatalf("ledger.UserMarks of a user without marks: %v %v", got, err)
	}
	s.cfg.MaxMarks = 20000
	labels := make([]string, 10000)
	for i := range labels {
		labels[i] = fmt.Sprintf("ghost-%d-%s", i, strings.Repeat("y", 300*(i%10/9)))
	}
	body, _ := json.Marshal(map[string][]string{"protected": labels})
	r = s.do("PUT", "/v1/users/n1/protected", tok, string(body))
	p := r.problem(t)
	if len(p.Unknown) != maxUnknownEcho || !strings.HasPrefix(p.Detail, "10000 unknown label(s)") || !strings.Contains(p.Detail, "and 9980 more") {
		t.Fatalf("unknown labels: %d echoed, detail %.200s", len(p.Unknown), p.Detail)
	}
	for _, u := range p.Unknown {
		if len(u) > maxEchoBytes+3 {
			t.Fatalf("echoed label of %d bytes", len(u))
		}
	}
}

type marksCounting struct {
	ledger.Store
	all *int
}

func (m *marksCounting) Marks(ctx context.Context) (map[string][]string, error) {
	*m.all++
	return m.Store.Marks(ctx)
}

func (m *marksCounting) UserMarks(ctx context.Context, user string) ([]string, error) {
	return ledger.UserMarks(ctx, m.Store, user)
}

func writeToken(t *testing.T, path, tok string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(tok+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestReadAdminTokenFile(t *testing.T) {
	dir := t.TempDir()
	good := strings.Repeat("k", 32)
	for _, c := range []struct {
		name, tok string
		mode      os.FileMode
		want      string // error substring; "" for success
	}{
		{"ok", good, 0o600, ""},
		{"ok read-only", good, 0o400, ""},
		{"group readable", good, 0o640, "group or others"},
		{"world readable", good, 0o644, "group or others"},
		{"16 bytes of a", strings.Repeat("a", 16), 0o600, "at least 32 bytes"},
		{"31 bytes", strings.Repeat("a", 31), 0o600, "at least 32 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			writeToken(t, p, c.tok, c.mode)
			tok, err := ReadAdminTokenFile(p)
			switch {
			case c.want == "" && (err != nil || tok != c.tok):
				t.Fatalf("got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			case err != nil && strings.Contains(err.Error(), c.tok):
				t.Fatal("the error holds the token")
			}
		})
	}
}

// TestAdminTokenRotation: a changed token file is read by Reload and by
// POST /v1/admin/reload; the old token works for the grace period only; an
// invalid new file keeps the current token.
func TestAdminTokenRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "admin.token")
	old, next, third := strings.Repeat("o", 40), strings.Repeat("n", 40), strings.Repeat("t", 40)
	writeToken(t, p, old, 0o600)
	s := newTestServer(t, func(c *Config) { c.AdminToken = ""; c.AdminTokenFile = p; c.AdminTokenGrace = time.Minute })
	clk := withClock(s)
	state := func(tok string) int { return s.do("GET", "/v1/admin/state", tok, "").status }
	if state(old) != 200 {
		t.Fatal("the file's token is not the admin token")
	}
	writeToken(t, p, next, 0o600)
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if state(next) != 200 || state(old) != 200 {
		t.Fatal("after rotation, the new token and (in the grace period) the old one must work")
	}
	clk.add(time.Minute + time.Second)
	if state(old) != 401 || state(next) != 200 {
		t.Fatal("the old token works after the grace period")
	}
	writeToken(t, p, third, 0o600)
	if r := s.do("POST", "/v1/admin/reload", next, ""); r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if state(third) != 200 {
		t.Fatal("POST /v1/admin/reload did not read the new token")
	}
	writeToken(t, p, third, 0o644)
	r := s.do("POST", "/v1/admin/reload", third, "")
	if r.status != http.StatusUnprocessableEntity || strings.Contains(string(r.body), third) {
		t.Fatalf("reload with a world-readable token file: %d %s", r.status, r.body)
	}
	if state(third) != 200 {
		t.Fatal("a failed token reload dropped the current token")
	}
}

// TestLedgerFileModes: a ledger created through the service is 0600, WAL,
// SHM and the charge journal's file (every writer's lock) included.
func TestLedgerFileModes(t *testing.T) {
	fx := testFixture(t)
	path := filepath.Join(t.TempDir(), "sub", "ledger.db")
	s, err := New(Config{GraphPath: fx.graph, ProtectedPath: fx.prot, ModelPath: fx.model, StoreDSN: "sqlite:" + path, CreateStore: true,
		AdminToken: adminTok, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.do0("POST", "/v1/admin/users", adminTok, `{"user":"n1"}`)
	if h != 201 {
		t.Fatalf("create: %d", h)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm", path + ledger.JournalSuffix} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %s, want 0600", filepath.Base(f), st.Mode().Perm())
		}
	}
}

// TestChargeJournalService: a service with the charge journal charges fresh
// lists (the budget and the sticky list follow at once), a retried key is
// charged once, the cap holds, and after Close the ledger holds every
// charge for a process without the journal.
func TestChargeJournalService(t *testing.T) {
	fx := testFixture(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	srv, err := New(Config{GraphPath: fx.graph, ProtectedPath: fx.prot, ModelPath: fx.model, StoreDSN: "sqlite:" + path, CreateStore: true,
		ChargeJournal: true, AdminToken: adminTok, UserBudget: 4, KMax: 20, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{Server: srv, t: t, fx: fx}
	tok := s.token("n1")
	var ids []int64
	var spent float64
	for i := range 3 {
		r := s.do("POST", "/v1/users/n1/recommendations?k=3", tok, "", "Idempotency-Key", "key-"+strconv.Itoa(i/2))
		if r.status != 200 {
			t.Fatalf("fresh %d: %d %s", i, r.status, r.body)
		}
		var out recsResponse
		r.json(t, &out)
		if (i != 1) != out.Fresh {
			t.Fatalf("fresh %d (key %d): fresh=%v", i, i/2, out.Fresh)
		}
		if out.Fresh {
			ids = append(ids, out.ReleaseID)
			spent += out.Cost
		}
		if i == 1 && out.ReleaseID != ids[0] {
			t.Fatalf("retried key: release %d, first %d", out.ReleaseID, ids[0])
		}
	}
	var b budgetResponse
	s.do("GET", "/v1/users/n1/budget", tok, "").json(t, &b)
	if b.Spent != spent || b.Releases != 2 {
		t.Fatalf("budget %+v, want spent %v over 2 lists", b, spent)
	}
	var sticky recsResponse
	s.do("GET", "/v1/users/n1/recommendations?k=3", tok, "").json(t, &sticky)
	if sticky.ReleaseID != ids[1] || sticky.Fresh {
		t.Fatalf("sticky list %d, want the latest fresh one %d", sticky.ReleaseID, ids[1])
	}
	for {
		r := s.do("POST", "/v1/users/n1/recommendations?k=3", tok, "")
		if r.status == 403 {
			break
		}
		var out recsResponse
		r.json(t, &out)
		if r.status != 200 || out.Spent > 4 {
			t.Fatalf("fresh: %d, spent %v over the cap", r.status, out.Spent)
		}
		spent = out.Spent
	}
	if r := s.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	if m := srv.metricsText(); !strings.Contains(m, "\ndplp_journal_pending_lists ") || !strings.Contains(m, "\ndplp_journal_records_total ") {
		t.Fatalf("no journal metrics:\n%s", m)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := ledger.OpenWith(context.Background(), "sqlite:"+path, ledger.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sp, err := st.Budget(context.Background(), "n1")
	if err != nil || sp.Spent != spent {
		t.Fatalf("ledger after Close: %+v %v, service said %v", sp, err, spent)
	}
}

// do0 is a request to a bare Server (status only).
func (s *Server) do0(method, path, token, body string) int {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w.Code
}

// TestStoreOpening: a missing ledger is refused without CreateStore (and
// nothing is created); the start-up log names the store (redacted), the
// caps, the privacy unit and the build.
func TestStoreOpening(t *testing.T) {
	fx := testFixture(t)
	path := filepath.Join(t.TempDir(), "l.db")
	var buf lockedBuf
	cfg := Config{GraphPath: fx.graph, ProtectedPath: fx.prot, ModelPath: fx.model, StoreDSN: "sqlite:" + path,
		AdminToken: adminTok, UserBudget: 30, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	if s, err := New(cfg); err == nil {
		s.Close()
		t.Fatal("a missing ledger was accepted without CreateStore")
	} else if !strings.Contains(err.Error(), "--create") {
		t.Fatalf("error does not say how to create the ledger: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a ledger file was created: %v", err)
	}
	cfg.CreateStore = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var start map[string]any
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, `"msg":"starting"`) {
			json.Unmarshal([]byte(line), &start)
		}
	}
	if start["store"] != ledger.Redact("sqlite:"+path) || start["cap_eps"] != 30.0 || start["cap_party_eps"] != "none" || start["privacy_unit"] != "party" ||
		!strings.HasPrefix(fmt.Sprint(start["build"]), "dplp ") {
		t.Fatalf("start-up log: %v\n%s", start, buf.String())
	}
	if n := strings.Count(s.metricsText(), "\ndplp_build_info{"); n != 1 {
		t.Fatalf("%d dplp_build_info series", n)
	}
	if !strings.Contains(s.metricsText(), `dplp_build_info{go_version="`+runtime.Version()+`"`) {
		t.Fatalf("dplp_build_info lacks the Go version:\n%s", s.metricsText())
	}
}

func (s *Server) metricsText() string {
	w := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}

// TestSeparateMetrics: with SeparateMetrics the service's listener has no
// /metrics; MetricsHandler serves it (GET /metrics only).
func TestSeparateMetrics(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.SeparateMetrics = true })
	if r := s.do("GET", "/metrics", "", ""); r.status != 404 {
		t.Fatalf("/metrics on the service: %d", r.status)
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/metrics", 200}, {"POST", "/metrics", 405}, {"GET", "/v1/admin/state", 404}} {
		w := httptest.NewRecorder()
		s.MetricsHandler().ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.status || (c.status != 200 && w.Header().Get("Content-Type") != "application/problem+json") {
			t.Errorf("%s %s: %d %q", c.method, c.path, w.Code, w.Header().Get("Content-Type"))
		}
	}
}

// TestSnapshotSources: the service loads through snapshot.Open: a
// snapshot with marks needs no marks file, synthetic marks are refused, an
// edge list needs marks, and a node list adds users.
func TestSnapshotSources(t *testing.T) {
	fx := testFixture(t)
	dir := t.TempDir()
	d, err := snapshot.Open(snapshot.Source{Graph: fx.graph, Marks: fx.prot})
	if err != nil {
		t.Fatal(err)
	}
	withMarks, synth := filepath.Join(dir, "g.dplpg"), filepath.Join(dir, "s.dplpg")
	if err := snapshot.WriteFile(withMarks, &snapshot.Snapshot{Graph: d.Graph, Marks: d.Marks}); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteFile(synth, &snapshot.Snapshot{Graph: d.Graph, Marks: d.Marks, SyntheticMarks: true}); err != nil {
		t.Fatal(err)
	}
	nodes := filepath.Join(dir, "nodes.txt")
	os.WriteFile(nodes, []byte("lonely\n"), 0o600)
	for _, c := range []struct {
		name               string
		graph, prot, nodes string
		want               string // error substring; "" for success
	}{
		{"snapshot with marks", withMarks, "", "", ""},
		{"snapshot with a marks file", synth, fx.prot, "", ""},
		{"synthetic marks", synth, "", "", "synthetic marks"},
		{"edge list without marks", fx.graph, "", "", "--protected"},
		{"node list", fx.graph, fx.prot, nodes, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := ledger.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
			defer st.Close()
			s, err := New(Config{GraphPath: c.graph, ProtectedPath: c.prot, NodesPath: c.nodes, ModelPath: fx.model, Store: st,
				AdminToken: adminTok, UserBudget: math.Inf(1), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.state.Load().prot.Len(); got != d.Marks.Len() {
				t.Fatalf("%d protected pairs, want %d", got, d.Marks.Len())
			}
			if c.nodes != "" {
				if code := s.do0("POST", "/v1/admin/users", adminTok, `{"user":"lonely"}`); code != 201 {
					t.Fatalf("a node of the node list: %d", code)
				}
			}
		})
	}
}

// TestModelOnOtherData: a model whose recorded data fingerprint differs
// from the served data is served with a warning; a matching one without.
func TestModelOnOtherData(t *testing.T) {
	fx := testFixture(t)
	d, err := snapshot.Open(snapshot.Source{Graph: fx.graph, Marks: fx.prot})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(fx.model)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data string
		warn       bool
	}{
		{"same data", protect.Fingerprint(d.Graph, d.Marks), false},
		{"other data", "v1:" + strings.Repeat("0", 64), true},
		{"not recorded", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mm := *m
			mm.Meta.Data = c.data
			p := filepath.Join(t.TempDir(), "m.json")
			if err := model.Save(p, &mm); err != nil {
				t.Fatal(err)
			}
			var buf lockedBuf
			s := newTestServer(t, func(cfg *Config) { cfg.ModelPath = p; cfg.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
			if got := strings.Contains(buf.String(), "trained on other data"); got != c.warn {
				t.Fatalf("warning %v, want %v:\n%s", got, c.warn, buf.String())
			}
			if r := s.do("POST", "/v1/admin/users", adminTok, `{"user":"n1"}`); r.status != 201 {
				t.Fatalf("not served: %d", r.status)
			}
		})
	}
}

// TestExclusiveCache: over a store with the charge journal (the ledger's
// only writer) cached token hashes do not expire, so requests made after
// CacheTTL read no token from the store; the control, the same service
// without the journal, reads it again.
func TestExclusiveCache(t *testing.T) {
	fx := testFixture(t)
	for _, journal := range []bool{true, false} {
		t.Run(map[bool]string{true: "journal", false: "control"}[journal], func(t *testing.T) {
			srv, err := New(Config{GraphPath: fx.graph, ProtectedPath: fx.prot, ModelPath: fx.model, StoreDSN: "sqlite:" + filepath.Join(t.TempDir(), "l.db"),
				CreateStore: true, ChargeJournal: journal, CacheTTL: time.Millisecond, AdminToken: adminTok, UserBudget: math.Inf(1), KMax: 20,
				Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			s := &testServer{Server: srv, t: t, fx: fx}
			tok := s.token("n1") // written through: cached
			before := histCount(t, s, "token_hash")
			for range 3 {
				time.Sleep(5 * time.Millisecond) // past CacheTTL
				if r := s.do("GET", "/v1/users/n1/budget", tok, ""); r.status != 200 {
					t.Fatalf("budget: %d %s", r.status, r.body)
				}
			}
			reads := histCount(t, s, "token_hash") - before
			if journal && reads != 0 {
				t.Fatalf("%d token reads from the store with the journal on", reads)
			}
			if !journal && reads == 0 {
				t.Fatal("control: no token read after the TTL; the test cannot tell")
			}
		})
	}
}
