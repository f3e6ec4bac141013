// Package release is dplp's one path from a trained model to released
// recommendation lists: every deployment entry point (the recommend command,
// the service, the batch benchmark, the demo) goes through a Recommender.
//
// Guarantee. Each list is sampled with the exponential mechanism (Gumbel
// top-K) on the model's utility at noise scale 2 Delta_f(u) / eps_p, where
// Delta_f(u) is computed exactly from the model's table and the user's
// invariant Delta_s(u) and S_max(u) (docs/privacy-model.md §3-§5). A list
// of K random picks is (K x eps_p)-protected-pair DP for its user; a list
// whose utilities no protected pair can change (Delta = 0) is the exact
// top-K and costs 0. The cost is computed from invariant data only.
//
// Contract. A crypto-seeded Recommender must have a ledger store (New
// refuses it otherwise, unless WithoutLedger says nothing will be
// released), and no list leaves Recommend (or Stream) unless its charge is
// durably committed: a fresh list is sampled, charged in one transaction
// that checks the user's cap, and only then returned. A list already
// released to a user by the same model at the same K is re-served at no
// cost (post-processing) unless the call asks for a fresh one. A refused
// charge returns a *ledger.BudgetError for that user (errors.Is
// ledger.ErrBudgetExhausted) and releases nothing to that user. The store
// is any Store: the two ledger calls of this path (every ledger.Store is
// one).
//
// Intents are per call. Recommend and Stream take CallOptions: Fresh (a
// new list, charged, even if one was released before) and IdempotencyKey
// (a retried call returns the list first charged under the key, charged
// once). So one Recommender, built once per graph, marks and model, serves
// sticky, fresh and idempotent requests side by side and shares its
// scoring workers between them; WithFresh and WithIdempotencyKey set the
// defaults a call's options replace. What depends on the graph alone, the
// label order of recorded influence sets (LabelOrder), is built once, on
// first use, and may be shared by every Recommender on the graph.
//
// Randomness. Without WithSeed every list's noise comes from a ChaCha8
// generator keyed by crypto/rand. WithSeed derives each user's generator
// from (seed, user label) with a keyed PRF (UserRNG), so a seeded run is
// byte-identical at any GOMAXPROCS and any partitioning of users; seeded
// lists are marked Seeded in results and in the store and carry no
// guarantee: their Guarantee says so and states no epsilon.
//
// Provenance. Seeded and private lists never mix: a Recommender re-serves
// only lists of its own provenance (ledger.Provenance: Crypto without
// WithSeed, Seeded with it), both through its re-serve lookups and through
// idempotency keys (the automatic sticky key included), which the ledger
// keeps per provenance. A crypto-seeded Recommender therefore never returns
// a list that was released by a seeded run, even when the store holds one
// for the same user, model and K: it samples and charges a private one.
package release

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/internal/par"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// Guarantee is what one released list promises its user. For a seeded list
// it promises nothing: Text says "NO privacy guarantee" and Eps and Rho are
// 0 (a seeded list is a deterministic function of the graph once the seed is
// known; no epsilon describes it).
type Guarantee struct {
	Mechanism string  `json:"mechanism"`
	EpsP      float64 `json:"eps_p"`
	Picks     int     `json:"picks"` // random picks: what the list costs
	Eps       float64 `json:"eps"`   // pure protected-pair DP of the list: Picks x eps_p
	Rho       float64 `json:"rho"`   // zCDP of the list: Picks x eps_p^2 / 8 (bounded range)
	Text      string  `json:"text"`
	// Unit is the privacy unit of the guarantee: "party" for per-pick
	// mechanisms, the model's unit for dplp-list.
	Unit string `json:"unit,omitempty"`
	// EpsList is a dplp-list model's charge per fresh list (its eps,
	// whatever K); 0 for per-pick mechanisms.
	EpsList float64 `json:"eps_list,omitempty"`
}

