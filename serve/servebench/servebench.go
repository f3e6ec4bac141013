// Package servebench load-tests the recommendation service (package serve)
// in process: it starts serve.New on a loopback port, issues tokens to a set
// of users, releases each one's sticky list once, then drives the service
// with concurrent clients for a fixed duration per phase and reports
// throughput, client-side latency, the ledger calls the service made per
// request (what its cache did not answer) and the process's CPU time per
// request:
//
//	sticky      GET  /v1/users/{u}/recommendations?k=K (re-served at no cost)
//	fresh       POST /v1/users/{u}/recommendations?k=K (sampled, durably charged)
//	idempotent  the same POST with a new Idempotency-Key on every request
//
// Client and server share the machine's cores, so the figures are the
// service's throughput under its own load generator, not a network test.
// `dplp bench serve` is its command-line front end; it chooses the inputs
// (graph, marks, model, ledger) and prints the Report as JSON.
package servebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/serve"
)

// Options configures Run. GraphPath, ProtectedPath, ModelPath and StoreDSN
// are what serve.Config reads (the store is created when missing); Graph is
// the same graph, loaded by the caller, whose first Users nodes with a
// candidate become the clients.
type Options struct {
	Graph                                         *graph.Graph
	GraphPath, ProtectedPath, ModelPath, StoreDSN string
	K, Users, Concurrency                         int
	Duration                                      time.Duration // per phase
	NoGroupCommit                                 bool
	// ChargeJournal opens the store with the charge journal
	// (serve.Config.ChargeJournal).
	ChargeJournal bool
	// GroupCommitMax and GroupCommitDelay are serve.Config's group commit
	// settings (0: the service's defaults; a negative delay: no wait).
	GroupCommitMax   int
	GroupCommitDelay time.Duration
	Phases           Phases
	// CPUProfile, when not nil, receives a CPU profile of the timed
	// phases (client and server).
	CPUProfile io.Writer
}

// PhaseReport is one load phase's client-side figures.
type PhaseReport struct {
	Requests   int64   `json:"requests"`
	OK         int64   `json:"ok"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Maxms      float64 `json:"max_ms"`
	FirstError string  `json:"first_error,omitempty"`
	// StorePerRequest is, for each ledger operation the server's timed
	// store reports (dplp_store_duration_seconds: token_hash, budget,
	// latest, charge, ...), the store calls during the phase per request:
	// what was really read from (or written to) the ledger per request,
	// the cache's misses included. Operations without calls are left out.
	StorePerRequest map[string]float64 `json:"store_calls_per_request,omitempty"`
	// CPUusPerRequest is the process's CPU time (user and system, client
	// and server together) during the phase per request, in microseconds:
	// steadier than throughput on a machine shared with other jobs (0:
	// not measured on this platform).
	CPUusPerRequest float64 `json:"cpu_us_per_request,omitempty"`
}

// Report is Run's result (JSON keys are the bench serve output).
type Report struct {
	Graph       string `json:"graph"`
	Nodes       int    `json:"nodes"`
	Edges       int64  `json:"edges"`
	Model       string `json:"model"`
	K           int    `json:"k"`
	Users       int    `json:"users"`
	Concurrency int    `json:"concurrency"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	Store       string `json:"store"`
	GroupCommit bool   `json:"group_commit"`
	// GroupCommitDelayMS is the group commit's latency bound in effect
	// (0: no wait).
	GroupCommitDelayMS float64     `json:"group_commit_delay_ms"`
	Sticky             PhaseReport `json:"sticky"`
	Fresh              PhaseReport `json:"fresh"`
	// Idempotent is the fresh phase with a new Idempotency-Key on every
	// request (each one sampled and charged, as a client's first try is).
	Idempotent PhaseReport `json:"idempotent"`
	// IdempotentOverFresh is the ratio of the idempotent phase's median
	// latency to the fresh phase's (0 unless both ran).
	IdempotentOverFresh float64 `json:"idempotent_over_fresh_p50,omitempty"`
	// Fresh lists per ledger transaction during the fresh phase, and the
	// mean duration of one such transaction (the store's charge call,
	// fsync included).
	ChargesPerCommit float64 `json:"charges_per_commit"`
	CommitMs         float64 `json:"commit_ms,omitempty"`
	// FreshOverSticky is the fresh phase's throughput over the sticky
	// phase's (0 unless both ran).
	FreshOverSticky float64 `json:"fresh_over_sticky,omitempty"`
	Note            string  `json:"note"`
}

