package cli

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
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
	cfg               serve.Config
	listen, tokenFile string
	logLevel          string
	budgetApprox      string // --user-budget-approx EPS,DELTA
	grace             time.Duration

	level slog.Level
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --graph FILE --protected FILE --model MODEL --admin-token-file F [--store DSN] [--listen ADDR]",
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

Stores: sqlite:PATH (embedded, default ~/.local/state/dplp/ledger.db or under
$XDG_STATE_HOME, whatever the working directory) or a PostgreSQL
URL postgres://... (several serve processes may share one store; the caps hold
across them). SIGTERM/SIGINT stop accepting connections and finish in-flight
requests (up to --grace).`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *serveOptions) register(cmd *cobra.Command) {
	f, cfg := cmd.Flags(), &o.cfg
	f.StringVar(&cfg.GraphPath, "graph", "", "edge list file (the current, private graph)")
	f.StringVar(&cfg.ProtectedPath, "protected", "", "file of protected pairs `a b` (a marks b); users add their own marks through the API")
	f.StringVar(&cfg.ModelPath, "model", "", "model file written by dplp train (triad score)")
	f.StringVar(&cfg.StoreDSN, "store", defaultStoreOr(serve.DefaultStore), "ledger store: sqlite:PATH or postgres://... (the default does not depend on the working directory)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks one, logged)")
	f.StringVar(&o.tokenFile, "admin-token-file", "", "file holding the admin bearer token (>= 16 bytes; surrounding whitespace ignored)")
	f.Float64Var(&cfg.UserBudget, "user-budget", math.Inf(1), "every user's cap on total epsilon (inf: no cap)")
	f.StringVar(&o.budgetApprox, "user-budget-approx", "", "also cap every user at (EPS,DELTA)-DP under zCDP composition, e.g. 3,1e-6 (enforced as the largest zCDP rho that guarantees it)")
	f.IntVar(&cfg.KMax, "k-max", 100, "largest list length K accepted")
	f.DurationVar(&cfg.MarksRefresh, "marks-refresh", 5*time.Second, "poll the store for marks set through other processes at this interval (0: off)")
	f.DurationVar(&o.grace, "grace", 30*time.Second, "on SIGTERM/SIGINT, wait this long for in-flight requests")
	f.BoolVar(&cfg.AccessLog, "access-log", false, "log every request (default: errors and admin actions)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
}

func (o *serveOptions) validate() error {
	cfg := &o.cfg
	if o.tokenFile == "" {
		return fmt.Errorf("--admin-token-file F is required (a file holding the admin bearer token)")
	}
	if math.IsNaN(cfg.UserBudget) || cfg.UserBudget < 0 {
		return fmt.Errorf("--user-budget must be >= 0 (inf for no cap), got %v", cfg.UserBudget)
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
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %v", err)
	}
	return nil
}

// readToken reads the admin token from --admin-token-file, warning through
// log when the file is readable by other users.
func (o *serveOptions) readToken(log *slog.Logger) error {
	raw, err := os.ReadFile(o.tokenFile)
	if err != nil {
		return fmt.Errorf("--admin-token-file: %w", err)
	}
	o.cfg.AdminToken = strings.TrimSpace(string(raw))
	if len(o.cfg.AdminToken) < 16 {
		return fmt.Errorf("--admin-token-file %s: the token must be at least 16 bytes", o.tokenFile)
	}
	if st, err := os.Stat(o.tokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("the admin token file is readable by other users", "file", o.tokenFile, "mode", st.Mode().Perm().String())
	}
	return nil
}

func (o *serveOptions) run(cmd *cobra.Command) error {
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: o.level}))
	if err := o.readToken(log); err != nil {
		return err
	}
	o.cfg.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := serve.New(o.cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, ln, o.grace)
}