// Result is one user's outcome.
type Result struct {
	User      string    `json:"user"`
	List      []string  `json:"recommendations"`
	K         int       `json:"k"`
	Fresh     bool      `json:"fresh"` // sampled and charged by this call (false: re-served, free)
	Cost      float64   `json:"cost"`  // eps charged by this call
	Guarantee Guarantee `json:"guarantee"`
	Seeded    bool      `json:"seeded"` // seeded noise: reproducible, NO guarantee, NOT for deployment
	ReleaseID int64     `json:"release_id,omitempty"`
	Notice    string    `json:"notice,omitempty"` // e.g. fewer candidates than K
	// Candidates is the number of candidates a fresh list was sampled from
	// (0 for a re-served list).
	Candidates int `json:"candidates,omitempty"`
	// Delta is the utility sensitivity the noise of a fresh list was
	// calibrated to (Delta_f(u) for a model; 0 for a re-served list).
	Delta float64 `json:"delta,omitempty"`
	Err   error   `json:"-"` // per-user refusal (budget), nil otherwise
}

// Option configures a Recommender.
type Option func(*Recommender) error

// WithStore records every fresh list in s before it is returned and
// re-serves recorded lists. Any ledger.Store will do; s needs only the two
// calls of Store.
func WithStore(s Store) Option {
	return func(r *Recommender) error { r.store = s; return nil }
}

// WithCap refuses fresh lists that would take a user past cap: c.Eps and
// c.Rho cap the sums of the releases' own-unit costs, c.PartyEps the
// party-unit total (every release's PartyCost; +Inf for no party cap). A
// pair-unit dplp-list list's party cost is eps x L1_party(u)/L1_pair(u),
// so a finite PartyEps caps pair-unit lists under the party unit too.
func WithCap(c ledger.Cap) Option {
	return func(r *Recommender) error {
		if !(c.Eps >= 0) || !(c.Rho >= 0) || !(c.PartyEps >= 0) {
			return fmt.Errorf("release: invalid budget cap %+v", c)
		}
		r.cap = c
		return nil
	}
}

// WithSeed makes the noise reproducible (per-user PRF). NOT for deployment.
func WithSeed(seed uint64) Option {
	return func(r *Recommender) error { r.seed = &seed; return nil }
}

// WithFresh makes fresh lists the default of every call: a new list is
// sampled (and charged) even when one was released before. A Recommender
// without it serves sticky and fresh calls alike: pass Fresh to the calls
// that want a new list.
func WithFresh(fresh bool) Option {
	return func(r *Recommender) error { r.fresh = fresh; return nil }
}

// WithScorer supplies the base scorer (required for predictors that need
// fitting, such as embeddings; triad scores are built from the graph).
func WithScorer(sc *score.Scorer) Option {
	return func(r *Recommender) error { r.sc = sc; return nil }
}

// WithoutLedger lets a crypto-seeded Recommender run without a store: its
// lists are NOT charged anywhere, so they must not leave the caller (audits
// and simulations that only inspect utilities or sample internally).
// Without it, New refuses a crypto-seeded Recommender that has no store:
// no deployment list may leave the system unless its charge is durably
// recorded. Seeded Recommenders (experiments, no guarantee) need neither.
func WithoutLedger() Option {
	return func(r *Recommender) error { r.uncharged = true; return nil }
}

// WithExposure turns per-party exposure tracking on (the default) or off.
// Off, the ledger still records and caps every user's spending (the
// guarantee), but the releases carry no influence sets, so exposure(w)
// (docs/privacy-model.md §13) is not maintained for them. On a graph with
// hubs a user's influence set has hundreds of parties, computed and stored
// with every release (the ledger folds them into exposure(w) when exposure
// is next read), which a batch over millions of users may not want.
func WithExposure(on bool) Option {
	return func(r *Recommender) error { r.noExposure = !on; return nil }
}

// Sampler choices (WithSampler).
const (
	// SamplerAuto (the default): the exact sampler for crypto-seeded
	// releases (deployment; plain or lexicographic exponential mechanism),
	// the float Gumbel sampler for seeded runs (experiments; the Beam
	// pipeline reproduces them line for line).
	SamplerAuto = "auto"
	// SamplerExact is the exact base-2 exponential mechanism (mech/exact;
	// calib.Config.ExactSampler): integer arithmetic, no floating-point
	// probabilities; each pick is EpsPerPick <= eps_p -DP including the grid
	// rounding, and the list is charged eps_p per pick (an upper bound).
	SamplerExact = "exact"
	// SamplerFloat is Gumbel top-K with floating-point keys.
	SamplerFloat = "float"
)

