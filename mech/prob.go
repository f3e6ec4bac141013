package mech

import (
	"math"
	"slices"
	"sync"
)

// ExpListLogProb is the natural log of the probability that ExpTopK (k =
// len(list)) returns exactly the ordered list on the materialised utilities
// vals (paper Eq. exp-mech-iterative):
//
//	P = Π_j exp(q[l_j]/scale) / Σ_{i not in l_1..l_{j-1}} exp(q[i]/scale),
//
// computed with a stable log-sum-exp. With scale == 0 it is the probability
// under exact top-K with uniformly random tie-breaking: each pick must have
// the largest remaining utility and is one of the c remaining candidates
// with that utility with probability 1/c (otherwise the result is -Inf).
// The list must hold distinct indices of vals.
func ExpListLogProb(vals []float64, scale float64, list []int) (float64, error) {
	if err := checkVals(vals); err != nil {
		return math.NaN(), err
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
		mx, cnt := math.Inf(-1), 0
		for i, v := range vals {
			if used[i] {
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
				if !used[i] {
					s += math.Exp((v - mx) / scale)
				}
			}
			lp += (vals[l]-mx)/scale - math.Log(s)
		}
		used[l] = true
	}
	return lp, nil
}

// negligibleRel: a sub-piece whose integral is provably below this fraction
// of every candidate's accumulated (lower-bound) probability is skipped.
const negligibleRel = 1e-22

// maxPieces caps the quadrature work of SelectProbs.
const maxPieces = 20_000_000

