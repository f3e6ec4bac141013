// Package accountant computes what a sequence of released top-K lists
// costs under three accountings, and inverts them.
//
// Setting: one list is K picks of an exponential mechanism, each pick
// eps_p-DP (for the exact sampler, eps_p = exact.Sampler.EpsPerPick()); a
// user receives N lists. All formulas:
//
//   - Pure DP, basic composition (Dwork and Roth 2014, Theorem 3.16):
//     N lists of K eps_p-DP picks are (N*K*eps_p, 0)-DP. PureEps.
//
//   - zCDP (Bun and Steinke 2016): a pick of the exponential mechanism is
//     eps_p-bounded-range (Durfee and Rogers 2019), and an eps-bounded-range
//     mechanism is eps^2/8-zCDP (Cesar and Rogers 2021, Lemma 3.2; Dong,
//     Durfee and Rogers 2020). zCDP composes additively (Bun and Steinke
//     2016, Lemma 2.3), so N lists of K picks are rho = N*K*eps_p^2/8-zCDP.
//     (A generic eps-DP mechanism is only eps^2/2-zCDP, Bun and Steinke
//     Proposition 3.3; the bounded-range bound is 4 times smaller.) Rho.
//
//   - (eps, delta)-DP from rho-zCDP. The classic conversion (Bun and Steinke
//     2016, Proposition 1.3) is eps = rho + 2*sqrt(rho*ln(1/delta)). The
//     tighter one used here (Canonne, Kamath and Steinke 2020, Proposition
//     12 and Corollary 13; Asoodeh et al. 2021): for every alpha > 1, rho-zCDP
//     implies (eps_alpha, delta)-DP with
//
//     eps_alpha = alpha*rho + (ln(1/delta) + (alpha-1)*ln(1-1/alpha) - ln(alpha)) / (alpha-1);
//
//     with a = alpha - 1 > 0 this is
//
//     eps(a) = rho*(1+a) + ln(1/delta)/a + ln(a/(1+a)) - ln(1+a)/a,
//
//     and ZCDPToApprox returns its minimum over a (numerically; any a gives
//     a valid bound, so an imprecise minimiser can only be slightly loose,
//     never invalid). Without the last two terms, which are negative,
//     eps(a) is the classic bound minimised at a = sqrt(ln(1/delta)/rho),
//     so the result is never looser than the classic conversion.
//
//   - ApproxEps reports min(PureEps, ZCDPToApprox(Rho, delta)): a
//     (pure_eps, 0)-DP mechanism is also (pure_eps, delta)-DP.
package accountant

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalid is wrapped by every argument error.
var ErrInvalid = errors.New("accountant: invalid argument")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// Release describes N lists of K picks at eps_p per pick.
type Release struct {
	Lists int     // N >= 1
	K     int     // picks per list >= 1
	EpsP  float64 // per-pick eps >= 0
}

// Validate checks the release.
func (r Release) Validate() error {
	switch {
	case r.Lists < 1:
		return invalid("lists = %d, need >= 1", r.Lists)
	case r.K < 1:
		return invalid("k = %d, need >= 1", r.K)
	case !(r.EpsP >= 0) || math.IsInf(r.EpsP, 1):
		return invalid("eps_p = %v, need a finite number >= 0", r.EpsP)
	}
	return nil
}

func (r Release) picks() float64 { return float64(r.Lists) * float64(r.K) }

// PureEps is N*K*eps_p (basic composition of pure DP).
func (r Release) PureEps() float64 { return r.picks() * r.EpsP }

// Rho is N*K*eps_p^2/8: each pick is eps_p-bounded-range, hence
// eps_p^2/8-zCDP, and zCDP composes additively.
func (r Release) Rho() float64 { return r.picks() * BoundedRangeRho(r.EpsP) }

// ApproxEps is the eps of (eps, delta)-DP for the whole release:
// min(PureEps, ZCDPToApprox(Rho, delta)).
func (r Release) ApproxEps(delta float64) (float64, error) {
	if err := r.Validate(); err != nil {
		return 0, err
	}
	z, err := ZCDPToApprox(r.Rho(), delta)
	if err != nil {
		return 0, err
	}
	return min(r.PureEps(), z), nil
}

// BoundedRangeRho is eps^2/8: an eps-bounded-range mechanism (such as one
// pick of the exponential mechanism at eps) is eps^2/8-zCDP (Cesar and
// Rogers 2021, Lemma 3.2).
func BoundedRangeRho(eps float64) float64 { return eps * eps / 8 }

// PureRho is eps^2/2: any eps-DP mechanism is eps^2/2-zCDP (Bun and
// Steinke 2016, Proposition 3.3). For comparison; Release uses the
// bounded-range bound.
func PureRho(eps float64) float64 { return eps * eps / 2 }

func checkRhoDelta(rho, delta float64) error {
	if !(rho >= 0) || math.IsInf(rho, 1) {
		return invalid("rho = %v, need a finite number >= 0", rho)
	}
	if !(delta > 0 && delta < 1) {
		return invalid("delta = %v, need 0 < delta < 1", delta)
	}
	return nil
}

