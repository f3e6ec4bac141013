package transform

import (
	"errors"
	"math"
)

// Scaled is exp(s) * T(x): a transform of T's family with one extra
// learnable log-scale s (the last parameter). DPLP-pub uses it for h, the
// transform of the public score: only the ratio of h's scale to Delta_f
// matters to the mechanism, and a log-scale lets Adam move that ratio by
// orders of magnitude in a few dozen steps, which T's own parameters
// (weights exp(tau beta), integrand biases) cannot.
type Scaled struct {
	T Transform
	S float64 // log-scale
}

// Kind implements Transform (the inner family).
func (s *Scaled) Kind() Kind { return s.T.Kind() }

// NumParams implements Transform.
func (s *Scaled) NumParams() int { return s.T.NumParams() + 1 }

// Params implements Transform: T's parameters, then the log-scale.
func (s *Scaled) Params() []float64 { return append(s.T.Params(), s.S) }

// SetParams implements Transform.
func (s *Scaled) SetParams(p []float64) error {
	if err := checkParams(p, s.NumParams()); err != nil {
		return err
	}
	if math.IsNaN(p[len(p)-1]) || math.IsInf(p[len(p)-1], 0) {
		return errors.New("transform: non-finite log-scale")
	}
	if err := s.T.SetParams(p[:len(p)-1]); err != nil {
		return err
	}
	s.S = p[len(p)-1]
	return nil
}

// Eval implements Transform.
func (s *Scaled) Eval(x float64) float64 { return math.Exp(s.S) * s.T.Eval(x) }

// Grad implements Transform.
func (s *Scaled) Grad(x, w float64, d []float64) float64 {
	e := math.Exp(s.S)
	n := s.T.NumParams()
	v := s.T.Grad(x, w*e, d[:n])
	d[n] += w * e * v
	return e * v
}

// Deriv implements Transform.
func (s *Scaled) Deriv(x float64) float64 { return math.Exp(s.S) * s.T.Deriv(x) }

// Clone implements Transform.
func (s *Scaled) Clone() Transform { return &Scaled{T: s.T.Clone(), S: s.S} }
