package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/serve"
	"github.com/dplp/dplp/serve/servebench"
	"github.com/spf13/cobra"
)

// benchServeOptions holds the flag values of bench serve. run fills in
// protPath, modelPath and storeDSN when they are left to defaults.
type benchServeOptions struct {
	graphPath, protPath, modelPath, storeDSN, scoreName string
	sigma, eps                                          float64
	k, users, conc                                      int
	dur                                                 time.Duration
	noGroup, journal                                    bool
	groupDelay                                          time.Duration // --group-commit-delay
	groupCfg                                            time.Duration // set by validate: serve.Config's GroupCommitDelay
	groupMax                                            int
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
	f.BoolVar(&o.journal, "charge-journal", false, "charge through the charge journal, as dplp serve --charge-journal")
	f.DurationVar(&o.groupDelay, "group-commit-delay", serve.DefaultGroupCommitDelay, "latency bound of group commit, as dplp serve's (0: no wait)")
	f.IntVar(&o.groupMax, "group-commit-max", 1024, "most fresh lists per ledger transaction, as dplp serve's")
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
	case o.groupMax < 1:
		return fmt.Errorf("--group-commit-max must be >= 1, got %d", o.groupMax)
	case o.protPath != "" && cmd.Flags().Changed("sigma"):
		return fmt.Errorf("give either --protected or --sigma, not both")
	}
	if err := checkFrac("sigma", o.sigma); err != nil {
		return err
	}
	d, err := groupDelay(o.groupDelay)
	if err != nil {
		return err
	}
	o.groupCfg = d
	return checkEps("eps", o.eps, o.k)
}

// benchPhases are the timed phases to run (they run in this order).
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
	ph, err := servebench.ParsePhases(o.phases)
	if err != nil {
		return fmt.Errorf("--phases: %w", err)
	}
	if err := o.prepare(cmd.Context(), g, tmp); err != nil {
		return err
	}
	opt := servebench.Options{Graph: g, GraphPath: o.graphPath, ProtectedPath: o.protPath, ModelPath: o.modelPath, StoreDSN: o.storeDSN,
		K: o.k, Users: o.users, Concurrency: o.conc, Duration: o.dur, NoGroupCommit: o.noGroup, ChargeJournal: o.journal, Phases: ph,
		GroupCommitMax: o.groupMax, GroupCommitDelay: o.groupCfg}
	if o.cpuProfile != "" {
		pf, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pf.Close()
		opt.CPUProfile = pf
	}
	rep, err := servebench.Run(cmd.Context(), opt)
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
