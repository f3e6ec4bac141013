package accountant

import (
	"errors"
	"math"
	"testing"
)

// Reference values computed independently with mpmath (40 digits): the
// Canonne-Kamath-Steinke conversion minimised by scan + golden section, the
// classic conversion, and the exact (eps, delta) curve of the Gaussian
// mechanism with the same rho (mu = sqrt(2 rho)), which any valid
// conversion must dominate since that Gaussian is exactly rho-zCDP.
var refs = []struct{ rho, delta, cks, simple, gauss float64 }{
	{0.5, 1e-5, 4.7283869849433139, 5.2985259121880812, 4.3771780956812246},
	{0.01, 1e-6, 0.6216926545596025, 0.7533844377699677, 0.57505518577999729},
	{2, 1e-9, 14.150147553874597, 14.875796157736083, 13.534772219165538},
	{0.0001, 1e-5, 0.045047462087777229, 0.067961404244151119, 0.039990596996428963},
	{0.0375, 1e-6, 1.260486860237171, 1.4770577736564243, 1.1704186076560133},
	{0.125, 1e-6, 2.4190931768671951, 2.753260884878466, 2.2540846502197409},
}

func TestKnownValues(t *testing.T) {
	for _, r := range refs {
		got, err := ZCDPToApprox(r.rho, r.delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-r.cks) > 1e-10*r.cks {
			t.Fatalf("rho %v delta %v: %v, want %v", r.rho, r.delta, got, r.cks)
		}
		s, _ := ZCDPToApproxSimple(r.rho, r.delta)
		if math.Abs(s-r.simple) > 1e-12*r.simple {
			t.Fatalf("simple: %v, want %v", s, r.simple)
		}
		if got < r.gauss {
			t.Fatalf("rho %v delta %v: %v below the Gaussian's exact eps %v (invalid)", r.rho, r.delta, got, r.gauss)
		}
	}
}

func TestNeverLooserThanSimple(t *testing.T) {
	for _, rho := range []float64{1e-8, 1e-5, 1e-3, 0.01, 0.1, 0.5, 1, 3, 10, 100, 1e4} {
		for _, delta := range []float64{0.5, 0.1, 1e-3, 1e-6, 1e-9, 1e-15, 1e-30} {
			got, err := ZCDPToApprox(rho, delta)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := ZCDPToApproxSimple(rho, delta)
			if got > s || got < 0 || math.IsNaN(got) {
				t.Fatalf("rho %v delta %v: %v vs simple %v", rho, delta, got, s)
			}
			// It is a minimum: no grid point of eps(a) is below it.
			L := math.Log(1 / delta)
			for t0 := -20.0; t0 <= 20; t0 += 0.01 {
				if v := epsAt(rho, L, math.Exp(t0)); v < got-1e-9*(1+got) && v >= 0 {
					t.Fatalf("rho %v delta %v: eps(a=%v) = %v < %v", rho, delta, math.Exp(t0), v, got)
				}
			}
		}
	}
}

func TestMonotone(t *testing.T) {
	prev := 0.0
	for rho := 1e-6; rho < 50; rho *= 1.3 {
		v, _ := ZCDPToApprox(rho, 1e-6)
		if v < prev {
			t.Fatalf("not increasing at rho %v", rho)
		}
		prev = v
	}
}

func TestRelease(t *testing.T) {
	r := Release{Lists: 10, K: 30, EpsP: 0.1}
	s, err := Account(r, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if s.PureEps != 30 || math.Abs(s.Rho-10*30*0.01/8) > 1e-15 {
		t.Fatalf("%+v", s)
	}
	want, _ := ZCDPToApprox(s.Rho, 1e-6)
	if s.ApproxEps != want || !(s.ApproxEps < s.PureEps) {
		t.Fatalf("%+v, want approx %v", s, want)
	}
	// One pick at large eps: pure wins.
	s, _ = Account(Release{Lists: 1, K: 1, EpsP: 0.5}, 1e-6)
	if s.ApproxEps != 0.5 {
		t.Fatalf("%+v", s)
	}
	if _, err := Account(Release{Lists: 0, K: 1, EpsP: 1}, 1e-6); !errors.Is(err, ErrInvalid) {
		t.Fatal("lists 0 accepted")
	}
	if _, err := Account(Release{Lists: 1, K: 1, EpsP: 1}, 1); !errors.Is(err, ErrInvalid) {
		t.Fatal("delta 1 accepted")
	}
}

func TestMaxEpsPerPick(t *testing.T) {
	for _, c := range []struct {
		target, delta float64
		lists, k      int
	}{{1, 1e-6, 10, 30}, {3, 1e-6, 1, 30}, {0.1, 1e-9, 100, 10}, {10, 1e-5, 1, 1}, {50, 1e-6, 1000, 30}} {
		e, err := MaxEpsPerPick(c.target, c.delta, c.lists, c.k)
		if err != nil {
			t.Fatal(err)
		}
		r := Release{Lists: c.lists, K: c.k, EpsP: e}
		v, _ := r.ApproxEps(c.delta)
		if v > c.target {
			t.Fatalf("%+v: eps_p %v gives %v > target", c, e, v)
		}
		r.EpsP = e * (1 + 1e-9)
		if v2, _ := r.ApproxEps(c.delta); v2 <= c.target && v2 < c.target*(1-1e-9) {
			t.Fatalf("%+v: eps_p %v not maximal (%v)", c, e, v2)
		}
		if e < c.target/float64(c.lists*c.k)*(1-1e-15) {
			t.Fatalf("%+v: below pure composition", c)
		}
	}
	if _, err := MaxEpsPerPick(0, 1e-6, 1, 1); !errors.Is(err, ErrInvalid) {
		t.Fatal("target 0 accepted")
	}
}

func TestMaxRho(t *testing.T) {
	for _, r := range refs {
		// The inverse of the known value is the reference rho.
		got, err := MaxRho(r.cks, r.delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-r.rho) > 1e-8*r.rho {
			t.Fatalf("MaxRho(%v, %v) = %v, want %v", r.cks, r.delta, got, r.rho)
		}
		if v, _ := ZCDPToApprox(got, r.delta); v > r.cks {
			t.Fatalf("infeasible")
		}
		// Never below the classic closed form.
		L := math.Log(1 / r.delta)
		if s := math.Pow(math.Sqrt(L+r.cks)-math.Sqrt(L), 2); got < s {
			t.Fatalf("below classic %v", s)
		}
	}
	// eps = 0 still allows a tiny rho: (0, delta)-DP is total variation
	// <= delta, which a Gaussian with rho ~ 1e-12 meets at delta = 1e-6.
	if v, _ := MaxRho(0, 1e-6); v < 0 || v > 1e-11 {
		t.Fatalf("MaxRho(0) = %v", v)
	} else if e, _ := ZCDPToApprox(v, 1e-6); e != 0 {
		t.Fatalf("MaxRho(0) = %v converts to %v", v, e)
	}
}
