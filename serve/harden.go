package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"strings"
	"sync"
	"time"
)

// Hardening against hostile clients (docs/SERVING.md, "Hardening"): rate
// limits, client addresses behind trusted proxies, request IDs, admin token
// files and their rotation, and the permissions of the ledger's files.

// ---- rate limits ----

// limiterEntries bounds the keys (client addresses, users) a limiter
// tracks.
const limiterEntries = 1 << 16

// limiter is a set of token buckets, one per key, refilled at rate tokens
// per second up to burst. Its memory is bounded: when max keys are tracked,
// the buckets that are full again (idle keys, indistinguishable from new
// ones) are dropped, then, if that is not enough, arbitrary ones. A nil
// limiter (rate 0) allows everything.
type limiter struct {
	rate, burst float64
	max         int
	mu          sync.Mutex
	b           map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst, max int) *limiter {
	if rate <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = int(math.Max(1, math.Ceil(rate)))
	}
	return &limiter{rate: rate, burst: float64(burst), max: max, b: map[string]*bucket{}}
}

// refill brings b up to now (caller holds mu).
func (l *limiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+d.Seconds()*l.rate)
	}
	b.last = now
}

// bucket returns key's bucket, creating a full one (caller holds mu).
func (l *limiter) bucket(key string, now time.Time) *bucket {
	b, ok := l.b[key]
	if ok {
		l.refill(b, now)
		return b
	}
	if len(l.b) >= l.max {
		for k, x := range l.b {
			if l.refill(x, now); x.tokens >= l.burst {
				delete(l.b, k)
			}
		}
		for k := range l.b {
			if len(l.b) < l.max*3/4 {
				break
			}
			delete(l.b, k)
		}
	}
	b = &bucket{tokens: l.burst, last: now}
	l.b[key] = b
	return b
}

// wait is how long until b holds one token.
func (l *limiter) wait(b *bucket) time.Duration {
	return time.Duration(math.Ceil((1 - b.tokens) / l.rate * float64(time.Second)))
}

// take takes one token from key's bucket; when there is none it returns
// false and how long until there is one.
func (l *limiter) take(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, now)
	if b.tokens < 1 {
		return false, l.wait(b)
	}
	b.tokens--
	return true, 0
}

// check reports whether key's bucket holds a token, without taking it.
func (l *limiter) check(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.b[key]
	if !ok {
		return true, 0
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false, l.wait(b)
	}
	return true, 0
}

// tooMany is the 429 problem for a wait of d (Retry-After: whole seconds,
// at least 1).
func tooMany(detail string, d time.Duration) *Problem {
	p := problem(http.StatusTooManyRequests, TypeRateLimited, detail)
	p.retryAfter = max(1, int((d+time.Second-1)/time.Second))
	return p
}

// ---- client address and request ID ----

type ctxKey int

const reqInfoKey ctxKey = 0

// reqInfo is what ServeHTTP learns about a request before routing it.
type reqInfo struct {
	client string // client address (see clientAddr)
	id     string // request ID (X-Request-Id)
}

func infoOf(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{client: peerAddr(r).String()}
}

// peerAddr is the address of the connection's peer (the zero Addr when
// RemoteAddr does not parse).
func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// clientAddr is the client's address: the peer's, unless the peer is a
// trusted proxy; then X-Forwarded-For is read from the right, skipping
// trusted proxies, and the first other address is the client (an
// unparsable entry stops the walk at the last trusted hop). Without trusted
// proxies X-Forwarded-For is ignored: any client could write it.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := peerAddr(r)
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	if len(trusted) == 0 || !isTrusted(peer) {
		return peer
	}
	addr := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return addr
			}
			addr = a.Unmap()
			if !isTrusted(addr) {
				return addr
			}
		}
	}
	return addr
}

// requestID returns the client's X-Request-Id when it is 1-128 characters
// of [A-Za-z0-9._:-], else a new random one (16 hex digits).
func requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-Id"); validRequestID(v) {
		return v
	}
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(v string) bool {
	if len(v) < 1 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// ---- admin token ----

// MinAdminTokenBytes is the shortest admin token accepted.
const MinAdminTokenBytes = 32

// ReadAdminTokenFile reads the admin token from path (surrounding
// whitespace ignored). It refuses a file that group or others may read or
// write (chmod 600) and a token shorter than MinAdminTokenBytes. Errors
// never contain the token.
func ReadAdminTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("serve: admin token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("serve: admin token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("serve: admin token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("serve: admin token file %s is accessible by group or others (mode %s): chmod 600 it", path, perm)
	}
	buf := make([]byte, 4097)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return "", fmt.Errorf("serve: admin token file %s: %w", path, err)
	}
	if n > 4096 {
		return "", fmt.Errorf("serve: admin token file %s: over 4096 bytes", path)
	}
	tok := strings.TrimSpace(string(buf[:n]))
	if len(tok) < MinAdminTokenBytes {
		return "", fmt.Errorf("serve: admin token file %s: the token must be at least %d bytes (e.g. head -c 32 /dev/urandom | base64)", path, MinAdminTokenBytes)
	}
	return tok, nil
}

