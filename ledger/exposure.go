package ledger

// Exposure (BudgetStore.Exposure): releases are folded into the exposure
// table on demand, not in every charge.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

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
				read, err := readUnfolded(ctx, q, &s.labels, s.schema, after, expo, &ids)
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
// ids; it returns the number of releases read. The page is read first and
// added after (encoded sets need their labels looked up, which cannot
// happen while the rows are open), in id order as before.
func readUnfolded(ctx context.Context, q querier, lc *labelCache, v schemaLevel, after int64, expo *foldAcc, ids *[]int64) (int, error) {
	query := "SELECT id, cost, rho, influencers FROM releases WHERE folded = 0 AND id > ? ORDER BY id LIMIT ?"
	if v.hasLabels() {
		query = "SELECT id, cost, rho, influencers, infl_ids FROM releases WHERE folded = 0 AND id > ? ORDER BY id LIMIT ?"
	}
	rs, err := q.query(ctx, query, after, foldBatch)
	if err != nil {
		return 0, err
	}
	type unfolded struct {
		id        int64
		cost, rho float64
		raw       string
		set       []int64
		star      bool
		encoded   bool
		blocks    []int64 // a block-coded set's blocks and exclusions
		excl      []int64
	}
	var page []unfolded
	var all, allBlocks []int64
	for rs.Next() {
		var u unfolded
		var blob []byte
		dest := []any{&u.id, &u.cost, &u.rho, &u.raw}
		if v.hasLabels() {
			dest = append(dest, &blob)
		}
		if err := rs.Scan(dest...); err != nil {
			rs.Close()
			return 0, err
		}
		if blob != nil {
			u.encoded = true
			if isBlockSet(blob) {
				// Expanded once the rows are closed (its blocks may
				// need reading: one query per chunk for the page).
				if u.blocks, u.excl, err = decodeBlockSet(blob); err != nil {
					rs.Close()
					return 0, fmt.Errorf("release %d: stored influencers: %w", u.id, err)
				}
				allBlocks = append(allBlocks, u.blocks...)
			} else {
				u.set, u.star, err = decodeInflSet(blob)
				if err != nil {
					rs.Close()
					return 0, fmt.Errorf("release %d: stored influencers: %w", u.id, err)
				}
				all = append(all, u.set...)
			}
		}
		page = append(page, u)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return 0, err
	}
	if err := loadBlocks(ctx, q, &lc.blocks, allBlocks); err != nil {
		return 0, err
	}
	for i := range page {
		if u := &page[i]; u.blocks != nil {
			u.set = expandBlockSet(&lc.blocks, u.blocks, u.excl)
			all = append(all, u.set...)
		}
	}
	if err := resolveIDs(ctx, q, lc, all); err != nil {
		return 0, err
	}
	for _, u := range page {
		if u.encoded {
			// Each party gets one addition per release: the order of the
			// labels within a release does not change the sums.
			if u.star {
				expo.add("*", u.cost, u.rho)
			}
			lc.mu.RLock()
			for _, id := range u.set {
				if v, ok := lc.decimalOf(id); ok {
					expo.addDecimal(v, u.cost, u.rho)
				} else {
					expo.add(lc.byID[id], u.cost, u.rho)
				}
			}
			lc.mu.RUnlock()
		} else if err := eachInfluencer(u.raw, func(w string) { expo.add(w, u.cost, u.rho) }); err != nil {
			return 0, fmt.Errorf("release %d: stored influencers: %w", u.id, err)
		}
		*ids = append(*ids, u.id)
	}
	return len(page), nil
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
		a.addDecimal(v, cost, rho)
		return
	}
	e, ok := a.other[w]
	if !ok {
		w = strings.Clone(w) // w may point into a row's text: do not keep it alive
	}
	a.other[w] = [2]float64{e[0] + cost, e[1] + rho}
}

// addDecimal is add for the decimal label of number v (decimalLabel's:
// 0 <= v < denseFoldLimit).
func (a *foldAcc) addDecimal(v int, cost, rho float64) {
	a.dense = growDense(a.dense, v, denseFoldLimit)
	a.seen = growDense(a.seen, v, denseFoldLimit)
	if !a.seen[v] {
		a.seen[v] = true
		a.touched = append(a.touched, int32(v))
	}
	e := &a.dense[v]
	e[0] += cost
	e[1] += rho
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
	err := execRows(ctx, q, len(parties), "INSERT INTO exposure", []string{"party", "eps", "rho"},
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
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
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
			read, err := readUnfolded(ctx, q, &s.labels, s.schema, after, expo, &ids)
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
