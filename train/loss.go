package train

import (
	"fmt"
	"math"
)

// lossGrad returns the query's hinge loss for the given (scaled) noise and
// adds its gradient with respect to theta to grad.
func (t *trainer) lossGrad(q *prepQuery, noiseP, noiseN []float64, grad []float64) (float64, error) {
	t.evaluate(q)
	pub := t.h != nil
	delta := t.deltaApprox(q.dx)
	if t.cfg.ScaleAnchor > 0 && !(t.f1 > t.f0) {
		return 0, fmt.Errorf("f(1) - f(0) = %v (transform degenerate or diverged)", t.f1-t.f0)
	}
	if !(delta > 0) || math.IsInf(delta, 0) {
		return 0, fmt.Errorf("the Delta_f approximation is %v (transform degenerate or diverged)", delta)
	}
	inv := 1 / delta
	// The hinge is shift-invariant (its dL/dq sum to zero), so utilities
	// are taken relative to f(0) and h at the smallest public value: the
	// same loss and gradient, without cancellation when f has a large offset.
	f0, h0 := t.f0, 0.0
	if pub && len(t.hv) > 0 {
		h0 = t.hv[0]
	}
	P, N := len(q.pos), len(q.neg)
	t.qp, t.qn = grow(t.qp, P), grow(t.qn, N)
	t.gp, t.gn = grow(t.gp, P), grow(t.gn, N)
	for i, d := range q.pos {
		u := t.fv[d] - f0
		if pub {
			u += t.hv[q.ppos[i]] - h0
		}
		t.qp[i] = u*inv + noiseP[i]
	}
	for i, d := range q.neg {
		u := t.fv[d] - f0
		if pub {
			u += t.hv[q.pneg[i]] - h0
		}
		t.qn[i] = u*inv + noiseN[i]
	}
	var loss float64
	if t.lex {
		loss = t.groupHinge(q)
	} else {
		loss = t.ps.hinge(t.qp, t.qn, t.cfg.Margin, t.gp, t.gn)
	}

	// Accumulate dL/dq per distinct value; then dL/dtheta = sum_d g_d/Delta
	// * df(x_d)/dtheta - (sum_d g_d u_d)/Delta^2 * dDelta/dtheta.
	clear(t.gf)
	for i, d := range q.pos {
		t.gf[d] += t.gp[i]
	}
	for i, d := range q.neg {
		t.gf[d] += t.gn[i]
	}
	var gu float64 // sum over candidates of dL/dq * numerator
	gF := grad[:t.nf]
	for d, g := range t.gf {
		if g != 0 {
			gu += g * (t.fv[d] - f0)
			axpy(g*inv, t.jf[d*t.nf:(d+1)*t.nf], gF)
		}
	}
	if pub {
		clear(t.gh)
		for i, d := range q.ppos {
			t.gh[d] += t.gp[i]
		}
		for i, d := range q.pneg {
			t.gh[d] += t.gn[i]
		}
		gH := grad[t.nf:]
		for d, g := range t.gh {
			if g != 0 {
				gu += g * (t.hv[d] - h0)
				axpy(g*inv, t.jh[d*t.nh:(d+1)*t.nh], gH)
			}
		}
	}
	wd := -(gu * inv) * inv // this order cannot overflow when Delta is tiny
	if a := t.cfg.ScaleAnchor; a > 0 {
		// anchor: a * ln(f(1)-f(0))^2, d/dtheta = 2a ln(R)/R * dR/dtheta
		R := t.f1 - t.f0
		c := 2 * a * math.Log(R) / R
		loss += a * math.Log(R) * math.Log(R)
		t.f.Grad(1, c, gF)
		t.f.Grad(0, -c, gF)
	}
	if wd != 0 {
		t.deltaGrad(q.dx, wd, gF)
	}
	return loss, nil
}

// groupHinge is the lexicographic mechanism's hinge: summed over the groups
// of equal public x, over the group's (positive, negative) pairs only (the
// order of any other pair is fixed by s_pub whatever f is). It reads
// t.qp, t.qn and writes dL/dq to t.gp, t.gn (0 outside every group).
func (t *trainer) groupHinge(q *prepQuery) float64 {
	clear(t.gp)
	clear(t.gn)
	var loss float64
	for _, g := range q.groups {
		t.sqp, t.sqn = grow(t.sqp, len(g.pos)), grow(t.sqn, len(g.neg))
		t.sgp, t.sgn = grow(t.sgp, len(g.pos)), grow(t.sgn, len(g.neg))
		for i, j := range g.pos {
			t.sqp[i] = t.qp[j]
		}
		for i, j := range g.neg {
			t.sqn[i] = t.qn[j]
		}
		loss += t.ps.hinge(t.sqp, t.sqn, t.cfg.Margin, t.sgp, t.sgn)
		for i, j := range g.pos {
			t.gp[j] = t.sgp[i]
		}
		for i, j := range g.neg {
			t.gn[j] = t.sgn[i]
		}
	}
	return loss
}
