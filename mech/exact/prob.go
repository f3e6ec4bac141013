package exact

import (
	"math"
	"math/big"

	"github.com/dplp/dplp/mech"
)

// probState is ListProb's view of a utility vector: grid values (order
// keys when Delta == 0) and which candidates a list has used so far.
type probState struct {
	s     *Sampler
	u     *mech.Utilities
	ind   []int64 // grid value / key per individual
	blk   []int64 // per block
	used  []bool  // individuals already picked
	bused []int   // members already picked per block
}

func (s *Sampler) newProbState(u *mech.Utilities) (*probState, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	ps := &probState{s: s, u: u, used: make([]bool, len(u.Vals)), bused: make([]int, len(u.Blocks))}
	conv := func(v float64) (int64, bool) {
		if s.zero {
			return orderKey(v), true
		}
		return toGrid(v, s.e)
	}
	for i, v := range u.Vals {
		g, ok := conv(v)
		if !ok {
			return nil, invalid("utility %d = %v is beyond 2^61 grid steps", i, v)
		}
		ps.ind = append(ps.ind, g)
	}
	for b, blk := range u.Blocks {
		g, ok := conv(blk.Val)
		if !ok {
			return nil, invalid("block %d value %v is beyond 2^61 grid steps", b, blk.Val)
		}
		ps.blk = append(ps.blk, g)
	}
	return ps, nil
}

// locate maps a pick index to (individual i, -1) or (-1, block b).
func (ps *probState) locate(p int) (int, int) {
	if p < len(ps.u.Vals) {
		return p, -1
	}
	p -= len(ps.u.Vals)
	for b, blk := range ps.u.Blocks {
		if p < blk.Size {
			return -1, b
		}
		p -= blk.Size
	}
	return -1, -1
}

// ListProb is the exact probability that TopK(u, len(list), ...) returns
// exactly the ordered list (pick indices as TopK returns them):
//
//	P = prod_j W(l_j) / sum over candidates c not in l_1..l_{j-1} of W(c)
//
// with integer weights W(c) = b^(d_c) * 2^(64*D) = X^(d_c) * 2^(64*(D -
// d_c)), where d_c = nmax - n_c is c's grid distance to the largest grid
// utility and D the largest distance, so every weight is an exact integer. With Delta == 0,
// P = prod_j [l_j has the largest remaining utility] / (number of
// remaining candidates with it). The list must hold distinct valid picks.
// Integer/rational arithmetic only; intended for tests and audits (the
// integers have about 64*D bits).
func (s *Sampler) ListProb(u *mech.Utilities, list []int) (*big.Rat, error) {
	num, den, err := s.ListProbFrac(u, list)
	if err != nil {
		return nil, err
	}
	return new(big.Rat).SetFrac(num, den), nil
}

// ListProbFrac is ListProb as an unreduced fraction num/den (den > 0),
// which spares the gcd when probabilities are only compared by cross
// multiplication (audits).
func (s *Sampler) ListProbFrac(u *mech.Utilities, list []int) (num, den *big.Int, err error) {
	ps, err := s.newProbState(u)
	if err != nil {
		return nil, nil, err
	}
	seen := make(map[int]bool, len(list))
	for _, p := range list {
		i, b := ps.locate(p)
		if i < 0 && b < 0 || seen[p] {
			return nil, nil, invalid("list entry %d out of range or repeated", p)
		}
		seen[p] = true
	}
	if s.zero {
		p := ps.probExact(list)
		return new(big.Int).Set(p.Num()), new(big.Int).Set(p.Denom()), nil
	}
	mx, mn := int64(-maxGrid), int64(maxGrid)
	for _, g := range ps.ind {
		mx, mn = max(mx, g), min(mn, g)
	}
	for b, g := range ps.blk {
		if u.Blocks[b].Size > 0 {
			mx, mn = max(mx, g), min(mn, g)
		}
	}
	D := mx - mn
	cache := map[int64]*big.Int{}
	xb := new(big.Int).SetUint64(s.x)
	weight := func(g int64) *big.Int {
		d := mx - g
		if w, ok := cache[d]; ok {
			return w
		}
		w := new(big.Int).Exp(xb, big.NewInt(d), nil)
		w.Lsh(w, uint(64*(D-d)))
		cache[d] = w
		return w
	}
	total := new(big.Int)
	for _, g := range ps.ind {
		total.Add(total, weight(g))
	}
	for b, g := range ps.blk {
		if n := u.Blocks[b].Size; n > 0 {
			total.Add(total, new(big.Int).Mul(weight(g), big.NewInt(int64(n))))
		}
	}
	num, den = big.NewInt(1), big.NewInt(1)
	for _, l := range list {
		i, b := ps.locate(l)
		var w *big.Int
		if i >= 0 {
			w = weight(ps.ind[i])
		} else {
			w = weight(ps.blk[b])
		}
		num.Mul(num, w)
		den.Mul(den, total)
		total = new(big.Int).Sub(total, w)
	}
	return num, den, nil
}

