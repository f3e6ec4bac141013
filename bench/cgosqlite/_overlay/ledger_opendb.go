// This file is not part of package ledger in the repository: bench/cgosqlite
// adds it to the ledger package at build time with the go command's -overlay
// flag (see overlay.json), so that the benchmark can run the real ledger
// code on a *sql.DB of another SQLite driver without an exported hook in the
// ledger itself. It uses the same unexported pieces as openSQLite.

package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// OpenSQLiteDBForBench is the SQLite store on db, a pool opened by the
// caller on an SQLite file with the settings openSQLite gives its own pool
// (WAL, synchronous, busy timeout, cache size, BEGIN IMMEDIATE for
// transactions). The schema is created or migrated as openSQLite does.
// Benchmarks only: transient-error retries recognise modernc's error type
// only, so another driver's SQLITE_BUSY is not retried.
func OpenSQLiteDBForBench(ctx context.Context, db *sql.DB) (Store, error) {
	b := newSQLiteBackend(db, OpenOptions{Create: true, LockNotice: time.Second})
	var jm string
	if err := b.read(ctx, func(q querier) error { return q.queryRow(ctx, "PRAGMA journal_mode = WAL").Scan(&jm) }); err != nil {
		b.close()
		return nil, err
	}
	if !strings.EqualFold(jm, "wal") {
		b.close()
		return nil, fmt.Errorf("journal mode is %q, not WAL", jm)
	}
	if err := migrate(ctx, b, LatestSchema, "", true); err != nil {
		b.close()
		return nil, err
	}
	return &sqlStore{b: b, now: time.Now}, nil
}
