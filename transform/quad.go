package transform

import (
	"fmt"
	"math"
)

// ClenshawCurtis returns the n+1 nodes, ascending, and weights of the
// Clenshaw-Curtis rule with parameter n on [0, 1]:
//
//	integral_0^1 p(t) dt = sum_j w_j p(t_j)  for every polynomial of degree <= n.
//
// Nodes are t_j = sin^2(j*pi/(2n)) = (1 - cos(j*pi/n))/2 (the Chebyshev
// extreme points mapped to [0, 1]); weights use the closed form
// w_k = (c_k/(2n)) (1 - sum_{m=1}^{floor(n/2)} b_m/(4m^2-1) cos(2 m k pi/n)),
// c_0 = c_n = 1, c_k = 2 otherwise, b_m = 1 if 2m = n else 2
// (Waldvogel 2006). All weights are positive.
func ClenshawCurtis(n int) (nodes, weights []float64, err error) {
	if n < 1 || n > 1<<16 {
		return nil, nil, fmt.Errorf("transform: Clenshaw-Curtis n = %d out of range [1, 65536]", n)
	}
	nodes = make([]float64, n+1)
	weights = make([]float64, n+1)
	for j := 0; j <= n; j++ {
		s := math.Sin(float64(j) * math.Pi / float64(2*n))
		nodes[j] = s * s
	}
	nodes[0], nodes[n] = 0, 1
	for k := 0; k <= n; k++ {
		sum := 1.0
		for m := 1; m <= n/2; m++ {
			b := 2.0
			if 2*m == n {
				b = 1
			}
			// Reduce m*k mod n before forming the angle so it stays accurate.
			ang := 2 * math.Pi * float64((m*k)%n) / float64(n)
			sum -= b / float64(4*m*m-1) * math.Cos(ang)
		}
		c := 2.0
		if k == 0 || k == n {
			c = 1
		}
		weights[k] = c / float64(2*n) * sum
	}
	// The rule is symmetric (w_k = w_{n-k}); enforce it exactly.
	for k := 0; k < (n+1)/2; k++ {
		a := 0.5 * (weights[k] + weights[n-k])
		weights[k], weights[n-k] = a, a
	}
	return nodes, weights, nil
}
