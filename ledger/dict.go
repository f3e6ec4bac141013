package ledger

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Dict is a fixed, indexed list of influencer labels (typically one graph's
// node labels, indexed by node id) through which a release names its
// influencers by index (Release.InflDict, Release.InflIdx) instead of by
// label. The influence set recorded is the same as with Influencers set to
// the labels: only the work differs. A release path that charges hundreds
// of influencers per list hands over node ids it already has; the store
// maps them to its label ids through an array it fills as it learns them
// (once per label and store handle), so a charge neither builds, validates,
// sorts nor looks up label strings. On a 1 M-node graph that was most of
// what exposure tracking cost a batch release.
//
// A Dict is read-only once made and safe for concurrent use by any number
// of releases and stores. Labels are validated once, when it is made.
type Dict struct {
	n     int
	label func(int32) string
	// bad holds the indices whose labels are not valid influencer labels
	// (empty, not valid UTF-8, a NUL byte, or "*"), with the reason; a
	// release naming one is invalid, as one with that label would be.
	bad map[int32]error

	mu  sync.Mutex
	ids map[*labelCache][]atomic.Int64 // per store handle: label id of index i, 0 = not known yet

	// order lists the indices in bytewise order of their labels, or is
	// nil (InLabelOrder).
	order func() []int32
}

// InLabelOrder gives d a function that lists its indices in bytewise
// order of their labels (graph.Graph.ByLabel, which walks a decimal graph's
// labels in O(n)), and returns d. Store.PrepareInfluence then takes the
// labels it records in that order instead of sorting them (4 s of ten
// million labels). The order is checked as it is used: one that is not in
// label order, or not a permutation of the indices, is ignored and the
// labels are sorted.
func (d *Dict) InLabelOrder(order func() []int32) *Dict {
	d.order = order
	return d
}

// NewDict returns the dictionary of n labels, label(i) for i in [0, n).
// label must be a pure function of i, cheap and safe for concurrent calls
// (graph.Graph.Label is); it is called again whenever a label is needed.
// Labels need not be distinct (repeats name one party).
func NewDict(n int, label func(int32) string) (*Dict, error) {
	if n < 0 || int64(n) > 1<<31 {
		return nil, invalid("dictionary of %d labels (want 0 to 2^31)", n)
	}
	if label == nil {
		return nil, invalid("dictionary without a label function")
	}
	d := &Dict{n: n, label: label}
	for i := range int32(n) {
		w := label(i)
		if plainLabel(w) && w != "*" {
			continue
		}
		var err error
		switch {
		case w == "*":
			err = invalid("influencer label %q (index %d) is reserved for every party", w, i)
		case w == "" || !utf8.ValidString(w) || strings.IndexByte(w, 0) >= 0:
			err = checkText(fmt.Sprintf("influencer (index %d)", i), w, false)
		}
		if err != nil {
			if d.bad == nil {
				d.bad = map[int32]error{}
			}
			d.bad[i] = err
		}
	}
	return d, nil
}

// Len is the number of labels.
func (d *Dict) Len() int { return d.n }

// Label is the label of index i.
func (d *Dict) Label(i int32) string { return d.label(i) }

// check validates a release's indices: every one in range and naming a
// valid label.
func (d *Dict) check(user string, idx []int32) error {
	for _, i := range idx {
		if i < 0 || int(i) >= d.n {
			return invalid("release for %q: influencer index %d outside the dictionary of %d labels", user, i, d.n)
		}
	}
	if d.bad != nil {
		for _, i := range idx {
			if err := d.bad[i]; err != nil {
				return fmt.Errorf("release for %q: %w", user, err)
			}
		}
	}
	return nil
}

// labels returns the sorted, deduplicated labels of idx.
func (d *Dict) labels(idx []int32) []string {
	out := make([]string, len(idx))
	for j, i := range idx {
		out[j] = d.label(i)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// idsFor returns the store handle's id array for d (made on first use).
func (d *Dict) idsFor(c *labelCache) []atomic.Int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		d.ids = map[*labelCache][]atomic.Int64{}
	}
	a, ok := d.ids[c]
	if !ok {
		a = make([]atomic.Int64, d.n)
		d.ids[c] = a
	}
	return a
}

// encodeDict encodes the influence set idx of d (any order, repeats
// allowed) with the store's label ids: from d's array for the store
// handle, else from pend (this transaction's, indexed like d; may be nil),
// else from the handle's cache (recording those, committed, in the array).
// It returns nil when some label has an id in none of them; chargeTx
// assigns those. sc is per-goroutine scratch space.
func encodeDict(c *labelCache, d *Dict, idx []int32, pend map[int32]int64, ef bool, sc *idScratch) []byte {
	ids, ok := dictIDs(c, d, idx, pend, sc)
	if !ok {
		return nil
	}
	return appendInflSet(nil, slices.Compact(ids), false, ef)
}

// idScratch is per-goroutine scratch space for encoding sets.
type idScratch struct{ ids, tmp, bids []int64 }

// dictPending holds, during one charge transaction, the label ids of
// dictionary entries that the handle did not know when the batch was
// encoded: read or assigned by the transaction, so not committed, and kept
// apart from the dictionary's array (which holds committed ids only: a
// rolled-back id may be given to another label) until commit. Per
// dictionary, the ids by index (-1: being looked up; sparse: a batch
// meets a few of a large graph's labels), and the entries to look up.
type dictPending map[*Dict]*pendingIDs

type pendingIDs struct {
	ids    map[int32]int64
	lookup []int32
}

func (p dictPending) get(d *Dict) *pendingIDs {
	pd := p[d]
	if pd == nil {
		pd = &pendingIDs{ids: map[int32]int64{}}
		p[d] = pd
	}
	return pd
}

// idsOf returns d's pending ids (nil when there are none).
func (p dictPending) idsOf(d *Dict) map[int32]int64 {
	if pd := p[d]; pd != nil {
		return pd.ids
	}
	return nil
}

// collect appends to out the labels of idx that have no id in d's array
// for c, the cache or p, once each, and marks them to be looked up; ids
// found in the cache are recorded in p.
func (p dictPending) collect(c *labelCache, d *Dict, idx []int32, out []string) []string {
	arr := d.idsFor(c)
	var pd *pendingIDs
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, i := range idx {
		if arr[i].Load() != 0 {
			continue
		}
		if pd == nil {
			pd = p.get(d)
		}
		if pd.ids[i] != 0 {
			continue
		}
		w := d.label(i)
		if id, ok := c.lookup(w); ok {
			pd.ids[i] = id
			continue
		}
		pd.ids[i] = -1
		pd.lookup = append(pd.lookup, i)
		out = append(out, w)
	}
	return out
}

// resolve records the ids read or assigned (learned) of the entries
// collect marked; every one must have one. An entry labelIDs skipped
// because the cache knew its label by then has its id in the cache: a
// transaction of this handle committed it between collect and labelIDs
// (the cache is filled after commit, outside the write lock).
func (p dictPending) resolve(c *labelCache, learned map[string]int64) error {
	for d, pd := range p {
		for _, i := range pd.lookup {
			w := d.label(i)
			id, ok := learned[w]
			if !ok {
				c.mu.RLock()
				id, ok = c.lookup(w)
				c.mu.RUnlock()
			}
			if !ok {
				return fmt.Errorf("ledger: influencer label %q has no id after inserting it", w)
			}
			pd.ids[i] = id
		}
	}
	return nil
}

// commit copies the ids of p, committed now, into the dictionaries'
// arrays for c.
func (p dictPending) commit(c *labelCache) {
	for d, pd := range p {
		arr := d.idsFor(c)
		for i, id := range pd.ids {
			if id > 0 && arr[i].Load() == 0 {
				arr[i].Store(id)
			}
		}
	}
}

// sortIDs sorts positive ids in increasing order, by least-significant-
// digit radix sort (one pass per byte up to the largest id's top byte, at
// most four) for the hundreds of ids of a release, else by comparisons. It
// returns the sorted slice: ids itself or *tmp's storage (the other one is
// then clobbered).
func sortIDs(ids []int64, tmp *[]int64) []int64 {
	if len(ids) < 64 {
		sortSmall(ids)
		return ids
	}
	var top uint64
	for _, x := range ids {
		top |= uint64(x)
	}
	passes := (bits.Len64(top) + 7) / 8
	if passes > 4 {
		slices.Sort(ids)
		return ids
	}
	if cap(*tmp) < len(ids) {
		*tmp = make([]int64, len(ids))
	}
	src, dst := ids, (*tmp)[:len(ids)]
	for p := range passes {
		shift := uint(8 * p)
		var count [256]int
		for _, x := range src {
			count[byte(uint64(x)>>shift)]++
		}
		sum := 0
		for d := range count {
			count[d], sum = sum, sum+count[d]
		}
		for _, x := range src {
			d := byte(uint64(x) >> shift)
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	return src
}
