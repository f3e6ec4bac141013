package cli

import (
	"fmt"

	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/ledger/ledgerbench"
	"github.com/spf13/cobra"
)

// benchChargeOptions holds the flag values of bench charge.
type benchChargeOptions struct {
	store, order string
	cpuProfile   string
	opt          ledgerbench.Options
	asJSON       bool
}

func newBenchChargeCmd() *cobra.Command {
	o := &benchChargeOptions{}
	cmd := &cobra.Command{
		Use:   "charge --store S [--users N] [--k 30] [--order label|number|random] [--influencers M] [--json]",
		Short: "Time charging a large batch of synthetic lists to a ledger store",
		Long: `Charges --users synthetic lists (users "0" .. "N-1", K random labels each) to
the store in transactions of --batch users, as recommend --all does, and
prints users, seconds and charges_per_second (JSON keys exactly these). The
store should be new: users already charged are re-served, not counted.

--order is the order users reach the store: label (bytewise, the ledger's key
order, what recommend --all uses), number (0, 1, 2, ...) or random. Scattered
orders make every transaction rewrite pages all over the per-user indexes.
--influencers M gives each list M random influencer labels, as exposure
tracking records them (0: exposure tracking off).`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	f := cmd.Flags()
	f.StringVar(&o.store, "store", "", "ledger store to fill: sqlite:PATH or a postgres:// DSN")
	f.IntVar(&o.opt.N, "users", 100000, "number of users (lists)")
	f.IntVar(&o.opt.K, "k", 30, "list length")
	f.IntVar(&o.opt.Batch, "batch", 4096, "users per transaction")
	f.IntVar(&o.opt.Influencers, "influencers", 0, "influencer labels per list")
	f.StringVar(&o.order, "order", "label", "label, number or random")
	f.Uint64Var(&o.opt.Seed, "seed", 1, "seed of the synthetic lists and of --order random")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the charging (go tool pprof) to this file")
	return cmd
}

func (o *benchChargeOptions) validate() error {
	if o.store == "" {
		return fmt.Errorf("--store is required (a new store: it is filled with synthetic charges)")
	}
	switch {
	case o.opt.N < 1:
		return fmt.Errorf("--users must be >= 1, got %d", o.opt.N)
	case o.opt.K < 1:
		return fmt.Errorf("--k must be >= 1, got %d", o.opt.K)
	case o.opt.Batch < 1:
		return fmt.Errorf("--batch must be >= 1, got %d", o.opt.Batch)
	case o.opt.Influencers < 0:
		return fmt.Errorf("--influencers must be >= 0, got %d", o.opt.Influencers)
	}
	switch ledgerbench.Order(o.order) {
	case ledgerbench.OrderLabel, ledgerbench.OrderNumber, ledgerbench.OrderRandom:
		o.opt.Order = ledgerbench.Order(o.order)
		return nil
	}
	return fmt.Errorf("--order must be label, number or random, got %q", o.order)
}

func (o *benchChargeOptions) run(cmd *cobra.Command) error {
	st, err := ledger.Open(cmd.Context(), o.store)
	if err != nil {
		return err
	}
	defer st.Close()
	bar := progress.New(int64(o.opt.N), "charging")
	done := 0
	o.opt.Progress = func(n int) { bar.Add(n - done); done = n }
	stop, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	res, err := ledgerbench.Run(cmd.Context(), st, o.opt)
	bar.Finish()
	if err != nil {
		return err
	}
	return printBench(cmd, o.asJSON, []string{"users", "seconds", "charges_per_second"},
		map[string]any{"users": res.Charged, "seconds": res.Seconds, "charges_per_second": float64(res.Charged) / res.Seconds})
}
