package exact

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sync"
)

// ErrInvalid is wrapped by every argument error of this package.
var ErrInvalid = errors.New("exact: invalid argument")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// DefaultGridBits is the default grid resolution: the grid step is at most
// Delta/2^6, so rounding adds at most 1/64 (1.6%) to the sensitivity.
const DefaultGridBits = 6

// Options tunes a Sampler; the zero value (or nil) means the defaults.
type Options struct {
	// GridBits k sets the grid step g = 2^(floor(log2 Delta) - k), a power
	// of two with Delta/2^(k+1) < g <= Delta/2^k. Range 0..30; 0 means
	// DefaultGridBits (use a negative value to ask for k = 0).
	GridBits int
}

// Sampler is the base-2 exponential mechanism for one (eps_p, Delta): it
// picks candidate i with probability proportional to b^(-n_i), where n_i
// is the candidate's utility on the grid and b = X/2^64 a dyadic rational
// (Ilvento 2020: base 2^-eta with eta = -log2(X/2^64)). A Sampler is
// immutable and safe for concurrent use; creating one is cheap (no tables).
type Sampler struct {
	eps, delta float64
	zero       bool   // Delta == 0: exact top-K with uniform ties, 0-DP
	gridBits   int    // k
	e          int    // grid step g = 2^e
	dg         int64  // grid sensitivity ceil(Delta / g)
	x          uint64 // base b = x / 2^64
	bq         u128   // b in Q127 (exact)
	l          int64  // bucket width in grid units: b^l <= 2^-s
	linv       uint64 // floor((2^64-1)/l) for l >= 2 (quo), 0 for l = 1
	s          uint   // bits per bucket
	epsPick    float64
	epsRat     *big.Rat // rigorous upper bound of 2*dg*ln(1/b), exact rational
}

// New returns the sampler for per-pick budget eps (> 0, finite) and
// utility sensitivity delta (>= 0, finite): every utility vector u' with
// |u'_i - u_i| <= delta for all i is a neighbour.
//
// Grid: g = 2^e with e = floor(log2 delta) - k (k = GridBits), so
// R = delta/g lies in [2^k, 2^(k+1)), and each utility q becomes the
// integer n = floor(q/g), computed exactly from the bits of q. Rounding:
// |q - q'| <= delta implies |n - n'| <= Dg := ceil(R) <= R + 1, i.e. in
// utility units the sensitivity becomes Dg*g <= delta + g <= delta*(1 +
// 2^-k). This is charged, not ignored: the base is chosen for Dg.
//
// Base: b = X/2^64 with X the smallest 64-bit numerator found such that
// the proven bound EpsPerPick = 2*Dg*ln(1/b) (computed as an exact rational
// upper bound, see EpsPerPick) is <= eps. Each pick is then
// EpsPerPick-DP for arbitrary (non-monotone) utilities.
//
// delta == 0 gives the exact top-K with uniformly random tie-breaking
// (utilities invariant, 0-DP), compared as exact float64 values.
func New(eps, delta float64, opts *Options) (*Sampler, error) {
	if !(eps > 0) || math.IsInf(eps, 1) {
		return nil, invalid("eps = %v, need a finite number > 0", eps)
	}
	if !(delta >= 0) || math.IsInf(delta, 1) {
		return nil, invalid("delta = %v, need a finite number >= 0", delta)
	}
	k := DefaultGridBits
	if opts != nil && opts.GridBits != 0 {
		k = max(opts.GridBits, 0)
	}
	if k > 30 {
		return nil, invalid("grid bits %d, need 0..30", k)
	}
	s := &Sampler{eps: eps, delta: delta, gridBits: k}
	if delta == 0 {
		s.zero = true
		s.epsRat = new(big.Rat)
		return s, nil
	}
	if delta < 0x1p-900 || delta > 0x1p900 {
		return nil, invalid("delta = %v outside [2^-900, 2^900]", delta)
	}
	_, ex := math.Frexp(delta) // delta = f * 2^ex, f in [1/2, 1)
	s.e = ex - 1 - k
	r := math.Ldexp(delta, -s.e) // exact: a power-of-two scaling of a normal number
	s.dg = int64(math.Ceil(r))

	bp, err := chooseBase(eps, s.dg)
	if err != nil {
		return nil, err
	}
	s.x, s.epsRat, s.epsPick, s.l, s.s = bp.x, bp.epsRat, bp.epsPick, bp.l, bp.s
	s.bq = u128{hi: s.x >> 1, lo: s.x << 63}
	if s.l >= 2 {
		s.linv = ^uint64(0) / uint64(s.l)
	}
	return s, nil
}

