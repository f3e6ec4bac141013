package list

import "math"

// The Gaussian release of the evidence vector (Combine.Gauss;
// docs/privacy-model.md §16.9): e~ = e + N(0, sd^2) for every candidate,
// sd = L2(u) / eps. By the Gaussian mechanism's Rényi divergence
// (Bun and Steinke 2016, Proposition 1.6) the vector is rho-zCDP with
// rho = L2^2 / (2 sd^2) = eps^2 / 2, the zCDP an eps-DP Laplace list is
// charged (accountant.PureRho): at equal zCDP cost the Gaussian's standard
// deviation is L2 / eps against sqrt(2) L1 / eps for Laplace, a gain of
// sqrt(2) L1 / L2, large under the party unit (L2 = sqrt(L1 x Linf)) and
// none under the pair unit for CN (L2 = L1: one coordinate moves). The
// list is not pure DP (Cost is +Inf for a Gaussian combination).

// gaussMode is the k in [0, kmax] maximising
// f(k) = k ln(lambda) - ln k! - (x - k)^2 ib2 / 2 (ib2 = 1 / sd^2): the
// smallest k whose ratio f(k+1) - f(k) = ln(lambda) - ln(k+1) +
// (x - k - 1/2) ib2 is <= 0 (the ratio is strictly decreasing, so f is
// concave and that k is its maximiser), by bisection on [0, hi] where
// hi >= max(lambda - 1, x - 1/2) makes the ratio <= 0.
func gaussMode(x, ll, lambda, ib2 float64, kmax int) int {
	h := func(k int) float64 { return ll - math.Log(float64(k)+1) + (x-float64(k)-0.5)*ib2 }
	top := math.Ceil(max(lambda, x+0.5))
	hi := kmax
	if top < float64(kmax) {
		hi = int(top)
	}
	if h(0) <= 0 {
		return 0
	}
	lo := 0 // h(lo) > 0
	if h(hi) > 0 {
		return hi // only when hi = kmax: the cap binds
	}
	for hi-lo > 1 { // h(lo) > 0 >= h(hi)
		mid := lo + (hi-lo)/2
		if h(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// meanGauss is E[e | x] for e ~ Poisson(lambda) truncated to [0, kmax] and
// x = e + N(0, sd^2), sd = p.b > 0. Consecutive terms of the posterior
// have the ratio r(k) = lambda / (k+1) g(k) with
// g(k) = e^((x - k - 1/2) / sd^2), and g(k+1) = g(k) e^(-1 / sd^2): from
// the mode, each term is one multiplication away from the last (one exp
// per call), until the terms fall below e^-40 of the mode's. The Gaussian
// location family has a monotone likelihood ratio, so the mean is
// non-decreasing in x (postScale.upper relies on it).
func (p *postScale) meanGauss(x, lambda float64, kmax int) float64 {
	ib2 := p.ib2
	ll := math.Log(lambda)
	mode := gaussMode(x, ll, lambda, ib2, kmax)
	if ib2 > 300 {
		// e^(1/sd^2) would overflow the recurrence: the log domain.
		f := func(k int) float64 {
			d := x - float64(k)
			return float64(k)*ll - logFact(k) - d*d*ib2/2
		}
		return logDomainMean(f, mode, kmax)
	}
	const cut = 4.248354255291589e-18 // e^-40
	g := math.Exp((x - float64(mode) - 0.5) * ib2)
	q := p.gq
	num, den := float64(mode), 1.0
	t, gk := 1.0, g
	for k := mode; k < kmax; k++ {
		t *= lambda / float64(k+1) * gk
		if !(t >= cut) {
			break
		}
		num += float64(k+1) * t
		den += t
		gk *= q
	}
	t, gk = 1, g
	for k := mode; k > 0; k-- {
		gk /= q                       // g(k-1)
		t /= lambda / float64(k) * gk // t(k-1) = t(k) / r(k-1)
		if !(t >= cut) {
			break
		}
		num += float64(k-1) * t
		den += t
	}
	return num / den
}

// logDomainMean is the mean of k under the weights e^f(k) on [0, kmax],
// f concave with its maximum at mode, summed outwards from the mode until
// the weights fall below e^-40 of the largest.
func logDomainMean(f func(int) float64, mode, kmax int) float64 {
	top := f(mode)
	num, den := float64(mode), 1.0
	for _, dir := range [2]int{1, -1} {
		for k := mode + dir; k >= 0 && k <= kmax; k += dir {
			w := f(k) - top
			if w < -40 {
				break
			}
			e := math.Exp(w)
			num += float64(k) * e
			den += e
		}
	}
	return num / den
}

// normUpper is the standard normal's upper quantile: the x with
// P(Z > x) = s, given s and f = 1 - s (both computed precisely by the
// caller, so that neither tail loses digits). The initial value comes from
// math.Erfcinv (or the tail asymptote where 2s underflows Erfcinv's
// precision) and is refined by Newton steps on ln Q(x) - ln s, which
// math.Erfc evaluates to full relative precision far into the tail.
func normUpper(s, f float64) float64 {
	switch {
	case !(s > 0):
		return math.Inf(1)
	case !(f > 0):
		return math.Inf(-1)
	case s > 0.5:
		return -normUpper(f, s)
	}
	// s in (0, 0.5]: x >= 0.
	var x float64
	if s > 1e-12 {
		x = math.Sqrt2 * math.Erfcinv(2*s)
	} else {
		l := -2 * math.Log(s)
		x = math.Sqrt(l - math.Log(l) - math.Log(2*math.Pi))
	}
	ls := math.Log(s)
	for range 4 {
		q := math.Erfc(x/math.Sqrt2) / 2
		if !(q > 0) {
			break
		}
		phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		step := (math.Log(q) - ls) * q / phi // d ln Q / dx = -phi / Q
		x += step
		if math.Abs(step) <= 1e-15*max(1, x) {
			break
		}
	}
	return x
}
