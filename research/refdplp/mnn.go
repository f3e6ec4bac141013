package refdplp

import "math"

// MNN is the authors' UMNN with h = 0 (reference-implementation §4.3):
//
//	f(x) = exp(LogScale) int_0^x g(t) dt + Offset,
//	g(t) = ELU(B2 + sum_k W2_k relu(W1_k t + B1_k)) + 1 > 0,
//
// integrated with the authors' Clenshaw-Curtis rule, so f is increasing.
type MNN struct {
	W1, B1, W2 []float64 // hidden units: weight on t, bias, output weight
	B2         float64
	Offset     float64
	LogScale   float64
	Steps      int // quadrature steps (nodes = Steps + 1)

	rule quadRule
}

// NewMNN is the authors' initialisation (their custom_linear): every weight
// 1, every bias 0, so g(t) = hidden t + 1 for t >= 0 and f(x) = hidden/2
// x^2 + x there.
func NewMNN(hidden, steps int) *MNN {
	m := &MNN{W1: make([]float64, hidden), B1: make([]float64, hidden), W2: make([]float64, hidden), Steps: steps}
	for k := range hidden {
		m.W1[k], m.W2[k] = 1, 1
	}
	m.rule = newQuadRule(steps)
	return m
}

// numParams is the length of the flat parameter vector (see params).
func (m *MNN) numParams() int { return 3*len(m.W1) + 3 }

// groups lists the distinct hidden units: rep[i] is a unit, mult[i] how
// many units share its (W1, B1, W2) exactly. Identical units have identical
// gradients, so they stay identical (the authors' all-ones init keeps all
// 20 tied, reference-implementation §4.3); evaluating one per group is
// exact up to the order of additions.
type groups struct {
	rep  []int
	mult []float64
	of   []int // of[k] = group of unit k
}

func (m *MNN) groups(g *groups) {
	g.rep, g.mult = g.rep[:0], g.mult[:0]
	g.of = g.of[:0]
	for k := range m.W1 {
		found := -1
		for i, r := range g.rep {
			if m.W1[r] == m.W1[k] && m.B1[r] == m.B1[k] && m.W2[r] == m.W2[k] {
				found = i
				break
			}
		}
		if found < 0 {
			found = len(g.rep)
			g.rep = append(g.rep, k)
			g.mult = append(g.mult, 0)
		}
		g.mult[found]++
		g.of = append(g.of, found)
	}
}

// pre is the integrand's output before the ELU at t.
func (m *MNN) pre(g *groups, t float64) float64 {
	o := m.B2
	for i, r := range g.rep {
		if z := m.W1[r]*t + m.B1[r]; z > 0 {
			o += g.mult[i] * m.W2[r] * z
		}
	}
	return o
}

func elu(o float64) float64 {
	if o > 0 {
		return o
	}
	return math.Expm1(o)
}

// integral is int_0^x g by the quadrature rule.
func (m *MNN) integral(g *groups, x float64) float64 {
	var s float64
	for i, w := range m.rule.w {
		s += w * (elu(m.pre(g, x*m.rule.pos[i])) + 1)
	}
	return s * x / 2
}

// eval returns f(x).
func (m *MNN) eval(g *groups, x float64) float64 {
	return math.Exp(m.LogScale)*m.integral(g, x) + m.Offset
}

// F is f(x).
func (m *MNN) F(x float64) float64 {
	var g groups
	m.groups(&g)
	return m.eval(&g, x)
}

// addGrad adds coef * df(x)/dtheta to grad (the flat layout of params:
// W1, B1, W2, then B2, Offset, LogScale). Gradients of the tied units of a
// group are computed once (per unit) and written to every member.
func (m *MNN) addGrad(g *groups, x, coef float64, grad []float64, gu []float64) {
	if coef == 0 {
		return
	}
	h := len(m.W1)
	scale := math.Exp(m.LogScale)
	// Per-group accumulators of d(sum_i w_i g(t_i))/d(unit params), for one
	// representative unit: gu[3i] (W1), gu[3i+1] (B1), gu[3i+2] (W2).
	gu = gu[:3*len(g.rep)]
	clear(gu)
	var dB2, sum float64
	for i, w := range m.rule.w {
		t := x * m.rule.pos[i]
		o := m.pre(g, t)
		var dg float64
		if o > 0 {
			sum += w * (o + 1)
			dg = 1
		} else {
			e := math.Exp(o)
			sum += w * e // expm1(o) + 1
			dg = e
		}
		wd := w * dg
		dB2 += wd
		for j, r := range g.rep {
			if z := m.W1[r]*t + m.B1[r]; z > 0 {
				gu[3*j] += wd * m.W2[r] * t
				gu[3*j+1] += wd * m.W2[r]
				gu[3*j+2] += wd * z
			}
		}
	}
	c := coef * scale * x / 2
	for k := range h {
		j := g.of[k]
		grad[k] += c * gu[3*j]
		grad[h+k] += c * gu[3*j+1]
		grad[2*h+k] += c * gu[3*j+2]
	}
	grad[3*h] += c * dB2
	grad[3*h+1] += coef
	grad[3*h+2] += coef * scale * sum * x / 2
}

// params returns the parameters as slices for numeric.Adam, in the flat
// gradient layout: W1, B1, W2, then [B2, Offset, LogScale] (copied in and
// out by scalars/setScalars).
func (m *MNN) params(scal []float64) [][]float64 {
	scal[0], scal[1], scal[2] = m.B2, m.Offset, m.LogScale
	return [][]float64{m.W1, m.B1, m.W2, scal}
}

func (m *MNN) setScalars(scal []float64) { m.B2, m.Offset, m.LogScale = scal[0], scal[1], scal[2] }

// splitGrad views a flat gradient in the layout of params.
func (m *MNN) splitGrad(grad []float64) [][]float64 {
	h := len(m.W1)
	return [][]float64{grad[:h], grad[h : 2*h], grad[2*h : 3*h], grad[3*h : 3*h+3]}
}
