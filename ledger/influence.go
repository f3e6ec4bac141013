package ledger

// Compact influence sets (schema version 8). A release's influencers were
// stored as a JSON array of labels in releases.influencers: with exposure
// tracking a release carries hundreds of labels, and the arrays were most of
// the ledger (7-9x its size without them). From version 8 every label is
// stored once, in influencer_labels (id, label), and a release stores the
// ids of its influencers in releases.infl_ids, a BLOB:
//
//	uvarint(n<<1 | star) uvarint(id1) uvarint(id2-id1) ... uvarint(idn-id(n-1))
//
// where id1 < id2 < ... < idn are the ids of its labels other than "*" and
// star is 1 when "*" (every party) is one of them. The empty set is the
// single byte 0, so a stored set is never an empty BLOB. Releases recorded
// before version 8 keep their JSON array (infl_ids NULL) and are read from
// it; new releases store '' in influencers. Label ids never change once
// assigned (labels are never deleted or renamed), so a store caches the
// committed ids it has seen.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// labelSchema is the schema version that added influencer_labels and
// releases.infl_ids.
const labelSchema = 8

func (v schemaLevel) hasLabels() bool { return v == 0 || int(v) >= labelSchema }

// labelMigration is migration 8.
var labelMigration = []string{
	`CREATE TABLE influencer_labels (
		id {{ID}},
		label TEXT NOT NULL UNIQUE
	)`,
	`ALTER TABLE releases ADD COLUMN infl_ids {{BLOB}}`,
}

// errBadInflSet is wrapped by decodeInflSet's errors.
var errBadInflSet = errors.New("malformed influencer id set")

// appendInflSet appends the encoding of a set of label ids (sorted, strictly
// increasing, every id >= 1) and star to buf.
func appendInflSet(buf []byte, ids []int64, star bool) []byte {
	h := uint64(len(ids)) << 1
	if star {
		h |= 1
	}
	buf = binary.AppendUvarint(buf, h)
	prev := int64(0)
	for _, id := range ids {
		buf = binary.AppendUvarint(buf, uint64(id-prev))
		prev = id
	}
	return buf
}

// decodeInflSet decodes an encoded set: the ids (strictly increasing, >= 1)
// and star.
func decodeInflSet(b []byte) (ids []int64, star bool, err error) {
	h, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, false, fmt.Errorf("%w: bad header", errBadInflSet)
	}
	b = b[n:]
	count := h >> 1
	if count > uint64(len(b)) { // every id takes at least one byte
		return nil, false, fmt.Errorf("%w: %d ids in %d bytes", errBadInflSet, count, len(b))
	}
	ids = make([]int64, 0, count)
	prev := uint64(0)
	for i := uint64(0); i < count; i++ {
		d, n := binary.Uvarint(b)
		if n <= 0 || d == 0 || d > 1<<62 || prev+d > 1<<62 {
			return nil, false, fmt.Errorf("%w: bad delta at position %d", errBadInflSet, i)
		}
		b = b[n:]
		prev += d
		ids = append(ids, int64(prev))
	}
	if len(b) != 0 {
		return nil, false, fmt.Errorf("%w: %d trailing bytes", errBadInflSet, len(b))
	}
	return ids, h&1 == 1, nil
}

// labelCache maps committed label ids to labels and back. The zero value is
// ready to use.
type labelCache struct {
	mu      sync.RWMutex
	byID    map[int64]string
	byLabel map[string]int64 // labels other than decimal ones
	// decimal holds the ids of labels that are canonical decimal numbers
	// below denseFoldLimit (the common case), indexed by the number; 0:
	// not cached. One array access instead of a string map lookup: a
	// charge looks up hundreds of labels per release.
	decimal []int64
}

// lookup returns the cached id of w; the caller holds c.mu.
func (c *labelCache) lookup(w string) (int64, bool) {
	if v, ok := decimalLabel(w); ok {
		if v < len(c.decimal) && c.decimal[v] != 0 {
			return c.decimal[v], true
		}
		return 0, false
	}
	id, ok := c.byLabel[w]
	return id, ok
}

func (c *labelCache) label(id int64) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, ok := c.byID[id]
	return w, ok
}

// learn records committed (id, label) pairs.
func (c *labelCache) learn(m map[string]int64) {
	if len(m) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID, c.byLabel = map[int64]string{}, map[string]int64{}
	}
	for w, id := range m {
		c.byID[id] = w
		if v, ok := decimalLabel(w); ok {
			if v >= len(c.decimal) {
				n := min(denseFoldLimit, max(v+1, 2*len(c.decimal), 1024))
				c.decimal = append(c.decimal, make([]int64, n-len(c.decimal))...)
			}
			c.decimal[v] = id
			continue
		}
		c.byLabel[w] = id
	}
}

// labelChunk is the number of labels or ids per statement.
const labelChunk = 500

