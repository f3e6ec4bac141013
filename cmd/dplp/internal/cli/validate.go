package cli

import (
	"fmt"
	"github.com/dplp/dplp/accountant"
	"math"
)

// Flag validators. Every float flag goes through one of them, so NaN and
// ±Inf (which strconv.ParseFloat accepts as "nan", "inf", "1e999") are range
// errors naming the flag rather than values that poison a computation.

// checkFrac requires a fraction in [0, 1].
func checkFrac(name string, x float64) error {
	if math.IsNaN(x) || !(x >= 0 && x <= 1) {
		return fmt.Errorf("--%s must be in [0,1], got %v", name, x)
	}
	return nil
}

// checkPos requires a finite number > 0.
func checkPos(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) || !(x > 0) {
		return fmt.Errorf("--%s must be a finite number > 0, got %v", name, x)
	}
	return nil
}

// checkFinite requires a finite number (NaN and ±Inf are errors).
func checkFinite(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("--%s must be a finite number, got %v", name, x)
	}
	return nil
}

// The accepted range of eps_p is accountant's (MinEps, MaxEps): one range
// on every path.
const (
	MinEps = accountant.MinEps
	MaxEps = accountant.MaxEps
)

// checkEps validates eps_p for lists of length k (k <= 0: the cost is not
// checked): eps must lie in [MinEps, MaxEps], and the noise scale 2/eps and
// the list cost k x eps must be finite.
func checkEps(name string, eps float64, k int) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || !(eps >= MinEps && eps <= MaxEps) {
		return fmt.Errorf("--%s must be a number in [%g, %g], got %v", name, MinEps, MaxEps, eps)
	}
	if s := 2 / eps; math.IsInf(s, 0) || math.IsNaN(s) {
		return fmt.Errorf("--%s %v: noise scale 2/eps is not finite", name, eps)
	}
	if k > 0 {
		if c := float64(k) * eps; math.IsInf(c, 0) || math.IsNaN(c) {
			return fmt.Errorf("--%s %v: list cost K x eps = %d x %v is not finite", name, eps, k, eps)
		}
	}
	return nil
}
