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
	"net/netip"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/buildinfo"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/snapshot"
)

// PrivacyUnit is the default privacy unit, named in the start-up log: one
// protected party's pairs (privacy-model.md §2). A served dplp-list model
// may be trained for the pair unit; its unit is logged when it is loaded
// ("model loaded ... unit"), and a cap then bounds spending in that unit
// (docs/LEDGER.md).
const PrivacyUnit = "party"

// Config configures a Server.
type Config struct {
	// GraphPath, ProtectedPath, NodesPath and ModelPath are the files the
	// service serves, loaded through the one loader (snapshot.Open) at start
	// and by every reload. GraphPath is an edge list or a snapshot;
	// ProtectedPath (marks "a b") may be empty when the snapshot stores
	// marks, which are then used (synthetic marks, drawn by convert --sigma,
	// are refused); NodesPath (one label a line) is optional. The model
	// must use a triad score (cn, aa, ra, jc, pa).
	GraphPath, ProtectedPath, NodesPath, ModelPath string
	// Store is the ledger; when nil, StoreDSN (default ledger.DefaultStore())
	// is opened with ledger.OpenWith and closed by Close.
	Store    ledger.Store
	StoreDSN string
	// CreateStore creates the ledger named by StoreDSN when there is none
	// (ledger.OpenOptions.Create); without it a missing ledger is an error.
	CreateStore bool
	// AdminToken is the admin bearer token (at least MinAdminTokenBytes).
	// AdminTokenFile, when set, is read instead (see ReadAdminTokenFile) and
	// re-read by Reload and POST /v1/admin/reload: a changed token replaces
	// the old one, which keeps working for AdminTokenGrace (0: 5 minutes;
	// negative: none).
	AdminToken      string
	AdminTokenFile  string
	AdminTokenGrace time.Duration
	// RateLimit is the sustained rate (requests per second) allowed per
	// user token and per client address on the /v1/ routes, with bursts of
	// RateBurst (0: max(1, RateLimit)); answers over it are 429 with
	// Retry-After. 0: no limit.
	RateLimit float64
	RateBurst int
	// AuthFailLimit is the rate of failed authentications (401) allowed per
	// client address, with bursts of AuthFailBurst (0: max(1,
	// AuthFailLimit)); past it the address gets 429 on every /v1/ route
	// until its bucket refills. 0: no limit.
	AuthFailLimit float64
	AuthFailBurst int
	// TrustedProxies are the networks of reverse proxies whose
	// X-Forwarded-For header names the client address (rightmost address
	// not in these networks). Empty: the header is ignored and the client
	// address is the connection's peer.
	TrustedProxies []netip.Prefix
	// TokenCacheBytes bounds the memory of cached token hashes (default 8
	// MiB); entries expire after CacheTTL.
	TokenCacheBytes int64
	// SeparateMetrics leaves GET /metrics off the service's routes: serve
	// MetricsHandler on another listener instead.
	SeparateMetrics bool
	// ReloadHook, when set, is called first by Reload and POST
	// /v1/admin/reload (e.g. to rotate a TLS certificate); its error fails
	// the reload and keeps the served state.
	ReloadHook func() error
	// UserBudget is every user's cap on total pure-DP epsilon; math.Inf(1)
	// means no cap. The zero value is a cap of 0 (only 0-cost lists): the
	// default refuses rather than spends. NaN and negative values are
	// invalid.
	UserBudget float64
	// UserRhoCap caps every user's total zCDP rho (each list records its
	// rho; an (eps, delta) budget converts to the largest rho that
	// guarantees it, accountant.MaxRho). 0 or +Inf means no rho cap.
	UserRhoCap float64
	// UserPartyBudget caps every user's party-unit total: the sum of the
	// party-unit costs of their lists (ledger.Release.PartyCost: eps for
	// per-pick and party-unit lists, eps x L1_party(u)/L1_pair(u) for a
	// pair-unit dplp-list list). UserBudget caps the sum of own-unit costs,
	// a pair-unit bound when pair-unit lists are served; this is the
	// party-unit one. 0 or +Inf means no party cap (as UserRhoCap); NaN and
	// negative values are invalid.
	UserPartyBudget float64
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
	cfg      Config
	log      *slog.Logger
	store    ledger.Store      // cached, timed store (tokens, budgets, marks)
	idem     ledger.IdemFinder // the base store's idempotency-key lookup (nil: none)
	cache    *cacheStore
	charger  release.Store // what the Recommender charges through (group commit)
	ownStore ledger.Store  // closed by Close when opened here
	cap      ledger.Cap
	admin    adminTokens
	met      *metrics
	now      func() time.Time // rate limits and token rotation (tests)
	addrLim  *limiter         // per client address, /v1/ routes
	userLim  *limiter         // per authenticated user
	failLim  *limiter         // failed authentications per client address
	proxies  []netip.Prefix
	mux      *http.ServeMux
	routes   []string // registered patterns, for the OpenAPI test

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
	otherData bool     // the model's training data fingerprint differs from the served data
}

