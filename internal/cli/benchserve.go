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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/graph"
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
	// Fresh lists per ledger transaction during the fresh phase.
	ChargesPerCommit float64 `json:"charges_per_commit"`
	Note             string  `json:"note"`
}

func newBenchServeCmd() *cobra.Command {
	var (
		graphPath, protPath, modelPath, storeDSN, scoreName string
		sigma, eps                                          float64
		k, users, conc                                      int
		dur                                                 time.Duration
		noGroup                                             bool
		cpuProfile, phases                                  string
	)
	cmd := &cobra.Command{
		Use:   "serve --graph FILE [--model MODEL] [--protected FILE | --sigma X] [flags]",
		Short: "Load-test the recommendation service in process (sticky reads, fresh releases)",
		Long: `Starts the service (serve.New) on a loopback port with a SQLite ledger in a
temporary directory (synchronous=FULL: every acknowledged charge is on disk),
issues tokens to --users users, releases each user's sticky list once, then
drives it with --concurrency clients for --duration per phase:
  sticky  GET  /v1/users/{u}/recommendations?k=K (re-served at no cost)
  fresh   POST /v1/users/{u}/recommendations?k=K (sampled and durably charged)
and prints JSON: throughput and client-side p50/p99/max latency per phase.
Without --model, a model is trained first (--score, --eps, 2 epochs).
Client and server share the machine's cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case graphPath == "":
				return fmt.Errorf("--graph FILE is required")
			case k < 1:
				return fmt.Errorf("--k must be >= 1, got %d", k)
			case users < 1:
				return fmt.Errorf("--users must be >= 1, got %d", users)
			case conc < 1:
				return fmt.Errorf("--concurrency must be >= 1, got %d", conc)
			case dur <= 0:
				return fmt.Errorf("--duration must be > 0, got %v", dur)
			case protPath != "" && cmd.Flags().Changed("sigma"):
				return fmt.Errorf("give either --protected or --sigma, not both")
			}
			if err := checkFrac("sigma", sigma); err != nil {
				return err
			}
			if err := checkEps("eps", eps, k); err != nil {
				return err
			}
			tmp, err := os.MkdirTemp("", "dplp-bench-serve-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			g, _, err := loadGraph(cmd, graphPath)
			if err != nil {
				return err
			}
			var prot *protect.Set
			if protPath != "" {
				if prot, err = protect.ReadFile(protPath, g); err != nil {
					return err
				}
			} else {
				if prot, err = protect.Synthetic(g, sigma, 0, randx.Derive(1, 0x70726f74)); err != nil {
					return err
				}
				protPath = filepath.Join(tmp, "protected.txt")
				var buf bytes.Buffer
				if err := prot.Write(&buf, g); err != nil {
					return err
				}
				if err := os.WriteFile(protPath, buf.Bytes(), 0o600); err != nil {
					return err
				}
			}
			if modelPath == "" {
				m, err := dplp.Train(cmd.Context(), g, prot, dplp.TrainSpec{Score: scoreName, Variant: "dplp", EpsP: eps, Epochs: 2, Seed: 1})
				if err != nil {
					return err
				}
				modelPath = filepath.Join(tmp, "model.json")
				if err := model.Save(modelPath, m); err != nil {
					return err
				}
			}
			if storeDSN == "" {
				storeDSN = "sqlite:" + filepath.Join(tmp, "ledger.db")
			}
			var ph struct{ sticky, fresh bool }
			for _, p := range strings.Split(phases, ",") {
				switch strings.TrimSpace(p) {
				case "sticky":
					ph.sticky = true
				case "fresh":
					ph.fresh = true
				default:
					return fmt.Errorf("--phases: unknown phase %q (sticky, fresh)", p)
				}
			}
			rep, err := benchServe(cmd.Context(), g, graphPath, protPath, modelPath, storeDSN, k, users, conc, dur, noGroup, ph.sticky, ph.fresh, cpuProfile)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&graphPath, "graph", "", "edge list file")
	f.StringVar(&protPath, "protected", "", "file of protected pairs (default: --sigma synthetic marks)")
	f.Float64Var(&sigma, "sigma", 0.3, "without --protected: mark this fraction of edges protected")
	f.StringVar(&modelPath, "model", "", "model file (default: train one with --score and --eps, 2 epochs)")
	f.StringVar(&scoreName, "score", "aa", "without --model: triad score of the model trained")
	f.Float64Var(&eps, "eps", 0.5, "without --model: eps_p of the model trained")
	f.StringVar(&storeDSN, "store", "", "ledger store (default: sqlite:TMPDIR/ledger.db, synchronous=FULL)")
	f.IntVar(&k, "k", 30, "list length K")
	f.IntVar(&users, "users", 1000, "distinct users (tokens issued, sticky lists released before timing)")
	f.IntVar(&conc, "concurrency", 32, "concurrent clients")
	f.DurationVar(&dur, "duration", 5*time.Second, "length of each timed phase")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the timed phases (client and server) to this file")
	f.StringVar(&phases, "phases", "sticky,fresh", "timed phases to run, comma-separated")
	f.BoolVar(&noGroup, "no-group-commit", false, "one ledger transaction per fresh list (to measure group commit)")
	return cmd
}

// benchClient is one user's credentials.
type benchClient struct{ user, token string }

func benchServe(ctx context.Context, g *graph.Graph, graphPath, protPath, modelPath, storeDSN string, k, nUsers, conc int, dur time.Duration, noGroup, sticky, fresh bool, cpuProfile string) (*benchServeReport, error) {
	admin := randx.Crypto()
	adminTok := fmt.Sprintf("bench-admin-%016x%016x", admin.Uint64(), admin.Uint64())
	srv, err := serve.New(serve.Config{GraphPath: graphPath, ProtectedPath: protPath, ModelPath: modelPath, StoreDSN: storeDSN,
		AdminToken: adminTok, UserBudget: math.Inf(1), KMax: max(k, 100), NoGroupCommit: noGroup,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, 30*time.Second) }()
	defer func() { stop(); <-done }()
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * conc, MaxIdleConnsPerHost: 2 * conc, DisableCompression: true}, Timeout: time.Minute}

	// Users: the first nUsers nodes with at least one candidate.
	var labels []string
	for u := 0; u < g.N() && len(labels) < nUsers; u++ {
		if g.Degree(int32(u)) < g.N()-1 {
			labels = append(labels, g.Label(int32(u)))
		}
	}
	clients := make([]benchClient, len(labels))
	err = parallel(len(labels), conc, func(i int) error {
		body, _ := json.Marshal(map[string]string{"user": labels[i]})
		var out struct{ Token string }
		if err := benchDo(hc, "POST", base+"/v1/admin/users", adminTok, body, &out); err != nil {
			return err
		}
		clients[i] = benchClient{labels[i], out.Token}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("issuing tokens: %w", err)
	}
	recURL := func(c benchClient) string {
		return fmt.Sprintf("%s/v1/users/%s/recommendations?k=%d", base, url.PathEscape(c.user), k)
	}
	// Release every sticky list once (untimed).
	if err := parallel(len(clients), conc, func(i int) error {
		return benchDo(hc, "GET", recURL(clients[i]), clients[i].token, nil, nil)
	}); err != nil {
		return nil, fmt.Errorf("releasing sticky lists: %w", err)
	}
	rep := &benchServeReport{Graph: graphPath, Nodes: g.N(), Edges: g.M(), K: k, Users: len(clients), Concurrency: conc,
		GOMAXPROCS: runtime.GOMAXPROCS(0), Store: redactDSN(storeDSN), GroupCommit: !noGroup}
	if m, err := model.Load(modelPath); err == nil {
		rep.Model, _ = m.ID()
	}
	if cpuProfile != "" {
		pf, err := os.Create(cpuProfile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	if sticky {
		rep.Sticky = loadPhase(conc, dur, func(rng *rand.Rand) error {
			c := clients[rng.IntN(len(clients))]
			return benchDo(hc, "GET", recURL(c), c.token, nil, nil)
		})
	}
	before := scrapeCommits(hc, base)
	if fresh {
		rep.Fresh = loadPhase(conc, dur, func(rng *rand.Rand) error {
			c := clients[rng.IntN(len(clients))]
			return benchDo(hc, "POST", recURL(c), c.token, nil, nil)
		})
	}
	after := scrapeCommits(hc, base)
	if n := after[1] - before[1]; n > 0 {
		rep.ChargesPerCommit = (after[0] - before[0]) / n
	}
	rep.Note = "client-side latency over loopback; client and server share the cores; fresh includes sampling and the durable (fsynced) charge"
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

// benchDo sends one request and decodes a 2xx JSON reply into out (if not
// nil); anything else is an error.
func benchDo(hc *http.Client, method, url, token string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
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

// parallel runs fn(0..n-1) on conc goroutines; the first error wins.
func parallel(n, conc int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// loadPhase runs op on conc goroutines for dur and summarises latencies.
func loadPhase(conc int, dur time.Duration, op func(rng *rand.Rand) error) phaseReport {
	var mu sync.Mutex
	var lat []time.Duration
	var rep phaseReport
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(dur)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := randx.Derive(uint64(w), 0x62656e6368)
			local := make([]time.Duration, 0, 4096)
			var ok, bad int64
			var firstErr error
			for time.Now().Before(deadline) {
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
		}()
	}
	wg.Wait()
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
