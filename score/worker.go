package score

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/dplp/dplp/internal/hugepage"
	"github.com/dplp/dplp/internal/par"
)

// Result is the scoring of one query u against all its candidates (the
// non-neighbours v != u). Candidates not listed in Cands are the Zero block:
// both s and s_pub are exactly 0 for them (no wedge reaches them).
type Result struct {
	U     int32
	Cands []int32   // candidates reached by a wedge (PA: every candidate); deterministic wedge order, not sorted (PA: ascending)
	S     []float64 // s(u, Cands[i])
	Pub   []float64 // s_pub(u, Cands[i]); empty after ScoreNoPublic
	Zero  int       // further candidates, not listed, with s = s_pub = 0

	DeltaS, SMax float64 // Scorer.Sensitivity(U)
	Wedges       int64   // wedges enumerated (u -> z -> v), for benchmarks
	// SRange reports that SLo and SHi are the smallest and largest of S
	// (found as they were extracted: AA and RA; with Cands non-empty), so
	// that a sampler needs no pass of its own. After Worker.ScoreHeld with
	// Held > 0, SHi is the largest held score and SLo a lower bound of
	// them (the smallest weight a wedge adds), not necessarily attained.
	SRange   bool
	SLo, SHi float64

	// Held is the number of candidates left in the worker's table by
	// Worker.ScoreHeld (Cands and S are then empty): Worker.HeldAt(i) for
	// i < Held serves them, in the order Cands would list them. 0 after
	// every other scoring call.
	Held int
}

// NumCandidates is |C(u)| = N - 1 - deg(u).
func (r *Result) NumCandidates() int { return len(r.Cands) + r.Held + r.Zero }

// accum is an AA/RA accumulator: full-graph and public sums.
type accum struct{ s, p float64 }

// Worker scores queries one at a time with dense accumulators of length N
// that are reused across queries, or, for a query of a large graph, with a
// hash table of its own size (hashacc.go); At, InZero and ZeroCands read
// whichever the last query used. A Worker is not safe for concurrent use;
// create one per goroutine with Scorer.NewWorker.
type Worker struct {
	s *Scorer
	// CN, JC: the low half of a word counts every wedge, the high half the
	// wedges whose second pair {z,v} is not protected (see counter): cnt32
	// when every degree is below 2^15, else cnt. Length is a power of two so
	// that indexing with v&mask needs no bounds check.
	cnt   []uint64
	cnt32 []uint32
	acc   []accum // AA, RA; same length rule

	dense []float64 // Bounded: scores of the last query's candidates

	// touched lists every node with a non-zero accumulator (u and u's
	// neighbours included), each once: an accumulator only grows from 0, so
	// "was 0" detects the first touch. Reset lazily at the next Score so that
	// At and ZeroCands can read the accumulators.
	touched []int32
	nt      int

	stamp []uint32 // stamp[v] == gen: v is u or a neighbour of u (not a candidate)
	gen   uint32

	// AA, RA on large graphs (hashacc.go): the table of the last query when
	// hashed; touched then lists its taken slots.
	ht     []hslot
	hs     []sslot // the table of a query without public sums (ScoreNoPublic)
	hpub   bool    // the last hashed query used ht (else hs)
	hsize  int
	hshift uint32
	hgen   uint32 // generation of the last hashed query (hslot.key)
	hashed bool
	// nbMarked: every neighbour of the last hashed query has a slot
	// (markNeighbours), so InZero needs no search of the adjacency.
	nbMarked bool
	// folded: the last query's DeltaS came from b(u) and c(u) (foldB,
	// foldC) of Sensitivity as its scatter found them: a table query of
	// AA, RA or CN, of a perQuery scorer without protected non-edges.
	folded       bool
	foldB, foldC int

	// The per-query sensitivity pass (sensOne) of a scorer without a
	// table of sensitivities: dense counters (made on first use) or a
	// table.
	bc16 []uint16
	bc32 []uint32
	bct  []cslot

	u      int32
	scored bool
	// nopub: the last query was scored without its public sums
	// (ScoreNoPublic).
	nopub bool
	// heldReq: the query being scored may leave its candidates in the
	// table (ScoreHeld); held: the last query did.
	heldReq, held bool
}

func pow2(n int) int { return 1 << bits.Len(uint(n)) } // > n

