package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dplp/dplp/ledger"
)

const storeHelp = "ledger store: sqlite:PATH (created if missing) or postgres://user@host/db"

func newLedgerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect the privacy-budget ledger store and import old JSON ledgers",
		Long: `The ledger records every released top-K list with the pure-DP epsilon and
zCDP rho it cost (privacy-model §6), in a SQLite file or a PostgreSQL database
(see docs/LEDGER.md). These commands import the old JSON ledger and report
per-user spending and per-party exposure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLedgerImportCmd(), newLedgerShowCmd(), newLedgerExposureCmd())
	return cmd
}

func openStore(cmd *cobra.Command, dsn string) (ledger.Store, error) {
	if dsn == "" {
		return nil, errors.New("--store is required (" + storeHelp + ")")
	}
	return ledger.Open(cmdContext(cmd), dsn)
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func newLedgerImportCmd() *cobra.Command {
	var store string
	cmd := &cobra.Command{
		Use:   "import FILE --store S",
		Short: "Import an old JSON ledger (account format version 1) into a store",
		Long: `Charges every release of an old JSON ledger (written by earlier dplp
versions) to the store, in one transaction and without caps. Each user's
imported spending equals the file's "spent" figure: when the file's releases
sum to less (a list sampled again replaced the older one), an adjustment
entry makes up the difference. Imported releases are attributed to every
protected party (influencers "*"), since the old ledger did not record them.
Importing the same file again records nothing. An invalid file is an error
naming the file and the entry, and nothing is recorded.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openStore(cmd, store)
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := ledger.ImportJSON(cmdContext(cmd), s, args[0])
			if err != nil {
				return err
			}
			users, err := s.Users(cmdContext(cmd))
			if err != nil {
				return err
			}
			total := 0.0
			for _, u := range users {
				total += u.Spent
			}
			if n == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing new in %s (already imported or empty)\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "imported %d entries from %s\n", n, args[0])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "store now: %d users, total spent %.6g\n", len(users), total)
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", storeHelp)
	return cmd
}

type ledgerUserJSON struct {
	User     string  `json:"user"`
	Spent    float64 `json:"spent"`
	Releases int     `json:"releases"`
}

type ledgerShowJSON struct {
	Users      []ledgerUserJSON `json:"users"`
	TotalSpent float64          `json:"total_spent"`
}

// ledgerShowOptions holds the flag values of ledger show.
type ledgerShowOptions struct {
	store  string
	asJSON bool
}

