package score

import (
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// The hash accumulator of queries (AA, RA, CN, JC) and of the sensitivity
// pass on large graphs.
//
// A query's wedges land on candidates spread over the whole id range, so on
// a large graph the dense accumulators (16 bytes per node: 160 MB at 10 M
// nodes) turn nearly every wedge into a cache miss. The candidates a query
// reaches are far fewer than the nodes: at most its wedge count W(u), the
// sum of its neighbours' degrees, known before the first wedge. A table of
// the next power of two >= 2 W(u) slots, open addressing with linear
// probing, holds them in a few hundred kilobytes for most queries, and the
// scatter stays in the core's cache.
//
// The slots carry the query's generation, so the table needs no clearing
// between queries. The result is bit for bit the dense kernel's: the candidates come out in
// the order of their first wedge (the slots are listed as they are first
// taken, as the dense kernel lists the nodes it first touches), and each
// candidate's sums add the same weights in the same order (a new slot takes
// the first weights as they are, which is 0 + a in the dense kernel: the same
// float64 for the finite a > 0 and b >= 0 of the weights). TestKernelMatches*
// check it with the table forced on small graphs.
//
// Measured on Barabasi-Albert graphs (m = 10, 30% of edges protected; one
// core; AA, ns per wedge, the dense kernel against the table, 200,000 random
// queries; BenchmarkScoreLarge): 1 M nodes 9.7-10.4 against 8.3-8.6, 10 M
// nodes 25.6-26.3 against 9.5-10.7; at 100 k nodes, where the dense
// accumulators (1.6 MB) fit in the cache, a prototype of the table was 1.4x
// slower. Hence the rule in hashSize.

// hslot is one slot of the table: a candidate and its two sums. key is
// gen<<genShift | c<<cShift | v for the query generation gen that took the
// slot (the worker's hgen); a slot of an earlier generation is empty, so
// the table is cleared only when the generations wrap (the zero key,
// generation 0, is empty for every query). c counts the wedges u -> z -> v
// whose pair {z, v} is protected: the neighbours z of u with v in prot(z)
// when every protected pair is an edge, so that the sensitivity's c(u) is
// the largest c over v != u (Scorer.Sensitivity; folded into the query when
// the scorer finds sensitivities per query). c <= deg(u), and counts only
// for queries with deg(u) < 1<<cBits. The count lives in the key rather
// than in a field of its own: a 32-byte slot made the scatter 15-20% slower
// (BenchmarkScoreLarge, 4 M nodes), where the mask of the key costs nothing
// measurable.
type hslot struct {
	key  uint64
	s, p float64
}

// sslot is a slot of a query scored without its public sums
// (Worker.ScoreNoPublic): the key and the full-graph sum only. Sixteen
// bytes instead of 24, so four slots share a cache line and none straddles
// two; the scatter is random access into the table: 0.93x the time per
// wedge (BenchmarkScoreLarge at 4 M nodes, alternated), about 17 s of the
// 10 M release's 480-500 s of CPU (docs/SCALE.md).
type sslot struct {
	key uint64
	s   float64
}

// slot is either kind of slot. Both begin with the key and the full-graph
// sum, at the same offsets (TestSlotLayout), which keyOf and sumOf read:
// the functions that need nothing else serve both tables.
type slot interface{ hslot | sslot }

// keyOf is the key of the slot e.
func keyOf[T slot](e *T) *uint64 { return (*uint64)(unsafe.Pointer(e)) }

// sumOf is the full-graph sum of the slot e.
func sumOf[T slot](e *T) *float64 { return (*float64)(unsafe.Add(unsafe.Pointer(e), 8)) }

// The fields of a slot's key.
const (
	cShift   = 32
	cBits    = 12
	genShift = cShift + cBits
	cOne     = uint64(1) << cShift
	cMask    = (uint64(1)<<cBits - 1) << cShift
	genMax   = 1<<(64-genShift) - 1
	// markBit marks the slot of a node that is not a candidate (the query
	// and its neighbours) in a query scored in place (Worker.ScoreHeld):
	// bit 31 of the key, which no id (an int32 >= 0) sets. Lookups match
	// keys without it (matchMask).
	markBit   = uint64(1) << 31
	matchMask = ^(cMask | markBit)
)

// hkey is v's key in generation gen, with a count of 0.
func hkey(v int32, gen uint32) uint64 { return uint64(gen)<<genShift | uint64(uint32(v)) }

// keyGen is the generation of a slot's key.
func keyGen(key uint64) uint32 { return uint32(key >> genShift) }

// keyCount is the count c of a slot's key.
func keyCount(key uint64) int32 { return int32((key & cMask) >> cShift) }

// hashMul is Fibonacci hashing's multiplier (2^32 / golden ratio, odd): the
// top bits of v * hashMul spread consecutive ids over the table.
const hashMul = 0x9E3779B1

// sumAhead is the look-ahead of useHash's sum of the neighbours' degrees.
const sumAhead = 8

// Thresholds of useHash: the dense accumulators must span at least
// hashMinDense bytes, and the table at most a quarter of them.
const (
	hashMinDense  = 8 << 20
	hashDenseFrac = 4
)

// accMode chooses between the dense accumulators and the tables (queries
// and the sensitivity pass): by size (accAuto), or always one of them
// (tests).
type accMode uint8

const (
	accAuto accMode = iota
	accDense
	accHash
)

// useHash reports whether query u's wedges go into the table, and its
// size in slots (a power of two >= 16 and >= 2 W(u)).
func (w *Worker) useHash(nbU []int32, slotBytes int64) (bool, int) {
	s := w.s
	dense := int64(len(w.acc))*int64(unsafe.Sizeof(accum{})) + int64(len(w.cnt32))*4 + int64(len(w.cnt))*8
	if !s.hashWanted(dense) {
		return false, 0
	}
	var wedges int64
	sp := s.sp
	// The neighbours' spans lie at random places: each is requested
	// sumAhead neighbours ahead (the wedge loop reads them again, from the
	// cache).
	ahead := min(len(nbU), sumAhead)
	for _, z := range nbU[:ahead] {
		prefetch(unsafe.Pointer(&sp[z]), nil, 0)
	}
	for i, z := range nbU {
		if j := i + ahead; j < len(nbU) {
			prefetch(unsafe.Pointer(&sp[nbU[j]]), nil, 0)
		}
		wedges += int64(sp[z].deg)
	}
	size := s.hashSize(wedges, slotBytes, dense)
	return size > 0, size
}

// hashWanted reports whether a table may replace dense accumulators of
// dense bytes: always when forced, by size (at least hashMinDense) in
// accAuto.
func (s *Scorer) hashWanted(dense int64) bool {
	return s.accMode == accHash || (s.accMode == accAuto && dense >= hashMinDense)
}

// hashSize is the size of a table for at most total entries of slotBytes
// each (a power of two >= 16 and >= 2 total, so at most half full), or 0
// when in accAuto it would exceed a hashDenseFrac-th of the dense bytes.
func (s *Scorer) hashSize(total, slotBytes, dense int64) int {
	size := 16
	if total > 8 {
		size = 1 << bits.Len64(uint64(2*total-1))
	}
	if s.accMode == accAuto && int64(size)*slotBytes > dense/hashDenseFrac {
		return 0
	}
	return size
}

// hashShift is the right shift that keeps the top log2(size) bits of a
// 32-bit hash (size a power of two).
func hashShift(size int) uint32 { return uint32(33 - bits.Len(uint(size))) }

// table readies the table of size slots for a new query: a new generation
// (the table cleared when the counter wraps), and the shift that keeps the
// top log2(size) bits of a hash.
func (w *Worker) table(size int) (tab []hslot, shift, gen uint32) {
	if len(w.ht) < size {
		w.ht = make([]hslot, size)
	}
	shift, gen = w.nextTable(size)
	w.hpub = true
	return w.ht[:size], shift, gen
}

// tableS is table for a query without public sums (the 16-byte slots).
func (w *Worker) tableS(size int) (tab []sslot, shift, gen uint32) {
	if len(w.hs) < size {
		w.hs = make([]sslot, size)
	}
	shift, gen = w.nextTable(size)
	w.hpub = false
	return w.hs[:size], shift, gen
}

// nextTable starts a query's generation, shared by both tables (a slot of
// either is empty unless of the current generation; both are cleared when
// the counter wraps).
func (w *Worker) nextTable(size int) (shift, gen uint32) {
	w.hgen++
	if w.hgen > genMax || w.hgen == 0 { // wrapped: every key of an earlier generation goes
		clear(w.ht)
		clear(w.hs)
		w.hgen = 1
	}
	shift = hashShift(size)
	w.hsize, w.hshift, w.hashed = size, shift, true
	return shift, w.hgen
}

// addHashSums is addSums into the table of generation gen: for every v in
// vs, the slot of v (taken if v has none yet, its index appended to
// tch[nt:]) adds a and b. The table is at most half full, so a probe
// always ends.
//
//go:noinline
func addHashSums(tab []hslot, tch []int32, vs []int32, a, b float64, shift, gen uint32, nt int) int {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt // unreachable; proves the masks valid
	}
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		want := hkey(v, gen)
		for {
			e := &tab[i&mask]
			if e.key&^cMask == want {
				e.s += a
				e.p += b
				break
			}
			if keyGen(e.key) != gen {
				e.key, e.s, e.p = want, a, b
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	return nt
}

// addHashProt is addHashSums for the protected pairs {z, v} of one
// neighbour z of the query: for every v in vs the slot of v adds a to its
// first sum (the public sum adds 0) and 1 to its count c. The caller
// ensures no count exceeds 1<<cBits - 1.
//
//go:noinline
func addHashProt(tab []hslot, tch []int32, vs []int32, a float64, shift, gen uint32, nt int) int {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt // unreachable; proves the masks valid
	}
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		want := hkey(v, gen)
		for {
			e := &tab[i&mask]
			if e.key&^cMask == want {
				e.s += a
				e.key += cOne
				break
			}
			if keyGen(e.key) != gen {
				e.key, e.s, e.p = want|cOne, a, 0
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	return nt
}

// addHashSumsS is addHashSums for the table of 16-byte slots: the sum a
// only.
//
//go:noinline
func addHashSumsS(tab []sslot, tch []int32, vs []int32, a float64, shift, gen uint32, nt int) int {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt // unreachable; proves the masks valid
	}
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		want := hkey(v, gen)
		for {
			e := &tab[i&mask]
			if e.key&^cMask == want {
				e.s += a
				break
			}
			if keyGen(e.key) != gen {
				e.key, e.s = want, a
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	return nt
}

// addHashProtS is addHashProt for the table of 16-byte slots.
//
//go:noinline
func addHashProtS(tab []sslot, tch []int32, vs []int32, a float64, shift, gen uint32, nt int) int {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt // unreachable; proves the masks valid
	}
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		want := hkey(v, gen)
		for {
			e := &tab[i&mask]
			if e.key&^cMask == want {
				e.s += a
				e.key += cOne
				break
			}
			if keyGen(e.key) != gen {
				e.key, e.s = want|cOne, a
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	return nt
}

// The kernels of a query scored in place (Worker.ScoreHeld). The query u
// and its neighbours take their slots before the first wedge, marked
// (markBit) and not listed in the taken slots, so the slots the wedges take
// are exactly the candidates' and nothing is extracted: the sampler reads
// the candidates from the table (Worker.HeldAt). What extraction found on
// its way is found during the scatter instead: the largest sum of a
// candidate (a sum only grows, so the largest value a candidate's slot
// takes is its final one) and the largest count of a protected wedge to a
// node other than u.

// markHeld gives u and its neighbours nbU marked slots with zero sums in
// the table of generation gen (empty of this generation so far), not
// listed in the taken slots. A table has at least 2 W(u) slots and a query
// takes at most W(u) + 1 of them (its u, deg(u) <= W(u) neighbours, and a
// slot per wedge that does not end at u: W(u) - deg(u)), so a probe always
// ends.
//
//go:noinline
func markHeld(tab []sslot, u int32, nbU []int32, shift, gen uint32) {
	mask := uint32(len(tab) - 1)
	mark := func(v int32) {
		want := hkey(v, gen)
		for i := (uint32(v) * hashMul) >> shift; ; i++ {
			e := &tab[i&mask]
			if keyGen(e.key) != gen {
				e.key, e.s = want|markBit, 0
				return
			}
			if e.key&matchMask == want {
				return // not reached: u and its neighbours are distinct
			}
		}
	}
	mark(u)
	for _, v := range nbU {
		mark(v)
	}
}

// addHeldSums is addHashSumsS for a query scored in place (markHeld): it
// also returns the largest sum of an unmarked slot, hi updated.
//
//go:noinline
func addHeldSums(tab []sslot, tch []int32, vs []int32, a float64, shift, gen uint32, nt int, hi float64) (int, float64) {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt, hi // unreachable; proves the masks valid
	}
	nt0 := nt
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		want := hkey(v, gen)
		for {
			e := &tab[i&mask]
			if k := e.key; k&matchMask == want {
				x := e.s + a
				e.s = x
				if x > hi && k&markBit == 0 {
					hi = x
				}
				break
			}
			if keyGen(e.key) != gen {
				e.key, e.s = want, a
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	if nt > nt0 && a > hi { // a new slot's sum is a
		hi = a
	}
	return nt, hi
}

// addHeldProt is addHashProtS for a query u scored in place (markHeld): it
// also returns the largest sum of an unmarked slot (hi updated) and the
// largest count field (key & cMask) of a slot other than u's (cm updated).
//
//go:noinline
func addHeldProt(tab []sslot, tch []int32, vs []int32, a float64, u int32, shift, gen uint32, nt int, hi float64, cm uint64) (int, float64, uint64) {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt, hi, cm // unreachable; proves the masks valid
	}
	nt0 := nt
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		want := hkey(v, gen)
		for {
			e := &tab[i&mask]
			if k := e.key; k&matchMask == want {
				x := e.s + a
				k += cOne
				e.s, e.key = x, k
				if x > hi && k&markBit == 0 {
					hi = x
				}
				if c := k & cMask; c > cm && v != u {
					cm = c
				}
				break
			}
			if keyGen(e.key) != gen {
				e.key, e.s = want|cOne, a
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	if nt > nt0 { // a new slot's sum is a and its count 1
		hi = max(hi, a)
		cm = max(cm, cOne)
	}
	return nt, hi, cm
}

// extractHashS is extractHash for the table of 16-byte slots: no public
// sums.
//
//go:noinline
func extractHashS(cands []int32, sc []float64, tab []sslot, slots []int32, u int32) (k int, lo, hi float64, cmax int32) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, i := range slots {
		x := tab[i]
		if c := keyCount(x.key); c > cmax && uint32(x.key) != uint32(u) {
			cmax = c
		}
		if x.s < 0 {
			continue
		}
		cands[k] = int32(uint32(x.key))
		sc[k] = x.s
		k++
		if x.s < lo {
			lo = x.s
		}
		if x.s > hi {
			hi = x.s
		}
	}
	return k, lo, hi, cmax
}

// extractHash is extractSums for the table: slots lists the taken slots in
// the order they were taken. It also returns the largest count c of a
// slot other than u's (u and its neighbours included, though not
// extracted).
//
//go:noinline
func extractHash(cands []int32, sc, pub []float64, tab []hslot, slots []int32, u int32) (k int, lo, hi float64, cmax int32) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, i := range slots {
		x := tab[i]
		if c := keyCount(x.key); c > cmax && uint32(x.key) != uint32(u) {
			cmax = c
		}
		if x.s < 0 {
			continue
		}
		cands[k] = int32(uint32(x.key))
		sc[k] = x.s
		pub[k] = x.p
		k++
		if x.s < lo {
			lo = x.s
		}
		if x.s > hi {
			hi = x.s
		}
	}
	return k, lo, hi, cmax
}

// extractHashJC is extractJC for the table: the counts are the slots' sums
// (whole numbers, exact in a float64).
//
//go:noinline
func extractHashJC(cands []int32, sc, pub []float64, tab []hslot, slots []int32, sp []span, du int32) int {
	k := 0
	for _, i := range slots {
		x := tab[i]
		if x.s < 0 {
			continue
		}
		v := int32(uint32(x.key))
		cands[k] = v
		sc[k], pub[k] = jaccard(int32(x.s), int32(x.p), du, sp[v])
		k++
	}
	return k
}

// findSlot is v's slot in tab, a table of generation gen, or nil.
func findSlot[T slot](tab []T, v int32, shift, gen uint32) *T {
	mask := uint32(len(tab) - 1)
	want := hkey(v, gen)
	for i := (uint32(v) * hashMul) >> shift; ; i++ {
		e := &tab[i&mask]
		if k := *keyOf(e); k&matchMask == want {
			return e
		} else if keyGen(k) != gen {
			return nil
		}
	}
}

// hfind is v's sums in the last query's table (p is NaN in a table without
// public sums), and whether v has a slot.
func (w *Worker) hfind(v int32) (s, p float64, ok bool) {
	if w.hpub {
		if e := findSlot(w.ht[:w.hsize], v, w.hshift, w.hgen); e != nil {
			return e.s, e.p, true
		}
	} else if ps := w.hsum(v); ps != nil {
		return *ps, math.NaN(), true
	}
	return 0, 0, false
}

// hsum is v's full-graph sum in the last query's table, or nil.
func (w *Worker) hsum(v int32) *float64 {
	if !w.hpub {
		if e := findSlot(w.hs[:w.hsize], v, w.hshift, w.hgen); e != nil {
			return sumOf(e)
		}
		return nil
	}
	if e := findSlot(w.ht[:w.hsize], v, w.hshift, w.hgen); e != nil {
		return sumOf(e)
	}
	return nil
}

// hhas reports whether v has a slot in the last query's table.
func (w *Worker) hhas(v int32) bool { return w.hsum(v) != nil }

// markNeighbours gives every neighbour in nbU without a slot in the table
// of generation gen (nt slots taken) a slot with zero sums, not listed in
// the taken slots: extraction does not see it, At reads (0, 0) as for no
// slot, and InZero finds every neighbour by one probe instead of searching
// u's adjacency (the zero block's rejection draws test a random node
// each). It reports whether it marked them; it does not when more than
// half the table would be taken (a table has at least 2 W(u) slots and W(u)
// >= deg(u), so that is rare), and InZero then searches the adjacency.
//
//go:noinline
func markNeighbours[T slot](tab []T, nbU []int32, shift, gen uint32, nt int) bool {
	if nt+len(nbU) > len(tab)/2 {
		return false
	}
	mask := uint32(len(tab) - 1)
	for _, v := range nbU {
		want := hkey(v, gen)
		for i := (uint32(v) * hashMul) >> shift; ; i++ {
			e := &tab[i&mask]
			if k := *keyOf(e); k&matchMask == want {
				break
			} else if keyGen(k) != gen {
				var zero T
				*e = zero
				*keyOf(e) = want
				break
			}
		}
	}
	return true
}

// isNeighbour reports whether v is a neighbour of the last query u, by
// binary search in u's two ascending parts (public, protected).
func (w *Worker) isNeighbour(v int32) bool {
	s := w.s
	x := s.sp[w.u]
	mid := x.lo + int64(x.np)
	if _, ok := slices.BinarySearch(s.adj[x.lo:mid], v); ok {
		return true
	}
	_, ok := slices.BinarySearch(s.adj[mid:x.lo+int64(x.deg)], v)
	return ok
}

// zeroHash is ZeroCands for a hashed query.
func (w *Worker) zeroHash(dst []int32) []int32 {
	for v := range int32(w.s.n) {
		if w.stamp[v] != w.gen && !w.hhas(v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// flipHash negates the sums of u and its neighbours nbU that have a slot.
func (w *Worker) flipHash(u int32, nbU []int32) {
	if p := w.hsum(u); p != nil {
		*p = -*p
	}
	for _, z := range nbU {
		if p := w.hsum(z); p != nil {
			*p = -*p
		}
	}
}

// resetHash forgets the last query's table: its slots are of an earlier
// generation from the next query on.
func (w *Worker) resetHash() {
	w.nt, w.hashed, w.nbMarked = 0, false, false
}

// The sensitivity pass (bc) scatters, for every node u, the protected
// partners of u's neighbours into counters and keeps the largest count: the
// same random scatter, into 16-bit counters of every node (32 MB at 10 M
// nodes). Its table holds P(u) = sum of |prot(x)| over the neighbours x of
// u at most, in the next power of two >= 2 P(u) slots; the result, a
// maximum of counts, does not depend on the order the counts are kept in.

// cslot is a slot of the sensitivity pass's table: a node (-1: empty) and
// its count.
type cslot struct{ v, c int32 }

func newCslots(n int) []cslot {
	t := make([]cslot, n)
	for i := range t {
		t[i].v = -1
	}
	return t
}

// bcHashSize is the table size for node u's counts, or 0 when the dense
// counters (dense bytes) are to be used: hashWanted and hashSize, as for queries.
func (s *Scorer) bcHashSize(u int32, dense int) int {
	if !s.hashWanted(int64(dense)) {
		return 0
	}
	var total int64
	poff, _ := s.p.CSR()
	nb := s.adj[s.off[u]:s.off[u+1]]
	for i, x := range nb {
		if j := i + spanAhead; j < len(nb) {
			prefetch(unsafe.Pointer(&poff[nb[j]]), nil, 0)
		}
		total += poff[x+1] - poff[x]
	}
	return s.hashSize(total, int64(unsafe.Sizeof(cslot{})), int64(dense))
}

// bcHash is bc with the table tab (empty on entry and exit; a power of two
// at least twice the counts' total): touched receives the indices of the
// slots taken.
func bcHash(s *Scorer, u int32, tab []cslot, touched []int32) (b, c int) {
	p := s.p
	shift := hashShift(len(tab))
	nt := 0
	nb := s.adj[s.off[u]:s.off[u+1]]
	s.protStart(nb)
	for i, x := range nb {
		s.protAhead(nb, i)
		px := p.Of(x)
		if len(px) > 1 || (len(px) == 1 && px[0] != u) {
			b = 1
		}
		nt = addHashCounts(tab, touched, px, shift, nt)
	}
	for _, i := range touched[:nt] {
		if e := tab[i]; e.v != u { // c(u) ranges over w != u
			c = max(c, int(e.c))
		}
		tab[i] = cslot{v: -1}
	}
	return b, c
}

// addHashCounts adds 1 to the count of every v in vs, taking a slot (its
// index appended to tch[nt:]) for a v without one; it returns the new nt.
//
//go:noinline
func addHashCounts(tab []cslot, tch []int32, vs []int32, shift uint32, nt int) int {
	mask, tmask := uint32(len(tab)-1), len(tch)-1
	if len(tab) == 0 || tmask < 0 {
		return nt
	}
	for _, v := range vs {
		i := (uint32(v) * hashMul) >> shift
		for {
			e := &tab[i&mask]
			if e.v == v {
				e.c++
				break
			}
			if e.v < 0 {
				e.v, e.c = v, 1
				tch[nt&tmask] = int32(i & mask)
				nt++
				break
			}
			i++
		}
	}
	return nt
}
