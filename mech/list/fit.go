package list

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/ranking"
)

// TrainQuery is one training query for Fit: explicit candidates with
// public score, evidence and label, the number of positives among them, and
// the invariant l1 bound of the evidence vector. Training data must be
// invariant (privacy-model §5, §12): scores on the public training graph
// with pseudo-protected edges, labels from held-out public pairs.
type TrainQuery struct {
	Pub, Evid []float64
	Label     []bool
	L1        float64
	L2        float64   // the l2 bound (Gaussian releases, Combine.Gauss)
	Count     []float64 // as Query.Count
	MaxEvid   int       // as Query.MaxEvid
}

// Grid is the set of combinations Fit compares. W = 0 (public-only) is
// always compared.
type Grid struct {
	W, T []float64 // threshold family
	// Posterior family: weights PW, prior scales Rho and offsets A (none
	// when any list is empty).
	PW, Rho, A []float64
	// Default, when set, is the combination used unless the training data
	// show it clearly worse than public-only (mean paired AUC@K difference
	// below -SafetyZ standard errors), in which case Fit returns W = 0;
	// the other combinations are then only reported. It must be one of the
	// grid's combinations.
	Default *Combine
	// Gauss fits for the Gaussian release (Combine.Gauss): noise
	// N(0, (L2/eps)^2) in the training draws and every combination
	// Gaussian. Only the posterior family is allowed (T must be empty).
	Gauss bool
}

// Gaussian returns g for the Gaussian release: Gauss set, the default (if
// any) a Gaussian combination, the threshold family dropped.
func (g Grid) Gaussian() Grid {
	g.Gauss, g.W, g.T = true, nil, nil
	if g.Default != nil {
		d := *g.Default
		d.Gauss = true
		g.Default = &d
	}
	return g
}

// DefaultPosterior is the dplp-list default: the posterior family with
// weight 1, prior scale rho (invariant private evidence per public wedge)
// and offset A = 0.3, vetoed only by clear harm on the training data. With
// W = 1 and CN it ranks by the posterior mean of the non-private score
// s = s_pub + e. A is the prior's evidence for a candidate without public
// wedges, in wedges: A = 1 over-boosts the many such candidates of sparse
// graphs at low eps (yeast at eps 1 lost 0.011 AUC@30), A <= 0.3 does not.
func DefaultPosterior(rho float64) Grid {
	c := Combine{W: 1, Post: true, Rho: rho, A: 0.3}
	return Grid{PW: []float64{1}, Rho: []float64{rho}, A: []float64{0.3, 1}, Default: &c}
}

// DefaultGrid compares weights 1/8..8 of the thresholded evidence against
// the public score and thresholds T of 0 to 1.5 (in units of
// b ln|C|: T = 1 keeps the expected number of zero-evidence candidates
// above the threshold at about 1/2).
//
// The posterior family is compared at weights 1/2, 1, 2, with prior scales
// rho x {1/2, 1, 2} and offsets A in {0.1, 0.3, 1}; rho is the caller's
// invariant estimate of private evidence per public wedge (for example
// |marks| / |public edges|); rho <= 0 leaves the family out.
func DefaultGrid(rho float64) Grid {
	g := Grid{W: []float64{0.125, 0.25, 0.5, 1, 2, 4, 8}, T: []float64{0, 0.25, 0.5, 0.75, 1, 1.5}}
	if rho > 0 && !math.IsInf(rho, 0) {
		g.PW = []float64{0.5, 1, 2}
		g.Rho = []float64{rho / 2, rho, 2 * rho}
		g.A = []float64{0.1, 0.3, 1}
	}
	return g
}

// FitReport describes a Fit: the mean training AUC@K of the chosen
// combination and of public-only (W = 0), over queries and noise draws.
type FitReport struct {
	Chosen     Combine `json:"chosen"`
	AUC        float64 `json:"auc"`
	PublicAUC  float64 `json:"public_auc"`
	Queries    int     `json:"queries"`
	Replicates int     `json:"replicates"`
	// Top is the combination with the best mean whether or not it passed
	// the safety test, with its mean paired gain over public-only and the
	// gain's standard error.
	Top     Combine `json:"top"`
	TopGain float64 `json:"top_gain"`
	TopSE   float64 `json:"top_se"`
}

