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
//
// When a transaction starts. By default as soon as the previous one has
// committed, with every call queued by then (at most GroupOptions.MaxItems
// releases). With GroupOptions.MaxDelay set, a transaction waits until it
// holds as many releases as the previous transaction charged (whose
// callers, under steady load, come back with their next charges), but
// never longer than MaxDelay after its first call was queued (the latency
// bound). After the committer has been idle for longer than MaxDelay
// nobody is waited for, so a lone caller is committed at once, and a
// transaction that waited in vain sets a lower target for the next.
type GroupCommit struct {
	BudgetStore // every other method passes through, ungrouped
	maxItems    int
	maxDelay    time.Duration
	onBatch     func(items int) // metrics hook (may be nil)

	mu        sync.Mutex
	queue     []*chargeCall
	queued    int           // releases in queue
	lastItems int           // releases of the previous transaction (0 after an idle spell)
	idleSince time.Time     // when the committer last found the queue empty
	wake      chan struct{} // a call was queued (capacity 1)
	running   bool
}

type chargeCall struct {
	rs     []Release
	cap    Cap
	queued time.Time
	res    []ChargeResult
	err    error
	done   chan struct{}
}

// GroupOptions tunes a GroupCommit.
type GroupOptions struct {
	// MaxItems is the most releases one transaction charges (< 1: 1024);
	// a single call larger than that is committed alone.
	MaxItems int
	// MaxDelay is the latency bound: the longest a transaction waits, from
	// the moment its first call was queued, to hold as many releases as
	// the previous transaction. 0: no wait (a transaction starts as soon as
	// the previous one has committed).
	MaxDelay time.Duration
	// OnBatch, if not nil, is told the size of every transaction.
	OnBatch func(items int)
}

// commitTimeout bounds one group transaction. The callers' own contexts
// are not used: cancelling one request must not abort (or leave in an
// unknown state) a transaction holding other requests' charges.
const commitTimeout = 60 * time.Second

// NewGroupCommit groups s's ChargeBatch calls, at most maxItems releases
// per transaction (< 1: 1024; a single call larger than that is committed
// alone), without waiting (MaxDelay 0); onBatch, if not nil, is told the
// size of every transaction.
func NewGroupCommit(s BudgetStore, maxItems int, onBatch func(items int)) *GroupCommit {
	return NewGroupCommitWith(s, GroupOptions{MaxItems: maxItems, OnBatch: onBatch})
}

// NewGroupCommitWith groups s's ChargeBatch calls as o says.
func NewGroupCommitWith(s BudgetStore, o GroupOptions) *GroupCommit {
	if o.MaxItems < 1 {
		o.MaxItems = 1024
	}
	return &GroupCommit{BudgetStore: s, maxItems: o.MaxItems, maxDelay: max(0, o.MaxDelay), onBatch: o.OnBatch,
		wake: make(chan struct{}, 1)}
}

// signal wakes the committer if it waits (caller holds mu).
func (g *GroupCommit) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *GroupCommit) ChargeBatch(ctx context.Context, rs []Release, cap Cap) ([]ChargeResult, error) {
	if len(rs) == 0 {
		return g.BudgetStore.ChargeBatch(ctx, rs, cap)
	}
	c := &chargeCall{rs: rs, cap: cap, done: make(chan struct{})}
	if g.maxDelay > 0 {
		c.queued = time.Now()
	}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	g.queued += len(rs)
	if !g.running {
		g.running = true
		if g.maxDelay > 0 && time.Since(g.idleSince) > g.maxDelay {
			g.lastItems = 0 // idle for longer than the bound: nobody to wait for
		}
		go g.run()
	} else if g.maxDelay > 0 {
		g.signal()
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
			g.idleSince = time.Now()
			g.mu.Unlock()
			return
		}
		if g.maxDelay > 0 && g.queued < min(g.lastItems, g.maxItems) {
			// The callers of the previous transaction are likely to be
			// back soon: wait for as many releases as it charged, up to
			// the latency bound of the oldest queued call.
			if wait := time.Until(g.queue[0].queued.Add(g.maxDelay)); wait > 0 {
				g.mu.Unlock()
				g.sleep(wait)
				continue
			}
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
		g.queued -= items
		g.mu.Unlock()
		g.commit(calls, items)
		g.mu.Lock()
		g.lastItems = items
		g.mu.Unlock()
	}
}

// sleep waits for d, or until a call is queued.
func (g *GroupCommit) sleep(d time.Duration) {
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-g.wake:
		t.Stop()
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
