package refdplp

import (
	"context"
	"math"
	"runtime"

	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/transform"
)

// exponents are the authors' 170 feature exponents 1/(0.30 + 0.01 j).
var exponents = transform.ReferenceExponents()

// features writes the 170 power features s^p_j of a normalised score s >= 0
// into dst (0 for s <= 0, as 0^p = 0).
func features(s float64, dst []float64) {
	if !(s > 0) {
		clear(dst[:NumFeatures])
		return
	}
	ls := math.Log(s)
	for j, p := range exponents {
		dst[j] = math.Exp(p * ls)
	}
}

// LinModel is DPLP-Lin: nu(x) = sum_j exp(0.01 beta_j) x_j + b.
type LinModel struct {
	Beta []float64 `json:"beta"` // raw parameters, NumFeatures of them
	B    float64   `json:"b"`
}

// NewLin is the authors' initialisation: beta_0 = 0, beta_j = -100 for
// j >= 1, b = 0.
func NewLin() *LinModel {
	m := &LinModel{Beta: make([]float64, NumFeatures)}
	for j := 1; j < NumFeatures; j++ {
		m.Beta[j] = initBetaOther
	}
	return m
}

// Clone returns a deep copy.
func (m *LinModel) Clone() *LinModel {
	return &LinModel{Beta: append([]float64(nil), m.Beta...), B: m.B}
}

// Weights writes exp(0.01 beta_j) into dst (len NumFeatures) and returns it.
func (m *LinModel) Weights(dst []float64) []float64 {
	dst = dst[:0]
	for _, b := range m.Beta {
		dst = append(dst, math.Exp(tau*b))
	}
	return dst
}

// BetaSum is sum_j beta_j, the authors' DPLP noise multiplier.
func (m *LinModel) BetaSum() float64 {
	var s float64
	for _, b := range m.Beta {
		s += b
	}
	return s
}

// nu is the noise-free nu of features x with weights w.
func nuOf(w, x []float64, b float64) float64 {
	s := b
	for j, xj := range x[:len(w)] {
		s += w[j] * xj
	}
	return s
}

// Nu is the noise-free DPLP-Lin output at normalised score s.
func (m *LinModel) Nu(s float64) float64 {
	var x [NumFeatures]float64
	features(s, x[:])
	w := m.Weights(make([]float64, 0, NumFeatures))
	return nuOf(w, x[:], m.B)
}

// linQuery is one query's DPLP-Lin training pairs: noisy features
// x_pj + n_pj (float32, pair-major), positives first.
type linQuery struct {
	nPos, nNeg int
	x          []float32
}

// linLoss evaluates the summed hinge loss of the queries qs at m and, when
// grad is non-nil (len NumFeatures+1: beta, then b; zero on entry), writes
// its gradient. Large steps split the rows over GOMAXPROCS goroutines (the
// result does not depend on their number beyond the order of additions).
func linLoss(m *LinModel, w []float64, qs []*linQuery, margin float64, grad []float64, sc *hingeScratch) float64 {
	var rows int
	for _, q := range qs {
		rows += q.nPos + q.nNeg
	}
	sc.y, sc.c = grow(sc.y, rows), grow(sc.c, rows)
	nw := 1
	if rows >= parallelRows {
		nw = min(runtime.GOMAXPROCS(0), rows/(parallelRows/2))
	}
	// forEach calls fn(q, p, i) for every row p of query q, i its index in
	// sc.y, over nw goroutines by contiguous blocks; fn gets the worker id.
	forEach := func(fn func(wk int, q *linQuery, p, i int)) {
		block := func(wk, lo, hi int) {
			i := 0
			for _, q := range qs {
				n := q.nPos + q.nNeg
				for p := max(lo-i, 0); p < min(hi-i, n); p++ {
					fn(wk, q, p, i+p)
				}
				i += n
			}
		}
		// One item per worker: block wk is the rows [wk rows/nw, (wk+1)
		// rows/nw), and its scratch is sc.g[wk], whichever goroutine runs it.
		_ = par.Run(context.Background(), nw, par.Options{Workers: nw}, func(int) struct{} { return struct{}{} },
			func(_ struct{}, wk int) error {
				block(wk, wk*rows/nw, (wk+1)*rows/nw)
				return nil
			})
	}
	forEach(func(_ int, q *linQuery, p, i int) {
		sc.y[i] = m.B + dot32(w, q.x[p*NumFeatures:(p+1)*NumFeatures])
	})
	var loss float64
	i := 0
	for _, q := range qs {
		n := q.nPos + q.nNeg
		loss += hinge(sc.y[i:i+q.nPos], sc.y[i+q.nPos:i+n], margin, sc.c[i:i+q.nPos], sc.c[i+q.nPos:i+n], sc)
		i += n
	}
	if grad == nil {
		return loss
	}
	if len(sc.g) < nw {
		sc.g = make([][]float64, nw)
	}
	for wk := range nw {
		sc.g[wk] = grow(sc.g[wk], NumFeatures+1)
		clear(sc.g[wk])
	}
	forEach(func(wk int, q *linQuery, p, i int) {
		if c := sc.c[i]; c != 0 {
			g := sc.g[wk]
			axpy32(g, c, q.x[p*NumFeatures:(p+1)*NumFeatures])
			g[NumFeatures] += c
		}
	})
	for wk := range nw {
		for j, v := range sc.g[wk] {
			grad[j] += v
		}
	}
	// d nu / d beta_j = tau w_j x_j.
	for j := range NumFeatures {
		grad[j] *= tau * w[j]
	}
	return loss
}

// parallelRows is the step size (rows) from which linLoss splits rows over
// goroutines.
const parallelRows = 4096

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// dot32 is sum_j w_j x_j (len(x) == NumFeatures), with four partial sums.
func dot32(w []float64, x []float32) float64 {
	w = w[:NumFeatures]
	x = x[:NumFeatures]
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= NumFeatures; j += 4 {
		s0 += w[j] * float64(x[j])
		s1 += w[j+1] * float64(x[j+1])
		s2 += w[j+2] * float64(x[j+2])
		s3 += w[j+3] * float64(x[j+3])
	}
	for ; j < NumFeatures; j++ {
		s0 += w[j] * float64(x[j])
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy32 adds c x to g (len(x) == NumFeatures).
func axpy32(g []float64, c float64, x []float32) {
	g = g[:NumFeatures]
	x = x[:NumFeatures]
	for j := range NumFeatures {
		g[j] += c * float64(x[j])
	}
}
