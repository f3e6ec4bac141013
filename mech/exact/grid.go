package exact

import (
	"math"
	"math/bits"
)

// maxGrid bounds |n| so that differences of grid values fit in int64.
const maxGrid = 1 << 61

// toGrid returns floor(q / 2^e) exactly, from the bits of q (no floating
// point rounding is involved). ok is false when q is not finite or |q/2^e|
// >= 2^61. This is the single place where utilities leave float64, with
// gridAll's inline copy of its common case (a normal value whose grid
// value is below 2^52 in magnitude), which TestGridAllMatchesToGrid checks
// against it.
func toGrid(q float64, e int) (n int64, ok bool) {
	b := math.Float64bits(q)
	neg := b>>63 != 0
	ex := int(b>>52) & 0x7ff
	m := b & (1<<52 - 1)
	switch ex {
	case 0x7ff:
		return 0, false
	case 0:
		ex = 1 // subnormal: m * 2^-1074
	default:
		m |= 1 << 52
	}
	if m == 0 {
		return 0, true
	}
	sh := ex - 1075 - e // q = m * 2^(ex-1075), q/2^e = m * 2^sh
	var a uint64
	if sh >= 0 {
		if bits.Len64(m)+sh > 61 {
			return 0, false
		}
		a = m << uint(sh)
		if neg {
			return -int64(a), true
		}
		return int64(a), true
	}
	k := -sh
	if k >= 64 {
		if neg {
			return -1, true
		}
		return 0, true
	}
	if neg {
		return -int64((m + (1<<uint(k) - 1)) >> uint(k)), true // -ceil(m/2^k)
	}
	return int64(m >> uint(k)), true
}

// orderKey maps a float64 to an int64 with the same order (equal values,
// including -0 and +0, get equal keys). Used only when Delta == 0, where
// utilities are compared exactly.
func orderKey(q float64) int64 {
	b := math.Float64bits(q)
	if b>>63 == 0 {
		return int64(b)
	}
	return -int64(b &^ (1 << 63))
}
