package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/jsonenc"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// recOptions are the flags of recommend.
type recOptions struct {
	modelPath, graph, format, store string
	sampler, budgetApprox           string
	cpuProfile                      string
	k                               int
	seed                            uint64
	fresh, exposure, create         bool
	budget, partyBudget             float64
	qf                              queryFlags
	pf                              protFlags
	predf                           predFlags
}

func newRecommendCmd() *cobra.Command {
	var o recOptions
	cmd := &cobra.Command{
		Use:   "recommend --model MODEL --graph FILE --protected FILE (--user LABEL ... | --all) --k K [--store S]",
		Short: "Release private top-K recommendations with a trained DPLP model",
		Long: `For each user, scores every candidate (non-neighbour) on the graph, applies the
model's compiled monotone transform, and releases a top-K list with the
exponential mechanism (Gumbel top-K) at noise scale 2 Delta_f(u) / eps_p, where
Delta_f(u) is computed exactly from the model's table and the user's invariant
Delta_s(u) and S_max(u). A list costs eps_p per random pick (K x eps_p; 0 when
no protected pair can reach the user's scores; fewer picks when the user has
fewer than K candidates).

Every fresh list is charged to the ledger store (--store, default
$XDG_STATE_HOME/dplp/ledger.db, else ~/.local/state/dplp/ledger.db: the same
ledger from any working directory) in one transaction before it is printed.
The store must hold a ledger already (dplp ledger init) unless --create is
given; waits for another process's lock are announced on stderr. Asking again
for a user who already received a list from this model at this K re-serves it
at no cost (--fresh samples and charges anew). --user-budget caps each user's
total eps: a list that would exceed it is refused and not released. Each
list's eps is in its own privacy unit, so with pair-unit dplp-list models
--user-budget is a pair-unit cap; --user-budget-party caps each user's total
under the party unit (every list's party-unit cost: its eps for per-pick and
party-unit lists, eps x L1_party(u)/L1_pair(u) for a pair-unit list).

Lists are printed in user order as they are ready (streaming, bounded memory):
the order given with --user, label order (bytewise) with --all. Label order is
the ledger's key order, so a large batch's charges append to its indexes
instead of scattering over them.
Noise is crypto-seeded unless --seed is given: then every user's generator is
derived from (seed, user label), so output is identical at any core count, and
the output and the ledger say the lists are seeded and NOT for deployment
(the "seeded" field of each JSONL line, the seeded column of CSV, a tag on each
table line; such a list has NO privacy guarantee). Seeded and private lists
never mix: a run without --seed re-serves only lists released without a seed
(a seeded list in the store is ignored and a private one is released and
charged), and a --seed run re-serves only seeded lists.

A dplp-list model (dplp train --variant dplp-list) releases each list with the
list-level mechanism instead: the private evidence of every candidate is
released once with Laplace noise calibrated to its l1 bound under the model's
privacy unit, and the list is ranked by the fitted combination of the public
score and the noisy evidence. A fresh list costs the model's eps whatever K (0
when it reads no evidence), recorded in the ledger with its unit. The header
states the unit; JSONL lines carry "unit" and "eps_list" (eps_p is 0) and CSV
rows a unit column. Lines without a unit are per-pick models' (party unit: their
calibration bounds a whole party, which implies the pair-unit guarantee).

Marks must come from --protected FILE (or a snapshot that carries them):
marks drawn from the private graph itself (--sigma) are a simulation and are
refused here; use them with demo, experiment or attack.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.register(cmd)
	return cmd
}

func (o *recOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.modelPath, "model", "", "model file written by dplp train (required)")
	f.StringVar(&o.graph, "graph", "", "edge list or snapshot (the current, private graph; required)")
	f.IntVar(&o.k, "k", 30, "recommendations per user (>= 1)")
	f.StringVar(&o.format, "format", "table", "output: table, csv or jsonl")
	f.Uint64Var(&o.seed, "seed", 0, "seed the noise (reproducible, NOT for deployment); default crypto-seeded")
	f.StringVar(&o.store, "store", "", storeHelp)
	f.BoolVar(&o.create, "create", false, createHelp)
	f.Float64Var(&o.budget, "user-budget", math.Inf(1), "cap on each user's total pure eps (default: no cap)")
	f.Float64Var(&o.partyBudget, "user-budget-party", math.Inf(1), "cap on each user's total eps under the party unit: every list's party-unit cost (a pair-unit dplp-list list costs eps x L1_party/L1_pair there; default: no cap)")
	f.StringVar(&o.budgetApprox, "user-budget-approx", "", "cap each user at (EPS,DELTA)-DP under zCDP composition, e.g. 3,1e-6: converted to the largest zCDP rho that guarantees it (the ledger records each list's rho)")
	f.StringVar(&o.sampler, "sampler", "auto", "auto (exact when crypto-seeded, float with --seed), exact (base-2 mechanism with integer arithmetic: no floating-point probabilities; dplp-pub group by group) or float (Gumbel keys; the Beam pipeline reproduces seeded float runs)")
	f.BoolVar(&o.fresh, "fresh", false, "sample anew even if a list was released before (charged again)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole command (loading, fitting, sampling, charging; go tool pprof) to this file")
	f.BoolVar(&o.exposure, "track-exposure", true, "maintain per-party exposure (the coalition bound) in the ledger; --track-exposure=false skips it for large batches (per-user spending is always charged)")
	o.qf.register(cmd, "user")
	o.pf.register(cmd, "protect-seed")
	o.predf.register(cmd)
}

func (o *recOptions) validate(cmd *cobra.Command) error {
	if o.k < 1 {
		return fmt.Errorf("--k must be >= 1, got %d", o.k)
	}
	if o.format != formatTable && o.format != formatCSV && o.format != formatJSONL {
		return fmt.Errorf("--format must be table, csv or jsonl, got %q", o.format)
	}
	if o.modelPath == "" {
		return fmt.Errorf("--model MODEL is required")
	}
	if !(o.budget >= 0) {
		return fmt.Errorf("--user-budget must be a number >= 0, got %v", o.budget)
	}
	if err := checkPartyBudget(o.partyBudget); err != nil {
		return err
	}
	if o.sampler != "auto" && o.sampler != "float" && o.sampler != "exact" {
		return fmt.Errorf("--sampler must be auto, float or exact, got %q", o.sampler)
	}
	if cmd.Flags().Changed("sigma") {
		return fmt.Errorf("--sigma draws marks from the private graph itself: a simulation without a guarantee, refused for releases; give --protected FILE (or use demo, experiment or attack to simulate)")
	}
	return nil
}

// recLine is one JSONL output line (the Beam pipeline writes the same).
type recLine struct {
	User            string   `json:"user"`
	Recommendations []string `json:"recommendations"`
	K               int      `json:"k"`
	EpsP            float64  `json:"eps_p"`
	Cost            float64  `json:"cost"`
	Seeded          bool     `json:"seeded"`
	// Unit and EpsList are written for dplp-list models only (the list's
	// privacy unit and its charge per fresh list): a line without them is
	// a per-pick model's, whose unit is party; per-pick lines are therefore
	// byte-identical to those written before units existed.
	Unit    string  `json:"unit,omitempty"`
	EpsList float64 `json:"eps_list,omitempty"`
}

func (o *recOptions) run(cmd *cobra.Command) error {
	if err := o.validate(cmd); err != nil {
		return err
	}
	stop, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	m, err := model.Load(o.modelPath)
	if err != nil {
		return err
	}
	if m.ListLevel() {
		if err := checkEps("model eps (per list)", m.List.Eps, 1); err != nil {
			return fmt.Errorf("%s: %w", o.modelPath, err)
		}
	} else if err := checkEps("model eps_p", m.EpsP, o.k); err != nil {
		return fmt.Errorf("%s: %w", o.modelPath, err)
	}
	g, prot, err := loadGraphMarks(cmd, o.graph, &o.pf, false)
	if err != nil {
		return err
	}
	noteOtherData(cmd, o.modelPath, m, g, prot)
	users, err := o.qf.resolve(g, "user", true)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	st, storeName, err := openStore(cmd, o.store, writeMode(o.create))
	if err != nil {
		return err
	}
	defer st.Close()
	// A batch over most of the graph has the ledger record every influence
	// block first: started now, that runs while the scorer is fitted. It is
	// stopped and waited for before the store closes.
	var prepd *release.Preparation
	if k, err := score.ParseKind(m.Score); err == nil && o.exposure {
		pctx, cancel := context.WithCancel(ctx)
		prepd = release.StartPreparation(pctx, st, g, prot, k, len(users))
		defer func() {
			cancel()
			if prepd != nil {
				prepd.Wait()
			}
		}()
	}
	rec, scName, err := o.recommender(cmd, st, m, g, prot, prepd)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("private top-%d by DPLP (%s on %s, exponential mechanism): eps_p %g per random pick, at most K x eps_p = %g per fresh list, party unit; ledger %s; crypto-seeded generator",
		o.k, m.Variant, scName, m.EpsP, float64(o.k)*m.EpsP, storeName)
	if rec.Seeded() {
		// No guarantee text for seeded lists: they are not private.
		header = fmt.Sprintf("SEEDED top-%d by DPLP (%s on %s, exponential mechanism), NO privacy guarantee: charged eps_p %g per random pick, at most K x eps_p = %g per fresh list, party unit; ledger %s; seeded generator (seed %d, per-user streams): reproducible, NOT for deployment",
			o.k, m.Variant, scName, m.EpsP, float64(o.k)*m.EpsP, storeName, o.seed)
	}
	var w *recWriter
	if !m.ListLevel() {
		w = newRecWriter(cmd, o.format, header, m.EpsP)
	} else {
		u := m.PrivacyUnit()
		header = fmt.Sprintf("private top-%d by dplp-list (%s, evidence %s, Laplace mechanism on the private evidence vector, one release per list): eps %g per fresh list whatever K (0 when a list reads no evidence), %s unit (%s); ledger %s; crypto-seeded generator",
			o.k, scName, m.List.Evidence, m.List.Eps, u, u.Guarantee(), storeName)
		if rec.Seeded() {
			header = fmt.Sprintf("SEEDED top-%d by dplp-list (%s, evidence %s, Laplace mechanism on the private evidence vector), NO privacy guarantee: charged eps %g per fresh list whatever K, %s unit; ledger %s; seeded generator (seed %d, per-user streams): reproducible, NOT for deployment",
				o.k, scName, m.List.Evidence, m.List.Eps, u, storeName, o.seed)
		}
		w = newListRecWriter(cmd, o.format, header, u.String(), m.List.Eps)
	}
	return o.stream(ctx, cmd, rec, users, w)
}

// recommender builds the release path for m on g: the ledger store and its
// caps, the noise seed, the sampler and the model's scorer fitted on g. It
// also returns the scorer's name.
func (o *recOptions) recommender(cmd *cobra.Command, st ledger.Store, m *model.Model, g *graph.Graph, prot *protect.Set, prepd *release.Preparation) (*release.Recommender, string, error) {
	rhoCap, err := parseApproxCap(o.budgetApprox)
	if err != nil {
		return nil, "", err
	}
	opts := []release.Option{release.WithStore(st), release.WithFresh(o.fresh), release.WithCap(ledger.Cap{Eps: o.budget, Rho: rhoCap, PartyEps: o.partyBudget}), release.WithExposure(o.exposure)}
	if cmd.Flags().Changed("seed") {
		opts = append(opts, release.WithSeed(o.seed))
	}
	opts = append(opts, release.WithSampler(o.sampler))
	if err := o.predf.fromModel(cmd, m); err != nil {
		return nil, "", fmt.Errorf("%s: %w", o.modelPath, err)
	}
	sc, err := o.predf.fit(cmdContext(cmd), m.Score, g, prot)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", o.modelPath, err)
	}
	opts = append(opts, release.WithScorer(sc))
	if prepd != nil {
		opts = append(opts, release.WithPreparation(prepd))
	}
	rec, err := release.New(m, g, prot, opts...)
	if err != nil {
		return nil, "", err
	}
	return rec, sc.Name(), nil
}

// stream releases the users' lists in order, printing each through w, and
// reports the charges; exit status 3 when the cap refused a list.
func (o *recOptions) stream(ctx context.Context, cmd *cobra.Command, rec *release.Recommender, users []int32, w *recWriter) error {
	bar := progress.New(int64(len(users)), "recommending")
	var spent float64
	var fresh, refused int
	err := rec.Stream(ctx, users, o.k, func(_ int, r release.Result) error {
		bar.Add(1)
		if r.Err != nil {
			refused++
			fmt.Fprintf(cmd.ErrOrStderr(), "refused: %v\n", r.Err)
			return nil
		}
		if r.Fresh {
			fresh++
			spent += r.Cost
		}
		if r.Notice != "" && r.Fresh {
			fmt.Fprintf(cmd.ErrOrStderr(), "notice: user %s: %s\n", r.User, r.Notice)
		}
		return w.write(r)
	})
	bar.Finish()
	if err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	note := ""
	if rec.Seeded() {
		note = " (all seeded: NO privacy guarantee, not for deployment)"
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%d fresh lists charged (%g eps in all), %d re-served at no cost, %d refused by the cap%s\n", fresh, spent, len(users)-fresh-refused, refused, note)
	if refused > 0 {
		return exitCode(3)
	}
	return nil
}

// recWriter prints results as they stream in.
type recWriter struct {
	p       *printer
	eps     float64
	unit    string  // dplp-list models: their unit (written on every line); "" for per-pick
	epsList float64 // dplp-list models: eps per list
	buf     []byte  // JSON line scratch
}

// newListRecWriter is newRecWriter for a dplp-list model: JSONL lines carry
// "unit" and "eps_list" (eps_p is 0: no per-pick epsilon), CSV rows a unit
// column.
func newListRecWriter(cmd *cobra.Command, format, header, unit string, epsList float64) *recWriter {
	w := &recWriter{p: newPrinter(cmd.OutOrStdout(), format), unit: unit, epsList: epsList}
	switch format {
	case formatTable:
		w.p.line("%s", header)
	case formatCSV:
		fmt.Fprintln(cmd.ErrOrStderr(), header)
		w.p.row("user", "rank", "candidate", "eps_p", "k", "cost", "seeded", "unit")
	case formatJSONL:
		fmt.Fprintln(cmd.ErrOrStderr(), header)
	}
	return w
}

func newRecWriter(cmd *cobra.Command, format, header string, eps float64) *recWriter {
	w := &recWriter{p: newPrinter(cmd.OutOrStdout(), format), eps: eps}
	switch format {
	case formatTable:
		w.p.line("%s", header)
	case formatCSV:
		fmt.Fprintln(cmd.ErrOrStderr(), header)
		w.p.row("user", "rank", "candidate", "eps_p", "k", "cost", "seeded")
	case formatJSONL:
		fmt.Fprintln(cmd.ErrOrStderr(), header)
	}
	return w
}

func (w *recWriter) write(r release.Result) error {
	switch w.p.format {
	case formatTable:
		tag := ""
		if !r.Fresh {
			tag = " (re-served, no cost)"
		}
		if r.Seeded {
			tag += " [seeded, not for deployment]"
		}
		return w.p.line("%s%s: %s", r.User, tag, strings.Join(r.List, " "))
	case formatCSV:
		for i, v := range r.List {
			var err error
			if w.unit != "" {
				err = w.p.row(r.User, strconv.Itoa(i+1), v, strconv.FormatFloat(w.eps, 'g', -1, 64), strconv.Itoa(r.K), strconv.FormatFloat(r.Cost, 'g', -1, 64), strconv.FormatBool(r.Seeded), w.unit)
			} else {
				err = w.p.row(r.User, strconv.Itoa(i+1), v, strconv.FormatFloat(w.eps, 'g', -1, 64), strconv.Itoa(r.K), strconv.FormatFloat(r.Cost, 'g', -1, 64), strconv.FormatBool(r.Seeded))
			}
			if err != nil {
				return err
			}
		}
		return nil
	case formatJSONL:
		line := recLine{User: r.User, Recommendations: nonNil(r.List), K: r.K, EpsP: w.eps, Cost: r.Cost, Seeded: r.Seeded, Unit: w.unit, EpsList: w.epsList}
		w.buf = line.appendJSON(w.buf[:0])
		return w.p.jsonLine(w.buf)
	}
	return nil
}

// appendJSON appends l as encoding/json would marshal it (fields in
// declaration order), without reflection: a million-line batch spent as
// long in encoding/json as in the rest of printing. TestRecLineJSON checks
// the bytes against encoding/json.
func (l recLine) appendJSON(b []byte) []byte {
	b = append(b, `{"user":`...)
	b = jsonenc.AppendString(b, l.User)
	b = append(b, `,"recommendations":`...)
	b = jsonenc.AppendStrings(b, l.Recommendations)
	b = append(b, `,"k":`...)
	b = strconv.AppendInt(b, int64(l.K), 10)
	b = append(b, `,"eps_p":`...)
	b = jsonenc.AppendFloat(b, l.EpsP)
	b = append(b, `,"cost":`...)
	b = jsonenc.AppendFloat(b, l.Cost)
	b = append(b, `,"seeded":`...)
	b = strconv.AppendBool(b, l.Seeded)
	if l.Unit != "" {
		b = append(b, `,"unit":`...)
		b = jsonenc.AppendString(b, l.Unit)
	}
	if l.EpsList != 0 {
		b = append(b, `,"eps_list":`...)
		b = jsonenc.AppendFloat(b, l.EpsList)
	}
	return append(b, '}')
}

func (w *recWriter) flush() error { return w.p.flush() }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parseApproxCap turns "EPS,DELTA" into the largest zCDP rho whose tight
// conversion gives (EPS, DELTA)-DP (accountant.MaxRho); "" means no cap.
func parseApproxCap(spec string) (float64, error) {
	if spec == "" {
		return math.Inf(1), nil
	}
	parts := strings.Split(spec, ",")
	if len(parts) != 2 {
		return 0, fmt.Errorf("--user-budget-approx must be EPS,DELTA (e.g. 3,1e-6), got %q", spec)
	}
	eps, err1 := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	delta, err2 := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
	if err1 != nil || err2 != nil || !(eps > 0) || math.IsInf(eps, 0) || !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("--user-budget-approx: want EPS > 0 finite and 0 < DELTA < 1, got %q", spec)
	}
	return accountant.MaxRho(eps, delta)
}

// noteOtherData says on stderr when the model was trained on other data than
// it is released on (its recorded fingerprint of labels, public graph and
// marks differs): allowed (marks change), but worth knowing.
func noteOtherData(cmd *cobra.Command, path string, m *model.Model, g *graph.Graph, prot *protect.Set) {
	if m.Meta.Data == "" {
		return
	}
	if fp := protect.Fingerprint(g, prot); fp != m.Meta.Data {
		fmt.Fprintln(cmd.ErrOrStderr(), model.OtherDataNote(path))
	}
}

// checkPartyBudget validates --user-budget-party: > 0, inf for no cap (0
// is refused: the service reads it as "no cap"; --user-budget 0 refuses
// every charged list).
func checkPartyBudget(v float64) error {
	if !(v > 0) {
		return fmt.Errorf("--user-budget-party must be > 0 (inf for no cap; --user-budget 0 refuses every charged list), got %v", v)
	}
	return nil
}