// Phases chooses the phases Run times (ParsePhases).
type Phases struct{ Sticky, Fresh, Idempotent bool }

// ParsePhases reads a comma-separated, non-empty list of sticky, fresh and
// idempotent (spaces allowed).
func ParsePhases(list string) (Phases, error) {
	var ph Phases
	for _, p := range strings.Split(list, ",") {
		switch strings.TrimSpace(p) {
		case "sticky":
			ph.Sticky = true
		case "fresh":
			ph.Fresh = true
		case "idempotent":
			ph.Idempotent = true
		default:
			return Phases{}, fmt.Errorf("unknown phase %q (sticky, fresh, idempotent)", p)
		}
	}
	return ph, nil
}

// client is one user's credentials.
type client struct{ user, token string }

// session is a running in-process service and its HTTP clients.
type session struct {
	hc      *http.Client
	base    string
	k       int
	clients []client
	// keyPrefix (random per session) and keys make every Idempotency-Key
	// of the idempotent phase new, even on a store reused across runs.
	keyPrefix string
	keys      atomic.Uint64
}

func (s *session) recURL(c client) string {
	return fmt.Sprintf("%s/v1/users/%s/recommendations?k=%d", s.base, url.PathEscape(c.user), s.k)
}

// startServer starts the service on a loopback port; stop shuts it down.
func startServer(ctx context.Context, o *Options, adminTok string) (s *session, stop func(), err error) {
	srv, err := serve.New(serve.Config{GraphPath: o.GraphPath, ProtectedPath: o.ProtectedPath, ModelPath: o.ModelPath, StoreDSN: o.StoreDSN, CreateStore: true,
		AdminToken: adminTok, UserBudget: math.Inf(1), KMax: max(o.K, 100), NoGroupCommit: o.NoGroupCommit, ChargeJournal: o.ChargeJournal,
		GroupCommitMax: o.GroupCommitMax, GroupCommitDelay: o.GroupCommitDelay,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, 30*time.Second) }()
	stop = func() { cancel(); <-done; srv.Close() }
	conc := o.Concurrency
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * conc, MaxIdleConnsPerHost: 2 * conc, DisableCompression: true}, Timeout: time.Minute}
	kr := randx.Crypto()
	return &session{hc: hc, base: "http://" + ln.Addr().String(), k: o.K,
		keyPrefix: fmt.Sprintf("bench-%016x-", kr.Uint64())}, stop, nil
}

// addUsers issues tokens to the first nUsers nodes with at least one
// candidate and releases each one's sticky list once (untimed), conc
// requests at a time (par.Run).
func (s *session) addUsers(ctx context.Context, g *graph.Graph, nUsers, conc int, adminTok string) error {
	var labels []string
	for u := 0; u < g.N() && len(labels) < nUsers; u++ {
		if g.Degree(int32(u)) < g.N()-1 {
			labels = append(labels, g.Label(int32(u)))
		}
	}
	s.clients = make([]client, len(labels))
	opt := par.Options{Workers: conc}
	err := par.Run(ctx, len(labels), opt, noState, func(_ struct{}, i int) error {
		body, _ := json.Marshal(map[string]string{"user": labels[i]})
		var out struct{ Token string }
		if err := do(s.hc, "POST", s.base+"/v1/admin/users", adminTok, "", body, &out); err != nil {
			return err
		}
		s.clients[i] = client{labels[i], out.Token}
		return nil
	})
	if err != nil {
		return fmt.Errorf("issuing tokens: %w", err)
	}
	if err := par.Run(ctx, len(s.clients), opt, noState, func(_ struct{}, i int) error {
		return do(s.hc, "GET", s.recURL(s.clients[i]), s.clients[i].token, "", nil, nil)
	}); err != nil {
		return fmt.Errorf("releasing sticky lists: %w", err)
	}
	return nil
}

