package mech

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Lexicographic exponential mechanism (DPLP-pub; docs/privacy-model.md §11).
//
// Every candidate has two keys: a public key p (the zero-sensitivity public
// score s_pub, identical in every neighbouring graph) and a utility q (the
// transform of the full score, sensitivity Delta). Candidates are ranked by
// p exactly; only among candidates of equal p does the exponential
// mechanism on q decide. The list is filled from the group of the largest p
// downwards: a group of m members receives t = min(remaining positions, m)
// consecutive positions, and its members for those positions are drawn as
// the Gumbel top-t of the group at the given scale (t rounds of the
// exponential mechanism without replacement restricted to the group).
//
// Which positions a group fills and the group sizes are functions of the
// public keys alone. A position whose group has a single remaining member
// is filled deterministically; every other position is one exponential
// mechanism round over the remaining members of its group. So, at scale
// 2*Delta/eps, a list costs eps times LexPicks (and 0 when Delta = 0),
// which never exceeds K*eps.
//
// The two-part order is exact: there is no combination of p and q into one
// float, so no public gap can be bridged by q or lost to rounding.

// LexTopK samples an ordered list of min(k, u.Len()) distinct candidates
// from the lexicographic mechanism. pub[i] is the public key of u.Vals[i]
// and blockPub[b] that of every member of u.Blocks[b] (nil: 0 for every
// block, the zero block's s_pub). Picks index the same virtual list as
// ExpTopK's. scale == 0 gives the exact lexicographic top-K with ties
// (equal p and equal q) broken uniformly at random. Blocks keep their
// closed-form sampler: within a group, ExpTopK handles the group's blocks
// in O(min(k, m)).
func LexTopK(u *Utilities, pub, blockPub []float64, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	if err := checkScale(scale); err != nil {
		return dst[:0], err
	}
	if err := checkLexKeys(u, pub, blockPub); err != nil {
		return dst[:0], err
	}
	w := getLexWS()
	defer putLexWS(w)
	w.order(u, pub, blockPub)
	dst = dst[:0]
	rem := min(k, u.Len())
	for g := 0; g < len(w.ents) && rem > 0; {
		e := g
		size := 0
		for e < len(w.ents) && w.ents[e].p == w.ents[g].p {
			size += w.ents[e].size
			e++
		}
		if size == 0 {
			g = e
			continue
		}
		t := min(rem, size)
		w.sub.Vals, w.sub.Blocks = w.sub.Vals[:0], w.sub.Blocks[:0]
		w.ind, w.blk = w.ind[:0], w.blk[:0]
		for _, en := range w.ents[g:e] {
			if en.blk < 0 {
				w.sub.Vals = append(w.sub.Vals, u.Vals[en.idx])
				w.ind = append(w.ind, en.idx)
			} else if en.size > 0 {
				w.sub.Blocks = append(w.sub.Blocks, u.Blocks[en.blk])
				w.blk = append(w.blk, en.blk)
			}
		}
		var err error
		if size == 1 {
			w.picks = append(w.picks[:0], 0) // the group's only member: no draw
		} else if w.picks, err = ExpTopK(&w.sub, t, scale, r, w.picks[:0]); err != nil {
			return dst[:0], err
		}
		for _, pk := range w.picks {
			dst = append(dst, w.mapBack(pk))
		}
		rem -= t
		g = e
	}
	return dst, nil
}

// LexPicks is the number of positions of a lexicographic list of length
// min(k, u.Len()) that are filled by a random pick: summed over the groups
// of equal public key in decreasing order, min(t, m-1) for a group of m
// members that receives t positions. It reads only the public keys and the
// block sizes (never the utilities), so it is the same in every
// neighbouring graph. The list costs eps times this at scale 2*Delta/eps.
func LexPicks(u *Utilities, pub, blockPub []float64, k int) (int, error) {
	if k < 1 {
		return 0, invalid("k = %d, need k >= 1", k)
	}
	if err := u.Validate(); err != nil {
		return 0, err
	}
	if err := checkLexKeys(u, pub, blockPub); err != nil {
		return 0, err
	}
	w := getLexWS()
	defer putLexWS(w)
	w.order(u, pub, blockPub)
	rem := min(k, u.Len())
	picks := 0
	for g := 0; g < len(w.ents) && rem > 0; {
		e, size := g, 0
		for e < len(w.ents) && w.ents[e].p == w.ents[g].p {
			size += w.ents[e].size
			e++
		}
		t := min(rem, size)
		picks += min(t, max(size-1, 0))
		rem -= t
		g = e
	}
	return picks, nil
}

