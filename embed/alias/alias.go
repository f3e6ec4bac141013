// Package alias is Walker's alias table, the discrete sampler shared by
// the embedding methods (random walks, negative sampling, edge sampling).
package alias

import "math/rand/v2"

// Table is Walker's alias table: O(n) construction, O(1) draws from a
// discrete distribution proportional to non-negative weights.
type Table struct {
	prob  []float64
	alias []int32
}

// New builds a table for weights (not all zero, none negative).
func New(weights []float64) *Table {
	n := len(weights)
	a := &Table{prob: make([]float64, n), alias: make([]int32, n)}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	small := make([]int32, 0, n)
	large := make([]int32, 0, n)
	for i, w := range weights {
		a.prob[i] = w * float64(n) / sum
		if a.prob[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		a.alias[s] = l
		a.prob[l] += a.prob[s] - 1
		if a.prob[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// Leftovers are 1 up to rounding.
	for _, i := range large {
		a.prob[i] = 1
	}
	for _, i := range small {
		a.prob[i] = 1
	}
	return a
}

// Len is the number of outcomes.
func (a *Table) Len() int { return len(a.prob) }

// Sample draws an outcome index.
func (a *Table) Sample(r *rand.Rand) int {
	i := r.IntN(len(a.prob))
	if r.Float64() < a.prob[i] {
		return i
	}
	return int(a.alias[i])
}
