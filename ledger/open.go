package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OpenOptions says how OpenWith opens a store. The zero value opens an
// existing ledger for reading and writing, migrating its schema when needed,
// and never creates one.
type OpenOptions struct {
	// Create creates the ledger when there is none: the SQLite file (and
	// its parent directories, mode 0700) or dplp's tables in an empty
	// PostgreSQL schema. Without it a missing file, an empty SQLite
	// database or a PostgreSQL schema without dplp's tables is an
	// ErrNoLedger error and nothing is created.
	Create bool
	// ReadOnly opens the store for reading only: SQLite with mode=ro and
	// query_only, PostgreSQL with default_transaction_read_only. Nothing is
	// migrated or written, so a user with read access only can use it; the
	// store must already be at LatestSchema (an older one is an
	// ErrSchemaOld error). Every write method returns an ErrReadOnly
	// error; Exposure adds the releases not yet folded in memory instead
	// of folding them. Create and ReadOnly together are invalid.
	ReadOnly bool
	// LockWait, when non-nil, is called (from another goroutine; it must
	// not block) when a write transaction has waited LockNotice for a lock
	// another connection or process holds: SQLite's database write lock,
	// PostgreSQL's row and advisory locks. It is called at most once per
	// write; the write keeps waiting as it would without it (SQLite: up to
	// the busy timeout, then retried).
	LockWait func()
	// LockNotice is the wait before LockWait is called; default 1s.
	LockNotice time.Duration
	// ChargeJournal makes the process the ledger's only writer and
	// charges through a journal (SQLite only, Linux): each ChargeBatch is
	// decided on in-memory totals and made durable by one append and
	// fdatasync of PATH-charges, and the records are applied to the tables
	// in large transactions in the background (and before every read of
	// releases or totals). A ChargeBatch still returns only once its
	// charge is durable. While the store is open, every other open of the
	// ledger for writing fails (ErrLedgerBusy); read-only opens see the
	// tables as last applied. See docs/LEDGER.md, "The charge journal".
	ChargeJournal bool
}

// ErrNoLedger is wrapped by OpenWith's error when the store holds no ledger
// (a missing SQLite file, an empty database) and Create is not set. Nothing
// was created.
var ErrNoLedger = errors.New("no ledger in this store")

// ErrNotLedger is wrapped by the error for a non-empty database that is not
// a dplp ledger (it has tables but not dplp's schema_migrations). The
// database is left untouched: dplp never adds its tables to a foreign one.
var ErrNotLedger = errors.New("the database is not a dplp ledger")

// ErrSchemaOld is wrapped by the error OpenWith returns with ReadOnly for a
// ledger whose schema is older than LatestSchema: opening it for writing
// (any command that writes, or dplp ledger init) migrates it.
var ErrSchemaOld = errors.New("store schema is older than this dplp")

// ErrReadOnly is wrapped by the error of every write to a store opened
// with ReadOnly.
var ErrReadOnly = errors.New("store opened read-only")

// OpenWith opens the store named by dsn (see Open for the names) as o
// says. Whatever o says, a database that has tables but is not a dplp
// ledger is refused (ErrNotLedger) and left untouched, and a store written
// by a newer dplp is refused (ErrSchemaTooNew). Errors never contain a
// password or other secret of dsn (see Redact).
func OpenWith(ctx context.Context, dsn string, o OpenOptions) (Store, error) {
	s, err := openAt(ctx, dsn, LatestSchema, o)
	if err != nil {
		return nil, scrub(dsn, err)
	}
	return s, nil
}

// DefaultStore is the store the CLI uses when --store is not given:
// "sqlite:" + an absolute path that does not depend on the working
// directory, $XDG_STATE_HOME/dplp/ledger.db, or ~/.local/state/dplp/ledger.db
// when XDG_STATE_HOME is unset or not absolute (the XDG specification says
// to ignore relative paths). It is an error when neither gives an absolute
// path.
func DefaultStore() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", fmt.Errorf("ledger: no default store: XDG_STATE_HOME is not an absolute path and the home directory is unknown (%q); name a store", home)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return "sqlite:" + filepath.Join(filepath.Clean(dir), "dplp", "ledger.db"), nil
}

