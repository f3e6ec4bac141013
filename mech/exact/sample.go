package exact

import (
	"io"
	"math"
	"math/bits"
	"sync"

	"github.com/dplp/dplp/mech"
)

// maxBuckets bounds the number of envelope buckets (s*Jc <= 62).
const maxBuckets = 64

// picked records a block member already released.
type picked struct{ blk, mem int }

type workspace struct {
	src       src
	gv        []int64 // individuals: grid value (distance to the reference maximum: mx - gv)
	bk        []uint8 // individuals: bucket (build's, for the entries of its act)
	bgv, bdv  []int64 // blocks
	brem      []int   // blocks: remaining members
	bbase     []int   // blocks: pick index of the first member
	idx, tmp  []int32 // individuals grouped by bucket
	blist     []int32 // blocks grouped by bucket
	off, icnt [maxBuckets + 1]int
	bstart    [maxBuckets + 2]int
	cnt, env  [maxBuckets + 1]uint64
	total     uint64
	mx        int64 // the reference maximum of the buckets (build's)
	jc        int
	ind       []int32 // remaining individuals (Delta == 0 path)
	picks     []picked
	// lazy is set while TopKLazy's individuals are all in bucket 0 as the
	// identity order 0..n-1 with the swaps of released ones in lz (at most
	// k entries), their grid values computed only when proposed.
	lazy bool
	lz   []lzSwap
	// anon: a block pick is reported as the block's first index plus the
	// number of its earlier picks, and no member is drawn (TopKLazyAnon).
	anon bool
}

// lzSwap is a position of the lazy identity order holding another
// individual than its own.
type lzSwap struct{ pos, ind int32 }

// indAt is the individual at position p of w.idx (of the lazy order).
func (w *workspace) indAt(p int) int32 {
	if !w.lazy {
		return w.idx[p]
	}
	for _, e := range w.lz {
		if int(e.pos) == p {
			return e.ind
		}
	}
	return int32(p)
}

// setInd puts individual i at position p of w.idx (of the lazy order).
func (w *workspace) setInd(p int, i int32) {
	if !w.lazy {
		w.idx[p] = i
		return
	}
	for t, e := range w.lz {
		if int(e.pos) == p {
			w.lz[t].ind = i
			return
		}
	}
	w.lz = append(w.lz, lzSwap{int32(p), i})
}

// endLazy leaves the lazy order once no individual is left in it (bucket
// 0 empty), so that rebase sees no individual.
func (w *workspace) endLazy() {
	w.lazy = false
	w.lz = w.lz[:0]
	w.idx = w.idx[:0]
	w.icnt = [maxBuckets + 1]int{}
	w.off = [maxBuckets + 1]int{}
}

var pool = sync.Pool{New: func() any { return new(workspace) }}

