package mech

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// minExpected is the expected count below which cells are pooled.
const minExpected = 5

// ChiSquare is Pearson's goodness-of-fit test of observed counts against
// expected weights (probabilities or counts; they are rescaled to the
// observed total). Cells with an expected count below 5 are pooled into one
// cell so that the chi-square approximation holds. An observation in a cell
// of expected weight 0 gives stat = +Inf and pValue = 0. df is the number of
// (pooled) cells minus one; with df < 1 the test is vacuous and pValue = 1.
// Mismatched lengths, negative or non-finite weights, negative counts or a
// zero total give (NaN, 0, NaN).
func ChiSquare(observed []int, expected []float64) (stat float64, df int, pValue float64) {
	bad := func() (float64, int, float64) { return math.NaN(), 0, math.NaN() }
	if len(observed) != len(expected) {
		return bad()
	}
	total, wsum := 0.0, 0.0
	for i, o := range observed {
		e := expected[i]
		if o < 0 || !(e >= 0) || math.IsInf(e, 0) {
			return bad()
		}
		total += float64(o)
		wsum += e
	}
	if total == 0 || wsum == 0 {
		return bad()
	}
	cells := 0
	var poolO, poolE float64
	for i, o := range observed {
		e := expected[i] * total / wsum
		if e == 0 {
			if o > 0 {
				return math.Inf(1), max(cells, 1), 0
			}
			continue
		}
		if e < minExpected {
			poolO += float64(o)
			poolE += e
			continue
		}
		d := float64(o) - e
		stat += d * d / e
		cells++
	}
	if poolE > 0 {
		d := poolO - poolE
		stat += d * d / poolE
		cells++
	}
	df = cells - 1
	if df < 1 {
		return stat, 0, 1
	}
	return stat, df, distuv.ChiSquared{K: float64(df)}.Survival(stat)
}