// MinGain is the training gain over public-only (mean AUC@K) below which
// Fit keeps W = 0: a combination must beat public-only clearly on the
// training data to be used at all.
const MinGain = 0.001

// SafetyZ is how many standard errors of the paired (per query and noise
// draw) AUC@K difference a combination's mean gain over public-only must
// exceed to be chosen; it guards against picking, among the grid's many
// combinations, one that won by noise.
const SafetyZ = 1

// Fit chooses the combination for eps and list length k that maximises the
// mean AUC@K over the training queries, each released reps times with
// fresh Laplace noise at the scale L1 / eps, or Gaussian noise of standard
// deviation L2 / eps when g.Gauss (common random numbers across
// the grid). It keeps W = 0 unless the best combination beats it by
// MinGain and by SafetyZ standard errors. All randomness comes from rng; the result is a function of the
// training data, eps, k, the grid and the generator only.
func Fit(qs []TrainQuery, eps float64, k int, g Grid, reps int, rng *rand.Rand) (Combine, FitReport, error) {
	if !(eps > 0) || math.IsInf(eps, 0) || k < 1 || reps < 1 {
		return Combine{}, FitReport{}, fmt.Errorf("list: fit needs eps > 0, k >= 1, reps >= 1 (got %v, %d, %d)", eps, k, reps)
	}
	if g.Gauss && len(g.T) > 0 {
		return Combine{}, FitReport{}, errors.New("list: a Gaussian fit has no threshold family (Grid.T must be empty)")
	}
	// Evidence transforms (the bonus without W), then weights: combos are
	// W = 0 followed by every (transform, weight).
	type transform struct {
		c  Combine // with W = 1
		ws []float64
	}
	var trs []transform
	for _, t := range g.T {
		trs = append(trs, transform{Combine{W: 1, T: t}, g.W})
	}
	for _, r := range g.Rho {
		for _, a := range g.A {
			trs = append(trs, transform{Combine{W: 1, Post: true, Rho: r, A: a, Gauss: g.Gauss}, g.PW})
		}
	}
	combos := []Combine{{}}
	for _, tr := range trs {
		for _, w := range tr.ws {
			c := tr.c
			c.W = w
			if err := c.Validate(); err != nil {
				return Combine{}, FitReport{}, err
			}
			if w > 0 {
				combos = append(combos, c)
			}
		}
	}
	sum := make([]float64, len(combos))
	dsum := make([]float64, len(combos)) // paired differences to public-only
	dsq := make([]float64, len(combos))
	aucs := make([]float64, len(combos))
	nq := 0
	var noise, bonus, score []float64
	var keys []uint64
	ps := make([]postScale, len(trs))
	var idx, all []int
	var rel []bool
	eval := func(q *TrainQuery, pos int, s []float64) float64 {
		idx = topK(s, keys, k, idx, &all)
		rel = rel[:0]
		for _, i := range idx {
			rel = append(rel, q.Label[i])
		}
		return ranking.Evaluate(rel, pos, k).AUC
	}
	for qi := range qs {
		q := &qs[qi]
		if len(q.Pub) != len(q.Evid) || len(q.Pub) != len(q.Label) || (q.Count != nil && len(q.Count) != len(q.Pub)) {
			return Combine{}, FitReport{}, errors.New("list: training query with mismatched lengths")
		}
		pos := 0
		for _, l := range q.Label {
			if l {
				pos++
			}
		}
		if pos == 0 || pos == len(q.Label) {
			continue
		}
		nq++
		n := len(q.Pub)
		b := Scale(Combine{Gauss: g.Gauss}.Bound(q.L1, q.L2), eps)
		qq := Query{Pub: q.Pub, Evid: q.Evid, Count: q.Count, MaxEvid: q.MaxEvid}
		mo := qq.meanOmega()
		kmax := q.MaxEvid
		if kmax <= 0 {
			kmax = math.MaxInt32
		}
		for ti := range trs {
			ps[ti].set(b, kmax, g.Gauss) // one cache per transform and query
		}
		for range reps {
			noise, keys = noise[:0], keys[:0]
			for i := range n {
				x := q.Evid[i]
				if b > 0 {
					x += b * drawNoise(rng, g.Gauss)
				}
				noise = append(noise, x)
				keys = append(keys, rng.Uint64())
			}
			aucs[0] = eval(q, pos, q.Pub)
			ci := 1
			for ti, tr := range trs {
				tau := tr.c.Tau(b, n)
				bonus = bonus[:0]
				for i := range n {
					cnt, om := qq.omega(i, mo)
					bonus = append(bonus, tr.c.bonus(noise[i], tau, cnt, om, &ps[ti]))
				}
				for _, w := range tr.ws {
					if w <= 0 {
						continue
					}
					score = score[:0]
					for i := range n {
						score = append(score, q.Pub[i]+w*bonus[i])
					}
					aucs[ci] = eval(q, pos, score)
					ci++
				}
			}
			for ci := range combos {
				sum[ci] += aucs[ci]
				d := aucs[ci] - aucs[0]
				dsum[ci] += d
				dsq[ci] += d * d
			}
		}
	}
	if nq == 0 {
		return Combine{}, FitReport{}, errors.New("list: no training query has both labels")
	}
	den := float64(nq * reps)
	// The best mean among the combinations whose gain over public-only is
	// both at least MinGain and SafetyZ standard errors above 0; with a
	// Default, the default unless it is SafetyZ standard errors below 0.
	best, top := 0, 0
	var topSE float64
	for ci := 1; ci < len(combos); ci++ {
		mean := dsum[ci] / den
		se := math.Sqrt(max(0, dsq[ci]/den-mean*mean) / den)
		if g.Default != nil {
			if combos[ci] == *g.Default && mean+SafetyZ*se >= 0 {
				best = ci
			}
		} else if mean >= MinGain && mean > SafetyZ*se && sum[ci] > sum[best] {
			best = ci
		}
		if sum[ci] > sum[top] {
			top, topSE = ci, se
		}
	}
	if g.Default != nil && best == 0 && g.Default.W > 0 && !slices.Contains(combos, *g.Default) {
		return Combine{}, FitReport{}, fmt.Errorf("list: default %+v is not in the grid", *g.Default)
	}
	rep := FitReport{Chosen: combos[best], AUC: sum[best] / den, PublicAUC: sum[0] / den, Queries: nq, Replicates: reps,
		Top: combos[top], TopGain: (sum[top] - sum[0]) / den, TopSE: topSE}
	return combos[best], rep, nil
}