// WithSampler selects the sampler: SamplerAuto, SamplerExact or
// SamplerFloat.
func WithSampler(name string) Option {
	return func(r *Recommender) error {
		switch name {
		case SamplerAuto, SamplerExact, SamplerFloat:
			r.sampler = name
			return nil
		}
		return fmt.Errorf("release: unknown sampler %q (want auto, exact or float)", name)
	}
}

// WithLabelOrder shares o, the label order of the Recommender's graph,
// instead of building one for this Recommender (see LabelOrder). New refuses
// an order of another graph.
func WithLabelOrder(o *LabelOrder) Option {
	return func(r *Recommender) error {
		if o == nil {
			return errors.New("release: nil label order")
		}
		r.order = o
		return nil
	}
}

// WithExactSampler is WithSampler(SamplerExact).
func WithExactSampler() Option { return WithSampler(SamplerExact) }

// WithIdempotencyKey charges every call's fresh lists under key (see
// IdempotencyKey, its per-call form, which a call may use to replace it): a
// second call with the same key for the same user returns the first list,
// charged once. Meaningful for a single user per call.
func WithIdempotencyKey(key string) Option {
	return func(r *Recommender) error { r.idem = key; return nil }
}

// Recommender releases private lists for one model on one graph snapshot.
// Safe for concurrent use: one Recommender serves any mix of concurrent
// sticky, fresh and idempotent calls (CallOption), sharing its scoring
// workers and the graph's label order.
type Recommender struct {
	modelID string
	g       *graph.Graph
	p       *protect.Set
	sc      *score.Scorer
	cfg     calib.Config
	store   Store
	cap     ledger.Cap
	seed    *uint64
	fresh   bool   // default of every call (WithFresh)
	idem    string // default of every call (WithIdempotencyKey)
	order   *LabelOrder
	// noExposure: do not attach influence sets to releases (WithExposure).
	noExposure bool
	sampler    string // SamplerAuto ("" too), SamplerExact or SamplerFloat
	uncharged  bool   // WithoutLedger
	infl       influence
	pool       sync.Pool // *workerState
	list       *listRel  // dplp-list models (listrel.go); nil for per-pick mechanisms
}

type workerState struct {
	w      *score.Worker
	r      score.Result
	s      Sampler
	in     UserInput
	crypto *rand.Rand
	list   listWorker // dplp-list buffers
}

// New builds a Recommender for model m on graph g with marks p.
func New(m *model.Model, g *graph.Graph, p *protect.Set, opts ...Option) (*Recommender, error) {
	if m == nil {
		return nil, errors.New("release: model is required")
	}
	id, err := m.ID()
	if err != nil {
		return nil, err
	}
	if m.ListLevel() {
		return newListRecommender(m, id, g, p, opts...)
	}
	cfg := calib.Config{Method: calib.Exponential, Eps: m.EpsP, Transform: m}
	return newRecommender(cfg, id, m.Score, g, p, opts...)
}

// NewMechanism builds a Recommender for a mechanism on raw base scores (no
// trained model): cfg.Kind names the triad score unless WithScorer is given;
// id is the key its lists are recorded under (for example
// "exponential:aa:eps=0.1"). Benchmarks and experiments use it; deployment
// uses New with a trained model.
func NewMechanism(cfg calib.Config, id string, g *graph.Graph, p *protect.Set, opts ...Option) (*Recommender, error) {
	if id == "" {
		return nil, errors.New("release: a mechanism needs an id")
	}
	return newRecommender(cfg, id, cfg.Kind.String(), g, p, opts...)
}

