package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Problem is one inconsistency Verify found: Where names the row or table
// ("schema", `spend row of user "u"`, "release 17", ...), What says what is
// wrong with it.
type Problem struct {
	Where, What string
}

func (p Problem) String() string { return p.Where + ": " + p.What }

// VerifyReport is what Verify checked and found.
type VerifyReport struct {
	Schema    int       // the store's schema version
	Users     int       // spend rows checked
	Releases  int       // releases checked
	Parties   int       // exposure rows checked
	Problems  []Problem // the first maxProblems problems found
	Truncated int       // further problems found but not listed
}

// OK reports whether no problem was found.
func (r VerifyReport) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds VerifyReport.Problems (a variable for tests).
var maxProblems = 100

// Verify checks the integrity of a store opened by this package (read-only
// is enough: it never writes), reading everything in one snapshot so that
// concurrent charges cannot make it report a false mismatch:
//
//   - the schema: version exactly LatestSchema, schema_migrations holding
//     versions 1..LatestSchema; SQLite's quick_check;
//   - every spend row: spent, rho finite and >= 0, 0 <= seeded <= releases;
//   - spend = the releases it sums: for every user, spent and rho equal
//     the sums of the user's releases' cost and rho (to a relative 1e-9,
//     summation order aside), releases and seeded their counts; a user
//     with releases but no spend row is a problem too;
//   - every release: cost and rho finite and >= 0, k >= 1, the stored list
//     a JSON array of at most k labels, and cost <= k x eps_p whenever
//     eps_p is recorded (> 0): a list costs eps_p per random pick, at most
//     k picks;
//   - the party-unit costs (schema 7): a party-unit release's party_cost
//     equals its cost, a pair-unit release's is NULL (unbounded) or >=
//     its cost; every spend row's party_spent and party_unbounded equal
//     the sum of the user's bounded party costs and the number of
//     unbounded ones;
//   - the influencer sets: a release recorded before schema 8 has a JSON
//     array of strings; a later one an encoded id set (influence.go) that
//     decodes, every id naming a row of influencer_labels (whose labels
//     are neither empty nor "*"), or (schema 10) a block-coded set whose
//     blocks are rows of influence_blocks and whose exclusions name labels;
//     every block's body decodes to ids naming labels, and its digest is
//     the body's SHA-256;
//   - every exposure row: eps and rho finite and >= 0.
//
// The error is non-nil only when the store could not be read; problems
// found are in the report (OK is false). Verify reads every release once:
// its time and memory grow with the number of releases and users.
func Verify(ctx context.Context, st Store) (VerifyReport, error) {
	s, ok := st.(*sqlStore)
	if !ok {
		return VerifyReport{}, fmt.Errorf("ledger: %w: Verify needs a store opened by this package, got %T", ErrInvalid, st)
	}
	if err := s.flush(ctx); err != nil {
		return VerifyReport{}, err
	}
	var rep VerifyReport
	err := s.b.snapshot(ctx, func(q querier) error {
		rep = VerifyReport{}
		return verifyTx(ctx, q, s.b.name(), &rep)
	})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("ledger: verifying the %s store: %w", s.b.name(), err)
	}
	return rep, nil
}

func (r *VerifyReport) add(where, format string, args ...any) {
	if len(r.Problems) >= maxProblems {
		r.Truncated++
		return
	}
	r.Problems = append(r.Problems, Problem{where, fmt.Sprintf(format, args...)})
}

// near reports whether a and b agree to a relative 1e-9 (sums of the same
// terms in another order).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

type userSums struct {
	spent, rho       float64
	releases, seeded int64
	partySpent       float64
	partyUnb         int64
}

