package cli

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dplp/dplp/serve"
	"github.com/spf13/cobra"
)

// serveOptions holds the flag values of the serve command; cfg collects the
// service configuration.
type serveOptions struct {
	cfg                      serve.Config
	listen, metricsListen    string
	tokenFile                string // --admin-token-file
	logLevel                 string
	budgetApprox             string         // --user-budget-approx EPS,DELTA
	partyBudget              *float64       // --user-budget-party (nil: options built without flags, no party cap)
	groupDelay               *time.Duration // --group-commit-delay (nil: options built without flags, the default)
	trustedProxies           []string       // --trusted-proxy CIDR (repeatable)
	grace                    time.Duration
	tlsCert, tlsKey          string // --tls-cert, --tls-key
	rateBurst, authFailBurst int

	level slog.Level
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --graph FILE [--protected FILE] [--nodes FILE] --model MODEL --admin-token-file F [--store DSN [--create]] [--listen ADDR]",
		Short: "Run the private recommendation service (HTTP, JSON)",
		Long: `Serves private top-K recommendation lists over HTTP (see docs/SERVING.md and
GET /openapi.json). Every list comes from the release path with crypto-seeded
noise (there is no seed option); a fresh list is durably charged to its user's
budget in the ledger store before it is returned, and --user-budget caps every
user's total epsilon. Users get bearer tokens from the admin
(POST /v1/admin/users) and can read only their own lists, budget and marks.
The service never returns a seeded list: releases made by seeded research
runs (recommend --seed) into the same store are ignored by its re-serve
lookups and idempotency keys, and the user gets (and is charged for) a
private list instead. /readyz is a bare status; the served state's counts
are at GET /v1/admin/state (admin token).

Data: the graph (edge list or snapshot), marks and node list are read through
the one loader, as every command reads them; --protected may be left out when
the snapshot stores marks (synthetic marks, from convert --sigma, are refused).

Stores: sqlite:PATH (embedded, default ~/.local/state/dplp/ledger.db or under
$XDG_STATE_HOME, whatever the working directory) or a PostgreSQL
URL postgres://... (several serve processes may share one store; the caps hold
across them). A missing ledger is an error unless --create. SIGTERM/SIGINT stop
accepting connections and finish in-flight requests (up to --grace); SIGHUP
re-reads the admin token file and the data files (as POST /v1/admin/reload).`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	withConfigFile(cmd, os.Environ)
	return cmd
}

func (o *serveOptions) register(cmd *cobra.Command) {
	f, cfg := cmd.Flags(), &o.cfg
	f.StringVar(&cfg.GraphPath, "graph", "", "graph: edge list or snapshot (the current, private graph)")
	f.StringVar(&cfg.ProtectedPath, "protected", "", "file of protected pairs `a b` (a marks b); optional when the snapshot stores marks; users add their own marks through the API")
	f.StringVar(&cfg.NodesPath, "nodes", "", "node list, one label a line (nodes without edges)")
	f.StringVar(&cfg.ModelPath, "model", "", "model file written by dplp train (triad score)")
	f.StringVar(&cfg.StoreDSN, "store", "", "ledger store: sqlite:PATH or postgres://... (default: "+defaultStoreOr("sqlite:~/.local/state/dplp/ledger.db")+")")
	f.BoolVar(&cfg.CreateStore, "create", false, "create the ledger when the store has none")
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks one, logged)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS and HTTP/2 with this PEM certificate chain (with --tls-key; re-read on SIGHUP and POST /v1/admin/reload)")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "serve /metrics on this address instead of on --listen (e.g. 127.0.0.1:9090)")
	f.StringVar(&o.tokenFile, "admin-token-file", "", "file holding the admin bearer token (>= 32 bytes, mode 0600; re-read on SIGHUP and reload)")
	f.DurationVar(&cfg.AdminTokenGrace, "admin-token-grace", 5*time.Minute, "after the admin token file changes, the old token keeps working this long (0: not at all)")
	f.Float64Var(&cfg.UserBudget, "user-budget", math.Inf(1), "every user's cap on total epsilon (inf: no cap)")
	f.StringVar(&o.budgetApprox, "user-budget-approx", "", "also cap every user at (EPS,DELTA)-DP under zCDP composition, e.g. 3,1e-6 (enforced as the largest zCDP rho that guarantees it)")
	o.partyBudget = new(float64)
	f.Float64Var(o.partyBudget, "user-budget-party", math.Inf(1), "every user's cap on total epsilon under the party unit (a pair-unit dplp-list list costs eps x L1_party/L1_pair there; inf: no cap)")
	f.IntVar(&cfg.KMax, "k-max", 100, "largest list length K accepted")
	f.BoolVar(&cfg.ChargeJournal, "charge-journal", false, "charge fresh lists through a journal file beside the SQLite ledger (one append and fdatasync per group, applied to the ledger in the background); the service is then the ledger's only writer (docs/LEDGER.md)")
	f.IntVar(&cfg.GroupCommitMax, "group-commit-max", 1024, "most fresh lists charged in one ledger transaction (group commit; 0: 1024)")
	o.groupDelay = new(time.Duration)
	f.DurationVar(o.groupDelay, "group-commit-delay", serve.DefaultGroupCommitDelay, "latency bound of group commit: a ledger transaction waits up to this long for as many fresh lists as the previous one held (0: no wait)")
	f.DurationVar(&cfg.MarksRefresh, "marks-refresh", 5*time.Second, "poll the store for marks set through other processes at this interval (0: off)")
	f.Float64Var(&cfg.RateLimit, "rate-limit", 50, "requests per second allowed per user token and per client address on /v1/ routes (0: no limit)")
	f.IntVar(&o.rateBurst, "rate-burst", 0, "bursts allowed over --rate-limit (0: the rate, at least 1)")
	f.Float64Var(&cfg.AuthFailLimit, "auth-fail-limit", 1, "failed authentications per second allowed per client address (0: no limit)")
	f.IntVar(&o.authFailBurst, "auth-fail-burst", 20, "bursts allowed over --auth-fail-limit")
	f.StringSliceVar(&o.trustedProxies, "trusted-proxy", nil, "CIDR of a reverse proxy whose X-Forwarded-For names the client (repeatable; default: none, the header is ignored)")
	f.DurationVar(&o.grace, "grace", 30*time.Second, "on SIGTERM/SIGINT, wait this long for in-flight requests")
	f.BoolVar(&cfg.AccessLog, "access-log", false, "log every request: method, route, status, time, client address, request ID (default: errors and admin actions)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
}

