package cli

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
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/serve"
	"github.com/spf13/cobra"
)

// phaseReport is one load phase's client-side figures.
type phaseReport struct {
	Requests   int64   `json:"requests"`
	OK         int64   `json:"ok"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Maxms      float64 `json:"max_ms"`
	FirstError string  `json:"first_error,omitempty"`
}

type benchServeReport struct {
	Graph       string      `json:"graph"`
	Nodes       int         `json:"nodes"`
	Edges       int64       `json:"edges"`
	Model       string      `json:"model"`
	K           int         `json:"k"`
	Users       int         `json:"users"`
	Concurrency int         `json:"concurrency"`
	GOMAXPROCS  int         `json:"gomaxprocs"`
	Store       string      `json:"store"`
	GroupCommit bool        `json:"group_commit"`
	Sticky      phaseReport `json:"sticky"`
	Fresh       phaseReport `json:"fresh"`
	// Idempotent is the fresh phase with a new Idempotency-Key on every
	// request (each one sampled and charged, as a client's first try is).
	Idempotent phaseReport `json:"idempotent"`
	// IdempotentOverFresh is the ratio of the idempotent phase's median
	// latency to the fresh phase's (0 unless both ran).
	IdempotentOverFresh float64 `json:"idempotent_over_fresh_p50,omitempty"`
	// Fresh lists per ledger transaction during the fresh phase.
	ChargesPerCommit float64 `json:"charges_per_commit"`
	Note             string  `json:"note"`
}

// benchServeOptions holds the flag values of bench serve. run fills in
// protPath, modelPath and storeDSN when they are left to defaults.
type benchServeOptions struct {
	graphPath, protPath, modelPath, storeDSN, scoreName string
	sigma, eps                                          float64
	k, users, conc                                      int
	dur                                                 time.Duration
	noGroup                                             bool
	cpuProfile, phases                                  string
}

func newBenchServeCmd() *cobra.Command {
	o := &benchServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve --graph FILE [--model MODEL] [--protected FILE | --sigma X] [flags]",
		Short: "Load-test the recommendation service in process (sticky reads, fresh and idempotent releases)",
		Long: `Starts the service (serve.New) on a loopback port with a SQLite ledger in a
temporary directory (synchronous=FULL: every acknowledged charge is on disk),
issues tokens to --users users, releases each user's sticky list once, then
drives it with --concurrency clients for --duration per phase:
  sticky  GET  /v1/users/{u}/recommendations?k=K (re-served at no cost)
  fresh   POST /v1/users/{u}/recommendations?k=K (sampled and durably charged)
  idempotent  the same POST with a new Idempotency-Key on every request (a
          client's first try: sampled and durably charged under the key)
and prints JSON: throughput and client-side p50/p99/max latency per phase
(--phases chooses them), and the idempotent phase's median over the fresh
phase's.
Without --model, a model is trained first (--score, --eps, 2 epochs).
Client and server share the machine's cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.register(cmd)
	return cmd
}

func (o *benchServeOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.graphPath, "graph", "", "edge list file")
	f.StringVar(&o.protPath, "protected", "", "file of protected pairs (default: --sigma synthetic marks)")
	f.Float64Var(&o.sigma, "sigma", 0.3, "without --protected: mark this fraction of edges protected")
	f.StringVar(&o.modelPath, "model", "", "model file (default: train one with --score and --eps, 2 epochs)")
	f.StringVar(&o.scoreName, "score", "aa", "without --model: triad score of the model trained")
	f.Float64Var(&o.eps, "eps", 0.5, "without --model: eps_p of the model trained")
	f.StringVar(&o.storeDSN, "store", "", "ledger store (default: sqlite:TMPDIR/ledger.db, synchronous=FULL)")
	f.IntVar(&o.k, "k", 30, "list length K")
	f.IntVar(&o.users, "users", 1000, "distinct users (tokens issued, sticky lists released before timing)")
	f.IntVar(&o.conc, "concurrency", 32, "concurrent clients")
	f.DurationVar(&o.dur, "duration", 5*time.Second, "length of each timed phase")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed phases (client and server) to this file")
	f.StringVar(&o.phases, "phases", "sticky,fresh,idempotent", "timed phases to run, comma-separated: sticky, fresh, idempotent")
	f.BoolVar(&o.noGroup, "no-group-commit", false, "one ledger transaction per fresh list (to measure group commit)")
}

func (o *benchServeOptions) validate(cmd *cobra.Command) error {
	switch {
	case o.graphPath == "":
		return fmt.Errorf("--graph FILE is required")
	case o.k < 1:
		return fmt.Errorf("--k must be >= 1, got %d", o.k)
	case o.users < 1:
		return fmt.Errorf("--users must be >= 1, got %d", o.users)
	case o.conc < 1:
		return fmt.Errorf("--concurrency must be >= 1, got %d", o.conc)
	case o.dur <= 0:
		return fmt.Errorf("--duration must be > 0, got %v", o.dur)
	case o.protPath != "" && cmd.Flags().Changed("sigma"):
		return fmt.Errorf("give either --protected or --sigma, not both")
	}
	if err := checkFrac("sigma", o.sigma); err != nil {
		return err
	}
	return checkEps("eps", o.eps, o.k)
}