func newRecommender(cfg calib.Config, id, scoreName string, g *graph.Graph, p *protect.Set, opts ...Option) (*Recommender, error) {
	if g == nil || p == nil {
		return nil, errors.New("release: graph and marks are required")
	}
	if p.N() != g.N() {
		return nil, fmt.Errorf("release: marks over %d nodes for a graph of %d", p.N(), g.N())
	}
	r := &Recommender{modelID: id, g: g, p: p, cap: ledger.Unlimited}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	if r.store == nil && r.seed == nil && !r.uncharged {
		return nil, errors.New("release: a crypto-seeded (deployment) Recommender needs a ledger store (WithStore): no list may leave unless its charge is durably recorded; use WithSeed for experiments or WithoutLedger for audits that release nothing")
	}
	if r.sc == nil {
		k, err := score.ParseKind(scoreName)
		if err != nil {
			return nil, fmt.Errorf("release: score %q needs a fitted scorer (WithScorer): %w", scoreName, err)
		}
		if r.sc, err = score.New(g, p, k); err != nil {
			return nil, err
		}
	} else if r.sc.Graph() != g {
		return nil, errors.New("release: the scorer was built on another graph")
	}
	cfg.Kind = r.sc.Kind()
	switch r.sampler {
	case SamplerExact:
		cfg.ExactSampler = true
	case SamplerFloat:
	default:
		cfg.ExactSampler = r.seed == nil && cfg.Method == calib.Exponential && cfg.Calibration == calib.Rigorous
	}
	r.cfg = cfg
	if err := r.cfg.Validate(); err != nil {
		return nil, err
	}
	if r.order == nil {
		r.order = NewLabelOrder(g)
	} else if r.order.g != g {
		return nil, errors.New("release: the label order was built for another graph")
	}
	r.infl = newInfluence(g, p, r.sc.Kind(), r.order)
	return r, nil
}

func (r *Recommender) picksOf(cost float64) int {
	if !(r.cfg.Eps > 0) {
		return 0
	}
	return int(math.Round(cost / r.cfg.Eps))
}

// ModelID is the key lists are recorded under.
func (r *Recommender) ModelID() string { return r.modelID }

// Seeded reports whether the noise is seeded (not for deployment).
func (r *Recommender) Seeded() bool { return r.seed != nil }

// Provenance is the provenance of the lists r releases and the only one it
// re-serves: ledger.Seeded with WithSeed, ledger.Crypto otherwise.
func (r *Recommender) Provenance() ledger.Provenance { return ledger.ProvenanceOf(r.seed != nil) }

// SeededText is the Guarantee.Text of every seeded list.
const SeededText = "seeded noise (reproducible): NO privacy guarantee, not for deployment"

// EpsP is the per-pick epsilon (0 for a dplp-list model: see EpsList).
func (r *Recommender) EpsP() float64 { return r.cfg.Eps }

// Graph is the graph lists are released on.
func (r *Recommender) Graph() *graph.Graph { return r.g }

func (r *Recommender) state() *workerState {
	if ws, ok := r.pool.Get().(*workerState); ok {
		return ws
	}
	ws := &workerState{w: r.sc.NewWorker()}
	if r.seed == nil {
		ws.crypto = randx.Crypto()
	}
	return ws
}

// guarantee describes a list of picks random picks whose noise was seeded
// or not. A seeded list gets no guarantee: SeededText, and no epsilon or rho
// (the picks are still reported: what the list was charged for).
func (r *Recommender) guarantee(picks int, seeded bool) Guarantee {
	e := r.cfg.Eps
	eps, proven := r.cfg.Guarantee(picks)
	g := Guarantee{Mechanism: r.cfg.Method.String() + " mechanism", EpsP: e, Picks: picks, Eps: eps}
	if r.cfg.Method == calib.Exponential {
		g.Mechanism = "exponential mechanism (Gumbel top-K)"
		if r.cfg.ExactSampler {
			g.Mechanism = "exponential mechanism (exact base-2 sampler)"
		}
		if r.cfg.Transform != nil {
			g.Mechanism += " on the DPLP utility"
		}
		if r.cfg.Lex() {
			g.Mechanism = "lexicographic DPLP-pub (exact public-score order; exponential mechanism on f(s) within ties)"
		}
		g.Rho = accountant.PerPick(e, picks).Rho // the one privacy map
	}
	switch {
	case seeded:
		g.Eps, g.Rho = 0, 0
		g.Text = SeededText
	case picks == 0 && r.cfg.Method != calib.NonPrivate:
		g.Eps = 0
		g.Text = "0-protected-pair DP: no protected pair can change this user's utilities (exact top-K)"
	case !proven:
		g.Text = fmt.Sprintf("no proven protected-pair DP bound for a list of %d under %s", picks, r.cfg.Method)
	default:
		g.Text = fmt.Sprintf("%g-protected-pair DP for this user (%d picks x eps_p %g, basic composition); rho %g zCDP", eps, picks, e, g.Rho)
	}
	g.Unit = "party"
	return g
}

