// Package par is the one way dplp runs work on all cores. Run hands
// independent items out in chunks from an atomic counter (their costs vary a
// lot with degree), gives every worker goroutine its own scratch state, stops
// starting items at the first error or when the context is cancelled, and
// reports the error of the lowest-numbered failing item. Team runs a fixed
// set of long-lived workers that share their work by themselves (Hogwild
// SGD). Results must not depend on which worker runs an item: callers
// derive each item's random generator from the item (randx.Derive(seed,
// item)), never from the worker.
package par

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// reserved counts the cores that background tasks hold (Reserve).
var reserved atomic.Int32

// Reserve takes one core out of Run's default worker count until release
// is called: a long task of one goroutine running beside parallel work
// (the ledger's recording of the influence blocks beside the scorer's
// sensitivity pass) then gets a core of its own instead of a third of two,
// and the parallel work ends when it does rather than before it. Defaults
// never fall below one worker; explicit Options.Workers are unchanged.
// release is idempotent.
func Reserve() (release func()) {
	reserved.Add(1)
	var once sync.Once
	return func() { once.Do(func() { reserved.Add(-1) }) }
}

// DefaultWorkers is Run's worker count for Options.Workers = 0: GOMAXPROCS
// less the reserved cores, at least 1.
func DefaultWorkers() int {
	return max(1, runtime.GOMAXPROCS(0)-int(reserved.Load()))
}

// Options tune Run; the zero value is DefaultWorkers workers, chunks of 1.
type Options struct {
	Workers int // at most this many goroutines (0: DefaultWorkers)
	Chunk   int // items taken at a time (0: 1)
	// MinPerWorker, when > 0, limits workers to n/MinPerWorker (at least
	// one), so tiny inputs do not start goroutines for nothing.
	MinPerWorker int
}

// Run calls fn(state, i) for every i in [0, n), concurrently on up to
// Options.Workers goroutines; newState(worker) builds each goroutine's
// scratch state once (worker in [0, workers), on that goroutine). Chunks are
// handed out in increasing order, and a chunk once taken runs to its end
// unless one of its items fails.
//
// Errors: after an item fails no further chunk starts, and Run returns the
// error of the lowest-numbered failing item. Every item before it has run
// (its chunk was taken earlier), so the error does not depend on the number
// of workers or on timing. Without a failing item, Run returns the
// context's error if ctx was cancelled before every chunk started (items
// already running finish), and nil otherwise. With one worker everything
// runs on the calling goroutine, in order.
func Run[S any](ctx context.Context, n int, opt Options, newState func(worker int) S, fn func(s S, i int) error) error {
	if n <= 0 {
		return ctx.Err()
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = DefaultWorkers()
	}
	if opt.MinPerWorker > 0 {
		workers = min(workers, max(1, n/opt.MinPerWorker))
	}
	workers = min(workers, n)
	chunk := max(1, opt.Chunk)
	if workers <= 1 {
		s := newState(0)
		for i := 0; i < n; i++ {
			if i%chunk == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := fn(s, i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	var stop atomic.Bool
	var mu sync.Mutex
	failed, firstErr := n, error(nil) // lowest failing item and its error
	var ctxErr error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newState(w)
			for !stop.Load() {
				if err := ctx.Err(); err != nil {
					mu.Lock()
					ctxErr = err
					mu.Unlock()
					stop.Store(true)
					return
				}
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					if err := fn(s, i); err != nil {
						mu.Lock()
						if i < failed {
							failed, firstErr = i, err
						}
						mu.Unlock()
						stop.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctxErr
}

// Team runs fn(ctx, w) for every w in [0, k) at once, each on its own
// goroutine (k <= 1: fn(ctx, 0) on the calling goroutine): for long-lived
// workers that divide the work among themselves and must run concurrently,
// such as Hogwild SGD threads, where Run's item queue does not fit. The
// context passed to fn is cancelled as soon as any member returns an error,
// so members should poll ctx.Err() between steps and return it. Team
// returns the first error a member returned (in time), or nil; if ctx is
// already done, it returns ctx.Err() without starting anyone.
func Team(ctx context.Context, k int, fn func(ctx context.Context, w int) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if k <= 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, w); err != nil {
				once.Do(func() { first = err })
				cancel()
			}
		}()
	}
	wg.Wait()
	return first
}
