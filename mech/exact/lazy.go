package exact

import (
	"io"
	"math"
	"math/bits"
	"sync"

	"github.com/dplp/dplp/mech"
)

// Lazy is a vector of individual utilities computed on demand: At(i) for
// i in [0, Len()). At must be a pure function of i (the same value every
// time it is asked) and safe to call from the sampling goroutine.
type Lazy interface {
	Len() int
	At(i int) float64
}

// TopKLazy is TopK for the utilities [vals..., blocks' members...] (picks
// index that concatenation, as TopK's do) when the individual values are
// expensive to compute and only an interval holding all of them is known
// up front: lo <= vals.At(i) <= hi for every i, both finite.
//
// When the interval lies within one bucket width on the grid (its grid
// ends differ by less than L, where b^L <= 2^-s; the common case at small
// eps_p), every individual belongs to bucket 0 of TopK's envelope, whose
// acceptance b^d is valid for any distance d >= 0 to the reference
// maximum. TopKLazy then takes the reference maximum from hi (and the
// blocks) instead of from the values, proposes individuals uniformly from
// bucket 0 exactly as TopK does, and computes At(i) only for a proposed
// individual: about two per pick, instead of every candidate. The output
// distribution is TopK's (the envelope argument needs only an upper bound
// of the maximum: a proposal of i is accepted with probability
// b^(mx-n_i), which is proportional to i's weight b^(-n_i) for any mx >=
// n_i), though the draws differ from TopK's on the same stream. A proposed
// value above hi (a caller whose bound is wrong) is an error, never a
// probability above 1.
//
// Otherwise (a wider interval, or Delta == 0) every value is computed and
// TopK runs on them: the same picks as TopK on the materialised vector and
// the same random stream.
func (s *Sampler) TopKLazy(vals Lazy, lo, hi float64, blocks []mech.Block, k int, r io.Reader, dst []int) ([]int, error) {
	return s.topKLazyAll(vals, lo, hi, blocks, k, r, dst, false)
}

// TopKLazyAnon is TopKLazy with anonymous block members: the t-th pick from
// a block (t = 0, 1, ...) is reported as the block's first index plus t,
// and no member is drawn. The members of a block share one utility, so
// which of them a list holds is independent of the rest of the list and
// uniform: a caller that maps each block's picks, in order, to a uniformly
// random injection into the block's members (the t-th to a uniform member
// not mapped yet, from its own randomness) releases lists with TopK's
// distribution, and TopKLazyAnon saves the member draws it would make (a
// uniform draw and a check for repeats per block pick). Which of a
// list's positions hold block members, and the individuals, are drawn as
// TopKLazy draws them.
func (s *Sampler) TopKLazyAnon(vals Lazy, lo, hi float64, blocks []mech.Block, k int, r io.Reader, dst []int) ([]int, error) {
	return s.topKLazyAll(vals, lo, hi, blocks, k, r, dst, true)
}

// topKLazyAll is TopKLazy (anon: TopKLazyAnon).
func (s *Sampler) topKLazyAll(vals Lazy, lo, hi float64, blocks []mech.Block, k int, r io.Reader, dst []int, anon bool) ([]int, error) {
	dst = dst[:0]
	n := vals.Len()
	if k < 1 {
		return dst, invalid("k = %d, need k >= 1", k)
	}
	if r == nil {
		return dst, invalid("nil random source")
	}
	if n < 0 {
		return dst, invalid("%d individual utilities", n)
	}
	// The blocks' values and sizes, with the individuals' count.
	bu := mech.Utilities{Blocks: blocks}
	if err := bu.ValidateBlocks(); err != nil {
		return dst, err
	}
	total := n
	for _, b := range blocks {
		total += b.Size
	}
	if total > maxCands {
		return dst, invalid("more than %d candidates", maxCands)
	}
	w := pool.Get().(*workspace)
	defer pool.Put(w)
	mx, fits, err := s.lazyBounds(w, lo, hi, blocks)
	if err != nil {
		return dst, err
	}
	return s.topKLazy(w, vals, mx, fits, blocks, k, total, r, dst, anon)
}

