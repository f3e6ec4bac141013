// Package numeric holds the small numerical building blocks the model
// trainers share (DPLP training, link classifier, GCN, PRUNE, the authors'
// DPLP in research/refdplp): a numerically stable
// sigmoid and softplus, and Adam in the two forms the trainers use.
package numeric

import "math"

// Sigmoid is 1 / (1 + e^-x), computed without overflow for any x.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// Softplus is log(1 + e^x) = -log Sigmoid(-x), computed stably: x itself
// above 35, e^x below -35.
func Softplus(x float64) float64 {
	if x > 35 {
		return x
	}
	if x < -35 {
		return math.Exp(x)
	}
	return math.Log1p(math.Exp(x))
}

// Adam is the Adam optimiser (Kingma and Ba 2015, beta1 0.9, beta2 0.999,
// eps 1e-8) over a list of parameter slices.
type Adam struct {
	LR float64
	// WeightDecay, when non-nil, adds WeightDecay[i] * p to the gradient of
	// parameter slice i (L2 regularisation through the gradient).
	WeightDecay []float64
	// TF selects TensorFlow's form: the bias correction is folded into the
	// learning rate, lr_t = lr sqrt(1 - b2^t) / (1 - b1^t), and eps is added
	// to sqrt(v). Otherwise the textbook form: m/(1 - b1^t) over
	// sqrt(v/(1 - b2^t)) + eps.
	TF bool

	b1, b2, eps float64
	t           int
	mom, vel    [][]float64
}

// NewAdam prepares the moment buffers for params.
func NewAdam(params [][]float64, lr float64, weightDecay []float64, tf bool) *Adam {
	a := &Adam{LR: lr, WeightDecay: weightDecay, TF: tf, b1: 0.9, b2: 0.999, eps: 1e-8}
	for _, p := range params {
		a.mom = append(a.mom, make([]float64, len(p)))
		a.vel = append(a.vel, make([]float64, len(p)))
	}
	return a
}

// SetBetas replaces the moment decay rates and epsilon (NewAdam's defaults
// are 0.9, 0.999 and 1e-8).
func (a *Adam) SetBetas(b1, b2, eps float64) { a.b1, a.b2, a.eps = b1, b2, eps }

// Step applies one update of params from grads (same shapes as NewAdam's).
func (a *Adam) Step(params, grads [][]float64) {
	a.t++
	if a.TF {
		lrT := a.LR * math.Sqrt(1-math.Pow(a.b2, float64(a.t))) / (1 - math.Pow(a.b1, float64(a.t)))
		for i, p := range params {
			g, mo, ve := grads[i], a.mom[i], a.vel[i]
			wd := 0.0
			if a.WeightDecay != nil {
				wd = a.WeightDecay[i]
			}
			for j := range p {
				gj := g[j]
				if wd != 0 {
					gj += wd * p[j]
				}
				mo[j] = a.b1*mo[j] + (1-a.b1)*gj
				ve[j] = a.b2*ve[j] + (1-a.b2)*gj*gj
				p[j] -= lrT * mo[j] / (math.Sqrt(ve[j]) + a.eps)
			}
		}
		return
	}
	c1 := 1 - math.Pow(a.b1, float64(a.t))
	c2 := 1 - math.Pow(a.b2, float64(a.t))
	for i, p := range params {
		g, mo, ve := grads[i], a.mom[i], a.vel[i]
		wd := 0.0
		if a.WeightDecay != nil {
			wd = a.WeightDecay[i]
		}
		for j := range p {
			gj := g[j] + wd*p[j]
			mo[j] = a.b1*mo[j] + (1-a.b1)*gj
			ve[j] = a.b2*ve[j] + (1-a.b2)*gj*gj
			p[j] -= a.LR * (mo[j] / c1) / (math.Sqrt(ve[j]/c2) + a.eps)
		}
	}
}
