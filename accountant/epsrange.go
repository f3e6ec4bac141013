package accountant

import (
	"fmt"
	"math"
)

// The accepted range of a per-pick (or per-list) epsilon, the same on every
// path (library, command line, service, experiments). Below MinEps the noise
// scale 2 Delta / eps swamps any score (at 1e-320, a subnormal, 2/eps is
// +Inf and training divides by it, producing NaN losses); above MaxEps the
// mechanism is effectively non-private and costs such as K x eps (or the
// ledger's sums of them) overflow to +Inf, which JSON cannot carry. 1e-6 and
// 1e6 are many orders of magnitude beyond any meaningful privacy parameter on
// either side, so no sensible run is refused.
const (
	MinEps = 1e-6
	MaxEps = 1e6
)

// CheckEps reports whether eps is usable: a number in [MinEps, MaxEps] whose
// noise scale 2/eps is finite.
func CheckEps(eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || !(eps >= MinEps && eps <= MaxEps) || math.IsInf(2/eps, 0) {
		return fmt.Errorf("eps %v: must be a number in [%g, %g]", eps, MinEps, MaxEps)
	}
	return nil
}
