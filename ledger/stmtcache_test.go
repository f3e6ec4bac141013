package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
)

// sqliteStmts is the statement cache of a SQLite store.
func sqliteStmts(t *testing.T, s Store) *stmtCache {
	t.Helper()
	b, ok := s.(*sqlStore).b.(*sqliteBackend)
	if !ok {
		t.Fatal("not a SQLite store")
	}
	return b.stmts
}

// The charge path's and the point reads' statements are prepared once and
// kept: later transactions and reads use the same statements, and the
// cache does not grow with the number of charges.
func TestStmtCacheReuse(t *testing.T) {
	ctx := ctxT(t)
	s := sqliteFixture.open(t)
	c := sqliteStmts(t, s)
	charge := func(i int) {
		t.Helper()
		if _, _, err := s.Charge(ctx, testRelease(fmt.Sprintf("u%d", i%3), fmt.Sprintf("i%d", i), 0.5), Unlimited); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Latest(ctx, "u0", "test-model", 4, Crypto); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Budget(ctx, "u1"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.TokenHash(ctx, "u2"); err != nil {
			t.Fatal(err)
		}
	}
	charge(0)
	c.mu.Lock()
	first := map[string]*cachedStmt{}
	for q, el := range c.byText {
		first[q] = el.Value.(*cachedStmt)
	}
	c.mu.Unlock()
	if len(first) == 0 {
		t.Fatal("nothing cached after a charge and three reads")
	}
	for i := 1; i < 20; i++ {
		charge(i)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byText) != len(first) {
		t.Errorf("%d statements cached after 20 charges, %d after the first: the same statements should be reused", len(c.byText), len(first))
	}
	for q, e := range first {
		if el, ok := c.byText[q]; !ok || el.Value.(*cachedStmt) != e {
			t.Errorf("statement %.60q was prepared again", q)
		}
		if e.refs != 0 {
			t.Errorf("statement %.60q still held %d time(s)", q, e.refs)
		}
	}
}

// With a cache far too small for the statements in use, statements are
// evicted (and closed) while other goroutines' transactions and reads still
// use them: every charge is still recorded exactly once, and the cache
// stays within its bounds.
func TestStmtCacheEvictionUnderLoad(t *testing.T) {
	defer func(e, p int) { stmtCacheEntries, stmtCacheParams = e, p }(stmtCacheEntries, stmtCacheParams)
	stmtCacheEntries, stmtCacheParams = 3, 1024
	ctx := ctxT(t)
	s := sqliteFixture.open(t)
	c := sqliteStmts(t, s)
	const workers, rounds = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers*2)
	for w := 0; w < workers; w++ {
		wg.Add(2)
		go func() { // batches of 1 .. 8 users: a different statement text per size
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var rs []Release
				for i := 0; i <= (w+r)%8; i++ {
					rs = append(rs, testRelease(fmt.Sprintf("w%d-u%d", w, i), fmt.Sprintf("r%d", r), 0.25))
				}
				res, err := s.ChargeBatch(ctx, rs, Unlimited)
				if err == nil {
					for _, x := range res {
						if x.Err != nil || !x.Fresh {
							err = fmt.Errorf("charge %+v", x)
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // reads of every kind meanwhile
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				u := fmt.Sprintf("w%d-u0", w)
				if _, _, err := s.Latest(ctx, u, "test-model", 4, Crypto); err != nil {
					errs <- err
					return
				}
				if _, err := s.LatestBatch(ctx, []string{u, "w0-u1", "nobody"}, "test-model", 4, Crypto); err != nil {
					errs <- err
					return
				}
				if _, err := s.Budget(ctx, u); err != nil {
					errs <- err
					return
				}
				if _, err := s.Users(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := 0; w < workers; w++ {
		for i := 0; i < 8; i++ {
			want := 0
			for r := 0; r < rounds; r++ {
				if i <= (w+r)%8 {
					want++
				}
			}
			sp, err := s.Budget(ctx, fmt.Sprintf("w%d-u%d", w, i))
			if err != nil {
				t.Fatal(err)
			}
			if sp.Releases != want || sp.Spent != 0.25*float64(want) {
				t.Errorf("w%d-u%d: %+v, want %d releases", w, i, sp, want)
			}
		}
	}
	if n := c.len(); n > stmtCacheEntries {
		t.Errorf("%d statements cached, bound %d", n, stmtCacheEntries)
	}
	c.mu.Lock()
	evicted := c.evicted
	c.mu.Unlock()
	if evicted == 0 {
		t.Error("no statement was evicted: the test does not test eviction")
	}
	if r, err := Verify(context.Background(), s); err != nil || !r.OK() {
		t.Fatalf("verify: %+v %v", r, err)
	}
}

// Schema statements are not kept; data statements are, up to a size.
func TestStmtCacheable(t *testing.T) {
	for _, tc := range []struct {
		q     string
		nargs int
		want  bool
	}{
		{"SELECT hash FROM tokens WHERE user_id = ?", 1, true},
		{"INSERT INTO spend (user_id) VALUES (?)", 1, true},
		{"UPDATE releases SET folded = 1 WHERE id IN (?)", 1, true},
		{"DELETE FROM tokens WHERE user_id = ?", 1, true},
		{"CREATE TABLE x (a INTEGER)", 0, false},
		{"PRAGMA journal_mode = WAL", 0, false},
		{"ALTER TABLE releases ADD COLUMN x TEXT", 0, false},
		{"SELECT 1", stmtCacheParams, false},
	} {
		if got := cacheable(tc.q, tc.nargs); got != tc.want {
			t.Errorf("cacheable(%q, %d) = %v, want %v", tc.q, tc.nargs, got, tc.want)
		}
	}
}

// Every write transaction of a SQLite store runs on one connection (its
// page cache stays warm), whatever connections reads took and gave back
// between the writes: a TEMP table, which only its own connection sees,
// made by the first write is there in the later ones. Giving back several
// read connections between writes is the negative control: the pool hands
// the most recently returned one to a transaction that does not keep its
// own.
func TestSQLiteWritesKeepOneConnection(t *testing.T) {
	ctx := ctxT(t)
	s := sqliteFixture.open(t).(*sqlStore)
	b := s.b.(*sqliteBackend)
	if err := b.write(ctx, func(q querier) error { return q.exec(ctx, "CREATE TEMP TABLE writer_marker (x INTEGER)") }); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		var held []*sql.Conn
		for range 3 {
			c, err := b.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		var n int
		if err := b.write(ctx, func(q querier) error {
			return q.queryRow(ctx, "SELECT COUNT(*) FROM temp.sqlite_master WHERE name = 'writer_marker'").Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("round %d: the write ran on another connection than the first write", round)
		}
	}
}
