package ledger

// Charging (BudgetStore.Charge and ChargeBatch): one write transaction per
// call that locks the users' spend rows, looks up idempotency keys, checks the
// caps and records the accepted releases.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dplp/dplp/internal/jsonenc"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/privunit"
)

type spendRow struct {
	spent, rho       float64
	releases, seeded int64
	partySpent       float64 // sum of the bounded party costs
	partyUnb         int64   // releases with an unbounded party cost
	dirty            bool
}

// partyTotal is the user's party-unit total (+Inf when unbounded).
func (sp *spendRow) partyTotal() float64 {
	if sp.partyUnb > 0 {
		return Unbounded
	}
	return sp.partySpent
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
	p, err := s.prepareBatch(ctx, rs)
	if err != nil {
		return nil, err
	}
	if len(p.users) == 0 { // nothing valid to charge: no transaction
		results := make([]ChargeResult, len(rs))
		for i := range results {
			results[i].Err = p.bad[i]
		}
		return results, nil
	}
	if s.j != nil {
		return s.j.charge(ctx, s, p, cap)
	}
	return s.chargeSQL(ctx, p, cap)
}

// batch is a ChargeBatch call's releases, validated and encoded outside
// any transaction: items the normalized releases, bad their refusals
// (nil: valid), enc their encoded columns, users the valid items' users,
// sorted and distinct.
type batch struct {
	items []Release
	bad   []error
	enc   []encoded
	users []string
}

