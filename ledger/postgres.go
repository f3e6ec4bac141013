package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgMaxConns bounds the connections one Store opens to PostgreSQL, unless
// the store name sets pgxpool's pool_max_conns.
const pgMaxConns = 8

// migrationLock is the advisory lock key that serialises concurrent
// migrators (several replicas starting at once).
const migrationLock = "SELECT pg_advisory_xact_lock(7302551903)"

// OpenPostgres opens (migrating when needed) the PostgreSQL store at dsn, a
// pgx connection string such as postgres://user@host:5432/db?sslmode=disable
// (unknown query parameters such as search_path are sent to the server as
// run-time parameters).
//
// Every write runs in a READ COMMITTED transaction that first locks the
// spend rows of the users it charges (SELECT ... FOR UPDATE, in sorted
// order), so the budget check always reads the latest committed totals and
// concurrent charges of one user, from any number of processes or replicas,
// are serialised; charges never touch the exposure rows (Exposure folds
// releases into them under an advisory lock), so transactions cannot
// deadlock. Serialization failures and
// deadlocks (SQLSTATE 40001, 40P01) are retried. Each transaction sets
// synchronous_commit=on, so a charge is durable (WAL flushed) when it
// returns whatever the server's default.
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	s, err := openPostgres(ctx, dsn, LatestSchema, OpenOptions{Create: true, LockNotice: time.Second})
	if err != nil {
		return nil, scrub(dsn, err)
	}
	return s, nil
}

func openPostgres(ctx context.Context, dsn string, upto int, o OpenOptions) (*sqlStore, error) {
	cfg, err := pgPoolConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: postgres store %s: %w", Redact(dsn), err)
	}
	if o.ReadOnly {
		// Every statement of every connection runs in a read-only
		// transaction: the server itself refuses writes.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	b, err := newPGBackend(ctx, cfg, o)
	if err != nil {
		return nil, fmt.Errorf("ledger: postgres store %s: %w", Redact(dsn), err)
	}
	fail := func(err error) (*sqlStore, error) {
		b.close()
		if errors.Is(err, ErrSchemaTooNew) {
			return nil, fmt.Errorf("%w (database %s)", err, Redact(dsn))
		}
		return nil, fmt.Errorf("ledger: postgres store %s: %w", Redact(dsn), err)
	}
	if o.ReadOnly {
		if err := b.snapshot(ctx, func(q querier) error { return checkReadable(ctx, q, "postgres", "PostgreSQL database") }); err != nil {
			return fail(err)
		}
		return &sqlStore{b: b, now: time.Now, readOnly: true}, nil
	}
	if err := migrate(ctx, b, upto, migrationLock, o.Create); err != nil {
		return fail(err)
	}
	return &sqlStore{b: b, now: time.Now}, nil
}

// pgPoolConfig parses dsn (pgx syntax, plus pgxpool's pool_* parameters)
// into a pool of at most pgMaxConns connections unless dsn sets
// pool_max_conns. pgx keeps each connection's prepared statements (its
// statement cache, 512 per connection by default), so a connection the
// pool hands out again runs the store's statements without parsing them.
func pgPoolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = pgMaxConns
	}
	return cfg, nil
}

// pgBackend runs the store's transactions on a pgxpool connection pool.
type pgBackend struct {
	pool   *pgxpool.Pool
	closed atomic.Bool

	readOnly bool
	onWait   func()        // OpenOptions.LockWait
	notice   time.Duration // OpenOptions.LockNotice
}

// newPGBackend creates the pool (connecting lazily: the first transaction
// connects) with o's read-only mode and lock-wait notice.
func newPGBackend(ctx context.Context, cfg *pgxpool.Config, o OpenOptions) (*pgBackend, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgBackend{pool: pool, readOnly: o.ReadOnly, onWait: o.LockWait, notice: o.LockNotice}, nil
}

// errLockNotice marks a write attempt stopped by the notice's lock_timeout:
// the notice has been given and the transaction is retried without it.
var errLockNotice = errors.New("ledger: lock wait notice")

var errStoreClosed = errors.New("ledger: store is closed")

func (b *pgBackend) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if b.closed.Load() {
		return nil, errStoreClosed
	}
	c, err := b.pool.Acquire(ctx)
	if err != nil && b.closed.Load() {
		return nil, errStoreClosed
	}
	return c, err
}

// release gives c back to the pool, or closes it when it may be unusable
// (a failed rollback, a read cut off by its context). The pool itself also
// drops a connection that is closed, busy or still in a transaction.
func (b *pgBackend) release(c *pgxpool.Conn, healthy bool) {
	if healthy {
		c.Release()
		return
	}
	conn := c.Hijack() // out of the pool, then closed
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	conn.Close(ctx)
	cancel()
}