// TopK samples an ordered list of min(k, u.Len()) distinct candidates: k
// rounds of the base-2 exponential mechanism without replacement, round j
// picking a remaining candidate i with probability
//
//	b^(-n_i) / sum over remaining c of b^(-n_c)
//
// where n_i = floor(u_i / g) is i's grid utility. Picks are indices into
// the virtual concatenation [Vals..., block 0 members..., ...], exactly as
// mech.ExpTopK returns them, and are written to dst[:0].
//
// Randomness: only uniform bits read from r (in deployment a ChaCha8
// generator keyed by crypto/rand through calib.RandReader; crypto/rand.Reader
// works too; a seeded math/rand/v2 ChaCha8 for reproducible tests), in
// 512-byte reads, or word by word from a reader that is also Words. A
// read error is returned. Every probability decision is
// an exact comparison of uniform bits with integers or with rigorous
// enclosures of dyadic rationals (no float64): the output distribution is
// exactly the one above, which ListProb computes.
//
// How (rejection from a dyadic envelope): with d_i = nmax - n_i >= 0 and
// bucket j_i = min(d_i / L, Jc) where b^L <= 2^-s, the envelope weight
// 2^(-s*j_i) >= b^(d_i) is an integer after scaling by 2^(s*Jc). A
// proposal is a uniform integer below the envelope total, which selects a
// bucket and a uniform remaining candidate in it (a block contributes its
// remaining members); it is accepted with probability b^(d_i) * 2^(s*j_i)
// (exact Bernoulli, bernPow). Accepted proposals are distributed exactly
// as the mechanism; the acceptance rate is above 1/2 for uncapped buckets.
// A chosen block member is uniform among the block's unreleased members.
// Cost: O(len(Vals) + len(Blocks)) integer work to build the buckets, then
// O(Jc + blocks per bucket) per proposal, about 2 proposals per pick.
//
// Delta == 0: exact top-K, ties broken uniformly (O(k * (len(Vals) +
// len(Blocks)))).
func (s *Sampler) TopK(u *mech.Utilities, k int, r io.Reader, dst []int) ([]int, error) {
	dst = dst[:0]
	if k < 1 {
		return dst, invalid("k = %d, need k >= 1", k)
	}
	if r == nil {
		return dst, invalid("nil random source")
	}
	// The blocks are checked here, the individual values as they are put
	// on the grid (gridAll), with Validate's errors.
	if err := u.ValidateBlocks(); err != nil {
		return dst, u.Validate() // the same error Validate gives (an invalid value first)
	}
	w := pool.Get().(*workspace)
	defer pool.Put(w)
	w.src.reset(r)
	defer w.src.reset(nil)
	n := u.Len()
	k = min(k, n)
	if k == 0 {
		return dst, nil
	}
	w.lazy, w.anon = false, false
	w.picks = w.picks[:0]
	w.brem = w.brem[:0]
	w.bbase = w.bbase[:0]
	base := len(u.Vals)
	for _, b := range u.Blocks {
		w.brem = append(w.brem, b.Size)
		w.bbase = append(w.bbase, base)
		base += b.Size
	}
	if s.zero {
		if err := u.Validate(); err != nil {
			return dst, err
		}
		return s.topExact(w, u, k, dst)
	}
	mx, mn, err := s.gridAll(w, u)
	if err != nil {
		return dst, err
	}
	w.jc = (62 - bits.Len(uint(n))) / int(s.s)
	w.jc = min(w.jc, maxBuckets-1)
	w.tmp = w.tmp[:0]
	for i := range u.Vals {
		w.tmp = append(w.tmp, int32(i))
	}
	s.build(w, w.tmp, mx, mn)
	return s.draw(w, nil, u.Blocks, k, dst)
}

// draw runs the rounds on built buckets until dst holds k picks. With
// lazy (TopKLazy) the individuals are all in bucket 0 and their grid
// values are computed when proposed; otherwise they are w.gv.
func (s *Sampler) draw(w *workspace, lazy Lazy, blocks []mech.Block, k int, dst []int) ([]int, error) {
	rs := &w.src
	for len(dst) < k {
		j0 := 0
		for w.cnt[j0] == 0 {
			j0++
		}
		if j0 > 0 && 2*j0 >= w.jc {
			if w.lazy {
				// Bucket 0 held every individual: none is left.
				w.endLazy()
			}
			s.rebase(w)
			continue
		}
		v := rs.below(w.total)
		if rs.err != nil {
			return dst, rs.err
		}
		j := j0
		for v >= w.env[j] {
			v -= w.env[j]
			j++
		}
		sh := s.s * uint(w.jc-j)
		m := int(v >> sh)
		blk, d := -1, int64(0)
		if m < w.icnt[j] {
			i := w.indAt(w.off[j] + m)
			if w.lazy {
				g, err := s.lazyGrid(lazy, int(i), w.mx)
				if err != nil {
					return dst[:0], err
				}
				d = w.mx - g
			} else {
				d = w.mx - w.gv[i]
			}
		} else {
			m -= w.icnt[j]
			for _, b := range w.blist[w.bstart[j]:w.bstart[j+1]] {
				if m < w.brem[b] {
					blk = int(b)
					break
				}
				m -= w.brem[b]
			}
			d = w.bdv[blk]
		}
		ok := s.accept(rs, d, j, w.jc)
		if rs.err != nil {
			return dst, rs.err
		}
		if !ok {
			continue
		}
		if blk < 0 {
			p := w.off[j] + m
			last := w.off[j] + w.icnt[j] - 1
			ip, il := w.indAt(p), w.indAt(last)
			dst = append(dst, int(ip))
			w.setInd(p, il)
			w.setInd(last, ip)
			w.icnt[j]--
		} else {
			if w.anon {
				dst = append(dst, w.bbase[blk]+blocks[blk].Size-w.brem[blk])
			} else {
				dst = append(dst, w.bbase[blk]+s.member(w, blk, blocks[blk].Size))
			}
			w.brem[blk]--
		}
		w.cnt[j]--
		w.env[j] -= 1 << sh
		w.total -= 1 << sh
		if rs.err != nil {
			return dst[:0], rs.err
		}
	}
	return dst, nil
}