func verifyTx(ctx context.Context, q querier, dialect string, rep *VerifyReport) error {
	// Schema.
	v, err := schemaVersion(ctx, q)
	if err != nil {
		return err
	}
	rep.Schema = v
	if v != LatestSchema {
		rep.add("schema", "version %d, this dplp writes version %d (open the store for writing to migrate it, or upgrade dplp)", v, LatestSchema)
	}
	rs, err := q.query(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		return err
	}
	want := 1
	for rs.Next() {
		var got int
		if err := rs.Scan(&got); err != nil {
			rs.Close()
			return err
		}
		if got != want {
			rep.add("schema", "schema_migrations holds version %d where version %d was expected (versions must be 1, 2, ... without gaps)", got, want)
		}
		want = got + 1
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	if dialect == "sqlite" {
		msgs, err := queryStrings(ctx, q, "PRAGMA quick_check")
		if err != nil {
			return err
		}
		if len(msgs) != 1 || msgs[0] != "ok" {
			rep.add("database file", "SQLite quick_check: %s", strings.Join(msgs, "; "))
		}
	}

	// Releases, summed per user in id order (the order charges add them).
	sums := map[string]*userSums{}
	party := v >= partySchema // a store at an older version is reported above
	cols := "id, user_id, k, eps_p, cost, rho, seeded, list, influencers"
	if party {
		cols += ", unit, " + partyCostCol
	}
	labels := v >= labelSchema
	var labelIDs map[int64]bool
	if labels {
		cols += ", infl_ids"
		if labelIDs, err = readLabelIDs(ctx, q, rep); err != nil {
			return err
		}
	}
	var blockIDs map[int64]bool
	if v >= blockSchema {
		if blockIDs, err = readBlockIDs(ctx, q, labelIDs, rep); err != nil {
			return err
		}
	}
	rs, err = q.query(ctx, "SELECT "+cols+" FROM releases ORDER BY id")
	if err != nil {
		return err
	}
	for rs.Next() {
		var id, k, seeded int64
		var user, list, infl string
		var epsP, cost, rho float64
		unit, partyCost := "party", -1.0
		var inflIDs []byte
		dest := []any{&id, &user, &k, &epsP, &cost, &rho, &seeded, &list, &infl}
		if party {
			dest = append(dest, &unit, &partyCost)
		}
		if labels {
			dest = append(dest, &inflIDs)
		}
		if err := rs.Scan(dest...); err != nil {
			rs.Close()
			return err
		}
		rep.Releases++
		where := fmt.Sprintf("release %d (user %q)", id, user)
		switch {
		case !finite(cost) || cost < 0:
			rep.add(where, "cost %v (want finite, >= 0)", cost)
		case !finite(rho) || rho < 0:
			rep.add(where, "rho %v (want finite, >= 0)", rho)
		case !finite(epsP) || epsP < 0:
			rep.add(where, "eps_p %v (want finite, >= 0)", epsP)
		case k < 1:
			rep.add(where, "k %d (want >= 1)", k)
		case epsP > 0 && cost > float64(k)*epsP*(1+1e-9):
			rep.add(where, "cost %g exceeds k x eps_p = %d x %g = %g (a list costs eps_p per random pick, at most k picks)", cost, k, epsP, float64(k)*epsP)
		}
		if party {
			pc := partyCostOf(partyCost)
			switch {
			case unit == "party" && pc != cost:
				rep.add(where, "party-unit release with party cost %v != cost %v", pc, cost)
			case unit == "pair" && !(pc >= cost):
				rep.add(where, "pair-unit release with party cost %v below its cost %v (a party-unit bound is never below the pair-unit one)", pc, cost)
			}
		}
		var labels []string
		if err := json.Unmarshal([]byte(list), &labels); err != nil {
			rep.add(where, "stored list is not a JSON array of strings: %v", err)
		} else if int64(len(labels)) > k {
			rep.add(where, "list of %d labels is longer than k=%d", len(labels), k)
		}
		if isBlockSet(inflIDs) {
			blocks, excl, err := decodeBlockSet(inflIDs)
			if err != nil {
				rep.add(where, "stored influencer set: %v", err)
			}
			if b, ok := firstMissing(blocks, blockIDs); ok {
				rep.add(where, "stored influence block %d is not a valid row of influence_blocks", b)
			}
			if w, ok := firstMissing(excl, labelIDs); ok {
				rep.add(where, "stored influencer id %d (excluded) has no label in influencer_labels", w)
			}
		} else if inflIDs != nil {
			ids, _, err := decodeInflSet(inflIDs)
			if err != nil {
				rep.add(where, "stored influencer set: %v", err)
			}
			if w, ok := firstMissing(ids, labelIDs); ok {
				rep.add(where, "stored influencer id %d has no label in influencer_labels", w)
			}
		} else if err := eachInfluencer(infl, func(string) {}); err != nil {
			rep.add(where, "stored influencers are not a JSON array of strings: %v", err)
		}
		u := sums[user]
		if u == nil {
			u = &userSums{}
			sums[user] = u
		}
		u.spent += cost
		u.rho += rho
		if party {
			addParty(&u.partySpent, &u.partyUnb, partyCostOf(partyCost))
		}
		u.releases++
		if seeded != 0 {
			u.seeded++
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}

	// Spend rows against the sums.
	spendCols := "user_id, spent, rho, releases, seeded"
	if party {
		spendCols += ", party_spent, party_unbounded"
	}
	rs, err = q.query(ctx, "SELECT "+spendCols+" FROM spend")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for rs.Next() {
		var user string
		var spent, rho float64
		var releases, seeded, partyUnb int64
		var partySpent float64
		dest := []any{&user, &spent, &rho, &releases, &seeded}
		if party {
			dest = append(dest, &partySpent, &partyUnb)
		}
		if err := rs.Scan(dest...); err != nil {
			rs.Close()
			return err
		}
		rep.Users++
		seen[user] = true
		where := fmt.Sprintf("spend row of user %q", user)
		if !finite(spent) || spent < 0 {
			rep.add(where, "spent %v (want finite, >= 0)", spent)
		}
		if !finite(rho) || rho < 0 {
			rep.add(where, "rho %v (want finite, >= 0)", rho)
		}
		if releases < 0 || seeded < 0 || seeded > releases {
			rep.add(where, "releases %d, seeded %d (want 0 <= seeded <= releases)", releases, seeded)
		}
		u := sums[user]
		if u == nil {
			u = &userSums{}
		}
		if !near(spent, u.spent) {
			rep.add(where, "spent %g, but the user's releases cost %g in total", spent, u.spent)
		}
		if !near(rho, u.rho) {
			rep.add(where, "rho %g, but the user's releases' rho is %g in total", rho, u.rho)
		}
		if releases != u.releases {
			rep.add(where, "releases %d, but %d releases are recorded for the user", releases, u.releases)
		}
		if seeded != u.seeded {
			rep.add(where, "seeded %d, but %d seeded releases are recorded for the user", seeded, u.seeded)
		}
		if party && (!finite(partySpent) || partySpent < 0 || !near(partySpent, u.partySpent)) {
			rep.add(where, "party-unit spent %g, but the user's releases' bounded party-unit costs are %g in total", partySpent, u.partySpent)
		}
		if party && partyUnb != u.partyUnb {
			rep.add(where, "party_unbounded %d, but %d releases with an unbounded party-unit cost are recorded for the user", partyUnb, u.partyUnb)
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	var missing []string
	for u := range sums {
		if !seen[u] {
			missing = append(missing, u)
		}
	}
	sort.Strings(missing)
	for _, u := range missing {
		rep.add(fmt.Sprintf("user %q", u), "%d releases (cost %g) but no spend row", sums[u].releases, sums[u].spent)
	}

	// Exposure rows.
	rows, err := readExposureRows(ctx, q)
	if err != nil {
		return err
	}
	rep.Parties = len(rows)
	for _, e := range rows {
		if !finite(e.Eps) || e.Eps < 0 || !finite(e.Rho) || e.Rho < 0 {
			rep.add(fmt.Sprintf("exposure row of party %q", e.Party), "eps %v, rho %v (want finite, >= 0)", e.Eps, e.Rho)
		}
	}
	return nil
}

// errVerify is returned by VerifyReport.Err.
var errVerify = errors.New("ledger verification failed")

// Err is nil when r is OK, otherwise an error listing the problems (one per
// line).
func (r VerifyReport) Err() error {
	if r.OK() {
		return nil
	}
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString("\n  " + p.String())
	}
	if r.Truncated > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", r.Truncated)
	}
	return fmt.Errorf("%w: %d problem(s)%s", errVerify, len(r.Problems)+r.Truncated, b.String())
}

// readLabelIDs reads the ids of influencer_labels (schema 8), reporting
// empty labels and "*" (which is a flag of the sets, never a label).
func readLabelIDs(ctx context.Context, q querier, rep *VerifyReport) (map[int64]bool, error) {
	rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels")
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	ids := map[int64]bool{}
	for rs.Next() {
		var id int64
		var w string
		if err := rs.Scan(&id, &w); err != nil {
			return nil, err
		}
		if w == "" || w == "*" {
			rep.add(fmt.Sprintf("influencer label %d", id), "label %q (want a party label, not empty or \"*\")", w)
		}
		ids[id] = true
	}
	return ids, rs.Err()
}

// readBlockIDs reads influence_blocks, reporting blocks whose digest is not
// their body's SHA-256, whose body does not decode to a set of label ids
// (without "*"), or which name an id without a label; it returns the ids of
// the valid ones.
func readBlockIDs(ctx context.Context, q querier, labelIDs map[int64]bool, rep *VerifyReport) (map[int64]bool, error) {
	rs, err := q.query(ctx, "SELECT id, digest, body FROM influence_blocks")
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	ids := map[int64]bool{}
	for rs.Next() {
		var id int64
		var digest, body []byte
		if err := rs.Scan(&id, &digest, &body); err != nil {
			return nil, err
		}
		where := fmt.Sprintf("influence block %d", id)
		if sum := sha256.Sum256(body); !bytes.Equal(sum[:], digest) {
			rep.add(where, "digest %x is not the SHA-256 of its body", digest)
			continue
		}
		set, star, err := decodeInflSet(body)
		if err == nil && (star || isBlockSet(body)) {
			err = fmt.Errorf("%w: a block must be a set of label ids", errBadInflSet)
		}
		if err != nil {
			rep.add(where, "body: %v", err)
			continue
		}
		w, missing := firstMissing(set, labelIDs)
		if missing {
			rep.add(where, "influencer id %d has no label in influencer_labels", w)
		}
		ids[id] = !missing
	}
	return ids, rs.Err()
}

// firstMissing returns the first of ids not in known, if any.
func firstMissing(ids []int64, known map[int64]bool) (int64, bool) {
	for _, id := range ids {
		if !known[id] {
			return id, true
		}
	}
	return 0, false
}