// guaranteeFor is the guarantee of a list charged cost (picks random picks
// for a per-pick mechanism).
func (r *Recommender) guaranteeFor(cost float64, picks int, seeded bool) Guarantee {
	if r.list != nil {
		return r.listGuarantee(cost, seeded)
	}
	return r.guarantee(picks, seeded)
}

// sample draws one user's list (no accounting).
func (r *Recommender) sample(ws *workerState, u int32, k int, stream uint64) (Outcome, error) {
	if r.list != nil {
		return r.sampleList(ws, u, k, stream)
	}
	ws.w.Score(u, &ws.r)
	res := &ws.r
	ws.in = InputOf(ws.w, res, r.g.N(), r.seed != nil)
	plan := r.cfg.Plan(calib.QueryOf(res))
	if err := checkPlan(&plan); err != nil {
		return Outcome{}, fmt.Errorf("release: user %s: %w", r.g.Label(u), err)
	}
	rng := rngFor(r.seed, r.g.Label(u), stream, ws.crypto)
	return ws.s.Sample(&plan, &ws.in, k, rng)
}

func checkPlan(p *calib.Plan) error {
	if math.IsNaN(p.Scale) || math.IsInf(p.Scale, 0) || p.Scale < 0 {
		return fmt.Errorf("noise scale %v is not a finite number >= 0", p.Scale)
	}
	return nil
}

// ledgerRelease turns an outcome into the record to charge.
func (r *Recommender) ledgerRelease(u int32, k int, out Outcome, idem string) ledger.Release {
	list := make([]string, len(out.IDs))
	for i, v := range out.IDs {
		list[i] = r.g.Label(v)
	}
	if r.list != nil {
		// One charge per list, whatever K (accountant.PureList), in the
		// model's unit; seeded lists are charged as crypto ones.
		ch := accountant.PureList(out.ListEps)
		rel := ledger.Release{User: r.g.Label(u), Model: r.modelID, K: k, EpsP: r.list.spec.Eps, List: list,
			Cost: ch.Eps, Rho: ch.Rho, Seeded: r.seed != nil, IdemKey: idem, Unit: r.list.unit, PartyCost: ch.Eps}
		if r.store != nil {
			// The party-unit cost is recorded and capped by the ledger; a
			// release nobody charges (a benchmark) does not compute it.
			rel.PartyCost = r.list.partyCost(u, ch.Eps, out.Delta)
		} else if r.list.unit == privunit.Pair && ch.Eps > 0 {
			rel.PartyCost = ledger.Unbounded
		}
		if ch.Eps > 0 && r.store != nil && !r.noExposure {
			rel.Influencers = r.infl.of(u)
		}
		return rel
	}
	// A seeded list is charged what the same list would cost with crypto
	// noise (research runs spend the budget they would in deployment).
	gu := r.guarantee(out.Picks, false)
	if math.IsInf(gu.Eps, 1) {
		gu.Eps = 0 // non-private: nothing meaningful to charge; the ledger stores finite costs
	}
	rel := ledger.Release{User: r.g.Label(u), Model: r.modelID, K: k, EpsP: r.cfg.Eps, List: list,
		Cost: gu.Eps, Rho: gu.Rho, Seeded: r.seed != nil, IdemKey: idem, PartyCost: gu.Eps} // per-pick: party-unit
	if out.Picks > 0 && r.store != nil && !r.noExposure {
		rel.Influencers = r.infl.of(u)
	}
	return rel
}