func newLedgerShowCmd() *cobra.Command {
	o := &ledgerShowOptions{}
	cmd := &cobra.Command{
		Use:   "show --store S [--json]",
		Short: "Print every user's spending",
		Long: `Prints, for every user with at least one release, the total pure-DP epsilon
spent (basic composition of the user's lists), the total zCDP rho, the number
of releases, and how many of them used a seeded noise generator (those carry
no privacy guarantee; a warning is printed on stderr). With --json the output
is exactly {"users": [{"user", "spent", "releases"}], "total_spent"}.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *ledgerShowOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.store, "store", "", storeHelp)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, `print {"users": [{"user", "spent", "releases"}], "total_spent"}`)
}

func (o *ledgerShowOptions) validate() error {
	if o.store == "" {
		return errors.New("--store is required (" + storeHelp + ")")
	}
	return nil
}

func (o *ledgerShowOptions) run(cmd *cobra.Command) error {
	s, err := openStore(cmd, o.store)
	if err != nil {
		return err
	}
	defer s.Close()
	users, err := s.Users(cmdContext(cmd))
	if err != nil {
		return err
	}
	out, seeded := ledgerShow(users)
	if seeded > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %d releases used a seeded noise generator: they have no privacy guarantee and must not be deployed\n", seeded)
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	return printLedgerUsers(newPrinter(cmd.OutOrStdout(), formatTable), users, out.TotalSpent)
}

// ledgerShow is the --json report of users' spending and the number of
// releases that used a seeded noise generator.
func ledgerShow(users []ledger.Spend) (out ledgerShowJSON, seeded int) {
	out.Users = []ledgerUserJSON{}
	for _, u := range users {
		out.Users = append(out.Users, ledgerUserJSON{u.User, u.Spent, u.Releases})
		out.TotalSpent += u.Spent
		seeded += u.Seeded
	}
	return out, seeded
}

// printLedgerUsers prints the users table and the total.
func printLedgerUsers(p *printer, users []ledger.Spend, total float64) error {
	p.row("user", "spent_eps", "rho", "releases", "seeded")
	for _, u := range users {
		p.row(u.User, fmt.Sprintf("%.6g", u.Spent), fmt.Sprintf("%.6g", u.Rho), strconv.Itoa(u.Releases), strconv.Itoa(u.Seeded))
	}
	if err := p.line("%d users, total spent %.6g (the sum is not a guarantee; each user's own spending is)", len(users), total); err != nil {
		return err
	}
	return p.flush()
}

type exposureEntryJSON struct {
	Party string  `json:"party"`
	Eps   float64 `json:"eps"`
	Rho   float64 `json:"rho"`
}

type exposureSummaryJSON struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	Max   float64 `json:"max"`
}

type exposureJSON struct {
	Parties  []exposureEntryJSON `json:"parties"`
	Unlisted exposureEntryJSON   `json:"unlisted"`
	Summary  exposureSummaryJSON `json:"summary"`
}

// quantile is the nearest-rank q-quantile of sorted xs (0 when empty).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// ledgerExposureOptions holds the flag values of ledger exposure.
type ledgerExposureOptions struct {
	store  string
	top    int
	asJSON bool
}

func newLedgerExposureCmd() *cobra.Command {
	o := &ledgerExposureOptions{}
	cmd := &cobra.Command{
		Use:   "exposure --store S [--top N] [--json]",
		Short: "Print the most exposed protected parties and the distribution of exposure",
		Long: `exposure(w) bounds what a coalition of users can learn about protected party
w: the sum of the costs of every release whose list w's protected pairs could
change (privacy-model §6). Releases whose influencers are unknown or all
parties ("*", for example imported ones) count for everyone: their sum is
printed as "every other party". Prints the --top most exposed parties (0 =
all) and a summary over all named parties (count, mean, p50, p90, max of eps).
Exposure is reported, never enforced. With --json: {"parties": [{"party",
"eps", "rho"}], "unlisted": {"party": "*", "eps", "rho"}, "summary": {"count",
"mean", "p50", "p90", "max"}}.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *ledgerExposureOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.store, "store", "", storeHelp)
	cmd.Flags().IntVar(&o.top, "top", 20, "print the N most exposed parties (0 = all)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
}

func (o *ledgerExposureOptions) validate() error {
	if o.top < 0 {
		return fmt.Errorf("--top %d: want >= 0 (0 = all)", o.top)
	}
	return nil
}

func (o *ledgerExposureOptions) run(cmd *cobra.Command) error {
	s, err := openStore(cmd, o.store)
	if err != nil {
		return err
	}
	defer s.Close()
	all, err := s.Exposure(cmdContext(cmd), 0)
	if err != nil {
		return err
	}
	out := exposureReport(all, o.top)
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	return printExposure(newPrinter(cmd.OutOrStdout(), formatTable), out)
}

// exposureReport keeps the top most exposed named parties of all (0 = all),
// the unlisted ("*") entry, and summarizes the named parties' eps.
func exposureReport(all []ledger.Exposure, top int) exposureJSON {
	out := exposureJSON{Parties: []exposureEntryJSON{}, Unlisted: exposureEntryJSON{Party: "*"}}
	var eps []float64
	for _, e := range all {
		if e.Party == "*" {
			out.Unlisted = exposureEntryJSON{e.Party, e.Eps, e.Rho}
			continue
		}
		eps = append(eps, e.Eps)
		if top == 0 || len(out.Parties) < top {
			out.Parties = append(out.Parties, exposureEntryJSON{e.Party, e.Eps, e.Rho})
		}
	}
	sort.Float64s(eps)
	out.Summary.Count = len(eps)
	if len(eps) > 0 {
		sum := 0.0
		for _, x := range eps {
			sum += x
		}
		out.Summary.Mean = sum / float64(len(eps))
		out.Summary.P50 = quantile(eps, 0.5)
		out.Summary.P90 = quantile(eps, 0.9)
		out.Summary.Max = eps[len(eps)-1]
	}
	return out
}

// printExposure prints the exposure table and summary.
func printExposure(p *printer, out exposureJSON) error {
	if out.Summary.Count == 0 && out.Unlisted.Eps == 0 {
		p.line("no exposure recorded")
		return p.flush()
	}
	g := func(x float64) string { return fmt.Sprintf("%.6g", x) }
	p.row("party", "exposure_eps", "rho")
	for _, e := range out.Parties {
		p.row(e.Party, g(e.Eps), g(e.Rho))
	}
	if out.Unlisted.Eps > 0 || out.Unlisted.Rho > 0 {
		p.row("(every other party)", g(out.Unlisted.Eps), g(out.Unlisted.Rho))
	}
	m := out.Summary
	if m.Count == 0 {
		p.line("no named parties: every release counted for every party")
	} else {
		p.line("%d named parties: mean %.6g, p50 %.6g, p90 %.6g, max %.6g (eps)", m.Count, m.Mean, m.P50, m.P90, m.Max)
	}
	return p.flush()
}
