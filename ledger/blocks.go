package ledger

// Influence sets as unions of blocks (schema version 10). On the graphs the
// release path meets, a user's influence set is the union, over its
// neighbours z, of z's protected pairs (plus z itself), so hundreds of
// parties per list come from a dozen or two blocks that every neighbour of z
// shares. A store at version 10 records each distinct block once, in
// influence_blocks (id, digest, body): body is the block's set of label ids
// (the format of influence.go, never "*"), digest its SHA-256, unique. A
// release given as blocks stores the format 2 blob
//
//	0x80 0x00 0x02 uvarint(len(A)) A B
//
// where A is the set (influence.go's formats) of its block ids (non-empty)
// and B the set of label ids to remove from their union (possibly empty):
// the release's influencers are (union of the bodies of A) minus B. The
// blob is a few dozen bytes instead of hundreds, and encoding it maps a
// dozen block keys instead of hundreds of parties; readers (re-serves,
// folds, Verify) expand it to the same set of labels the release names.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dplp/dplp/internal/par"
)

// blockSchema is the schema version that added influence_blocks.
const blockSchema = 10

func (v schemaLevel) hasBlocks() bool { return v == 0 || int(v) >= blockSchema }

// blockMigration is migration 10.
var blockMigration = []string{
	`CREATE TABLE influence_blocks (
		id {{ID}},
		digest {{BLOB}} NOT NULL UNIQUE,
		body {{BLOB}} NOT NULL
	)`,
}

// inflFormatBlocks is the format byte of block-coded sets.
const inflFormatBlocks = 2

// Blocks is a family of influencer blocks over a dictionary: block z is
// the set of labels of members(z). A release names its influencers as a
// union of blocks minus some dictionary entries (Release.InflBlocks,
// InflIdx, InflExcl), which a store at schema 10 records as block ids;
// other stores record the expanded set. Like a Dict it is read-only once
// made and safe for concurrent use; each store handle keeps the ids of the
// blocks it has recorded or looked up with it.
type Blocks struct {
	dict    *Dict
	members func(z int32) []int32

	mu  sync.Mutex
	ids map[*labelCache][]atomic.Int64 // per store handle: block id of z, 0 = not known yet
}

// NewBlocks returns the blocks members(z), z in [0, d.Len()), over d:
// members returns indices into d (any order, repeats allowed; it is called
// whenever a block is needed and must always return the same set for z,
// and the caller must not modify what it returns). An empty block names
// no one.
func NewBlocks(d *Dict, members func(z int32) []int32) (*Blocks, error) {
	if d == nil || members == nil {
		return nil, invalid("blocks without a dictionary or a members function")
	}
	return &Blocks{dict: d, members: members}, nil
}

// Dict is the dictionary the blocks index.
func (b *Blocks) Dict() *Dict { return b.dict }

func (b *Blocks) idsFor(c *labelCache) []atomic.Int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids = map[*labelCache][]atomic.Int64{}
	}
	a, ok := b.ids[c]
	if !ok {
		a = make([]atomic.Int64, b.dict.n)
		b.ids[c] = a
	}
	return a
}

// check validates a release's block keys and exclusions.
func (b *Blocks) check(user string, zs, excl []int32) error {
	for _, z := range zs {
		if z < 0 || int(z) >= b.dict.n {
			return invalid("release for %q: influencer block %d outside the dictionary of %d labels", user, z, b.dict.n)
		}
	}
	if err := b.dict.check(user, excl); err != nil {
		return err
	}
	if b.dict.bad != nil {
		for _, z := range zs {
			if err := b.dict.check(user, b.members(z)); err != nil {
				return err
			}
		}
	}
	return nil
}

