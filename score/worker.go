package score

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"

	"github.com/dplp/dplp/internal/par"
)

// Result is the scoring of one query u against all its candidates (the
// non-neighbours v != u). Candidates not listed in Cands are the Zero block:
// both s and s_pub are exactly 0 for them (no wedge reaches them).
type Result struct {
	U     int32
	Cands []int32   // candidates reached by a wedge (PA: every candidate); deterministic wedge order, not sorted (PA: ascending)
	S     []float64 // s(u, Cands[i])
	Pub   []float64 // s_pub(u, Cands[i])
	Zero  int       // further candidates, not listed, with s = s_pub = 0

	DeltaS, SMax float64 // Scorer.Sensitivity(U)
	Wedges       int64   // wedges enumerated (u -> z -> v), for benchmarks
}

// NumCandidates is |C(u)| = N - 1 - deg(u).
func (r *Result) NumCandidates() int { return len(r.Cands) + r.Zero }

// accum is an AA/RA accumulator: full-graph and public sums.
type accum struct{ s, p float64 }

// Worker scores queries one at a time with dense accumulators of length N
// that are reused across queries. A Worker is not safe for concurrent use;
// create one per goroutine with Scorer.NewWorker.
type Worker struct {
	s *Scorer
	// CN, JC: low 32 bits count every wedge, high 32 bits count wedges whose
	// second pair {z,v} is not protected. Length is a power of two so that
	// indexing with v&mask needs no bounds check.
	cnt []uint64
	acc []accum // AA, RA; same length rule

	dense []float64 // Bounded: scores of the last query's candidates

	// touched lists every node with a non-zero accumulator (u and u's
	// neighbours included), each once: an accumulator only grows from 0, so
	// "was 0" detects the first touch. Reset lazily at the next Score so that
	// At and ZeroCands can read the accumulators.
	touched []int32
	nt      int

	stamp []uint32 // stamp[v] == gen: v is u or a neighbour of u (not a candidate)
	gen   uint32

	u      int32
	scored bool
}

func pow2(n int) int { return 1 << bits.Len(uint(n)) } // > n

// NewWorker allocates a worker's accumulators.
func (s *Scorer) NewWorker() *Worker {
	w := &Worker{s: s, stamp: make([]uint32, s.n), touched: make([]int32, pow2(s.n))}
	switch s.kind {
	case CN, JC:
		w.cnt = make([]uint64, pow2(s.n))
	case AA, RA:
		w.acc = make([]accum, pow2(s.n))
	case Bounded:
		w.dense = make([]float64, s.n)
	}
	return w
}

// Score scores query u (0 <= u < N) against all its candidates into r,
// reusing r's slices.
func (w *Worker) Score(u int32, r *Result) {
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
	r.U = u
	r.Cands, r.S, r.Pub = r.Cands[:0], r.S[:0], r.Pub[:0]
	r.DeltaS, r.SMax = s.Sensitivity(u)
	r.Wedges = 0
	switch s.kind {
	case CN, JC:
		w.counts(u, r)
	case AA, RA:
		w.sums(u, r)
	case PA:
		w.pa(u, r)
	case Bounded:
		w.bounded(u, r)
	}
	r.Zero = s.n - 1 - len(nbU) - len(r.Cands)
}

