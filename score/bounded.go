package score

import (
	"fmt"
	"math"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
)

// Bounded is the kind of an external score known to lie in a declared range
// [lo, hi]: embedding methods with a logistic link classifier, or scores
// supplied by the user. It has no public part (s_pub = 0).
const Bounded Kind = numKinds

// PairFunc scores one pair; it must be safe for concurrent use.
type PairFunc func(u, v int32) float64

// NewBounded prepares a scorer for an external score fn with values in
// [lo, hi]. Scores are reported shifted by -lo, so they lie in [0, hi-lo]:
// S_max = hi - lo and, since any score confined to an interval of that
// width can change by at most its width between any two graphs,
// Delta_s = hi - lo (privacy-model §4, last row). A value outside [lo, hi]
// (or NaN) is clamped into the range and counted; Clamped reports it, and
// callers that read user data should validate the range themselves first.
// name labels the score in outputs.
func NewBounded(g *graph.Graph, p *protect.Set, name string, lo, hi float64, fn PairFunc) (*Scorer, error) {
	if g == nil {
		return nil, fmt.Errorf("score: nil graph")
	}
	if fn == nil {
		return nil, fmt.Errorf("score: nil pair function")
	}
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("score: invalid range [%v, %v] for %s (need finite lo < hi)", lo, hi, name)
	}
	n := g.N()
	if p == nil {
		p = protect.Empty(n)
	}
	if p.N() != n {
		return nil, fmt.Errorf("score: protection set has %d nodes, graph has %d", p.N(), n)
	}
	s := &Scorer{g: g, p: p, kind: Bounded, n: n, off: g.Off, name: name, lo: lo, hi: hi, fn: fn}
	s.split()
	s.deltaS = make([]float64, n)
	for u := range s.deltaS {
		s.deltaS[u] = hi - lo
	}
	return s, nil
}

// Name is the score's name: the triad kind, or the name given to NewBounded.
func (s *Scorer) Name() string {
	if s.kind == Bounded {
		return s.name
	}
	return s.kind.String()
}

// eval is the shifted, clamped external score of a pair.
func (s *Scorer) eval(u, v int32) float64 {
	x := s.fn(u, v)
	switch {
	case x >= s.lo && x <= s.hi:
		return x - s.lo
	case x > s.hi:
		return s.hi - s.lo
	}
	return 0 // below the range or NaN
}

// bounded lists every candidate with its external score.
func (w *Worker) bounded(u int32, r *Result) {
	s := w.s
	grow(r, s.n)
	stamp, gen := w.stamp, w.gen
	k := 0
	for v := range s.n {
		if stamp[v] == gen {
			continue
		}
		x := s.eval(u, int32(v))
		r.Cands[k], r.S[k], r.Pub[k] = int32(v), x, 0
		w.dense[v] = x
		k++
	}
	r.Cands, r.S, r.Pub = r.Cands[:k], r.S[:k], r.Pub[:k]
}