// expand returns the dictionary indices of (union of the blocks zs) minus
// excl, sorted and distinct.
func (b *Blocks) expand(zs, excl []int32) []int32 {
	var out []int32
	for _, z := range zs {
		out = append(out, b.members(z)...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(excl) == 0 {
		return out
	}
	ex := slices.Clone(excl)
	slices.Sort(ex)
	return slices.DeleteFunc(out, func(i int32) bool { _, ok := slices.BinarySearch(ex, i); return ok })
}

// blockBody encodes block z's set of label ids, each found in d's array
// for c, pend or c's cache; ok is false when one has no id in any.
func blockBody(c *labelCache, b *Blocks, z int32, pend map[int32]int64, sc *idScratch) (body []byte, ok bool) {
	ids, ok := dictIDs(c, b.dict, b.members(z), pend, sc)
	if !ok {
		return nil, false
	}
	return appendInflSet(nil, slices.Compact(ids), false, true), true
}

// dictIDs maps dictionary indices to label ids (d's array for c, then pend,
// then c's cache, recording committed ones in the array) and sorts them
// (repeats kept). ok is false when some index has no id in any. The result
// lives in sc until its next use.
func dictIDs(c *labelCache, d *Dict, idx []int32, pend map[int32]int64, sc *idScratch) (_ []int64, ok bool) {
	arr := d.idsFor(c)
	ids := slices.Grow(sc.ids[:0], len(idx))
	locked := false
	defer func() {
		if locked {
			c.mu.RUnlock()
		}
	}()
	for _, i := range idx {
		id := arr[i].Load()
		if id == 0 && pend != nil {
			id = max(pend[i], 0)
		}
		if id == 0 {
			if !locked {
				c.mu.RLock()
				locked = true
			}
			var found bool
			if id, found = c.lookup(d.label(i)); !found {
				sc.ids = ids[:0]
				return nil, false
			}
			arr[i].Store(id) // committed: safe to keep
		}
		ids = append(ids, id)
	}
	sc.ids = ids[:0]
	return sortIDs(ids, &sc.tmp), true
}

// encodeBlocks encodes a block-coded release (format 2): its blocks' ids
// from b's array for c or pendBlocks, its exclusions' label ids as
// dictIDs finds them. It returns nil when an id is missing (chargeTx
// assigns it).
func encodeBlocks(c *labelCache, b *Blocks, zs, excl []int32, pendBlocks, pendLabels map[int32]int64, sc *idScratch) []byte {
	arr := b.idsFor(c)
	bids := slices.Grow(sc.bids[:0], len(zs))
	for _, z := range zs {
		id := arr[z].Load()
		if id == 0 && pendBlocks != nil {
			id = max(pendBlocks[z], 0)
		}
		if id == 0 {
			return nil
		}
		bids = append(bids, id)
	}
	sc.bids = bids[:0]
	sortSmall(bids)
	bids = slices.Compact(bids)
	ex, ok := dictIDs(c, b.dict, excl, pendLabels, sc)
	if !ok {
		return nil
	}
	ex = slices.Compact(ex)
	// One allocation of the exact size: the blocks' part is sized before
	// it is written behind its length.
	na := inflSetSize(bids, false, true)
	out := make([]byte, 0, 3+uvarintLen(uint64(na))+na+inflSetSize(ex, false, true))
	out = append(out, 0x80, 0x00, inflFormatBlocks)
	out = binary.AppendUvarint(out, uint64(na))
	out = appendInflSet(out, bids, false, true)
	return appendInflSet(out, ex, false, true)
}

// sortSmall sorts ids in increasing order: by insertion for the dozen or
// two blocks of a release (cheaper than slices.Sort at that size), else by
// slices.Sort.
func sortSmall(ids []int64) {
	if len(ids) > 32 {
		slices.Sort(ids)
		return
	}
	for i := 1; i < len(ids); i++ {
		x, j := ids[i], i
		for ; j > 0 && ids[j-1] > x; j-- {
			ids[j] = ids[j-1]
		}
		ids[j] = x
	}
}

// isBlockSet reports whether an encoded set is block coded (format 2).
func isBlockSet(blob []byte) bool {
	return len(blob) >= 3 && blob[0] == 0x80 && blob[1] == 0x00 && blob[2] == inflFormatBlocks
}

// decodeBlockSet decodes a format 2 blob into its block ids (non-empty)
// and excluded label ids. Both parts must be canonical sets without "*".
func decodeBlockSet(b []byte) (blocks, excl []int64, err error) {
	if !isBlockSet(b) {
		return nil, nil, fmt.Errorf("%w: not a block-coded set", errBadInflSet)
	}
	n, k := uvarint(b[3:])
	if k <= 0 || n == 0 || uint64(len(b)-3-k) < n {
		return nil, nil, fmt.Errorf("%w: block-coded set with a bad length", errBadInflSet)
	}
	a, rest := b[3+k:3+k+int(n)], b[3+k+int(n):]
	var star bool
	if blocks, star, err = decodeInflSet(a); err != nil {
		return nil, nil, err
	}
	if star || len(blocks) == 0 || isBlockSet(a) {
		return nil, nil, fmt.Errorf("%w: block-coded set without blocks", errBadInflSet)
	}
	if isBlockSet(rest) {
		return nil, nil, fmt.Errorf("%w: block-coded exclusions", errBadInflSet)
	}
	if excl, star, err = decodeInflSet(rest); err != nil {
		return nil, nil, err
	}
	if star {
		return nil, nil, fmt.Errorf("%w: \"*\" among a block-coded set's exclusions", errBadInflSet)
	}
	return blocks, excl, nil
}

// blockCache maps block ids to their decoded bodies (label ids, sorted).
// The zero value is ready to use. Bodies never change once recorded.
type blockCache struct {
	mu     sync.RWMutex
	bodies map[int64][]int64
	// byDigest maps the digests of the committed blocks to their ids, from
	// preloadIDs, and then also those the handle records or looks up;
	// kept only when the preload found blocks (a ledger that already
	// holds them, where most blocks a release meets are known): in the
	// first release into a new ledger it would only cost memory.
	byDigest map[[sha256.Size]byte]int64
}

// loadBlocks makes sure the bodies of ids are in bc, reading the missing
// ones (one SELECT per chunk). A missing block or a malformed body is an
// error.
func loadBlocks(ctx context.Context, q querier, bc *blockCache, ids []int64) error {
	bc.mu.RLock()
	var missing []int64
	for _, id := range ids {
		if _, ok := bc.bodies[id]; !ok {
			missing = append(missing, id)
		}
	}
	bc.mu.RUnlock()
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	got := map[int64][]int64{}
	for lo := 0; lo < len(missing); lo += labelChunk {
		part := missing[lo:min(lo+labelChunk, len(missing))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rs, err := q.query(ctx, "SELECT id, body FROM influence_blocks WHERE id IN (?"+strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return err
		}
		for rs.Next() {
			var id int64
			var body []byte
			if err := rs.Scan(&id, &body); err != nil {
				rs.Close()
				return err
			}
			set, star, err := decodeInflSet(body)
			if err == nil && (star || isBlockSet(body)) {
				err = fmt.Errorf("%w: a block holds \"*\" or blocks", errBadInflSet)
			}
			if err != nil {
				rs.Close()
				return fmt.Errorf("ledger: influence block %d: %w", id, err)
			}
			got[id] = set
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
	}
	for _, id := range missing {
		if _, ok := got[id]; !ok {
			return fmt.Errorf("ledger: stored influence block %d does not exist", id)
		}
	}
	bc.mu.Lock()
	if bc.bodies == nil {
		bc.bodies = map[int64][]int64{}
	}
	for id, set := range got {
		bc.bodies[id] = set
	}
	bc.mu.Unlock()
	return nil
}

// expandBlockSet returns the label ids of a block-coded set (bodies in bc):
// the union of the blocks' bodies minus excl, sorted and distinct.
func expandBlockSet(bc *blockCache, blocks, excl []int64) []int64 {
	var out []int64
	bc.mu.RLock()
	for _, id := range blocks {
		out = append(out, bc.bodies[id]...)
	}
	bc.mu.RUnlock()
	var tmp []int64
	out = slices.Compact(sortIDs(out, &tmp))
	if len(excl) == 0 {
		return out
	}
	return slices.DeleteFunc(out, func(id int64) bool { _, ok := slices.BinarySearch(excl, id); return ok })
}

// pendingBlocks holds, during one charge transaction, the ids of blocks
// the transaction recorded or looked up (committed to the Blocks' arrays
// after the commit, as dictPending's labels).
type pendingBlocks map[*Blocks]map[int32]int64

// registerBlocks gives every block of the fresh block-coded items an id
// known to this transaction: blocks already recorded (same digest) keep
// theirs, the others are inserted. The labels of their members must have
// ids already (labelIDs and dictPending.resolve ran).
func registerBlocks(ctx context.Context, q querier, c *labelCache, items []Release, fresh []int, enc []encoded, pend dictPending, pb pendingBlocks, digests map[[sha256.Size]byte]int64) error {
	var wants []blockWant
	var sc idScratch
	for _, i := range fresh {
		it := &items[i]
		if enc[i].set != nil || it.InflBlocks == nil {
			continue
		}
		b := it.InflBlocks
		arr := b.idsFor(c)
		if pb[b] == nil {
			pb[b] = map[int32]int64{}
		}
		for _, z := range it.InflIdx {
			if arr[z].Load() != 0 || pb[b][z] != 0 {
				continue
			}
			body, ok := blockBody(c, b, z, pend.idsOf(b.dict), &sc)
			if !ok {
				return fmt.Errorf("ledger: a member of influence block %d of user %q has no label id", z, it.User)
			}
			sum := sha256.Sum256(body)
			if id, ok := c.blocks.digestID(sum); ok { // recorded already: no statement
				pb[b][z] = id
				continue
			}
			pb[b][z] = -1
			wants = append(wants, blockWant{b, z, body, sum})
		}
	}
	return insertBlocks(ctx, q, wants, func(w blockWant, id int64) {
		pb[w.b][w.z] = id
		digests[w.sum] = id
	})
}

// blockWant is a block to record: block z of b, its body and digest.
type blockWant struct {
	b    *Blocks
	z    int32
	body []byte
	sum  [sha256.Size]byte
}

// digestID returns the id of the committed block with digest sum, if the
// handle keeps digests (byDigest) and knows it.
func (bc *blockCache) digestID(sum [sha256.Size]byte) (int64, bool) {
	bc.mu.RLock()
	defer bc.mu.RUnlock()
	id, ok := bc.byDigest[sum]
	return id, ok
}

// digestOrder returns the indexes of wants in digest order. It sorts
// 16-byte (digest prefix, index) pairs and compares whole digests only on
// equal prefixes: sorting the wants themselves moved 72-byte records and
// compared 32-byte digests, a tenth of the first 10 M release's set-up.
func digestOrder(wants []blockWant) []int32 {
	type keyed struct {
		pre uint64
		i   int32
	}
	ks := make([]keyed, len(wants))
	for i := range wants {
		ks[i] = keyed{binary.BigEndian.Uint64(wants[i].sum[:8]), int32(i)}
	}
	slices.SortFunc(ks, func(x, y keyed) int {
		if x.pre != y.pre {
			return cmp.Compare(x.pre, y.pre)
		}
		return bytes.Compare(wants[x.i].sum[:], wants[y.i].sum[:])
	})
	ord := make([]int32, len(ks))
	for j, k := range ks {
		ord[j] = k.i
	}
	return ord
}

// insertBlocks records the blocks of wants (in digest order: one lock
// order for concurrent PostgreSQL transactions; each digest once) and calls
// got, in digest order, with each want and its block's id: the id of the
// row it inserted, or of the row with its digest that another transaction
// recorded first. wants itself is not reordered.
func insertBlocks(ctx context.Context, q querier, wants []blockWant, got func(w blockWant, id int64)) error {
	return recordBlocks(ctx, q, wants, 0, got)
}

// recordBlocks is insertBlocks; first > 0 (freshIDs's) has the blocks
// inserted with the ids first, first+1, ... in digest order instead.
func recordBlocks(ctx context.Context, q querier, wants []blockWant, first int64, got func(w blockWant, id int64)) error {
	if len(wants) == 0 {
		return nil
	}
	ord := digestOrder(wants)
	// uniq: the first want of each digest, by index (no copy of the wants).
	var uniq []int32
	for i, k := range ord {
		if i == 0 || wants[k].sum != wants[ord[i-1]].sum {
			uniq = append(uniq, k)
		}
	}
	ids := make([]int64, len(uniq)) // of wants[uniq[i]]
	if first > 0 {
		var err error
		ids, err = insertFresh(ctx, q, "influence_blocks", "id, digest, body", len(uniq), first, func(j int, args []any) []any {
			w := &wants[uniq[j]]
			return append(args, w.sum[:], w.body)
		})
		if err != nil {
			return err
		}
	}
	// Rows come back in the order inserted in practice: the digest at the
	// cursor is tried before a binary search (no map of a million
	// digests for a batch's first release).
	next := 0
	put := func(id int64, sum [sha256.Size]byte) {
		i := next
		if i >= len(uniq) || wants[uniq[i]].sum != sum {
			var ok bool
			if i, ok = slices.BinarySearchFunc(uniq, sum, func(k int32, t [sha256.Size]byte) int { return bytes.Compare(wants[k].sum[:], t[:]) }); !ok {
				return // not asked for: cannot happen
			}
		}
		ids[i] = id
		next = i + 1
	}
	const per = labelChunk / 2
	for lo := 0; first == 0 && lo < len(uniq); lo += per {
		part := uniq[lo:min(lo+per, len(uniq))]
		args := make([]any, 0, 2*len(part))
		for _, k := range part {
			args = append(args, wants[k].sum[:], wants[k].body)
		}
		next = lo
		rs, err := q.query(ctx, "INSERT INTO influence_blocks (digest, body) VALUES (?, ?)"+strings.Repeat(", (?, ?)", len(part)-1)+
			" ON CONFLICT (digest) DO NOTHING RETURNING id, digest", args...)
		if err != nil {
			return err
		}
		if err := scanDigests(rs, put); err != nil {
			return err
		}
	}
	var others []any
	for i, k := range uniq {
		if ids[i] == 0 {
			others = append(others, wants[k].sum[:])
		}
	}
	next = 0
	for lo := 0; lo < len(others); lo += labelChunk {
		part := others[lo:min(lo+labelChunk, len(others))]
		rs, err := q.query(ctx, "SELECT id, digest FROM influence_blocks WHERE digest IN (?"+strings.Repeat(", ?", len(part)-1)+")", part...)
		if err != nil {
			return err
		}
		if err := scanDigests(rs, put); err != nil {
			return err
		}
	}
	j := 0 // ord and uniq are both in digest order
	for _, k := range ord {
		w := wants[k]
		for wants[uniq[j]].sum != w.sum {
			j++
		}
		if ids[j] == 0 {
			return fmt.Errorf("ledger: influence block %x has no id after inserting it", w.sum[:8])
		}
		got(w, ids[j])
	}
	return nil
}

// PrepareInfluence records, ahead of a batch release that will meet most
// of them, every block of b that the store does not hold yet (the empty
// blocks are one row), and
// the labels of their members: in two write transactions (labels, then
// blocks) with the bodies and digests computed on all cores, inserted in
// label and digest order, instead of in the release's charge transactions
// as they come (one core, scattered over the indexes). Later charges of
// releases with these blocks record no label and no block. Recording a
// block no release names is harmless (Verify accepts it; it is a row of
// the block table only). A store before schema 10 does nothing.
func (s *sqlStore) PrepareInfluence(ctx context.Context, b *Blocks) error {
	if !s.schema.hasBlocks() || b == nil {
		return nil
	}
	if err := s.preloadAll(ctx); err != nil {
		return err
	}
	c, d := &s.labels, b.dict
	arr := b.idsFor(c)
	// The members' labels the handle does not know, in label order. Each
	// label is made once (a decimal graph formats one on every call) and
	// sorted with its index: comparing by d.label made two strings per
	// comparison (most of the 107 s this registration took for ten million
	// labels).
	type labelled struct {
		l string
		i int32
	}
	seen := make([]bool, d.n)
	var ms []labelled
	var order []int32 // the indices in label order (Dict.InLabelOrder), or nil
	if d.order != nil {
		if order = d.order(); len(order) != d.n {
			order = nil
		}
	}
	c.mu.RLock()
	for z := range int32(d.n) {
		if arr[z].Load() != 0 {
			continue
		}
		for _, i := range b.members(z) {
			if i < 0 || int(i) >= d.n || seen[i] {
				continue
			}
			seen[i] = true
			if d.bad[i] != nil || order != nil {
				continue // refused by a release naming it, never recorded; or listed below
			}
			w := d.label(i)
			if _, ok := c.lookup(w); !ok {
				ms = append(ms, labelled{w, i})
			}
		}
	}
	// With an order, the members (seen) are listed in it, each once
	// (listing clears it), then any it left out. The sort below then only
	// checks that they came in label order, unless the order was wrong.
	for _, i := range order {
		if i < 0 || int(i) >= d.n || !seen[i] || d.bad[i] != nil {
			continue
		}
		seen[i] = false
		if w := d.label(i); !c.has(w) {
			ms = append(ms, labelled{w, i})
		}
	}
	if order != nil {
		for i, left := range seen {
			if !left || d.bad[int32(i)] != nil {
				continue
			}
			if w := d.label(int32(i)); !c.has(w) {
				ms = append(ms, labelled{w, int32(i)})
			}
		}
	}
	c.mu.RUnlock()
	if len(ms) > 0 {
		byLabel := func(x, y labelled) int { return strings.Compare(x.l, y.l) }
		if !slices.IsSortedFunc(ms, byLabel) {
			slices.SortFunc(ms, byLabel)
		}
		missing := make([]int32, len(ms))
		labels := make([]string, len(ms))
		for j, m := range ms {
			missing[j], labels[j] = m.i, m.l
		}
		var ids []int64
		err := s.b.write(ctx, func(q querier) error {
			first, err := freshIDs(ctx, q, s.b, "influencer_labels")
			if err != nil {
				return err
			}
			if first == 0 {
				ids, err = insertLabels(ctx, q, labels)
				return err
			}
			ids, err = insertFreshLabels(ctx, q, labels, first)
			return err
		})
		if err != nil {
			return fmt.Errorf("ledger: recording influencer labels: %w", err)
		}
		c.learnPairs(labels, ids) // committed now
		la := d.idsFor(c)
		for j, i := range missing {
			la[i].Store(ids[j])
		}
	}
	// Bodies and digests on all cores; blocks with a member the
	// dictionary refuses are left to the charges (which refuse them).
	wants := make([]blockWant, d.n)
	err := par.Run(ctx, d.n, par.Options{Chunk: 256}, func(int) *idScratch { return new(idScratch) }, func(sc *idScratch, zi int) error {
		z := int32(zi)
		ms := b.members(z)
		if arr[z].Load() != 0 {
			return nil
		}
		for _, i := range ms {
			if i < 0 || int(i) >= d.n || d.bad[i] != nil {
				return nil
			}
		}
		body, ok := blockBody(c, b, z, nil, sc)
		if !ok {
			return nil // a label recorded by nobody (cannot happen after the above)
		}
		sum := sha256.Sum256(body)
		if id, ok := c.blocks.digestID(sum); ok {
			arr[z].Store(id) // committed
			return nil
		}
		wants[z] = blockWant{b, z, body, sum}
		return nil
	})
	if err != nil {
		return err
	}
	wants = slices.DeleteFunc(wants, func(w blockWant) bool { return w.b == nil })
	ids := make([]int64, d.n) // by block key, committed below
	err = s.b.write(ctx, func(q querier) error {
		clear(ids)
		first, err := freshIDs(ctx, q, s.b, "influence_blocks")
		if err != nil {
			return err
		}
		return recordBlocks(ctx, q, wants, first, func(w blockWant, id int64) { ids[w.z] = id })
	})
	if err != nil {
		return fmt.Errorf("ledger: recording influence blocks: %w", err)
	}
	var got map[[sha256.Size]byte]int64
	if c.blocks.tracking() {
		got = make(map[[sha256.Size]byte]int64, len(wants))
	}
	for _, w := range wants { // committed now
		arr[w.z].Store(ids[w.z])
		if got != nil {
			got[w.sum] = ids[w.z]
		}
	}
	c.blocks.commitDigests(got)
	return nil
}

// tracking reports whether the handle keeps block digests (byDigest).
func (bc *blockCache) tracking() bool {
	bc.mu.RLock()
	defer bc.mu.RUnlock()
	return bc.byDigest != nil
}

// scanDigests calls found with every (id, digest) row of rs and closes it.
func scanDigests(rs rows, found func(id int64, sum [sha256.Size]byte)) error {
	defer rs.Close()
	for rs.Next() {
		var id int64
		var d []byte
		if err := rs.Scan(&id, &d); err != nil {
			return err
		}
		if len(d) != sha256.Size {
			return fmt.Errorf("ledger: influence block %d has a digest of %d bytes", id, len(d))
		}
		found(id, [sha256.Size]byte(d))
	}
	return rs.Err()
}

// commitDigests records the digests of blocks recorded or looked up by a
// transaction, committed now.
func (bc *blockCache) commitDigests(digests map[[sha256.Size]byte]int64) {
	if len(digests) == 0 {
		return
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.byDigest == nil {
		return // not kept (see byDigest)
	}
	for d, id := range digests {
		bc.byDigest[d] = id
	}
}

// preloadMin is the dictionary size from which a store handle, the first
// time a release names influencers through a dictionary, reads every label
// id and block digest of the store into its caches (preloadIDs) instead of
// looking them up chunk by chunk as releases meet them: a batch release
// over a large graph meets most of them, and a release into a ledger that
// already knows them (the next day's lists) then records no label and no
// block with a statement. A variable for tests.
var preloadMin = 1 << 16

// preloadIDs reads every (id, label) of influencer_labels and (id, digest)
// of influence_blocks (schema 10) into c.
func preloadIDs(ctx context.Context, q querier, c *labelCache, blocks bool) error {
	labels := map[string]int64{}
	rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels")
	if err != nil {
		return err
	}
	if err := scanLabels(rs, func(id int64, w string) { labels[w] = id }); err != nil {
		return err
	}
	c.learn(labels)
	if !blocks {
		return nil
	}
	digests := map[[sha256.Size]byte]int64{}
	rs, err = q.query(ctx, "SELECT id, digest FROM influence_blocks")
	if err != nil {
		return err
	}
	if err := scanDigests(rs, func(id int64, sum [sha256.Size]byte) { digests[sum] = id }); err != nil {
		return err
	}
	if len(digests) > 0 {
		c.blocks.mu.Lock()
		c.blocks.byDigest = digests
		c.blocks.mu.Unlock()
	}
	return nil
}

// commit copies the block ids of pb, committed now, into the Blocks'
// arrays for c.
func (pb pendingBlocks) commit(c *labelCache) {
	for b, m := range pb {
		arr := b.idsFor(c)
		for z, id := range m {
			if id > 0 && arr[z].Load() == 0 {
				arr[z].Store(id)
			}
		}
	}
}
