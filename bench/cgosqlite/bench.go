package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/ledger/ledgerbench"

	_ "github.com/mattn/go-sqlite3" // "sqlite3": C SQLite through cgo
	_ "modernc.org/sqlite"          // "sqlite": SQLite translated to Go (the ledger's driver)
)

// The two drivers compared.
const (
	Modernc = "modernc" // modernc.org/sqlite, pure Go: what the ledger uses
	Mattn   = "mattn"   // github.com/mattn/go-sqlite3, cgo
)

// The two write paths compared on each driver.
const (
	PathLedger = "ledger" // ledger.Store.ChargeBatch through ledgerbench.Run: what dplp bench charge times
	PathRaw    = "raw"    // plain multi-row INSERTs of the same rows, in the same transactions
	// PathSQL runs the ledger's statements (ledger/charge.go chargeTx) on
	// prebuilt rows, without the ledger's Go-side work: the spend rows
	// created or touched by an upsert with RETURNING, the idempotency
	// lookup, the ID reservation, the release inserts and the spend upsert.
	PathSQL = "sql"
	// PathLean is a proposed SQLite charge transaction: the spend rows read
	// by a plain SELECT (BEGIN IMMEDIATE already holds the write lock), the
	// idempotency lookup only for users who have releases, then the same
	// ID reservation, release inserts and spend upsert.
	PathLean = "lean"
)

// Options of one run: what dplp bench charge takes (the label order only,
// no influencers: the configuration of README's scale figures,
// --track-exposure=false).
type Options struct {
	Users, K, Batch int
	Seed            uint64
}

// Run is one measured run.
type Run struct {
	Driver, Path string
	Users        int
	Seconds      float64 // wall time of the timed transactions
	CPUSeconds   float64 // process user+system CPU over the same span
	PerSecond    float64 // charges (rows) per second
	FileBytes    int64   // database + WAL after the run
}

// sqlitePragmas are the ledger's connection settings (ledger/sqlite.go):
// WAL (set in the file when the ledger creates it), synchronous=FULL, a
// 10 s busy timeout, 64 MiB of page cache, BEGIN IMMEDIATE for every write
// transaction.
func dsn(driver, path string) (name, dsn string) {
	uri := "file:" + strings.ReplaceAll(path, "%", "%25")
	switch driver {
	case Modernc:
		return "sqlite", uri + "?mode=rw&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_pragma=cache_size(-65536)&_pragma=journal_mode(WAL)&_txlock=immediate"
	case Mattn:
		return "sqlite3", uri + "?mode=rw&_busy_timeout=10000&_synchronous=FULL&_cache_size=-65536&_journal_mode=WAL&_txlock=immediate"
	}
	panic("unknown driver " + driver)
}

// openDB opens path (an existing ledger file) through driver with the
// ledger's settings.
func openDB(ctx context.Context, driver, path string) (*sql.DB, error) {
	name, d := dsn(driver, path)
	db, err := sql.Open(name, d)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Settings reports the SQLite version and the settings a connection of db
// runs with, to show that both drivers run the same configuration.
func Settings(ctx context.Context, db *sql.DB) (string, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var parts []string
	for _, q := range []string{"sqlite_version()", "PRAGMA journal_mode", "PRAGMA synchronous", "PRAGMA cache_size", "PRAGMA page_size", "PRAGMA wal_autocheckpoint"} {
		var v string
		sel := q
		if !strings.HasPrefix(q, "PRAGMA") {
			sel = "SELECT " + q
		}
		if err := c.QueryRowContext(ctx, sel).Scan(&v); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		parts = append(parts, strings.TrimPrefix(q, "PRAGMA ")+"="+v)
	}
	return strings.Join(parts, " "), nil
}

// newLedgerFile creates an empty ledger at path with the ledger's own code
// (every migration, WAL), so both paths and both drivers write into exactly
// the ledger's schema, and nothing here restates it.
func newLedgerFile(ctx context.Context, path string) error {
	for _, suf := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suf); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	st, err := ledger.OpenSQLite(ctx, path, ledger.SQLiteOptions{})
	if err != nil {
		return err
	}
	return st.Close()
}

