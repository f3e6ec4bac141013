package ledger

// The charge journal (OpenOptions.ChargeJournal; SQLite only).
//
// Without it every ChargeBatch is one SQLite write transaction: BEGIN
// IMMEDIATE, the statements, a dozen WAL frames (the spend rows and the
// index entries of the releases land on pages all over the file) and an
// fsync, about 0.45 ms of the committer's time plus 0.04 ms per list
// (docs/SERVING.md), while the clients whose lists it holds wait.
//
// With it, the process that opened the store is its only writer (an
// exclusive lock on PATH-charges, which every other writer of the ledger
// takes shared for as long as it is open), and a batch is charged against
// totals held in memory: decide (the one place where a charge is decided)
// runs on the users' current totals (the store's rows plus the charges not
// yet applied to them), and the accepted releases and the users' new totals
// are appended to PATH-charges as one checksummed record with one write and
// one fdatasync. Only then does ChargeBatch return, so no list is released
// before its charge is durable, as without the journal. A background
// goroutine applies the records to the tables in large transactions (every
// journalApplyEvery, or sooner once journalApplyLists lists wait), storing
// the last applied record's sequence number in the same transaction
// (charge_journal.applied_seq, schema 12). Every read of releases or
// totals first applies what is pending (Users, Exposure, SpendByUnit,
// Verify; Latest, LatestBatch and FindIdem when a pending record holds a
// release of one of their users), so it sees every acknowledged charge;
// Budget answers from memory.
//
// Recovery. Whoever opens the ledger for writing next (with or without the
// journal) takes the lock exclusively first and applies every record after
// applied_seq before anything else, then empties the file. Records carry
// absolute totals, so applying is idempotent with respect to the tables'
// state at applied_seq. A record cut short by a crash (the last one, never
// acknowledged) is dropped; a damaged record followed by a good one, a
// record that does not decode, or a gap in the sequence numbers is refused
// with the file and offset and the ledger left untouched (readRecords).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// journalSchema is the schema version that added charge_journal.
const journalSchema = 12

func (v schemaLevel) hasJournalTable() bool { return v == 0 || int(v) >= journalSchema }

// journalMigration is migration 12.
var journalMigration = []string{
	`CREATE TABLE charge_journal (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		applied_seq BIGINT NOT NULL CHECK (applied_seq >= 0)
	)`,
}

// JournalSuffix is appended to an SQLite ledger's path to name its charge
// journal, which is also the file every writer of the ledger locks.
const JournalSuffix = "-charges"

var (
	// journalApplyEvery is how long records wait at most before the
	// applier runs (when any wait).
	journalApplyEvery = 100 * time.Millisecond
	// journalApplyLists is the number of waiting lists that wakes the
	// applier early.
	journalApplyLists = 8192
	// journalResetSize is the file size past which the applier applies
	// everything and empties the file.
	journalResetSize int64 = 64 << 20
	// journalKeepUsers bounds the in-memory totals of users without
	// pending records (they are read again from the store when needed).
	journalKeepUsers = 1 << 20
	// journalLockWait is how long an open waits for a lock another
	// process holds before failing.
	journalLockWait = 3 * time.Second
)