// Users resolves labels to node ids with a clear error for unknown ones.
func (r *Recommender) Users(labels []string) ([]int32, error) {
	ids := make([]int32, len(labels))
	for i, l := range labels {
		id, ok := r.g.ID(l)
		if !ok {
			return nil, fmt.Errorf("release: unknown user %q", l)
		}
		ids[i] = id
	}
	return ids, nil
}

// RefusedError reports users whose fresh list was refused by the cap.
type RefusedError struct{ Users []string }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("release: %d user(s) refused: %v (%v)", len(e.Users), e.Users, ledger.ErrBudgetExhausted)
}

// Unwrap makes errors.Is(err, ledger.ErrBudgetExhausted) hold.
func (e *RefusedError) Unwrap() error { return ledger.ErrBudgetExhausted }

// Recommend releases a top-k list for each user (labels), in parallel, and
// returns the results in the order of users. See the package comment for
// the guarantee and the accounting contract. opts choose, for this call
// only, fresh lists (Fresh) and an idempotency key (IdempotencyKey);
// without them the Recommender's defaults apply (sticky: a list already
// released to the user by this model at this K is re-served at no cost).
// Users refused by the cap get Result.Err set and no list; the error is
// then a *RefusedError (the other results are valid). Any other error
// aborts the call; lists charged before it are in the store.
func (r *Recommender) Recommend(ctx context.Context, users []string, k int, opts ...CallOption) ([]Result, error) {
	ids, err := r.Users(users)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(ids))
	err = r.Stream(ctx, ids, k, func(i int, res Result) error { out[i] = res; return nil }, opts...)
	if err != nil {
		return out, err
	}
	var refused []string
	for _, res := range out {
		if res.Err != nil {
			refused = append(refused, res.User)
		}
	}
	if refused != nil {
		return out, &RefusedError{Users: refused}
	}
	return out, nil
}

