package audit

import (
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech/topk"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// topkInstances are random small graphs and the mixed-hub instances.
func topkInstances(t *testing.T) ([]*graph.Graph, []*protect.Set) {
	t.Helper()
	gs, ps, err := MixedHubInstances()
	if err != nil {
		t.Fatal(err)
	}
	rng := randx.Seeded(23)
	for range 6 {
		g, p, err := RandomListInstance(5, 8, rng)
		if err != nil {
			t.Fatal(err)
		}
		gs, ps = append(gs, g), append(ps, p)
	}
	return gs, ps
}

// TestTopKAudit: joint-em and oneshot-topk pass the exact audit under both
// units for every triad score and K = 1..3 (public weight 1 and 10); noise for half the sensitivity
// is caught for CN (hence AA and RA, which release CN's evidence) under
// both units, on the mixed-hub instances under the party unit.
func TestTopKAudit(t *testing.T) {
	gs, ps := topkInstances(t)
	for _, unit := range []privunit.Unit{privunit.Pair, privunit.Party} {
		for _, m := range topk.Mechanisms {
			t.Run(unit.String()+"/"+m.String(), func(t *testing.T) {
				for _, kind := range score.Kinds() {
					var worst float64
					var caught bool
					for i := range gs {
						for k := 1; k <= 3; k++ {
							lambda := float64(1 + 9*(k%2)) // public weight 10 at K = 1, 3
							rep, err := AuditTopK(gs[i], ps[i], kind, unit, m, lambda, 0.7, k, 1)
							if err != nil {
								t.Fatal(err)
							}
							if !rep.Passed() || rep.Checks == 0 {
								t.Fatalf("%v graph %d k %d: %+v", kind, i, k, rep)
							}
							worst = max(worst, rep.WorstRatio)
							half, err := AuditTopK(gs[i], ps[i], kind, unit, m, 1, 0.7, k, 0.5)
							if err != nil {
								t.Fatal(err)
							}
							caught = caught || !half.Passed()
						}
					}
					if kind == score.CN && !caught {
						t.Errorf("%v: half the noise was not caught (worst ratio at full noise %.3f)", kind, worst)
					}
				}
			})
		}
	}
}

// TestTopKAuditErrors: bad parameters are errors.
func TestTopKAuditErrors(t *testing.T) {
	g, p, err := RandomListInstance(5, 5, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lambda, eps, f float64
		k              int
	}{{1, 0, 1, 1}, {1, 1, 0, 1}, {1, 1, 1, 0}, {0.5, 1, 1, 1}} {
		if _, err := AuditTopK(g, p, score.CN, privunit.Pair, topk.JointEM, tc.lambda, tc.eps, tc.k, tc.f); err == nil {
			t.Errorf("%+v accepted", tc)
		}
	}
}
