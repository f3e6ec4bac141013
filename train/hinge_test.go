package train

import (
	"math"
	"testing"
)

func TestRankerMatchesBinarySearch(t *testing.T) {
	r := rng(21)
	var rk ranker
	for trial := 0; trial < 300; trial++ {
		n := r.IntN(60)
		s := tiedValues(r, n, 6)
		if trial%7 == 0 {
			for i := range s {
				s[i] = 1 // all equal
			}
		}
		if trial%11 == 0 && n > 0 {
			s[0] = -1e300 // extreme range
		}
		sortFloats(s)
		rk.build(s)
		probes := append(tiedValues(r, 50, 6), s...)
		probes = append(probes, math.Inf(1), math.Inf(-1), math.Nextafter(1, 2), math.Nextafter(1, 0))
		for _, v := range probes {
			if a, b := rk.less(v), lowerBound(s, v); a != b {
				t.Fatalf("less(%v) = %d, want %d (s=%v)", v, a, b, s)
			}
			if a, b := rk.lessEq(v), upperBound(s, v); a != b {
				t.Fatalf("lessEq(%v) = %d, want %d (s=%v)", v, a, b, s)
			}
		}
	}
}

func sortFloats(s []float64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
