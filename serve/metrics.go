package serve

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/dplp/dplp/internal/buildinfo"
	"github.com/dplp/dplp/ledger"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the service's Prometheus metrics, on a private registry
// (several Servers may live in one process, e.g. in tests and benchmarks).
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	releases     *prometheus.CounterVec
	epsCharged   prometheus.Counter
	refusals     prometheus.Counter
	storeLatency *prometheus.HistogramVec
	groupSize    prometheus.Histogram
	reloads      *prometheus.CounterVec
	// earlyRefusals counts the refusals decided before sampling (also in
	// refusals); releaseCalls the calls into the release path (each samples
	// a list unless it re-serves one).
	earlyRefusals prometheus.Counter
	releaseCalls  prometheus.Counter
	rateLimited   *prometheus.CounterVec
	handler       http.Handler
}

var latencyBuckets = []float64{.0001, .00025, .0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 10}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dplp_http_requests_total", Help: "HTTP requests by route (method and pattern) and status.",
	}, []string{"route", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dplp_http_request_duration_seconds", Help: "HTTP request latency by route and status.", Buckets: latencyBuckets,
	}, []string{"route", "status"})
	m.releases = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dplp_releases_total", Help: "Lists served: fresh (sampled and charged) or reserved (an earlier list served again at no cost).",
	}, []string{"kind"})
	m.epsCharged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dplp_eps_charged_total", Help: "Total pure-DP epsilon charged to users by this process.",
	})
	m.refusals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dplp_budget_refusals_total", Help: "Fresh lists refused because the user's budget cap would be exceeded.",
	})
	m.storeLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dplp_store_duration_seconds", Help: "Ledger store call latency by operation.", Buckets: latencyBuckets,
	}, []string{"op"})
	m.groupSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "dplp_group_commit_items", Help: "Charges committed per ledger transaction (group commit).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
	})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dplp_state_reloads_total", Help: "Rebuilds of the serving state by reason (start, reload, marks, refresh) and result.",
	}, []string{"reason", "result"})
	m.earlyRefusals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dplp_budget_refusals_before_sampling_total", Help: "Budget refusals decided from the cached spend before any sampling or ledger transaction (also counted in dplp_budget_refusals_total).",
	})
	m.releaseCalls = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dplp_release_calls_total", Help: "List requests that reached the release path (which samples a list unless it re-serves one).",
	})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dplp_rate_limited_total", Help: "Requests answered 429 by limit (address, user, auth_failures).",
	}, []string{"limit"})
	in := buildinfo.Get()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dplp_build_info", Help: "The running build: always 1, with the version, VCS revision and Go version as labels.",
	}, []string{"version", "revision", "go_version"})
	build.WithLabelValues(in.Version, in.Revision, in.GoVersion).Set(1)
	m.reg.MustRegister(m.requests, m.latency, m.releases, m.epsCharged, m.refusals, m.storeLatency, m.groupSize, m.reloads,
		m.earlyRefusals, m.releaseCalls, m.rateLimited, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, l := range []string{"address", "user", "auth_failures"} {
		m.rateLimited.WithLabelValues(l)
	}
	m.releases.WithLabelValues("fresh")
	m.releases.WithLabelValues("reserved")
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	st := strconv.Itoa(status)
	m.requests.WithLabelValues(route, st).Inc()
	m.latency.WithLabelValues(route, st).Observe(d.Seconds())
}

// timedStore records the latency of every store call (Exposure and Close
// pass through untimed). It decorates every part of ledger.Store, so it
// wraps the whole Store; its methods are grouped by part below.
type timedStore struct {
	ledger.Store
	h *prometheus.HistogramVec
	// One observer per operation, resolved once.
	charge, latest, budget, users, token, putToken, revoke, setMarks, marks, schema prometheus.Observer
}

func newTimedStore(s ledger.Store, h *prometheus.HistogramVec) *timedStore {
	return &timedStore{Store: s, h: h,
		charge: h.WithLabelValues("charge"), latest: h.WithLabelValues("latest"), budget: h.WithLabelValues("budget"),
		users: h.WithLabelValues("users"), token: h.WithLabelValues("token_hash"), putToken: h.WithLabelValues("put_token"),
		revoke: h.WithLabelValues("revoke_token"), setMarks: h.WithLabelValues("set_marks"), marks: h.WithLabelValues("marks"),
		schema: h.WithLabelValues("schema_version")}
}

func since(o prometheus.Observer, t time.Time) { o.Observe(time.Since(t).Seconds()) }

// ledger.BudgetStore.

func (s *timedStore) Charge(ctx context.Context, r ledger.Release, c ledger.Cap) (ledger.Release, bool, error) {
	defer since(s.charge, time.Now())
	return s.Store.Charge(ctx, r, c)
}

func (s *timedStore) ChargeBatch(ctx context.Context, rs []ledger.Release, c ledger.Cap) ([]ledger.ChargeResult, error) {
	defer since(s.charge, time.Now())
	return s.Store.ChargeBatch(ctx, rs, c)
}

func (s *timedStore) Latest(ctx context.Context, user, model string, k int, prov ledger.Provenance) (ledger.Release, bool, error) {
	defer since(s.latest, time.Now())
	return s.Store.Latest(ctx, user, model, k, prov)
}

func (s *timedStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error) {
	defer since(s.latest, time.Now())
	return s.Store.LatestBatch(ctx, users, model, k, prov)
}

func (s *timedStore) Budget(ctx context.Context, user string) (ledger.Spend, error) {
	defer since(s.budget, time.Now())
	return s.Store.Budget(ctx, user)
}

func (s *timedStore) Users(ctx context.Context) ([]ledger.Spend, error) {
	defer since(s.users, time.Now())
	return s.Store.Users(ctx)
}

// ledger.TokenStore.

func (s *timedStore) TokenHash(ctx context.Context, user string) ([]byte, bool, error) {
	defer since(s.token, time.Now())
	return s.Store.TokenHash(ctx, user)
}

func (s *timedStore) PutToken(ctx context.Context, user string, hash []byte) error {
	defer since(s.putToken, time.Now())
	return s.Store.PutToken(ctx, user, hash)
}

func (s *timedStore) RevokeToken(ctx context.Context, user string) error {
	defer since(s.revoke, time.Now())
	return s.Store.RevokeToken(ctx, user)
}

// ledger.MarkStore (and ledger.UserMarker).

func (s *timedStore) SetMarks(ctx context.Context, user string, marks []string) error {
	defer since(s.setMarks, time.Now())
	return s.Store.SetMarks(ctx, user, marks)
}

func (s *timedStore) Marks(ctx context.Context) (map[string][]string, error) {
	defer since(s.marks, time.Now())
	return s.Store.Marks(ctx)
}

// UserMarks reads one user's marks (ledger.UserMarks: one indexed lookup
// on the stores dplp opens).
func (s *timedStore) UserMarks(ctx context.Context, user string) ([]string, error) {
	defer since(s.marks, time.Now())
	return ledger.UserMarks(ctx, s.Store, user)
}

// ledger.Store itself.

func (s *timedStore) SchemaVersion(ctx context.Context) (int, error) {
	defer since(s.schema, time.Now())
	return s.Store.SchemaVersion(ctx)
}