func (o *serveOptions) validate() error {
	cfg := &o.cfg
	if o.tokenFile == "" {
		return fmt.Errorf("--admin-token-file F is required (a file holding the admin bearer token)")
	}
	cfg.AdminTokenFile = o.tokenFile
	if math.IsNaN(cfg.UserBudget) || cfg.UserBudget < 0 {
		return fmt.Errorf("--user-budget must be >= 0 (inf for no cap), got %v", cfg.UserBudget)
	}
	if o.partyBudget != nil {
		if err := checkPartyBudget(*o.partyBudget); err != nil {
			return err
		}
		cfg.UserPartyBudget = *o.partyBudget
	}
	if o.groupDelay != nil {
		d, err := groupDelay(*o.groupDelay)
		if err != nil {
			return err
		}
		cfg.GroupCommitDelay = d
	}
	if cfg.GroupCommitMax < 0 {
		return fmt.Errorf("--group-commit-max must be >= 1 (0: 1024), got %d", cfg.GroupCommitMax)
	}
	rho, err := parseApproxCap(o.budgetApprox)
	if err != nil {
		return err
	}
	if !math.IsInf(rho, 1) {
		cfg.UserRhoCap = rho
	}
	if cfg.KMax < 1 {
		return fmt.Errorf("--k-max must be >= 1, got %d", cfg.KMax)
	}
	if cfg.MarksRefresh < 0 {
		return fmt.Errorf("--marks-refresh must be >= 0, got %v", cfg.MarksRefresh)
	}
	if o.grace <= 0 {
		return fmt.Errorf("--grace must be > 0, got %v", o.grace)
	}
	if cfg.AdminTokenGrace < 0 {
		return fmt.Errorf("--admin-token-grace must be >= 0, got %v", cfg.AdminTokenGrace)
	}
	if cfg.AdminTokenGrace == 0 {
		cfg.AdminTokenGrace = -1 // serve.Config: negative is none
	}
	for _, c := range []struct {
		name string
		rate float64
		b    int
	}{{"--rate-limit", cfg.RateLimit, o.rateBurst}, {"--auth-fail-limit", cfg.AuthFailLimit, o.authFailBurst}} {
		if math.IsNaN(c.rate) || math.IsInf(c.rate, 0) || c.rate < 0 {
			return fmt.Errorf("%s must be a finite rate >= 0 (0: no limit), got %v", c.name, c.rate)
		}
		if c.b < 0 {
			return fmt.Errorf("%s's burst must be >= 0, got %d", c.name, c.b)
		}
	}
	cfg.RateBurst, cfg.AuthFailBurst = o.rateBurst, o.authFailBurst
	cfg.TrustedProxies = nil
	for _, c := range o.trustedProxies {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			a, aerr := netip.ParseAddr(strings.TrimSpace(c))
			if aerr != nil {
				return fmt.Errorf("--trusted-proxy %q: not a CIDR (e.g. 10.0.0.0/8) or an address", c)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, p.Masked())
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %v", err)
	}
	return nil
}

// plainTextWarning is the warning for a listener reachable beyond the
// loopback interface without TLS ("" when there is none to give).
func plainTextWarning(addr net.Addr, tls bool) string {
	if tls {
		return ""
	}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return ""
	}
	return "listening beyond loopback without TLS: tokens and lists cross the network in clear; terminate TLS in front of the service (a reverse proxy, then --trusted-proxy) or listen on 127.0.0.1"
}

func (o *serveOptions) run(cmd *cobra.Command) error {
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: o.level}))
	o.cfg.Logger = log
	o.cfg.SeparateMetrics = o.metricsListen != ""
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var cert *serve.CertReloader
	if o.tlsCert != "" {
		var err error
		if cert, err = serve.NewCertReloader(o.tlsCert, o.tlsKey); err != nil {
			return err
		}
		o.cfg.ReloadHook = cert.ReloadHook(log)
		log.Info("tls certificate loaded", cert.LogAttrs()...)
	}
	srv, err := serve.New(o.cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if cert != nil {
		ln = serve.TLSListener(ln, cert)
	}
	if w := plainTextWarning(ln.Addr(), cert != nil); w != "" {
		log.Warn(w, "addr", ln.Addr().String())
	}
	if o.metricsListen != "" {
		mln, err := net.Listen("tcp", o.metricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		go ms.Serve(mln)
		defer ms.Close()
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := srv.Reload(ctx); err != nil {
					log.Error("reload on SIGHUP failed; still serving the previous token and state", "err", err)
				}
			}
		}
	}()
	return srv.Serve(ctx, ln, o.grace)
}

// groupDelay maps --group-commit-delay to serve.Config.GroupCommitDelay:
// 0 (no wait) becomes a negative delay (the Config's zero value is the
// default bound); a negative flag is an error.
func groupDelay(d time.Duration) (time.Duration, error) {
	if d < 0 {
		return 0, fmt.Errorf("--group-commit-delay must be >= 0 (0: no wait), got %v", d)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}
