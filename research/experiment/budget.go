package experiment

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dplp/dplp/accountant"
)

// Budget is a privacy budget for one released list of K picks, from which
// the per-pick eps_p is derived for each K (Config.Budgets, --budget):
//
//   - "pure:E": (E, 0)-DP per list by basic composition, eps_p = E/K;
//   - "approx:E,D": (E, D)-DP per list, eps_p = accountant.MaxEpsPerPick(E,
//     D, 1, K), the largest per-pick eps whose K picks compose to (E, D)-DP
//     under zCDP (each pick eps_p-bounded-range, hence eps_p^2/8-zCDP; tight
//     conversion to (eps, delta); never below E/K).
//
// The charge is the one of the exponential mechanism and DPLP (K picks at
// eps_p). DPLP-pub is charged only for its random picks, so its actual spend
// is at most the budget; public-only and non-private ignore it.
type Budget struct {
	Kind  string  // "pure" or "approx"
	Eps   float64 // per-list eps > 0
	Delta float64 // per-list delta in (0, 1) for approx; 0 for pure
}

// ParseBudget parses "pure:E" or "approx:E,D" (case and spaces ignored).
func ParseBudget(s string) (Budget, error) {
	t := strings.ToLower(strings.Join(strings.Fields(s), ""))
	kind, rest, ok := strings.Cut(t, ":")
	if !ok {
		return Budget{}, fmt.Errorf("budget %q: want pure:EPS or approx:EPS,DELTA", s)
	}
	num := func(what, x string) (float64, error) {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("budget %q: %s %q is not a finite number", s, what, x)
		}
		return v, nil
	}
	var b Budget
	switch kind {
	case "pure":
		if strings.Contains(rest, ",") {
			return Budget{}, fmt.Errorf("budget %q: pure takes one number (pure:EPS); use approx:EPS,DELTA for a delta", s)
		}
		e, err := num("eps", rest)
		if err != nil {
			return Budget{}, err
		}
		b = Budget{Kind: "pure", Eps: e}
	case "approx":
		es, ds, ok := strings.Cut(rest, ",")
		if !ok || strings.Contains(ds, ",") {
			return Budget{}, fmt.Errorf("budget %q: approx takes two numbers (approx:EPS,DELTA)", s)
		}
		e, err := num("eps", es)
		if err != nil {
			return Budget{}, err
		}
		d, err := num("delta", ds)
		if err != nil {
			return Budget{}, err
		}
		if !(d > 0 && d < 1) {
			return Budget{}, fmt.Errorf("budget %q: delta %v must be in (0, 1)", s, d)
		}
		b = Budget{Kind: "approx", Eps: e, Delta: d}
	default:
		return Budget{}, fmt.Errorf("budget %q: unknown kind %q (want pure or approx)", s, kind)
	}
	if !(b.Eps > 0) {
		return Budget{}, fmt.Errorf("budget %q: eps %v must be > 0", s, b.Eps)
	}
	return b, nil
}

// String is the canonical form: "pure:3", "approx:3,1e-06".
func (b Budget) String() string {
	if b.Kind == "approx" {
		return "approx:" + fmtF(b.Eps) + "," + fmtF(b.Delta)
	}
	return b.Kind + ":" + fmtF(b.Eps)
}

// EpsPerPick is the per-pick eps_p of a list of k picks under the budget.
func (b Budget) EpsPerPick(k int) (float64, error) {
	if k < 1 {
		return 0, fmt.Errorf("budget %s: k %d must be >= 1", b, k)
	}
	switch b.Kind {
	case "pure":
		return b.Eps / float64(k), nil
	case "approx":
		e, err := accountant.MaxEpsPerPick(b.Eps, b.Delta, 1, k)
		if err != nil {
			return 0, fmt.Errorf("budget %s: %w", b, err)
		}
		return e, nil
	}
	return 0, fmt.Errorf("budget %s: unknown kind", b)
}
