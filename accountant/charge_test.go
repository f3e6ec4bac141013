package accountant

import (
	"math"
	"testing"
)

func TestCharges(t *testing.T) {
	for _, c := range []struct {
		name string
		got  Charge
		want Charge
	}{
		{"30 picks at 0.1", PerPick(0.1, 30), Charge{3, 30 * 0.01 / 8}},
		{"no picks", PerPick(0.5, 0), Charge{}},
		{"one pick", PerPick(2, 1), Charge{2, 0.5}},
		{"list at 1", PureList(1), Charge{1, 0.5}},
		{"list at 0", PureList(0), Charge{}},
	} {
		if math.Abs(c.got.Eps-c.want.Eps) > 1e-12 || math.Abs(c.got.Rho-c.want.Rho) > 1e-12 {
			t.Errorf("%s: %+v, want %+v", c.name, c.got, c.want)
		}
	}
	// A per-pick list agrees with Release's accounting of one list.
	r := Release{Lists: 1, K: 7, EpsP: 0.3}
	if c := PerPick(0.3, 7); math.Abs(c.Eps-r.PureEps()) > 1e-12 || math.Abs(c.Rho-r.Rho()) > 1e-12 {
		t.Errorf("PerPick %+v disagrees with Release %v, %v", c, r.PureEps(), r.Rho())
	}
}
