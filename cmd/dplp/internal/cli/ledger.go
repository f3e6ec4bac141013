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
	"github.com/dplp/dplp/privunit"
)

const storeHelp = "ledger store: sqlite:PATH or postgres://user@host/db (default: $XDG_STATE_HOME/dplp/ledger.db, else ~/.local/state/dplp/ledger.db; printed when used)"

const createHelp = "create the ledger if the store has none (otherwise a missing ledger is an error, so a mistyped --store never starts an empty budget)"

func newLedgerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Create, inspect and verify the privacy-budget ledger store; import old JSON ledgers",
		Long: `The ledger records every released top-K list with the pure-DP epsilon and
zCDP rho it cost (privacy-model §6), in a SQLite file or a PostgreSQL database
(see docs/LEDGER.md). A ledger never appears by accident: commands that write
refuse a store without one unless given --create, and "ledger init" creates
one (or migrates an old one). "show", "exposure" and "verify" open the store
read-only: they never migrate or write, so a read-only database user can run
them. Without --store the default store is used (printed on stderr):
$XDG_STATE_HOME/dplp/ledger.db, else ~/.local/state/dplp/ledger.db, the same
file whatever the working directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLedgerInitCmd(), newLedgerImportCmd(), newLedgerShowCmd(), newLedgerExposureCmd(), newLedgerVerifyCmd())
	return cmd
}

// storeMode is how openStore opens a ledger.
type storeMode int

const (
	storeRead   storeMode = iota // read-only: never migrates or writes
	storeWrite                   // an existing ledger, migrated when needed
	storeCreate                  // created when missing
)

// writeMode is storeCreate when create is set (--create), else storeWrite.
func writeMode(create bool) storeMode {
	if create {
		return storeCreate
	}
	return storeWrite
}

// resolveStore returns dsn, or the default store when dsn is empty (then
// printing which on stderr, so the user sees where the budget lives).
func resolveStore(cmd *cobra.Command, dsn string) (string, error) {
	if dsn != "" {
		return dsn, nil
	}
	def, err := ledger.DefaultStore()
	if err != nil {
		return "", fmt.Errorf("%w (pass --store)", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "using the default ledger store %s\n", def)
	return def, nil
}

// defaultStoreOr is ledger.DefaultStore, or fallback when it has none (no
// home directory): a flag default for commands that resolve no default
// themselves.
func defaultStoreOr(fallback string) string {
	if def, err := ledger.DefaultStore(); err == nil {
		return def
	}
	return fallback
}

// openStore opens the ledger named by dsn (the default store when empty)
// in mode m. Waits of more than a second for another process's lock are
// announced on stderr. A missing ledger's error says how to create one.
// It also returns the store's name for messages (secrets hidden).
func openStore(cmd *cobra.Command, dsn string, m storeMode) (ledger.Store, string, error) {
	dsn, err := resolveStore(cmd, dsn)
	if err != nil {
		return nil, "", err
	}
	name := ledger.Redact(dsn)
	stderr := cmd.ErrOrStderr()
	o := ledger.OpenOptions{
		Create:   m == storeCreate,
		ReadOnly: m == storeRead,
		LockWait: func() { fmt.Fprintf(stderr, "waiting for the ledger lock on %s...\n", name) },
	}
	s, err := ledger.OpenWith(cmdContext(cmd), dsn, o)
	if errors.Is(err, ledger.ErrNoLedger) {
		hint := "pass --create to create it"
		if m == storeRead {
			hint = "nothing to read"
		}
		return nil, "", fmt.Errorf("%w\n(no ledger at %s: %s, or create one with: dplp ledger init --store '%s')", err, name, hint, name)
	}
	if err != nil {
		return nil, "", err
	}
	if m == storeRead {
		warnJournal(cmd, s, name)
	}
	return s, name, nil
}

// warnJournal tells on stderr what a read-only open of an SQLite ledger
// does not see of its charge journal: the last charges of a running
// service with --charge-journal, or the charges a journaled writer that
// stopped without closing left to be applied.
func warnJournal(cmd *cobra.Command, s ledger.Store, name string) {
	js, ok := s.(ledger.JournalStater)
	if !ok {
		return
	}
	st, err := js.JournalState(cmdContext(cmd))
	stderr := cmd.ErrOrStderr()
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "warning: %v\n", err)
	case st.Held:
		fmt.Fprintf(stderr, "note: a process with the charge journal (dplp serve --charge-journal) has %s open: its charges of the last moments (about 100 ms) may not be in these figures yet\n", name)
	case st.PendingLists > 0:
		fmt.Fprintf(stderr, "warning: %s's charge journal holds %d charged list(s) in %d record(s) that are not in these figures: a process with the charge journal stopped without closing; the next open for writing (dplp ledger init --store '%s') applies them\n",
			name, st.PendingLists, st.PendingRecords, name)
	}
}

func newLedgerInitCmd() *cobra.Command {
	var store string
	cmd := &cobra.Command{
		Use:   "init [--store S]",
		Short: "Create a ledger (or migrate an existing one to this dplp's schema)",
		Long: `Creates an empty ledger in the store (a new SQLite file and its directory,
mode 0700, or dplp's tables in an empty PostgreSQL schema), or migrates an
existing ledger to the schema this dplp writes; an up-to-date ledger is left
as it is. A database with other tables is refused and left untouched. Prints
what was done and the store's schema version.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsn, err := resolveStore(cmd, store)
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			before := "existing"
			if ro, err := ledger.OpenWith(ctx, dsn, ledger.OpenOptions{ReadOnly: true}); err == nil {
				ro.Close()
			} else if errors.Is(err, ledger.ErrNoLedger) {
				before = "new"
			} else if errors.Is(err, ledger.ErrSchemaOld) {
				before = "old"
			}
			s, name, err := openStore(cmd, dsn, storeCreate)
			if err != nil {
				return err
			}
			defer s.Close()
			v, err := s.SchemaVersion(ctx)
			if err != nil {
				return err
			}
			switch before {
			case "new":
				fmt.Fprintf(cmd.OutOrStdout(), "created a ledger at %s (schema version %d)\n", name, v)
			case "old":
				fmt.Fprintf(cmd.OutOrStdout(), "migrated the ledger at %s to schema version %d\n", name, v)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "the ledger at %s is up to date (schema version %d)\n", name, v)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", storeHelp)
	return cmd
}