// prepareBatch validates and encodes rs on all cores.
func (s *sqlStore) prepareBatch(ctx context.Context, rs []Release) (*batch, error) {
	now := s.now().UTC()
	items := make([]Release, len(rs))
	bad := make([]error, len(rs))
	enc := make([]encoded, len(rs))
	if err := s.preload(ctx, rs); err != nil {
		return nil, err
	}
	// Validate and encode outside the transaction, on all cores: with
	// exposure tracking a release carries hundreds of influencer labels,
	// and checking and encoding them one transaction at a time was most of
	// a large batch's charging time.
	type scratch struct {
		buf []byte
		ids idScratch
	}
	err := par.Run(ctx, len(rs), par.Options{Chunk: 16, MinPerWorker: 256}, func(int) *scratch { return new(scratch) }, func(sc *scratch, i int) error {
		items[i], bad[i] = normalize(rs[i], now)
		if bad[i] != nil {
			return nil
		}
		it := &items[i]
		if !s.schema.hasBlocks() && it.InflBlocks != nil {
			// A store before schema 10 records the expanded set.
			it.InflDict, it.InflIdx, it.InflBlocks, it.InflExcl = it.InflBlocks.dict, it.InflBlocks.expand(it.InflIdx, it.InflExcl), nil, nil
		}
		if !s.schema.hasLabels() && it.InflIdx != nil {
			// A store before schema 8 records labels.
			it.Influencers, it.InflDict, it.InflIdx = it.InflDict.labels(it.InflIdx), nil, nil
		}
		enc[i] = encode(it, &sc.buf, !s.schema.hasLabels())
		if s.schema.hasLabels() {
			// nil unless every label has a cached id (the common case
			// once the store has seen the parties): chargeTx assigns
			// and looks up the others.
			if it.InflBlocks != nil {
				enc[i].set = encodeBlocks(&s.labels, it.InflBlocks, it.InflIdx, it.InflExcl, nil, nil, &sc.ids)
			} else if it.InflIdx != nil {
				enc[i].set = encodeDict(&s.labels, it.InflDict, it.InflIdx, nil, s.schema.hasEF(), &sc.ids)
			} else {
				enc[i].set = encodeInfl(&s.labels, it.Influencers, nil, s.schema.hasEF(), &sc.ids.ids)
			}
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
	sorted := make([]string, 0, len(users))
	for u := range users {
		sorted = append(sorted, u)
	}
	sort.Strings(sorted)
	return &batch{items: items, bad: bad, enc: enc, users: sorted}, nil
}

// chargeSQL charges p in one write transaction (chargeTx).
func (s *sqlStore) chargeSQL(ctx context.Context, p *batch, cap Cap) ([]ChargeResult, error) {
	var results []ChargeResult
	st := newInflState()
	err := s.b.write(ctx, func(q querier) error {
		var err error
		st.reset() // fn may be retried: start afresh
		results, err = chargeTx(ctx, s.b, q, st, &s.labels, p.items, p.enc, p.bad, p.users, cap, s.schema)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.commit(&s.labels)
	return results, nil
}

// recordSets records, in one write transaction, the labels and blocks of
// p's valid items whose influence sets could not be encoded (some id not
// recorded yet), and encodes those sets. Recording labels or blocks no
// release names is harmless (Verify accepts them).
func (s *sqlStore) recordSets(ctx context.Context, p *batch) error {
	var idx []int
	for i := range p.items {
		if p.bad[i] == nil && p.enc[i].set == nil {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 || !s.schema.hasLabels() {
		return nil
	}
	var sets [][]byte
	st := newInflState()
	err := s.b.write(ctx, func(q querier) error {
		var err error
		st.reset()
		sets, err = recordInfluence(ctx, q, st, &s.labels, p.items, idx, p.enc, s.schema)
		return err
	})
	if err != nil {
		return err
	}
	st.commit(&s.labels)
	for j, i := range idx {
		p.enc[i].set = sets[j]
	}
	return nil
}

// inflState is what a write transaction reads or assigns of label and
// block ids; the handle's caches learn it once the transaction commits.
type inflState struct {
	learned map[string]int64 // label ids
	pend    dictPending      // the same, by dictionary index
	pb      pendingBlocks    // block ids
	digests map[[sha256.Size]byte]int64
}

func newInflState() *inflState {
	return &inflState{learned: map[string]int64{}, pend: dictPending{}, pb: pendingBlocks{}, digests: map[[sha256.Size]byte]int64{}}
}

// reset empties st for a (retried) transaction.
func (st *inflState) reset() {
	clear(st.learned)
	clear(st.pend)
	clear(st.pb)
	clear(st.digests)
}

// commit tells lc what the committed transaction recorded or read.
func (st *inflState) commit(lc *labelCache) {
	lc.learn(st.learned)
	st.pend.commit(lc)
	st.pb.commit(lc)
	lc.blocks.commitDigests(st.digests)
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
func chargeTx(ctx context.Context, b backend, q querier, st *inflState, lc *labelCache, items []Release, enc []encoded, bad []error, users []string, cap Cap, v schemaLevel) ([]ChargeResult, error) {
	for i := range items {
		items[i].ID = 0 // a retried transaction starts afresh: no ID is reserved yet
	}
	// Lock every user's spend row in one global order (sorted users) so that
	// concurrent PostgreSQL transactions cannot deadlock. SQLite holds the
	// database write lock already (BEGIN IMMEDIATE).
	spends, err := lockSpends(ctx, q, users, v, b.foldLock() == "")
	if err != nil {
		return nil, err
	}
	known, err := lookupIdem(ctx, q, lc, items, bad, spends, v)
	if err != nil {
		return nil, err
	}
	results, fresh, sameAs := decide(items, bad, known, spends, cap)
	ids, err := b.nextIDs(ctx, q, len(fresh))
	if err != nil {
		return nil, err
	}
	settle(items, results, fresh, sameAs, ids)
	var sets [][]byte // the fresh releases' encoded influencer sets (schema 8 and later)
	if v.hasLabels() {
		var err error
		if sets, err = recordInfluence(ctx, q, st, lc, items, fresh, enc, v); err != nil {
			return nil, err
		}
	}
	verb := insertVerb(b.name())
	rows := make([]releaseRow, len(fresh))
	for j, i := range fresh {
		var set []byte
		if sets != nil {
			set = sets[j]
		}
		rows[j] = rowOf(&items[i], enc[i], set, v)
	}
	if err := insertReleases(ctx, q, verb, rows, v); err != nil {
		return nil, err
	}
	return results, writeSpends(ctx, q, verb, users, spends, v)
}

// decide charges the valid items in order, each exactly as Charge would
// given the ones before it: an item whose (user, provenance, key) is in
// known (recorded) or was accepted earlier in the batch replays that
// release (or is an ErrIdemConflict when the model or k differ), an item
// that would take its user over cap is refused with a *BudgetError, and
// every other item is accepted and its costs are added to its user's row
// of spends (which must hold every valid item's user; changed rows are
// marked dirty). It returns the results of the refused and replayed items,
// the accepted items in order (fresh: their IDs are not assigned yet) and,
// for each item that replays an item accepted earlier in the batch, that
// item; settle completes the results once IDs are assigned. This is the
// one place where a charge is decided: chargeTx calls it inside its
// transaction, the charge journal (journal.go) on its in-memory totals.
func decide(items []Release, bad []error, known map[idemRef]Release, spends map[string]*spendRow, cap Cap) (results []ChargeResult, fresh []int, sameAs map[int]int) {
	results = make([]ChargeResult, len(items))
	sameAs = map[int]int{}     // item -> the earlier accepted item with its key
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
		// The party-unit total is +Inf once unbounded: then, as for an
		// unbounded PartyCost, only an infinite PartyEps lets it pass.
		if !(sp.spent+r.Cost <= cap.Eps) || !(sp.rho+r.Rho <= cap.Rho) || !(sp.partyTotal()+r.PartyCost <= cap.PartyEps) {
			results[i].Err = &BudgetError{User: r.User, Spent: sp.spent, Cost: r.Cost, Rho: sp.rho, RhoC: r.Rho,
				PartySpent: sp.partyTotal(), PartyCost: r.PartyCost, Unit: r.Unit, Cap: cap}
			continue
		}
		sp.spent += r.Cost
		sp.rho += r.Rho
		addParty(&sp.partySpent, &sp.partyUnb, r.PartyCost)
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
	return results, fresh, sameAs
}

// settle gives the accepted items (decide's fresh) their IDs and completes
// the results of them and of the items that replay them.
func settle(items []Release, results []ChargeResult, fresh []int, sameAs map[int]int, ids []int64) {
	for n, i := range fresh {
		items[i].ID = ids[n]
		results[i] = ChargeResult{Release: items[i], Fresh: true}
	}
	for i, j := range sameAs {
		results[i] = ChargeResult{Release: items[j]}
	}
}

// recordInfluence records, inside the write transaction q, the labels and
// blocks of the items idx whose sets enc could not encode (an id not
// recorded yet), and returns every item's encoded set in the order of idx.
// st collects the ids read or assigned; the caller commits them to lc once
// q commits.
func recordInfluence(ctx context.Context, q querier, st *inflState, lc *labelCache, items []Release, idx []int, enc []encoded, v schemaLevel) ([][]byte, error) {
	// The sets with labels the cache did not know when they were
	// encoded (outside the transaction).
	var pending [][]string
	var fromDict []string
	for _, i := range idx {
		switch it := &items[i]; {
		case enc[i].set != nil:
		case it.InflBlocks != nil:
			b := it.InflBlocks
			fromDict = st.pend.collect(lc, b.dict, it.InflExcl, fromDict)
			arr := b.idsFor(lc)
			for _, z := range it.InflIdx {
				if arr[z].Load() == 0 {
					fromDict = st.pend.collect(lc, b.dict, b.members(z), fromDict)
				}
			}
		case it.InflIdx != nil:
			fromDict = st.pend.collect(lc, it.InflDict, it.InflIdx, fromDict)
		default:
			pending = append(pending, it.Influencers)
		}
	}
	if fromDict != nil {
		pending = append(pending, fromDict)
	}
	if err := labelIDs(ctx, q, lc, pending, st.learned); err != nil {
		return nil, err
	}
	if err := st.pend.resolve(lc, st.learned); err != nil {
		return nil, err
	}
	if err := registerBlocks(ctx, q, lc, items, idx, enc, st.pend, st.pb, st.digests); err != nil {
		return nil, err
	}
	sets := make([][]byte, len(idx))
	var sc idScratch
	for j, i := range idx {
		if sets[j] = enc[i].set; sets[j] != nil {
			continue
		}
		if it := &items[i]; it.InflBlocks != nil {
			sets[j] = encodeBlocks(lc, it.InflBlocks, it.InflIdx, it.InflExcl, st.pb[it.InflBlocks], st.pend.idsOf(it.InflBlocks.dict), &sc)
		} else if it.InflIdx != nil {
			sets[j] = encodeDict(lc, it.InflDict, it.InflIdx, st.pend.idsOf(it.InflDict), v.hasEF(), &sc)
		} else {
			sets[j] = encodeInfl(lc, it.Influencers, st.learned, v.hasEF(), nil)
		}
		if sets[j] == nil {
			return nil, fmt.Errorf("ledger: an influencer label of user %q has no id", items[i].User)
		}
	}
	return sets, nil
}

// describeID names a recorded release, or one accepted earlier in the same
// batch (whose ID is not assigned yet).
func describeID(id int64) string {
	if id == 0 {
		return "earlier in this batch"
	}
	return strconv.FormatInt(id, 10)
}

// lockSpends reads the users' spend rows, locked for the rest of the
// transaction, one statement per chunk of sorted users. When writers are
// not serialised (PostgreSQL) it creates the missing rows and locks them
// all (the conflicting upsert takes the row lock). When they are (SQLite:
// BEGIN IMMEDIATE holds the database's write lock for the whole
// transaction; the backend's foldLock is "") a plain SELECT is enough, and
// a user without a row starts at zero: writeSpends creates the row when
// the user's totals change (a user all of whose charges are refused gets
// none, and reads as zero, as before).
func lockSpends(ctx context.Context, q querier, users []string, v schemaLevel, serialised bool) (map[string]*spendRow, error) {
	party := ", party_spent, party_unbounded"
	if !v.hasParty() {
		party = ", 0, 0"
	}
	spends := make(map[string]*spendRow, len(users))
	for lo := 0; lo < len(users); lo += chargeChunk {
		part := users[lo:min(lo+chargeChunk, len(users))]
		args := make([]any, len(part))
		for i, u := range part {
			args[i] = u
		}
		stmt := "INSERT INTO spend (user_id) VALUES (?)" + strings.Repeat(", (?)", len(part)-1) +
			" ON CONFLICT (user_id) DO UPDATE SET user_id = excluded.user_id RETURNING user_id, spent, rho, releases, seeded" + party
		if serialised {
			stmt = "SELECT user_id, spent, rho, releases, seeded" + party + " FROM spend WHERE user_id IN (?" + strings.Repeat(", ?", len(part)-1) + ")"
		}
		rs, err := q.query(ctx, stmt, args...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var u string
			sp := &spendRow{}
			if err := rs.Scan(&u, &sp.spent, &sp.rho, &sp.releases, &sp.seeded, &sp.partySpent, &sp.partyUnb); err != nil {
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
			if !serialised {
				return nil, fmt.Errorf("ledger: spend row of %q was not returned", u)
			}
			spends[u] = &spendRow{}
		}
	}
	return spends, nil
}

// lookupIdem returns the recorded releases of the valid items' (user,
// provenance, idempotency key) triples, one query per (key, provenance) and
// chunk of users. Only releases of the item's own provenance are read, and
// only for users with a recorded release (spends: the batch's locked spend
// rows).
func lookupIdem(ctx context.Context, q querier, lc *labelCache, items []Release, bad []error, spends map[string]*spendRow, v schemaLevel) (map[idemRef]Release, error) {
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
		if sp := spends[r.User]; sp != nil && sp.releases == 0 {
			// No release of the user is recorded (the spend row counts
			// them in the same transactions that record them; Verify
			// checks it), so none holds the key: nothing to look up. A
			// batch release meets mostly such users.
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
			rs, err := q.query(ctx, idemBatchSQL(v, len(part)), args...)
			if err != nil {
				return nil, err
			}
			var got []Release
			for rs.Next() {
				rel, err := scanReleaseFor(rs, v)
				if err != nil {
					rs.Close()
					return nil, err
				}
				got = append(got, rel)
			}
			err = rs.Err()
			rs.Close()
			if err != nil {
				return nil, err
			}
			ptrs := make([]*Release, len(got))
			for i := range got {
				ptrs[i] = &got[i]
			}
			if err := resolveReleases(ctx, q, lc, ptrs); err != nil {
				return nil, err
			}
			for _, rel := range got {
				known[idemRef{rel.User, rel.IdemKey, rel.Seeded}] = rel
			}
		}
	}
	return known, nil
}

// encoded holds a release's list and influencers as stored: JSON arrays
// (infl: before schema 8), or the encoded set (set: schema 8, nil when not
// encoded yet).
type encoded struct {
	list, infl string
	set        []byte
}

// encode encodes r's list and, when infl is set (a store before schema 8),
// its influencers, using buf as scratch.
func encode(r *Release, buf *[]byte, infl bool) encoded {
	var e encoded
	*buf = jsonenc.AppendStrings((*buf)[:0], r.List)
	e.list = string(*buf)
	if infl {
		*buf = jsonenc.AppendStrings((*buf)[:0], r.Influencers)
		e.infl = string(*buf)
	}
	return e
}

// insertVerb begins chargeTx's multi-row inserts. On SQLite it is INSERT
// OR FAIL: a statement that writes several rows and may abort part-way
// makes SQLite keep a statement journal of every page it changes (a
// temporary file once past 64 KiB), so that an abort can undo that
// statement alone. A charge never goes on after a failed statement (write
// rolls the whole transaction back), so FAIL, which stops and keeps the
// statement's earlier rows, is as safe and needs no journal: 5-8% of the
// service's CPU per fresh list went to writing it. PostgreSQL has no such
// clause and no such journal.
func insertVerb(dialect string) string {
	if dialect == "sqlite" {
		return "INSERT OR FAIL INTO "
	}
	return "INSERT INTO "
}

// releaseRow is one row of the releases table as chargeTx and the charge
// journal write it (every column of LatestSchema; insertReleases leaves out
// the ones an older schema lacks).
type releaseRow struct {
	id              int64
	user, model     string
	k               int
	list            string // JSON array
	epsP, cost, rho float64
	seeded          bool
	idem            string // "" is NULL
	created         string // fmtTime
	infl            string // JSON array (before schema 8; "" after)
	folded          bool
	unit            string
	partyCost       float64 // +Inf is NULL (unbounded)
	inflIDs         []byte  // the encoded set (schema 8)
}

// rowOf is the row that records the accepted release r (its ID set), e its
// encoded columns and set its encoded influencer set (schema 8).
func rowOf(r *Release, e encoded, set []byte, v schemaLevel) releaseRow {
	infl := e.infl
	if v.hasLabels() {
		infl = "" // in infl_ids
	}
	// A release with influencers waits (folded = 0) to be added to the
	// exposure table by foldExposure; recording it here is what makes its
	// exposure durable.
	return releaseRow{id: r.ID, user: r.User, model: r.Model, k: r.K, list: e.list, epsP: r.EpsP, cost: r.Cost, rho: r.Rho,
		seeded: r.Seeded, idem: r.IdemKey, created: fmtTime(r.Time), infl: infl, folded: !r.hasInfluencers(),
		unit: r.Unit.String(), partyCost: r.PartyCost, inflIDs: set}
}

// insertReleases records rows in multi-row statements: one statement per
// release cost as much as the row itself. verb is insertVerb's.
func insertReleases(ctx context.Context, q querier, verb string, rows []releaseRow, v schemaLevel) error {
	cols := []string{"id", "user_id", "model", "k", "list", "eps_p", "cost", "rho", "seeded", "idem_key", "created", "influencers", "folded", "unit", "party_cost", "infl_ids"}
	if !v.hasLabels() {
		cols = cols[:len(cols)-1]
	}
	if !v.hasParty() {
		cols = cols[:len(cols)-1]
	}
	if !v.hasUnit() {
		// A store before the unit column (tests at older schemas) takes
		// party-unit releases only.
		for _, r := range rows {
			if r.unit != privunit.Party.String() {
				return fmt.Errorf("ledger: %w: a %v-unit release in a store at a schema before version %d", ErrInvalid, r.unit, unitSchema)
			}
		}
		cols = cols[:len(cols)-1]
	}
	return execRows(ctx, q, len(rows), verb+"releases", cols, "",
		func(j int, args []any) []any {
			r := &rows[j]
			var idem any
			if r.idem != "" {
				idem = r.idem
			}
			seeded, folded := 0, 0
			if r.seeded {
				seeded = 1
			}
			if r.folded {
				folded = 1
			}
			args = append(args, r.id, r.user, r.model, r.k, r.list, r.epsP, r.cost, r.rho, seeded, idem, r.created, r.infl, folded)
			if v.hasUnit() {
				args = append(args, r.unit)
			}
			if v.hasParty() {
				args = append(args, partyCostArg(r.partyCost))
			}
			if v.hasLabels() {
				args = append(args, r.inflIDs)
			}
			return args
		})
}

// writeSpends writes the changed spend rows back, one statement per chunk
// (verb is insertVerb's).
func writeSpends(ctx context.Context, q querier, verb string, users []string, spends map[string]*spendRow, v schemaLevel) error {
	var dirty []string
	for _, u := range users {
		if spends[u].dirty {
			dirty = append(dirty, u)
		}
	}
	if !v.hasParty() {
		return execRows(ctx, q, len(dirty), verb+"spend", []string{"user_id", "spent", "rho", "releases", "seeded"},
			" ON CONFLICT (user_id) DO UPDATE SET spent = excluded.spent, rho = excluded.rho, releases = excluded.releases, seeded = excluded.seeded",
			func(i int, args []any) []any {
				sp := spends[dirty[i]]
				return append(args, dirty[i], sp.spent, sp.rho, sp.releases, sp.seeded)
			})
	}
	return execRows(ctx, q, len(dirty), verb+"spend", []string{"user_id", "spent", "rho", "releases", "seeded", "party_spent", "party_unbounded"},
		" ON CONFLICT (user_id) DO UPDATE SET spent = excluded.spent, rho = excluded.rho, releases = excluded.releases, seeded = excluded.seeded, party_spent = excluded.party_spent, party_unbounded = excluded.party_unbounded",
		func(i int, args []any) []any {
			sp := spends[dirty[i]]
			return append(args, dirty[i], sp.spent, sp.rho, sp.releases, sp.seeded, sp.partySpent, sp.partyUnb)
		})
}

// execRows runs into + " (cols) VALUES (...), (...)" + tail for rows
// [0, n), a value per column, in statements of at most chargeChunk
// parameters; row appends row i's values to args, in the order of cols.
//
// A column whose value is the same in every row (a batch's model, k, costs,
// time, unit and key, usually) is bound once per statement: binding a
// parameter is most of the driver's work per row. Such columns come first
// in the statement's column list and are numbered (?1 .. ?S) in every
// tuple; the others are plain placeholders, which SQLite numbers from S+1
// on (one more than the largest number so far) and PostgreSQL's rebind
// alike. The rows written are the same (TestExecRowsShared). Values are the
// same when they have the same type and value (float64 bit for bit);
// []byte values are never shared.
func execRows(ctx context.Context, q querier, n int, into string, cols []string, tail string, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	width := len(cols)
	all := make([]any, 0, n*width)
	for i := range n {
		all = row(i, all)
		if len(all) != (i+1)*width {
			return fmt.Errorf("ledger: %s: row %d has %d values, want %d", strings.TrimSpace(into), i, len(all)-i*width, width)
		}
	}
	// The columns in statement order: the shared ones, then the others.
	var order, rest []int
	var shared []any
	for c := range width {
		if n > 1 && sameInEveryRow(all, width, c) {
			order = append(order, c)
			shared = append(shared, all[c])
		} else {
			rest = append(rest, c)
		}
	}
	ns := len(shared)
	order = append(order, rest...)
	// The column list, and the tuple: ?1 .. ?S, then a plain ? per other
	// column.
	var head, tup strings.Builder
	for j, c := range order {
		if j > 0 {
			head.WriteString(", ")
			tup.WriteString(", ")
		}
		head.WriteString(cols[c])
		tup.WriteByte('?')
		if j < ns {
			tup.WriteString(strconv.Itoa(j + 1))
		}
	}
	prefix := into + " (" + head.String() + ") VALUES "
	tuple := "(" + tup.String() + ")"
	per := max(1, (chargeChunk-ns)/max(1, width-ns))
	per = min(per, chargeChunk)
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		args := make([]any, 0, ns+(hi-lo)*(width-ns))
		args = append(args, shared...)
		for i := lo; i < hi; i++ {
			for _, c := range rest {
				args = append(args, all[i*width+c])
			}
		}
		if err := q.exec(ctx, prefix+tuple+strings.Repeat(", "+tuple, hi-lo-1)+tail, args...); err != nil {
			return err
		}
	}
	return nil
}

// sameInEveryRow reports whether column c of the rows in all (width values
// each) holds one value: the same type and value, float64 bit for bit, nil
// as nil; never for other types ([]byte included).
func sameInEveryRow(all []any, width, c int) bool {
	first := all[c]
	for j := c + width; j < len(all); j += width {
		if !sameArg(first, all[j]) {
			return false
		}
	}
	return true
}

// sameArg reports whether a and b are the same parameter value (see
// sameInEveryRow).
func sameArg(a, b any) bool {
	switch x := a.(type) {
	case nil, string, int64, int, bool:
		return a == b // the same dynamic type and value; never panics, a's type being comparable
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return false
}

// preload reads every label id and block digest into the handle's caches
// (preloadIDs) the first time a batch names its influencers through a
// dictionary of at least preloadMin labels; once per handle (a failed
// read is retried by the next batch).
func (s *sqlStore) preload(ctx context.Context, rs []Release) error {
	if !s.schema.hasLabels() || s.preloaded.Load() {
		return nil
	}
	big := false
	for i := range rs {
		d := rs[i].InflDict
		if rs[i].InflBlocks != nil {
			d = rs[i].InflBlocks.dict
		}
		if d != nil && d.n >= preloadMin {
			big = true
			break
		}
	}
	if !big {
		return nil
	}
	return s.preloadAll(ctx)
}

// preloadAll reads every label id and block digest into the handle's
// caches, once (preloadIDs).
func (s *sqlStore) preloadAll(ctx context.Context) error {
	s.preloadMu.Lock()
	defer s.preloadMu.Unlock()
	if s.preloaded.Load() {
		return nil
	}
	if err := s.b.read(ctx, func(q querier) error { return preloadIDs(ctx, q, &s.labels, s.schema.hasBlocks()) }); err != nil {
		return fmt.Errorf("ledger: reading the influencer label and block ids: %w", err)
	}
	s.preloaded.Store(true)
	return nil
}