// topKLazy is TopKLazy once the bounds are on the grid (lazyBounds): no
// float from here on.
func (s *Sampler) topKLazy(w *workspace, vals Lazy, mx int64, fits bool, blocks []mech.Block, k, total int, r io.Reader, dst []int, anon bool) ([]int, error) {
	n := vals.Len()
	if s.zero || n == 0 || !fits {
		dst, err := s.topKMaterialised(vals, blocks, k, r, dst)
		if anon && err == nil {
			anonymise(dst, n, blocks)
		}
		return dst, err
	}
	w.src.reset(r)
	defer w.src.reset(nil)
	k = min(k, total)
	w.lazy = false
	w.picks = w.picks[:0]
	w.brem = w.brem[:0]
	w.bbase = w.bbase[:0]
	base := n
	for _, b := range blocks {
		w.brem = append(w.brem, b.Size)
		w.bbase = append(w.bbase, base)
		base += b.Size
	}
	w.jc = min((62-bits.Len(uint(total)))/int(s.s), maxBuckets-1)
	w.mx = mx
	w.icnt = [maxBuckets + 1]int{}
	w.cnt = [maxBuckets + 1]uint64{}
	w.icnt[0], w.cnt[0] = n, uint64(n)
	w.off[0] = 0
	for j := 1; j <= w.jc; j++ {
		w.off[j] = n
	}
	w.lazy, w.anon = true, anon
	w.lz = w.lz[:0]
	s.buildBlocks(w, mx)
	return s.draw(w, vals, blocks, k, dst)
}

// maxCands is the most candidates a list may have (mech's limit).
const maxCands = 1<<31 - 1

// lazyBounds checks TopKLazy's bounds, puts the blocks' values on the grid
// (w.bgv) and returns the reference maximum (hi's grid value or a larger
// block's) and whether every individual then lies
// in bucket 0 (the reference maximum less than L above lo's grid value).
func (s *Sampler) lazyBounds(w *workspace, lo, hi float64, blocks []mech.Block) (mx int64, fits bool, err error) {
	if math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) || lo > hi {
		return 0, false, invalid("utility bounds [%v, %v], need finite lo <= hi", lo, hi)
	}
	w.bgv = w.bgv[:0]
	if s.zero {
		return 0, false, nil
	}
	gLo, okLo := toGrid(lo, s.e)
	mx, okHi := toGrid(hi, s.e)
	for i, b := range blocks {
		g, ok := toGrid(b.Val, s.e)
		if !ok {
			return 0, false, invalid("block %d value %v is beyond 2^61 grid steps of %v", i, b.Val, s.GridStep())
		}
		if b.Size > 0 {
			mx = max(mx, g)
		}
		w.bgv = append(w.bgv, g)
	}
	return mx, okLo && okHi && mx-gLo < s.l, nil
}

// lazyGrid is the grid value of the proposed individual i, checked against
// the reference maximum mx (TopKLazy's hi): a value the caller's bound does
// not hold is an error.
func (s *Sampler) lazyGrid(vals Lazy, i int, mx int64) (int64, error) {
	v := vals.At(i)
	g, ok := toGrid(v, s.e)
	if !ok {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, invalid("utility %d is %v", i, v)
		}
		return 0, invalid("utility %d = %v is beyond 2^61 grid steps of %v", i, v, s.GridStep())
	}
	if g > mx {
		return 0, invalid("utility %d = %v is above the bound given to TopKLazy", i, v)
	}
	return g, nil
}

// anonymise reports the block picks of dst (indexes >= n, the individuals'
// count) as TopKLazyAnon does: the t-th pick from a block as its first
// index plus t.
func anonymise(dst []int, n int, blocks []mech.Block) {
	var seen []int // picks so far per block
	for i, p := range dst {
		if p < n {
			continue
		}
		if seen == nil {
			seen = make([]int, len(blocks))
		}
		base := n
		for b, bl := range blocks {
			if p < base+bl.Size {
				dst[i] = base + seen[b]
				seen[b]++
				break
			}
			base += bl.Size
		}
	}
}

// matPool holds topKMaterialised's value buffers.
var matPool = sync.Pool{New: func() any { return new([]float64) }}

// topKMaterialised computes every individual value and runs TopK.
func (s *Sampler) topKMaterialised(vals Lazy, blocks []mech.Block, k int, r io.Reader, dst []int) ([]int, error) {
	buf := matPool.Get().(*[]float64)
	defer matPool.Put(buf)
	v := (*buf)[:0]
	for i := range vals.Len() {
		v = append(v, vals.At(i))
	}
	*buf = v
	return s.TopK(&mech.Utilities{Vals: v, Blocks: blocks}, k, r, dst)
}
