package accountant

// The privacy map of one released list: what the ledger charges for it,
// from invariant data only (the number of random picks, or the list-level
// mechanism's eps). Every path that charges a list (release.Recommender,
// the Beam pipeline, the guarantee texts, the audits) takes its (eps, rho)
// from here, so the formulas are written once.

// Charge is one list's cost: pure eps and zCDP rho.
type Charge struct {
	Eps float64 // pure DP
	Rho float64 // zCDP
}

// PerPick is the charge of a list of picks random picks of the exponential
// mechanism at epsP each (Gumbel top-K or the exact sampler; the
// lexicographic DPLP-pub counts only its random picks): picks x epsP pure
// (basic composition) and picks x epsP^2/8 zCDP (each pick is
// epsP-bounded-range, BoundedRangeRho). 0 picks cost nothing.
func PerPick(epsP float64, picks int) Charge {
	if picks <= 0 {
		return Charge{}
	}
	return Charge{Eps: float64(picks) * epsP, Rho: float64(picks) * BoundedRangeRho(epsP)}
}

// PureList is the charge of a list released by one eps-DP mechanism (the
// Laplace mechanism on a whole evidence vector, dplp-list): eps pure and
// eps^2/2 zCDP (PureRho), whatever the list's length. eps <= 0 (a list that
// reads no private data) costs nothing.
func PureList(eps float64) Charge {
	if !(eps > 0) {
		return Charge{}
	}
	return Charge{Eps: eps, Rho: PureRho(eps)}
}