// baseParams are the parameters that depend only on (eps, Dg).
type baseParams struct {
	x       uint64
	epsRat  *big.Rat
	epsPick float64
	l       int64
	s       uint
}

type baseKey struct {
	eps float64
	dg  int64
}

// baseCache memoises chooseBase: Dg takes at most 2^k + 1 values per grid
// resolution, so a deployment creating one Sampler per query pays the
// rational search once per (eps, Dg).
var baseCache sync.Map // baseKey -> *baseParams

// chooseBase finds the smallest numerator X (the base b = X/2^64 closest to
// 1 from below that is found by the search, hence the largest per-pick eps)
// whose exact rational bound epsUpper(X, dg) is <= eps, starting from the
// float estimate exp(-eps/(2 dg)) and refining by exponential search and
// bisection on the exact test; then the bucket parameters.
func chooseBase(eps float64, dg int64) (*baseParams, error) {
	key := baseKey{eps, dg}
	if v, ok := baseCache.Load(key); ok {
		return v.(*baseParams), nil
	}
	epsR := new(big.Rat).SetFloat64(eps)
	okAt := func(x uint64) bool { return epsUpper(x, dg).Cmp(epsR) <= 0 }
	t := eps / (2 * float64(dg))
	var x uint64
	switch {
	case t > 44:
		x = 1
	case t > math.Ln2:
		x = uint64(math.Ceil(math.Ldexp(math.Exp(-t), 64)))
	default:
		z := -math.Expm1(-t) // 1 - exp(-t), in (0, 1/2]
		zi := uint64(math.Ldexp(z, 64))
		if zi < 1<<14 {
			return nil, invalid("eps = %v is too small for a 64-bit base at grid sensitivity %d (need eps/(2*Dg) >= 2^-50)", eps, dg)
		}
		x = -zi // 2^64 - zi
	}
	if !okAt(x) {
		// Exponential search for a passing hi > x, then bisection.
		lo, step := x, max(uint64(1), (-x)>>40)
		hi := x
		for {
			if hi+step < hi {
				return nil, invalid("no 64-bit base meets eps = %v", eps)
			}
			hi += step
			if okAt(hi) {
				break
			}
			lo = hi
			step *= 2
		}
		for hi-lo > 1 && hi-lo > (-hi)>>40 {
			mid := lo + (hi-lo)/2
			if okAt(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		x = hi
	}
	p := &baseParams{x: x, epsRat: epsUpper(x, dg)}
	p.epsPick, _ = new(big.Float).SetPrec(53).SetMode(big.ToPositiveInf).SetRat(p.epsRat).Float64()
	bq := u128{hi: x >> 1, lo: x << 63}
	// Buckets: integers l, s with b^l <= 2^-s, as tight as easily found.
	if x >= 1<<63 { // b >= 1/2
		p.s = 1
		z := float64(-x) / 0x1p64
		l := max(int64(1), int64(math.Ceil(math.Ln2/-math.Log1p(-z))))
		for {
			pb := powBound(bq, l)
			if pb.lo.addSat(u128{0, pb.err}).lessEq(u128{hi: 1 << 62}) {
				break
			}
			l += max(1, l/1000)
			if l > 1<<40 {
				return nil, invalid("eps = %v is too small (bucket width beyond 2^40 grid units)", eps)
			}
		}
		p.l = l
	} else {
		p.l = 1
		p.s = uint(bits.LeadingZeros64(x)) // x < 2^(64-s), so b < 2^-s
	}
	v, _ := baseCache.LoadOrStore(key, p)
	return v.(*baseParams), nil
}

func (a u128) lessEq(b u128) bool { return !b.less(a) }

// ln2Up is an upper bound of ln 2 (0.69314718055994530941723212145817656807...).
var ln2Up = func() *big.Rat {
	r, _ := new(big.Rat).SetString("693147180559945309417232121458176569/1000000000000000000000000000000000000")
	return r
}()

// epsUpper is an exact rational upper bound of 2*dg*ln(2^64/x):
// with x = c*2^(64-s0), c in [1/2, 1), ln(1/b) = s0*ln 2 + ln(1/c), and for
// z = 1 - c in [0, 1/2]: ln(1/(1-z)) = sum_k z^k/k <= sum_{k<n} z^k/k +
// z^n/(n(1-z)), with n the first index (>= 4) whose tail bound is below
// 2^-64 of the sum so far (n <= ~70).
func epsUpper(x uint64, dg int64) *big.Rat {
	s0 := bits.LeadingZeros64(x)
	c := new(big.Rat).SetFrac(new(big.Int).SetUint64(x<<s0), new(big.Int).Lsh(big.NewInt(1), 64))
	z := new(big.Rat).Sub(big.NewRat(1, 1), c)
	sum := new(big.Rat)
	zk := new(big.Rat).Set(z)
	tiny := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 64))
	for k := int64(1); ; k++ {
		tail := new(big.Rat).Quo(zk, new(big.Rat).Mul(big.NewRat(k, 1), c))
		if k >= 4 && tail.Cmp(new(big.Rat).Mul(sum, tiny)) <= 0 || zk.Sign() == 0 {
			sum.Add(sum, tail)
			break
		}
		sum.Add(sum, new(big.Rat).Quo(zk, big.NewRat(k, 1)))
		zk.Mul(zk, z)
	}
	sum.Add(sum, new(big.Rat).Mul(ln2Up, big.NewRat(int64(s0), 1)))
	return sum.Mul(sum, big.NewRat(2*dg, 1))
}

