package ledger

// Compact influence sets (schema versions 8 and 9). A release's influencers
// were stored as a JSON array of labels in releases.influencers: with
// exposure tracking a release carries hundreds of labels, and the arrays were
// most of the ledger (7-9x its size without them). From version 8 every label
// is stored once, in influencer_labels (id, label), and a release stores the
// ids of its influencers in releases.infl_ids, a BLOB, in one of two formats.
// Let id1 < id2 < ... < idn be the ids of its labels other than "*" (every
// id >= 1) and star 1 when "*" (every party) is one of them.
//
// The schema-8 format (delta-coded uvarints; all a store at schema 8 writes):
//
//	uvarint(n<<1 | star) uvarint(id1) uvarint(id2-id1) ... uvarint(idn-id(n-1))
//
// The empty set is the single byte 0. The encoder always wrote minimal
// uvarints, so a schema-8 blob never starts with the bytes 0x80 0x00.
//
// Schema 9 (Elias-Fano), the format 1 blob:
//
//	0x80 0x00 0x01 uvarint(n<<1 | star) [uvarint(idn) byte(l) bits]
//
// 0x80 0x00 (a non-minimal uvarint 0) marks a versioned blob and 0x01 is the
// format. The bracketed part is present when n > 0. With x_i = id_i - 1, the
// bits (little-endian, least significant bit first) hold the low l bits of
// x_1 .. x_n (n*l bits), then the upper bit vector of n + (x_n>>l) bits in
// which bit (x_i>>l) + i - 1 is set for every i (and no other), then zero
// padding to a whole byte. l (0..62) is the width that minimizes the size
// (the smallest such): about 2 + log2(idn/n) bits per id, against 8-16 for
// the uvarints. A store at schema 9 or later writes whichever format is
// shorter (format 1 for all but the smallest sets; the empty set stays the
// byte 0). Each decoder accepts exactly its canonical encodings (minimal
// uvarints; for format 1 the chosen width, matching sizes, zero padding,
// strictly increasing ids), so a truncated or extended blob is an error,
// never another set.
//
// Releases recorded before version 8 keep their JSON array (infl_ids NULL)
// and are read from it; later ones store '' in influencers. Version 9 does
// not rewrite schema-8 blobs: both formats are read. Label ids never change
// once assigned (labels are never deleted or renamed), so a store caches the
// committed ids it has seen.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/bits"
	"slices"
	"strconv"
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

// efSchema is the schema version from which influencer sets are written
// Elias-Fano coded (format 1); stores at version 8 get the uvarint format,
// which the dplp versions that know only version 8 read.
const efSchema = 9

func (v schemaLevel) hasEF() bool { return v == 0 || int(v) >= efSchema }

// efMigration is migration 9: no table changes, only the new blob format
// (a dplp that knows only version 8 refuses the store instead of failing
// to decode its new sets).
var efMigration []string

// errBadInflSet is wrapped by decodeInflSet's errors.
var errBadInflSet = errors.New("malformed influencer id set")

// maxInflID bounds stored ids (far above any id a store assigns).
const maxInflID = 1 << 62

// inflFormatEF is the format byte of Elias-Fano coded sets.
const inflFormatEF = 1

// appendInflSet appends the encoding of a set of label ids (sorted, strictly
// increasing, every id in [1, 2^62]) and star to buf. When ef is set (stores
// at schema 9 or later) it writes the shorter of the two formats (the
// schema-8 one on a tie: the empty set stays one byte, and sets of a few ids
// are shorter as uvarints); else the schema-8 format.
func appendInflSet(buf []byte, ids []int64, star, ef bool) []byte {
	if ef && len(ids) > 0 && efBlobSize(ids, star) < v8BlobSize(ids, star) {
		return appendInflSetEF(buf, ids, star)
	}
	return appendInflSetV8(buf, ids, star)
}

