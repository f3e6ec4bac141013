package transform

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Power is the power basis nu_beta(x) = sum_j exp(tau*beta_j) * x^(a_j) on
// x in [0, 1] (paper Eq. dplp-linear). As a Transform it is DPLP-Lin; no bias
// is needed because top-K selection and Delta_f are shift-invariant.
type Power struct {
	exps []float64
	tau  float64
	beta []float64
	w    []float64 // exp(tau*beta), refreshed by SetParams

	// When the exponents form an arithmetic progression a_0 + j*d (the
	// paper's basis), x^(a_j) is computed by the recurrence
	// x^(a_0) * (x^d)^j: two Pow calls per x instead of one per exponent.
	arith  bool
	a0, da float64

	pw []float64 // scratch: powers of the last x
}

// NewPower returns the basis with exponents exps (all positive and finite)
// and temperature tau > 0, initialised as the authors' code: beta_0 = 0 and
// beta_j = -100 for j >= 1 (reference-implementation §4.2).
func NewPower(exps []float64, tau float64) (*Power, error) {
	if len(exps) == 0 {
		return nil, errors.New("transform: empty exponent list")
	}
	for i, a := range exps {
		if !(a > 0) || math.IsInf(a, 0) {
			return nil, fmt.Errorf("transform: exponent %d is %v, want positive and finite", i, a)
		}
	}
	if !(tau > 0) || math.IsInf(tau, 0) {
		return nil, fmt.Errorf("transform: tau %v, want positive and finite", tau)
	}
	p := &Power{
		exps: slices.Clone(exps),
		tau:  tau,
		beta: make([]float64, len(exps)),
		w:    make([]float64, len(exps)),
		pw:   make([]float64, len(exps)),
	}
	for j := 1; j < len(exps); j++ {
		p.beta[j] = -100
	}
	p.refresh()
	n := len(exps)
	if n >= 2 {
		d := (exps[n-1] - exps[0]) / float64(n-1)
		ok := true
		for j, a := range exps {
			if math.Abs(exps[0]+float64(j)*d-a) > 1e-12*math.Max(1, math.Abs(a)) {
				ok = false
				break
			}
		}
		p.arith, p.a0, p.da = ok, exps[0], d
	}
	return p, nil
}

func (p *Power) refresh() {
	for j, b := range p.beta {
		p.w[j] = math.Exp(p.tau * b)
	}
}

// Kind implements Transform.
func (p *Power) Kind() Kind { return KindLin }

// NumParams implements Transform.
func (p *Power) NumParams() int { return len(p.beta) }

// Params implements Transform: the betas.
func (p *Power) Params() []float64 { return slices.Clone(p.beta) }

// SetParams implements Transform.
func (p *Power) SetParams(v []float64) error {
	if err := checkParams(v, len(p.beta)); err != nil {
		return err
	}
	copy(p.beta, v)
	p.refresh()
	return nil
}

// Exponents returns a copy of the basis exponents.
func (p *Power) Exponents() []float64 { return slices.Clone(p.exps) }

// Weights returns a copy of exp(tau*beta_j).
func (p *Power) Weights() []float64 { return slices.Clone(p.w) }

// powers fills dst with x^(a_j) for x in [0, 1].
func (p *Power) powers(x float64, dst []float64) {
	switch {
	case x == 0:
		clear(dst)
	case x == 1:
		for j := range dst {
			dst[j] = 1
		}
	case p.arith:
		// Four interleaved chains keep the multiplier pipeline busy.
		// exp(a ln x) is several times faster than math.Pow and as
		// accurate here (|a ln x| is modest for the x that matter).
		lx := math.Log(x)
		r := math.Exp(p.da * lx)
		r4 := (r * r) * (r * r)
		c0 := math.Exp(p.a0 * lx)
		c1 := c0 * r
		c2 := c1 * r
		c3 := c2 * r
		j := 0
		for ; j+3 < len(dst); j += 4 {
			dst[j], dst[j+1], dst[j+2], dst[j+3] = c0, c1, c2, c3
			c0 *= r4
			c1 *= r4
			c2 *= r4
			c3 *= r4
		}
		for k, c := range [3]float64{c0, c1, c2} {
			if j+k < len(dst) {
				dst[j+k] = c
			}
		}
	default:
		lx := math.Log(x)
		for j, a := range p.exps {
			dst[j] = math.Exp(a * lx)
		}
	}
}

// nu evaluates the basis at clamped x and leaves the powers in p.pw.
func (p *Power) nu(x float64) float64 {
	p.powers(x, p.pw)
	return dot(p.w, p.pw)
}

// dot is a 4-way unrolled inner product (len(b) >= len(a)).
func dot(a, b []float64) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	b = b[:len(a)]
	for ; j+3 < len(a); j += 4 {
		s0 += a[j] * b[j]
		s1 += a[j+1] * b[j+1]
		s2 += a[j+2] * b[j+2]
		s3 += a[j+3] * b[j+3]
	}
	for ; j < len(a); j++ {
		s0 += a[j] * b[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// addGrad adds c * d nu/d beta at the x of the last nu call to d.
func (p *Power) addGrad(c float64, d []float64) {
	c *= p.tau
	for j, v := range p.pw {
		d[j] += c * p.w[j] * v
	}
}

// nuDeriv returns d nu/dx at clamped x.
func (p *Power) nuDeriv(x float64) float64 {
	if x == 0 {
		var s float64
		for j, a := range p.exps {
			switch {
			case a < 1:
				return math.Inf(1)
			case a == 1:
				s += p.w[j]
			}
		}
		return s
	}
	p.powers(x, p.pw)
	var s float64
	for j, v := range p.pw {
		s += p.w[j] * p.exps[j] * v
	}
	return s / x
}

// Eval implements Transform.
func (p *Power) Eval(x float64) float64 { return p.nu(clamp01(x)) }

// Grad implements Transform.
func (p *Power) Grad(x, w float64, d []float64) float64 {
	v := p.nu(clamp01(x))
	p.addGrad(w, d)
	return v
}

// Deriv implements Transform.
func (p *Power) Deriv(x float64) float64 {
	if x < 0 || x > 1 {
		return 0
	}
	return p.nuDeriv(x)
}

// Clone implements Transform.
func (p *Power) Clone() Transform { return p.clone() }

func (p *Power) clone() *Power {
	c := *p
	c.exps = slices.Clone(p.exps)
	c.beta = slices.Clone(p.beta)
	c.w = slices.Clone(p.w)
	c.pw = make([]float64, len(p.pw))
	return &c
}
