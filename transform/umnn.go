package transform

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// UMNN is the unconstrained monotone network F(y) = integral_0^y g_phi(t) dt
// (Wehenkel & Louppe 2019; paper Eq. umnn, with b0 = 0), where the integrand
// g_phi(t) = ELU(z(t)) + 1 > 0 and z is an MLP R -> R with ReLU hidden
// layers. The integral is the Clenshaw-Curtis rule with n+1 nodes:
//
//	F(y) = y * sum_j w_j g(y t_j),   t_j, w_j from ClenshawCurtis(n).
//
// Gradients are those of this quadrature, exactly: dF/dphi = y sum_j w_j
// dg/dphi(y t_j) (the quadrature of dg/dphi, as in UMNN) and
// dF/dy = sum_j w_j g(y t_j) + y sum_j w_j g'(y t_j) t_j. The latter differs
// from UMNN's Leibniz shortcut g(y) by the quadrature error only, and is used
// so that training gradients are the true gradients of the deployed function.
//
// Parameters, per layer from input to output: weights (out x in, row-major)
// then biases. With one hidden layer of width H that is [w(H), b(H), v(H), c]
// and z(t) = sum_k v_k ReLU(w_k t + b_k) + c.
//
// As a Transform (DPLP-UMNN) it is f(x) = F(x) on x in [0, 1].
type UMNN struct {
	hidden []int
	params []float64
	layers []layer
	t, wq  []float64 // quadrature nodes (ascending) and weights on [0, 1]

	// scratch for the one-hidden-layer fast path
	tt, dA, dB, P, Q []float64
	lo, hi           []int
	// scratch for the generic path: per layer pre-activations, activations, deltas
	pre, act, del [][]float64
}

type layer struct{ in, out, w, b int } // w, b: offsets into params

// NewUMNN returns a network with the given hidden widths (at least one
// layer, each width >= 1), Clenshaw-Curtis parameter quadNodes (>= 2), and
// random initialisation from r: every layer uniform in +-1/sqrt(fan_in)
// (PyTorch's default), first-layer weights further divided by inputScale > 0
// (the typical range of y) so that ReLU kinks fall inside [0, inputScale].
// Random init matters: the authors' all-ones init ties every hidden unit
// for the whole run (reference-implementation §4.3).
func NewUMNN(hidden []int, quadNodes int, inputScale float64, r *rand.Rand) (*UMNN, error) {
	if len(hidden) == 0 {
		return nil, errors.New("transform: UMNN needs at least one hidden layer")
	}
	for i, h := range hidden {
		if h < 1 || h > 1<<12 {
			return nil, fmt.Errorf("transform: hidden layer %d has width %d, want 1..4096", i, h)
		}
	}
	if quadNodes < 2 || quadNodes > 1<<12 {
		return nil, fmt.Errorf("transform: %d quadrature nodes, want 2..4096", quadNodes)
	}
	if !(inputScale > 0) || math.IsInf(inputScale, 0) {
		return nil, fmt.Errorf("transform: input scale %v, want positive and finite", inputScale)
	}
	if r == nil {
		return nil, errors.New("transform: nil random source")
	}
	t, wq, err := ClenshawCurtis(quadNodes)
	if err != nil {
		return nil, err
	}
	u := &UMNN{hidden: slices.Clone(hidden), t: t, wq: wq}
	sizes := append(append([]int{1}, hidden...), 1)
	off := 0
	for l := 1; l < len(sizes); l++ {
		L := layer{in: sizes[l-1], out: sizes[l], w: off}
		L.b = off + L.in*L.out
		off = L.b + L.out
		u.layers = append(u.layers, L)
	}
	u.params = make([]float64, off)
	for i, L := range u.layers {
		bound := 1 / math.Sqrt(float64(L.in))
		ws := bound
		if i == 0 {
			ws /= inputScale
		}
		for k := L.w; k < L.b; k++ {
			u.params[k] = ws * (2*r.Float64() - 1)
		}
		for k := L.b; k < L.b+L.out; k++ {
			u.params[k] = bound * (2*r.Float64() - 1)
		}
	}
	u.alloc()
	return u, nil
}

