package pipeline

import (
	"math"
	"testing"

	"github.com/dplp/dplp/privunit"
)

// A charge's ledger record carries its party-unit cost: the charge's own
// when it has one; else the cost for a party-unit (or per-pick) charge,
// unbounded for a pair-unit one that costs something, 0 for a free one.
func TestChargeReleasePartyCost(t *testing.T) {
	for _, tc := range []struct {
		unit string
		cost float64
		want float64
		u    privunit.Unit
	}{
		{"", 0.6, 0.6, privunit.Party},
		{"party", 1, 1, privunit.Party},
		{"pair", 1, math.Inf(1), privunit.Pair},
		{"pair", 0, 0, privunit.Pair},
	} {
		c := Charge{User: "u", Model: "m", K: 3, Cost: tc.cost, Rho: tc.cost * tc.cost / 2, Unit: tc.unit}
		r, err := c.Release()
		if err != nil || r.Unit != tc.u || r.PartyCost != tc.want {
			t.Errorf("unit %q cost %v: unit %v party cost %v %v, want %v", tc.unit, tc.cost, r.Unit, r.PartyCost, err, tc.want)
		}
	}
	// A charge that carries its party cost (pair-unit lists with evidence
	// cn) records it.
	pc := 3.5
	c := Charge{User: "u", Model: "m", K: 3, Cost: 1, Rho: 0.5, Unit: "pair", PartyCost: &pc}
	if r, err := c.Release(); err != nil || r.PartyCost != 3.5 {
		t.Errorf("carried party cost: %v %v, want 3.5", r.PartyCost, err)
	}
}