// NewWorker allocates a worker's accumulators.
func (s *Scorer) NewWorker() *Worker {
	w := &Worker{s: s, stamp: make([]uint32, s.n), touched: make([]int32, pow2(s.n))}
	switch s.kind {
	case CN, JC:
		if s.maxDeg < 1<<15 {
			w.cnt32 = make([]uint32, pow2(s.n))
		} else {
			w.cnt = make([]uint64, pow2(s.n))
		}
	case AA, RA:
		w.acc = make([]accum, pow2(s.n))
	case Bounded:
		w.dense = make([]float64, s.n)
	}
	hugepage.Slice(w.stamp)
	hugepage.Slice(w.touched)
	hugepage.Slice(w.cnt)
	hugepage.Slice(w.cnt32)
	hugepage.Slice(w.acc)
	return w
}

// Score scores query u (0 <= u < N) against all its candidates into r,
// reusing r's slices.
func (w *Worker) Score(u int32, r *Result) { w.score(u, r, true) }

// ScoreNoPublic is Score without the public scores: r.Pub is left empty
// and At reports NaN for s_pub; everything else (Cands in the same order,
// S, Zero, DeltaS, SMax, the range) is what Score gives. For a caller that
// never reads s_pub (calib.Config.ReadsPublic false): AA, RA and CN queries
// of a large graph then scatter into a table of 16-byte slots instead of
// 24-byte ones.
func (w *Worker) ScoreNoPublic(u int32, r *Result) { w.score(u, r, false) }

// ScoreHeld is ScoreNoPublic that, for a query scattered into a table of
// 16-byte slots (AA, RA and CN queries of a large graph), leaves the
// candidates in the table instead of extracting them into r.Cands and r.S:
// r.Held counts them and HeldAt serves them, in the order ScoreNoPublic
// lists them and with the same scores, until the next query. r.SHi is then
// their largest score and r.SLo a lower bound (the smallest weight of a
// wedge of the query); everything else (Zero, DeltaS, SMax, At, InZero,
// CandScore, ZeroCands) is what ScoreNoPublic gives. A query on the dense
// accumulators or counters is extracted as by ScoreNoPublic (r.Held = 0).
// For a caller that reads a few candidates by index (the crypto-seeded
// exact sampler, which proposes candidates uniformly and computes only
// their utilities): it saves a pass over every candidate.
func (w *Worker) ScoreHeld(u int32, r *Result) {
	w.heldReq = true
	w.score(u, r, false)
	w.heldReq = false
}

// HeldAt is the i-th candidate (0 <= i < r.Held) of the last ScoreHeld and
// its score.
func (w *Worker) HeldAt(i int) (v int32, s float64) {
	e := &w.hs[w.touched[i]]
	return int32(uint32(e.key)), e.s
}

func (w *Worker) score(u int32, r *Result, public bool) {
	s := w.s
	w.reset()
	w.gen++
	if w.gen == 0 {
		clear(w.stamp)
		w.gen = 1
	}
	gen := w.gen
	w.stamp[u] = gen
	nbU := s.adj[s.off[u]:s.off[u+1]]
	for _, z := range nbU {
		w.stamp[z] = gen
	}
	w.u, w.scored = u, true
	w.nopub = !public
	r.U = u
	r.Cands, r.S, r.Pub = r.Cands[:0], r.S[:0], r.Pub[:0]
	r.SMax = s.sMax(u)
	r.Wedges = 0
	r.SRange = false // set by the paths that find the range
	r.Held = 0
	size := 0 // the table's, or 0: the dense accumulators or counters
	switch s.kind {
	case CN, JC, AA, RA:
		slotBytes := int64(unsafe.Sizeof(hslot{}))
		if w.smallSlots() {
			slotBytes = int64(unsafe.Sizeof(sslot{}))
		}
		_, size = w.useHash(nbU, slotBytes)
	}
	// DeltaS: from the scorer's table, or found by this query's scatter
	// (a table of the query, every protected pair an edge), or by the
	// sensitivity pass for u alone, run here while touched is free.
	fold := false
	switch {
	case !s.perQuery:
		r.DeltaS = s.deltaS[u]
	case size > 0 && !s.nonEdge && len(nbU) < 1<<cBits && s.kind != JC:
		fold = true
	default:
		r.DeltaS = w.sensOne(u)
	}
	w.folded = false
	switch s.kind {
	case CN, JC:
		if size > 0 {
			w.sums(u, r, size)
		} else {
			w.counts(u, r)
		}
	case AA, RA:
		w.sums(u, r, size)
	case PA:
		w.pa(u, r)
	case Bounded:
		w.bounded(u, r)
	}
	switch {
	case !fold:
		w.folded = false
	case w.folded:
		r.DeltaS = s.deltaOf(w.foldB, w.foldC)
	default: // not reached: a table query of AA, RA or CN folds
		r.DeltaS = s.sensTable()[u]
	}
	r.Zero = s.n - 1 - len(nbU) - len(r.Cands) - r.Held
	if !public {
		r.Pub = r.Pub[:0]
	}
}

