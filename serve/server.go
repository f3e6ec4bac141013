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
	// ChargeJournal opens the SQLite ledger named by StoreDSN with the
	// charge journal (ledger.OpenOptions.ChargeJournal): fresh lists are
	// charged by one append and fdatasync of a journal file and applied to
	// the ledger's tables in the background; the service is then the
	// ledger's only writer. The DSN option charge_journal=on does the same.
	ChargeJournal bool
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
	// With the charge journal no other process writes the store: a
	// positive TTL is then a day, and MarksRefresh is off.
	CacheTTL time.Duration
	// NoGroupCommit disables group commit (one transaction per charge).
	NoGroupCommit bool
	// GroupCommitMax and GroupCommitDelay tune group commit
	// (ledger.GroupOptions MaxItems and MaxDelay): at most GroupCommitMax
	// fresh lists per ledger transaction (0: 1024); a transaction waits
	// until it holds as many lists as the previous one, but never longer
	// than GroupCommitDelay after its first charge was queued (0:
	// DefaultGroupCommitDelay; negative: no wait, a transaction starts as
	// soon as the previous one has committed). See docs/SERVING.md,
	// Performance.
	GroupCommitMax   int
	GroupCommitDelay time.Duration
	// Logger receives JSON logs (default: slog JSON to stderr).
	Logger *slog.Logger
	// AccessLog logs every request at Info (default: errors and admin
	// actions only).
	AccessLog bool
}

// DefaultGroupCommitDelay is the default latency bound of group commit
// (Config.GroupCommitDelay): how long a ledger transaction may wait for
// more fresh lists to charge.
const DefaultGroupCommitDelay = 2 * time.Millisecond

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
	dict      *release.InfluenceDict // g's influencer dictionary: shared by every state on g
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
		st, err := ledger.OpenWith(ctx, dsn, ledger.OpenOptions{Create: cfg.CreateStore, ChargeJournal: cfg.ChargeJournal,
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
	// A store with the charge journal is the ledger's only writer: no
	// other process changes tokens, budgets, lists or marks behind the
	// cache, so entries live until written through or evicted by size,
	// and there are no marks to poll for.
	exclusive := false
	if js, ok := base.(ledger.JournalStatser); ok {
		_, exclusive = js.JournalStats()
	}
	s.log.Info("starting", "store", storeName, "charge_journal", exclusive, "cap_eps", capEps, "cap_rho", capRho, "cap_party_eps", capParty, "privacy_unit", PrivacyUnit,
		"build", buildinfo.Get().String())
	ttl := cfg.CacheTTL
	switch {
	case ttl == 0:
		ttl = time.Second
	case ttl < 0:
		ttl = 0
	}
	if exclusive && ttl > 0 {
		ttl = exclusiveCacheTTL
	}
	s.idem, _ = base.(ledger.IdemFinder)
	s.met.watchJournal(base)
	timed := ledger.Timed(base, func(op string) func(time.Duration) {
		o := s.met.storeLatency.WithLabelValues(op)
		return func(d time.Duration) { o.Observe(d.Seconds()) }
	})
	s.cache = newCacheStore(timed, ttl, 1<<20, cfg.TokenCacheBytes)
	s.store = s.cache
	s.charger = s.store
	if !cfg.NoGroupCommit {
		delay := cfg.GroupCommitDelay
		if delay == 0 {
			delay = DefaultGroupCommitDelay
		}
		s.charger = ledger.NewGroupCommitWith(s.store, ledger.GroupOptions{MaxItems: cfg.GroupCommitMax, MaxDelay: delay,
			OnBatch: func(n int) { s.met.groupSize.Observe(float64(n)) }})
	}
	if err := s.reload(context.Background(), "start"); err != nil {
		s.Close()
		return nil, err
	}
	s.routesInit()
	if cfg.MarksRefresh > 0 && !exclusive {
		s.wg.Add(1)
		go s.refreshLoop(cfg.MarksRefresh)
	}
	return s, nil
}

// exclusiveCacheTTL is the cache's ttl over a store with the charge
// journal (entries are then evicted by size or replaced by writes).
const exclusiveCacheTTL = 24 * time.Hour

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