// member draws a uniform member of block blk among those not yet released
// (rejection; the block has at least one unreleased member).
func (s *Sampler) member(w *workspace, blk, size int) int {
	for {
		m := int(w.src.below(uint64(size)))
		dup := false
		for _, p := range w.picks {
			if p.blk == blk && p.mem == m {
				dup = true
				break
			}
		}
		if !dup || w.src.err != nil {
			w.picks = append(w.picks, picked{blk, m})
			return m
		}
	}
}

// accept returns true with probability b^d * 2^(s*j) (<= 1 because
// b^(L*min(d/L, Jc)) <= 2^(-s*j)). For a capped bucket (d/L > Jc) the
// probability factors as [b^(d1) 2^(s*j)] * (b^L)^m with d1 = d - m*L,
// d1/L = Jc, so no power beyond (Jc+1)*L grid units is ever enclosed.
func (s *Sampler) accept(rs *src, d int64, j, jc int) bool {
	t := s.s * uint(j)
	if q := d / s.l; q > int64(jc) {
		m := q - int64(jc)
		if !s.bernPow(rs, d-m*s.l, t) {
			return false
		}
		for ; m > 0; m-- {
			if !s.bernPow(rs, s.l, 0) {
				return false
			}
		}
		return true
	}
	return s.bernPow(rs, d, t)
}

// gridAll converts every utility to the grid once and returns the largest
// grid value of the individuals and of the blocks with members, and the
// smallest of the individuals (what build needs first). A value toGrid
// refuses is reported with Validate's error when Validate has one (a NaN or
// infinite utility), else as beyond the grid.
func (s *Sampler) gridAll(w *workspace, u *mech.Utilities) (mx, mn int64, err error) {
	mx, mn = -maxGrid, maxGrid
	w.gv = w.gv[:0]
	for i, v := range u.Vals {
		var g int64
		// toGrid's common case inline: a normal v = +-m * 2^(ex-1075) with
		// v/2^e = +-m * 2^-k, 1 <= k <= 63, is floor(m/2^k) or -ceil(m/2^k).
		b := math.Float64bits(v)
		ex := int(b>>52) & 0x7ff
		if k := 1075 + s.e - ex; ex != 0 && ex != 0x7ff && uint(k-1) < 63 {
			m := b&(1<<52-1) | 1<<52
			if b>>63 == 0 {
				g = int64(m >> uint(k))
			} else {
				g = -int64((m + (1<<uint(k) - 1)) >> uint(k))
			}
		} else {
			var ok bool
			if g, ok = toGrid(v, s.e); !ok {
				if err := u.Validate(); err != nil {
					return 0, 0, err
				}
				return 0, 0, invalid("utility %d = %v is beyond 2^61 grid steps of %v", i, v, s.GridStep())
			}
		}
		mx, mn = max(mx, g), min(mn, g)
		w.gv = append(w.gv, g)
	}
	w.bgv = w.bgv[:0]
	for b, blk := range u.Blocks {
		g, ok := toGrid(blk.Val, s.e)
		if !ok {
			if err := u.Validate(); err != nil {
				return 0, 0, err
			}
			return 0, 0, invalid("block %d value %v is beyond 2^61 grid steps of %v", b, blk.Val, s.GridStep())
		}
		if blk.Size > 0 {
			mx = max(mx, g)
		}
		w.bgv = append(w.bgv, g)
	}
	return mx, mn, nil
}