// inflSetSize is len(appendInflSet(nil, ids, star, ef)).
func inflSetSize(ids []int64, star, ef bool) int {
	n := v8BlobSize(ids, star)
	if ef && len(ids) > 0 {
		n = min(n, efBlobSize(ids, star))
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint(nil, v).
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// v8BlobSize is the length of appendInflSetV8's encoding.
func v8BlobSize(ids []int64, star bool) int {
	n, prev := uvarintLen(inflHeader(len(ids), star)), int64(0)
	for _, id := range ids {
		n += uvarintLen(uint64(id - prev))
		prev = id
	}
	return n
}

// efBlobSize is the length of appendInflSetEF's encoding of a non-empty set.
func efBlobSize(ids []int64, star bool) int {
	top := uint64(ids[len(ids)-1] - 1)
	return 3 + uvarintLen(inflHeader(len(ids), star)) + uvarintLen(top+1) + 1 + int((efSize(uint64(len(ids)), efLowBits(len(ids), top), top)+7)/8)
}

// inflHeader is the uvarint header of both formats: n<<1 | star.
func inflHeader(n int, star bool) uint64 {
	h := uint64(n) << 1
	if star {
		h |= 1
	}
	return h
}

// appendInflSetV8 appends the schema-8 (delta-coded uvarint) encoding.
func appendInflSetV8(buf []byte, ids []int64, star bool) []byte {
	buf = binary.AppendUvarint(buf, inflHeader(len(ids), star))
	prev := int64(0)
	for _, id := range ids {
		buf = binary.AppendUvarint(buf, uint64(id-prev))
		prev = id
	}
	return buf
}

// efLowBits returns the number of low bits per value (0..62) that
// minimizes the Elias-Fano size of n values whose largest is top.
func efLowBits(n int, top uint64) uint {
	best, bestSize := uint(0), efSize(uint64(n), 0, top)
	for l := uint(1); l <= 62; l++ {
		if size := efSize(uint64(n), l, top); size < bestSize {
			best, bestSize = l, size
		}
	}
	return best
}

// efSize returns the number of bits of an Elias-Fano coded set: n values
// of l low bits and the upper bit vector.
func efSize(n uint64, l uint, top uint64) uint64 { return n*uint64(l) + n + top>>l }

// appendInflSetEF appends the Elias-Fano (format 1) encoding (appendInflSet
// never uses it for the empty set, which it accepts all the same): the low
// bits, then the upper vector (each id's one bit after the zeros since the
// previous one), written in order, least significant bit first, through a
// 64-bit accumulator flushed a word at a time.
func appendInflSetEF(buf []byte, ids []int64, star bool) []byte {
	buf = append(buf, 0x80, 0x00, inflFormatEF)
	buf = binary.AppendUvarint(buf, inflHeader(len(ids), star))
	if len(ids) == 0 {
		return buf
	}
	top := uint64(ids[len(ids)-1] - 1)
	buf = binary.AppendUvarint(buf, top+1)
	l := efLowBits(len(ids), top)
	buf = append(buf, byte(l))
	n := uint64(len(ids))
	out := slices.Grow(buf, int((efSize(n, l, top)+7)/8)+8)
	var acc uint64 // pending bits, the first at bit 0
	var k uint     // number of pending bits, < 64
	// put appends the low w bits of v (w <= 64, v has no higher bits).
	put := func(v uint64, w uint) {
		acc |= v << k
		if k+w < 64 {
			k += w
			return
		}
		out = binary.LittleEndian.AppendUint64(out, acc)
		spill := k + w - 64 // bits of v not in the word written
		acc, k = 0, spill
		if spill > 0 {
			acc = v >> (w - spill)
		}
	}
	if l > 0 {
		mask := uint64(1)<<l - 1
		for _, id := range ids {
			v := uint64(id-1) & mask
			acc |= v << k
			if k+l < 64 {
				k += l
				continue
			}
			out = binary.LittleEndian.AppendUint64(out, acc)
			spill := k + l - 64
			acc, k = 0, spill
			if spill > 0 {
				acc = v >> (l - spill)
			}
		}
	}
	prev := uint64(0)
	for _, id := range ids {
		high := uint64(id-1) >> l
		zeros := high - prev
		prev = high
		if k+uint(zeros) < 63 { // the common case: the one bit fits
			acc |= 1 << (k + uint(zeros))
			k += uint(zeros) + 1
			continue
		}
		for ; zeros > 63; zeros -= 63 {
			put(0, 63)
		}
		put(1<<zeros, uint(zeros)+1)
	}
	for ; k > 0; k -= min(k, 8) { // the last bits, zero padded to a byte
		out = append(out, byte(acc))
		acc >>= 8
	}
	return out
}

// decodeInflSet decodes an encoded set of either format: the ids (strictly
// increasing, in [1, 2^62]) and star. A blob that is not the canonical
// encoding of a set is an error wrapping errBadInflSet, never a panic.
func decodeInflSet(b []byte) (ids []int64, star bool, err error) {
	if len(b) >= 2 && b[0] == 0x80 && b[1] == 0x00 {
		if len(b) < 3 || b[2] != inflFormatEF {
			return nil, false, fmt.Errorf("%w: unknown format (a newer dplp wrote it?)", errBadInflSet)
		}
		return decodeInflSetEF(b[3:])
	}
	return decodeInflSetV8(b)
}

// decodeInflSetV8 decodes the schema-8 format.
func decodeInflSetV8(b []byte) (ids []int64, star bool, err error) {
	h, n := uvarint(b)
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
		d, n := uvarint(b)
		if n <= 0 || d == 0 || d > maxInflID || prev+d > maxInflID {
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

// uvarint is binary.Uvarint that also refuses non-minimal encodings (n <=
// 0), which no encoder writes: so every accepted blob is canonical.
func uvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n > 0 && n != uvarintLen(v) {
		return 0, -n
	}
	return v, n
}

// load64 returns the bits of b from bit offset off on (least significant
// first; zeros past the end of b): at least 57 bits of b when that many are
// left.
func load64(b []byte, off uint64) uint64 {
	k, sh := off/8, off%8
	if k+8 <= uint64(len(b)) {
		return binary.LittleEndian.Uint64(b[k:]) >> sh
	}
	var v uint64
	for j := k; j < uint64(len(b)); j++ {
		v |= uint64(b[j]) << (8 * (j - k))
	}
	return v >> sh
}

// bitsAt returns the w (<= 62) bits of b at bit offset off.
func bitsAt(b []byte, off uint64, w uint) uint64 {
	if w <= 56 {
		return load64(b, off) & (1<<w - 1)
	}
	return load64(b, off)&(1<<32-1) | (load64(b, off+32)&(1<<(w-32)-1))<<32
}

// decodeInflSetEF decodes format 1 after its three marker bytes.
func decodeInflSetEF(b []byte) (ids []int64, star bool, err error) {
	h, n := uvarint(b)
	if n <= 0 {
		return nil, false, fmt.Errorf("%w: bad header", errBadInflSet)
	}
	b = b[n:]
	count := h >> 1
	star = h&1 == 1
	if count == 0 {
		if len(b) != 0 {
			return nil, false, fmt.Errorf("%w: %d trailing bytes", errBadInflSet, len(b))
		}
		return nil, star, nil
	}
	last, n := uvarint(b)
	if n <= 0 || last < count || last > maxInflID {
		return nil, false, fmt.Errorf("%w: bad largest id", errBadInflSet)
	}
	b = b[n:]
	if len(b) == 0 || b[0] > 62 {
		return nil, false, fmt.Errorf("%w: bad low-bit width", errBadInflSet)
	}
	l := uint(b[0])
	b = b[1:]
	top := last - 1
	// Every id takes at least one bit: this bounds count (and so the
	// allocation and every product below) by the blob's size.
	if count > uint64(len(b))*8 {
		return nil, false, fmt.Errorf("%w: %d ids in %d bytes", errBadInflSet, count, len(b))
	}
	if want := efLowBits(int(count), top); l != want {
		return nil, false, fmt.Errorf("%w: low-bit width %d, the encoder uses %d", errBadInflSet, l, want)
	}
	size := efSize(count, l, top)
	if want := (size + 7) / 8; want != uint64(len(b)) {
		return nil, false, fmt.Errorf("%w: %d ids need %d bytes, found %d", errBadInflSet, count, want, len(b))
	}
	if pad := uint(uint64(len(b))*8 - size); pad > 0 && b[len(b)-1]>>(8-pad) != 0 {
		return nil, false, fmt.Errorf("%w: nonzero padding", errBadInflSet)
	}
	// The upper bit vector: bits [count*l, size).
	start := count * uint64(l)
	ids = make([]int64, 0, count)
	pos := start
	for i := uint64(0); i < count; i++ {
		for {
			if pos >= size {
				return nil, false, fmt.Errorf("%w: upper bits overrun at position %d", errBadInflSet, i)
			}
			if w := load64(b, pos); w != 0 {
				pos += uint64(bits.TrailingZeros64(w))
				break
			}
			pos += 57 // load64 read at least 57 bits, or all that were left
		}
		// The i-th one bit (at pos) must leave room for the count-i-1
		// ones after it.
		if pos-start+1 > size-start-(count-i-1) {
			return nil, false, fmt.Errorf("%w: upper bits overrun at position %d", errBadInflSet, i)
		}
		high := pos - start - i
		pos++
		x := high<<l | bitsAt(b, i*uint64(l), l)
		if i > 0 && x <= uint64(ids[i-1]-1) {
			return nil, false, fmt.Errorf("%w: ids not increasing at position %d", errBadInflSet, i)
		}
		ids = append(ids, int64(x+1))
	}
	if uint64(ids[count-1]) != last || pos != size {
		return nil, false, fmt.Errorf("%w: largest id %d, header says %d", errBadInflSet, ids[count-1], last)
	}
	return ids, star, nil
}

// labelCache maps committed label ids to labels and back. The zero value is
// ready to use.
type labelCache struct {
	mu sync.RWMutex
	// byID holds the labels of ids not in decByID.
	byID    map[int64]string
	byLabel map[string]int64 // labels other than decimal ones
	// decByID holds, indexed by id (ids below idDenseLimit), 1 + the
	// number of a decimal label (decimalLabel); 0: not cached here. Four
	// bytes an id instead of a map entry and a string (the map took 12% of
	// a 1 M release's live heap, scanned by every garbage collection); the
	// label is formatted back when asked for.
	decByID []int32
	// decimal holds the ids of labels that are canonical decimal numbers
	// below denseFoldLimit (the common case), indexed by the number; 0:
	// not cached. One array access instead of a string map lookup: a
	// charge looks up hundreds of labels per release.
	decimal []int64
	// blocks caches influence blocks' bodies (blocks.go).
	blocks blockCache
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

// has reports whether w has an id in c (c.mu held).
func (c *labelCache) has(w string) bool {
	_, ok := c.lookup(w)
	return ok
}

func (c *labelCache) label(id int64) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.labelOf(id)
}

// idDenseLimit bounds the ids kept in decByID (larger ids of decimal
// labels go to byID): 256 MB of array at most.
const idDenseLimit = 1 << 26

// decimalOf returns the number of id's label when it is a decimal label
// cached in decByID; the caller holds c.mu.
func (c *labelCache) decimalOf(id int64) (int, bool) {
	if id >= 0 && id < int64(len(c.decByID)) {
		if x := c.decByID[id]; x != 0 {
			return int(x - 1), true
		}
	}
	return 0, false
}

// labelOf returns the cached label of id; the caller holds c.mu.
func (c *labelCache) labelOf(id int64) (string, bool) {
	if v, ok := c.decimalOf(id); ok {
		return strconv.Itoa(v), true
	}
	w, ok := c.byID[id]
	return w, ok
}

// knows reports whether id's label is cached; the caller holds c.mu.
func (c *labelCache) knows(id int64) bool {
	if _, ok := c.decimalOf(id); ok {
		return true
	}
	_, ok := c.byID[id]
	return ok
}

// learn records committed (id, label) pairs.
func (c *labelCache) learn(m map[string]int64) { c.learnSeq(len(m), maps.All(m)) }

// learnPairs records committed ids[i] of labels[i].
func (c *labelCache) learnPairs(labels []string, ids []int64) {
	c.learnSeq(len(labels), func(yield func(string, int64) bool) {
		for i, w := range labels {
			if !yield(w, ids[i]) {
				return
			}
		}
	})
}

// learnSeq records the n committed (label, id) pairs of seq.
func (c *labelCache) learnSeq(n int, seq iter.Seq2[string, int64]) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID, c.byLabel = map[int64]string{}, map[string]int64{}
	}
	for w, id := range seq {
		v, ok := decimalLabel(w)
		if !ok {
			c.byID[id] = w
			c.byLabel[w] = id
			continue
		}
		c.decimal = growDense(c.decimal, v, denseFoldLimit)
		c.decimal[v] = id
		if id < 0 || id >= idDenseLimit {
			c.byID[id] = w
			continue
		}
		c.decByID = growDense(c.decByID, int(id), idDenseLimit)
		c.decByID[id] = int32(v + 1) // v < denseFoldLimit <= 1<<25
	}
}

// growDense returns s, zero-extended when needed so that index i
// (0 <= i < limit) is in range: to twice its length, at least 1024 and
// i+1, at most limit. The dense arrays indexed by a label's number or id
// grow this way.
func growDense[T any](s []T, i, limit int) []T {
	if i < len(s) {
		return s
	}
	n := min(limit, max(i+1, 2*len(s), 1024))
	return append(s, make([]T, n-len(s))...)
}

// labelChunk is the number of labels or ids per statement.
const labelChunk = 500

// selectLabels reads the rows of influencer_labels whose column col ("id"
// or "label") is one of keys, one SELECT per chunk of labelChunk keys, and
// calls found with each row's id and label. Keys without a row are skipped
// silently: the callers check what they needed.
func selectLabels[K int64 | string](ctx context.Context, q querier, col string, keys []K, found func(id int64, label string)) error {
	for lo := 0; lo < len(keys); lo += labelChunk {
		part := keys[lo:min(lo+labelChunk, len(keys))]
		args := make([]any, len(part))
		for i, k := range part {
			args[i] = k
		}
		rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels WHERE "+col+" IN (?"+strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return err
		}
		if err := scanLabels(rs, found); err != nil {
			return err
		}
	}
	return nil
}

// scanLabels calls found with every (id, label) row of rs and closes it.
func scanLabels(rs rows, found func(id int64, label string)) error {
	defer rs.Close()
	for rs.Next() {
		var id int64
		var w string
		if err := rs.Scan(&id, &w); err != nil {
			return err
		}
		found(id, w)
	}
	return rs.Err()
}

// labelIDs makes sure every label of sets (other than "*") has an id in
// the cache or in learned: it assigns ids to the labels no store has seen
// (INSERT ... ON CONFLICT DO NOTHING in sorted order, so concurrent
// PostgreSQL transactions lock them in one order) and reads those of the
// others the cache does not know. Only labels in neither are collected (a
// batch's sets hold hundreds of thousands of labels, most of them cached).
// The ids read or assigned are returned in learned for the cache: they may
// belong to this transaction only, so the caller adds them to the cache
// after it commits.
func labelIDs(ctx context.Context, q querier, c *labelCache, sets [][]string, learned map[string]int64) error {
	var missing []string
	seen := map[string]bool{}
	c.mu.RLock()
	for _, set := range sets {
		for _, w := range set {
			if w == "*" {
				continue
			}
			if _, ok := learned[w]; ok {
				continue
			}
			if _, ok := c.lookup(w); !ok && !seen[w] {
				seen[w] = true
				missing = append(missing, w)
			}
		}
	}
	c.mu.RUnlock()
	slices.Sort(missing)
	ids, err := insertLabels(ctx, q, missing)
	if err != nil {
		return err
	}
	for i, w := range missing {
		learned[w] = ids[i]
	}
	return nil
}

// insertLabels returns the ids of labels (sorted bytewise, distinct, none
// "*"), in order, assigning ids to those no transaction has recorded: one
// INSERT ... ON CONFLICT DO NOTHING per chunk, in sorted order (so that
// concurrent PostgreSQL transactions lock them in one order), whose
// RETURNING rows give the new ids; only labels another transaction
// inserted first (another process or handle) are read with a SELECT. The
// ids may be this transaction's own: the caller publishes them after it
// commits.
func insertLabels(ctx context.Context, q querier, labels []string) ([]int64, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(labels))
	// Rows come back in the order inserted in practice, so the label at
	// the cursor is tried before a binary search (no map of a million
	// labels for a batch's first release).
	next := 0
	put := func(id int64, w string) {
		i := next
		if i >= len(labels) || labels[i] != w {
			var ok bool
			if i, ok = slices.BinarySearch(labels, w); !ok {
				return // not asked for: cannot happen
			}
		}
		ids[i] = id
		next = i + 1
	}
	for lo := 0; lo < len(labels); lo += labelChunk {
		part := labels[lo:min(lo+labelChunk, len(labels))]
		args := make([]any, len(part))
		for i, w := range part {
			args[i] = w
		}
		next = lo
		rs, err := q.query(ctx, "INSERT INTO influencer_labels (label) VALUES (?)"+strings.Repeat(", (?)", len(part)-1)+
			" ON CONFLICT (label) DO NOTHING RETURNING id, label", args...)
		if err != nil {
			return nil, err
		}
		if err := scanLabels(rs, put); err != nil {
			return nil, err
		}
	}
	var others []string
	for i, w := range labels {
		if ids[i] == 0 {
			others = append(others, w)
		}
	}
	next = 0
	if err := selectLabels(ctx, q, "label", others, put); err != nil {
		return nil, err
	}
	for i, w := range labels {
		if ids[i] == 0 {
			return nil, fmt.Errorf("ledger: influencer label %q has no id after inserting it", w)
		}
	}
	return ids, nil
}