// smallSlots reports whether the current query's table, if it has one,
// has 16-byte slots: a query without public sums of a kind whose
// extraction reads the full-graph sum alone (not JC, which divides both
// counts).
func (w *Worker) smallSlots() bool { return w.nopub && w.s.kind != JC }

// sensOne is DeltaS of query u by the sensitivity pass for u alone (bc or
// bcHash, as the scorer's pass would run it), with the worker's scratch
// space. It must run before the query's scatter: it uses touched.
func (w *Worker) sensOne(u int32) float64 {
	s := w.s
	n := pow2(s.n)
	var b, c int
	wide := s.maxDeg >= 1<<16
	dense := n * 2
	if wide {
		dense = n * 4
	}
	if size := s.bcHashSize(u, dense); size > 0 {
		if len(w.bct) < size {
			w.bct = newCslots(size)
		}
		b, c = bcHash(s, u, w.bct[:size], w.touched)
	} else if wide {
		if w.bc32 == nil {
			w.bc32 = make([]uint32, n)
		}
		b, c = bc(s, u, w.bc32, w.touched)
	} else {
		if w.bc16 == nil {
			w.bc16 = make([]uint16, n)
		}
		b, c = bc(s, u, w.bc16, w.touched)
	}
	return s.deltaOf(b, c)
}

func (w *Worker) reset() {
	w.held = false
	if w.hashed {
		w.resetHash()
		return
	}
	if w.cnt != nil {
		for _, v := range w.touched[:w.nt] {
			w.cnt[v] = 0
		}
	}
	if w.cnt32 != nil {
		for _, v := range w.touched[:w.nt] {
			w.cnt32[v] = 0
		}
	}
	if w.acc != nil {
		for _, v := range w.touched[:w.nt] {
			w.acc[v] = accum{}
		}
	}
	w.nt = 0
}

// grow makes r's slices length n (capacity reused) for indexed writes.
func grow(r *Result, n int) {
	if cap(r.Cands) < n {
		r.Cands = make([]int32, n)
		r.S = make([]float64, n)
		r.Pub = make([]float64, n)
	}
	r.Cands, r.S, r.Pub = r.Cands[:n], r.S[:n], r.Pub[:n]
}

// Prefetch distances of the wedge loops, counted in neighbours z of the
// query: while z_i's neighbours are scattered, the span of z_{i+spanAhead}
// and the first adjLines cache lines of z_{i+adjAhead}'s neighbour list are
// requested. On hub-heavy graphs most wedges come from short lists at random
// places in adj (the wedge mass is spread evenly over the degree scale), so
// without this each list start and each span is a cache miss that the
// scatter waits for; longer lists are picked up by the hardware prefetcher.
const (
	spanAhead = 4
	adjAhead  = 2
	adjLines  = 4
)

// prefetchStart requests the spans and the list starts of the first
// neighbours of a query, those the look-ahead of the wedge loops skips: the
// look-ahead of the positions before the first.
func (s *Scorer) prefetchStart(nbU []int32) {
	for i := -spanAhead; i < 0; i++ {
		s.ahead(nbU, i)
	}
}

// ahead is the wedge loops' look-ahead at neighbour i of the query's list
// nbU (i may be negative: prefetchStart): the span of nbU[i+spanAhead] and
// the first lines of nbU[i+adjAhead]'s list, in one call of prefetch.
func (s *Scorer) ahead(nbU []int32, i int) {
	var ps, pl unsafe.Pointer
	lines := 0
	if j := i + spanAhead; uint(j) < uint(len(nbU)) {
		ps = unsafe.Pointer(&s.sp[nbU[j]])
	}
	if j := i + adjAhead; uint(j) < uint(len(nbU)) {
		pl, lines = s.listStart(nbU[j])
	}
	prefetch(ps, pl, lines)
}

// protStart and protAhead are prefetchStart and ahead for the sensitivity
// pass, which walks the protected rows prot(x) of u's neighbours x: the
// row offsets of nb[i+spanAhead] and the first lines of nb[i+adjAhead]'s
// row.
func (s *Scorer) protStart(nb []int32) {
	for i := -spanAhead; i < 0; i++ {
		s.protAhead(nb, i)
	}
}

