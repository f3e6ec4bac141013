package ledger

import (
	"container/list"
	"context"
	"database/sql"
	"strings"
	"sync"
)

// stmtCache keeps the SQLite store's prepared statements across
// transactions and reads: one *sql.Stmt per distinct statement text,
// prepared on the database, which database/sql prepares once on each pooled
// connection it runs on and keeps there (Tx.StmtContext reuses the
// connection's statement inside a transaction). Without it every charge
// transaction re-parsed its five statements and every Latest, Budget and
// TokenHash read its one: a profile of dplp serve spent 12.6% of all CPU in
// SQLite's parser, and a one-charge transaction spent 37% of its CPU there
// (docs/LEDGER.md, "Prepared statements").
//
// Only data statements (SELECT, INSERT, UPDATE, DELETE) are kept: schema
// statements run once. The multi-row statements of the charge path have one
// text per row count, so the cache is an LRU bounded both in statements and
// in their total parameters (a prepared statement's memory grows with its
// parameters: about 10 KB plus 100 bytes per parameter, per connection).
// A statement evicted while a caller still holds it is closed when the last
// holder releases it; database/sql closes its per-connection copies once
// the transactions and rows using them are done.
type stmtCache struct {
	db *sql.DB

	mu      sync.Mutex
	ll      *list.List // of *cachedStmt, most recently used first
	byText  map[string]*list.Element
	params  int // sum of the cached statements' parameters
	evicted int // statements evicted so far (tests)
}

// The cache's bounds (variables for tests).
var (
	stmtCacheEntries = 256
	stmtCacheParams  = 16384
)

type cachedStmt struct {
	text    string
	st      *sql.Stmt
	params  int
	refs    int  // holders (acquire without release); guarded by stmtCache.mu
	evicted bool // out of the cache: closed when refs drops to 0
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, ll: list.New(), byText: map[string]*list.Element{}}
}

// cacheable reports whether statement q with nargs parameters is kept.
func cacheable(q string, nargs int) bool {
	if nargs > stmtCacheParams/8 {
		return false
	}
	for _, p := range [...]string{"SELECT ", "INSERT ", "UPDATE ", "DELETE "} {
		if strings.HasPrefix(q, p) {
			return true
		}
	}
	return false
}

// acquire returns the cached statement for q (preparing it on the database
// when missing), to be given back with release once the statement has been
// handed to a transaction (Tx.StmtContext) or has started a query (its Rows
// keep it open). It returns nil when q is not kept (then the caller
// prepares or runs q itself) or cannot be prepared outside the caller's
// transaction (a table created by it); the caller's own preparation then
// reports any error.
func (c *stmtCache) acquire(ctx context.Context, q string, nargs int) *cachedStmt {
	if c == nil || !cacheable(q, nargs) {
		return nil
	}
	c.mu.Lock()
	if el, ok := c.byText[q]; ok {
		c.ll.MoveToFront(el)
		e := el.Value.(*cachedStmt)
		e.refs++
		c.mu.Unlock()
		return e
	}
	c.mu.Unlock()
	// Prepare without holding the lock: it may wait for a connection.
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byText[q]; ok { // prepared meanwhile by another caller
		st.Close()
		c.ll.MoveToFront(el)
		e := el.Value.(*cachedStmt)
		e.refs++
		return e
	}
	e := &cachedStmt{text: q, st: st, params: nargs, refs: 1}
	c.byText[q] = c.ll.PushFront(e)
	c.params += nargs
	for c.ll.Len() > 1 && (c.ll.Len() > stmtCacheEntries || c.params > stmtCacheParams) {
		c.evictLocked(c.ll.Back())
	}
	return e
}

// release gives back a statement acquire returned.
func (c *stmtCache) release(e *cachedStmt) {
	c.mu.Lock()
	e.refs--
	closeIt := e.evicted && e.refs == 0
	c.mu.Unlock()
	if closeIt {
		e.st.Close()
	}
}

func (c *stmtCache) evictLocked(el *list.Element) {
	e := c.ll.Remove(el).(*cachedStmt)
	delete(c.byText, e.text)
	c.params -= e.params
	c.evicted++
	e.evicted = true
	if e.refs == 0 {
		e.st.Close() // only marks it closed while a transaction or rows still use it
	}
}

// close closes every cached statement (before the database is closed).
func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.ll.Len() > 0 {
		c.evictLocked(c.ll.Back())
	}
}

// len is the number of cached statements (tests).
func (c *stmtCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