// ledgerVerifyJSON is ledger verify's --json output.
type ledgerVerifyJSON struct {
	OK       bool     `json:"ok"`
	Schema   int      `json:"schema"`
	Users    int      `json:"users"`
	Releases int      `json:"releases"`
	Parties  int      `json:"parties"`
	Problems []string `json:"problems"`
	More     int      `json:"more_problems"`
}

func newLedgerVerifyCmd() *cobra.Command {
	var store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--store S] [--json]",
		Short: "Check the ledger's integrity; exit non-zero naming what is wrong",
		Long: `Reads the whole ledger read-only, in one snapshot, and checks: the schema
version (this dplp's, versions 1..N recorded; SQLite's quick_check); every
user's spend row (spent and rho finite and >= 0, 0 <= seeded <= releases)
against the releases it sums (spent = sum of the releases' costs, rho = sum
of their rho, the release and seeded counts, and the party-unit totals:
party_spent = sum of the bounded party-unit costs, party_unbounded = the
number of unbounded ones); every release (cost and rho >= 0, list at most k
labels, cost <= k x eps_p where eps_p is recorded, party-unit cost = cost
for a party-unit release and >= cost or unbounded for a pair-unit one);
every exposure row (>= 0). Prints "ok" and what was checked, or every
problem (the row and what is wrong) and exits with status 1. With --json:
{"ok", "schema", "users", "releases", "parties", "problems", "more_problems"}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, name, err := openStore(cmd, store, storeRead)
			if err != nil {
				return err
			}
			defer s.Close()
			rep, err := ledger.Verify(cmdContext(cmd), s)
			if err != nil {
				return err
			}
			out := ledgerVerifyJSON{OK: rep.OK(), Schema: rep.Schema, Users: rep.Users, Releases: rep.Releases, Parties: rep.Parties, Problems: []string{}, More: rep.Truncated}
			for _, p := range rep.Problems {
				out.Problems = append(out.Problems, p.String())
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
			} else if rep.OK() {
				fmt.Fprintf(cmd.OutOrStdout(), "ok: %s: schema version %d, %d users, %d releases, %d exposure rows consistent\n", name, rep.Schema, rep.Users, rep.Releases, rep.Parties)
			}
			if !rep.OK() {
				return fmt.Errorf("%s: %w", name, rep.Err())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", storeHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (the exit status still says whether the ledger is consistent)")
	return cmd
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func newLedgerImportCmd() *cobra.Command {
	var store string
	var create bool
	cmd := &cobra.Command{
		Use:   "import FILE [--store S] [--create]",
		Short: "Import an old JSON ledger (account format version 1) into a store",
		Long: `Charges every release of an old JSON ledger (written by earlier dplp
versions) to the store, in one transaction and without caps. Each user's
imported spending equals the file's "spent" figure: when the file's releases
sum to less (a list sampled again replaced the older one), an adjustment
entry makes up the difference. Imported releases are attributed to every
protected party (influencers "*"), since the old ledger did not record them.
Importing the same file again records nothing. An invalid file is an error
naming the file and the entry, and nothing is recorded. The store must hold
a ledger already unless --create is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openStore(cmd, store, writeMode(create))
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
	cmd.Flags().BoolVar(&create, "create", false, createHelp)
	return cmd
}