func (s *Scorer) protAhead(nb []int32, i int) {
	poff, padj := s.p.CSR()
	var po, pl unsafe.Pointer
	lines := 0
	if j := i + spanAhead; uint(j) < uint(len(nb)) {
		po = unsafe.Pointer(&poff[nb[j]])
	}
	if j := i + adjAhead; uint(j) < uint(len(nb)) {
		x := nb[j]
		pl, lines = rowStart(padj, poff[x], poff[x+1])
	}
	prefetch(po, pl, lines)
}

// rowStart is where the row adj[lo:hi] of a compressed adjacency starts
// and how many cache lines, at most adjLines, it covers (0 for an empty
// row).
func rowStart(adj []int32, lo, hi int64) (unsafe.Pointer, int) {
	if hi <= lo {
		return nil, 0
	}
	p := unsafe.Pointer(&adj[lo])
	return p, min(adjLines, (int(uintptr(p)&63)+4*int(hi-lo)+63)>>6)
}

// listStart is where z's neighbour list starts and how many cache lines,
// at most adjLines, it covers (0 for an empty list).
func (s *Scorer) listStart(z int32) (unsafe.Pointer, int) {
	x := s.sp[z]
	return rowStart(s.adj, x.lo, x.lo+int64(x.deg))
}

// counter is a CN/JC accumulator word of 2 x half bits: the low half counts
// every wedge u -> z -> v, the high half the wedges whose second pair {z,v}
// is not protected, and its top bit is free for the extraction's mark (both
// counts are at most deg(u)). 64-bit words in general; 32-bit ones, two
// 16-bit halves, when every degree is below 2^15: half the footprint of the
// accumulators, which the scatter hits at random, so more of them stay in
// cache.
type counter interface{ ~uint32 | ~uint64 }

// word is any counter addCounts can add to: the counters, and the plain
// 16-bit counts of the sensitivity pass.
type word interface{ ~uint16 | ~uint32 | ~uint64 }

// halfBits is the width of a counter's half: 16 or 32 (a constant in each
// instantiation).
func halfBits[T counter]() uint { return uint(unsafe.Sizeof(T(0))) * 4 }

func (w *Worker) counts(u int32, r *Result) {
	if w.cnt32 != nil {
		countsIn(w, w.cnt32, u, r)
	} else {
		countsIn(w, w.cnt, u, r)
	}
}

func countsIn[T counter](w *Worker, cnt []T, u int32, r *Result) {
	s := w.s
	adj, off, sp := s.adj, s.off, s.sp
	tch := w.touched
	half := halfBits[T]()
	pubInc := T(1) + T(1)<<half
	nt := 0
	var wedges int64
	nbU := adj[off[u]:off[u+1]]
	s.prefetchStart(nbU)
	for i, z := range nbU {
		// The look-ahead of ahead, written out: in this loop (CN, JC on
		// graphs below the hash table's size) the call measured 2-3% slower.
		var ps, pl unsafe.Pointer
		lines := 0
		if j := i + spanAhead; j < len(nbU) {
			ps = unsafe.Pointer(&sp[nbU[j]])
		}
		if j := i + adjAhead; j < len(nbU) {
			pl, lines = s.listStart(nbU[j])
		}
		prefetch(ps, pl, lines)
		x := sp[z]
		lo, mid, hi := x.lo, x.lo+int64(x.np), x.lo+int64(x.deg)
		wedges += hi - lo
		nt = addCounts(cnt, tch, adj[lo:mid], pubInc, nt)
		nt = addCounts(cnt, tch, adj[mid:hi], 1, nt)
	}
	w.nt = nt
	r.Wedges = wedges

	grow(r, nt)
	mask := len(cnt) - 1
	// As in sums: mark u and its neighbours in their counters (the top bit)
	// instead of looking each touched node up in stamp, and clear the marks
	// afterwards.
	mark := T(1) << (2*half - 1)
	cnt[int(u)&mask] |= mark
	for _, z := range nbU {
		cnt[int(z)&mask] |= mark
	}
	var k int
	if s.kind == CN {
		k = extractCN(r.Cands, r.S, r.Pub, cnt, tch[:nt])
	} else {
		k = extractJC(r.Cands, r.S, r.Pub, cnt, tch[:nt], sp, s.deg[u])
	}
	cnt[int(u)&mask] &^= mark
	for _, z := range nbU {
		cnt[int(z)&mask] &^= mark
	}
	r.Cands, r.S, r.Pub = r.Cands[:k], r.S[:k], r.Pub[:k]
}

