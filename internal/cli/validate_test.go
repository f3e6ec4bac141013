package cli

import (
	"math"
	"strings"
	"testing"
)

func TestCheckersRejectNaNInf(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	checks := map[string]func(string, float64) error{
		"frac":   checkFrac,
		"pos":    checkPos,
		"finite": checkFinite,
		"eps":    func(n string, x float64) error { return checkEps(n, x, 30) },
	}
	for name, c := range checks {
		for _, x := range []float64{nan, inf, -inf} {
			err := c("some-flag", x)
			if err == nil {
				t.Errorf("%s(%v) accepted", name, x)
				continue
			}
			if !strings.Contains(err.Error(), "--some-flag") {
				t.Errorf("%s(%v): error %q does not name the flag", name, x, err)
			}
		}
	}
	for _, x := range []float64{0, 0.5, 1} {
		if err := checkFrac("f", x); err != nil {
			t.Errorf("checkFrac(%v): %v", x, err)
		}
	}
	for _, x := range []float64{-0.1, 1.1} {
		if checkFrac("f", x) == nil {
			t.Errorf("checkFrac(%v) accepted", x)
		}
	}
	for _, x := range []float64{0, -1, math.SmallestNonzeroFloat64 * -1} {
		if checkPos("p", x) == nil {
			t.Errorf("checkPos(%v) accepted", x)
		}
	}
	if err := checkPos("p", math.MaxFloat64); err != nil {
		t.Errorf("checkPos(MaxFloat64): %v", err)
	}
}

func TestCheckEps(t *testing.T) {
	for _, eps := range []float64{MinEps, 0.1, 1, 10, MaxEps} {
		if err := checkEps("eps", eps, 30); err != nil {
			t.Errorf("checkEps(%v): %v", eps, err)
		}
	}
	// 1e-320 is subnormal: 2/eps = +Inf and training produced NaN losses;
	// 1e308 made K x eps overflow and JSON saving fail.
	for _, eps := range []float64{1e-320, math.SmallestNonzeroFloat64, 1e-7, 0, -0.1, 1e308, 2e6, math.MaxFloat64} {
		err := checkEps("eps", eps, 30)
		if err == nil {
			t.Errorf("checkEps(%v) accepted", eps)
		} else if !strings.Contains(err.Error(), "--eps") {
			t.Errorf("checkEps(%v): %q does not name the flag", eps, err)
		}
	}
}