func pgTransient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return pgconn.SafeToRetry(err)
}

func (b *pgBackend) write(ctx context.Context, fn func(querier) error) error {
	if b.readOnly {
		return errReadOnly("postgres")
	}
	// The lock-wait notice: the first attempt runs with lock_timeout set to
	// the notice delay; when a lock wait hits it (SQLSTATE 55P03), the
	// notice is given and the transaction is retried with the server's
	// lock_timeout, waiting as long as it would have.
	armed := b.onWait != nil
	transient := func(err error) bool { return errors.Is(err, errLockNotice) || pgTransient(err) }
	return retry(ctx, transient, func() error {
		c, err := b.acquire(ctx)
		if err != nil {
			return err
		}
		healthy := false
		defer func() { b.release(c, healthy) }()
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = on"); err != nil {
			tx.Rollback(ctx)
			return err
		}
		if armed {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(1, b.notice.Milliseconds()))); err != nil {
				tx.Rollback(ctx)
				return err
			}
		}
		if err := fn(pgQ{tx}); err != nil {
			healthy = tx.Rollback(ctx) == nil
			var pe *pgconn.PgError
			if armed && errors.As(err, &pe) && pe.Code == "55P03" {
				armed = false
				b.onWait()
				return errLockNotice
			}
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		healthy = true
		return nil
	})
}

func (b *pgBackend) read(ctx context.Context, fn func(querier) error) error {
	return retry(ctx, pgTransient, func() error {
		c, err := b.acquire(ctx)
		if err != nil {
			return err
		}
		err = fn(pgQ{c})
		b.release(c, err == nil || ctx.Err() == nil)
		return err
	})
}

// snapshot runs fn in a REPEATABLE READ, READ ONLY transaction: every read
// of fn sees the same snapshot.
func (b *pgBackend) snapshot(ctx context.Context, fn func(querier) error) error {
	return retry(ctx, pgTransient, func() error {
		c, err := b.acquire(ctx)
		if err != nil {
			return err
		}
		healthy := false
		defer func() { b.release(c, healthy) }()
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		err = fn(pgQ{tx})
		healthy = tx.Rollback(ctx) == nil
		return err
	})
}

// nextIDs draws n values from the releases' identity sequence: unique and
// never reused, though not contiguous when transactions run concurrently.
func (b *pgBackend) nextIDs(ctx context.Context, q querier, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	rs, err := q.query(ctx, "SELECT nextval(pg_get_serial_sequence('releases', 'id')) FROM generate_series(1, ?)", n)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	ids := make([]int64, 0, n)
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if len(ids) != n {
		return nil, fmt.Errorf("ledger: asked for %d release IDs, got %d", n, len(ids))
	}
	return ids, nil
}

// foldLock is a transaction-scoped advisory lock: folds from any number of
// connections and replicas run one at a time.
func (b *pgBackend) foldLock() string { return "SELECT pg_advisory_xact_lock(7302551904)" }
func (b *pgBackend) name() string     { return "postgres" }

// close closes the pool: it refuses new transactions at once, and waits
// for the connections in use to be given back before closing them.
func (b *pgBackend) close() error {
	b.closed.Store(true)
	b.pool.Close()
	return nil
}

type pgConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pgQ struct{ c pgConn }

// rebind turns SQLite's placeholders into PostgreSQL's: a numbered one ?N
// into $N, a plain ? into $M with M one more than the largest number so far,
// as SQLite numbers it (execRows puts ?1 .. ?S before any plain one; the
// shared SQL has no literal '?').
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var sb strings.Builder
	sb.Grow(len(q) + len(q)/8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			sb.WriteByte(q[i])
			continue
		}
		sb.WriteByte('$')
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		if j > i+1 { // ?N
			k, _ := strconv.Atoi(q[i+1 : j])
			n = max(n, k)
			sb.WriteString(q[i+1 : j])
			i = j - 1
			continue
		}
		n++
		sb.WriteString(strconv.Itoa(n))
	}
	return sb.String()
}

func (q pgQ) exec(ctx context.Context, s string, args ...any) error {
	_, err := q.c.Exec(ctx, rebind(s), args...)
	return err
}

func (q pgQ) queryRow(ctx context.Context, s string, args ...any) row {
	return pgRow{q.c.QueryRow(ctx, rebind(s), args...)}
}

func (q pgQ) query(ctx context.Context, s string, args ...any) (rows, error) {
	return q.c.Query(ctx, rebind(s), args...)
}

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}
