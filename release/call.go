package release

import (
	"context"

	"github.com/dplp/dplp/ledger"
)

// Store is what a Recommender asks of a ledger: the two calls of the
// release path, a subset of ledger.BudgetStore (so every ledger.Store and
// every ledger.BudgetStore is one); a decorator (a cache, a group
// committer, a test double) needs to implement only these two. The
// contracts are ledger.BudgetStore's:
//
//   - LatestBatch returns, for every user that has one, the newest release
//     of (user, model, k) of provenance prov (the list a sticky request
//     re-serves at no cost). It must never return a release of another
//     provenance: the Recommender refuses the whole call if it does.
//   - ChargeBatch charges releases in one transaction, in order, each as
//     ledger.BudgetStore.Charge would given the ones before it: an
//     idempotency key already recorded for (user, provenance) returns the
//     stored release (Fresh false, nothing charged; ledger.ErrIdemConflict
//     for another model or K), a charge past the cap is refused with a
//     *ledger.BudgetError, and the results are returned only once the
//     transaction is durable. A non-nil error means nothing was recorded.
type Store interface {
	LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error)
	ChargeBatch(ctx context.Context, rs []ledger.Release, cap ledger.Cap) ([]ledger.ChargeResult, error)
}

var _ Store = ledger.BudgetStore(nil)

// CallOption is a choice made for one call of Recommend or Stream. Without
// it a call takes the Recommender's defaults (WithFresh, WithIdempotencyKey;
// both off unless given to New), so one Recommender can serve sticky,
// fresh and idempotent requests side by side.
type CallOption func(*call)

// call is what one Recommend or Stream call does: the Recommender's
// defaults overridden by the call's options.
type call struct {
	fresh bool   // sample and charge even when a list was released before
	idem  string // the caller's idempotency key ("" for none)
}

// Fresh makes this call sample and charge a new list for every user, even
// for users who already received one from this model at this K (the
// per-call form of WithFresh(true)).
func Fresh() CallOption { return func(c *call) { c.fresh = true } }

// IdempotencyKey makes this call's fresh lists retry-safe: each is charged
// under key, which the ledger keeps per (user, provenance), so a second call
// with the same key for the same user returns the first list, charged once
// (Result.Fresh false), and a second call with the same key for another
// model or K fails with ledger.ErrIdemConflict. Meant for one user per call
// (every user of a batch is charged under the same key, each separately).
// It replaces the Recommender's WithIdempotencyKey for this call; "" means
// no key. Keys beginning with "sticky:" are the Recommender's own (the
// automatic key of sticky lists): callers should prefix theirs, as the
// service does with "client:". Combine it with Fresh for a request that
// must not be answered by an earlier sticky list.
func IdempotencyKey(key string) CallOption { return func(c *call) { c.idem = key } }

// callOf applies opts to r's defaults.
func (r *Recommender) callOf(opts []CallOption) call {
	c := call{fresh: r.fresh, idem: r.idem}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}