// journalGrow is how much the file grows at a time (zeros); journalAlign
// the alignment of every record (zero padded): a record's header lies in
// one sector, so a crash leaves it whole or unwritten, and recovery can
// look for records past a damaged one at the aligned offsets only.
const (
	journalGrow  = 1 << 20
	journalAlign = 512
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// jrecord is one appended record: the releases accepted by one batch and
// the new totals of the users they changed.
type jrecord struct {
	seq    uint64
	rows   []releaseRow
	users  []string   // sorted
	totals []spendRow // of users[i], after the record
}

// jspend is a user's totals as the journal knows them.
type jspend struct {
	row     spendRow
	pending int // records not applied yet that changed the row
}

// journal is a store's charge journal (see the top of this file).
type journal struct {
	path string
	f    *os.File
	s    *sqlStore

	applyMu  sync.Mutex // one apply at a time; taken before mu
	mu       sync.Mutex // everything below
	broken   error      // an append failed: the file's tail is unknown, every later charge fails
	applyErr error      // the last apply's error (nil once one succeeds)
	applied  uint64     // sequence number of the last record applied
	seq      uint64     // last sequence number appended
	size     int64      // end of the last record
	alloc    int64      // zeros written up to here (records overwrite them)
	pending  []*jrecord // appended, not applied, in order
	lists    int        // releases in pending
	spends   map[string]*jspend
	idem     map[idemRef]Release // pending releases with an idempotency key
	nextID   int64
	buf      []byte
	zeros    []byte

	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// charge charges p (valid users non-empty) against the in-memory totals
// and appends the result durably; see the top of this file. The label and
// block ids of influence sets the store has not recorded yet are recorded
// first, by a write transaction of their own (records carry encoded sets).
func (j *journal) charge(ctx context.Context, s *sqlStore, p *batch, cap Cap) ([]ChargeResult, error) {
	if err := s.recordSets(ctx, p); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return nil, j.broken
	}
	// The users' totals: copies, installed only once the record is durable.
	spends := make(map[string]*spendRow, len(p.users))
	var missing []string
	for _, u := range p.users {
		if js, ok := j.spends[u]; ok {
			row := js.row
			spends[u] = &row
		} else {
			missing = append(missing, u)
		}
	}
	var known map[idemRef]Release
	keyed := false
	for i := range p.items {
		if p.bad[i] == nil && p.items[i].IdemKey != "" {
			keyed = true
			break
		}
	}
	if len(missing) > 0 || keyed {
		// A user without in-memory totals has no pending record, so the
		// store's row is current; a key not pending is in the store or
		// nowhere (records leave pending only once applied, under mu).
		err := s.b.read(ctx, func(q querier) error {
			if len(missing) > 0 {
				got, err := lockSpends(ctx, q, missing, s.schema, true)
				if err != nil {
					return err
				}
				for u, row := range got {
					spends[u] = row
				}
			}
			if keyed {
				var err error
				known, err = lookupIdem(ctx, q, &s.labels, p.items, p.bad, spends, s.schema)
				return err
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range p.items {
		r := &p.items[i]
		if p.bad[i] != nil || r.IdemKey == "" {
			continue
		}
		ref := idemRef{r.User, r.IdemKey, r.Seeded}
		if rel, ok := j.idem[ref]; ok {
			if known == nil {
				known = map[idemRef]Release{}
			}
			known[ref] = rel
		}
	}
	results, fresh, sameAs := decide(p.items, p.bad, known, spends, cap)
	ids := make([]int64, len(fresh))
	for n := range ids {
		ids[n] = j.nextID + int64(n)
	}
	settle(p.items, results, fresh, sameAs, ids)
	rec := &jrecord{seq: j.seq + 1, rows: make([]releaseRow, len(fresh))}
	for n, i := range fresh {
		rec.rows[n] = rowOf(&p.items[i], p.enc[i], p.enc[i].set, s.schema)
	}
	for _, u := range p.users { // sorted
		if sp := spends[u]; sp.dirty {
			rec.users = append(rec.users, u)
			rec.totals = append(rec.totals, *sp)
		}
	}
	if len(rec.rows) > 0 {
		if err := j.append(rec); err != nil {
			return nil, err
		}
		j.pending = append(j.pending, rec)
		j.lists += len(rec.rows)
		j.nextID += int64(len(fresh))
		for _, i := range fresh {
			if r := &p.items[i]; r.IdemKey != "" {
				j.idem[idemRef{r.User, r.IdemKey, r.Seeded}] = *r
			}
		}
	}
	for _, u := range p.users {
		sp := spends[u]
		js := j.spends[u]
		if js == nil {
			js = &jspend{}
			j.spends[u] = js
		}
		if sp.dirty {
			js.pending++
		}
		js.row = *sp
		js.row.dirty = false
	}
	if j.lists >= journalApplyLists {
		select {
		case j.wake <- struct{}{}:
		default:
		}
	}
	return results, nil
}

// append writes rec as the next record and syncs it. The file is grown by
// journalGrow bytes of zeros at a time, so that most appends overwrite
// zeros and fdatasync has no file size to record (on ext4 about 40% less
// time and a fifth less CPU per append). A failure leaves the file's tail
// unknown: the journal is then broken (every later charge fails;
// reopening the store recovers what is durable).
func (j *journal) append(rec *jrecord) error {
	j.buf = appendFrame(j.buf[:0], rec)
	var err error
	if end := j.size + int64(len(j.buf)); end > j.alloc {
		grow := (end - j.alloc + journalGrow - 1) / journalGrow * journalGrow
		if cap(j.zeros) < int(grow) {
			j.zeros = make([]byte, grow)
		}
		if _, err = j.f.WriteAt(j.zeros[:grow], j.alloc); err == nil {
			j.alloc += grow
		}
	}
	if err == nil {
		_, err = j.f.WriteAt(j.buf, j.size)
	}
	if err == nil {
		err = datasync(j.f)
	}
	if err != nil {
		j.broken = fmt.Errorf("ledger: the charge journal %s could not be written (%w); nothing more is charged until the store is opened again, which recovers every charge that was acknowledged", j.path, err)
		return j.broken
	}
	j.size += int64(len(j.buf))
	j.seq = rec.seq
	return nil
}

// apply applies every record appended so far to the tables.
func (j *journal) apply(ctx context.Context) error {
	j.applyMu.Lock()
	defer j.applyMu.Unlock()
	j.mu.Lock()
	recs := slices.Clone(j.pending)
	j.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	err := applyRecords(ctx, j.s, recs)
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.settleApply(len(recs), err)
}

// applyPendingLocked applies every pending record; applyMu and mu held.
func (j *journal) applyPendingLocked(ctx context.Context) error {
	if len(j.pending) == 0 {
		return nil
	}
	return j.settleApply(len(j.pending), applyRecords(ctx, j.s, j.pending))
}

// settleApply records how applying the first n pending records went: the
// error (kept for health) or their removal; mu held.
func (j *journal) settleApply(n int, err error) error {
	if err != nil {
		j.applyErr = fmt.Errorf("ledger: applying the charge journal %s: %w", j.path, err)
		return j.applyErr
	}
	j.dropApplied(n)
	return nil
}

// dropApplied forgets the first n pending records, now in the tables; mu held.
func (j *journal) dropApplied(n int) {
	j.applyErr = nil
	if n > 0 {
		j.applied = j.pending[n-1].seq
	}
	for _, rec := range j.pending[:n] {
		for _, u := range rec.users {
			if js := j.spends[u]; js != nil {
				js.pending--
			}
		}
		for _, r := range rec.rows {
			if r.idem != "" {
				delete(j.idem, idemRef{r.user, r.idem, r.seeded})
			}
		}
		j.lists -= len(rec.rows)
	}
	j.pending = slices.Delete(j.pending, 0, n)
	if len(j.spends) > journalKeepUsers {
		for u, js := range j.spends {
			if js.pending == 0 {
				delete(j.spends, u)
			}
		}
	}
}

// resetLocked empties the file once every record is applied; applyMu and
// mu held.
func (j *journal) resetLocked(ctx context.Context) error {
	if err := j.applyPendingLocked(ctx); err != nil {
		return err
	}
	if j.broken != nil {
		return nil // keep the file as it is for the next open
	}
	err := j.f.Truncate(0)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		// Every record is applied, so none is lost; but where the next
		// one would land is unknown.
		j.broken = fmt.Errorf("ledger: emptying the charge journal %s: %w; nothing more is charged until the store is opened again", j.path, err)
		return j.broken
	}
	j.size, j.alloc = 0, 0
	return nil
}

// run is the applier goroutine.
func (j *journal) run() {
	defer close(j.done)
	t := time.NewTicker(journalApplyEvery)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-j.wake:
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		// An error leaves the records pending: the next round retries,
		// and reads (which apply first) report it.
		if j.apply(ctx) == nil {
			j.mu.Lock()
			big := j.size >= journalResetSize
			j.mu.Unlock()
			if big {
				j.applyMu.Lock()
				j.mu.Lock()
				_ = j.resetLocked(ctx)
				j.mu.Unlock()
				j.applyMu.Unlock()
			}
		}
		cancel()
	}
}

// close stops the applier, applies what is pending and empties the file
// (once: later calls return the first one's error).
func (j *journal) close() error {
	j.closeOnce.Do(func() { j.closeErr = j.shutdown() })
	return j.closeErr
}

func (j *journal) shutdown() error {
	close(j.stop)
	<-j.done
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	j.applyMu.Lock()
	j.mu.Lock()
	err := j.resetLocked(ctx)
	j.mu.Unlock()
	j.applyMu.Unlock()
	if cerr := j.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// JournalStats describes a store's charge journal (JournalStatser).
type JournalStats struct {
	// PendingLists and PendingRecords are the releases and records
	// appended (durable, acknowledged) but not yet in the tables.
	PendingLists, PendingRecords int
	// FileBytes is the journal file's size (records and zeros).
	FileBytes int64
	// Appended and Applied are the sequence numbers of the last record
	// appended and of the last one applied.
	Appended, Applied uint64
}

// JournalStatser is implemented by the stores this package opens; ok is
// false for a store without the charge journal.
type JournalStatser interface {
	JournalStats() (st JournalStats, ok bool)
}

// JournalStats reports the charge journal's state (ok false without one).
func (s *sqlStore) JournalStats() (JournalStats, bool) {
	if s.j == nil {
		return JournalStats{}, false
	}
	j := s.j
	j.mu.Lock()
	defer j.mu.Unlock()
	return JournalStats{PendingLists: j.lists, PendingRecords: len(j.pending), FileBytes: j.alloc, Appended: j.seq, Applied: j.applied}, true
}

// JournalState is a read-only SQLite store's view of its ledger's charge
// journal (JournalStater): such a store neither applies the journal nor
// sees what it holds.
type JournalState struct {
	// Held: a writer with the charge journal has the ledger open; its
	// last charges (some 100 ms) may not be in the tables yet.
	Held bool
	// PendingRecords and PendingLists count the records of the journal
	// file after the tables' applied sequence number, and their lists,
	// when no writer holds it: a writer with the journal stopped without
	// closing, and the next open for writing applies them.
	PendingRecords, PendingLists int
}

// JournalStater is implemented by the stores this package opens read-only
// on SQLite.
type JournalStater interface {
	JournalState(ctx context.Context) (JournalState, error)
}

// JournalState reports what the ledger's charge journal holds that a
// read-only store does not see (zero for other stores). Taking the shared
// lock for the moment it reads, it never blocks a writer for longer than
// that.
func (s *sqlStore) JournalState(ctx context.Context) (JournalState, error) {
	if !s.readOnly || s.path == "" || !s.schema.hasJournalTable() {
		return JournalState{}, nil
	}
	jpath := journalPath(s.path)
	f, err := os.Open(jpath)
	if errors.Is(err, os.ErrNotExist) {
		return JournalState{}, nil
	}
	if err != nil {
		return JournalState{}, fmt.Errorf("ledger: the charge journal %s: %w", jpath, err)
	}
	defer f.Close()
	ok, err := tryLock(f, false)
	if err != nil {
		return JournalState{}, fmt.Errorf("ledger: the charge journal %s: %w", jpath, err)
	}
	if !ok {
		return JournalState{Held: true}, nil
	}
	data, err := io.ReadAll(f)
	if err != nil || len(data) == 0 {
		return JournalState{}, err
	}
	applied, err := appliedSeq(ctx, s)
	if err != nil {
		return JournalState{}, err
	}
	recs, err := readRecords(data, applied)
	if err != nil {
		return JournalState{}, fmt.Errorf("ledger: the charge journal %s: %w", jpath, err)
	}
	st := JournalState{PendingRecords: len(recs)}
	for _, r := range recs {
		st.PendingLists += len(r.rows)
	}
	return st, nil
}

// health is nil while the journal charges and applies; otherwise why not
// (an append failed: nothing more is charged; or the last apply failed:
// charges are durable in the journal but reads fail until one succeeds).
func (j *journal) health() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return j.broken
	}
	return j.applyErr
}

// pendingFor reports whether a pending record holds a release of one of
// users.
func (j *journal) pendingFor(users []string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, u := range users {
		if js := j.spends[u]; js != nil && js.pending > 0 {
			return true
		}
	}
	return false
}

// budget is user's totals when the journal holds them.
func (j *journal) budget(user string) (Spend, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	js, ok := j.spends[user]
	if !ok {
		return Spend{}, false
	}
	r := js.row
	return Spend{User: user, Spent: r.spent, Rho: r.rho, Releases: int(r.releases), Seeded: int(r.seeded),
		PartySpent: r.partySpent, PartyUnbounded: int(r.partyUnb)}, true
}

// applyRecords records recs (in order) in one write transaction: their
// releases, their users' last totals, and the last one's sequence number.
func applyRecords(ctx context.Context, s *sqlStore, recs []*jrecord) error {
	var rows []releaseRow
	totals := map[string]*spendRow{}
	for _, rec := range recs {
		rows = append(rows, rec.rows...)
		for i, u := range rec.users {
			t := rec.totals[i]
			t.dirty = true
			totals[u] = &t
		}
	}
	users := make([]string, 0, len(totals))
	for u := range totals {
		users = append(users, u)
	}
	sort.Strings(users)
	last := recs[len(recs)-1].seq
	verb := insertVerb(s.b.name())
	return s.b.write(ctx, func(q querier) error {
		if err := insertReleases(ctx, q, verb, rows, s.schema); err != nil {
			return err
		}
		if err := writeSpends(ctx, q, verb, users, totals, s.schema); err != nil {
			return err
		}
		return q.exec(ctx, "INSERT INTO charge_journal (id, applied_seq) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET applied_seq = excluded.applied_seq", int64(last))
	})
}

// appliedSeq reads charge_journal.applied_seq (0 when never set).
func appliedSeq(ctx context.Context, s *sqlStore) (uint64, error) {
	var seq int64
	err := s.b.read(ctx, func(q querier) error {
		err := q.queryRow(ctx, "SELECT applied_seq FROM charge_journal WHERE id = 1").Scan(&seq)
		if errors.Is(err, errNoRows) {
			seq = 0
			return nil
		}
		return err
	})
	return uint64(seq), err
}

// attachJournal takes the lock on path's journal, recovers the records a
// previous writer left (applying them), and either keeps the lock
// exclusive and starts the journal (on) or holds it shared for the
// store's life. upto < journalSchema (tests of older schemas): nothing.
func attachJournal(ctx context.Context, s *sqlStore, path string, on bool, upto int) error {
	if upto < journalSchema {
		return nil // tests of older schemas: no journal table, no lock
	}
	if on && !journalLocks {
		return invalid("the charge journal is not supported on this system (it needs flock)")
	}
	jpath := journalPath(path)
	f, err := os.OpenFile(jpath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: opening the charge journal %s: %w", jpath, err)
	}
	fail := func(err error) error {
		f.Close()
		return err
	}
	exclusive, err := takeLock(f, jpath, on)
	if err != nil {
		return fail(err)
	}
	if exclusive {
		seq, err := recoverJournal(ctx, s, f, jpath)
		if err != nil {
			return fail(err)
		}
		if !on {
			if err := shareLock(f); err != nil {
				return fail(fmt.Errorf("ledger: the charge journal %s: keeping a shared lock: %w", jpath, err))
			}
			s.lock = f
			return nil
		}
		// The next release ID, as the backend reserves them (the lock
		// keeps every other writer out from now on).
		var next []int64
		err = s.b.read(ctx, func(q querier) error {
			var err error
			next, err = s.b.nextIDs(ctx, q, 1)
			return err
		})
		if err != nil {
			return fail(err)
		}
		j := &journal{path: jpath, f: f, s: s, seq: seq, applied: seq, spends: map[string]*jspend{}, idem: map[idemRef]Release{},
			nextID: next[0], wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		s.j = j
		go j.run()
		return nil
	}
	s.lock = f // shared, beside other writers without the journal
	return nil
}

// takeLock locks f: exclusively when it can (then it reports true), else,
// when on is false, shared (beside other writers without the journal). It
// waits up to journalLockWait for a holder to let go.
func takeLock(f *os.File, jpath string, on bool) (exclusive bool, err error) {
	deadline := time.Now().Add(journalLockWait)
	for {
		ok, err := tryLock(f, true)
		if err != nil {
			return false, fmt.Errorf("ledger: locking the charge journal %s: %w", jpath, err)
		}
		if ok {
			return true, nil
		}
		if !on {
			if ok, err = tryLock(f, false); err != nil {
				return false, fmt.Errorf("ledger: locking the charge journal %s: %w", jpath, err)
			}
			if ok {
				return false, nil
			}
		}
		if time.Now().After(deadline) {
			if on {
				return false, fmt.Errorf("ledger: %w: the charge journal needs to be the ledger's only writer, and another process has it open for writing (lock %s)", ErrLedgerBusy, jpath)
			}
			return false, fmt.Errorf("ledger: %w: a process with the charge journal on (dplp serve --charge-journal) is the ledger's only writer (lock %s); stop it first, or read with a read-only command", ErrLedgerBusy, jpath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// journalPath is the charge journal of the SQLite file path: beside the
// file the path resolves to, so that every name of the ledger (a symbolic
// link, a relative path) locks the same journal (SQLite, too, puts its
// -wal and -shm files beside the resolved file).
func journalPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path + JournalSuffix
}

// ErrLedgerBusy is wrapped by the error of an open that cannot share the
// ledger with the process holding it: a store with the charge journal on
// is its only writer.
var ErrLedgerBusy = errors.New("the ledger is held by another writer")

// recoverJournal applies the records of f (locked exclusively) after the
// store's applied_seq, empties f, and returns the last sequence number.
func recoverJournal(ctx context.Context, s *sqlStore, f *os.File, jpath string) (uint64, error) {
	applied, err := appliedSeq(ctx, s)
	if err != nil {
		return 0, fmt.Errorf("ledger: reading the charge journal's applied sequence: %w", err)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, math.MaxInt64))
	if err != nil {
		return 0, fmt.Errorf("ledger: reading the charge journal %s: %w", jpath, err)
	}
	recs, err := readRecords(data, applied)
	if err != nil {
		return 0, fmt.Errorf("ledger: the charge journal %s: %w; the ledger was left untouched", jpath, err)
	}
	last := applied
	if len(recs) > 0 {
		if err := applyRecords(ctx, s, recs); err != nil {
			return 0, fmt.Errorf("ledger: applying the charge journal %s: %w", jpath, err)
		}
		last = recs[len(recs)-1].seq
	}
	if len(data) > 0 {
		if err := f.Truncate(0); err != nil {
			return 0, fmt.Errorf("ledger: emptying the charge journal %s: %w", jpath, err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("ledger: emptying the charge journal %s: %w", jpath, err)
		}
	}
	return last, nil
}

// Record framing: uint32 payload length, uint32 CRC-32C of the payload
// (both little-endian), the payload, zeros up to a multiple of
// journalAlign. The file holds the records of one generation (it is
// emptied when everything is applied), then zeros.
const frameHeader = 8

// frameAt reads the frame at off: its payload and where the next frame
// starts; ok is false when there is no whole frame with a good checksum.
func frameAt(data []byte, off int) (payload []byte, next int, ok bool) {
	if len(data)-off < frameHeader {
		return nil, 0, false
	}
	n := int(binary.LittleEndian.Uint32(data[off:]))
	sum := binary.LittleEndian.Uint32(data[off+4:])
	if n == 0 || n > len(data)-off-frameHeader {
		return nil, 0, false
	}
	end := off + frameHeader + n
	if crc32.Checksum(data[off+frameHeader:end], crcTable) != sum {
		return nil, 0, false
	}
	return data[off+frameHeader : end], (end + journalAlign - 1) / journalAlign * journalAlign, true
}

// readRecords decodes the records of data after sequence number applied.
// The log ends at the first aligned offset without a whole, checksummed
// frame: zeros (nothing written there), or the one record a crash cut
// short (never acknowledged: each append is synced before the next
// starts). A good frame at a later aligned offset means records that were
// acknowledged follow damage, and is an error, as are a payload that does
// not decode, a sequence number that does not follow the previous one, and
// a first record to apply that is not applied+1 (records are missing).
// Errors name the offset.
func readRecords(data []byte, applied uint64) ([]*jrecord, error) {
	var out []*jrecord
	var prev uint64
	off := 0
	for off < len(data) {
		payload, next, ok := frameAt(data, off)
		if !ok {
			break
		}
		rec, err := decodeRecord(payload)
		if err != nil {
			return nil, fmt.Errorf("record at offset %d: %w", off, err)
		}
		if prev != 0 && rec.seq != prev+1 {
			return nil, fmt.Errorf("record at offset %d has sequence number %d after %d", off, rec.seq, prev)
		}
		prev = rec.seq
		if rec.seq > applied {
			if len(out) == 0 && rec.seq != applied+1 {
				return nil, fmt.Errorf("record at offset %d has sequence number %d, but the ledger has applied up to %d: records are missing", off, rec.seq, applied)
			}
			out = append(out, rec)
		}
		off = next
	}
	for at := (off + journalAlign) / journalAlign * journalAlign; at < len(data); at += journalAlign {
		if _, _, ok := frameAt(data, at); ok {
			return nil, fmt.Errorf("the record at offset %d is damaged and a good one follows at offset %d", off, at)
		}
	}
	return out, nil
}

// appendFrame appends rec's frame to b.
func appendFrame(b []byte, rec *jrecord) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	b = binary.AppendUvarint(b, rec.seq)
	b = binary.AppendUvarint(b, uint64(len(rec.rows)))
	for i := range rec.rows {
		r := &rec.rows[i]
		var flags byte
		if r.seeded {
			flags |= 1
		}
		if r.folded {
			flags |= 2
		}
		if r.inflIDs != nil {
			flags |= 4
		}
		b = binary.AppendVarint(b, r.id)
		b = appendStr(b, r.user)
		b = appendStr(b, r.model)
		b = binary.AppendUvarint(b, uint64(r.k))
		b = appendStr(b, r.list)
		b = appendF64(b, r.epsP)
		b = appendF64(b, r.cost)
		b = appendF64(b, r.rho)
		b = append(b, flags)
		b = appendStr(b, r.idem)
		b = appendStr(b, r.created)
		b = appendStr(b, r.infl)
		b = appendStr(b, r.unit)
		b = appendF64(b, r.partyCost)
		b = appendStr(b, string(r.inflIDs))
	}
	b = binary.AppendUvarint(b, uint64(len(rec.users)))
	for i, u := range rec.users {
		t := &rec.totals[i]
		b = appendStr(b, u)
		b = appendF64(b, t.spent)
		b = appendF64(b, t.rho)
		b = binary.AppendVarint(b, t.releases)
		b = binary.AppendVarint(b, t.seeded)
		b = appendF64(b, t.partySpent)
		b = binary.AppendVarint(b, t.partyUnb)
	}
	payload := b[start+frameHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(payload, crcTable))
	if pad := (len(b) - start) % journalAlign; pad != 0 {
		b = append(b, make([]byte, journalAlign-pad)...)
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendF64(b []byte, x float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
}

// jreader decodes a payload; the first error sticks.
type jreader struct {
	b   []byte
	err error
}

func (r *jreader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("truncated or malformed %s", what)
	}
}

func (r *jreader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *jreader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *jreader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.fail(what)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *jreader) f64(what string) float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail(what)
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return x
}

func (r *jreader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail(what)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// decodeRecord decodes a payload (appendFrame's), checking every count
// against the bytes left so that a damaged one cannot allocate much.
func decodeRecord(p []byte) (*jrecord, error) {
	r := &jreader{b: p}
	rec := &jrecord{seq: r.uvarint("sequence number")}
	n := r.uvarint("release count")
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail("release count")
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		var row releaseRow
		row.id = r.varint("release id")
		row.user = r.str("user")
		row.model = r.str("model")
		row.k = int(r.uvarint("k"))
		row.list = r.str("list")
		row.epsP = r.f64("eps_p")
		row.cost = r.f64("cost")
		row.rho = r.f64("rho")
		flags := r.byte1("flags")
		row.seeded, row.folded = flags&1 != 0, flags&2 != 0
		row.idem = r.str("idempotency key")
		row.created = r.str("time")
		row.infl = r.str("influencers")
		row.unit = r.str("unit")
		row.partyCost = r.f64("party cost")
		infl := r.str("influencer ids")
		if flags&4 != 0 {
			row.inflIDs = []byte(infl)
		}
		if flags&^7 != 0 {
			r.fail("flags")
		}
		rec.rows = append(rec.rows, row)
	}
	n = r.uvarint("user count")
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail("user count")
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		u := r.str("user")
		t := spendRow{spent: r.f64("spent"), rho: r.f64("rho"), releases: r.varint("releases"), seeded: r.varint("seeded"),
			partySpent: r.f64("party spent"), partyUnb: r.varint("party unbounded")}
		if i > 0 && r.err == nil && !(rec.users[i-1] < u) {
			r.err = fmt.Errorf("users out of order (%q after %q)", u, rec.users[i-1])
		}
		rec.users = append(rec.users, u)
		rec.totals = append(rec.totals, t)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes after the record", len(r.b))
	}
	if r.err == nil && rec.seq == 0 {
		r.err = errors.New("sequence number 0")
	}
	if r.err != nil {
		return nil, r.err
	}
	return rec, nil
}
