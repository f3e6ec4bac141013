// Package par is the one way dplp runs independent items on all cores:
// items are handed out in chunks from an atomic counter (their costs vary a
// lot with degree), every worker goroutine gets its own scratch state, the
// first error stops further items from starting, and a cancelled context
// does too. Results must not depend on which worker runs an item: callers
// derive each item's random generator from the item (randx.Derive(seed,
// item)), never from the worker.
package par

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Options tune Run; the zero value is GOMAXPROCS workers, chunks of 1.
type Options struct {
	Workers int // at most this many goroutines (0: GOMAXPROCS)
	Chunk   int // items taken at a time (0: 1)
	// MinPerWorker, when > 0, limits workers to n/MinPerWorker (at least
	// one), so tiny inputs do not start goroutines for nothing.
	MinPerWorker int
}

// Run calls fn(state, i) for every i in [0, n), concurrently on up to
// Options.Workers goroutines; newState(worker) builds each goroutine's
// scratch state once. It returns the first error fn returned, or the
// context's error if ctx was cancelled before every item started; items
// already running finish. With one worker everything runs on the calling
// goroutine, in order.
func Run[S any](ctx context.Context, n int, opt Options, newState func(worker int) S, fn func(s S, i int) error) error {
	if n <= 0 {
		return ctx.Err()
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
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
	var once sync.Once
	var first error
	fail := func(err error) {
		once.Do(func() { first = err })
		stop.Store(true)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newState(w)
			for !stop.Load() {
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					if err := fn(s, i); err != nil {
						fail(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}