// phase times conc clients sending method requests to random users' lists;
// with idem, every request carries a new Idempotency-Key.
func (s *session) phase(ctx context.Context, method string, idem bool, conc int, dur time.Duration) PhaseReport {
	return loadPhase(ctx, conc, dur, func(rng *rand.Rand) error {
		c := s.clients[rng.IntN(len(s.clients))]
		if !idem {
			return do(s.hc, method, s.recURL(c), c.token, "", nil, nil)
		}
		key := s.keyPrefix + strconv.FormatUint(s.keys.Add(1), 10)
		var out struct{ Fresh bool }
		if err := do(s.hc, method, s.recURL(c), c.token, key, nil, &out); err != nil {
			return err
		}
		if !out.Fresh {
			return fmt.Errorf("POST under the new key %s was not fresh", key)
		}
		return nil
	})
}

// Run starts the service, adds the users and times the chosen phases.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Graph == nil || o.K < 1 || o.Users < 1 || o.Concurrency < 1 || o.Duration <= 0 {
		return nil, errors.New("servebench: need a graph, K, Users and Concurrency >= 1 and a positive Duration")
	}
	if !(o.Phases.Sticky || o.Phases.Fresh || o.Phases.Idempotent) {
		return nil, errors.New("servebench: no phase chosen")
	}
	g, ph := o.Graph, o.Phases
	admin := randx.Crypto()
	adminTok := fmt.Sprintf("bench-admin-%016x%016x", admin.Uint64(), admin.Uint64())
	s, stop, err := startServer(ctx, &o, adminTok)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := s.addUsers(ctx, g, o.Users, o.Concurrency, adminTok); err != nil {
		return nil, err
	}
	rep := &Report{Graph: o.GraphPath, Nodes: g.N(), Edges: g.M(), K: o.K, Users: len(s.clients), Concurrency: o.Concurrency,
		GOMAXPROCS: runtime.GOMAXPROCS(0), Store: storeKind(o.StoreDSN, o.ChargeJournal), GroupCommit: !o.NoGroupCommit}
	if d := o.GroupCommitDelay; !o.NoGroupCommit && d >= 0 {
		if d == 0 {
			d = serve.DefaultGroupCommitDelay
		}
		rep.GroupCommitDelayMS = float64(d) / float64(time.Millisecond)
	}
	if m, err := model.Load(o.ModelPath); err == nil {
		rep.Model, _ = m.ID()
	}
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	// Each phase's store calls: the timed store's counters before and
	// after it.
	timedPhase := func(run func() PhaseReport) PhaseReport {
		before := scrapeMetrics(s.hc, s.base)
		cpu0, ok0 := processCPU()
		r := run()
		cpu1, ok1 := processCPU()
		after := scrapeMetrics(s.hc, s.base)
		r.StorePerRequest = storePerRequest(before, after, r.Requests)
		if ok0 && ok1 && r.Requests > 0 {
			r.CPUusPerRequest = float64((cpu1 - cpu0).Microseconds()) / float64(r.Requests)
		}
		return r
	}
	if ph.Sticky {
		rep.Sticky = timedPhase(func() PhaseReport { return s.phase(ctx, "GET", false, o.Concurrency, o.Duration) })
	}
	if ph.Fresh {
		before := scrapeMetrics(s.hc, s.base)
		rep.Fresh = timedPhase(func() PhaseReport { return s.phase(ctx, "POST", false, o.Concurrency, o.Duration) })
		after := scrapeMetrics(s.hc, s.base)
		if n := after[groupCount] - before[groupCount]; n > 0 {
			rep.ChargesPerCommit = (after[groupSum] - before[groupSum]) / n
		}
		if n := after[chargeCount] - before[chargeCount]; n > 0 {
			rep.CommitMs = 1000 * (after[chargeSum] - before[chargeSum]) / n
		}
	}
	if ph.Idempotent {
		rep.Idempotent = timedPhase(func() PhaseReport { return s.phase(ctx, "POST", true, o.Concurrency, o.Duration) })
	}
	if rep.Fresh.P50ms > 0 && rep.Idempotent.P50ms > 0 {
		rep.IdempotentOverFresh = rep.Idempotent.P50ms / rep.Fresh.P50ms
	}
	if rep.Sticky.Throughput > 0 && rep.Fresh.Throughput > 0 {
		rep.FreshOverSticky = rep.Fresh.Throughput / rep.Sticky.Throughput
	}
	rep.Note = "client-side latency over loopback; client and server share the cores; fresh and idempotent include sampling and the durable (fsynced) charge"
	return rep, nil
}

