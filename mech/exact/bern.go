package exact

import "math/big"

// bernPow returns true with probability exactly p = b^d * 2^t, which the
// caller guarantees is at most 1 (d == 0 implies t == 0).
//
// U uniform in [0, 1) is drawn lazily: its first 64 bits v decide against
// the Q127 enclosure of p almost always; when v falls inside the enclosure
// (probability below 2^-50) bernPowSlow continues with more bits of U and
// enclosures of p of doubling precision until the comparison is decided.
func (s *Sampler) bernPow(rs *src, d int64, t uint) bool {
	if d == 0 {
		return true
	}
	bd := powBound(s.bq, d)
	lo := bd.lo.shlSat(t)
	if !lo.less(one) {
		return true // p >= lo >= 1
	}
	hi := bd.lo.addSat(u128{0, bd.err}).shlSat(t)
	v := rs.u64()
	// lo <= p*2^127 <= hi, so floor(lo/2^63) <= floor(p*2^64) <= floor(hi/2^63).
	if v < lo.shr(63).lo {
		return true // U < (v+1)/2^64 <= p
	}
	if h := hi.shr(63); h.hi == 0 && v > h.lo {
		return false // U >= v/2^64 > p
	}
	return s.bernPowSlow(rs, v, d, t)
}

// bernPowSlow decides U < b^d * 2^t where U's first word is v: it encloses
// p in [lo, hi] with big.Float arithmetic rounded down and up at precision
// prec, and U in [ulo, ulo + 2^-64n) from n words; it stops when the
// intervals are disjoint, else doubles prec and draws more words.
func (s *Sampler) bernPowSlow(rs *src, v uint64, d int64, t uint) bool {
	words := []uint64{v}
	for prec := uint(256); ; prec *= 2 {
		lo, hi := powBig(s.x, d, prec)
		lo.SetMantExp(lo, int(t))
		hi.SetMantExp(hi, int(t))
		n := int(prec/64) + 1
		for len(words) < n {
			words = append(words, rs.u64())
		}
		if rs.err != nil {
			return false
		}
		ui := new(big.Int)
		for _, w := range words {
			ui.Lsh(ui, 64)
			ui.Or(ui, new(big.Int).SetUint64(w))
		}
		ulo := new(big.Float).SetInt(ui) // exact: precision = bit length
		ulo.SetMantExp(ulo, -64*len(words))
		uhi := new(big.Float).SetInt(ui.Add(ui, big.NewInt(1)))
		uhi.SetMantExp(uhi, -64*len(words))
		if uhi.Cmp(lo) <= 0 {
			return true
		}
		if ulo.Cmp(hi) >= 0 {
			return false
		}
	}
}

// powBig encloses (x/2^64)^d: lo rounded towards zero and hi away from
// zero at every step (all values positive), precision prec.
func powBig(x uint64, d int64, prec uint) (lo, hi *big.Float) {
	b := new(big.Float).SetUint64(x) // exact
	b.SetMantExp(b, -64)
	lo = new(big.Float).SetPrec(prec).SetMode(big.ToZero).SetInt64(1)
	hi = new(big.Float).SetPrec(prec).SetMode(big.AwayFromZero).SetInt64(1)
	blo := new(big.Float).SetPrec(prec).SetMode(big.ToZero).Set(b)
	bhi := new(big.Float).SetPrec(prec).SetMode(big.AwayFromZero).Set(b)
	for d > 0 {
		if d&1 == 1 {
			lo.Mul(lo, blo)
			hi.Mul(hi, bhi)
		}
		d >>= 1
		if d > 0 {
			blo.Mul(blo, blo)
			bhi.Mul(bhi, bhi)
		}
	}
	return lo, hi
}