// New validates cfg, opens the store if needed, loads the graph, marks and
// model, and returns a ready Server.
func New(cfg Config) (*Server, error) {
	if cfg.GraphPath == "" || cfg.ModelPath == "" {
		return nil, errors.New("serve: graph and model files are required")
	}
	if cfg.AdminTokenFile != "" {
		tok, err := ReadAdminTokenFile(cfg.AdminTokenFile)
		if err != nil {
			return nil, err
		}
		cfg.AdminToken = tok
	}
	if len(cfg.AdminToken) < MinAdminTokenBytes {
		return nil, fmt.Errorf("serve: the admin token must be at least %d bytes", MinAdminTokenBytes)
	}
	if cfg.AdminTokenGrace == 0 {
		cfg.AdminTokenGrace = 5 * time.Minute
	}
	for _, l := range []struct {
		name  string
		rate  float64
		burst int
	}{{"rate limit", cfg.RateLimit, cfg.RateBurst}, {"failed-authentication limit", cfg.AuthFailLimit, cfg.AuthFailBurst}} {
		if math.IsNaN(l.rate) || math.IsInf(l.rate, 0) || l.rate < 0 || l.burst < 0 {
			return nil, fmt.Errorf("serve: %s must be a finite rate >= 0 with a burst >= 0, got %v and %d", l.name, l.rate, l.burst)
		}
	}
	if cfg.TokenCacheBytes <= 0 {
		cfg.TokenCacheBytes = 8 << 20
	}
	if math.IsNaN(cfg.UserRhoCap) || cfg.UserRhoCap < 0 {
		return nil, fmt.Errorf("serve: user rho cap must be >= 0 (0 or +Inf for no cap), got %v", cfg.UserRhoCap)
	}
	if math.IsNaN(cfg.UserBudget) || cfg.UserBudget < 0 {
		return nil, fmt.Errorf("serve: user budget must be >= 0 (+Inf for no cap), got %v", cfg.UserBudget)
	}
	if math.IsNaN(cfg.UserPartyBudget) || cfg.UserPartyBudget < 0 {
		return nil, fmt.Errorf("serve: user party-unit budget must be >= 0 (0 or +Inf for no cap), got %v", cfg.UserPartyBudget)
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
	s := &Server{cfg: cfg, log: cfg.Logger, cap: ledger.Cap{Eps: cfg.UserBudget, Rho: rhoCap(cfg.UserRhoCap), PartyEps: rhoCap(cfg.UserPartyBudget)},
		met: newMetrics(), stop: make(chan struct{}), now: time.Now, proxies: cfg.TrustedProxies}
	s.admin.cur = sha256.Sum256([]byte(cfg.AdminToken))
	s.addrLim = newLimiter(cfg.RateLimit, cfg.RateBurst, limiterEntries)
	s.userLim = newLimiter(cfg.RateLimit, cfg.RateBurst, limiterEntries)
	s.failLim = newLimiter(cfg.AuthFailLimit, cfg.AuthFailBurst, limiterEntries)
	s.rbCond = sync.NewCond(&s.rbMu)
	base := cfg.Store
	storeName := "(given by the caller)"
	if base == nil {
		dsn := cfg.StoreDSN
		if dsn == "" {
			def, err := ledger.DefaultStore()
			if err != nil {
				return nil, fmt.Errorf("serve: %w", err)
			}
			dsn = def
		}
		storeName = ledger.Redact(dsn)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := ledger.OpenWith(ctx, dsn, ledger.OpenOptions{Create: cfg.CreateStore,
			LockWait: func() { s.log.Warn("waiting for the ledger lock held by another process", "store", storeName) }})
		cancel()
		if errors.Is(err, ledger.ErrNoLedger) {
			return nil, fmt.Errorf("serve: %w (no ledger at %s: create it with --create, or dplp ledger init --store '%s')", err, storeName, storeName)
		}
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		base, s.ownStore = st, st
		s.checkStoreFiles(dsn)
	}
	capEps, capRho, capParty := any(cfg.UserBudget), any(cfg.UserRhoCap), any(cfg.UserPartyBudget)
	if math.IsInf(cfg.UserBudget, 1) {
		capEps = "none"
	}
	if cfg.UserPartyBudget == 0 || math.IsInf(cfg.UserPartyBudget, 1) {
		capParty = "none"
	}
	if cfg.UserRhoCap == 0 || math.IsInf(cfg.UserRhoCap, 1) {
		capRho = "none"
	}
	s.log.Info("starting", "store", storeName, "cap_eps", capEps, "cap_rho", capRho, "cap_party_eps", capParty, "privacy_unit", PrivacyUnit,
		"build", buildinfo.Get().String())
	ttl := cfg.CacheTTL
	switch {
	case ttl == 0:
		ttl = time.Second
	case ttl < 0:
		ttl = 0
	}
	s.idem, _ = base.(ledger.IdemFinder)
	s.cache = newCacheStore(newTimedStore(base, s.met.storeLatency), ttl, 1<<20, cfg.TokenCacheBytes)
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

// loadFiles reads the configured graph, marks and node list through the
// one loader (snapshot.Open), and the model.
func (s *Server) loadFiles() (*state, error) {
	d, err := snapshot.Open(snapshot.Source{Graph: s.cfg.GraphPath, Marks: s.cfg.ProtectedPath, Nodes: s.cfg.NodesPath})
	if err != nil {
		return nil, err
	}
	if s.cfg.ProtectedPath == "" {
		switch {
		case d.SyntheticMarks:
			return nil, fmt.Errorf("serve: %s stores synthetic marks (drawn from the graph itself by convert --sigma): a simulation without a guarantee, refused for releases; give --protected FILE", s.cfg.GraphPath)
		case d.Marks == nil:
			return nil, fmt.Errorf("serve: no protection marks: give --protected FILE (only a snapshot that stores marks can do without)")
		}
	}
	g, marks := d.Graph, d.Marks
	if marks == nil { // cannot happen: refused above or read from the file
		if marks, err = protect.New(g.N(), nil); err != nil {
			return nil, err
		}
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
	st := &state{g: g, order: release.NewLabelOrder(g), m: m, modelID: id, fileMarks: marks.Pairs()}
	// A model trained on other data still releases private lists (the
	// noise is calibrated on the served data), but its transform was fit to
	// another graph: say so. Not refused: users' own marks change the
	// marks, so the served data never equals the training data exactly.
	if m.Meta.Data != "" && m.Meta.Data != protect.Fingerprint(g, marks) {
		st.otherData = true
	}
	return st, nil
}

// build completes st (graph, label order, model and file marks set) with
// the users' marks um: effective marks, scorer and Recommender. The label
// order is st's: a rebuild for new marks on the same graph does not sort
// the labels again.
func (s *Server) build(st *state, um map[string][]string) (*state, error) {
	st = &state{g: st.g, order: st.order, m: st.m, modelID: st.modelID, fileMarks: st.fileMarks, userMarks: um, loaded: time.Now().UTC(),
		otherData: st.otherData}
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
	if base.otherData {
		s.log.Warn("the model was trained on other data: its recorded data fingerprint differs from the served graph and marks; lists stay private (the noise is calibrated on the served data) but may be less accurate; retrain on the served data",
			"model", base.modelID)
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
		"model", st.modelID, "variant", st.m.Variant, "unit", st.m.PrivacyUnit().String(), "eps_p", st.m.EpsP, "score", st.m.Score, "seconds", time.Since(t0).Seconds())
	if len(st.skipped) > 0 {
		s.log.Warn("stored marks not applicable to this graph were skipped", "count", len(st.skipped))
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
	if _, ok := ln.(*tlsListener); !ok {
		ln = problemListener{ln} // net/http's canned replies as problem documents (rawreply.go)
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
// applies the per-address rate limit to the /v1/ routes, recovers panics
// (500), records metrics and echoes the request ID (X-Request-Id).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	ri := &reqInfo{client: clientAddr(r, s.proxies).String(), id: requestID(r)}
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey, ri))
	w.Header().Set("X-Request-Id", ri.id)
	sw := &statusWriter{ResponseWriter: w}
	route := "unmatched"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic in handler", "route", route, "request_id", ri.id, "panic", fmt.Sprint(v))
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
			// Never the path (it holds labels), a token or a body.
			s.log.Info("request", "method", r.Method, "route", route, "status", status, "ms", float64(d.Microseconds())/1000,
				"client", ri.client, "request_id", ri.id)
		}
	}()
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		if ok, wait := s.addrLim.take(ri.client, s.now()); !ok {
			s.met.rateLimited.WithLabelValues("address").Inc()
			writeProblem(sw, tooMany("too many requests from this address", wait))
			return
		}
	}
	_, pat := s.mux.Handler(r)
	switch {
	case pat != "" && r.Method != http.MethodConnect && !canonical(r.URL.EscapedPath()):
		// ServeMux would redirect to the cleaned path (307, HTML body).
		writeProblem(sw, problem(http.StatusNotFound, TypeNotFound, "no such route: the path has empty, '.' or '..' segments"))
		return
	case pat != "" && !strings.HasPrefix(pat, r.Method+" "):
		// A GET route matched HEAD. Not served: on the recommendation
		// routes it would release (and charge) a list nobody sees.
		allow := s.allowed(r)
		sw.Header().Set("Allow", allow)
		writeProblem(sw, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, fmt.Sprintf("method %s is not allowed here (allowed: %s)", r.Method, allow)))
		return
	case pat == "":
		// Let the mux decide between 404 and 405 (and redirects), then
		// answer with a problem document.
		d := &discardWriter{h: http.Header{}}
		s.mux.ServeHTTP(d, r)
		switch d.status {
		case http.StatusMethodNotAllowed:
			allow := s.allowed(r)
			sw.Header().Set("Allow", allow)
			writeProblem(sw, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, fmt.Sprintf("method %s is not allowed here (allowed: %s)", r.Method, allow)))
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

// MetricsHandler serves the Prometheus metrics (GET /metrics on the
// service's own listener unless Config.SeparateMetrics; `dplp serve
// --metrics-listen` serves it on another). Only GET and only /metrics.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/metrics":
			writeProblem(w, problem(http.StatusNotFound, TypeNotFound, "no such route (metrics are at /metrics)"))
		case r.Method != http.MethodGet:
			w.Header().Set("Allow", http.MethodGet)
			writeProblem(w, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, "method "+r.Method+" is not allowed here (allowed: GET)"))
		default:
			s.met.handler.ServeHTTP(w, r)
		}
	})
}

// internal logs err and returns a generic 500 problem (details stay in the
// log).
func (s *Server) internal(r *http.Request, what string, err error) *Problem {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "request cancelled")
	}
	s.log.Error(what+" failed", "method", r.Method, "request_id", infoOf(r).id, "err", err)
	return problem(http.StatusInternalServerError, TypeInternal, what+" failed (see the server log)")
}

// rhoCap maps Config.UserRhoCap (or UserPartyBudget) to a ledger cap (0:
// none).
func rhoCap(r float64) float64 {
	if r == 0 {
		return math.Inf(1)
	}
	return r
}
