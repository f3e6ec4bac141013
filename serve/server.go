// Package serve is dplp's private recommendation service: an HTTP shell
// around release.Recommender (every list comes from it, with its guarantee
// and its accounting contract) and a ledger.Store (budgets, tokens, users'
// own protection marks). `dplp serve` is a thin command around New.
//
// Guarantees. Every list the service returns was released by a
// release.Recommender built without a seed (noise from crypto/rand; a
// seeded generator cannot be configured) and, when it was fresh, its
// charge was durably committed to the store before the response was
// written. The service never returns a seeded list: its re-serve lookups,
// its cache and idempotency keys are all for crypto (private) releases
// only, so a list released into the same store by a seeded research run is
// ignored (a private list is released and charged instead). A user's total charged epsilon never exceeds the configured
// per-user cap, whatever the concurrency, the number of processes on one
// store, or crashes. A sticky list (GET) is re-served at no cost once
// released; a fresh list (POST) always costs. Users' own protection marks
// (PUT .../protected) take effect for lists released after the call
// returns; lists already released are not retroactively protected.
//
// See docs/SERVING.md and the OpenAPI document served at /openapi.json.
package serve

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// DefaultStore is the store used when Config names none.
const DefaultStore = "sqlite:dplp-ledger.db"

// Config configures a Server.
type Config struct {
	// GraphPath, ProtectedPath and ModelPath are the files the service
	// serves (re-read by POST /v1/admin/reload). The model must use a triad
	// score (cn, aa, ra, jc, pa).
	GraphPath, ProtectedPath, ModelPath string
	// Store is the ledger; when nil, StoreDSN (default DefaultStore) is
	// opened and closed by Close.
	Store    ledger.Store
	StoreDSN string
	// AdminToken is the admin bearer token (at least 16 bytes).
	AdminToken string
	// UserBudget is every user's cap on total pure-DP epsilon; math.Inf(1)
	// means no cap. The zero value is a cap of 0 (only 0-cost lists): the
	// default refuses rather than spends. NaN and negative values are
	// invalid.
	UserBudget float64
	// UserRhoCap caps every user's total zCDP rho (each list records its
	// rho; an (eps, delta) budget converts to the largest rho that
	// guarantees it, accountant.MaxRho). 0 or +Inf means no rho cap.
	UserRhoCap float64
	// KMax is the largest list length K accepted (default 100).
	KMax int
	// MaxBodyBytes limits request bodies (default 1 MiB).
	MaxBodyBytes int64
	// MaxMarks limits the labels in one user's marks (default 10000).
	MaxMarks int
	// MarksRefresh, when > 0, polls the store's marks at this interval and
	// rebuilds the serving state when they changed (marks set through
	// another process sharing the store). 0: only on PUT and reload.
	MarksRefresh time.Duration
	// CacheTTL bounds how stale the in-memory read cache (token hashes,
	// latest lists, budgets shown with lists) may be with respect to
	// changes made by OTHER processes sharing the store; changes made
	// through this process are seen at once. 0: 1s; negative: no cache.
	CacheTTL time.Duration
	// NoGroupCommit disables group commit (one transaction per charge).
	NoGroupCommit bool
	// Logger receives JSON logs (default: slog JSON to stderr).
	Logger *slog.Logger
	// AccessLog logs every request at Info (default: errors and admin
	// actions only).
	AccessLog bool
}

// Server is the service. It is an http.Handler; Serve runs it with
// graceful shutdown.
type Server struct {
	cfg       Config
	log       *slog.Logger
	store     ledger.Store // cached, timed store (tokens, budgets, marks)
	cache     *cacheStore
	charger   release.Store // what the Recommender charges through (group commit)
	ownStore  ledger.Store  // closed by Close when opened here
	cap       ledger.Cap
	adminHash [32]byte
	met       *metrics
	mux       *http.ServeMux
	routes    []string // registered patterns, for the OpenAPI test

	state     atomic.Pointer[state]
	rebuildMu sync.Mutex
	// Coalescing of marks rebuilds (applyMarks).
	rbMu      sync.Mutex
	rbCond    *sync.Cond
	rbWant    uint64 // requests registered
	rbDone    uint64 // requests covered by a finished rebuild
	rbRunning bool
	draining  atomic.Bool
	stop      chan struct{}
	stopOnce  sync.Once
	wg        sync.WaitGroup
}

