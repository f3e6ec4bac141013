package ledger

import (
	"context"
	"sync"
	"time"
)

// GroupCommit is a BudgetStore whose ChargeBatch calls from concurrent
// callers are committed together: while one transaction is being
// committed (and fsynced), the calls that arrive queue up, and the next
// transaction charges all of them, in arrival order, with one
// ChargeBatch on the underlying store. ChargeBatch's contract holds for the
// combined batch (each item is charged exactly as Charge would given the
// items before it, refusals are per item), so every caller gets what its
// own ChargeBatch would have given it after the calls queued before it.
// Nothing returns before the transaction holding its items is durable. If
// the combined transaction fails, every caller in it gets the error and
// nothing was recorded for any of them.
//
// This turns one fsync per charge into one fsync per group, which is
// what limits fresh releases on an embedded SQLite store.
type GroupCommit struct {
	BudgetStore // every other method passes through, ungrouped
	maxItems    int
	onBatch     func(items int) // metrics hook (may be nil)

	mu      sync.Mutex
	queue   []*chargeCall
	running bool
}

type chargeCall struct {
	rs   []Release
	cap  Cap
	res  []ChargeResult
	err  error
	done chan struct{}
}

// commitTimeout bounds one group transaction. The callers' own contexts
// are not used: cancelling one request must not abort (or leave in an
// unknown state) a transaction holding other requests' charges.
const commitTimeout = 60 * time.Second

// NewGroupCommit groups s's ChargeBatch calls, at most maxItems releases
// per transaction (< 1: 1024; a single call larger than that is committed
// alone); onBatch, if not nil, is told the size of every transaction.
func NewGroupCommit(s BudgetStore, maxItems int, onBatch func(items int)) *GroupCommit {
	if maxItems < 1 {
		maxItems = 1024
	}
	return &GroupCommit{BudgetStore: s, maxItems: maxItems, onBatch: onBatch}
}

func (g *GroupCommit) ChargeBatch(ctx context.Context, rs []Release, cap Cap) ([]ChargeResult, error) {
	if len(rs) == 0 {
		return g.BudgetStore.ChargeBatch(ctx, rs, cap)
	}
	c := &chargeCall{rs: rs, cap: cap, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	// Wait even if ctx ends: the charge may be committing, and the caller
	// must learn whether it was (a list is shown only after its charge).
	<-c.done
	return c.res, c.err
}

// run commits queued calls until the queue is empty.
func (g *GroupCommit) run() {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		// Take the longest prefix with one cap and at most maxItems items
		// (always at least one call).
		n, items := 0, 0
		for n < len(g.queue) && g.queue[n].cap == g.queue[0].cap &&
			(n == 0 || items+len(g.queue[n].rs) <= g.maxItems) {
			items += len(g.queue[n].rs)
			n++
		}
		calls := g.queue[:n:n]
		g.queue = append([]*chargeCall(nil), g.queue[n:]...)
		g.mu.Unlock()
		g.commit(calls, items)
	}
}

func (g *GroupCommit) commit(calls []*chargeCall, items int) {
	all := make([]Release, 0, items)
	for _, c := range calls {
		all = append(all, c.rs...)
	}
	if g.onBatch != nil {
		g.onBatch(len(all))
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	res, err := g.BudgetStore.ChargeBatch(ctx, all, calls[0].cap)
	cancel()
	off := 0
	for _, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.res = res[off : off+len(c.rs) : off+len(c.rs)]
		}
		off += len(c.rs)
		close(c.done)
	}
}