// extractCN writes the unmarked nodes of vs with their two counts to
// cands, sc and pub from index 0 and returns how many it wrote. Its own
// function, like addCounts: inside the larger caller the loop's values
// spilled to the stack.
//
//go:noinline
func extractCN[T counter](cands []int32, sc, pub []float64, cnt []T, vs []int32) int {
	mask := len(cnt) - 1
	if mask < 0 {
		return 0 // unreachable (length is a power of two); proves mask non-negative
	}
	half := halfBits[T]()
	mark, low := T(1)<<(2*half-1), T(1)<<half-1
	k := 0
	for _, v := range vs {
		x := cnt[int(v)&mask]
		if x&mark != 0 {
			continue
		}
		cands[k] = v
		sc[k] = float64(x & low)
		pub[k] = float64(x >> half)
		k++
	}
	return k
}

// extractJC is extractCN for JC: the ratios with the union sizes, from the
// counts and the degrees of u (du) and of each v (from its span: one cache
// line, where deg and pubDeg are two).
//
//go:noinline
func extractJC[T counter](cands []int32, sc, pub []float64, cnt []T, vs []int32, sp []span, du int32) int {
	mask := len(cnt) - 1
	if mask < 0 {
		return 0
	}
	half := halfBits[T]()
	mark, low := T(1)<<(2*half-1), T(1)<<half-1
	k := 0
	for _, v := range vs {
		x := cnt[int(v)&mask]
		if x&mark != 0 {
			continue
		}
		cands[k] = v
		sc[k], pub[k] = jaccard(int32(x&low), int32(x>>half), du, sp[v])
		k++
	}
	return k
}

// jaccard is JC's two scores of a candidate v with span y from its counts
// c (every wedge) and cp (public wedges), for a query of degree du. c >= 1,
// so the union du+deg(v)-c >= deg(v) >= 1.
func jaccard(c, cp, du int32, y span) (s, pub float64) {
	s = float64(c) / float64(du+y.deg-c)
	if cp > 0 {
		pub = float64(cp) / float64(du+y.np-cp)
	}
	return s, pub
}

// addCounts adds inc to cnt[v] for every v in vs, appending first touches to
// tch[nt:]; it returns the new nt. The touched slot is written on every
// wedge and kept only on a first touch: a branch-free append (first touches
// are unpredictable on dense graphs). Not inlined: inside the larger caller
// the loop's variables spill to the stack (AA measured about 2x slower).
//
//go:noinline
func addCounts[T word](cnt []T, tch []int32, vs []int32, inc T, nt int) int {
	mask, tmask := len(cnt)-1, len(tch)-1
	if mask < 0 || tmask < 0 {
		return nt // unreachable (lengths are powers of two); proves the masks non-negative
	}
	for _, v := range vs {
		i := int(v) & mask
		x := cnt[i]
		tch[nt&tmask] = v
		if x == 0 {
			nt++
		}
		cnt[i] = x + inc
	}
	return nt
}