// openLedger opens the real ledger.Store on path through driver.
func openLedger(ctx context.Context, driver, path string) (ledger.Store, error) {
	switch driver {
	case Modernc:
		return ledger.OpenWith(ctx, "sqlite:"+path, ledger.OpenOptions{})
	case Mattn:
		return openLedgerMattn(ctx, path) // overlay build only (ledger_mattn.go)
	}
	return nil, fmt.Errorf("unknown driver %q", driver)
}

// cpuStore adds up the process CPU time spent inside ChargeBatch, the
// calls ledgerbench.Run times (building its synthetic lists is not timed).
type cpuStore struct {
	ledger.BudgetStore
	cpu time.Duration
}

func (s *cpuStore) ChargeBatch(ctx context.Context, rs []ledger.Release, cap ledger.Cap) ([]ledger.ChargeResult, error) {
	c0 := cpuNow()
	res, err := s.BudgetStore.ChargeBatch(ctx, rs, cap)
	s.cpu += cpuNow() - c0
	return res, err
}

// cpuNow is the process's user+system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fileBytes(path string) int64 {
	var n int64
	for _, suf := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suf); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// RunOne creates a new ledger file in dir, fills it through driver and
// path (Fill) and removes it.
func RunOne(ctx context.Context, dir, driver, path string, opt Options) (Run, error) {
	file := filepath.Join(dir, fmt.Sprintf("%s-%s.db", path, driver))
	defer func() {
		for _, suf := range []string{"", "-wal", "-shm"} {
			os.Remove(file + suf)
		}
	}()
	return Fill(ctx, file, driver, path, opt)
}

// Fill creates a new ledger file (replacing file) and fills it through
// driver and path, timing what dplp bench charge times (the ledger path) or
// the transactions of plain inserts (the raw path).
func Fill(ctx context.Context, file, driver, path string, opt Options) (Run, error) {
	if err := newLedgerFile(ctx, file); err != nil {
		return Run{}, err
	}
	run := Run{Driver: driver, Path: path, Users: opt.Users}
	switch path {
	case PathLedger:
		st, err := openLedger(ctx, driver, file)
		if err != nil {
			return run, err
		}
		cs := &cpuStore{BudgetStore: st}
		res, err := ledgerbench.Run(ctx, cs, ledgerbench.Options{N: opt.Users, K: opt.K, Batch: opt.Batch, Order: ledgerbench.OrderLabel, Seed: opt.Seed})
		run.CPUSeconds = cs.cpu.Seconds()
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return run, err
		}
		if res.Charged != opt.Users {
			return run, fmt.Errorf("ledger path charged %d of %d users", res.Charged, opt.Users)
		}
		run.Seconds = res.Seconds
	case PathRaw, PathSQL, PathLean:
		db, err := openDB(ctx, driver, file)
		if err != nil {
			return run, err
		}
		secs, cpu, err := rawRun(ctx, db, opt, path, time.Now)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return run, err
		}
		run.Seconds, run.CPUSeconds = secs, cpu
	default:
		return run, fmt.Errorf("unknown path %q", path)
	}
	run.PerSecond = float64(opt.Users) / run.Seconds
	run.FileBytes = fileBytes(file)
	return run, nil
}

// The columns the ledger writes (ledger/charge.go insertReleases and
// writeSpends, schema 8).
const (
	releaseCols = "id, user_id, model, k, list, eps_p, cost, rho, seeded, idem_key, created, influencers, folded, unit, party_cost, infl_ids"
	releaseN    = 16
	spendCols   = "user_id, spent, rho, releases, seeded, party_spent, party_unbounded"
	spendN      = 7
	chunkParams = 500 // the ledger's chargeChunk: parameters per multi-row statement
)

// rawBatch is one transaction's rows, built before the clock starts.
type rawBatch struct {
	releases [][]any // releaseN values each
	spends   [][]any // spendN values each
}

// rawBatches builds the rows ledgerbench.Run makes the ledger write, in the
// same transactions: the same synthetic lists (ledgerbench's generator and
// label order, no influencers), the same JSON list text, model, idempotency
// key, costs, unit, party cost, encoded empty influence set (one zero byte)
// and release IDs. created is stamped per transaction, as ChargeBatch does.
func rawBatches(opt Options) [][]*rawRow {
	labels := make([]string, opt.Users)
	for i := range labels {
		labels[i] = strconv.Itoa(i)
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x6c656467)) // ledgerbench's stream
	slices.Sort(labels)                              // ledgerbench.OrderLabel
	var out [][]*rawRow
	for lo := 0; lo < opt.Users; lo += opt.Batch {
		var b []*rawRow
		for _, u := range labels[lo:min(lo+opt.Batch, opt.Users)] {
			list := make([]string, opt.K)
			for i := range list {
				list[i] = labels[r.IntN(opt.Users)]
			}
			b = append(b, &rawRow{user: u, list: list})
		}
		out = append(out, b)
	}
	return out
}

