// Package ranking scores released rankings against held-out labels: the
// paper's AUC@K with the authors' exact semantics, the usual top-K
// information-retrieval metrics, full-list ROC-AUC, and mean with a 95%
// confidence interval for aggregating over seeds.
package ranking

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// TopK holds the metrics of one query's released list.
type TopK struct {
	AUC       float64 `json:"auc_at_k"`
	Precision float64 `json:"precision_at_k"`
	Recall    float64 `json:"recall_at_k"`
	NDCG      float64 `json:"ndcg_at_k"`
	MAP       float64 `json:"map_at_k"`
	MRR       float64 `json:"mrr"`
	Hits      float64 `json:"hits_at_k"`
}

// Evaluate scores a released list. rel[i] tells whether the i-th released
// candidate (rank i+1) is a held-out positive; positives is the number of
// positives among all of the query's candidates; k is the list length asked
// for (the list may be shorter when there are fewer candidates).
//
//   - AUC@K (reference-implementation §6): the fraction of (positive,
//     negative) pairs inside the list with the positive ranked higher; a list
//     without positives scores 0, one with positives but no negatives 1.
//   - Precision@K = positives in the list / k (the authors' K; a shorter list
//     cannot reach 1).
//   - Recall@K = positives in the list / positives (0 when there are none).
//   - NDCG@K with binary gains and log2 discounts, ideal = min(positives, k) hits on top.
//   - MAP@K = sum of precision@i at each hit i / min(positives, k).
//   - MRR = 1 / rank of the first positive in the list (0 if none).
//   - Hits@K = 1 if the list holds a positive.
func Evaluate(rel []bool, positives, k int) TopK {
	var m TopK
	var hits, negsAbove int
	var pairsOK float64
	var dcg, ap float64
	for i, r := range rel {
		if r {
			hits++
			// Every negative seen so far is ranked above this positive.
			pairsOK -= float64(negsAbove)
			dcg += 1 / math.Log2(float64(i)+2)
			ap += float64(hits) / float64(i+1)
			if hits == 1 {
				m.MRR = 1 / float64(i+1)
			}
		} else {
			negsAbove++
		}
	}
	negs := len(rel) - hits
	switch {
	case hits == 0:
		m.AUC = 0
	case negs == 0:
		m.AUC = 1
	default:
		pairsOK += float64(hits * negs)
		m.AUC = pairsOK / float64(hits*negs)
	}
	if k > 0 {
		m.Precision = float64(hits) / float64(k)
	}
	if positives > 0 {
		m.Recall = float64(hits) / float64(positives)
		ideal := min(positives, k)
		var idcg float64
		for i := 0; i < ideal; i++ {
			idcg += 1 / math.Log2(float64(i)+2)
		}
		if idcg > 0 {
			m.NDCG = dcg / idcg
		}
		if ideal > 0 {
			m.MAP = ap / float64(ideal)
		}
	}
	if hits > 0 {
		m.Hits = 1
	}
	return m
}

// Add accumulates b into a (for averaging over queries).
func (a *TopK) Add(b TopK) {
	a.AUC += b.AUC
	a.Precision += b.Precision
	a.Recall += b.Recall
	a.NDCG += b.NDCG
	a.MAP += b.MAP
	a.MRR += b.MRR
	a.Hits += b.Hits
}

// Scale multiplies every metric by c.
func (a *TopK) Scale(c float64) {
	a.AUC *= c
	a.Precision *= c
	a.Recall *= c
	a.NDCG *= c
	a.MAP *= c
	a.MRR *= c
	a.Hits *= c
}

// ROCAUC is the full-list ROC-AUC of scores for positives pos against
// negatives neg, ties counting 1/2, in O(n log n). It returns NaN when
// either side is empty. The inputs are not modified.
func ROCAUC(pos, neg []float64) float64 {
	if len(pos) == 0 || len(neg) == 0 {
		return math.NaN()
	}
	p := slices.Clone(pos)
	q := slices.Clone(neg)
	slices.Sort(p)
	slices.Sort(q)
	// For each positive, count negatives strictly below and equal.
	var sum float64
	lo, hi := 0, 0
	for _, x := range p {
		for lo < len(q) && q[lo] < x {
			lo++
		}
		if hi < lo {
			hi = lo
		}
		for hi < len(q) && q[hi] <= x {
			hi++
		}
		sum += float64(lo) + 0.5*float64(hi-lo)
	}
	return sum / (float64(len(p)) * float64(len(q)))
}

// MeanCI returns the mean of xs and the half-width of its 95% confidence
// interval by Student's t (0 for a single value, NaN for none).
func MeanCI(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n == 1 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(float64(n))
}