// labelIDs returns the ids of labels (none "*"), assigning ids to the new
// ones (INSERT ... ON CONFLICT DO NOTHING in sorted order, so concurrent
// PostgreSQL transactions lock them in one order). The ids learned are
// returned in learned for the cache: they may belong to this transaction
// only, so the caller adds them to the cache after it commits.
func labelIDs(ctx context.Context, q querier, c *labelCache, labels []string, learned map[string]int64) error {
	var missing []string
	seen := map[string]bool{}
	c.mu.RLock()
	for _, w := range labels {
		if _, ok := learned[w]; ok {
			continue
		}
		if _, ok := c.lookup(w); !ok && !seen[w] {
			seen[w] = true
			missing = append(missing, w)
		}
	}
	c.mu.RUnlock()
	slices.Sort(missing)
	if len(missing) == 0 {
		return nil
	}
	err := execRows(ctx, q, len(missing), 1, "INSERT INTO influencer_labels (label) VALUES ", " ON CONFLICT (label) DO NOTHING",
		func(i int, args []any) []any { return append(args, missing[i]) })
	if err != nil {
		return err
	}
	for lo := 0; lo < len(missing); lo += labelChunk {
		part := missing[lo:min(lo+labelChunk, len(missing))]
		args := make([]any, len(part))
		for i, w := range part {
			args[i] = w
		}
		rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels WHERE label IN (?"+strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return err
		}
		for rs.Next() {
			var id int64
			var w string
			if err := rs.Scan(&id, &w); err != nil {
				rs.Close()
				return err
			}
			learned[w] = id
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
	}
	for _, w := range missing {
		if _, ok := learned[w]; !ok {
			return fmt.Errorf("ledger: influencer label %q has no id after inserting it", w)
		}
	}
	return nil
}

// encodeInfl encodes a release's (normalized) influencers with the ids in
// learned or the cache.
func encodeInfl(c *labelCache, infl []string, learned map[string]int64, buf []byte) []byte {
	star := false
	ids := make([]int64, 0, len(infl))
	c.mu.RLock()
	for _, w := range infl {
		if w == "*" {
			star = true
			continue
		}
		id, ok := c.lookup(w)
		if !ok {
			id = learned[w]
		}
		ids = append(ids, id)
	}
	c.mu.RUnlock()
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return appendInflSet(buf[:0], ids, star)
}

// encodeCached encodes a release's influencers if every label has a cached
// id, else returns nil.
func encodeCached(c *labelCache, infl []string) []byte {
	star := false
	ids := make([]int64, 0, len(infl))
	c.mu.RLock()
	for _, w := range infl {
		if w == "*" {
			star = true
			continue
		}
		id, ok := c.lookup(w)
		if !ok {
			c.mu.RUnlock()
			return nil
		}
		ids = append(ids, id)
	}
	c.mu.RUnlock()
	slices.Sort(ids)
	return appendInflSet(nil, slices.Compact(ids), star)
}

// resolveIDs makes sure every id in ids is in the cache, reading the
// missing ones from influencer_labels (ids read by a transaction are
// referenced by its releases: committed, or this transaction's own, which
// the callers only do after inserting none). An id without a label is an
// error.
func resolveIDs(ctx context.Context, q querier, c *labelCache, ids []int64) error {
	var missing []int64
	for _, id := range ids {
		if _, ok := c.label(id); !ok {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	found := map[string]int64{}
	for lo := 0; lo < len(missing); lo += labelChunk {
		part := missing[lo:min(lo+labelChunk, len(missing))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels WHERE id IN (?"+strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return err
		}
		for rs.Next() {
			var id int64
			var w string
			if err := rs.Scan(&id, &w); err != nil {
				rs.Close()
				return err
			}
			found[w] = id
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
	}
	c.learn(found)
	if len(found) != len(missing) {
		for _, id := range missing {
			if _, ok := c.label(id); !ok {
				return fmt.Errorf("ledger: stored influencer id %d has no label", id)
			}
		}
	}
	return nil
}

// inflLabels returns the sorted labels of a decoded set (all ids in the
// cache).
func inflLabels(c *labelCache, ids []int64, star bool) []string {
	out := make([]string, 0, len(ids)+1)
	if star {
		out = append(out, "*")
	}
	c.mu.RLock()
	for _, id := range ids {
		out = append(out, c.byID[id])
	}
	c.mu.RUnlock()
	slices.Sort(out)
	return out
}

// resolveReleases sets the Influencers of releases scanned with their sets
// still encoded (Release.inflIDs), one query per chunk of unknown ids.
func resolveReleases(ctx context.Context, q querier, c *labelCache, rels []*Release) error {
	type dec struct {
		ids  []int64
		star bool
	}
	decs := make([]dec, len(rels))
	var all []int64
	for i, r := range rels {
		if r.inflIDs == nil {
			continue
		}
		ids, star, err := decodeInflSet(r.inflIDs)
		if err != nil {
			return fmt.Errorf("ledger: release %d: stored influencers: %w", r.ID, err)
		}
		decs[i] = dec{ids, star}
		all = append(all, ids...)
	}
	if err := resolveIDs(ctx, q, c, all); err != nil {
		return err
	}
	for i, r := range rels {
		if r.inflIDs == nil {
			continue
		}
		r.Influencers = inflLabels(c, decs[i].ids, decs[i].star)
		r.inflIDs = nil
	}
	return nil
}