func (u *UMNN) alloc() {
	n1 := len(u.t)
	u.tt = make([]float64, n1)
	u.dA = make([]float64, n1+1)
	u.dB = make([]float64, n1+1)
	u.P = make([]float64, n1+1)
	u.Q = make([]float64, n1+1)
	u.lo = make([]int, u.hidden[0])
	u.hi = make([]int, u.hidden[0])
	u.pre = make([][]float64, len(u.layers))
	u.act = make([][]float64, len(u.layers)+1)
	u.del = make([][]float64, len(u.layers)+1)
	u.act[0] = make([]float64, 1)
	u.del[0] = make([]float64, 1)
	for i, L := range u.layers {
		u.pre[i] = make([]float64, L.out)
		u.act[i+1] = make([]float64, L.out)
		u.del[i+1] = make([]float64, L.out)
	}
}

// Kind implements Transform.
func (u *UMNN) Kind() Kind { return KindUMNN }

// NumParams implements Transform.
func (u *UMNN) NumParams() int { return len(u.params) }

// Params implements Transform.
func (u *UMNN) Params() []float64 { return slices.Clone(u.params) }

// SetParams implements Transform.
func (u *UMNN) SetParams(p []float64) error {
	if err := checkParams(p, len(u.params)); err != nil {
		return err
	}
	copy(u.params, p)
	return nil
}

// Integrand returns g(t) = ELU(z(t)) + 1.
func (u *UMNN) Integrand(t float64) float64 {
	z := u.forward(t)
	if z > 0 {
		return z + 1
	}
	return math.Exp(z)
}

// Eval implements Transform.
func (u *UMNN) Eval(x float64) float64 {
	F, _ := u.integral(clamp01(x), 0, nil, false)
	return F
}

// Grad implements Transform.
func (u *UMNN) Grad(x, w float64, d []float64) float64 {
	F, _ := u.integral(clamp01(x), w, d, false)
	return F
}

// Deriv implements Transform.
func (u *UMNN) Deriv(x float64) float64 {
	if x < 0 || x > 1 {
		return 0
	}
	_, Fy := u.integral(x, 0, nil, true)
	return Fy
}

// Clone implements Transform.
func (u *UMNN) Clone() Transform { return u.clone() }

func (u *UMNN) clone() *UMNN {
	c := &UMNN{
		hidden: slices.Clone(u.hidden),
		params: slices.Clone(u.params),
		layers: slices.Clone(u.layers),
		t:      slices.Clone(u.t),
		wq:     slices.Clone(u.wq),
	}
	c.alloc()
	return c
}

// integral returns F(y) and, if wantDy, dF/dy; if d != nil it adds
// w * dF/dphi to d.
func (u *UMNN) integral(y, w float64, d []float64, wantDy bool) (F, Fy float64) {
	if len(u.layers) == 2 && y >= 0 {
		return u.fast(y, w, d, wantDy)
	}
	return u.generic(y, w, d, wantDy)
}

// fast handles one hidden layer and y >= 0 in O(n + H log n) instead of
// O(n H). With nodes ascending, unit k is active (w_k y t_j + b_k > 0) on a
// contiguous run of nodes, a prefix or a suffix, found by binary search on
// the very predicate the generic path evaluates (rounding is monotone, so
// the predicate is monotone in j). z at each node is then A_j*tt_j + B_j + c
// with A, B accumulated from difference arrays, and each unit's parameter
// gradient needs only prefix sums of w_j e_j and w_j e_j tt_j over its run.
func (u *UMNN) fast(y, w float64, d []float64, wantDy bool) (F, Fy float64) {
	H := u.hidden[0]
	p := u.params
	w1, b1, v, c := p[:H], p[H:2*H], p[2*H:3*H], p[3*H]
	n1 := len(u.t)
	tt := u.tt[:n1]
	for j, t := range u.t {
		tt[j] = y * t
	}
	dA, dB := u.dA[:n1+1], u.dB[:n1+1]
	clear(dA)
	clear(dB)
	for k := 0; k < H; k++ {
		wk, bk := w1[k], b1[k]
		lo, hi := 0, 0
		switch {
		case wk > 0: // active on a suffix
			if wk*tt[n1-1]+bk > 0 {
				a, b := 0, n1-1
				for a < b {
					m := int(uint(a+b) >> 1)
					if wk*tt[m]+bk > 0 {
						b = m
					} else {
						a = m + 1
					}
				}
				lo, hi = a, n1
			}
		case wk < 0: // active on a prefix
			if wk*tt[0]+bk > 0 {
				a, b := 1, n1
				for a < b {
					m := int(uint(a+b) >> 1)
					if wk*tt[m]+bk > 0 {
						a = m + 1
					} else {
						b = m
					}
				}
				lo, hi = 0, a
			}
		default:
			if bk > 0 {
				lo, hi = 0, n1
			}
		}
		u.lo[k], u.hi[k] = lo, hi
		if lo < hi {
			vw, vb := v[k]*wk, v[k]*bk
			dA[lo] += vw
			dA[hi] -= vw
			dB[lo] += vb
			dB[hi] -= vb
		}
	}
	wq := u.wq[:n1]
	grad := d != nil && w != 0
	P, Q := u.P[:n1+1], u.Q[:n1+1]
	var A, B, S, Sd, sp, sq float64
	for j := 0; j < n1; j++ {
		A += dA[j]
		B += dB[j]
		z := A*tt[j] + B + c
		var g, e float64
		if z > 0 {
			g, e = z+1, 1
		} else {
			e = math.Exp(z)
			g = e
		}
		S += wq[j] * g
		wej := wq[j] * e
		Sd += wej * A * tt[j]
		if grad {
			P[j], Q[j] = sp, sq
			sp += wej
			sq += wej * tt[j]
		}
	}
	F = y * S
	if wantDy || d != nil {
		Fy = S + Sd
	}
	if !grad {
		return F, Fy
	}
	P[n1], Q[n1] = sp, sq
	s := w * y
	dw, db, dv := d[:H], d[H:2*H], d[2*H:3*H]
	for k := 0; k < H; k++ {
		lo, hi := u.lo[k], u.hi[k]
		if lo >= hi {
			continue
		}
		S0, S1 := P[hi]-P[lo], Q[hi]-Q[lo]
		dw[k] += s * v[k] * S1
		db[k] += s * v[k] * S0
		dv[k] += s * (w1[k]*S1 + b1[k]*S0)
	}
	d[3*H] += s * P[n1]
	return F, Fy
}