// adminTokens holds the admin token's hash and, for a grace period after a
// rotation, the previous one's.
type adminTokens struct {
	mu        sync.RWMutex
	cur, prev [32]byte
	prevUntil time.Time
}

func (s *Server) isAdmin(tok string) bool {
	h := sha256.Sum256([]byte(tok))
	s.admin.mu.RLock()
	cur, prev, until := s.admin.cur, s.admin.prev, s.admin.prevUntil
	s.admin.mu.RUnlock()
	ok := subtle.ConstantTimeCompare(h[:], cur[:]) == 1
	old := subtle.ConstantTimeCompare(h[:], prev[:]) == 1
	return ok || old && s.now().Before(until)
}

// reloadAdminToken re-reads Config.AdminTokenFile: a changed token
// replaces the current one, which keeps working for the grace period. On
// error the current token stays.
func (s *Server) reloadAdminToken() error {
	if s.cfg.AdminTokenFile == "" {
		return nil
	}
	tok, err := ReadAdminTokenFile(s.cfg.AdminTokenFile)
	if err != nil {
		return err
	}
	h := sha256.Sum256([]byte(tok))
	s.admin.mu.Lock()
	defer s.admin.mu.Unlock()
	if h == s.admin.cur {
		return nil
	}
	s.admin.prev, s.admin.cur = s.admin.cur, h
	s.admin.prevUntil = time.Time{}
	if s.cfg.AdminTokenGrace > 0 {
		s.admin.prevUntil = s.now().Add(s.cfg.AdminTokenGrace)
	}
	s.log.Info("admin token rotated", "file", s.cfg.AdminTokenFile, "old_token_valid_for", max(0, s.cfg.AdminTokenGrace).String())
	return nil
}

// Reload re-reads the admin token file (when configured), calls
// Config.ReloadHook, then re-reads the data files, the model and the
// store's marks and swaps the new state in. On error what failed keeps its
// previous value (token, state). `dplp serve` calls it on SIGHUP; POST
// /v1/admin/reload does the same.
func (s *Server) Reload(ctx context.Context) error { return s.reloadAll(ctx, "reload") }

func (s *Server) reloadAll(ctx context.Context, reason string) error {
	if err := s.reloadAdminToken(); err != nil {
		return err
	}
	if s.cfg.ReloadHook != nil {
		if err := s.cfg.ReloadHook(); err != nil {
			return err
		}
	}
	return s.reload(ctx, reason)
}

// ---- files ----

// checkStoreFiles warns when an SQLite ledger's files are accessible by
// group or others (a ledger created by dplp is 0600; older ones were 0644):
// they hold every user's lists, marks and token hashes.
func (s *Server) checkStoreFiles(dsn string) {
	path, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return
	}
	path, _, _ = strings.Cut(path, "?")
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			s.log.Warn("a ledger file is accessible by group or others: chmod 600 it", "file", p, "mode", st.Mode().Perm().String())
		}
	}
}

// ---- routing ----

// routeMethods are the methods the service routes; every route names one.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

// allowed lists the methods routed for r's path (never HEAD: a GET route
// does not answer HEAD).
func (s *Server) allowed(r *http.Request) string {
	var out []string
	for _, m := range routeMethods {
		r2 := new(http.Request)
		*r2 = *r
		r2.Method = m
		if _, pat := s.mux.Handler(r2); strings.HasPrefix(pat, m+" ") {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// canonical reports whether the escaped path is what ServeMux would not
// redirect (it cleans "//", "." and ".." segments by redirecting).
func canonical(escaped string) bool {
	if escaped == "" || escaped[0] != '/' {
		return false
	}
	c := path.Clean(escaped)
	if strings.HasSuffix(escaped, "/") && c != "/" {
		c += "/"
	}
	return c == escaped
}
