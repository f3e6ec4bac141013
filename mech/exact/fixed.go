package exact

import "math/bits"

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

// one is 1.0 in the Q127 fixed-point format used for probability bounds: a
// value v in [0, 2) is stored as the integer v * 2^127.
var one = u128{hi: 1 << 63}

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

// addSat is a + b, saturating at 2^128 - 1.
func (a u128) addSat(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c2 := bits.Add64(a.hi, b.hi, c)
	if c2 != 0 {
		return u128{^uint64(0), ^uint64(0)}
	}
	return u128{hi, lo}
}

// shlSat is a << s, saturating at 2^128 - 1.
func (a u128) shlSat(s uint) u128 {
	if a.isZero() {
		return a
	}
	if s >= 128 || uint(bits.LeadingZeros64(a.hi)) < s || (a.hi == 0 && s > 64 && uint(bits.LeadingZeros64(a.lo)) < s-64) {
		return u128{^uint64(0), ^uint64(0)}
	}
	switch {
	case s == 0:
		return a
	case s < 64:
		return u128{a.hi<<s | a.lo>>(64-s), a.lo << s}
	default:
		return u128{a.lo << (s - 64), 0}
	}
}

// shr is a >> s.
func (a u128) shr(s uint) u128 {
	switch {
	case s == 0:
		return a
	case s >= 128:
		return u128{}
	case s < 64:
		return u128{a.hi >> s, a.lo>>s | a.hi<<(64-s)}
	default:
		return u128{0, a.hi >> (s - 64)}
	}
}

// mulQ returns floor(a * b / 2^127) for Q127 values a, b <= 1 (so the
// result is <= 1 too).
func mulQ(a, b u128) u128 {
	// 256-bit product p3:p2:p1:p0.
	h00, l00 := bits.Mul64(a.lo, b.lo)
	h01, l01 := bits.Mul64(a.lo, b.hi)
	h10, l10 := bits.Mul64(a.hi, b.lo)
	h11, l11 := bits.Mul64(a.hi, b.hi)
	p0 := l00
	p1, c := bits.Add64(h00, l01, 0)
	p2, c2 := bits.Add64(h01, l11, c)
	p3 := h11 + c2
	p1, c = bits.Add64(p1, l10, 0)
	p2, c2 = bits.Add64(p2, h10, c)
	p3 += c2
	_ = p0
	// Shift right by 127: result = p3:p2:p1 >> 63 (p0 holds only dropped bits).
	return u128{hi: p3<<1 | p2>>63, lo: p2<<1 | p1>>63}
}

// bound encloses a probability p in Q127: lo <= p * 2^127 <= lo + err.
type bound struct {
	lo  u128
	err uint64
}

// mul multiplies two enclosures of values in [0, 1]. With a = la + da and
// b = lb + db (0 <= da <= ea, 0 <= db <= eb, in units of 2^-127):
// a*b*2^127 <= mulQ(la, lb) + 1 + ea + eb + 1, since la, lb <= 2^127 and
// ea*eb < 2^127.
func (a bound) mul(b bound) bound {
	return bound{mulQ(a.lo, b.lo), a.err + b.err + 2}
}

// powBound encloses b^d for the base b (bq exact in Q127) by binary
// exponentiation; the error grows by at most 2 per multiplication and
// doubles per squaring, so err <= 4d + O(log d) (far below 2^64 for the
// exponents used here).
func powBound(bq u128, d int64) bound {
	res := bound{lo: one}
	base := bound{lo: bq}
	for d > 0 {
		if d&1 == 1 {
			res = res.mul(base)
		}
		d >>= 1
		if d > 0 {
			base = base.mul(base)
		}
	}
	return res
}
