package attack

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the confidence level of every interval and of the empirical
// lower bound: 95%.
const Confidence = 0.95

// ClopperPearson returns the exact (Clopper-Pearson) two-sided interval for
// a binomial proportion with x successes in n trials at the given
// confidence level (for example 0.95): lo is the alpha/2 quantile of
// Beta(x, n-x+1) (0 when x = 0) and hi the 1-alpha/2 quantile of
// Beta(x+1, n-x) (1 when x = n), alpha = 1-level. Each endpoint is also a
// one-sided bound at level 1-alpha/2. n = 0 gives [0, 1].
func ClopperPearson(x, n int, level float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	x = min(max(x, 0), n)
	a := (1 - level) / 2
	lo, hi = 0, 1
	if x > 0 {
		lo = distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(a)
	}
	if x < n {
		hi = distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - a)
	}
	return lo, hi
}

// EpsLowerBound is the empirical lower bound on epsilon of a distinguishing
// test with tp true positives among n1 trials with secret 1 and fp false
// positives among n0 trials with secret 0 (the construction of Jagielski et
// al. 2020 and Nasr et al. 2021 with delta = 0):
//
//	eps_lb = max(0, ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo)))
//
// where TPR_lo and FPR_hi are one-sided Clopper-Pearson bounds, each at
// level 1 - (1-level)/2 (the endpoints of the two-sided intervals). Any
// eps-DP mechanism satisfies TPR <= e^eps FPR and 1-FPR <= e^eps (1-TPR) for
// every test; both bounds hold simultaneously with probability at least
// level (union bound), and on that event both logarithms are below the
// true eps (the lower bound of 1-FPR is 1-FPR_hi, the upper bound of 1-TPR
// is 1-TPR_lo). So eps_lb <= eps with probability >= level: a value above a
// mechanism's claim refutes the claim at that confidence.
func EpsLowerBound(tp, n1, fp, n0 int, level float64) float64 {
	if n1 <= 0 || n0 <= 0 {
		return 0
	}
	tprLo, _ := ClopperPearson(tp, n1, level)
	_, fprHi := ClopperPearson(fp, n0, level)
	best := 0.0
	if tprLo > 0 && fprHi > 0 {
		best = math.Max(best, math.Log(tprLo/fprHi))
	}
	if fprHi < 1 && tprLo < 1 {
		best = math.Max(best, math.Log((1-fprHi)/(1-tprLo)))
	}
	return best
}