// LexListLogProb is the natural log of the probability that LexTopK (k =
// len(list)) returns exactly the ordered list on materialised keys pub and
// utilities vals: position j must hold a remaining candidate of the largest
// remaining public key (otherwise the probability is 0, -Inf here), chosen
// with probability exp(q/scale) / sum over the remaining members of that
// group of exp(q/scale); at scale 0 it must have the group's largest
// remaining utility and is one of the c such candidates with probability
// 1/c.
func LexListLogProb(pub, vals []float64, scale float64, list []int) (float64, error) {
	if err := checkVals(vals); err != nil {
		return math.NaN(), err
	}
	if err := checkVals(pub); err != nil {
		return math.NaN(), err
	}
	if len(pub) != len(vals) {
		return math.NaN(), invalid("%d public keys for %d utilities", len(pub), len(vals))
	}
	if err := checkScale(scale); err != nil {
		return math.NaN(), err
	}
	used := make([]bool, len(vals))
	for _, l := range list {
		if l < 0 || l >= len(vals) {
			return math.NaN(), invalid("list index %d out of range [0, %d)", l, len(vals))
		}
		if used[l] {
			return math.NaN(), invalid("list index %d repeated", l)
		}
		used[l] = true
	}
	clear(used)
	lp := 0.0
	for _, l := range list {
		top := math.Inf(-1)
		for i, p := range pub {
			if !used[i] && p > top {
				top = p
			}
		}
		if pub[l] != top {
			return math.Inf(-1), nil
		}
		mx, cnt := math.Inf(-1), 0
		for i, v := range vals {
			if used[i] || pub[i] != top {
				continue
			}
			if v > mx {
				mx, cnt = v, 1
			} else if v == mx {
				cnt++
			}
		}
		if scale == 0 {
			if vals[l] != mx {
				return math.Inf(-1), nil
			}
			lp -= math.Log(float64(cnt))
		} else {
			s := 0.0
			for i, v := range vals {
				if !used[i] && pub[i] == top {
					s += math.Exp((v - mx) / scale)
				}
			}
			lp += (vals[l]-mx)/scale - math.Log(s)
		}
		used[l] = true
	}
	return lp, nil
}

func checkLexKeys(u *Utilities, pub, blockPub []float64) error {
	if len(pub) != len(u.Vals) {
		return invalid("%d public keys for %d utilities", len(pub), len(u.Vals))
	}
	if blockPub != nil && len(blockPub) != len(u.Blocks) {
		return invalid("%d block public keys for %d blocks", len(blockPub), len(u.Blocks))
	}
	if err := checkVals(pub); err != nil {
		return invalid("public key: %v", err)
	}
	if err := checkVals(blockPub); err != nil {
		return invalid("block public key: %v", err)
	}
	return nil
}

// lexEnt is an individual candidate (blk < 0) or a block, with its public
// key.
type lexEnt struct {
	p    float64
	idx  int // individual index
	blk  int // block index, -1 for an individual
	size int // 1 for an individual, the block size otherwise
}

type lexWS struct {
	ents     []lexEnt
	sub      Utilities
	ind, blk []int // sub's individuals and blocks -> u's
	boff     []int // pick index of u's block b's first member
	picks    []int
}

var lexPool = sync.Pool{New: func() any { return new(lexWS) }}

func getLexWS() *lexWS  { return lexPool.Get().(*lexWS) }
func putLexWS(w *lexWS) { lexPool.Put(w) }

// order lists u's individuals and blocks by decreasing public key (ties by
// position, individuals first: the order within a group does not matter
// for the distribution, only for reproducibility).
func (w *lexWS) order(u *Utilities, pub, blockPub []float64) {
	w.ents = w.ents[:0]
	for i := range u.Vals {
		w.ents = append(w.ents, lexEnt{p: pub[i], idx: i, blk: -1, size: 1})
	}
	w.boff = w.boff[:0]
	off := len(u.Vals)
	for b, blk := range u.Blocks {
		p := 0.0
		if blockPub != nil {
			p = blockPub[b]
		}
		w.ents = append(w.ents, lexEnt{p: p, idx: -1, blk: b, size: blk.Size})
		w.boff = append(w.boff, off)
		off += blk.Size
	}
	slices.SortFunc(w.ents, func(a, b lexEnt) int {
		if c := cmp.Compare(b.p, a.p); c != 0 {
			return c
		}
		if c := cmp.Compare(a.blk, b.blk); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
}

// mapBack turns a pick of the group's sub-utilities into a pick of u.
func (w *lexWS) mapBack(pk int) int {
	if pk < len(w.sub.Vals) {
		return w.ind[pk]
	}
	pk -= len(w.sub.Vals)
	for j, b := range w.sub.Blocks {
		if pk < b.Size {
			return w.boff[w.blk[j]] + pk
		}
		pk -= b.Size
	}
	return -1 // unreachable: ExpTopK returns valid picks
}