// state is one immutable snapshot of what is served; swapped atomically.
// Its one Recommender serves every list request of the state: sticky
// (GET), fresh (POST) and idempotent (POST with an Idempotency-Key) ones
// differ only in their per-call options.
type state struct {
	g         *graph.Graph
	order     *release.LabelOrder // g's label order: shared by every state on g
	m         *model.Model
	modelID   string
	fileMarks []graph.Edge        // marks from ProtectedPath
	userMarks map[string][]string // the store's marks this state includes
	prot      *protect.Set        // effective marks: file + users'
	sc        *score.Scorer
	rec       *release.Recommender
	loaded    time.Time
	skipped   []string // store marks not applicable to this graph
}

// New validates cfg, opens the store if needed, loads the graph, marks and
// model, and returns a ready Server.
func New(cfg Config) (*Server, error) {
	if cfg.GraphPath == "" || cfg.ProtectedPath == "" || cfg.ModelPath == "" {
		return nil, errors.New("serve: graph, protected and model files are required")
	}
	if len(cfg.AdminToken) < 16 {
		return nil, errors.New("serve: the admin token must be at least 16 bytes")
	}
	if math.IsNaN(cfg.UserRhoCap) || cfg.UserRhoCap < 0 {
		return nil, fmt.Errorf("serve: user rho cap must be >= 0 (0 or +Inf for no cap), got %v", cfg.UserRhoCap)
	}
	if math.IsNaN(cfg.UserBudget) || cfg.UserBudget < 0 {
		return nil, fmt.Errorf("serve: user budget must be >= 0 (+Inf for no cap), got %v", cfg.UserBudget)
	}
	if cfg.KMax == 0 {
		cfg.KMax = 100
	}
	if cfg.KMax < 1 {
		return nil, fmt.Errorf("serve: k-max must be >= 1, got %d", cfg.KMax)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxMarks <= 0 {
		cfg.MaxMarks = 10000
	}
	if cfg.MarksRefresh < 0 {
		return nil, fmt.Errorf("serve: marks refresh interval must be >= 0, got %v", cfg.MarksRefresh)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	s := &Server{cfg: cfg, log: cfg.Logger, cap: ledger.Cap{Eps: cfg.UserBudget, Rho: rhoCap(cfg.UserRhoCap)},
		adminHash: sha256.Sum256([]byte(cfg.AdminToken)), met: newMetrics(), stop: make(chan struct{})}
	s.rbCond = sync.NewCond(&s.rbMu)
	base := cfg.Store
	if base == nil {
		dsn := cfg.StoreDSN
		if dsn == "" {
			dsn = DefaultStore
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := ledger.Open(ctx, dsn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		base, s.ownStore = st, st
	}
	ttl := cfg.CacheTTL
	switch {
	case ttl == 0:
		ttl = time.Second
	case ttl < 0:
		ttl = 0
	}
	s.cache = newCacheStore(newTimedStore(base, s.met.storeLatency), ttl, 1<<20)
	s.store = s.cache
	s.charger = s.store
	if !cfg.NoGroupCommit {
		s.charger = newGroupStore(s.store, 1024, func(n int) { s.met.groupSize.Observe(float64(n)) })
	}
	if err := s.reload(context.Background(), "start"); err != nil {
		s.Close()
		return nil, err
	}
	s.routesInit()
	if cfg.MarksRefresh > 0 {
		s.wg.Add(1)
		go s.refreshLoop(cfg.MarksRefresh)
	}
	return s, nil
}

// Close stops background work and closes the store if New opened it. It
// does not wait for requests: use Serve's graceful shutdown first.
func (s *Server) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
	if s.ownStore != nil {
		return s.ownStore.Close()
	}
	return nil
}

// loadFiles reads the configured graph, marks file and model.
func (s *Server) loadFiles() (*state, error) {
	g, _, err := graph.ReadFile(s.cfg.GraphPath)
	if err != nil {
		return nil, err
	}
	fm, err := protect.ReadFile(s.cfg.ProtectedPath, g)
	if err != nil {
		return nil, err
	}
	m, err := model.Load(s.cfg.ModelPath)
	if err != nil {
		return nil, err
	}
	if _, err := score.ParseKind(m.Score); err != nil {
		return nil, fmt.Errorf("serve: model %s uses score %q: the service serves triad-score models (cn, aa, ra, jc, pa)", s.cfg.ModelPath, m.Score)
	}
	id, err := m.ID()
	if err != nil {
		return nil, err
	}
	return &state{g: g, order: release.NewLabelOrder(g), m: m, modelID: id, fileMarks: fm.Pairs()}, nil
}

// build completes st (graph, label order, model and file marks set) with
// the users' marks um: effective marks, scorer and Recommender. The label
// order is st's: a rebuild for new marks on the same graph does not sort
// the labels again.
func (s *Server) build(st *state, um map[string][]string) (*state, error) {
	st = &state{g: st.g, order: st.order, m: st.m, modelID: st.modelID, fileMarks: st.fileMarks, userMarks: um, loaded: time.Now().UTC()}
	pairs := append([]graph.Edge(nil), st.fileMarks...)
	for u, xs := range um {
		uid, ok := st.g.ID(u)
		if !ok {
			st.skipped = append(st.skipped, u)
			continue
		}
		for _, x := range xs {
			xid, ok := st.g.ID(x)
			if !ok || xid == uid {
				st.skipped = append(st.skipped, u+" -> "+x)
				continue
			}
			pairs = append(pairs, graph.Edge{U: uid, V: xid})
		}
	}
	var err error
	if st.prot, err = protect.New(st.g.N(), pairs); err != nil {
		return nil, err
	}
	k, _ := score.ParseKind(st.m.Score)
	if st.sc, err = score.New(st.g, st.prot, k); err != nil {
		return nil, err
	}
	if st.rec, err = release.New(st.m, st.g, st.prot, release.WithStore(s.charger), release.WithCap(s.cap),
		release.WithScorer(st.sc), release.WithLabelOrder(st.order)); err != nil {
		return nil, err
	}
	if st.rec.Seeded() { // cannot happen: no seed option exists here
		return nil, errors.New("serve: refusing a seeded Recommender")
	}
	return st, nil
}

// callOptions are the per-call options of a list request: none for a
// sticky GET; Fresh for a POST, charging under the client's idempotency
// key when one is given (prefixed so that it cannot collide with the
// release package's own sticky keys).
func callOptions(fresh bool, idemKey string) []release.CallOption {
	if !fresh {
		return nil
	}
	if idemKey == "" {
		return []release.CallOption{release.Fresh()}
	}
	return []release.CallOption{release.Fresh(), release.IdempotencyKey("client:" + idemKey)}
}

// reload re-reads the files and the store's marks and swaps the state in.
func (s *Server) reload(ctx context.Context, reason string) error {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	t0 := time.Now()
	base, err := s.loadFiles()
	if err == nil {
		var um map[string][]string
		if um, err = s.store.Marks(ctx); err == nil {
			base, err = s.build(base, um)
		}
	}
	if err != nil {
		s.met.reloads.WithLabelValues(reason, "error").Inc()
		return fmt.Errorf("serve: load: %w", err)
	}
	s.swap(base, reason, t0)
	return nil
}

// rebuildMarks rebuilds the current state with the store's current marks
// (unless force is false and they did not change).
func (s *Server) rebuildMarks(ctx context.Context, reason string, force bool) error {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	t0 := time.Now()
	cur := s.state.Load()
	um, err := s.store.Marks(ctx)
	if err != nil {
		s.met.reloads.WithLabelValues(reason, "error").Inc()
		return err
	}
	if !force && marksEqual(um, cur.userMarks) {
		return nil
	}
	st, err := s.build(cur, um)
	if err != nil {
		s.met.reloads.WithLabelValues(reason, "error").Inc()
		return err
	}
	s.swap(st, reason, t0)
	return nil
}

// applyMarks returns once a state built from marks read after the call
// began is being served. Concurrent callers share rebuilds: while one runs,
// the callers that arrive wait for the next, which covers all of them, so a
// burst of PUTs costs at most two rebuilds at a time, not one each.
func (s *Server) applyMarks(ctx context.Context) error {
	s.rbMu.Lock()
	defer s.rbMu.Unlock()
	s.rbWant++
	my := s.rbWant
	for s.rbDone < my {
		if s.rbRunning {
			s.rbCond.Wait()
			continue
		}
		s.rbRunning = true
		target := s.rbWant // every request registered so far: their marks are stored
		s.rbMu.Unlock()
		err := s.rebuildMarks(ctx, "marks", true)
		s.rbMu.Lock()
		s.rbRunning = false
		if err == nil {
			s.rbDone = max(s.rbDone, target)
		}
		s.rbCond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

func marksEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

func (s *Server) swap(st *state, reason string, t0 time.Time) {
	s.state.Store(st)
	s.met.reloads.WithLabelValues(reason, "ok").Inc()
	s.log.Info("serving state loaded", "reason", reason, "nodes", st.g.N(), "edges", st.g.M(),
		"protected_pairs", st.prot.Len(), "file_pairs", len(st.fileMarks), "users_with_marks", len(st.userMarks),
		"model", st.modelID, "eps_p", st.m.EpsP, "score", st.m.Score, "seconds", time.Since(t0).Seconds())
	if len(st.skipped) > 0 {
		s.log.Warn("stored marks not applicable to this graph were skipped", "count", len(st.skipped), "first", st.skipped[0])
	}
}

func (s *Server) refreshLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every+10*time.Second)
			if err := s.rebuildMarks(ctx, "refresh", false); err != nil {
				s.log.Error("marks refresh failed", "err", err)
			}
			cancel()
		}
	}
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting connections, reports not ready, waits up to grace for in-flight
// requests to finish, and returns. It does not Close the Server.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.log.Info("shutting down: finishing in-flight requests", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
		return fmt.Errorf("serve: requests still running after %v were cut off", grace)
	}
	if err != nil {
		return err
	}
	s.log.Info("shut down cleanly")
	return nil
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// discardWriter captures the status and headers of the mux's own 404/405
// replies, which are replaced by problem documents.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(c int) {
	if d.status == 0 {
		d.status = c
	}
}
func (d *discardWriter) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(b), nil
}