// probExact is ListProb for Delta == 0.
func (ps *probState) probExact(list []int) *big.Rat {
	p := big.NewRat(1, 1)
	for _, l := range list {
		first, mx, c := true, int64(0), int64(0)
		for i, g := range ps.ind {
			if ps.used[i] {
				continue
			}
			if first || g > mx {
				first, mx, c = false, g, 1
			} else if g == mx {
				c++
			}
		}
		for b, g := range ps.blk {
			r := ps.u.Blocks[b].Size - ps.bused[b]
			if r == 0 {
				continue
			}
			if first || g > mx {
				first, mx, c = false, g, int64(r)
			} else if g == mx {
				c += int64(r)
			}
		}
		i, b := ps.locate(l)
		var g int64
		if i >= 0 {
			g = ps.ind[i]
			ps.used[i] = true
		} else {
			g = ps.blk[b]
			ps.bused[b]++
		}
		if g != mx {
			return new(big.Rat)
		}
		p.Mul(p, big.NewRat(1, c))
	}
	return p
}

// ListLogProbs returns, for each ordered list of distinct indices into the
// materialised utilities vals, the natural log of its exact probability
// under TopK (-Inf when impossible). The probabilities are exact rationals
// (as in ListProb); only the final conversion of each numerator and
// denominator to a logarithm uses floating point (relative error ~1e-16
// per term), for reporting in audits. Denominators are shared between
// lists with the same removed set.
func (s *Sampler) ListLogProbs(vals []float64, lists [][]int) ([]float64, error) {
	u := &mech.Utilities{Vals: vals}
	out := make([]float64, len(lists))
	if s.zero {
		for li, l := range lists {
			p, err := s.ListProb(u, l)
			if err != nil {
				return nil, err
			}
			out[li] = logRat(p)
		}
		return out, nil
	}
	ps, err := s.newProbState(u)
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return out, nil
	}
	mx, mn := ps.ind[0], ps.ind[0]
	for _, g := range ps.ind {
		mx, mn = max(mx, g), min(mn, g)
	}
	D := mx - mn
	xb := new(big.Int).SetUint64(s.x)
	w := make([]*big.Int, len(vals))
	lw := make([]bigLog, len(vals))
	total := new(big.Int)
	for i, g := range ps.ind {
		d := mx - g
		w[i] = new(big.Int).Exp(xb, big.NewInt(d), nil)
		w[i].Lsh(w[i], uint(64*(D-d)))
		lw[i] = logOf(w[i])
		total.Add(total, w[i])
	}
	lnS := map[string]bigLog{}
	key := make([]byte, 0, 16)
	for li, l := range lists {
		lp := 0.0
		rem := new(big.Int).Set(total)
		key = key[:0]
		for _, c := range l {
			if c < 0 || c >= len(vals) {
				return nil, invalid("list index %d out of range", c)
			}
			ls, ok := lnS[string(key)]
			if !ok {
				ls = logOf(rem)
				lnS[string(key)] = ls
			}
			lp += lw[c].minus(ls)
			rem.Sub(rem, w[c])
			key = append(key, byte(c), byte(c>>8), byte(c>>16))
		}
		out[li] = lp
	}
	return out, nil
}

// bigLog is ln x = m + e*ln 2 for a positive integer x, kept apart so that
// differences of logarithms of huge integers lose no precision.
type bigLog struct {
	m float64
	e int
}

func logOf(x *big.Int) bigLog {
	n := x.BitLen()
	if n <= 64 {
		return bigLog{math.Log(float64(x.Uint64())), 0}
	}
	top := new(big.Int).Rsh(x, uint(n-64)).Uint64()
	return bigLog{math.Log(float64(top)), n - 64}
}

// minus is ln(x/y) (relative error ~1e-16 of its magnitude plus 2^-52).
func (a bigLog) minus(b bigLog) float64 { return a.m - b.m + float64(a.e-b.e)*math.Ln2 }

func logRat(p *big.Rat) float64 {
	if p.Sign() == 0 {
		return math.Inf(-1)
	}
	return logOf(p.Num()).minus(logOf(p.Denom()))
}