// keysAll converts every utility to its order key once (Delta == 0).
func keysAll(w *workspace, u *mech.Utilities) {
	w.gv = w.gv[:0]
	for _, v := range u.Vals {
		w.gv = append(w.gv, orderKey(v))
	}
	w.bgv = w.bgv[:0]
	for _, b := range u.Blocks {
		w.bgv = append(w.bgv, orderKey(b.Val))
	}
}

// build fills the buckets, by distance to the largest remaining grid
// utility (kept as w.mx), with the individuals in act and the blocks with
// members left. It runs once per list over every candidate (again on a
// rebase). When every individual is within one bucket width of the maximum
// they all go to bucket 0 in act's order; otherwise each individual's
// bucket is computed once (bucketIndividuals), with a reciprocal division
// only when it is not in the capped bucket jc.
//
// mx is the largest of w.gv[i] for i in act and w.bgv[b] for blocks b with
// members left (-maxGrid if none), mn the smallest w.gv[i] for i in act
// (maxGrid if none): the caller has them (gridAll, rebase).
func (s *Sampler) build(w *workspace, act []int32, mx, mn int64) {
	jc := w.jc
	l := s.l
	// d >= capAt puts d in bucket jc (d/l >= jc); capAt saturates where
	// jc*l would overflow, and then every d < capAt is divided.
	const maxInt64 = 1<<63 - 1
	capAt := int64(maxInt64)
	if l <= maxInt64/int64(max(jc, 1)) {
		capAt = int64(jc) * l
	}
	w.icnt = [maxBuckets + 1]int{}
	w.cnt = [maxBuckets + 1]uint64{}
	// Only the entries of act are written and read: no copy, no clearing.
	n := len(w.gv)
	if cap(w.bk) < n {
		w.bk = make([]uint8, n)
	}
	w.bk = w.bk[:n]
	w.mx = mx
	if mx-mn < l {
		// Every individual is within one bucket width of the maximum (d < l:
		// d/l = 0, and when jc = 0 bucket 0 is the capped one too), so the
		// counting sort would put act, in act's order, in bucket 0.
		w.icnt[0], w.cnt[0] = len(act), uint64(len(act))
		w.off[0] = 0
		for j := 1; j <= jc; j++ {
			w.off[j] = len(act)
		}
		w.idx = append(w.idx[:0], act...)
	} else {
		s.bucketIndividuals(w, act, mx, capAt)
	}
	s.buildBlocks(w, mx)
}

// buildBlocks puts the blocks with members left in their buckets (by
// distance to mx) and sets every bucket's envelope and the total, once the
// individuals' counts are in w.cnt (build, TopKLazy).
func (s *Sampler) buildBlocks(w *workspace, mx int64) {
	jc := w.jc
	w.bdv = append(w.bdv[:0], w.bgv...)
	w.bstart = [maxBuckets + 2]int{}
	nb := 0
	for b, g := range w.bgv {
		if w.brem[b] > 0 {
			d := mx - g
			w.bdv[b] = d
			j := bucket(d, s.l, jc)
			w.bstart[j+1]++
			w.cnt[j] += uint64(w.brem[b])
			nb++
		}
	}
	for j := 1; j <= jc+1; j++ {
		w.bstart[j] += w.bstart[j-1]
	}
	w.blist = grow(w.blist, nb)
	var bpos [maxBuckets + 2]int
	copy(bpos[:], w.bstart[:])
	for b := range w.bgv {
		if w.brem[b] > 0 {
			j := bucket(w.bdv[b], s.l, jc)
			w.blist[bpos[j]] = int32(b)
			bpos[j]++
		}
	}
	w.total = 0
	for j := 0; j <= jc; j++ {
		w.env[j] = w.cnt[j] << (s.s * uint(jc-j))
		w.total += w.env[j]
	}
}

