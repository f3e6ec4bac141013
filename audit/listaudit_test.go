package audit

import (
	"testing"

	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// TestListAudit: dplp-list and perturb-once pass the exact audit under both
// units on random small graphs, for every triad score; halved noise fails.
func TestListAudit(t *testing.T) {
	rng := randx.Seeded(11)
	units := []privunit.Unit{privunit.Pair, privunit.Party}
	var failedHalf, failedRR, failedGauss [2]bool
	var tightGauss bool
	for trial := range 6 {
		g, p, err := RandomListInstance(5, 8, rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, unit := range units {
			for _, kind := range score.Kinds() {
				gauss := list.Combine{W: 1, Post: true, Rho: 1, A: 0.3, Gauss: true}
				for _, c := range []list.Combine{{W: 1, T: 0.5}, {W: 1, Post: true, Rho: 1, A: 0.3}, {}, gauss} {
					rep, err := AuditList(g, p, kind, unit, 0.7, c, 1)
					if err != nil {
						t.Fatal(err)
					}
					if !rep.Passed() || rep.Checks == 0 {
						t.Fatalf("trial %d %v %v %+v: %+v", trial, unit, kind, c, rep)
					}
					if c.Gauss && unit == privunit.Pair && kind == score.CN && rep.WorstRatio > 1-1e-9 {
						tightGauss = true // one CN coordinate moves by L2 = 1: rho exactly as charged
					}
				}
				hg, err := AuditList(g, p, kind, unit, 0.7, gauss, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				failedGauss[unit] = failedGauss[unit] || !hg.Passed()
				half, err := AuditList(g, p, kind, unit, 0.7, list.Combine{W: 1}, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				failedHalf[unit] = failedHalf[unit] || !half.Passed()
			}
			rep, err := AuditPerturbOnce(g, p, unit, 0.9, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Passed() || rep.Checks == 0 {
				t.Fatalf("perturb-once %v: %+v", unit, rep)
			}
			if unit == privunit.Pair && rep.WorstRatio < 1-1e-9 {
				t.Errorf("perturb-once pair unit should be tight, worst ratio %v", rep.WorstRatio)
			}
			bad, err := AuditPerturbOnce(g, p, unit, 0.9, 2)
			if err != nil {
				t.Fatal(err)
			}
			failedRR[unit] = failedRR[unit] || !bad.Passed()
		}
	}
	for _, unit := range units {
		if !failedHalf[unit] {
			t.Errorf("%v: halved Laplace noise was not caught", unit)
		}
		if !failedGauss[unit] {
			t.Errorf("%v: halved Gaussian noise was not caught", unit)
		}
		if !failedRR[unit] && unit == privunit.Pair {
			t.Errorf("%v: under-noised randomised response was not caught", unit)
		}
	}
	if !tightGauss {
		t.Error("the Gaussian pair-unit CN release was never tight (rho ratio 1): the instances do not exercise the bound")
	}
}

// TestListAuditGaussPairBoundUnderParty: the Gaussian release calibrated
// to the pair unit's L2 fails the audit against party-unit neighbours (a
// party moves several coordinates at once): the negative control of the
// party unit's L2 bound.
func TestListAuditGaussPairBoundUnderParty(t *testing.T) {
	rng := randx.Seeded(12)
	caught := false
	for range 12 {
		g, p, err := RandomListInstance(6, 8, rng)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := AuditListNeighbours(g, p, score.CN, privunit.Pair, privunit.Party, 0.7, list.Combine{W: 1, Post: true, Rho: 1, A: 0.3, Gauss: true}, 1)
		if err != nil {
			t.Fatal(err)
		}
		caught = caught || !rep.Passed()
	}
	if !caught {
		t.Error("pair-unit Gaussian calibration against party neighbours was not caught")
	}
}

// TestListAuditErrors: bad parameters are errors.
func TestListAuditErrors(t *testing.T) {
	g, p, err := RandomListInstance(5, 5, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AuditList(g, p, score.CN, privunit.Pair, 0, list.Combine{W: 1}, 1); err == nil {
		t.Error("eps 0 accepted")
	}
	if _, err := AuditPerturbOnce(g, p, privunit.Pair, 1, 0); err == nil {
		t.Error("strength 0 accepted")
	}
}