// SelectProbs returns, for additive noise n and k = 1, the probability that
// candidate i has the largest noisy utility (what NoisyTopK, LaplaceTopK,
// LaplacePeel and StaircaseTopK return for k = 1):
//
//	P(i) = ∫ pdf(x - q_i) Π_{j≠i} CDF(x - q_j) dx.
//
// The integrand is evaluated in log space and integrated piecewise between
// breakpoints, where it is smooth; every tail is exact:
//   - Laplace: for x <= min q every factor is exponential (closed form); for
//     x >= max q the substitution y = exp(-(x - max q)/s) turns the integral
//     into ∫_0^1 of a polynomial of degree n-1, integrated exactly by
//     Gauss-Legendre; in between, pieces run between consecutive q_j and are
//     subdivided so that the exponential factors vary by at most e^8 per
//     sub-piece (20-point Gauss-Legendre each).
//   - Staircase: the density is constant and each CDF linear between the
//     breakpoints of the shifted staircases (q_j ± kΔ, q_j ± (k+γ)Δ), so the
//     integrand is a polynomial of degree n-1 there and Gauss-Legendre with
//     n/2+2 nodes is exact. Below min q, shifting x by -Δ scales the
//     integrand by b^n, so ∫_{-∞}^{min q} = ∫_{min q-Δ}^{min q} / (1-b^n).
//     Beyond X0 = max q + K0Δ (where every survival S_j <= min(0.1, 1/n)),
//     S_j(x+Δ) = b·S_j(x) and summing the geometric series over periods
//     gives ∫_{X0}^∞ = ∫_{X0}^{X0+Δ} pdf_i Σ_m (-1)^m e_m(S_{-i}) / (1-b^(m+1))
//     with e_m the elementary symmetric polynomials (rapidly decreasing, so
//     truncated at 1e-18).
//
// Sub-pieces are visited from right to left and skipped when an upper bound
// of their integral is below 1e-22 of every candidate's accumulated
// probability. Measured relative error is ~1e-14. Zero noise gives the
// exact argmax with uniform tie-breaking.
func SelectProbs(vals []float64, n Noise) ([]float64, error) {
	if err := checkVals(vals); err != nil {
		return nil, err
	}
	if n == nil {
		return nil, invalid("nil noise")
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	out := make([]float64, len(vals))
	pn := n.prep()
	switch {
	case len(vals) == 0:
		return out, nil
	case len(vals) == 1:
		out[0] = 1
		return out, nil
	case pn.isZero():
		mx := slices.Max(vals)
		c := 0
		for _, v := range vals {
			if v == mx {
				c++
			}
		}
		for i, v := range vals {
			if v == mx {
				out[i] = 1 / float64(c)
			}
		}
		return out, nil
	}
	ig := newIntegrator(vals, pn)
	switch nz := pn.(type) {
	case laplacePrep:
		ig.laplace(nz.s)
	case stairPrep:
		if err := ig.staircase(nz); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("unsupported noise %T", n)
	}
	for i := range out {
		out[i] = min(1, ig.acc[i]+ig.comp[i]) // rounding can exceed 1 by ~1e-15
	}
	return out, nil
}

// integrator accumulates ∫ pdf(x-q_i) Π_{j≠i} CDF(x-q_j) for every i at once.
type integrator struct {
	q          []float64
	n          prepared
	lf         []float64 // per-candidate scratch (log CDFs, survivals)
	piece      []float64
	acc, comp  []float64 // Neumaier sums
	qmin, qmax float64
}

func newIntegrator(q []float64, n prepared) *integrator {
	m := len(q)
	return &integrator{
		q: q, n: n,
		lf: make([]float64, m), piece: make([]float64, m),
		acc: make([]float64, m), comp: make([]float64, m),
		qmin: slices.Min(q), qmax: slices.Max(q),
	}
}

func (ig *integrator) add(i int, v float64) {
	t := ig.acc[i] + v
	if math.Abs(ig.acc[i]) >= math.Abs(v) {
		ig.comp[i] += (ig.acc[i] - t) + v
	} else {
		ig.comp[i] += (v - t) + ig.acc[i]
	}
	ig.acc[i] = t
}

// negligible reports whether scale·∫_a^b of every integrand is below
// negligibleRel times what that candidate has accumulated so far (a lower
// bound of its final probability). It uses that the product of CDFs is
// increasing in x and the density decreasing in |x|.
func (ig *integrator) negligible(a, b, scale float64) bool {
	tot := 0.0
	for j, qj := range ig.q {
		ig.lf[j] = ig.n.logCDF(b - qj)
		tot += ig.lf[j]
	}
	lw := math.Log((b - a) * scale)
	for i, qi := range ig.q {
		bound := lw + ig.n.logPDF(min(max(qi, a), b)-qi) + tot - ig.lf[i]
		if bound > -745 && (ig.acc[i] == 0 || bound > math.Log(ig.acc[i]*negligibleRel)) {
			return false
		}
	}
	return true
}

// quadAdd adds scale·∫_a^b of every integrand (Gauss-Legendre rule).
func (ig *integrator) quadAdd(a, b float64, rule *glRule, scale float64) {
	if ig.negligible(a, b, scale) {
		return
	}
	clear(ig.piece)
	h, mid := (b-a)/2, (a+b)/2
	for k, xk := range rule.x {
		x := mid + h*xk
		tot := 0.0
		for j, qj := range ig.q {
			ig.lf[j] = ig.n.logCDF(x - qj)
			tot += ig.lf[j]
		}
		for i, qi := range ig.q {
			ig.piece[i] += rule.w[k] * math.Exp(ig.n.logPDF(x-qi)+tot-ig.lf[i])
		}
	}
	for i, v := range ig.piece {
		ig.add(i, scale*h*v)
	}
}

func (ig *integrator) laplace(s float64) {
	m := len(ig.q)
	// Right tail x >= qmax: with c_j = S(qmax-q_j) <= ½ and
	// y = exp(-(x-qmax)/s), ∫ = S(qmax-q_i) ∫_0^1 Π_{j≠i} (1 - c_j y) dy.
	rule := gaussLegendre(m/2 + 2)
	clear(ig.piece)
	for k, xk := range rule.x {
		y := (1 + xk) / 2
		tot := 0.0
		for j, qj := range ig.q {
			ig.lf[j] = math.Log1p(-ig.n.survival(ig.qmax-qj) * y)
			tot += ig.lf[j]
		}
		for i := range ig.q {
			ig.piece[i] += rule.w[k] * math.Exp(tot-ig.lf[i])
		}
	}
	for i, qi := range ig.q {
		ig.add(i, ig.n.survival(ig.qmax-qi)*ig.piece[i]/2)
	}
	// Middle pieces between consecutive distinct q, right to left.
	bps := slices.Clone(ig.q)
	slices.Sort(bps)
	bps = slices.Compact(bps)
	rule = gaussLegendre(20)
	for p := len(bps) - 2; p >= 0; p-- {
		a, b := bps[p], bps[p+1]
		// Up to (#q_j > a) + 1 exponential factors change at rate 1/s.
		rate := 1
		for _, qj := range ig.q {
			if qj > a {
				rate++
			}
		}
		w := s * min(0.5, 8/float64(rate))
		nsub := int(math.Ceil((b - a) / w))
		for t := nsub - 1; t >= 0; t-- {
			lo := a + (b-a)*float64(t)/float64(nsub)
			hi := a + (b-a)*float64(t+1)/float64(nsub)
			ig.quadAdd(lo, hi, rule, 1)
		}
	}
	// Left tail x <= qmin: every factor is exponential, the integrand is
	// 2^-n/s * exp(Σ_j (x-q_j)/s) for every i, and its integral closed form.
	lt := 0.0
	for _, qj := range ig.q {
		lt += (ig.qmin - qj) / s
	}
	left := math.Exp(lt-float64(m)*math.Ln2) / float64(m)
	for i := range ig.q {
		ig.add(i, left)
	}
}

// stairBreaks appends the breakpoints in (lo, hi) of every staircase
// shifted to q_j: q_j ± kΔ and q_j ± (k+γ)Δ.
func stairBreaks(bps, q []float64, p stairPrep, lo, hi float64) []float64 {
	d := p.Delta
	for _, qj := range q {
		kmax := int(math.Ceil((hi - qj) / d))
		for k := max(0, int(math.Floor((lo-qj)/d))-1); k <= kmax; k++ {
			for _, off := range [2]float64{float64(k), float64(k) + p.Gamma} {
				if x := qj + off*d; x > lo && x < hi {
					bps = append(bps, x)
				}
			}
		}
		kmax = int(math.Ceil((qj - lo) / d))
		for k := max(0, int(math.Floor((qj-hi)/d))-1); k <= kmax; k++ {
			for _, off := range [2]float64{float64(k), float64(k) + p.Gamma} {
				if x := qj - off*d; x > lo && x < hi {
					bps = append(bps, x)
				}
			}
		}
	}
	return bps
}

func (ig *integrator) staircase(p stairPrep) error {
	m := len(ig.q)
	d := p.Delta
	tau0 := min(0.1, 1/float64(m))
	K0 := math.Ceil(math.Log(1/(2*tau0)) / p.Eps)
	A, X0 := ig.qmin-d, ig.qmax+K0*d
	if 2*((X0-A)/d+3)*float64(m) > maxPieces {
		return invalid("staircase SelectProbs needs more than %d pieces (utility range %g vs delta %g, eps %g)",
			maxPieces, ig.qmax-ig.qmin, d, p.Eps)
	}
	ig.stairTail(p, X0, tau0)
	bps := stairBreaks(append(make([]float64, 0, 2*m*int((X0-A)/d+3)), A, ig.qmin, X0), ig.q, p, A, X0)
	slices.Sort(bps)
	bps = slices.Compact(bps)
	rule := gaussLegendre(m/2 + 2)
	leftScale := 1 / -math.Expm1(-float64(m)*p.Eps)
	for i := len(bps) - 2; i >= 0; i-- {
		a, b := bps[i], bps[i+1]
		if b <= ig.qmin {
			ig.quadAdd(a, b, rule, leftScale)
		} else {
			ig.quadAdd(a, b, rule, 1)
		}
	}
	return nil
}

// stairTail adds ∫_{X0}^∞ (see SelectProbs): every S_j <= tau0 there.
func (ig *integrator) stairTail(p stairPrep, X0, tau0 float64) {
	m := len(ig.q)
	// Truncate the alternating series once C(m-1, M)·tau0^M < 1e-18.
	M, term := 0, 1.0
	for M < m-1 {
		next := term * float64(m-1-M) / float64(M+1) * tau0
		if next < 1e-18 {
			break
		}
		term = next
		M++
	}
	inv := make([]float64, M+1) // (-1)^m / (1 - b^(m+1))
	for k := range inv {
		inv[k] = 1 / -math.Expm1(-float64(k+1)*p.Eps)
		if k%2 == 1 {
			inv[k] = -inv[k]
		}
	}
	e := make([]float64, M+1)
	dfl := make([]float64, M+1)
	bps := stairBreaks([]float64{X0, X0 + p.Delta}, ig.q, p, X0, X0+p.Delta)
	slices.Sort(bps)
	bps = slices.Compact(bps)
	rule := gaussLegendre(M/2 + 2)
	for pi := 0; pi+1 < len(bps); pi++ {
		a, b := bps[pi], bps[pi+1]
		clear(ig.piece)
		h, mid := (b-a)/2, (a+b)/2
		for k, xk := range rule.x {
			x := mid + h*xk
			clear(e)
			e[0] = 1
			for j, qj := range ig.q {
				sj := ig.n.survival(x - qj)
				ig.lf[j] = sj
				for t := M; t >= 1; t-- {
					e[t] += sj * e[t-1]
				}
			}
			for i, qi := range ig.q {
				// Deflate: e_m without candidate i.
				si := ig.lf[i]
				dfl[0] = 1
				sum := inv[0]
				for t := 1; t <= M; t++ {
					dfl[t] = e[t] - si*dfl[t-1]
					sum += dfl[t] * inv[t]
				}
				ig.piece[i] += rule.w[k] * math.Exp(ig.n.logPDF(x-qi)) * sum
			}
		}
		for i, v := range ig.piece {
			ig.add(i, h*v)
		}
	}
}

// glRule is an n-point Gauss-Legendre rule on [-1, 1].
type glRule struct{ x, w []float64 }

var glCache sync.Map // int -> *glRule

// gaussLegendre returns the n-point rule (exact for polynomials of degree
// 2n-1), computed by Newton's method on the Legendre recurrence and cached.
func gaussLegendre(n int) *glRule {
	if r, ok := glCache.Load(n); ok {
		return r.(*glRule)
	}
	r := &glRule{x: make([]float64, n), w: make([]float64, n)}
	for i := range (n + 1) / 2 {
		z := math.Cos(math.Pi * (float64(i) + 0.75) / (float64(n) + 0.5))
		var pp float64
		for range 100 {
			p1, p2 := 1.0, 0.0
			for j := 1; j <= n; j++ {
				p3 := p2
				p2 = p1
				p1 = ((2*float64(j)-1)*z*p2 - (float64(j)-1)*p3) / float64(j)
			}
			pp = float64(n) * (z*p1 - p2) / (z*z - 1)
			z1 := z
			z = z1 - p1/pp
			if math.Abs(z-z1) <= 1e-16 {
				break
			}
		}
		// Recompute the derivative at the converged node for the weight.
		p1, p2 := 1.0, 0.0
		for j := 1; j <= n; j++ {
			p3 := p2
			p2 = p1
			p1 = ((2*float64(j)-1)*z*p2 - (float64(j)-1)*p3) / float64(j)
		}
		pp = float64(n) * (z*p1 - p2) / (z*z - 1)
		r.x[i], r.x[n-1-i] = -z, z
		r.w[i] = 2 / ((1 - z*z) * pp * pp)
		r.w[n-1-i] = r.w[i]
	}
	if n%2 == 1 {
		r.x[n/2] = 0
	}
	act, _ := glCache.LoadOrStore(n, r)
	return act.(*glRule)
}
