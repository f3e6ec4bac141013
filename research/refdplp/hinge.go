package refdplp

import (
	"slices"
	"sort"
)

// hingeScratch holds reusable buffers.
type hingeScratch struct {
	y, c         []float64
	sp, sn, pref []float64
	g            [][]float64 // per-goroutine gradients (linLoss)
}

// hinge returns L = sum_{i in pos, k in neg} relu(margin + yn_k - yp_i), the
// authors' loss for one query, and writes dL/dyp into cp and dL/dyn into cn
// (a pair is active when margin + yn_k - yp_i > 0; relu'(0) = 0 as in
// torch). O((P + N) log(P + N)).
func hinge(yp, yn []float64, margin float64, cp, cn []float64, sc *hingeScratch) float64 {
	sc.sp = append(sc.sp[:0], yp...)
	slices.Sort(sc.sp)
	sc.sn = sc.sn[:0]
	for _, v := range yn {
		sc.sn = append(sc.sn, margin+v)
	}
	slices.Sort(sc.sn)
	// Prefix sums of the sorted positives.
	sc.pref = append(sc.pref[:0], 0)
	for _, v := range sc.sp {
		sc.pref = append(sc.pref, sc.pref[len(sc.pref)-1]+v)
	}
	var loss float64
	for k, v := range yn {
		t := margin + v
		// Positives with yp < t are active against this negative.
		a := sort.SearchFloat64s(sc.sp, t) // first index with sp >= t
		cn[k] = float64(a)
		if a > 0 {
			loss += float64(a)*t - sc.pref[a]
		}
	}
	for i, v := range yp {
		// Negatives with margin + yn > yp are active against this positive.
		b := sort.Search(len(sc.sn), func(j int) bool { return sc.sn[j] > v })
		cp[i] = -float64(len(sc.sn) - b)
	}
	return loss
}