// Stream releases lists for users (node ids) and calls emit(i, result) in
// the order of users as soon as each result is ready and (with a store)
// its charge is committed. Memory is bounded by a window of users in
// flight, independent of len(users). Charges are committed in batches (one
// transaction per batch). emit is called from one goroutine at a time.
// opts are per-call choices, as for Recommend.
//
// For large batches pass users in label order (graph.Graph.ByLabel): the
// ledger keys spending and releases by user label, so each transaction then
// appends to its indexes. Scattered orders make every transaction rewrite
// pages all over them (a million users on SQLite: 62-73 s of charging
// against 12-15 s, `dplp bench charge --order random|label`).
func (r *Recommender) Stream(ctx context.Context, users []int32, k int, emit func(i int, res Result) error, opts ...CallOption) error {
	if k < 1 {
		return fmt.Errorf("release: k must be >= 1, got %d", k)
	}
	for _, u := range users {
		if u < 0 || int(u) >= r.g.N() {
			return fmt.Errorf("release: user id %d out of range [0,%d)", u, r.g.N())
		}
	}
	c := r.callOf(opts)
	const batch = 4096 // users per charging transaction
	nw := max(1, runtime.GOMAXPROCS(0))
	// Two stages: while window w is charged (one transaction, mostly on one
	// core) and emitted, window w+1 is looked up and sampled on all cores.
	// A user in both windows is still charged once for a sticky list: the
	// charge's idempotency key finds the first release.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type prepared struct {
		w   *window
		err error
	}
	start := func(lo int) chan prepared {
		ch := make(chan prepared, 1)
		go func() {
			w, err := r.prepare(pctx, c, users[lo:min(lo+batch, len(users))], k, nw)
			ch <- prepared{w, err}
		}()
		return ch
	}
	var next chan prepared
	if len(users) > 0 {
		next = start(0)
	}
	defer func() {
		if next != nil { // an error left a window in flight: wait for it
			cancel()
			<-next
		}
	}()
	for lo := 0; lo < len(users); lo += batch {
		p := <-next
		next = nil
		if p.err != nil {
			return p.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if lo+batch < len(users) {
			next = start(lo + batch)
		}
		res, err := r.commit(ctx, p.w, k)
		if err != nil {
			return err
		}
		for i := range res {
			if err := emit(lo+i, res[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// window is one batch of users, looked up and sampled, not yet charged.
type window struct {
	users []int32
	res   []Result
	outs  []Outcome
	todo  []int            // indexes of users that need a fresh list
	recs  []ledger.Release // their releases, in the order of todo
}

// prepare looks up the re-served lists of a batch of users (unless c is
// fresh) and samples the others in parallel; nothing is charged or returned
// yet.
func (r *Recommender) prepare(ctx context.Context, c call, users []int32, k int, nw int) (*window, error) {
	w := &window{users: users, res: make([]Result, len(users)), todo: make([]int, 0, len(users))}
	var prevs map[string]ledger.Release
	if r.store != nil && !c.fresh {
		labels := make([]string, len(users))
		for i, u := range users {
			labels[i] = r.g.Label(u)
		}
		var err error
		if prevs, err = r.store.LatestBatch(ctx, labels, r.modelID, k, r.Provenance()); err != nil {
			return nil, err
		}
	}
	for i, u := range users {
		w.res[i] = Result{User: r.g.Label(u), K: k, Seeded: r.seed != nil}
		if prev, ok := prevs[w.res[i].User]; ok {
			if err := r.checkProvenance(prev); err != nil {
				return nil, err
			}
			w.res[i].List = prev.List
			w.res[i].ReleaseID = prev.ID
			w.res[i].Seeded = prev.Seeded
			w.res[i].Guarantee = r.guaranteeFor(prev.Cost, r.picksOf(prev.Cost), prev.Seeded)
			w.res[i].Notice = "re-served at no cost (post-processing of an earlier release)"
			continue
		}
		w.todo = append(w.todo, i)
	}
	w.outs = make([]Outcome, len(users))
	// Each user's generator comes from the user (seeded runs) or is the
	// worker's crypto stream, so the lists do not depend on scheduling.
	var states []*workerState
	var mu sync.Mutex
	err := par.Run(ctx, len(w.todo), par.Options{Workers: nw}, func(int) *workerState {
		ws := r.state()
		mu.Lock()
		states = append(states, ws)
		mu.Unlock()
		return ws
	}, func(ws *workerState, j int) error {
		i := w.todo[j]
		out, err := r.sample(ws, users[i], k, 0)
		if err != nil {
			return err
		}
		// Sampler buffers are reused: copy the ids out.
		out.IDs = append([]int32(nil), out.IDs...)
		w.outs[i] = out
		return nil
	})
	for _, ws := range states {
		r.pool.Put(ws)
	}
	if err != nil {
		return nil, err
	}
	w.recs = make([]ledger.Release, len(w.todo))
	for j, i := range w.todo {
		idem := c.idem
		if idem == "" && !c.fresh && r.store != nil {
			// Concurrent first requests for the same sticky list (other
			// goroutines, processes or replicas) get one list, charged once.
			// The ledger keeps keys per provenance: a seeded run's sticky
			// key never answers a private request.
			idem = fmt.Sprintf("sticky:%s:k=%d", r.modelID, k)
		}
		w.recs[j] = r.ledgerRelease(users[i], k, w.outs[i], idem)
	}
	return w, nil
}

// commit charges a prepared window in one transaction and fills in its
// results; only then may they be returned.
func (r *Recommender) commit(ctx context.Context, w *window, k int) ([]Result, error) {
	res, outs, todo, recs := w.res, w.outs, w.todo, w.recs
	if r.store != nil && len(recs) > 0 {
		cr, err := r.store.ChargeBatch(ctx, recs, r.cap)
		if err != nil {
			return nil, err
		}
		for j, i := range todo {
			c := cr[j]
			if c.Err != nil {
				if errors.Is(c.Err, ledger.ErrBudgetExhausted) {
					res[i].Err = c.Err
					res[i].Notice = c.Err.Error()
					continue
				}
				return nil, c.Err
			}
			if err := r.checkProvenance(c.Release); err != nil {
				return nil, err
			}
			res[i].List = c.Release.List
			res[i].ReleaseID = c.Release.ID
			res[i].Fresh = c.Fresh
			res[i].Seeded = c.Release.Seeded
			res[i].Guarantee = r.guaranteeFor(c.Release.Cost, r.picksOf(c.Release.Cost), c.Release.Seeded)
			if c.Fresh {
				res[i].Cost = c.Release.Cost
			} else {
				res[i].Notice = "re-served at no cost (released before under the same key)"
			}
			res[i].Candidates, res[i].Delta = outs[i].Candidates, outs[i].Delta
			r.notice(&res[i], outs[i], k)
		}
		return res, nil
	}
	for j, i := range todo {
		res[i].List = recs[j].List
		res[i].Fresh = true
		res[i].Cost = recs[j].Cost
		res[i].Seeded = recs[j].Seeded
		res[i].Guarantee = r.guaranteeFor(recs[j].Cost, outs[i].Picks, recs[j].Seeded)
		res[i].Candidates, res[i].Delta = outs[i].Candidates, outs[i].Delta
		r.notice(&res[i], outs[i], k)
	}
	return res, nil
}

// checkProvenance refuses a stored release whose provenance is not r's: the
// store answered a lookup or an idempotency key across provenances, which
// the ledger contract rules out. Nothing of the window is returned then.
func (r *Recommender) checkProvenance(rel ledger.Release) error {
	if rel.Provenance() != r.Provenance() {
		return fmt.Errorf("release: the store returned %s release %d of user %q to a %s request: refusing to serve it (a ledger.Store must keep provenances apart)",
			rel.Provenance(), rel.ID, rel.User, r.Provenance())
	}
	return nil
}

func (r *Recommender) notice(res *Result, out Outcome, k int) {
	if len(out.IDs) < k && res.Fresh {
		res.Notice = fmt.Sprintf("only %d candidate(s) for K = %d: %d released and charged", len(out.IDs), k, len(out.IDs))
	}
}

// UserView is one user's scored candidates as the deployed path sees them:
// every candidate (zero block included) with its utility under the plan,
// and the plan itself. The exact end-to-end audit computes list
// probabilities from it; it is O(N) per user and meant for small graphs.
type UserView struct {
	IDs       []int32   // candidates, ascending
	Utilities []float64 // utility of IDs[i]
	Pub       []float64 // s_pub of IDs[i]
	Plan      calib.Plan
}

// View scores user u with the real worker and calibrates the plan exactly
// as a release does.
func (r *Recommender) View(u int32) (UserView, error) {
	if u < 0 || int(u) >= r.g.N() {
		return UserView{}, fmt.Errorf("release: user id %d out of range", u)
	}
	if r.list != nil {
		return UserView{}, errors.New("release: a dplp-list model has no per-candidate utilities (audit it with audit.AuditList)")
	}
	ws := r.state()
	defer r.pool.Put(ws)
	ws.w.Score(u, &ws.r)
	res := &ws.r
	plan := r.cfg.Plan(calib.QueryOf(res))
	if err := checkPlan(&plan); err != nil {
		return UserView{}, err
	}
	type c struct {
		id     int32
		q, pub float64
	}
	all := make([]c, 0, len(res.Cands)+res.Zero)
	for i, v := range res.Cands {
		all = append(all, c{v, plan.Utility(res.S[i], res.Pub[i]), res.Pub[i]})
	}
	for _, v := range ws.w.ZeroCands(nil) {
		all = append(all, c{v, plan.Utility(0, 0), 0})
	}
	slices.SortFunc(all, func(a, b c) int { return cmp.Compare(a.id, b.id) })
	v := UserView{Plan: plan}
	for _, x := range all {
		v.IDs = append(v.IDs, x.id)
		v.Utilities = append(v.Utilities, x.q)
		v.Pub = append(v.Pub, x.pub)
	}
	return v, nil
}

// Influencers returns the node ids whose protected pairs can change u's
// utilities (all = every party), as charged to exposure.
func (r *Recommender) Influencers(u int32) (ids []int32, all bool) { return r.infl.ids(u) }