// encodeInfl encodes a release's (normalized) influencers with the ids in
// the cache or in learned (which may be nil), in the format of a store at
// schema 9 or later when ef is set (else schema 8's). It returns nil when a
// label has no id in either. scratch, when not nil, is reused for the ids
// (one per goroutine).
func encodeInfl(c *labelCache, infl []string, learned map[string]int64, ef bool, scratch *[]int64) []byte {
	star := false
	var ids []int64
	if scratch != nil {
		ids = (*scratch)[:0]
		defer func() { *scratch = ids[:0] }()
	}
	ids = slices.Grow(ids, len(infl))
	c.mu.RLock()
	for _, w := range infl {
		if w == "*" {
			star = true
			continue
		}
		id, ok := c.lookup(w)
		if !ok {
			if id, ok = learned[w]; !ok {
				c.mu.RUnlock()
				return nil
			}
		}
		ids = append(ids, id)
	}
	c.mu.RUnlock()
	// Labels are sorted and ids are assigned to new labels in label order,
	// so the ids are often sorted already.
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	ids = slices.Compact(ids)
	return appendInflSet(nil, ids, star, ef)
}

// resolveIDs makes sure every id in ids is in the cache, reading the
// missing ones from influencer_labels (ids read by a transaction are
// referenced by its releases: committed, or this transaction's own, which
// the callers only do after inserting none). An id without a label is an
// error.
func resolveIDs(ctx context.Context, q querier, c *labelCache, ids []int64) error {
	var missing []int64
	c.mu.RLock() // once, not per occurrence: a fold page holds millions
	for _, id := range ids {
		if !c.knows(id) {
			missing = append(missing, id)
		}
	}
	c.mu.RUnlock()
	slices.Sort(missing)
	missing = slices.Compact(missing)
	found := map[string]int64{}
	if err := selectLabels(ctx, q, "id", missing, func(id int64, w string) { found[w] = id }); err != nil {
		return err
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
		w, _ := c.labelOf(id)
		out = append(out, w)
	}
	c.mu.RUnlock()
	slices.Sort(out)
	return out
}