// Series read from /metrics (scrapeMetrics keys).
const (
	groupSum    = "dplp_group_commit_items_sum"
	groupCount  = "dplp_group_commit_items_count"
	chargeSum   = `dplp_store_duration_seconds_sum{op="charge"}`
	chargeCount = `dplp_store_duration_seconds_count{op="charge"}`
	storeCalls  = `dplp_store_duration_seconds_count{op="`
)

// scrapeMetrics returns every sample of the service's /metrics by series
// (name and labels as written); nil when it cannot be read.
func scrapeMetrics(hc *http.Client, base string) map[string]float64 {
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	return parseMetrics(b)
}

// parseMetrics reads Prometheus text-format samples "series value"
// (comments and unparsable lines skipped).
func parseMetrics(b []byte) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// storePerRequest is the store calls by operation between two scrapes,
// per request (operations without calls left out; nil without requests).
func storePerRequest(before, after map[string]float64, requests int64) map[string]float64 {
	if requests == 0 {
		return nil
	}
	out := map[string]float64{}
	for k, v := range after {
		op, ok := strings.CutPrefix(k, storeCalls)
		if !ok {
			continue
		}
		op = strings.TrimSuffix(op, `"}`)
		if d := v - before[k]; d > 0 {
			out[op] = d / float64(requests)
		}
	}
	return out
}

// storeKind names the store in the report without its DSN (which may hold
// a password).
func storeKind(dsn string, journal bool) string {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "postgres"
	}
	_, q, _ := strings.Cut(rest, "?")
	q = strings.ToLower(q)
	kind := "sqlite (synchronous=FULL"
	if strings.Contains(q, "synchronous=normal") {
		kind = "sqlite (synchronous=NORMAL: a charge acknowledged just before a power loss may be lost"
	}
	if journal || strings.Contains(q, "charge_journal=on") {
		kind += "; charge journal"
	}
	return kind + ")"
}

// do sends one request (with an Idempotency-Key header when key is not
// empty) and decodes a 2xx JSON reply into out (if not nil); anything else
// is an error.
func do(hc *http.Client, method, url, token, key string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// noState is par.Run's per-worker state for loops that need none.
func noState(int) struct{} { return struct{}{} }

// loadPhase runs op on conc clients (par.Team) for dur, or until ctx is
// cancelled, and summarises latencies. Client w draws from its own seeded
// generator; failed requests are counted, not returned.
func loadPhase(ctx context.Context, conc int, dur time.Duration, op func(rng *rand.Rand) error) PhaseReport {
	var mu sync.Mutex
	var lat []time.Duration
	var rep PhaseReport
	start := time.Now()
	deadline := start.Add(dur)
	_ = par.Team(ctx, conc, func(ctx context.Context, w int) error {
		rng := randx.Derive(uint64(w), 0x62656e6368)
		local := make([]time.Duration, 0, 4096)
		var ok, bad int64
		var firstErr error
		for time.Now().Before(deadline) && ctx.Err() == nil {
			t0 := time.Now()
			err := op(rng)
			local = append(local, time.Since(t0))
			if err != nil {
				bad++
				if firstErr == nil {
					firstErr = err
				}
			} else {
				ok++
			}
		}
		mu.Lock()
		lat = append(lat, local...)
		rep.OK += ok
		rep.Errors += bad
		if firstErr != nil && rep.FirstError == "" {
			rep.FirstError = firstErr.Error()
		}
		mu.Unlock()
		return nil
	})
	rep.Seconds = time.Since(start).Seconds()
	rep.Requests = int64(len(lat))
	rep.Throughput = float64(rep.OK) / rep.Seconds
	if len(lat) > 0 {
		slices.Sort(lat)
		q := func(p float64) float64 {
			return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
		}
		rep.P50ms, rep.P99ms = q(0.50), q(0.99)
		rep.Maxms = float64(lat[len(lat)-1].Microseconds()) / 1000
	}
	return rep
}