// topK returns the indices of the k largest scores (ties by key), best
// first, in dst; all is scratch for the candidate indexes.
func topK(score []float64, keys []uint64, k int, dst []int, all *[]int) []int {
	*all = (*all)[:0]
	for i := range score {
		*all = append(*all, i)
	}
	return bestK(*all, k, func(a, b int) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	}, dst)
}

// bestK returns the k first elements of xs in the order cmp (a total order
// on the elements present), sorted, in dst's storage: a sorted window of the
// k best so far, which rejects most elements with one comparison, so a
// release costs O(len(xs)) comparisons plus O(k) per insertion instead of a
// sort of every candidate.
func bestK[T any](xs []T, k int, cmp func(a, b T) int, dst []T) []T {
	dst = dst[:0]
	if k >= len(xs) {
		dst = append(dst, xs...)
		slices.SortFunc(dst, cmp)
		return dst
	}
	for _, x := range xs {
		if len(dst) == k && cmp(x, dst[k-1]) >= 0 {
			continue
		}
		j, _ := slices.BinarySearchFunc(dst, x, cmp)
		if len(dst) < k {
			dst = slices.Insert(dst, j, x)
		} else {
			copy(dst[j+1:], dst[j:k-1])
			dst[j] = x
		}
	}
	return dst
}
