package release

// Construction options of a Recommender (per-call intents are in call.go).

import (
	"errors"
	"fmt"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/score"
)

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

// WithInfluenceDict shares d, the influencer dictionary of the
// Recommender's graph, instead of making one for this Recommender (see
// InfluenceDict). New refuses a dictionary of another graph.
func WithInfluenceDict(d *InfluenceDict) Option {
	return func(r *Recommender) error {
		if d == nil {
			return errors.New("release: nil influencer dictionary")
		}
		r.dict = d
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
