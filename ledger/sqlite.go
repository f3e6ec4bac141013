package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// SQLiteOptions tunes OpenSQLite. The zero value is the safe default.
type SQLiteOptions struct {
	// SyncNormal selects PRAGMA synchronous=NORMAL instead of FULL. In WAL
	// mode NORMAL is still safe against process crashes (kill -9) and never
	// corrupts the file, but a charge committed just before a power loss or
	// OS crash may be lost (rolled back) afterwards, so a list could have
	// been shown without its charge surviving. FULL syncs the WAL on every
	// commit (about one fsync per charge) and makes every acknowledged
	// charge survive power loss. Use NORMAL only where that loss is
	// acceptable (tests, experiments).
	SyncNormal bool
	// BusyTimeout is how long a connection waits for another process's
	// write lock before failing (then the transaction is retried); default
	// 10s.
	BusyTimeout time.Duration
}

// OpenSQLite opens (creating and migrating when needed) the SQLite store in
// file path. The file is put in WAL mode; every write transaction starts with
// BEGIN IMMEDIATE, taking the database's write lock before reading the
// budget, so concurrent writers in any number of processes are serialised
// and a budget check can never be based on a stale read. Within one process,
// writers also queue on a mutex instead of spinning on the lock. A database
// with tables that is not a dplp ledger is refused (ErrNotLedger).
func OpenSQLite(ctx context.Context, path string, opt SQLiteOptions) (Store, error) {
	s, err := openSQLite(ctx, path, opt, LatestSchema, OpenOptions{Create: true, LockNotice: time.Second})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sqliteURI is path as the file name of an SQLite URI ("file:..."): '%' is
// the only character of an accepted path that needs escaping ('?' and '#'
// are refused).
func sqliteURI(path string) string {
	return "file:" + strings.ReplaceAll(path, "%", "%25")
}

func openSQLite(ctx context.Context, path string, opt SQLiteOptions, upto int, o OpenOptions) (*sqlStore, error) {
	switch {
	case path == "":
		return nil, invalid("empty SQLite path (use sqlite:PATH)")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return nil, invalid("SQLite path %q: give a file path (in-memory and URI names are not supported)", path)
	case strings.ContainsAny(path, "?#"):
		return nil, invalid("SQLite path %q contains '?' or '#'", path)
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	syncMode := "FULL"
	if opt.SyncNormal {
		syncMode = "NORMAL"
	}
	// mode: SQLite's own open mode. rw never creates the file (no race
	// between the check below and the open), rwc creates it, ro opens it
	// read-only; query_only additionally refuses every write statement.
	mode := "rw"
	switch {
	case o.ReadOnly:
		mode = "ro"
	case o.Create:
		mode = "rwc"
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("ledger: sqlite %s: %w (it is a directory)", path, ErrNoLedger)
	} else if errors.Is(err, fs.ErrNotExist) {
		if !o.Create {
			return nil, fmt.Errorf("ledger: sqlite %s: %w (the file does not exist; nothing was created)", path, ErrNoLedger)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("ledger: sqlite %s: creating its directory: %w", path, err)
		}
		// Create the file 0600 before SQLite does (it would use 0644):
		// SQLite gives the -wal and -shm files the database file's mode.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("ledger: sqlite %s: creating it: %w", path, err)
		}
		if err == nil {
			f.Close()
		}
	}
	// cache_size: 64 MiB of page cache per connection (SQLite's default is
	// 2 MiB): batch charges insert into three indexes keyed by user, in no
	// particular order, and a small cache turns that into disk reads.
	// wal_autocheckpoint: a commit copies the WAL into the file once it
	// holds 10,000 pages (40 MB) instead of 1,000, so that a page that many
	// transactions rewrite (a spend row's, an index's inner pages) is copied
	// once per checkpoint rather than ten times (1 M release: 1.5% less
	// time, a sixth less system CPU). The journal mode is set once below,
	// after the file is known to be a ledger (setting it writes the file).
	dsn := fmt.Sprintf("%s?mode=%s&_pragma=busy_timeout(%d)&_pragma=synchronous(%s)&_pragma=cache_size(-65536)&_pragma=wal_autocheckpoint(10000)",
		sqliteURI(path), mode, busy.Milliseconds(), syncMode)
	if o.ReadOnly {
		dsn += "&_query_only=1"
	} else {
		dsn += "&_txlock=immediate"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	b := newSQLiteBackend(db, o)
	fail := func(err error) (*sqlStore, error) {
		b.close()
		if errors.Is(err, ErrSchemaTooNew) {
			return nil, fmt.Errorf("%w (file %s)", err, path)
		}
		return nil, fmt.Errorf("ledger: sqlite %s: %w", path, err)
	}
	if o.ReadOnly {
		if err := b.read(ctx, func(q querier) error { return checkReadable(ctx, q, "sqlite", "SQLite file") }); err != nil {
			return fail(err)
		}
		return &sqlStore{b: b, now: time.Now, readOnly: true, path: path}, nil
	}
	// Refuse a foreign database, and a missing ledger without Create,
	// before anything (even the journal mode) is written; migrate checks
	// again inside its write transaction, in case another process created
	// the ledger in between.
	var kind storeKind
	var detail string
	if err := b.read(ctx, func(q querier) error {
		var err error
		kind, detail, err = classify(ctx, q, "sqlite")
		return err
	}); err != nil {
		return fail(err)
	}
	switch {
	case kind == kindForeign:
		return fail(fmt.Errorf("%w: %s; it was left untouched", ErrNotLedger, detail))
	case kind == kindEmpty && !o.Create:
		return fail(fmt.Errorf("%w (the database has no tables; nothing was created)", ErrNoLedger))
	}
	var jm string
	if err := b.read(ctx, func(q querier) error { return q.queryRow(ctx, "PRAGMA journal_mode = WAL").Scan(&jm) }); err != nil {
		return fail(err)
	}
	if !strings.EqualFold(jm, "wal") {
		return fail(fmt.Errorf("journal mode is %q, not WAL (is the file on a filesystem without shared memory?)", jm))
	}
	if err := migrate(ctx, b, upto, "", o.Create); err != nil {
		return fail(err)
	}
	s := &sqlStore{b: b, now: time.Now, schema: schemaLevel(upto)}
	// Every writer locks the charge journal's file; the first recovers
	// what a journaled writer left.
	if err := attachJournal(ctx, s, path, o.ChargeJournal, upto); err != nil {
		return fail(err)
	}
	return s, nil
}

type sqliteBackend struct {
	db    *sql.DB
	stmts *stmtCache // prepared statements kept across transactions and reads
	mu    sync.Mutex // in-process writers queue here, other processes on the file lock
	// wconn is the connection every write transaction runs on (mu held),
	// taken from the pool at the first write and kept. Each connection
	// has its own page cache, and one that has not seen the latest write
	// drops it at its next transaction: with the pool's choice, the
	// transactions of a batch release hopped between connections
	// (readers took the others meanwhile) and rebuilt a cache each time,
	// the pages freed, mapped and faulted again (about 4% of the 10 M
	// release's CPU in the kernel, zeroing pages for SQLite's cache).
	wconn    *sql.Conn
	readOnly bool
	onWait   func()        // OpenOptions.LockWait
	notice   time.Duration // OpenOptions.LockNotice
}

// newSQLiteBackend is the backend on db (opened by openSQLite) with o's
// read-only mode and lock-wait notice.
func newSQLiteBackend(db *sql.DB, o OpenOptions) *sqliteBackend {
	return &sqliteBackend{db: db, stmts: newStmtCache(db), readOnly: o.ReadOnly, onWait: o.LockWait, notice: o.LockNotice}
}

func sqliteTransient(err error) bool {
	var e *sqlite.Error
	if errors.As(err, &e) {
		c := e.Code() & 0xff
		return c == 5 || c == 6 // SQLITE_BUSY, SQLITE_LOCKED
	}
	return false
}

func (b *sqliteBackend) write(ctx context.Context, fn func(querier) error) error {
	if b.readOnly {
		return errReadOnly("sqlite")
	}
	// The notice covers taking the lock only (the in-process queue and
	// BEGIN IMMEDIATE, which waits up to the busy timeout for another
	// process's write lock), not the transaction's own work.
	var notice *noticeTimer
	if b.onWait != nil {
		notice = startNotice(b.notice, b.onWait)
		defer notice.stop()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return retry(ctx, sqliteTransient, func() error {
		err := b.writeTx(ctx, fn, notice)
		b.dropWriter(err)
		return err
	})
}

// writeTx runs fn in one write transaction on the writing connection
// (taken from the pool if there is none; mu held).
func (b *sqliteBackend) writeTx(ctx context.Context, fn func(querier) error, notice *noticeTimer) error {
	if b.wconn == nil {
		c, err := b.db.Conn(ctx)
		if err != nil {
			return err
		}
		b.wconn = c
	}
	tx, err := b.wconn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	if notice != nil {
		notice.stop()
	}
	q := &txQ{tx: tx, cache: b.stmts, stmts: map[string]*sql.Stmt{}}
	if err := fn(q); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit() // closes the transaction's statements (the cached ones stay prepared)
}

// dropWriter gives the writing connection back to the pool (which closes
// it if it is broken) after err, when err says the connection is unusable
// (mu held); the next write takes another.
func (b *sqliteBackend) dropWriter(err error) {
	if b.wconn != nil && (errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)) {
		b.wconn.Close()
		b.wconn = nil
	}
}

// txQ is a write transaction's querier. Each distinct statement is looked
// up once per transaction: the store's statement cache gives the one
// already prepared on the transaction's connection (Tx.StmtContext), and a
// statement the cache does not keep is prepared for the transaction only. A
// batch of charges runs the same few statements thousands of times, and
// re-parsing them dominated its cost; a transaction of one charge runs
// five, and re-parsing them in every transaction was 37% of its CPU.
type txQ struct {
	tx    *sql.Tx
	cache *stmtCache
	stmts map[string]*sql.Stmt
}

func (q *txQ) stmt(ctx context.Context, s string, nargs int) (*sql.Stmt, error) {
	if st, ok := q.stmts[s]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if e := q.cache.acquire(ctx, s, nargs); e != nil {
		st = q.tx.StmtContext(ctx, e.st) // keeps e.st's connection copy until the transaction ends
		q.cache.release(e)
	} else {
		var err error
		if st, err = q.tx.PrepareContext(ctx, s); err != nil {
			return nil, err
		}
	}
	q.stmts[s] = st
	return st, nil
}

func (q *txQ) exec(ctx context.Context, s string, args ...any) error {
	st, err := q.stmt(ctx, s, len(args))
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

func (q *txQ) queryRow(ctx context.Context, s string, args ...any) row {
	st, err := q.stmt(ctx, s, len(args))
	if err != nil {
		return errRow{err}
	}
	return sqlRow{st.QueryRowContext(ctx, args...)}
}

func (q *txQ) query(ctx context.Context, s string, args ...any) (rows, error) {
	st, err := q.stmt(ctx, s, len(args))
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

// errRow is a row whose Scan reports a preparation error.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (b *sqliteBackend) read(ctx context.Context, fn func(querier) error) error {
	return retry(ctx, sqliteTransient, func() error { return fn(readQ{b}) })
}

// readQ is read's querier: statements the cache keeps run prepared (on
// whichever pooled connection database/sql picks, prepared there once),
// others as one-off queries.
type readQ struct{ b *sqliteBackend }

func (q readQ) exec(ctx context.Context, s string, args ...any) error {
	if e := q.b.stmts.acquire(ctx, s, len(args)); e != nil {
		_, err := e.st.ExecContext(ctx, args...)
		q.b.stmts.release(e)
		return err
	}
	return sqlQ{q.b.db}.exec(ctx, s, args...)
}

func (q readQ) queryRow(ctx context.Context, s string, args ...any) row {
	if e := q.b.stmts.acquire(ctx, s, len(args)); e != nil {
		r := e.st.QueryRowContext(ctx, args...) // its rows keep e.st open
		q.b.stmts.release(e)
		return sqlRow{r}
	}
	return sqlQ{q.b.db}.queryRow(ctx, s, args...)
}

func (q readQ) query(ctx context.Context, s string, args ...any) (rows, error) {
	if e := q.b.stmts.acquire(ctx, s, len(args)); e != nil {
		r, err := e.st.QueryContext(ctx, args...)
		q.b.stmts.release(e)
		if err != nil {
			return nil, err
		}
		return sqlRows{r}, nil
	}
	return sqlQ{q.b.db}.query(ctx, s, args...)
}

// snapshot runs fn in a read transaction (BEGIN DEFERRED on a dedicated
// connection: in WAL mode every read of fn sees the same committed state).
func (b *sqliteBackend) snapshot(ctx context.Context, fn func(querier) error) error {
	return retry(ctx, sqliteTransient, func() error {
		c, err := b.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
			return err
		}
		err = fn(sqlQ{c})
		if _, rerr := c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
			err = rerr
		}
		return err
	})
}

// nextIDs: the write transaction holds the database's write lock, so the
// n IDs after the largest ever used (AUTOINCREMENT's sqlite_sequence, or
// the largest ID present if larger) are this transaction's to use.
func (b *sqliteBackend) nextIDs(ctx context.Context, q querier, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	var last int64
	err := q.queryRow(ctx, `SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'releases'), 0), COALESCE((SELECT MAX(id) FROM releases), 0))`).Scan(&last)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = last + 1 + int64(i)
	}
	return ids, nil
}

