// Package ledgerbench measures how fast a ledger store records a large
// batch release: N synthetic lists charged in transactions of Batch users,
// as release.Recommender.Stream charges them. It exists to show what the
// order of the users does to the store (label order appends to the per-user
// indexes; node or random order scatters over them) and what the influence
// sets of exposure tracking cost.
package ledgerbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/dplp/dplp/ledger"
)

// Order is the order users are charged in.
type Order string

// The orders Run knows.
const (
	OrderLabel  Order = "label"  // bytewise label order: the ledger's key order
	OrderNumber Order = "number" // 0, 1, 2, ...: "10" before "9" is not respected
	OrderRandom Order = "random" // a seeded random permutation
)

// Options of a run. Users are labelled "0" .. "N-1"; each list holds K
// random user labels, each release up to Influencers distinct random labels
// in sorted order, as the release path gives them (0: exposure tracking
// off); cost K * 0.5.
type Options struct {
	N, K, Batch, Influencers int
	Order                    Order
	Seed                     uint64
	// Progress, if not nil, is called with the number of users charged.
	Progress func(done int)
}

// Result is what Run measured.
type Result struct {
	Charged int
	Seconds float64
}

// Run charges opt.N fresh releases to st (which should be empty: users
// already charged by this model are re-served, not charged) and times the
// ChargeBatch calls (building the synthetic releases is not timed).
func Run(ctx context.Context, st ledger.BudgetStore, opt Options) (Result, error) {
	if opt.N < 1 || opt.K < 1 || opt.Batch < 1 || opt.Influencers < 0 {
		return Result{}, fmt.Errorf("ledgerbench: need N, K, Batch >= 1 and Influencers >= 0, got %d, %d, %d, %d", opt.N, opt.K, opt.Batch, opt.Influencers)
	}
	labels := make([]string, opt.N)
	for i := range labels {
		labels[i] = strconv.Itoa(i)
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x6c656467))
	switch opt.Order {
	case OrderLabel:
		slices.Sort(labels)
	case OrderNumber:
	case OrderRandom:
		r.Shuffle(len(labels), func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })
	default:
		return Result{}, fmt.Errorf("ledgerbench: unknown order %q (label, number or random)", opt.Order)
	}
	model := fmt.Sprintf("bench:charge:k=%d", opt.K)
	idem := "sticky:" + model
	var elapsed time.Duration
	batch := make([]ledger.Release, 0, opt.Batch)
	charged := 0
	for lo := 0; lo < opt.N; lo += opt.Batch {
		batch = batch[:0]
		for _, u := range labels[lo:min(lo+opt.Batch, opt.N)] {
			list := make([]string, opt.K)
			for i := range list {
				list[i] = labels[r.IntN(opt.N)]
			}
			var infl []string
			if opt.Influencers > 0 {
				infl = make([]string, opt.Influencers)
				for i := range infl {
					infl[i] = labels[r.IntN(opt.N)]
				}
				// Sorted and distinct, as the release path records them.
				slices.Sort(infl)
				infl = slices.Compact(infl)
			}
			batch = append(batch, ledger.Release{User: u, Model: model, K: opt.K, EpsP: 0.5, List: list,
				Cost: 0.5 * float64(opt.K), Rho: 0.125 * float64(opt.K), IdemKey: idem, Influencers: infl})
		}
		start := time.Now()
		res, err := st.ChargeBatch(ctx, batch, ledger.Unlimited)
		elapsed += time.Since(start)
		if err != nil {
			return Result{}, err
		}
		for _, c := range res {
			if c.Err != nil {
				return Result{}, c.Err
			}
			if c.Fresh {
				charged++
			}
		}
		if opt.Progress != nil {
			opt.Progress(min(lo+opt.Batch, opt.N))
		}
	}
	return Result{Charged: charged, Seconds: elapsed.Seconds()}, nil
}
