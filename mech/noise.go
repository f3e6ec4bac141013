package mech

import (
	"math"
	"math/rand/v2"
)

// Noise is a symmetric, continuous additive noise distribution usable by
// NoisyTopK and SelectProbs. It is implemented by Laplace and
// StaircaseParams only (the interface is sealed). Sample, PDF and CDF assume
// valid parameters (Validate() == nil); the mechanisms validate for you.
type Noise interface {
	// Sample draws one value.
	Sample(r *rand.Rand) float64
	// PDF is the density (0 for the degenerate zero noise).
	PDF(x float64) float64
	// CDF is P(X <= x).
	CDF(x float64) float64
	// Validate reports invalid parameters.
	Validate() error

	prep() prepared
}

// prepared is a validated noise with its constants precomputed, used in
// hot loops.
type prepared interface {
	isZero() bool
	sample(r *rand.Rand) float64
	// quantileExp returns x with F(x) = exp(-z), z > 0: the maximum of m
	// i.i.d. draws is quantileExp(Exp(1)/m). Accurate in both tails.
	quantileExp(z float64) float64
	logPDF(x float64) float64
	logCDF(x float64) float64
	// survival is 1 - CDF(x) without cancellation.
	survival(x float64) float64
}

// Laplace is the Laplace(0, Scale) distribution, density exp(-|x|/s)/(2s).
// Scale == 0 is the degenerate zero noise.
type Laplace struct{ Scale float64 }

// Validate requires a finite Scale >= 0.
func (l Laplace) Validate() error { return checkScale(l.Scale) }

func (l Laplace) prep() prepared { return newLaplacePrep(l.Scale) }

func newLaplacePrep(s float64) laplacePrep { return laplacePrep{s: s, lnorm: math.Log(2 * s)} }

// Sample draws sign * Exp(Scale).
func (l Laplace) Sample(r *rand.Rand) float64 { return l.prep().sample(r) }

// PDF is exp(-|x|/s)/(2s).
func (l Laplace) PDF(x float64) float64 {
	if l.Scale == 0 {
		return 0
	}
	return math.Exp(-math.Abs(x)/l.Scale) / (2 * l.Scale)
}

// CDF is exp(x/s)/2 for x < 0 and 1 - exp(-x/s)/2 otherwise.
func (l Laplace) CDF(x float64) float64 {
	if l.Scale == 0 {
		if x >= 0 {
			return 1
		}
		return 0
	}
	if x < 0 {
		return 0.5 * math.Exp(x/l.Scale)
	}
	return 1 - 0.5*math.Exp(-x/l.Scale)
}

type laplacePrep struct{ s, lnorm float64 }

func (l laplacePrep) isZero() bool { return l.s == 0 }

func (l laplacePrep) sample(r *rand.Rand) float64 {
	x := l.s * r.ExpFloat64()
	if r.Uint64()&1 == 0 {
		return -x
	}
	return x
}

func (l laplacePrep) survival(x float64) float64 { return Laplace{l.s}.CDF(-x) }

func (l laplacePrep) logPDF(x float64) float64 { return -math.Abs(x)/l.s - l.lnorm }

func (l laplacePrep) logCDF(x float64) float64 {
	if x < 0 {
		return x/l.s - math.Ln2
	}
	return math.Log1p(-0.5 * math.Exp(-x/l.s))
}

func (l laplacePrep) quantileExp(z float64) float64 {
	if z <= math.Ln2 { // F >= 1/2: upper half, 1-F = -expm1(-z) = exp(-x/s)/2
		return -l.s * math.Log(-2*math.Expm1(-z))
	}
	return l.s * (math.Ln2 - z) // x < 0: exp(x/s)/2 = exp(-z)
}

// StaircaseParams is the staircase distribution of Geng & Viswanath ("The
// optimal noise-adding mechanism in differential privacy"): with
// b = exp(-Eps), a symmetric density that is a(γ)·b^k on
// [kΔ, (k+γ)Δ) and a(γ)·b^(k+1) on [(k+γ)Δ, (k+1)Δ), k = 0, 1, ..., where
// a(γ) = (1-b) / (2Δ(γ + (1-γ)b)). Adding it to a query with sensitivity
// Delta is Eps-DP; γ = OptimalGamma(Eps) minimises the variance.
// Delta == 0 is the degenerate zero noise.
type StaircaseParams struct {
	Eps, Delta, Gamma float64
}

