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
// dictionary through which releases name their influencers to the ledger
// (InfluenceDict), is made once, on first use, and may be shared by every
// Recommender on the graph.
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
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
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

// Recommender releases private lists for one model on one graph snapshot.
// Safe for concurrent use: one Recommender serves any mix of concurrent
// sticky, fresh and idempotent calls (CallOption), sharing its scoring
// workers and the graph's influencer dictionary.
type Recommender struct {
	modelID string
	g       *graph.Graph
	p       *protect.Set
	sc      *score.Scorer
	cfg     calib.Config
	public  bool // cfg.ReadsPublic(): queries are scored with their public sums
	store   Store
	cap     ledger.Cap
	seed    *uint64
	fresh   bool   // default of every call (WithFresh)
	idem    string // default of every call (WithIdempotencyKey)
	dict    *InfluenceDict
	// noExposure: do not attach influence sets to releases (WithExposure).
	noExposure bool
	// prepd is the influence recording started before New
	// (WithPreparation), or nil.
	prepd      *Preparation
	sampler    string // SamplerAuto ("" too), SamplerExact or SamplerFloat
	uncharged  bool   // WithoutLedger
	infl       influence
	pool       sync.Pool // *workerState
	list       *listRel  // dplp-list models (listrel.go); nil for per-pick mechanisms
	guarantees guarantees
}

type workerState struct {
	w      *score.Worker
	r      score.Result
	s      Sampler
	in     UserInput
	crypto *rand.Rand
	seeded seededRNG   // seeded runs: the per-user generators, reused
	fns    workerFuncs // w's lookups for UserInput, made once
	list   listWorker  // dplp-list buffers
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
	r.public = cfg.ReadsPublic()
	if err := r.cfg.Validate(); err != nil {
		return nil, err
	}
	if r.prepd != nil {
		if err := r.usePreparation(); err != nil {
			return nil, err
		}
		return r, nil
	}
	if r.dict == nil {
		r.dict = NewInfluenceDict(g)
	} else if r.dict.g != g {
		return nil, errors.New("release: the influencer dictionary was made for another graph")
	}
	r.infl = newInfluence(g, p, r.sc.Kind(), r.dict)
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
	ws.fns = workerFuncsOf(ws.w)
	if r.seed == nil {
		ws.crypto = randx.Crypto()
	}
	return ws
}
