package serve

import (
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

// watchJournal exports the charge journal's state when st has one:
// dplp_journal_pending_lists (acknowledged lists not yet in the ledger's
// tables), dplp_journal_file_bytes and dplp_journal_records_total (records
// appended, counted from the ledger's first journal record).
func (m *metrics) watchJournal(st ledger.Store) {
	js, ok := st.(ledger.JournalStatser)
	if !ok {
		return
	}
	if _, on := js.JournalStats(); !on {
		return
	}
	get := func(f func(ledger.JournalStats) float64) func() float64 {
		return func() float64 {
			s, _ := js.JournalStats()
			return f(s)
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dplp_journal_pending_lists",
			Help: "Fresh lists charged through the charge journal (durable, acknowledged) and not yet applied to the ledger's tables."},
			get(func(s ledger.JournalStats) float64 { return float64(s.PendingLists) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dplp_journal_file_bytes", Help: "Size of the charge journal file."},
			get(func(s ledger.JournalStats) float64 { return float64(s.FileBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dplp_journal_records_total",
			Help: "Records appended to the charge journal (its last sequence number)."},
			get(func(s ledger.JournalStats) float64 { return float64(s.Appended) })),
	)
}
