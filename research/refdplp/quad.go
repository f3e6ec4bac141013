package refdplp

import "math"

// quadRule is the authors' Clenshaw-Curtis rule with n steps (UMNN's
// compute_cc_weights, reference-implementation §4.3): n+1 nodes
// t_i = x0 + (x - x0) pos[i], pos[i] = (cos(i pi / n) + 1) / 2 (from x down
// to x0), and
//
//	int_x0^x g(t) dt ~ (x - x0) / 2 * sum_i w[i] g(t_i),
//
// with w = Lambda^T W, Lambda_kj = cos(k j pi / n) except column 0 = 1/2 and
// the last column halved, all times 2/n, W_0 = 1, W_k = 2/(1 - k^2) for
// even k and 0 for odd k.
type quadRule struct {
	n   int
	w   []float64
	pos []float64
}

func newQuadRule(n int) quadRule {
	W := make([]float64, n+1)
	for k := range W {
		switch {
		case k == 0:
			W[k] = 1
		case k%2 == 1:
			W[k] = 0
		default:
			W[k] = 2 / (1 - float64(k*k))
		}
	}
	q := quadRule{n: n, w: make([]float64, n+1), pos: make([]float64, n+1)}
	for j := 0; j <= n; j++ {
		var s float64
		for k := 0; k <= n; k++ {
			var l float64
			switch j {
			case 0:
				l = 0.5
			default:
				l = math.Cos(float64((k*j)%(2*n)) * math.Pi / float64(n))
				if j == n {
					l *= 0.5
				}
			}
			s += l * W[k]
		}
		q.w[j] = s * 2 / float64(n)
		q.pos[j] = (math.Cos(float64(j)*math.Pi/float64(n)) + 1) / 2
	}
	return q
}

// integrate applies the rule to g on [x0, x].
func (q *quadRule) integrate(g func(float64) float64, x0, x float64) float64 {
	var s float64
	for i, w := range q.w {
		s += w * g(x0+(x-x0)*q.pos[i])
	}
	return s * (x - x0) / 2
}