// EpsPerPick is the proven privacy cost of one pick: 2*Dg*ln(1/b), rounded
// up (an exact rational upper bound, then rounded up to float64). It is <=
// the eps passed to New and already includes the grid rounding (Dg, not
// Delta/g). One list of K picks is K*EpsPerPick-DP; each pick is also
// EpsPerPick-bounded-range. 0 when Delta == 0.
func (s *Sampler) EpsPerPick() float64 { return s.epsPick }

// EpsPerPickRat is EpsPerPick as the exact rational bound it rounds.
func (s *Sampler) EpsPerPickRat() *big.Rat { return new(big.Rat).Set(s.epsRat) }

// Base is b = X/2^64 (nil when Delta == 0).
func (s *Sampler) Base() *big.Rat {
	if s.zero {
		return nil
	}
	return new(big.Rat).SetFrac(new(big.Int).SetUint64(s.x), new(big.Int).Lsh(big.NewInt(1), 64))
}

// Eta is -log2(b), the base-2 privacy parameter of one grid unit (float,
// for display).
func (s *Sampler) Eta() float64 {
	if s.zero {
		return math.Inf(1)
	}
	return -math.Log2(float64(s.x) / 0x1p64)
}

// GridStep is the grid step g = 2^e in utility units (0 when Delta == 0).
func (s *Sampler) GridStep() float64 {
	if s.zero {
		return 0
	}
	return math.Ldexp(1, s.e)
}

// GridDelta is Dg = ceil(Delta/g), the sensitivity in grid units after
// rounding (0 when Delta == 0).
func (s *Sampler) GridDelta() int64 { return s.dg }

// Delta is the utility sensitivity the sampler was built for.
func (s *Sampler) Delta() float64 { return s.delta }

// String describes the parameters.
func (s *Sampler) String() string {
	if s.zero {
		return "exact top-K (Delta = 0, 0-DP)"
	}
	return fmt.Sprintf("base-2 exponential mechanism: grid 2^%d, Dg %d, b = %d/2^64 (eta %.6g), eps per pick %.6g", s.e, s.dg, s.x, s.Eta(), s.epsPick)
}