// sums scores an AA/RA query into the dense accumulators (size 0), or an
// AA/RA/CN/JC query into the table of size slots (hashacc.go). CN and JC
// add 1 to both sums of a wedge whose second pair is public and to the
// first only otherwise, as counts adds its two halves: a float64 holds the
// counts exactly, so the scores are those of counts.
func (w *Worker) sums(u int32, r *Result, size int) {
	s := w.s
	adj, off, sp, dw := s.adj, s.off, s.sp, s.dw
	acc, tch := w.acc, w.touched
	var tab []hslot
	var tabS []sslot // instead of tab: without public sums
	var shift, gen uint32
	switch {
	case size > 0 && w.smallSlots():
		tabS, shift, gen = w.tableS(size)
	case size > 0:
		tab, shift, gen = w.table(size)
	}
	nt := 0
	var wedges int64
	nbU := adj[off[u]:off[u+1]]
	// held: the candidates stay in the table (ScoreHeld), u and its
	// neighbours marked in it before the first wedge. sHi is the largest
	// candidate sum, aMin the smallest weight of a neighbour z with
	// another neighbour than u (a lower bound of every candidate's sum:
	// rounding is monotone, so a sum of positive weights is at least each
	// of them), cm the largest count field of a slot other than u's.
	held := tabS != nil && w.heldReq
	sHi, aMin := math.Inf(-1), math.Inf(1)
	var cm uint64
	if held {
		markHeld(tabS, u, nbU, shift, gen)
	}
	s.prefetchStart(nbU)
	// nbU[:npU]: {u,z} not protected, public weight of pubDeg(z); the rest
	// are protected, so degPub_u(z) counts u too: of pubDeg(z)+1.
	npU := int(sp[u].np)
	var part int32
	// bu is b(u) of Sensitivity when every protected pair is an edge: some
	// neighbour z has a protected neighbour other than u (z's protected
	// neighbours are u alone when it has one and {u,z} is protected).
	bu := 0
	// counted: the slots count the protected wedges (the counts, at most
	// deg(u), fit in a key).
	counted := len(nbU) < 1<<cBits
	for i, z := range nbU {
		s.ahead(nbU, i)
		if i == npU {
			part = 1
		}
		x := sp[z]
		a, b := 1.0, 1.0 // CN, JC: the counts of every wedge and of the public ones
		if dw != nil {
			a, b = dw[x.deg].w, dw[x.np+part].p
		}
		if q := x.deg - x.np; q > 1 || (q == 1 && part == 0) {
			bu = 1
		}
		lo, mid, hi := x.lo, x.lo+int64(x.np), x.lo+int64(x.deg)
		wedges += hi - lo
		switch {
		case held:
			if x.deg > 1 && a < aMin {
				aMin = a
			}
			nt, sHi = addHeldSums(tabS, tch, adj[lo:mid], a, shift, gen, nt, sHi)
			if counted {
				nt, sHi, cm = addHeldProt(tabS, tch, adj[mid:hi], a, u, shift, gen, nt, sHi, cm)
			} else {
				nt, sHi = addHeldSums(tabS, tch, adj[mid:hi], a, shift, gen, nt, sHi)
			}
		case tabS != nil && counted:
			nt = addHashSumsS(tabS, tch, adj[lo:mid], a, shift, gen, nt)
			nt = addHashProtS(tabS, tch, adj[mid:hi], a, shift, gen, nt)
		case tabS != nil:
			nt = addHashSumsS(tabS, tch, adj[lo:mid], a, shift, gen, nt)
			nt = addHashSumsS(tabS, tch, adj[mid:hi], a, shift, gen, nt)
		case tab != nil && counted:
			nt = addHashSums(tab, tch, adj[lo:mid], a, b, shift, gen, nt)
			nt = addHashProt(tab, tch, adj[mid:hi], a, shift, gen, nt)
		case tab != nil:
			nt = addHashSums(tab, tch, adj[lo:mid], a, b, shift, gen, nt)
			nt = addHashSums(tab, tch, adj[mid:hi], a, 0, shift, gen, nt)
		default:
			nt = addSums(acc, tch, adj[lo:mid], a, b, nt)
			nt = addSums(acc, tch, adj[mid:hi], a, 0, nt)
		}
	}
	w.nt = nt
	r.Wedges = wedges
	if held {
		w.held, w.nbMarked = true, true
		w.foldB, w.foldC, w.folded = bu, int(cm>>cShift), counted
		r.Held = nt
		r.SRange, r.SLo, r.SHi = nt > 0, aMin, sHi
		return
	}

	grow(r, nt)
	// u and its neighbours are not candidates. Rather than look each touched
	// node up in stamp (a second random access per candidate), flip the sign
	// of their sums (exact; a touched sum is > 0), skip negative sums, and
	// flip them back so that At still reads their exact scores.
	var k int
	lo, hi := math.Inf(1), math.Inf(-1)
	switch {
	case tabS != nil:
		var cu int32
		w.flipHash(u, nbU)
		k, lo, hi, cu = extractHashS(r.Cands, r.S, tabS, tch[:nt], u)
		w.flipHash(u, nbU)
		w.foldB, w.foldC, w.folded = bu, int(cu), counted
	case tab == nil:
		flipSums(acc, u, nbU)
		k, lo, hi = extractSums(r.Cands, r.S, r.Pub, acc, tch[:nt])
		flipSums(acc, u, nbU)
	case s.kind == JC:
		w.flipHash(u, nbU)
		k = extractHashJC(r.Cands, r.S, r.Pub, tab, tch[:nt], sp, s.deg[u])
		w.flipHash(u, nbU)
	default:
		var cu int32
		w.flipHash(u, nbU)
		k, lo, hi, cu = extractHash(r.Cands, r.S, r.Pub, tab, tch[:nt], u)
		w.flipHash(u, nbU)
		w.foldB, w.foldC, w.folded = bu, int(cu), counted
	}
	switch {
	case tabS != nil:
		w.nbMarked = markNeighbours(tabS, nbU, shift, gen, nt)
	case tab != nil:
		w.nbMarked = markNeighbours(tab, nbU, shift, gen, nt)
	}
	r.Cands, r.S, r.Pub = r.Cands[:k], r.S[:k], r.Pub[:k]
	r.SRange, r.SLo, r.SHi = k > 0 && lo <= hi, lo, hi
}