type rawRow struct {
	user string
	list []string
}

// rows turns a batch into the values of its INSERTs; firstID is the ID of
// its first release.
func (opt Options) rows(b []*rawRow, firstID int64, created string) rawBatch {
	model := fmt.Sprintf("bench:charge:k=%d", opt.K)
	idem := "sticky:" + model
	cost, rho := 0.5*float64(opt.K), 0.125*float64(opt.K)
	var rb rawBatch
	for i, r := range b {
		list, err := json.Marshal(r.list) // the ledger's jsonenc is byte-identical to encoding/json
		if err != nil {
			panic(err)
		}
		rb.releases = append(rb.releases, []any{firstID + int64(i), r.user, model, opt.K, string(list), 0.5, cost, rho, 0, idem, created, "", 1, "party", cost, []byte{0}})
		rb.spends = append(rb.spends, []any{r.user, cost, rho, int64(1), int64(0), cost, int64(0)})
	}
	return rb
}

// rawRun writes opt.Users releases and spend rows as plain multi-row
// INSERTs (as many rows per statement as the ledger puts in one: 31
// releases, 71 spend rows), one BEGIN IMMEDIATE transaction per opt.Batch
// users, statements prepared once per run. Only the transactions are timed:
// the rows, their JSON included, are built before the clock starts, so this
// is the least work that writes the same bytes through the same driver.
//
// With pattern PathSQL or PathLean the transaction runs the ledger's
// statements, or the proposed leaner ones, around the same inserts (see
// their constants); the spend rows are then written with the ledger's
// upsert.
func rawRun(ctx context.Context, db *sql.DB, opt Options, pattern string, now func() time.Time) (secs, cpuSecs float64, err error) {
	batches := rawBatches(opt)
	stmts := map[string]*sql.Stmt{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	prep := func(q string) (*sql.Stmt, error) {
		if s, ok := stmts[q]; ok {
			return s, nil
		}
		s, err := db.PrepareContext(ctx, q)
		if err != nil {
			return nil, err
		}
		stmts[q] = s
		return s, nil
	}
	var elapsed, cpu time.Duration
	id := int64(1)
	for _, b := range batches {
		rb := opt.rows(b, id, now().UTC().Format("2006-01-02T15:04:05.000000000Z"))
		id += int64(len(b))
		c0, t0 := cpuNow(), time.Now()
		tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
		if err != nil {
			return 0, 0, err
		}
		txStmts := map[*sql.Stmt]*sql.Stmt{} // the transaction's copies, as the ledger's txQ keeps them
		txPrep := func(q string) (*sql.Stmt, error) {
			s, err := prep(q)
			if err != nil {
				return nil, err
			}
			if t, ok := txStmts[s]; ok {
				return t, nil
			}
			t := tx.StmtContext(ctx, s)
			txStmts[s] = t
			return t, nil
		}
		if pattern == PathRaw {
			err = insertRows(ctx, txPrep, "INSERT INTO spend ("+spendCols+") VALUES ", "", spendN, rb.spends)
		} else {
			err = ledgerPattern(ctx, txPrep, pattern, opt, b, rb)
		}
		if err == nil {
			err = insertRows(ctx, txPrep, "INSERT INTO releases ("+releaseCols+") VALUES ", "", releaseN, rb.releases)
		}
		if err == nil && pattern != PathRaw {
			err = insertRows(ctx, txPrep, "INSERT INTO spend ("+spendCols+") VALUES ", spendUpsert, spendN, rb.spends)
		}
		if err != nil {
			tx.Rollback()
			return 0, 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, 0, err
		}
		elapsed += time.Since(t0)
		cpu += cpuNow() - c0
	}
	return elapsed.Seconds(), cpu.Seconds(), nil
}

// spendUpsert is the ledger's tail of the spend write (writeSpends).
const spendUpsert = " ON CONFLICT (user_id) DO UPDATE SET spent = excluded.spent, rho = excluded.rho, releases = excluded.releases, seeded = excluded.seeded, party_spent = excluded.party_spent, party_unbounded = excluded.party_unbounded"

// ledgerPattern runs, before the inserts, the reads of the ledger's charge
// transaction (PathSQL) or of the proposed one (PathLean) for batch b, and
// checks that every user is new (the benchmark's ledger starts empty).
func ledgerPattern(ctx context.Context, prep func(string) (*sql.Stmt, error), pattern string, opt Options, b []*rawRow, rb rawBatch) error {
	users := make([]any, len(b))
	for i, r := range b {
		users[i] = r.user
	}
	inList := func(n int) string { return "(?" + strings.Repeat(", ?", n-1) + ")" }
	withReleases := 0
	for lo := 0; lo < len(users); lo += chunkParams {
		part := users[lo:min(lo+chunkParams, len(users))]
		var q string
		if pattern == PathSQL { // lockSpends
			q = "INSERT INTO spend (user_id) VALUES (?)" + strings.Repeat(", (?)", len(part)-1) +
				" ON CONFLICT (user_id) DO UPDATE SET user_id = excluded.user_id RETURNING user_id, spent, rho, releases, seeded, party_spent, party_unbounded"
		} else {
			q = "SELECT user_id, spent, rho, releases, seeded, party_spent, party_unbounded FROM spend WHERE user_id IN " + inList(len(part))
		}
		n, err := scanCount(ctx, prep, q, part, func(releases int64) {
			if releases > 0 {
				withReleases++
			}
		})
		if err != nil {
			return err
		}
		if pattern == PathSQL && n != len(part) {
			return fmt.Errorf("spend upsert returned %d rows for %d users", n, len(part))
		}
	}
	if withReleases > 0 {
		return fmt.Errorf("%d users already have releases: the ledger file is not new", withReleases)
	}
	if pattern == PathSQL { // lookupIdem (PathLean: no user has releases, so no key to look up)
		model := fmt.Sprintf("bench:charge:k=%d", opt.K)
		for lo := 0; lo < len(users); lo += chunkParams {
			part := users[lo:min(lo+chunkParams, len(users))]
			args := append([]any{"sticky:" + model, 0}, part...)
			q := "SELECT id, user_id, model, k, list, eps_p, cost, rho, seeded, COALESCE(idem_key, ''), created, influencers, unit, COALESCE(party_cost, -1), infl_ids FROM releases WHERE idem_key = ? AND seeded = ? AND user_id IN " + inList(len(part))
			if n, err := scanCount(ctx, prep, q, args, nil); err != nil {
				return err
			} else if n > 0 {
				return fmt.Errorf("%d releases hold the key: the ledger file is not new", n)
			}
		}
	}
	// nextIDs
	st, err := prep(`SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'releases'), 0), COALESCE((SELECT MAX(id) FROM releases), 0))`)
	if err != nil {
		return err
	}
	var last int64
	if err := st.QueryRowContext(ctx).Scan(&last); err != nil {
		return err
	}
	if want := rb.releases[0][0].(int64) - 1; last != want {
		return fmt.Errorf("last release id %d, want %d", last, want)
	}
	return nil
}

// scanCount runs a query returning spend rows (seven columns; releases
// passed to fn) or release rows (fn nil) and counts them.
func scanCount(ctx context.Context, prep func(string) (*sql.Stmt, error), q string, args []any, fn func(releases int64)) (int, error) {
	st, err := prep(q)
	if err != nil {
		return 0, err
	}
	rs, err := st.QueryContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return 0, err
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	n := 0
	for rs.Next() {
		if err := rs.Scan(vals...); err != nil {
			return n, err
		}
		if fn != nil {
			r, _ := (*vals[3].(*any)).(int64)
			fn(r)
		}
		n++
	}
	return n, rs.Err()
}

func insertRows(ctx context.Context, prep func(string) (*sql.Stmt, error), head, tail string, width int, rows [][]any) error {
	tuple := "(?" + strings.Repeat(", ?", width-1) + ")"
	per := max(1, chunkParams/width)
	args := make([]any, 0, per*width)
	for lo := 0; lo < len(rows); lo += per {
		hi := min(lo+per, len(rows))
		args = args[:0]
		for _, r := range rows[lo:hi] {
			args = append(args, r...)
		}
		st, err := prep(head + tuple + strings.Repeat(", "+tuple, hi-lo-1) + tail)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