func (b *sqliteBackend) foldLock() string { return "" } // BEGIN IMMEDIATE serialises writers
func (b *sqliteBackend) name() string     { return "sqlite" }

func (b *sqliteBackend) close() error {
	b.mu.Lock()
	if b.wconn != nil {
		b.wconn.Close()
		b.wconn = nil
	}
	b.mu.Unlock()
	b.stmts.close()
	return b.db.Close()
}

type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type sqlQ struct{ c sqlConn }

func (q sqlQ) exec(ctx context.Context, s string, args ...any) error {
	_, err := q.c.ExecContext(ctx, s, args...)
	return err
}

func (q sqlQ) queryRow(ctx context.Context, s string, args ...any) row {
	return sqlRow{q.c.QueryRowContext(ctx, s, args...)}
}

func (q sqlQ) query(ctx context.Context, s string, args ...any) (rows, error) {
	r, err := q.c.QueryContext(ctx, s, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// noticeTimer calls fn after a delay unless stopped first. stop waits for
// a call already started to return, so whatever fn wrote happens before
// stop returns (the caller's later writes and reads are ordered after it).
type noticeTimer struct {
	t    *time.Timer
	done chan struct{}
	once sync.Once
}

func startNotice(d time.Duration, fn func()) *noticeTimer {
	n := &noticeTimer{done: make(chan struct{})}
	n.t = time.AfterFunc(d, func() {
		defer close(n.done)
		fn()
	})
	return n
}

func (n *noticeTimer) stop() {
	n.once.Do(func() {
		if !n.t.Stop() {
			<-n.done
		}
	})
}