// Validate requires finite Eps > 0, finite Delta >= 0 and Gamma in [0, 1].
func (p StaircaseParams) Validate() error {
	if !(p.Eps > 0) || math.IsInf(p.Eps, 0) {
		return invalid("staircase eps %v, need finite > 0", p.Eps)
	}
	if !(p.Delta >= 0) || math.IsInf(p.Delta, 0) {
		return invalid("staircase delta %v, need finite >= 0", p.Delta)
	}
	if !(p.Gamma >= 0 && p.Gamma <= 1) {
		return invalid("staircase gamma %v, need [0, 1]", p.Gamma)
	}
	return nil
}

// OptimalGamma is Geng & Viswanath's variance-optimal γ*(eps), eps > 0, with
// the exact exponent 1/3:
//
//	γ* = -b/(1-b) + (b - 2b² + 2b⁴ - b⁵)^(1/3) / (2^(1/3) (1-b)²),  b = e^-eps,
//
// evaluated through the factorisation b - 2b² + 2b⁴ - b⁵ = b(1+b)(1-b)³,
// i.e. γ* = ((b(1+b)/2)^(1/3) - b) / (1-b), to avoid cancellation.
func OptimalGamma(eps float64) float64 {
	b := math.Exp(-eps)
	omb := -math.Expm1(-eps) // 1 - b
	return (math.Cbrt(b*(1+b)/2) - b) / omb
}

// ReferenceGamma reproduces the reference implementation's γ
// (reference-implementation.md §7): the same formula with exponent 0.33 in
// place of 1/3, capped at 0.999. It is not the optimum (0.735 vs 0.492 at
// eps = 0.1); use it only to reproduce published numbers.
func ReferenceGamma(eps float64) float64 {
	b := math.Exp(-eps)
	g := -b/(1-b) + math.Pow(b-2*b*b+2*math.Pow(b, 4)-math.Pow(b, 5), 0.33)/
		(math.Pow(2, 0.33)*(1-b)*(1-b))
	return math.Min(g, 0.999)
}

func (p StaircaseParams) prep() prepared { return p.stair() }

func (p StaircaseParams) stair() stairPrep {
	b := math.Exp(-p.Eps)
	omb := -math.Expm1(-p.Eps)
	c := 1 / (p.Gamma + (1-p.Gamma)*b)
	sp := stairPrep{StaircaseParams: p, b: b, omb: omb, c: c, pB: (1 - p.Gamma) * b * c}
	if p.Delta > 0 {
		sp.la = math.Log(omb * c / (2 * p.Delta))
	}
	return sp
}

// Sample follows Geng & Viswanath Algorithm 1: S = ±1, G ~ Geometric with
// P(G = i) = (1-b)b^i (drawn as floor(Exp(1)/eps)), U ~ U[0,1],
// B ~ Bernoulli((1-γ)b/(γ+(1-γ)b)), and
// X = S·[(1-B)(G+γU) + B(G+γ+(1-γ)U)]·Δ.
func (p StaircaseParams) Sample(r *rand.Rand) float64 { return p.stair().sample(r) }

// PDF is the staircase density (0 for the degenerate zero noise).
func (p StaircaseParams) PDF(x float64) float64 {
	if p.Delta == 0 {
		return 0
	}
	return math.Exp(p.stair().logPDF(x))
}

// CDF is P(X <= x); piecewise linear.
func (p StaircaseParams) CDF(x float64) float64 {
	if p.Delta == 0 {
		if x >= 0 {
			return 1
		}
		return 0
	}
	sp := p.stair()
	if x < 0 {
		return math.Exp(sp.logSurv(-x))
	}
	return -math.Expm1(sp.logSurv(x))
}