// bucketIndividuals puts each individual of act in its bucket (distance d
// to mx over l, capped at jc from capAt on) and groups them by bucket in
// w.idx, in act's order within a bucket (a stable counting sort).
func (s *Sampler) bucketIndividuals(w *workspace, act []int32, mx, capAt int64) {
	jc := w.jc
	for _, i := range act {
		d := mx - w.gv[i]
		j := jc
		if d < capAt {
			j = int(s.quo(d))
		}
		w.bk[i] = uint8(j)
		w.icnt[j]++
	}
	o := 0
	for j := 0; j <= jc; j++ {
		w.off[j] = o
		o += w.icnt[j]
	}
	w.idx = grow(w.idx, o)
	pos := w.off
	for _, i := range act {
		j := w.bk[i]
		w.idx[pos[j]] = i
		pos[j]++
	}
	for j := 0; j <= jc; j++ {
		w.cnt[j] = uint64(w.icnt[j])
	}
}

// rebase re-centres the buckets on the largest remaining utility (the
// distribution is unchanged: weights are relative).
func (s *Sampler) rebase(w *workspace) {
	act := w.tmp[:0]
	for j := 0; j <= w.jc; j++ {
		act = append(act, w.idx[w.off[j]:w.off[j]+w.icnt[j]]...)
	}
	w.tmp = act
	mx, mn := int64(-maxGrid), int64(maxGrid)
	for _, i := range act {
		mx, mn = max(mx, w.gv[i]), min(mn, w.gv[i])
	}
	for b, g := range w.bgv {
		if w.brem[b] > 0 {
			mx = max(mx, g)
		}
	}
	s.build(w, act, mx, mn)
}

// quo returns d / s.l for 0 <= d < 2^63 by a multiplication with the
// reciprocal instead of a division (build divides most candidates' distance
// by l). With q = floor(d/l) and inv = floor((2^64-1)/l), (2^64-l)/l <=
// inv <= 2^64/l, so d/l - 1/2 < d/l - d/2^64 <= d*inv/2^64 <= d/l: the high
// word of d*inv is q or q-1, and one comparison of the remainder with l
// corrects it.
func (s *Sampler) quo(d int64) int64 {
	if s.linv == 0 {
		return d // l == 1
	}
	hi, _ := bits.Mul64(uint64(d), s.linv)
	q := int64(hi)
	if d-q*s.l >= s.l {
		q++
	}
	return q
}

// grow returns a slice of length n reusing a's storage when possible.
func grow(a []int32, n int) []int32 {
	if cap(a) < n {
		return make([]int32, n)
	}
	return a[:n]
}

func bucket(d, l int64, jc int) int {
	if q := d / l; q < int64(jc) {
		return int(q)
	}
	return jc
}

// topExact is the Delta == 0 path: each round takes a uniform candidate
// among the remaining ones with the largest utility (exact comparison of
// float64 values through an order-preserving integer key).
func (s *Sampler) topExact(w *workspace, u *mech.Utilities, k int, dst []int) ([]int, error) {
	keysAll(w, u)
	w.ind = w.ind[:0]
	for i := range w.gv {
		w.ind = append(w.ind, int32(i))
	}
	rs := &w.src
	for len(dst) < k {
		mx, c := int64(0), uint64(0)
		first := true
		for _, i := range w.ind {
			if g := w.gv[i]; first || g > mx {
				mx, c, first = g, 1, false
			} else if g == mx {
				c++
			}
		}
		for b, g := range w.bgv {
			if w.brem[b] == 0 {
				continue
			}
			if first || g > mx {
				mx, c, first = g, uint64(w.brem[b]), false
			} else if g == mx {
				c += uint64(w.brem[b])
			}
		}
		m := rs.below(c)
		if rs.err != nil {
			return dst[:0], rs.err
		}
		done := false
		for p, i := range w.ind {
			if w.gv[i] == mx {
				if m == 0 {
					dst = append(dst, int(i))
					w.ind[p] = w.ind[len(w.ind)-1]
					w.ind = w.ind[:len(w.ind)-1]
					done = true
					break
				}
				m--
			}
		}
		for b := 0; !done && b < len(w.bgv); b++ {
			if w.brem[b] == 0 || w.bgv[b] != mx {
				continue
			}
			if m < uint64(w.brem[b]) {
				dst = append(dst, w.bbase[b]+s.member(w, b, u.Blocks[b].Size))
				w.brem[b]--
				done = true
				break
			}
			m -= uint64(w.brem[b])
		}
		if rs.err != nil {
			return dst[:0], rs.err
		}
	}
	return dst, nil
}
