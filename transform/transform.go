// Package transform implements DPLP's learned monotone transforms (paper
// Sections 4.2-4.3; privacy-model.md §5) and the compiled piecewise-linear
// table that is actually deployed.
//
// Every transform is a function of x = s / S_max(u) in [0, 1]: the base score
// s is scaled by the query's invariant upper bound S_max(u) before powers are
// taken, so a transform used by the mechanism is really a function of the
// pair (s, S_max(u)), both of which the mechanism may use freely. Inputs
// outside [0, 1] are clamped to it.
//
// Three families (Kind):
//
//   - Lin:  f(x) = nu_beta(x) = sum_j exp(tau*beta_j) * x^(a_j)  (the power basis).
//   - UMNN: f(x) = integral_0^x g_phi(t) dt, g_phi > 0 a small MLP.
//   - DPLP: f(x) = integral_0^(nu_beta(x)/c) g_phi(t) dt (UMNN applied to nu;
//     c = nu(1) at initialisation, a fixed rescaling, see DPLP).
//
// The UMNN offset b0 of the paper is fixed at 0 and no output scale is
// learnt: the mechanism divides utilities by Delta_f, and top-K selection is
// shift-invariant, so neither would change the released distribution.
//
// The public-evidence variant of privacy-model §10 (utility h(x_pub) + f(x))
// uses two independent transforms of the same family, both built by New; the
// train package trains them jointly.
//
// A Transform holds scratch buffers and is not safe for concurrent use; use
// Clone to give each goroutine its own copy. A compiled Table is immutable
// and safe to share.
package transform

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Transform is a trainable monotone non-decreasing map from [0, 1] to R.
type Transform interface {
	// Kind names the family.
	Kind() Kind
	// NumParams is the length of the parameter vector.
	NumParams() int
	// Params returns a copy of the parameter vector.
	Params() []float64
	// SetParams replaces the parameter vector (len must be NumParams).
	SetParams(p []float64) error
	// Eval returns f(x); x is clamped to [0, 1].
	Eval(x float64) float64
	// Grad returns f(x) and adds w * df(x)/dparams to dparams, which must
	// have length NumParams (a shorter slice is a programming error and
	// panics). It is the exact derivative of what Eval computes.
	Grad(x, w float64, dparams []float64) float64
	// Deriv returns df/dx at x (exact derivative of Eval; +Inf where a
	// power with exponent < 1 meets x = 0).
	Deriv(x float64) float64
	// Clone returns an independent deep copy.
	Clone() Transform
}

// Kind is a transform family.
type Kind string

// The transform families.
const (
	KindDPLP Kind = "dplp" // UMNN on the power basis (the paper's DPLP)
	KindLin  Kind = "lin"  // power basis alone (DPLP-Lin)
	KindUMNN Kind = "umnn" // UMNN on raw x (DPLP-UMNN)
)

// Defaults.
const (
	DefaultTau       = 0.01 // authors' temperature (reference §4.2)
	DefaultQuadNodes = 50   // Clenshaw-Curtis n, i.e. 51 points (reference §4.3)
	DefaultWidth     = 20   // one hidden layer of width 20
	DefaultGrid      = 1001 // compiled table points
)

// Spec describes a transform. Zero values select the defaults.
type Spec struct {
	Kind      Kind      `json:"kind"`
	Exponents []float64 `json:"exponents,omitempty"`  // power basis (dplp, lin); nil = PaperExponents()
	Tau       float64   `json:"tau,omitempty"`        // temperature (dplp, lin); 0 = DefaultTau
	Hidden    []int     `json:"hidden,omitempty"`     // integrand hidden widths (dplp, umnn); nil = [DefaultWidth]
	QuadNodes int       `json:"quad_nodes,omitempty"` // Clenshaw-Curtis n (dplp, umnn); 0 = DefaultQuadNodes
}

// PaperExponents returns the paper's basis a_j = 1/2 + (j-1)/100, j = 1..170
// (appendix "Implementation details").
func PaperExponents() []float64 {
	a := make([]float64, 170)
	for j := range a {
		a[j] = 0.5 + float64(j)/100
	}
	return a
}

// ReferenceExponents returns the authors' code's basis 1/(0.30 + 0.01 j),
// j = 0..169 (3.333 down to 0.5025; reference-implementation §4.1).
func ReferenceExponents() []float64 {
	a := make([]float64, 170)
	for j := range a {
		a[j] = 1 / (0.30 + 0.01*float64(j))
	}
	return a
}

// withDefaults fills zero fields.
func (s Spec) withDefaults() Spec {
	if s.Exponents == nil {
		s.Exponents = PaperExponents()
	}
	if s.Tau == 0 {
		s.Tau = DefaultTau
	}
	if s.Hidden == nil {
		s.Hidden = []int{DefaultWidth}
	}
	if s.QuadNodes == 0 {
		s.QuadNodes = DefaultQuadNodes
	}
	return s
}

// New builds a freshly initialised transform. The power basis starts at the
// authors' values (beta_0 = 0, beta_j = -100 otherwise: weights 1 and e^-1
// with tau = 0.01); the integrand network is drawn from r (required for dplp
// and umnn).
func New(spec Spec, r *rand.Rand) (Transform, error) {
	spec = spec.withDefaults()
	switch spec.Kind {
	case KindLin:
		return NewPower(spec.Exponents, spec.Tau)
	case KindUMNN:
		if r == nil {
			return nil, errors.New("transform: nil random source")
		}
		return NewUMNN(spec.Hidden, spec.QuadNodes, 1, r)
	case KindDPLP:
		if r == nil {
			return nil, errors.New("transform: nil random source")
		}
		return NewDPLP(spec.Exponents, spec.Tau, spec.Hidden, spec.QuadNodes, r)
	default:
		return nil, fmt.Errorf("transform: unknown kind %q (want dplp, lin or umnn)", spec.Kind)
	}
}

// clamp01 maps x into [0, 1], keeping NaN.
func clamp01(x float64) float64 {
	if x < 0 {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}

func checkParams(p []float64, n int) error {
	if len(p) != n {
		return fmt.Errorf("transform: %d parameters, want %d", len(p), n)
	}
	for i, v := range p {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("transform: parameter %d is %v", i, v)
		}
	}
	return nil
}