type ledgerUserJSON struct {
	User     string  `json:"user"`
	Spent    float64 `json:"spent"`
	Releases int     `json:"releases"`
	// The party-unit totals (written only when some release is pair-unit,
	// like by_unit): the sum of the bounded party-unit costs and how many
	// releases have an unbounded one (then the party-unit total is
	// unbounded whatever party_spent says).
	PartySpent     *float64 `json:"party_spent,omitempty"`
	PartyUnbounded *int     `json:"party_unbounded,omitempty"`
}

type ledgerShowJSON struct {
	Users      []ledgerUserJSON `json:"users"`
	TotalSpent float64          `json:"total_spent"`
	// ByUnit is the spending per privacy unit; written only when some
	// release is not party-unit (a ledger of per-pick releases keeps its
	// output unchanged).
	ByUnit []ledgerUnitJSON `json:"by_unit,omitempty"`
}

// ledgerUnitJSON is one privacy unit's spending over every user.
type ledgerUnitJSON struct {
	Unit     string  `json:"unit"`
	Spent    float64 `json:"spent"`
	Rho      float64 `json:"rho"`
	Releases int     `json:"releases"`
	// The unit's releases' party-unit costs: the bounded sum and how many
	// are unbounded.
	PartySpent     float64 `json:"party_spent"`
	PartyUnbounded int     `json:"party_unbounded"`
}

// ledgerShowOptions holds the flag values of ledger show.
type ledgerShowOptions struct {
	store  string
	asJSON bool
}