// benchPhases are the timed phases to run (they run in this order).
type benchPhases struct{ sticky, fresh, idempotent bool }

// parsePhases reads --phases: a comma-separated, non-empty list of sticky,
// fresh and idempotent.
func parsePhases(list string) (benchPhases, error) {
	var ph benchPhases
	for _, p := range strings.Split(list, ",") {
		switch strings.TrimSpace(p) {
		case "sticky":
			ph.sticky = true
		case "fresh":
			ph.fresh = true
		case "idempotent":
			ph.idempotent = true
		default:
			return benchPhases{}, fmt.Errorf("--phases: unknown phase %q (sticky, fresh, idempotent)", p)
		}
	}
	return ph, nil
}

func (o *benchServeOptions) run(cmd *cobra.Command) error {
	tmp, err := os.MkdirTemp("", "dplp-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	g, _, err := loadGraph(cmd, o.graphPath)
	if err != nil {
		return err
	}
	ph, err := parsePhases(o.phases)
	if err != nil {
		return err
	}
	if err := o.prepare(cmd.Context(), g, tmp); err != nil {
		return err
	}
	rep, err := benchServe(cmd.Context(), g, o, ph)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// prepare writes what the flags leave to defaults into tmp: synthetic
// protection marks, a model trained with --score and --eps, and the ledger.
func (o *benchServeOptions) prepare(ctx context.Context, g *graph.Graph, tmp string) error {
	var prot *protect.Set
	var err error
	if o.protPath != "" {
		if prot, err = protect.ReadFile(o.protPath, g); err != nil {
			return err
		}
	} else {
		if prot, err = protect.Synthetic(g, o.sigma, 0, randx.Derive(1, 0x70726f74)); err != nil {
			return err
		}
		o.protPath = filepath.Join(tmp, "protected.txt")
		var buf bytes.Buffer
		if err := prot.Write(&buf, g); err != nil {
			return err
		}
		if err := os.WriteFile(o.protPath, buf.Bytes(), 0o600); err != nil {
			return err
		}
	}
	if o.modelPath == "" {
		m, err := dplp.Train(ctx, g, prot, dplp.TrainSpec{Score: o.scoreName, Variant: "dplp", EpsP: o.eps, Epochs: 2, Seed: 1})
		if err != nil {
			return err
		}
		o.modelPath = filepath.Join(tmp, "model.json")
		if err := model.Save(o.modelPath, m); err != nil {
			return err
		}
	}
	if o.storeDSN == "" {
		o.storeDSN = "sqlite:" + filepath.Join(tmp, "ledger.db")
	}
	return nil
}

// benchClient is one user's credentials.
type benchClient struct{ user, token string }

// benchSession is a running in-process service and its HTTP clients.
type benchSession struct {
	hc      *http.Client
	base    string
	k       int
	clients []benchClient
	// keyPrefix (random per session) and keys make every Idempotency-Key
	// of the idempotent phase new, even on a store reused across runs.
	keyPrefix string
	keys      atomic.Uint64
}

func (s *benchSession) recURL(c benchClient) string {
	return fmt.Sprintf("%s/v1/users/%s/recommendations?k=%d", s.base, url.PathEscape(c.user), s.k)
}

// startBenchServer starts the service on a loopback port; stop shuts it down.
func startBenchServer(ctx context.Context, o *benchServeOptions, adminTok string) (s *benchSession, stop func(), err error) {
	srv, err := serve.New(serve.Config{GraphPath: o.graphPath, ProtectedPath: o.protPath, ModelPath: o.modelPath, StoreDSN: o.storeDSN, CreateStore: true,
		AdminToken: adminTok, UserBudget: math.Inf(1), KMax: max(o.k, 100), NoGroupCommit: o.noGroup,
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
	conc := o.conc
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * conc, MaxIdleConnsPerHost: 2 * conc, DisableCompression: true}, Timeout: time.Minute}
	kr := randx.Crypto()
	return &benchSession{hc: hc, base: "http://" + ln.Addr().String(), k: o.k,
		keyPrefix: fmt.Sprintf("bench-%016x-", kr.Uint64())}, stop, nil
}

// addUsers issues tokens to the first nUsers nodes with at least one
// candidate and releases each one's sticky list once (untimed), conc
// requests at a time (par.Run).
func (s *benchSession) addUsers(ctx context.Context, g *graph.Graph, nUsers, conc int, adminTok string) error {
	var labels []string
	for u := 0; u < g.N() && len(labels) < nUsers; u++ {
		if g.Degree(int32(u)) < g.N()-1 {
			labels = append(labels, g.Label(int32(u)))
		}
	}
	s.clients = make([]benchClient, len(labels))
	opt := par.Options{Workers: conc}
	err := par.Run(ctx, len(labels), opt, noState, func(_ struct{}, i int) error {
		body, _ := json.Marshal(map[string]string{"user": labels[i]})
		var out struct{ Token string }
		if err := benchDo(s.hc, "POST", s.base+"/v1/admin/users", adminTok, "", body, &out); err != nil {
			return err
		}
		s.clients[i] = benchClient{labels[i], out.Token}
		return nil
	})
	if err != nil {
		return fmt.Errorf("issuing tokens: %w", err)
	}
	if err := par.Run(ctx, len(s.clients), opt, noState, func(_ struct{}, i int) error {
		return benchDo(s.hc, "GET", s.recURL(s.clients[i]), s.clients[i].token, "", nil, nil)
	}); err != nil {
		return fmt.Errorf("releasing sticky lists: %w", err)
	}
	return nil
}

// phase times conc clients sending method requests to random users' lists;
// with idem, every request carries a new Idempotency-Key.
func (s *benchSession) phase(ctx context.Context, method string, idem bool, conc int, dur time.Duration) phaseReport {
	return loadPhase(ctx, conc, dur, func(rng *rand.Rand) error {
		c := s.clients[rng.IntN(len(s.clients))]
		if !idem {
			return benchDo(s.hc, method, s.recURL(c), c.token, "", nil, nil)
		}
		key := s.keyPrefix + strconv.FormatUint(s.keys.Add(1), 10)
		var out struct{ Fresh bool }
		if err := benchDo(s.hc, method, s.recURL(c), c.token, key, nil, &out); err != nil {
			return err
		}
		if !out.Fresh {
			return fmt.Errorf("POST under the new key %s was not fresh", key)
		}
		return nil
	})
}

func benchServe(ctx context.Context, g *graph.Graph, o *benchServeOptions, ph benchPhases) (*benchServeReport, error) {
	admin := randx.Crypto()
	adminTok := fmt.Sprintf("bench-admin-%016x%016x", admin.Uint64(), admin.Uint64())
	s, stop, err := startBenchServer(ctx, o, adminTok)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := s.addUsers(ctx, g, o.users, o.conc, adminTok); err != nil {
		return nil, err
	}
	rep := &benchServeReport{Graph: o.graphPath, Nodes: g.N(), Edges: g.M(), K: o.k, Users: len(s.clients), Concurrency: o.conc,
		GOMAXPROCS: runtime.GOMAXPROCS(0), Store: redactDSN(o.storeDSN), GroupCommit: !o.noGroup}
	if m, err := model.Load(o.modelPath); err == nil {
		rep.Model, _ = m.ID()
	}
	if o.cpuProfile != "" {
		pf, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	if ph.sticky {
		rep.Sticky = s.phase(ctx, "GET", false, o.conc, o.dur)
	}
	before := scrapeCommits(s.hc, s.base)
	if ph.fresh {
		rep.Fresh = s.phase(ctx, "POST", false, o.conc, o.dur)
	}
	after := scrapeCommits(s.hc, s.base)
	if n := after[1] - before[1]; n > 0 {
		rep.ChargesPerCommit = (after[0] - before[0]) / n
	}
	if ph.idempotent {
		rep.Idempotent = s.phase(ctx, "POST", true, o.conc, o.dur)
	}
	if rep.Fresh.P50ms > 0 && rep.Idempotent.P50ms > 0 {
		rep.IdempotentOverFresh = rep.Idempotent.P50ms / rep.Fresh.P50ms
	}
	rep.Note = "client-side latency over loopback; client and server share the cores; fresh and idempotent include sampling and the durable (fsynced) charge"
	return rep, nil
}

// scrapeCommits returns (sum, count) of dplp_group_commit_items from /metrics.
func scrapeCommits(hc *http.Client, base string) [2]float64 {
	var out [2]float64
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range bytes.Split(b, []byte("\n")) {
		var v float64
		if _, err := fmt.Sscanf(string(line), "dplp_group_commit_items_sum %g", &v); err == nil {
			out[0] = v
		}
		if _, err := fmt.Sscanf(string(line), "dplp_group_commit_items_count %g", &v); err == nil {
			out[1] = v
		}
	}
	return out
}

func redactDSN(dsn string) string {
	if len(dsn) > 7 && dsn[:7] == "sqlite:" {
		return "sqlite (synchronous=FULL)"
	}
	return "postgres"
}

// benchDo sends one request (with an Idempotency-Key header when key is not
// empty) and decodes a 2xx JSON reply into out (if not nil); anything else
// is an error.
func benchDo(hc *http.Client, method, url, token, key string, body []byte, out any) error {
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
func loadPhase(ctx context.Context, conc int, dur time.Duration, op func(rng *rand.Rand) error) phaseReport {
	var mu sync.Mutex
	var lat []time.Duration
	var rep phaseReport
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
