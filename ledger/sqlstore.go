package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dplp/dplp/privunit"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dplp/dplp/internal/jsonenc"
	"github.com/dplp/dplp/internal/par"
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

type sqlStore struct {
	b        backend
	now      func() time.Time
	readOnly bool // OpenOptions.ReadOnly: writes fail, Exposure folds in memory
	// noUnit: the store was opened at a schema before releases.unit
	// (openAt with upto < 6, tests only); its releases are party-unit.
	noUnit bool
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

const releaseCols = releaseColsNoUnit + ", unit"

func scanRelease(r row) (Release, error) { return scanReleaseFor(r, false) }

// scanReleaseFor scans releaseColsFor(noUnit).
func scanReleaseFor(r row, noUnit bool) (Release, error) {
	var rel Release
	var list, infl, created string
	unit := "party"
	var seeded int64
	dest := []any{&rel.ID, &rel.User, &rel.Model, &rel.K, &list, &rel.EpsP, &rel.Cost, &rel.Rho, &seeded, &rel.IdemKey, &created, &infl}
	if !noUnit {
		dest = append(dest, &unit)
	}
	if err := r.Scan(dest...); err != nil {
		return rel, err
	}
	u, err := parseUnitCol(unit)
	if err != nil {
		return rel, fmt.Errorf("ledger: release %d: %w", rel.ID, err)
	}
	rel.Unit = u
	rel.Seeded = seeded != 0
	if err := json.Unmarshal([]byte(list), &rel.List); err != nil {
		return rel, fmt.Errorf("ledger: release %d: stored list: %w", rel.ID, err)
	}
	if err := json.Unmarshal([]byte(infl), &rel.Influencers); err != nil {
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

type spendRow struct {
	spent, rho       float64
	releases, seeded int64
	dirty            bool
}

func (s *sqlStore) Charge(ctx context.Context, r Release, cap Cap) (Release, bool, error) {
	res, err := s.ChargeBatch(ctx, []Release{r}, cap)
	if err != nil {
		return Release{}, false, err
	}
	return res[0].Release, res[0].Fresh, res[0].Err
}

func (s *sqlStore) ChargeBatch(ctx context.Context, rs []Release, cap Cap) ([]ChargeResult, error) {
	if err := checkCap(cap); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	items := make([]Release, len(rs))
	bad := make([]error, len(rs))
	enc := make([]encoded, len(rs))
	// Validate and encode outside the transaction, on all cores: with
	// exposure tracking a release carries hundreds of influencer labels,
	// and checking and encoding them one transaction at a time was most of
	// a large batch's charging time.
	err := par.Run(ctx, len(rs), par.Options{Chunk: 16, MinPerWorker: 256}, func(int) *[]byte { return new([]byte) }, func(buf *[]byte, i int) error {
		items[i], bad[i] = normalize(rs[i], now)
		if bad[i] == nil {
			enc[i] = encode(&items[i], buf)
		}
		return nil
	})
	if err != nil { // only a cancelled context stops it
		return nil, err
	}
	users := map[string]bool{}
	for i := range items {
		if bad[i] == nil {
			users[items[i].User] = true
		}
	}
	if len(users) == 0 { // nothing valid to charge: no transaction
		results := make([]ChargeResult, len(rs))
		for i := range results {
			results[i].Err = bad[i]
		}
		return results, nil
	}
	sorted := make([]string, 0, len(users))
	for u := range users {
		sorted = append(sorted, u)
	}
	sort.Strings(sorted)

	var results []ChargeResult
	err = s.b.write(ctx, func(q querier) error {
		var err error
		results, err = chargeTx(ctx, s.b, q, items, enc, bad, sorted, cap, s.noUnit) // fn may be retried: start afresh
		return err
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// chargeChunk is the number of users (or releases) one multi-row statement
// covers: well under SQLite's and PostgreSQL's limits on parameters.
const chargeChunk = 500

// idemRef names a release by its user, provenance and idempotency key: keys
// are unique per (user, provenance), so a key used by a seeded release and
// the same key used by a crypto one name two different releases.
type idemRef struct {
	user, key string
	seeded    bool
}

// chargeTx is ChargeBatch's transaction: lock and read every user's spend
// row (sorted users, in chunks), look up the idempotency keys (in chunks),
// charge the items in order, then insert the accepted releases (with IDs
// reserved by the backend, in multi-row statements) and write the changed
// spend rows back.
func chargeTx(ctx context.Context, b backend, q querier, items []Release, enc []encoded, bad []error, users []string, cap Cap, noUnit bool) ([]ChargeResult, error) {
	results := make([]ChargeResult, len(items))
	for i := range items {
		items[i].ID = 0 // a retried transaction starts afresh: no ID is reserved yet
	}
	// Lock every user's spend row in one global order (sorted users) so that
	// concurrent PostgreSQL transactions cannot deadlock. SQLite holds the
	// database write lock already (BEGIN IMMEDIATE).
	spends, err := lockSpends(ctx, q, users)
	if err != nil {
		return nil, err
	}
	known, err := lookupIdem(ctx, q, items, bad, noUnit)
	if err != nil {
		return nil, err
	}
	var fresh []int            // items accepted here, in order: they get IDs below
	sameAs := map[int]int{}    // item -> the earlier accepted item with its key
	batch := map[idemRef]int{} // key -> the accepted item that holds it
	for i := range items {
		if bad[i] != nil {
			results[i].Err = bad[i]
			continue
		}
		r := items[i]
		ref := idemRef{r.User, r.IdemKey, r.Seeded}
		if r.IdemKey != "" {
			old, ok := known[ref]
			if j, inBatch := batch[ref]; inBatch {
				old, ok = items[j], true
				sameAs[i] = j
			}
			if ok && old.Seeded != r.Seeded {
				// Unreachable (keys are looked up within the provenance),
				// kept as the last line of defence: a stored release is
				// never the answer to a request of another provenance.
				delete(sameAs, i)
				results[i].Err = fmt.Errorf("ledger: %w: user %q key %q: stored release %s is %s, the request is %s",
					ErrIdemConflict, r.User, r.IdemKey, describeID(old.ID), old.Provenance(), r.Provenance())
				continue
			}
			if ok {
				if old.Model != r.Model || old.K != r.K {
					delete(sameAs, i)
					results[i].Err = fmt.Errorf("ledger: %w: user %q key %q was used for release %s (model %q, k=%d), not model %q, k=%d",
						ErrIdemConflict, r.User, r.IdemKey, describeID(old.ID), old.Model, old.K, r.Model, r.K)
				} else {
					results[i] = ChargeResult{Release: old}
				}
				continue
			}
		}
		sp := spends[r.User]
		if !(sp.spent+r.Cost <= cap.Eps) || !(sp.rho+r.Rho <= cap.Rho) {
			results[i].Err = &BudgetError{User: r.User, Spent: sp.spent, Cost: r.Cost, Rho: sp.rho, RhoC: r.Rho, Cap: cap}
			continue
		}
		sp.spent += r.Cost
		sp.rho += r.Rho
		sp.releases++
		if r.Seeded {
			sp.seeded++
		}
		sp.dirty = true
		if r.IdemKey != "" {
			batch[ref] = i // a later item with the same key gets this release
		}
		fresh = append(fresh, i)
	}
	ids, err := b.nextIDs(ctx, q, len(fresh))
	if err != nil {
		return nil, err
	}
	for n, i := range fresh {
		items[i].ID = ids[n]
		results[i] = ChargeResult{Release: items[i], Fresh: true}
	}
	for i, j := range sameAs {
		results[i] = ChargeResult{Release: items[j]}
	}
	if err := insertReleases(ctx, q, items, enc, fresh, noUnit); err != nil {
		return nil, err
	}
	return results, writeSpends(ctx, q, users, spends)
}

// describeID names a recorded release, or one accepted earlier in the same
// batch (whose ID is not assigned yet).
func describeID(id int64) string {
	if id == 0 {
		return "earlier in this batch"
	}
	return strconv.FormatInt(id, 10)
}

// lockSpends creates the spend rows that are missing, locks them all
// (PostgreSQL: the conflicting upsert takes the row lock) and reads them,
// one statement per chunk of sorted users.
func lockSpends(ctx context.Context, q querier, users []string) (map[string]*spendRow, error) {
	spends := make(map[string]*spendRow, len(users))
	for lo := 0; lo < len(users); lo += chargeChunk {
		part := users[lo:min(lo+chargeChunk, len(users))]
		args := make([]any, len(part))
		for i, u := range part {
			args[i] = u
		}
		rs, err := q.query(ctx, "INSERT INTO spend (user_id) VALUES (?)"+strings.Repeat(", (?)", len(part)-1)+
			" ON CONFLICT (user_id) DO UPDATE SET user_id = excluded.user_id RETURNING user_id, spent, rho, releases, seeded", args...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var u string
			sp := &spendRow{}
			if err := rs.Scan(&u, &sp.spent, &sp.rho, &sp.releases, &sp.seeded); err != nil {
				rs.Close()
				return nil, err
			}
			spends[u] = sp
		}
		err = rs.Err()
		rs.Close()
		if err != nil {
			return nil, err
		}
	}
	for _, u := range users {
		if spends[u] == nil {
			return nil, fmt.Errorf("ledger: spend row of %q was not returned", u)
		}
	}
	return spends, nil
}

// lookupIdem returns the recorded releases of the valid items' (user,
// provenance, idempotency key) triples, one query per (key, provenance) and
// chunk of users. Only releases of the item's own provenance are read.
func lookupIdem(ctx context.Context, q querier, items []Release, bad []error, noUnit bool) (map[idemRef]Release, error) {
	type keyProv struct {
		key    string
		seeded bool
	}
	byKey := map[keyProv][]string{}
	seen := map[idemRef]bool{}
	for i, r := range items {
		ref := idemRef{r.User, r.IdemKey, r.Seeded}
		if bad[i] != nil || r.IdemKey == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		kp := keyProv{r.IdemKey, r.Seeded}
		byKey[kp] = append(byKey[kp], r.User)
	}
	known := map[idemRef]Release{}
	for kp, users := range byKey {
		seeded, _ := ProvenanceOf(kp.seeded).seededCol()
		for lo := 0; lo < len(users); lo += chargeChunk {
			part := users[lo:min(lo+chargeChunk, len(users))]
			args := make([]any, 0, len(part)+2)
			args = append(args, kp.key, seeded)
			for _, u := range part {
				args = append(args, u)
			}
			rs, err := q.query(ctx, "SELECT "+releaseColsFor(noUnit)+" FROM releases WHERE idem_key = ? AND seeded = ? AND user_id IN (?"+strings.Repeat(", ?", len(part)-1)+")", args...)
			if err != nil {
				return nil, err
			}
			for rs.Next() {
				rel, err := scanReleaseFor(rs, noUnit)
				if err != nil {
					rs.Close()
					return nil, err
				}
				known[idemRef{rel.User, rel.IdemKey, rel.Seeded}] = rel
			}
			err = rs.Err()
			rs.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return known, nil
}

// encoded holds a release's list and influencers as stored: JSON arrays.
type encoded struct{ list, infl string }

// encode encodes r's list and influencers, using buf as scratch.
func encode(r *Release, buf *[]byte) encoded {
	var e encoded
	*buf = jsonenc.AppendStrings((*buf)[:0], r.List)
	e.list = string(*buf)
	*buf = jsonenc.AppendStrings((*buf)[:0], r.Influencers)
	e.infl = string(*buf)
	return e
}

// insertReleases records items[fresh[0]], items[fresh[1]], ... (their IDs
// already set, enc their encoded columns) in multi-row statements: one
// statement per release cost as much as the row itself.
func insertReleases(ctx context.Context, q querier, items []Release, enc []encoded, fresh []int, noUnit bool) error {
	cols, n := "id, user_id, model, k, list, eps_p, cost, rho, seeded, idem_key, created, influencers, folded, unit", 14
	if noUnit {
		// A store before the unit column (tests at older schemas) takes
		// party-unit releases only.
		for _, i := range fresh {
			if items[i].Unit != privunit.Party {
				return fmt.Errorf("ledger: %w: a %v-unit release in a store at a schema before version %d", ErrInvalid, items[i].Unit, unitSchema)
			}
		}
		cols, n = strings.TrimSuffix(cols, ", unit"), 13
	}
	return execRows(ctx, q, len(fresh), n, "INSERT INTO releases ("+cols+") VALUES ", "",
		func(j int, args []any) []any {
			i := fresh[j]
			r := &items[i]
			var idem any
			if r.IdemKey != "" {
				idem = r.IdemKey
			}
			seeded := 0
			if r.Seeded {
				seeded = 1
			}
			// A release with influencers waits (folded = 0) to be added to
			// the exposure table by foldExposure; recording it here is what
			// makes its exposure durable.
			folded := 1
			if len(r.Influencers) > 0 {
				folded = 0
			}
			args = append(args, r.ID, r.User, r.Model, r.K, enc[i].list, r.EpsP, r.Cost, r.Rho, seeded, idem, fmtTime(r.Time), enc[i].infl, folded)
			if !noUnit {
				args = append(args, r.Unit.String())
			}
			return args
		})
}

// writeSpends writes the changed spend rows back, one statement per chunk.
func writeSpends(ctx context.Context, q querier, users []string, spends map[string]*spendRow) error {
	var dirty []string
	for _, u := range users {
		if spends[u].dirty {
			dirty = append(dirty, u)
		}
	}
	return execRows(ctx, q, len(dirty), 5, "INSERT INTO spend (user_id, spent, rho, releases, seeded) VALUES ",
		" ON CONFLICT (user_id) DO UPDATE SET spent = excluded.spent, rho = excluded.rho, releases = excluded.releases, seeded = excluded.seeded",
		func(i int, args []any) []any {
			sp := spends[dirty[i]]
			return append(args, dirty[i], sp.spent, sp.rho, sp.releases, sp.seeded)
		})
}

// execRows runs head + "(?, ...), (?, ...)" + tail for rows [0, n), width
// parameters per row, in chunks of at most chargeChunk parameters; row
// appends row i's parameters to args.
func execRows(ctx context.Context, q querier, n, width int, head, tail string, row func(i int, args []any) []any) error {
	tuple := "(?" + strings.Repeat(", ?", width-1) + ")"
	per := max(1, chargeChunk/width)
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		args := make([]any, 0, width*(hi-lo))
		for i := lo; i < hi; i++ {
			args = row(i, args)
		}
		if err := q.exec(ctx, head+tuple+strings.Repeat(", "+tuple, hi-lo-1)+tail, args...); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) Latest(ctx context.Context, user, model string, k int, prov Provenance) (Release, bool, error) {
	seeded, err := prov.seededCol()
	if err != nil {
		return Release{}, false, err
	}
	var rel Release
	found := false
	err = s.b.read(ctx, func(q querier) error {
		var err error
		rel, err = scanReleaseFor(q.queryRow(ctx, "SELECT "+releaseColsFor(s.noUnit)+" FROM releases WHERE user_id = ? AND model = ? AND k = ? AND seeded = ? ORDER BY id DESC LIMIT 1", user, model, k, seeded), s.noUnit)
		if errors.Is(err, errNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return Release{}, false, err
	}
	if rel.Seeded != (prov == Seeded) { // the query filters on it: a broken store
		return Release{}, false, fmt.Errorf("ledger: release %d of %q is %s, asked for %s", rel.ID, user, rel.Provenance(), prov)
	}
	return rel, true, nil
}

func (s *sqlStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	seeded, err := prov.seededCol()
	if err != nil {
		return nil, err
	}
	out := make(map[string]Release)
	const chunk = 500
	for lo := 0; lo < len(users); lo += chunk {
		part := users[lo:min(lo+chunk, len(users))]
		args := make([]any, 0, len(part)+3)
		args = append(args, model, k, seeded)
		for _, u := range part {
			args = append(args, u)
		}
		q := "SELECT " + releaseColsFor(s.noUnit) + " FROM releases WHERE model = ? AND k = ? AND seeded = ? AND user_id IN (?" + strings.Repeat(", ?", len(part)-1) + ") ORDER BY id"
		err := s.b.read(ctx, func(qr querier) error {
			rs, err := qr.query(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				rel, err := scanReleaseFor(rs, s.noUnit)
				if err != nil {
					return err
				}
				if rel.Seeded != (prov == Seeded) { // the query filters on it: a broken store
					return fmt.Errorf("ledger: release %d of %q is %s, asked for %s", rel.ID, rel.User, rel.Provenance(), prov)
				}
				out[rel.User] = rel // ascending id: the newest wins
			}
			return rs.Err()
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *sqlStore) Budget(ctx context.Context, user string) (Spend, error) {
	sp := Spend{User: user}
	err := s.b.read(ctx, func(q querier) error {
		var rel, seeded int64
		err := q.queryRow(ctx, "SELECT spent, rho, releases, seeded FROM spend WHERE user_id = ?", user).Scan(&sp.Spent, &sp.Rho, &rel, &seeded)
		if errors.Is(err, errNoRows) {
			return nil
		}
		sp.Releases, sp.Seeded = int(rel), int(seeded)
		return err
	})
	return sp, err
}

func (s *sqlStore) Users(ctx context.Context) ([]Spend, error) {
	var out []Spend
	err := s.b.read(ctx, func(q querier) error {
		out = nil
		rs, err := q.query(ctx, "SELECT user_id, spent, rho, releases, seeded FROM spend WHERE releases > 0")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var sp Spend
			var rel, seeded int64
			if err := rs.Scan(&sp.User, &sp.Spent, &sp.Rho, &rel, &seeded); err != nil {
				return err
			}
			sp.Releases, sp.Seeded = int(rel), int(seeded)
			out = append(out, sp)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// foldBatch is the number of releases foldExposure adds to the exposure
// table per transaction (a variable for tests).
var foldBatch = 4096

// foldExposure adds every recorded release not yet in the exposure table
// (folded = 0) to exposure(w) of each of its influencers w, and marks it
// folded, in transactions of foldBatch releases. Charging records the
// influencers with the release (durably, in the charge's transaction) and
// leaves the exposure table alone: updating one row per influencing party in
// every charge was most of a charge's cost on graphs with hubs. Folders are
// serialised (SQLite: the write lock; PostgreSQL: an advisory lock), and
// each marks exactly the rows it read, so a release committed while a fold
// runs is folded by the next one, never twice and never lost.
func (s *sqlStore) foldExposure(ctx context.Context) error {
	for {
		n := 0
		err := s.b.write(ctx, func(q querier) error {
			n = 0
			if lock := s.b.foldLock(); lock != "" {
				if err := q.exec(ctx, lock); err != nil {
					return err
				}
			}
			// Up to foldPages pages of releases per transaction: on a graph
			// with hubs a few thousand releases already touch most parties,
			// so the rows written per transaction hardly grow with the pages.
			expo := newFoldAcc()
			var ids []int64
			for page := 0; page < foldPages; page++ {
				after := int64(0)
				if len(ids) > 0 {
					after = ids[len(ids)-1]
				}
				read, err := readUnfolded(ctx, q, after, expo, &ids)
				if err != nil {
					return err
				}
				if read < foldBatch {
					break
				}
			}
			n = len(ids)
			return applyFold(ctx, q, ids, expo)
		})
		if err != nil {
			return fmt.Errorf("ledger: folding releases into exposure: %w", err)
		}
		if n < foldBatch*foldPages {
			return nil
		}
	}
}

// foldPages is the number of pages of foldBatch releases one fold
// transaction reads (a variable for tests).
var foldPages = 64

// readUnfolded reads the next page of up to foldBatch unfolded releases with
// id > after, adds their cost and rho to expo per influencer and their ids to
// ids; it returns the number of releases read.
func readUnfolded(ctx context.Context, q querier, after int64, expo *foldAcc, ids *[]int64) (int, error) {
	rs, err := q.query(ctx, "SELECT id, cost, rho, influencers FROM releases WHERE folded = 0 AND id > ? ORDER BY id LIMIT ?", after, foldBatch)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	read := 0
	for rs.Next() {
		var id int64
		var cost, rho float64
		var raw string
		if err := rs.Scan(&id, &cost, &rho, &raw); err != nil {
			return 0, err
		}
		err := eachInfluencer(raw, func(w string) { expo.add(w, cost, rho) })
		if err != nil {
			return 0, fmt.Errorf("release %d: stored influencers: %w", id, err)
		}
		*ids = append(*ids, id)
		read++
	}
	return read, rs.Err()
}

// foldAcc sums cost and rho per influencing party for a fold. Parties
// labelled by canonical decimal numbers below denseFoldLimit (the common
// case: the datasets' labels) are summed in dense arrays indexed by the
// number, one memory access per occurrence; others in a map. A fold adds
// hundreds of millions of occurrences over a million parties, and the map's
// two cache misses per lookup (its control word and the key's bytes) were
// most of its time. Each party's additions happen in the same order either
// way, so the sums are the same.
type foldAcc struct {
	dense   [][2]float64
	seen    []bool
	touched []int32
	other   map[string][2]float64
}

// denseFoldLimit bounds the dense arrays (17 bytes per slot: 570 MB at
// most, only when labels that large occur). A variable for tests.
var denseFoldLimit = 1 << 25

func newFoldAcc() *foldAcc { return &foldAcc{other: map[string][2]float64{}} }

// decimalLabel returns the value of s if s is the canonical decimal form of
// a number below denseFoldLimit (no sign, no leading zero but "0").
func decimalLabel(s string) (int, bool) {
	if len(s) == 0 || len(s) > 8 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, v < denseFoldLimit
}

func (a *foldAcc) add(w string, cost, rho float64) {
	if v, ok := decimalLabel(w); ok {
		if v >= len(a.dense) {
			n := min(denseFoldLimit, max(v+1, 2*len(a.dense), 1024))
			a.dense = append(a.dense, make([][2]float64, n-len(a.dense))...)
			a.seen = append(a.seen, make([]bool, n-len(a.seen))...)
		}
		if !a.seen[v] {
			a.seen[v] = true
			a.touched = append(a.touched, int32(v))
		}
		e := &a.dense[v]
		e[0] += cost
		e[1] += rho
		return
	}
	e, ok := a.other[w]
	if !ok {
		w = strings.Clone(w) // w may point into a row's text: do not keep it alive
	}
	a.other[w] = [2]float64{e[0] + cost, e[1] + rho}
}

// sorted returns every party added and its sums, parties in sorted order.
func (a *foldAcc) sorted() ([]string, [][2]float64) {
	type entry struct {
		party string
		sums  [2]float64
	}
	all := make([]entry, 0, len(a.touched)+len(a.other))
	for _, v := range a.touched {
		all = append(all, entry{strconv.Itoa(int(v)), a.dense[v]})
	}
	for w, e := range a.other {
		all = append(all, entry{w, e})
	}
	slices.SortFunc(all, func(x, y entry) int { return strings.Compare(x.party, y.party) })
	parties, sums := make([]string, len(all)), make([][2]float64, len(all))
	for i, e := range all {
		parties[i], sums[i] = e.party, e.sums
	}
	return parties, sums
}

// eachInfluencer calls fn for every label of a stored influencer list (a
// JSON array of strings). Lists without escapes, the common case, are split
// in place without allocating; others go through encoding/json.
func eachInfluencer(raw string, fn func(w string)) error {
	if n, ok := splitPlain(raw, nil); ok {
		if n > 0 {
			splitPlain(raw, fn)
		}
		return nil
	}
	var infl []string
	if err := json.Unmarshal([]byte(raw), &infl); err != nil {
		return err
	}
	for _, w := range infl {
		fn(w)
	}
	return nil
}

// splitPlain splits a JSON array of strings without escapes (["a","b"]),
// calling fn (when non-nil) for each element, and reports the number of
// elements and whether raw has exactly that form.
func splitPlain(raw string, fn func(string)) (int, bool) {
	if strings.IndexByte(raw, '\\') >= 0 || len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return 0, false
	}
	body, n := raw[1:len(raw)-1], 0
	for len(body) > 0 {
		if body[0] != '"' {
			return n, false
		}
		end := strings.IndexByte(body[1:], '"')
		if end < 0 {
			return n, false
		}
		if fn != nil {
			fn(body[1 : 1+end])
		}
		n++
		body = body[2+end:]
		if len(body) > 0 {
			if body[0] != ',' || len(body) == 1 {
				return n, false
			}
			body = body[1:]
		}
	}
	return n, true
}

// applyFold adds expo to the exposure rows (in sorted party order, one
// multi-row upsert per chunk) and marks the releases ids folded.
func applyFold(ctx context.Context, q querier, ids []int64, expo *foldAcc) error {
	parties, sums := expo.sorted()
	err := execRows(ctx, q, len(parties), 3, "INSERT INTO exposure (party, eps, rho) VALUES ",
		" ON CONFLICT (party) DO UPDATE SET eps = exposure.eps + excluded.eps, rho = exposure.rho + excluded.rho",
		func(i int, args []any) []any {
			return append(args, parties[i], sums[i][0], sums[i][1])
		})
	if err != nil {
		return err
	}
	const chunk = 500
	for lo := 0; lo < len(ids); lo += chunk {
		part := ids[lo:min(lo+chunk, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		if err := q.exec(ctx, "UPDATE releases SET folded = 1 WHERE id IN (?"+strings.Repeat(", ?", len(part)-1)+")", args...); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) Exposure(ctx context.Context, top int) ([]Exposure, error) {
	var out []Exposure
	var err error
	if s.readOnly {
		out, err = s.exposureInMemory(ctx)
	} else {
		if err := s.foldExposure(ctx); err != nil {
			return nil, err
		}
		err = s.b.read(ctx, func(q querier) error {
			out, err = readExposureRows(ctx, q)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	var star Exposure
	for _, e := range out {
		if e.Party == "*" {
			star = e
		}
	}
	for i := range out {
		if out[i].Party != "*" {
			out[i].Eps += star.Eps
			out[i].Rho += star.Rho
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Eps != b.Eps {
			return a.Eps > b.Eps
		}
		if a.Rho != b.Rho {
			return a.Rho > b.Rho
		}
		return a.Party < b.Party
	})
	if top > 0 && len(out) > top {
		out = out[:top]
	}
	return out, nil
}

// readExposureRows reads the exposure table.
func readExposureRows(ctx context.Context, q querier) ([]Exposure, error) {
	var out []Exposure
	rs, err := q.query(ctx, "SELECT party, eps, rho FROM exposure")
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var e Exposure
		if err := rs.Scan(&e.Party, &e.Eps, &e.Rho); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rs.Err()
}

// exposureInMemory is a read-only store's exposure rows: the exposure table
// plus the releases not folded into it yet, added in memory, both read in
// one snapshot (so a fold committed meanwhile by a writer is counted
// exactly once). Nothing is written.
func (s *sqlStore) exposureInMemory(ctx context.Context) ([]Exposure, error) {
	var out []Exposure
	err := s.b.snapshot(ctx, func(q querier) error {
		rows, err := readExposureRows(ctx, q)
		if err != nil {
			return err
		}
		expo := newFoldAcc()
		var ids []int64
		for {
			after := int64(0)
			if len(ids) > 0 {
				after = ids[len(ids)-1]
			}
			read, err := readUnfolded(ctx, q, after, expo, &ids)
			if err != nil {
				return err
			}
			if read < foldBatch {
				break
			}
		}
		parties, sums := expo.sorted()
		at := make(map[string]int, len(rows))
		for i, e := range rows {
			at[e.Party] = i
		}
		for i, w := range parties {
			if j, ok := at[w]; ok {
				rows[j].Eps += sums[i][0]
				rows[j].Rho += sums[i][1]
			} else {
				rows = append(rows, Exposure{Party: w, Eps: sums[i][0], Rho: sums[i][1]})
			}
		}
		out = rows
		return nil
	})
	return out, err
}

func (s *sqlStore) PutToken(ctx context.Context, user string, hash []byte) error {
	if err := checkText("user", user, false); err != nil {
		return err
	}
	if len(hash) == 0 {
		return invalid("empty token hash for %q", user)
	}
	return s.b.write(ctx, func(q querier) error {
		return q.exec(ctx, `INSERT INTO tokens (user_id, hash, created) VALUES (?, ?, ?)
			ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash, created = excluded.created`,
			user, append([]byte{}, hash...), fmtTime(s.now()))
	})
}

func (s *sqlStore) TokenHash(ctx context.Context, user string) ([]byte, bool, error) {
	var h []byte
	found := false
	err := s.b.read(ctx, func(q querier) error {
		err := q.queryRow(ctx, "SELECT hash FROM tokens WHERE user_id = ?", user).Scan(&h)
		if errors.Is(err, errNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return nil, false, err
	}
	return h, true, nil
}

func (s *sqlStore) RevokeToken(ctx context.Context, user string) error {
	return s.b.write(ctx, func(q querier) error {
		return q.exec(ctx, "DELETE FROM tokens WHERE user_id = ?", user)
	})
}

func (s *sqlStore) SetMarks(ctx context.Context, user string, marks []string) error {
	if err := checkText("user", user, false); err != nil {
		return err
	}
	set := map[string]bool{}
	for i, m := range marks {
		if err := checkText(fmt.Sprintf("mark %d of %q", i, user), m, true); err != nil {
			return err
		}
		set[m] = true
	}
	list := make([]string, 0, len(set))
	for m := range set {
		list = append(list, m)
	}
	sort.Strings(list)
	b, _ := json.Marshal(list)
	return s.b.write(ctx, func(q querier) error {
		if len(list) == 0 {
			return q.exec(ctx, "DELETE FROM marks WHERE user_id = ?", user)
		}
		return q.exec(ctx, `INSERT INTO marks (user_id, labels) VALUES (?, ?)
			ON CONFLICT (user_id) DO UPDATE SET labels = excluded.labels`, user, string(b))
	})
}

func (s *sqlStore) Marks(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := s.b.read(ctx, func(q querier) error {
		clear(out)
		rs, err := q.query(ctx, "SELECT user_id, labels FROM marks")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var u, labels string
			if err := rs.Scan(&u, &labels); err != nil {
				return err
			}
			var l []string
			if err := json.Unmarshal([]byte(labels), &l); err != nil {
				return fmt.Errorf("ledger: stored marks of %q: %w", u, err)
			}
			out[u] = l
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *sqlStore) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.b.read(ctx, func(q querier) error {
		var err error
		v, err = schemaVersion(ctx, q)
		return err
	})
	return v, err
}

func (s *sqlStore) Close() error { return s.b.close() }

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
