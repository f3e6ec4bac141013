package transform

import (
	"math/rand/v2"
)

// DPLP is the paper's transform f(x) = F(nu_beta(x)): the UMNN integral
// taken up to the power-basis value (paper Eqs. dplp-linear and umnn).
// Parameters are [beta (one per exponent), phi (the UMNN's)]. Unlike the
// authors' code (reference §4.3) both parts train jointly.
//
// The network integrates up to nu(x)/c with the constant c = nu(1) at
// initialisation (about 63 for the paper's basis): the same family of
// functions (substitute t = c t' and drop the irrelevant output scale), but
// with the integrand's input in [0, 1] at the start, so that Adam's
// scale-free steps suit the network's weights as they do for DPLP-UMNN.
// c depends only on the exponents and tau, so NewDPLP with the same
// arguments followed by SetParams reproduces a transform exactly.
type DPLP struct {
	pow *Power
	net *UMNN
	inv float64 // 1/c
}

// NewDPLP builds the composition.
func NewDPLP(exps []float64, tau float64, hidden []int, quadNodes int, r *rand.Rand) (*DPLP, error) {
	pow, err := NewPower(exps, tau)
	if err != nil {
		return nil, err
	}
	net, err := NewUMNN(hidden, quadNodes, 1, r)
	if err != nil {
		return nil, err
	}
	return &DPLP{pow: pow, net: net, inv: 1 / pow.nu(1)}, nil
}

// Kind implements Transform.
func (t *DPLP) Kind() Kind { return KindDPLP }

// NumParams implements Transform.
func (t *DPLP) NumParams() int { return t.pow.NumParams() + t.net.NumParams() }

// Params implements Transform.
func (t *DPLP) Params() []float64 { return append(t.pow.Params(), t.net.params...) }

// SetParams implements Transform.
func (t *DPLP) SetParams(p []float64) error {
	if err := checkParams(p, t.NumParams()); err != nil {
		return err
	}
	na := t.pow.NumParams()
	copy(t.net.params, p[na:])
	return t.pow.SetParams(p[:na])
}

// Eval implements Transform.
func (t *DPLP) Eval(x float64) float64 {
	F, _ := t.net.integral(t.inv*t.pow.nu(clamp01(x)), 0, nil, false)
	return F
}

// Grad implements Transform.
func (t *DPLP) Grad(x, w float64, d []float64) float64 {
	na := t.pow.NumParams()
	y := t.inv * t.pow.nu(clamp01(x)) // leaves the powers in t.pow.pw
	F, Fy := t.net.integral(y, w, d[na:], true)
	t.pow.addGrad(w*Fy*t.inv, d[:na])
	return F
}

// Deriv implements Transform.
func (t *DPLP) Deriv(x float64) float64 {
	if x < 0 || x > 1 {
		return 0
	}
	_, Fy := t.net.integral(t.inv*t.pow.nu(x), 0, nil, true)
	return Fy * t.inv * t.pow.nuDeriv(x)
}

// Clone implements Transform.
func (t *DPLP) Clone() Transform { return &DPLP{pow: t.pow.clone(), net: t.net.clone(), inv: t.inv} }