// ServeHTTP routes r, writes every error as application/problem+json,
// recovers panics (500) and records metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	route := "unmatched"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic in handler", "route", route, "panic", fmt.Sprint(v))
			if sw.status == 0 {
				writeProblem(sw, problem(http.StatusInternalServerError, TypeInternal, "internal error"))
			}
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		d := time.Since(t0)
		s.met.observe(route, status, d)
		if s.cfg.AccessLog || status >= 500 {
			s.log.Info("request", "method", r.Method, "route", route, "status", status, "ms", float64(d.Microseconds())/1000)
		}
	}()
	_, pat := s.mux.Handler(r)
	if pat == "" {
		// Let the mux decide between 404 and 405 (and redirects), then
		// answer with a problem document.
		d := &discardWriter{h: http.Header{}}
		s.mux.ServeHTTP(d, r)
		switch d.status {
		case http.StatusMethodNotAllowed:
			sw.Header().Set("Allow", d.h.Get("Allow"))
			writeProblem(sw, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, fmt.Sprintf("method %s is not allowed here (allowed: %s)", r.Method, d.h.Get("Allow"))))
		case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			writeProblem(sw, problem(http.StatusNotFound, TypeNotFound, "no such route (did you mean "+d.h.Get("Location")+"?)"))
		default:
			writeProblem(sw, problem(http.StatusNotFound, TypeNotFound, "no such route: "+r.URL.Path))
		}
		return
	}
	route = pat
	s.mux.ServeHTTP(sw, r)
}

// internal logs err and returns a generic 500 problem (details stay in the
// log).
func (s *Server) internal(r *http.Request, what string, err error) *Problem {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "request cancelled")
	}
	s.log.Error(what+" failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return problem(http.StatusInternalServerError, TypeInternal, what+" failed (see the server log)")
}

// rhoCap maps Config.UserRhoCap to a ledger cap (0: none).
func rhoCap(r float64) float64 {
	if r == 0 {
		return math.Inf(1)
	}
	return r
}