func newLedgerShowCmd() *cobra.Command {
	o := &ledgerShowOptions{}
	cmd := &cobra.Command{
		Use:   "show [--store S] [--json]",
		Short: "Print every user's spending",
		Long: `Prints, for every user with at least one release, the total pure-DP epsilon
spent (basic composition of the user's lists), the total zCDP rho, the number
of releases, and how many of them used a seeded noise generator (those carry
no privacy guarantee; a warning is printed on stderr), then the spending per
privacy unit (party, pair: each release is recorded with its unit; a pair-unit
eps is m x eps for a party with m protected pairs). With --json the output
is exactly {"users": [{"user", "spent", "releases"}], "total_spent"}, plus
"by_unit": [{"unit", "spent", "rho", "releases"}] when some release is
pair-unit (dplp-list models trained with --unit pair); then every user also
gets "party_spent" and "party_unbounded" and every unit its releases'
party-unit costs (the table gets a party_eps column). Users' spent totals and
--user-budget add the costs of all units, a pair-unit bound when some list is
pair-unit; the party-unit total adds every release's party-unit cost (a
pair-unit dplp-list list costs eps x L1_party/L1_pair there, unbounded when
not recorded) and is what --user-budget-party caps (docs/LEDGER.md). The
store is opened read-only: a missing ledger is an error (nothing is created)
and an old schema must be migrated first (dplp ledger init).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.register(cmd)
	return cmd
}

func (o *ledgerShowOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.store, "store", "", storeHelp)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, `print {"users": [{"user", "spent", "releases"}], "total_spent"}`)
}

func (o *ledgerShowOptions) run(cmd *cobra.Command) error {
	s, _, err := openStore(cmd, o.store, storeRead)
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
	var units []ledger.UnitSpend
	if us, ok := s.(ledger.UnitSpender); ok {
		if units, err = us.SpendByUnit(cmdContext(cmd)); err != nil {
			return err
		}
	}
	pair := false
	for _, u := range units {
		pair = pair || u.Unit != privunit.Party
	}
	if o.asJSON {
		if pair {
			out.ByUnit = unitsJSON(units)
			for i, u := range users {
				ps, pu := u.PartySpent, u.PartyUnbounded
				out.Users[i].PartySpent, out.Users[i].PartyUnbounded = &ps, &pu
			}
		}
		return printJSON(cmd.OutOrStdout(), out)
	}
	p := newPrinter(cmd.OutOrStdout(), formatTable)
	if err := printLedgerUsers(p, users, out.TotalSpent, pair); err != nil {
		return err
	}
	for _, u := range units {
		note := ""
		if u.Unit == privunit.Pair {
			note = fmt.Sprintf(" (per protected pair); under the party unit: %s", partyText(u.PartySpent, u.PartyUnbounded))
		}
		p.line("%s unit: spent %.6g eps, rho %.6g, over %d releases%s", u.Unit, u.Spent, u.Rho, u.Releases, note)
	}
	return p.flush()
}

// unitsJSON is the by_unit report.
func unitsJSON(units []ledger.UnitSpend) []ledgerUnitJSON {
	out := make([]ledgerUnitJSON, 0, len(units))
	for _, u := range units {
		out = append(out, ledgerUnitJSON{u.Unit.String(), u.Spent, u.Rho, u.Releases, u.PartySpent, u.PartyUnbounded})
	}
	return out
}

// ledgerShow is the --json report of users' spending and the number of
// releases that used a seeded noise generator.
func ledgerShow(users []ledger.Spend) (out ledgerShowJSON, seeded int) {
	out.Users = []ledgerUserJSON{}
	for _, u := range users {
		out.Users = append(out.Users, ledgerUserJSON{User: u.User, Spent: u.Spent, Releases: u.Releases})
		out.TotalSpent += u.Spent
		seeded += u.Seeded
	}
	return out, seeded
}

// partyText describes a party-unit total: "eps X", or "unbounded (N
// releases without a party-unit cost, X eps besides)".
func partyText(spent float64, unbounded int) string {
	if unbounded > 0 {
		return fmt.Sprintf("unbounded (%d releases without a party-unit cost, %.6g eps besides)", unbounded, spent)
	}
	return fmt.Sprintf("%.6g eps", spent)
}

// printLedgerUsers prints the users table and the total; with party, a
// party_eps column (the party-unit total, "unbounded" when some release's
// party-unit cost is).
func printLedgerUsers(p *printer, users []ledger.Spend, total float64, party bool) error {
	if party {
		p.row("user", "spent_eps", "party_eps", "rho", "releases", "seeded")
	} else {
		p.row("user", "spent_eps", "rho", "releases", "seeded")
	}
	for _, u := range users {
		if party {
			pe := fmt.Sprintf("%.6g", u.PartySpent)
			if u.PartyUnbounded > 0 {
				pe = "unbounded"
			}
			p.row(u.User, fmt.Sprintf("%.6g", u.Spent), pe, fmt.Sprintf("%.6g", u.Rho), strconv.Itoa(u.Releases), strconv.Itoa(u.Seeded))
			continue
		}
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
		Use:   "exposure [--store S] [--top N] [--json]",
		Short: "Print the most exposed protected parties and the distribution of exposure",
		Long: `exposure(w) bounds what a coalition of users can learn about protected party
w: the sum of the costs of every release whose list w's protected pairs could
change (privacy-model §6). Releases whose influencers are unknown or all
parties ("*", for example imported ones) count for everyone: their sum is
printed as "every other party". Prints the --top most exposed parties (0 =
all) and a summary over all named parties (count, mean, p50, p90, max of eps).
Exposure is reported, never enforced. With --json: {"parties": [{"party",
"eps", "rho"}], "unlisted": {"party": "*", "eps", "rho"}, "summary": {"count",
"mean", "p50", "p90", "max"}}. The store is opened read-only: releases not
yet added to the exposure table are added in memory, nothing is written.`,
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
	s, _, err := openStore(cmd, o.store, storeRead)
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
