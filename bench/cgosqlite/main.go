// Command cgosqlite compares the ledger's write pattern on two SQLite
// drivers: modernc.org/sqlite (pure Go, the ledger's driver) and
// github.com/mattn/go-sqlite3 (C SQLite through cgo). On each it times the
// real ledger (ledger.Store.ChargeBatch through ledgerbench.Run, what dplp
// bench charge times) and plain multi-row INSERTs of the same rows into the
// same schema in the same transactions (raw), alternating the cases round
// by round in one process, and prints each run and the medians with the
// ratios ledger/raw per driver and mattn/modernc per path. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

func main() {
	var opt Options
	var rounds int
	var dir, cases string
	var asJSON bool
	flag.IntVar(&opt.Users, "users", 100000, "users (lists) per run")
	flag.IntVar(&opt.K, "k", 30, "list length")
	flag.IntVar(&opt.Batch, "batch", 4096, "users per transaction (dplp bench charge's and recommend --all's default)")
	flag.Uint64Var(&opt.Seed, "seed", 1, "seed of the synthetic lists (dplp bench charge's default)")
	flag.IntVar(&rounds, "rounds", 3, "rounds; each runs every case once, in turn")
	flag.StringVar(&dir, "dir", os.TempDir(), "directory for the database files (created and removed per run)")
	flag.StringVar(&cases, "cases", "", "comma-separated cases PATH-DRIVER, PATH ledger, raw, sql (the ledger's statements on prebuilt rows) or lean (proposed statements), DRIVER modernc or mattn; default: ledger and raw on both drivers (ledger-mattn in the overlay build only)")
	flag.BoolVar(&asJSON, "json", false, "print one JSON object")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, opt, rounds, dir, cases, asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "cgosqlite:", err)
		os.Exit(1)
	}
}

type kase struct{ path, driver string }

func (c kase) String() string { return c.path + "-" + c.driver }

func parseCases(s string) ([]kase, error) {
	all := []kase{{PathLedger, Modernc}, {PathRaw, Modernc}, {PathLedger, Mattn}, {PathRaw, Mattn},
		{PathSQL, Modernc}, {PathLean, Modernc}, {PathSQL, Mattn}, {PathLean, Mattn}}
	if s == "" {
		all = all[:4]
		if !overlayBuilt {
			all = slices.DeleteFunc(all, func(c kase) bool { return c.path == PathLedger && c.driver == Mattn })
		}
		return all, nil
	}
	var out []kase
	for _, name := range strings.Split(s, ",") {
		i := slices.IndexFunc(all, func(c kase) bool { return c.String() == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown case %q (PATH-DRIVER: PATH ledger, raw, sql or lean; DRIVER modernc or mattn)", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// Summary is the JSON output.
type Summary struct {
	Options   Options            `json:"options"`
	Settings  map[string]string  `json:"settings"`   // per driver: SQLite version and pragmas
	Runs      []Run              `json:"runs"`       // in the order they ran
	Median    map[string]float64 `json:"median"`     // case -> median charges/s
	MedianCPU map[string]float64 `json:"median_cpu"` // case -> median CPU seconds
	Ratios    map[string]float64 `json:"ratios"`     // ratios of median seconds
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func run(ctx context.Context, w io.Writer, opt Options, rounds int, dir, caseList string, asJSON bool) error {
	if opt.Users < 1 || opt.K < 1 || opt.Batch < 1 || rounds < 1 {
		return fmt.Errorf("need --users, --k, --batch, --rounds >= 1")
	}
	cs, err := parseCases(caseList)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	sum := Summary{Options: opt, Settings: map[string]string{}, Median: map[string]float64{}, MedianCPU: map[string]float64{}, Ratios: map[string]float64{}}
	for _, d := range []string{Modernc, Mattn} {
		s, err := driverSettings(ctx, dir, d)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		sum.Settings[d] = s
		if !asJSON {
			fmt.Fprintf(w, "%-8s %s\n", d, s)
		}
	}
	secs := map[string][]float64{}
	cpu := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for _, c := range cs {
			res, err := RunOne(ctx, dir, c.driver, c.path, opt)
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			sum.Runs = append(sum.Runs, res)
			secs[c.String()] = append(secs[c.String()], res.Seconds)
			cpu[c.String()] = append(cpu[c.String()], res.CPUSeconds)
			if !asJSON {
				fmt.Fprintf(w, "round %d %-15s %8.3f s  %8.3f s CPU  %9.0f charges/s  %d bytes\n", r+1, c, res.Seconds, res.CPUSeconds, res.PerSecond, res.FileBytes)
			}
		}
	}
	med := map[string]float64{}
	for name, xs := range secs {
		med[name] = median(xs)
		sum.Median[name] = float64(opt.Users) / med[name]
		sum.MedianCPU[name] = median(cpu[name])
	}
	ratio := func(key, a, b string) {
		if med[a] > 0 && med[b] > 0 {
			sum.Ratios[key] = med[a] / med[b]
		}
	}
	for _, d := range []string{Modernc, Mattn} {
		ratio("ledger/raw "+d, PathLedger+"-"+d, PathRaw+"-"+d)
	}
	for _, d := range []string{Modernc, Mattn} {
		ratio("sql/raw "+d, PathSQL+"-"+d, PathRaw+"-"+d)
		ratio("lean/raw "+d, PathLean+"-"+d, PathRaw+"-"+d)
		ratio("ledger/sql "+d, PathLedger+"-"+d, PathSQL+"-"+d)
	}
	for _, p := range []string{PathLedger, PathRaw, PathSQL, PathLean} {
		ratio(p+" modernc/mattn", p+"-"+Modernc, p+"-"+Mattn)
	}
	ratio("ledger-modernc/raw-mattn", PathLedger+"-"+Modernc, PathRaw+"-"+Mattn)
	if asJSON {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(sum)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\ncase\tmedian s\tcharges/s\tmedian CPU s\n")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%.3f\t%.0f\t%.3f\n", c, med[c.String()], sum.Median[c.String()], sum.MedianCPU[c.String()])
	}
	tw.Flush()
	keys := make([]string, 0, len(sum.Ratios))
	for k := range sum.Ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s (time): %.2fx\n", k, sum.Ratios[k])
	}
	return nil
}

// driverSettings opens a fresh ledger file through driver and reports the
// connection's SQLite version and settings.
func driverSettings(ctx context.Context, dir, driver string) (string, error) {
	file := dir + "/settings-" + driver + ".db"
	if err := newLedgerFile(ctx, file); err != nil {
		return "", err
	}
	defer func() {
		for _, suf := range []string{"", "-wal", "-shm"} {
			os.Remove(file + suf)
		}
	}()
	db, err := openDB(ctx, driver, file)
	if err != nil {
		return "", err
	}
	defer db.Close()
	return Settings(ctx, db)
}
