package train

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dplp/dplp/internal/par"
)

// Query is one query node's training (or held-out) data: base scores of
// its positive and negative candidate pairs, and the invariant per-query
// bounds. Scores must lie in [0, SMax] (a relative slack of 1e-9 is
// clamped); x = s / SMax.
type Query struct {
	SMax   float64   // invariant upper bound S_max(u) > 0
	DeltaS float64   // base-score sensitivity Delta_s(u) >= 0
	Pos    []float64 // scores s(u, v) of positive pairs
	Neg    []float64 // scores of negative pairs
	PubPos []float64 // public scores s_pub of the same pairs (dplp-pub only: it
	PubNeg []float64 // ranks by them exactly and trains f on ties of s_pub)
}

// prepQuery is a query reduced to distinct x values: the transform is
// evaluated once per distinct value and gradients are accumulated per
// distinct value.
type prepQuery struct {
	dx         float64   // DeltaS/SMax; 0 means nothing can move (exact top-K)
	xs         []float64 // distinct x, ascending
	pos, neg   []int32   // candidate -> index into xs
	xp         []float64 // distinct public x (dplp-pub), exact: never quantised
	ppos, pneg []int32
	groups     []pubGroup // dplp-pub: groups of equal public x with a positive and a negative
}

// pubGroup lists the positives and negatives (indices into pos, neg) that
// share one public x.
type pubGroup struct{ pos, neg []int32 }

func (q *prepQuery) pairs() float64 {
	if q.xp != nil {
		var n float64
		for _, g := range q.groups {
			n += float64(len(g.pos)) * float64(len(g.neg))
		}
		return n
	}
	return float64(len(q.pos)) * float64(len(q.neg))
}

// prepare validates and reduces queries in parallel (par.Run). what names
// the set in errors; the error is the lowest-numbered bad query's.
func prepare(ctx context.Context, qs []Query, pub bool, quantize int, what string) ([]prepQuery, error) {
	out := make([]prepQuery, len(qs))
	err := par.Run(ctx, len(qs), par.Options{}, func(int) *[]float64 { return new([]float64) }, func(buf *[]float64, i int) error {
		var err error
		if out[i], *buf, err = prepOne(&qs[i], pub, quantize, *buf); err != nil {
			return fmt.Errorf("train: %s query %d: %w", what, i, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func prepOne(q *Query, pub bool, quantize int, buf []float64) (prepQuery, []float64, error) {
	var p prepQuery
	if !(q.SMax > 0) || math.IsInf(q.SMax, 0) {
		return p, buf, fmt.Errorf("SMax = %v, want positive and finite", q.SMax)
	}
	if !(q.DeltaS >= 0) || math.IsInf(q.DeltaS, 0) {
		return p, buf, fmt.Errorf("DeltaS = %v, want >= 0 and finite", q.DeltaS)
	}
	p.dx = q.DeltaS / q.SMax
	var err error
	if p.xs, p.pos, p.neg, buf, err = distinct(q.Pos, q.Neg, q.SMax, quantize, buf); err != nil {
		return p, buf, err
	}
	if pub {
		if len(q.PubPos) != len(q.Pos) || len(q.PubNeg) != len(q.Neg) {
			return p, buf, fmt.Errorf("public scores (%d, %d) do not match pairs (%d, %d)",
				len(q.PubPos), len(q.PubNeg), len(q.Pos), len(q.Neg))
		}
		// Public groups are exact ties of s_pub, as in the release: no
		// quantisation here.
		if p.xp, p.ppos, p.pneg, buf, err = distinct(q.PubPos, q.PubNeg, q.SMax, 0, buf); err != nil {
			return p, buf, fmt.Errorf("public %w", err)
		}
		byGroup := make([]pubGroup, len(p.xp))
		for i, g := range p.ppos {
			byGroup[g].pos = append(byGroup[g].pos, int32(i))
		}
		for i, g := range p.pneg {
			byGroup[g].neg = append(byGroup[g].neg, int32(i))
		}
		for _, g := range byGroup {
			if len(g.pos) > 0 && len(g.neg) > 0 {
				p.groups = append(p.groups, g)
			}
		}
	}
	return p, buf, nil
}

// distinct maps scores to x = s/sMax, optionally snapped to a grid, and
// returns the distinct values with each candidate's index.
func distinct(pos, neg []float64, sMax float64, quantize int, buf []float64) ([]float64, []int32, []int32, []float64, error) {
	toX := func(s float64) (float64, error) {
		if !(s >= -1e-9*sMax && s <= sMax*(1+1e-9)) {
			return 0, fmt.Errorf("score %v outside [0, SMax = %v]", s, sMax)
		}
		x := min(max(s/sMax, 0), 1)
		if quantize > 1 {
			x = math.Round(x*float64(quantize-1)) / float64(quantize-1)
		}
		return x, nil
	}
	buf = buf[:0]
	for _, list := range [2][]float64{pos, neg} {
		for _, s := range list {
			x, err := toX(s)
			if err != nil {
				return nil, nil, nil, buf, err
			}
			buf = append(buf, x)
		}
	}
	xs := slices.Clone(buf)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	xs = slices.Clip(xs)
	idx := func(list []float64, off int) []int32 {
		out := make([]int32, len(list))
		for i := range list {
			out[i] = int32(sort.SearchFloat64s(xs, buf[off+i]))
		}
		return out
	}
	return xs, idx(pos, 0), idx(neg, len(pos)), buf, nil
}