func (w *Worker) reset() {
	if w.cnt != nil {
		for _, v := range w.touched[:w.nt] {
			w.cnt[v] = 0
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

const pubInc = 1 + 1<<32

func (w *Worker) counts(u int32, r *Result) {
	s := w.s
	adj, off, pubEnd := s.adj, s.off, s.pubEnd
	cnt, tch := w.cnt, w.touched
	nt := 0
	var wedges int64
	for _, z := range adj[off[u]:off[u+1]] {
		lo, mid, hi := off[z], pubEnd[z], off[z+1]
		wedges += hi - lo
		nt = addCounts(cnt, tch, adj[lo:mid], pubInc, nt)
		nt = addCounts(cnt, tch, adj[mid:hi], 1, nt)
	}
	w.nt = nt
	r.Wedges = wedges

	grow(r, nt)
	cands, sc, pub := r.Cands, r.S, r.Pub
	mask := len(cnt) - 1
	// As in sums: mark u and its neighbours in their counters (bit 63; the
	// public count in the high half is < 2^31) instead of looking each
	// touched node up in stamp, and clear the marks afterwards.
	const mark = 1 << 63
	nbU := adj[off[u]:off[u+1]]
	cnt[int(u)&mask] |= mark
	for _, z := range nbU {
		cnt[int(z)&mask] |= mark
	}
	defer func() {
		cnt[int(u)&mask] &^= mark
		for _, z := range nbU {
			cnt[int(z)&mask] &^= mark
		}
	}()
	k := 0
	if s.kind == CN {
		for _, v := range tch[:nt] {
			x := cnt[int(v)&mask]
			if x&mark != 0 {
				continue
			}
			cands[k] = v
			sc[k] = float64(uint32(x))
			pub[k] = float64(x >> 32)
			k++
		}
	} else {
		du := s.deg[u]
		deg, pubDeg := s.deg, s.pubDeg
		for _, v := range tch[:nt] {
			x := cnt[int(v)&mask]
			if x&mark != 0 {
				continue
			}
			c, cp := int32(uint32(x)), int32(x>>32)
			cands[k] = v
			// c >= 1, so the union du+deg(v)-c >= deg(v) >= 1.
			sc[k] = float64(c) / float64(du+deg[v]-c)
			if cp > 0 {
				pub[k] = float64(cp) / float64(du+pubDeg[v]-cp)
			} else {
				pub[k] = 0
			}
			k++
		}
	}
	r.Cands, r.S, r.Pub = cands[:k], sc[:k], pub[:k]
}

// addCounts adds inc to cnt[v] for every v in vs, appending first touches to
// tch[nt:]; it returns the new nt. The touched slot is written on every
// wedge and kept only on a first touch: a branch-free append (first touches
// are unpredictable on dense graphs). Not inlined: inside the larger caller
// the loop's variables spill to the stack (AA measured about 2x slower).
//
//go:noinline
func addCounts(cnt []uint64, tch []int32, vs []int32, inc uint64, nt int) int {
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

func (w *Worker) sums(u int32, r *Result) {
	s := w.s
	adj, off, pubEnd, wt := s.adj, s.off, s.pubEnd, s.w
	acc, tch := w.acc, w.touched
	nt := 0
	var wedges int64
	// Part 0: {u,z} not protected; part 1: protected, so degPub_u(z) counts u too.
	parts := [2][]int32{adj[off[u]:pubEnd[u]], adj[pubEnd[u]:off[u+1]]}
	for part, zs := range parts {
		wp := s.wPub[part]
		for _, z := range zs {
			a, b := wt[z], wp[z]
			lo, mid, hi := off[z], pubEnd[z], off[z+1]
			wedges += hi - lo
			nt = addSums(acc, tch, adj[lo:mid], a, b, nt)
			nt = addSums(acc, tch, adj[mid:hi], a, 0, nt)
		}
	}
	w.nt = nt
	r.Wedges = wedges

	grow(r, nt)
	cands, sc, pub := r.Cands, r.S, r.Pub
	mask := len(acc) - 1
	// u and its neighbours are not candidates. Rather than look each touched
	// node up in stamp (a second random access per candidate), flip the sign
	// of their sums (exact; a touched sum is > 0), skip negative sums, and
	// flip them back so that At still reads their exact scores.
	nbU := adj[off[u]:off[u+1]]
	flipSums(acc, u, nbU)
	k := 0
	for _, v := range tch[:nt] {
		x := acc[int(v)&mask]
		if x.s < 0 {
			continue
		}
		cands[k] = v
		sc[k] = x.s
		pub[k] = x.p
		k++
	}
	flipSums(acc, u, nbU)
	r.Cands, r.S, r.Pub = cands[:k], sc[:k], pub[:k]
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
// (0, 0) for v == u or before the first Score.
func (w *Worker) At(v int32) (s, pub float64) {
	if !w.scored || v == w.u {
		return 0, 0
	}
	sc := w.s
	switch sc.kind {
	case CN:
		x := w.cnt[v]
		return float64(uint32(x)), float64(x >> 32)
	case JC:
		x := w.cnt[v]
		c, cp := int32(uint32(x)), int32(x>>32)
		du := sc.deg[w.u]
		if c > 0 {
			s = float64(c) / float64(du+sc.deg[v]-c)
		}
		if cp > 0 {
			pub = float64(cp) / float64(du+sc.pubDeg[v]-cp)
		}
		return s, pub
	case AA, RA:
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
	if !w.scored || v < 0 || int(v) >= w.s.n || w.stamp[v] == w.gen {
		return false
	}
	switch w.s.kind {
	case CN, JC:
		return w.cnt[v] == 0
	case AA, RA:
		return w.acc[v].s == 0
	}
	return false
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
		for v, x := range w.cnt[:w.s.n] {
			if x == 0 && stamp[v] != gen {
				dst = append(dst, int32(v))
			}
		}
	case AA, RA:
		for v, x := range w.acc[:w.s.n] {
			if x.s == 0 && stamp[v] != gen {
				dst = append(dst, int32(v))
			}
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