// resolveReleases sets the Influencers of releases scanned with their sets
// still encoded (Release.inflIDs), one query per chunk of unknown ids (and
// of unknown blocks).
func resolveReleases(ctx context.Context, q querier, c *labelCache, rels []*Release) error {
	type dec struct {
		ids          []int64
		star         bool
		blocks, excl []int64 // a block-coded set, expanded below
	}
	decs := make([]dec, len(rels))
	var all, allBlocks []int64
	for i, r := range rels {
		if r.inflIDs == nil {
			continue
		}
		if isBlockSet(r.inflIDs) {
			blocks, excl, err := decodeBlockSet(r.inflIDs)
			if err != nil {
				return fmt.Errorf("ledger: release %d: stored influencers: %w", r.ID, err)
			}
			decs[i] = dec{blocks: blocks, excl: excl}
			allBlocks = append(allBlocks, blocks...)
			continue
		}
		ids, star, err := decodeInflSet(r.inflIDs)
		if err != nil {
			return fmt.Errorf("ledger: release %d: stored influencers: %w", r.ID, err)
		}
		decs[i] = dec{ids: ids, star: star}
		all = append(all, ids...)
	}
	if err := loadBlocks(ctx, q, &c.blocks, allBlocks); err != nil {
		return err
	}
	for i := range decs {
		if d := &decs[i]; d.blocks != nil {
			d.ids = expandBlockSet(&c.blocks, d.blocks, d.excl)
			all = append(all, d.ids...)
		}
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