// stairPrep holds the staircase constants: b = e^-eps, omb = 1-b,
// c = 1/(γ+(1-γ)b), la = ln a(γ) = ln((1-b)c/(2Δ)), pB = P(B = 1).
type stairPrep struct {
	StaircaseParams
	b, omb, c, la, pB float64
}

func (p stairPrep) isZero() bool { return p.Delta == 0 }

func (p stairPrep) sample(r *rand.Rand) float64 {
	if p.Delta == 0 {
		return 0
	}
	g := math.Floor(r.ExpFloat64() / p.Eps)
	u := r.Float64()
	var x float64
	if r.Float64() < p.pB {
		x = g + p.Gamma + (1-p.Gamma)*u
	} else {
		x = g + p.Gamma*u
	}
	x *= p.Delta
	if r.Uint64()&1 == 0 {
		return -x
	}
	return x
}

// step splits t >= 0 into the step index k = floor(t/Δ) and the fraction
// τ = t/Δ - k in [0, 1).
func (p stairPrep) step(t float64) (k, tau float64) {
	y := t / p.Delta
	k = math.Floor(y)
	return k, y - k
}

func (p stairPrep) logPDF(x float64) float64 {
	k, tau := p.step(math.Abs(x))
	la := p.la - k*p.Eps
	if tau >= p.Gamma {
		la -= p.Eps
	}
	return la
}

// logSurv is ln P(X > t) for t >= 0, from
// S((k+τ)Δ) = ½b^(k+1)[1 + (1-b)c(1-τ)]                        (τ >= γ)
// S((k+τ)Δ) = ½b^(k+1)[1 + (1-b)c(1-γ)] + ½(1-b)c b^k (γ-τ)     (τ < γ)
// (all terms positive, so no cancellation).
func (p stairPrep) logSurv(t float64) float64 {
	k, tau := p.step(t)
	var br float64
	if tau >= p.Gamma {
		br = p.b * (1 + p.omb*p.c*(1-tau))
	} else {
		br = p.b*(1+p.omb*p.c*(1-p.Gamma)) + p.omb*p.c*(p.Gamma-tau)
	}
	return math.Log(0.5*br) - k*p.Eps
}

func (p stairPrep) survival(x float64) float64 {
	if x >= 0 {
		return math.Exp(p.logSurv(x))
	}
	return -math.Expm1(p.logSurv(-x))
}

func (p stairPrep) logCDF(x float64) float64 {
	if x < 0 {
		return p.logSurv(-x)
	}
	return math.Log1p(-math.Exp(p.logSurv(x)))
}

// quantileExp inverts the CDF at exp(-z) through the tail v = min(F, 1-F).
func (p stairPrep) quantileExp(z float64) float64 {
	if z <= math.Ln2 {
		return p.upperQuantile(math.Log(-math.Expm1(-z)))
	}
	return -p.upperQuantile(-z)
}

// upperQuantile returns t >= 0 with ln S(t) = lv (lv <= ln ½).
func (p stairPrep) upperQuantile(lv float64) float64 {
	b, omb, c := p.b, p.omb, p.c
	l2v := lv + math.Ln2 // ln(2v) <= 0; S(kΔ) = ½b^k
	k := math.Max(0, math.Floor(-l2v/p.Eps))
	rho := math.Exp(l2v + k*p.Eps) // S(t) / S(kΔ), in (b, 1]
	rho = math.Min(math.Max(rho, b), 1)
	rg := b * (1 + omb*c*(1-p.Gamma)) // ratio at τ = γ
	var tau float64
	if rho >= rg {
		tau = p.Gamma - (rho-rg)/(omb*c)
	} else {
		tau = 1 - (rho/b-1)/(omb*c)
	}
	tau = math.Min(math.Max(tau, 0), 1)
	return (k + tau) * p.Delta
}

// StaircasePDF is the density of the staircase distribution p.
func StaircasePDF(x float64, p StaircaseParams) float64 { return p.PDF(x) }

// StaircaseCDF is the distribution function of the staircase distribution p.
func StaircaseCDF(x float64, p StaircaseParams) float64 { return p.CDF(x) }