// ZCDPToApproxSimple is the classic conversion rho + 2*sqrt(rho*ln(1/delta))
// (Bun and Steinke 2016, Proposition 1.3).
func ZCDPToApproxSimple(rho, delta float64) (float64, error) {
	if err := checkRhoDelta(rho, delta); err != nil {
		return 0, err
	}
	return rho + 2*math.Sqrt(rho*math.Log(1/delta)), nil
}

// epsAt is eps(a) of the package documentation.
func epsAt(rho, lnInvDelta, a float64) float64 {
	return rho*(1+a) + lnInvDelta/a + math.Log(a) - math.Log1p(a) - math.Log1p(a)/a
}

// ZCDPToApprox is the tight conversion of rho-zCDP to (eps, delta)-DP: the
// minimum over alpha > 1 of Canonne-Kamath-Steinke's eps_alpha (package
// documentation), clipped at 0. It is never above ZCDPToApproxSimple.
// The minimum is located by a scan over ln(alpha - 1) in [-40, 40] and
// refined by golden-section search (relative precision ~1e-12).
func ZCDPToApprox(rho, delta float64) (float64, error) {
	if err := checkRhoDelta(rho, delta); err != nil {
		return 0, err
	}
	if rho == 0 {
		return 0, nil
	}
	L := math.Log(1 / delta)
	f := func(t float64) float64 { return epsAt(rho, L, math.Exp(t)) }
	// Start with the classic optimum (so the result never exceeds it).
	t0 := 0.5 * math.Log(L/rho)
	best, bt := f(t0), t0
	const lo, hi, steps = -40.0, 40.0, 800
	h := (hi - lo) / steps
	for i := 0; i <= steps; i++ {
		t := lo + float64(i)*h
		if v := f(t); v < best {
			best, bt = v, t
		}
	}
	a, b := bt-h, bt+h
	g := (math.Sqrt(5) - 1) / 2
	c, d := b-g*(b-a), a+g*(b-a)
	fc, fd := f(c), f(d)
	for range 200 {
		if b-a < 1e-13*(1+math.Abs(bt)) {
			break
		}
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - g*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + g*(b-a)
			fd = f(d)
		}
	}
	best = min(best, fc, fd)
	if s := rho + 2*math.Sqrt(rho*L); best > s {
		best = s
	}
	return max(0, best), nil
}

// MaxRho is the largest rho whose tight conversion ZCDPToApprox(rho, delta)
// is <= eps: the zCDP budget equivalent to an (eps, delta) cap. Found by
// bisection from the classic closed form (sqrt(ln(1/delta) + eps) -
// sqrt(ln(1/delta)))^2, which always satisfies the cap; the returned value
// is on the feasible side.
func MaxRho(eps, delta float64) (float64, error) {
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return 0, invalid("eps = %v, need a finite number >= 0", eps)
	}
	if err := checkRhoDelta(0, delta); err != nil {
		return 0, err
	}
	L := math.Log(1 / delta)
	lo := math.Pow(math.Sqrt(L+eps)-math.Sqrt(L), 2)
	ok := func(rho float64) bool {
		v, _ := ZCDPToApprox(rho, delta)
		return v <= eps
	}
	return bisectUp(lo, ok), nil
}

// bisectUp returns (up to relative 1e-12) the largest x >= lo with ok(x),
// for ok monotone (true then false) and ok(lo) true.
func bisectUp(lo float64, ok func(float64) bool) float64 {
	if lo == 0 {
		lo = 1e-300
		if !ok(lo) {
			return 0
		}
	}
	hi := lo * 2
	for ok(hi) {
		lo, hi = hi, hi*2
		if math.IsInf(hi, 1) {
			return lo
		}
	}
	for range 200 {
		if hi-lo <= 1e-12*lo {
			break
		}
		mid := lo + (hi-lo)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// MaxEpsPerPick is the largest eps_p per pick such that N lists of K picks
// are (target, delta)-DP under ApproxEps (the better of pure composition
// and the zCDP route). It is at least target/(N*K) (pure composition) and
// found by bisection (ApproxEps is increasing in eps_p); the result is on
// the feasible side.
func MaxEpsPerPick(target, delta float64, lists, k int) (float64, error) {
	if !(target > 0) || math.IsInf(target, 1) {
		return 0, invalid("target eps = %v, need a finite number > 0", target)
	}
	r := Release{Lists: lists, K: k}
	if err := r.Validate(); err != nil {
		return 0, err
	}
	if err := checkRhoDelta(0, delta); err != nil {
		return 0, err
	}
	ok := func(e float64) bool {
		rr := r
		rr.EpsP = e
		v, err := rr.ApproxEps(delta)
		return err == nil && v <= target
	}
	return bisectUp(target/r.picks(), ok), nil
}

// Summary is the three accountings of one release.
type Summary struct {
	PureEps   float64 `json:"pure_eps"`
	Rho       float64 `json:"zcdp_rho"`
	ApproxEps float64 `json:"approx_eps"`
}

// Account returns the Summary of r at delta.
func Account(r Release, delta float64) (Summary, error) {
	a, err := r.ApproxEps(delta)
	if err != nil {
		return Summary{}, err
	}
	return Summary{PureEps: r.PureEps(), Rho: r.Rho(), ApproxEps: a}, nil
}