// generic handles any depth and sign of y: a forward and (if needed) a
// backward pass per quadrature node.
func (u *UMNN) generic(y, w float64, d []float64, wantDy bool) (F, Fy float64) {
	var S, Sd float64
	need := wantDy || d != nil
	for j, t := range u.t {
		tj := y * t
		z := u.forward(tj)
		var g, e float64
		if z > 0 {
			g, e = z+1, 1
		} else {
			e = math.Exp(z)
			g = e
		}
		S += u.wq[j] * g
		if need {
			var dd []float64
			if w != 0 {
				dd = d
			}
			dzdt := u.backward(w*y*u.wq[j]*e, dd)
			Sd += u.wq[j] * e * dzdt * tj
		}
	}
	return y * S, S + Sd
}

// forward returns z(t), leaving pre-activations and activations in scratch.
func (u *UMNN) forward(t float64) float64 {
	u.act[0][0] = t
	p := u.params
	last := len(u.layers) - 1
	for l, L := range u.layers {
		in, pre := u.act[l], u.pre[l]
		for i := 0; i < L.out; i++ {
			row := p[L.w+i*L.in : L.w+(i+1)*L.in]
			var s float64
			if L.in == 1 {
				s = row[0]*in[0] + p[L.b+i] // same expression as the fast path
			} else {
				for k, x := range in {
					s += row[k] * x
				}
				s += p[L.b+i]
			}
			pre[i] = s
			if l < last {
				u.act[l+1][i] = max(s, 0)
			} else {
				u.act[l+1][i] = s
			}
		}
	}
	return u.act[len(u.layers)][0]
}

// backward back-propagates dz = 1 through the last forward pass, adds
// scale * dz/dparams to d (if d != nil) and returns dz/dt.
func (u *UMNN) backward(scale float64, d []float64) float64 {
	p := u.params
	last := len(u.layers) - 1
	u.del[last+1][0] = 1
	for l := last; l >= 0; l-- {
		L := u.layers[l]
		in, din, dout := u.act[l], u.del[l], u.del[l+1]
		clear(din)
		for i := 0; i < L.out; i++ {
			di := dout[i]
			if l < last && !(u.pre[l][i] > 0) {
				continue
			}
			if di == 0 {
				continue
			}
			row := p[L.w+i*L.in : L.w+(i+1)*L.in]
			if d != nil {
				d[L.b+i] += scale * di
				drow := d[L.w+i*L.in : L.w+(i+1)*L.in]
				for k, x := range in {
					drow[k] += scale * di * x
				}
			}
			for k, wv := range row {
				din[k] += wv * di
			}
		}
	}
	return u.del[0][0]
}
