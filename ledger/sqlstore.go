package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp/privunit"
)

// The two stores share all SQL below; a backend supplies transactions and
// the few dialect differences. Queries use '?' placeholders (rewritten to $n
// for PostgreSQL) and contain no literal '?'.

var errNoRows = errors.New("ledger: no rows")

type row interface{ Scan(dest ...any) error }

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type querier interface {
	exec(ctx context.Context, q string, args ...any) error
	// queryRow's Scan returns errNoRows when there is no row.
	queryRow(ctx context.Context, q string, args ...any) row
	query(ctx context.Context, q string, args ...any) (rows, error)
}

type backend interface {
	// write runs fn in one write transaction, retrying the whole of fn on
	// transient conflicts (fn must therefore be restartable); it returns
	// after a durable commit.
	write(ctx context.Context, fn func(querier) error) error
	// read runs fn with a querier for reading (no transaction needed).
	read(ctx context.Context, fn func(querier) error) error
	// snapshot runs fn in a read-only transaction: all of fn's reads see
	// one committed state (Verify, read-only Exposure).
	snapshot(ctx context.Context, fn func(querier) error) error
	// foldLock is the statement that serialises exposure folds inside a
	// write transaction ("" when write transactions are serialised anyway).
	foldLock() string
	// nextIDs reserves n new release IDs inside the write transaction q:
	// each larger than every ID recorded or reserved before, never reused.
	nextIDs(ctx context.Context, q querier, n int) ([]int64, error)
	// name is "sqlite" or "postgres", for migrations and messages.
	name() string
	close() error
}

// sqlStore is the one Store type: both backends, every part.
var (
	_ Store      = (*sqlStore)(nil)
	_ IdemFinder = (*sqlStore)(nil)
	_ UserMarker = (*sqlStore)(nil)
)

type sqlStore struct {
	b        backend
	now      func() time.Time
	readOnly bool // OpenOptions.ReadOnly: writes fail, Exposure folds in memory
	// schema is the schema the store was opened at (openAt: tests open
	// older stores, without the later columns; their releases are
	// party-unit); 0 or LatestSchema otherwise.
	schema schemaLevel
	// labels caches the committed influencer label ids (schema 8).
	labels labelCache
	// preloaded: the label ids and block digests have been read into
	// labels (sqlStore.preload), under preloadMu.
	preloaded atomic.Bool
	preloadMu sync.Mutex
	// j is the charge journal (OpenOptions.ChargeJournal), nil without;
	// lock the shared lock on the journal file a writer without it holds
	// (SQLite, schema 12 on).
	j    *journal
	lock *os.File
	// path is the SQLite file of a read-only store (JournalState).
	path string
}

// flush applies the charge journal's pending records (when there is a
// journal): reads of releases and totals call it first.
func (s *sqlStore) flush(ctx context.Context) error {
	if s.j == nil {
		return nil
	}
	return s.j.apply(ctx)
}

// flushFor is flush for a read of users' releases only: it applies the
// pending records when one of them holds a release of theirs (a release
// makes its user's totals change, so a user without pending totals has
// every release in the tables).
func (s *sqlStore) flushFor(ctx context.Context, users ...string) error {
	if s.j == nil || !s.j.pendingFor(users) {
		return nil
	}
	return s.j.apply(ctx)
}

// timeFormat is fixed width so that stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("ledger: stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

const releaseCols = releaseColsNoUnit + ", unit, " + partyCostCol + ", infl_ids"

func scanRelease(r row) (Release, error) { return scanReleaseFor(r, 0) }

// scanReleaseFor scans releaseColsFor(v). A release whose influencers are
// stored encoded (schema 8) comes back with them in rel.inflIDs: the caller
// resolves them with resolveReleases once its rows are closed.
func scanReleaseFor(r row, v schemaLevel) (Release, error) {
	var rel Release
	var list, infl, created string
	unit := "party"
	var seeded int64
	partyCost := -2.0 // not stored: Cost for party-unit releases
	dest := []any{&rel.ID, &rel.User, &rel.Model, &rel.K, &list, &rel.EpsP, &rel.Cost, &rel.Rho, &seeded, &rel.IdemKey, &created, &infl}
	if v.hasUnit() {
		dest = append(dest, &unit)
	}
	if v.hasParty() {
		dest = append(dest, &partyCost)
	}
	var inflIDs []byte
	if v.hasLabels() {
		dest = append(dest, &inflIDs)
	}
	if err := r.Scan(dest...); err != nil {
		return rel, err
	}
	u, err := parseUnitCol(unit)
	if err != nil {
		return rel, fmt.Errorf("ledger: release %d: %w", rel.ID, err)
	}
	rel.Unit = u
	switch {
	case partyCost >= 0 || partyCost == -1:
		rel.PartyCost = partyCostOf(partyCost)
	case u == privunit.Party:
		rel.PartyCost = rel.Cost
	default:
		rel.PartyCost = Unbounded
	}
	rel.Seeded = seeded != 0
	if err := json.Unmarshal([]byte(list), &rel.List); err != nil {
		return rel, fmt.Errorf("ledger: release %d: stored list: %w", rel.ID, err)
	}
	if inflIDs != nil {
		rel.inflIDs = slices.Clone(inflIDs) // the driver may reuse its buffer
	} else if err := json.Unmarshal([]byte(infl), &rel.Influencers); err != nil {
		return rel, fmt.Errorf("ledger: release %d: stored influencers: %w", rel.ID, err)
	}
	if rel.List == nil {
		rel.List = []string{}
	}
	if rel.Influencers == nil {
		rel.Influencers = []string{}
	}
	t, err := parseTime(created)
	if err != nil {
		return rel, err
	}
	rel.Time = t
	return rel, nil
}

// SchemaVersion reads the store's schema version. With the charge journal
// it also fails while the journal cannot charge or apply (a health check:
// serve's /readyz calls it).
func (s *sqlStore) SchemaVersion(ctx context.Context) (int, error) {
	if s.j != nil {
		if err := s.j.health(); err != nil {
			return 0, err
		}
	}
	var v int
	err := s.b.read(ctx, func(q querier) error {
		var err error
		v, err = schemaVersion(ctx, q)
		return err
	})
	return v, err
}

// Close applies and empties the charge journal (when there is one),
// releases the journal's lock and closes the connections.
func (s *sqlStore) Close() error {
	var err error
	if s.j != nil {
		err = s.j.close()
	}
	if s.lock != nil {
		s.lock.Close()
	}
	if cerr := s.b.close(); err == nil {
		err = cerr
	}
	return err
}

// retry runs attempt until it succeeds, fails with a non-transient error,
// the context ends or the attempts run out. Transient errors are ones after
// which the transaction is known to have been rolled back.
func retry(ctx context.Context, transient func(error) bool, attempt func() error) error {
	const maxAttempts = 100
	delay := time.Millisecond
	for i := 0; ; i++ {
		err := attempt()
		if err == nil || !transient(err) {
			return err
		}
		if i+1 == maxAttempts {
			return fmt.Errorf("ledger: giving up after %d attempts: %w", maxAttempts, err)
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("ledger: %w (last attempt: %v)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}