// openAt is OpenWith migrating only up to schema version upto (tests).
func openAt(ctx context.Context, dsn string, upto int, o OpenOptions) (*sqlStore, error) {
	if o.Create && o.ReadOnly {
		return nil, fmt.Errorf("ledger: %w: Create and ReadOnly together", ErrInvalid)
	}
	if o.ChargeJournal && !strings.HasPrefix(dsn, "sqlite:") {
		return nil, fmt.Errorf("ledger: %w: the charge journal is for SQLite ledgers (sqlite:PATH); PostgreSQL commits every charge itself", ErrInvalid)
	}
	if o.LockNotice <= 0 {
		o.LockNotice = time.Second
	}
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "sqlite:"), "?")
		opt := SQLiteOptions{}
		if query != "" {
			for _, kv := range strings.Split(query, "&") {
				k, v, _ := strings.Cut(kv, "=")
				switch {
				case k == "synchronous" && strings.EqualFold(v, "normal"):
					opt.SyncNormal = true
				case k == "synchronous" && strings.EqualFold(v, "full"):
				case k == "charge_journal" && strings.EqualFold(v, "on"):
					o.ChargeJournal = true
				case k == "charge_journal" && strings.EqualFold(v, "off"):
					o.ChargeJournal = false
				default:
					return nil, fmt.Errorf("ledger: %w: unknown sqlite option %q in %q (known: synchronous=full|normal, charge_journal=on|off)", ErrInvalid, Redact(kv), Redact(dsn))
				}
			}
		}
		if o.ChargeJournal && o.ReadOnly {
			// A read-only command may be given the service's store name.
			o.ChargeJournal = false
		}
		return atSchema(upto)(openSQLite(ctx, path, opt, upto, o))
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return atSchema(upto)(openPostgres(ctx, dsn, upto, o))
	case dsn == "":
		return nil, fmt.Errorf("ledger: %w: empty store name; use sqlite:PATH or postgres://user@host/db", ErrInvalid)
	default:
		return nil, fmt.Errorf("ledger: %w: unknown store %q; use sqlite:PATH or postgres://user@host/db (postgresql:// also accepted)", ErrInvalid, Redact(dsn))
	}
}

// storeKind is what a database holds, as classify finds it.
type storeKind int

const (
	kindEmpty   storeKind = iota // no tables: a ledger may be created
	kindLedger                   // dplp's schema_migrations table
	kindForeign                  // tables, but not dplp's
)

// classify inspects the database q reads (the current schema for
// PostgreSQL) without writing: empty, a dplp ledger, or foreign (then
// detail names what was found). A dplp ledger has a schema_migrations table
// with dplp's columns whose version 1, when recorded, has dplp's
// description (other tools also call a table schema_migrations).
func classify(ctx context.Context, q querier, dialect string) (storeKind, string, error) {
	tablesSQL := "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
	colsSQL := "SELECT name FROM pragma_table_info('schema_migrations')"
	if dialect == "postgres" {
		tablesSQL = `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`
		colsSQL = `SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname = 'schema_migrations' AND a.attnum > 0 AND NOT a.attisdropped`
	}
	tables, err := queryStrings(ctx, q, tablesSQL)
	if err != nil {
		return 0, "", fmt.Errorf("listing tables: %w", err)
	}
	if len(tables) == 0 {
		return kindEmpty, "", nil
	}
	slices.Sort(tables)
	found := strings.Join(tables[:min(len(tables), 5)], ", ")
	if len(tables) > 5 {
		found += fmt.Sprintf(" and %d more", len(tables)-5)
	}
	if !slices.Contains(tables, "schema_migrations") {
		return kindForeign, fmt.Sprintf("it has tables (%s) but no schema_migrations table", found), nil
	}
	cols, err := queryStrings(ctx, q, colsSQL)
	if err != nil {
		return 0, "", fmt.Errorf("reading schema_migrations' columns: %w", err)
	}
	for _, c := range []string{"version", "description", "applied_at"} {
		if !slices.Contains(cols, c) {
			return kindForeign, fmt.Sprintf("its schema_migrations table has no %s column (another tool's?)", c), nil
		}
	}
	var desc string
	err = q.queryRow(ctx, "SELECT description FROM schema_migrations WHERE version = 1").Scan(&desc)
	switch {
	case errors.Is(err, errNoRows):
	case err != nil:
		return 0, "", fmt.Errorf("reading schema_migrations: %w", err)
	case desc != migrations[0].description:
		return kindForeign, fmt.Sprintf("its schema_migrations version 1 is %q, not dplp's", desc), nil
	}
	return kindLedger, "", nil
}

// queryStrings returns the first column of every row of query.
func queryStrings(ctx context.Context, q querier, query string) ([]string, error) {
	rs, err := q.query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rs.Err()
}

// checkReadable is the read-only open's check of the store q reads: a dplp
// ledger at exactly LatestSchema. what names the store in messages.
func checkReadable(ctx context.Context, q querier, dialect, what string) error {
	kind, detail, err := classify(ctx, q, dialect)
	if err != nil {
		return err
	}
	switch kind {
	case kindEmpty:
		return fmt.Errorf("%w (the database has no tables; nothing was created)", ErrNoLedger)
	case kindForeign:
		return fmt.Errorf("%w: %s; it was left untouched", ErrNotLedger, detail)
	}
	v, err := schemaVersion(ctx, q)
	if err != nil {
		return err
	}
	switch {
	case v > LatestSchema:
		return fmt.Errorf("%w: the %s has schema version %d, this dplp knows versions up to %d; upgrade dplp to use this store", ErrSchemaTooNew, what, v, LatestSchema)
	case v < LatestSchema:
		return fmt.Errorf("%w: the %s has schema version %d, this dplp reads version %d; opening it for writing migrates it (dplp ledger init --store S, or any command that writes), then read it again", ErrSchemaOld, what, v, LatestSchema)
	}
	return nil
}

// errReadOnly is the error of a write to a read-only store.
func errReadOnly(dialect string) error {
	return fmt.Errorf("ledger: %w: this %s store cannot record or change anything (open it without ReadOnly to write)", ErrReadOnly, dialect)
}
