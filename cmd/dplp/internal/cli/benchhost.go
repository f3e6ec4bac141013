package cli

import (
	"fmt"
	"runtime"

	"github.com/dplp/dplp/internal/hostprobe"
	"github.com/spf13/cobra"
)

// benchHostOptions holds the flag values of bench host.
type benchHostOptions struct {
	mib, syncs int
	dir        string
	asJSON     bool
}

func newBenchHostCmd() *cobra.Command {
	o := &benchHostOptions{}
	cmd := &cobra.Command{
		Use:   "host [--mib N] [--dir DIR] [--syncs N] [--json]",
		Short: "Measure the host: fresh memory, memory already mapped, and durable writes",
		Long: `Measures what the scale figures depend on besides the code, so that figures
taken on different days can be compared with the host they were taken on:

  first_touch_gb_per_second
      writing one byte to each page of --mib MiB of freshly mapped memory:
      how fast the operating system (and, on a virtual machine, the
      hypervisor) provides new pages. A 10 M-node release takes about 10 GB
      of fresh heap and writes an 8.6 GB ledger through the page cache.
  retouch_gb_per_second
      the same pages written again, once mapped (the cost the first touch
      adds is the difference).
  fsync_median_ms, fsync_p99_ms, syncs_per_second
      a page-sized write plus fsync of a file in --dir (default: the
      current directory; give the ledger's directory), --syncs times: the
      floor of every durable charge (SQLite synchronous=FULL, the charge
      journal's group commits).
  cpus
      the cores Go schedules on (GOMAXPROCS).

Single runs of wall-clock time; run it beside the benchmark whose figure
it explains.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	f := cmd.Flags()
	f.IntVar(&o.mib, "mib", 1024, "MiB of fresh memory to touch")
	f.StringVar(&o.dir, "dir", ".", "directory of the file synced (the ledger's, for its disk)")
	f.IntVar(&o.syncs, "syncs", 200, "write-and-fsync rounds")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	return cmd
}

func (o *benchHostOptions) validate() error {
	switch {
	case o.mib < 1:
		return fmt.Errorf("--mib must be >= 1, got %d", o.mib)
	case o.syncs < 1:
		return fmt.Errorf("--syncs must be >= 1, got %d", o.syncs)
	}
	return nil
}

func (o *benchHostOptions) run(cmd *cobra.Command) error {
	bytes := int64(o.mib) << 20
	first, again, err := hostprobe.Touch(bytes)
	if err != nil {
		return err
	}
	syncs, err := hostprobe.Fsync(o.dir, o.syncs)
	if err != nil {
		return err
	}
	gbps := func(s float64) float64 { return float64(bytes) / 1e9 / s }
	var total float64
	for _, d := range syncs {
		total += d.Seconds()
	}
	ms := func(q float64) float64 { return hostprobe.Quantile(syncs, q).Seconds() * 1e3 }
	keys := []string{"cpus", "bytes", "first_touch_seconds", "first_touch_gb_per_second", "retouch_gb_per_second",
		"syncs", "fsync_median_ms", "fsync_p99_ms", "syncs_per_second"}
	return printBench(cmd, o.asJSON, keys, map[string]any{
		"cpus":                      runtime.GOMAXPROCS(0),
		"bytes":                     bytes,
		"first_touch_seconds":       first.Seconds(),
		"first_touch_gb_per_second": gbps(first.Seconds()),
		"retouch_gb_per_second":     gbps(again.Seconds()),
		"syncs":                     len(syncs),
		"fsync_median_ms":           ms(0.5),
		"fsync_p99_ms":              ms(0.99),
		"syncs_per_second":          float64(len(syncs)) / total,
	})
}