// extractSums is extractCN for AA/RA: the nodes of vs with non-negative
// sums.
//
//go:noinline
func extractSums(cands []int32, sc, pub []float64, acc []accum, vs []int32) (k int, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	mask := len(acc) - 1
	if mask < 0 {
		return 0, lo, hi
	}
	for _, v := range vs {
		x := acc[int(v)&mask]
		if x.s < 0 {
			continue
		}
		cands[k] = v
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
	return k, lo, hi
}

// flipSums negates the sums of u and its neighbours nbU: sums' mark (and
// unmark) for the candidate extraction.
func flipSums(acc []accum, u int32, nbU []int32) {
	mask := len(acc) - 1
	acc[int(u)&mask].s = -acc[int(u)&mask].s
	for _, z := range nbU {
		acc[int(z)&mask].s = -acc[int(z)&mask].s
	}
}

// addSums is addCounts for AA/RA: acc[v].s += a, acc[v].p += b. A touched
// accumulator has s > 0 because a > 0.
//
//go:noinline
func addSums(acc []accum, tch []int32, vs []int32, a, b float64, nt int) int {
	mask, tmask := len(acc)-1, len(tch)-1
	if mask < 0 || tmask < 0 {
		return nt
	}
	for _, v := range vs {
		x := &acc[int(v)&mask]
		tch[nt&tmask] = v
		if x.s == 0 {
			nt++
		}
		x.s += a
		x.p += b
	}
	return nt
}

func (w *Worker) pa(u int32, r *Result) {
	s := w.s
	du := float64(s.deg[u])
	grow(r, s.n-1-int(s.deg[u]))
	cands, sc, pub := r.Cands, r.S, r.Pub
	stamp, gen := w.stamp, w.gen
	k := 0
	for v := range s.n {
		if stamp[v] == gen {
			continue
		}
		cands[k] = int32(v)
		sc[k] = du * float64(s.deg[v])
		pub[k] = du * float64(s.pubDeg[v])
		k++
	}
}

// At returns s(u, v) and s_pub(u, v) for the query u of the last Score and
// any node 0 <= v < N, v != u: 0 for candidates in the Zero block, and the exact scores
// of the pair for neighbours of u too (the wedges reach them). It returns
// (0, 0) for v == u or before the first Score. After ScoreNoPublic, pub is
// NaN.
func (w *Worker) At(v int32) (s, pub float64) {
	s, pub = w.at(v)
	if w.nopub {
		pub = math.NaN()
	}
	return s, pub
}

func (w *Worker) at(v int32) (s, pub float64) {
	if !w.scored || v == w.u {
		return 0, 0
	}
	sc := w.s
	switch sc.kind {
	case CN:
		c, cp := w.countsAt(v)
		return float64(c), float64(cp)
	case JC:
		c, cp := w.countsAt(v)
		du := sc.deg[w.u]
		if c > 0 {
			s = float64(c) / float64(du+sc.deg[v]-c)
		}
		if cp > 0 {
			pub = float64(cp) / float64(du+sc.pubDeg[v]-cp)
		}
		return s, pub
	case AA, RA:
		if w.hashed {
			s, pub, _ = w.hfind(v)
			return s, pub
		}
		x := w.acc[v]
		return x.s, x.p
	case Bounded:
		if w.stamp[v] == w.gen { // a neighbour of u: not precomputed
			return sc.eval(w.u, v), 0
		}
		return w.dense[v], 0
	default: // PA
		du := float64(sc.deg[w.u])
		return du * float64(sc.deg[v]), du * float64(sc.pubDeg[v])
	}
}

// InZero reports whether v is in the last Score's Zero block: a candidate
// (not u, not a neighbour of u) that no wedge reached. O(1); false for PA,
// bounded scores and before any Score.
func (w *Worker) InZero(v int32) bool {
	if !w.scored || v < 0 || int(v) >= w.s.n {
		return false
	}
	if w.hashed {
		// Without the stamp, a random access to an array of every node:
		// the table and u's neighbour list are in the cache.
		if w.nbMarked {
			return v != w.u && !w.hhas(v)
		}
		return v != w.u && !w.hhas(v) && !w.isNeighbour(v)
	}
	if w.stamp[v] == w.gen {
		return false
	}
	switch w.s.kind {
	case CN, JC:
		c, _ := w.countsAt(v)
		return c == 0
	case AA, RA:
		if w.hashed {
			return !w.hhas(v)
		}
		return w.acc[v].s == 0
	}
	return false
}

// CandScore reports whether v is one of the last Score's Cands (a node
// other than u and its neighbours that a wedge reached), and if so its
// score s(u, v). O(1): a probe of the query's accumulators; false before
// any Score.
func (w *Worker) CandScore(v int32) (s float64, ok bool) {
	if !w.scored || v < 0 || int(v) >= w.s.n || w.stamp[v] == w.gen || w.InZero(v) {
		return 0, false
	}
	s, _ = w.at(v)
	return s, true
}

// ZeroCands appends to dst[:0] the ids of the last Score's Zero block
// (candidates not in Cands), ascending, by an O(N) scan. It is empty for PA.
func (w *Worker) ZeroCands(dst []int32) []int32 {
	dst = dst[:0]
	if !w.scored {
		return dst
	}
	stamp, gen := w.stamp, w.gen
	switch w.s.kind {
	case CN, JC:
		if w.hashed {
			return w.zeroHash(dst)
		}
		if w.cnt32 != nil {
			return zeroCands(dst, w.cnt32[:w.s.n], stamp, gen)
		}
		return zeroCands(dst, w.cnt[:w.s.n], stamp, gen)
	case AA, RA:
		if w.hashed {
			return w.zeroHash(dst)
		}
		for v, x := range w.acc[:w.s.n] {
			if x.s == 0 && stamp[v] != gen {
				dst = append(dst, int32(v))
			}
		}
	}
	return dst
}

// countsAt is v's two counts (every wedge, public wedges) from the last
// Score.
func (w *Worker) countsAt(v int32) (c, cp int32) {
	if w.hashed {
		s, p, _ := w.hfind(v)
		return int32(s), int32(p)
	}
	if w.cnt32 != nil {
		x := w.cnt32[v]
		return int32(x & 0xffff), int32(x >> 16)
	}
	x := w.cnt[v]
	return int32(uint32(x)), int32(x >> 32)
}

// zeroCands is ZeroCands for CN and JC counters.
func zeroCands[T counter](dst []int32, cnt []T, stamp []uint32, gen uint32) []int32 {
	for v, x := range cnt {
		if x == 0 && stamp[v] != gen {
			dst = append(dst, int32(v))
		}
	}
	return dst
}

// Each scores every query on GOMAXPROCS goroutines (at most one per query)
// and calls fn(worker, r) for each, concurrently from different goroutines.
// worker in [0, GOMAXPROCS) identifies the calling goroutine so the caller can
// keep per-worker state; r is reused after fn returns, so fn must copy what
// it keeps. Queries are handed out in small chunks (par.Run; query costs
// vary a lot with degree). It returns an error, before scoring anything, if
// a query is out of range.
func (s *Scorer) Each(queries []int32, fn func(worker int, r *Result)) error {
	return s.EachWorker(queries, func(id int, _ *Worker, r *Result) { fn(id, r) })
}

// EachWorker is Each that also passes the Worker that scored r, so fn can
// call its At and ZeroCands (valid until fn returns).
func (s *Scorer) EachWorker(queries []int32, fn func(worker int, w *Worker, r *Result)) error {
	for _, u := range queries {
		if u < 0 || int(u) >= s.n {
			return fmt.Errorf("score: query %d out of range [0,%d)", u, s.n)
		}
	}
	nq := len(queries)
	nw := min(runtime.GOMAXPROCS(0), nq)
	if nw == 0 {
		return nil
	}
	type state struct {
		id int
		w  *Worker
		r  Result
	}
	// Workers come from the pool and go back to it once every query is
	// scored; states[id] is written only by goroutine id.
	states := make([]*state, nw)
	newState := func(id int) *state {
		w, _ := s.pool.Get().(*Worker)
		if w == nil {
			w = s.NewWorker()
		}
		states[id] = &state{id: id, w: w}
		return states[id]
	}
	chunk := max(1, min(64, nq/(16*nw)))
	_ = par.Run(context.Background(), nq, par.Options{Workers: nw, Chunk: chunk}, newState, func(st *state, i int) error {
		st.w.Score(queries[i], &st.r)
		fn(st.id, st.w, &st.r)
		return nil
	})
	for _, st := range states {
		if st != nil {
			s.pool.Put(st.w)
		}
	}
	return nil
}
