package experiment

import "math"

// powerTransform is the utility f(s) = (s / S_max(u))^a of the paper's
// Figure 2, released with the exponential mechanism. Dividing by the
// invariant S_max(u) does not change the mechanism (utility and sensitivity
// scale together) but keeps utilities in [0, 1] for any a.
type powerTransform struct{ a float64 }

// Utility is (s/S_max)^a with s clamped to [0, S_max]; 0 when S_max = 0.
func (p powerTransform) Utility(s, _, sMax float64) float64 {
	if !(sMax > 0) {
		return 0
	}
	x := math.Min(math.Max(s/sMax, 0), 1)
	return math.Pow(x, p.a)
}

// Delta is the exact sensitivity of the utility,
//
//	Delta_f = max over x in [0, 1] of h(min(x+dx, 1)) - h(x),  h(x) = x^a,  dx = Delta_s / S_max,
//
// (privacy-model §5; 1 when dx >= 1, 0 when dx = 0). Proof of where the
// maximum is attained, writing g(x) = h(min(x+dx, 1)) - h(x) for dx < 1:
//
//   - On [1-dx, 1], g(x) = 1 - x^a is non-increasing, so its maximum there is
//     g(1-dx) = 1 - (1-dx)^a.
//   - On [0, 1-dx], g(x) = (x+dx)^a - x^a and g'(x) = a((x+dx)^(a-1) - x^(a-1)).
//     For a >= 1, t^(a-1) is non-decreasing, so g' >= 0 and the maximum is
//     g(1-dx) = 1 - (1-dx)^a. For 0 < a < 1, t^(a-1) is decreasing, so
//     g' <= 0 and the maximum is g(0) = dx^a; it also dominates the other
//     piece, because t^a is concave with 0^a = 0, hence subadditive:
//     (1-dx)^a + dx^a >= 1.
//
// So Delta_f = 1 - (1-dx)^a for a >= 1 (attained at x = 1-dx) and dx^a for
// a < 1 (attained at x = 0). The result is inflated by a relative 1e-12 so
// that floating-point rounding of Utility can never exceed it.
func (p powerTransform) Delta(deltaS, sMax float64) float64 {
	if !(sMax > 0) || !(deltaS > 0) {
		return 0
	}
	dx := deltaS / sMax
	if dx >= 1 {
		return 1 + 1e-12
	}
	var d float64
	if p.a >= 1 {
		d = -math.Expm1(p.a * math.Log1p(-dx)) // 1 - (1-dx)^a without cancellation
	} else {
		d = math.Pow(dx, p.a)
	}
	return d * (1 + 1e-12)
}
