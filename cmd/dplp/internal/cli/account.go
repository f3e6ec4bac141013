package cli

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/privunit"
	"github.com/spf13/cobra"
)

// accountOptions holds the flag values of the account command.
type accountOptions struct {
	k, lists             int
	epsP, epsList, delta float64
	target               float64
	mechanism, unitName  string
	asJSON               bool

	hasTarget bool          // set by validate: --target-eps was given
	list      bool          // set by validate: --mechanism dplp-list or dplp-list-gauss
	gauss     bool          // set by validate: --mechanism dplp-list-gauss
	unit      privunit.Unit // set by validate: --unit
}

// accountMechanisms are the mechanisms account knows.
const (
	accountExponential = "exponential"
	accountDPLPList    = "dplp-list"
	accountGauss       = "dplp-list-gauss"
)

func newAccountCmd() *cobra.Command {
	o := &accountOptions{}
	cmd := &cobra.Command{
		Use:   "account --k K (--eps-p E | --target-eps T) [--lists N] [--delta D] [--unit party|pair] [--json]\n  dplp account --mechanism dplp-list (--eps E | --target-eps T) [--lists N] [--delta D] [--unit party|pair] [--json]",
		Short: "Privacy cost of N lists of K picks: pure, zCDP and (eps, delta) accountings",
		Long: `Accounts for N released lists of K picks each, every pick eps_p-DP (the
exponential mechanism; with the exact sampler use its proven eps per pick).

  pure_eps    N*K*eps_p                 basic composition of pure DP
  zcdp_rho    N*K*eps_p^2/8             each pick is eps_p-bounded-range, hence
                                        eps_p^2/8-zCDP (Cesar and Rogers 2021)
  approx_eps  the eps of (eps, delta)-DP: min(pure_eps, tight conversion of
              zcdp_rho at --delta) (Canonne, Kamath and Steinke 2020)

With --target-eps T it prints the largest eps_p per pick for which N lists of K
picks are (T, delta)-DP (eps_p; never below T/(N*K)), and the three figures at
that eps_p.

--mechanism dplp-list accounts for N lists of the list-level mechanism
(docs/privacy-model.md §16), each one Laplace release charged --eps E whatever
K: pure_eps N*E, zcdp_rho N*E^2/2 (a pure eps-DP mechanism is eps^2/2-zCDP),
approx_eps as above; --target-eps gives the largest eps per list (eps_list).

--mechanism dplp-list-gauss accounts for N lists of its Gaussian release
(docs/privacy-model.md §16.9), each charged zCDP rho = E^2/2 for --eps E: no
pure-DP bound (pure_eps is none; null in JSON), zcdp_rho N*E^2/2, approx_eps the
tight conversion; --target-eps gives the largest E per list.

--unit is the privacy unit of the guarantee: party (the default, Definition 1:
any subset of one party's protected pairs) or pair (one protected pair). The
per-pick mechanisms are calibrated to the party unit, so their figures hold for
a whole party under either unit. A dplp-list list costs eps under the unit it
was calibrated for; under the pair unit a party with m protected pairs gets at
most m x pure_eps and m^2 x zcdp_rho (group privacy).

--json prints one object with keys pure_eps, zcdp_rho, approx_eps and unit;
eps_p with --target-eps; for dplp-list also mechanism and eps_list (the given
eps per list, or the largest one with --target-eps); under the pair unit
unit_note (group privacy for dplp-list). See docs/ACCOUNTING.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(cmd.OutOrStdout())
		},
	}
	o.register(cmd)
	return cmd
}

func (o *accountOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&o.k, "k", 30, "picks per list (K)")
	f.IntVar(&o.lists, "lists", 1, "number of lists released to one user (N)")
	f.Float64Var(&o.epsP, "eps-p", 0, "eps per pick")
	f.Float64Var(&o.epsList, "eps", 0, "--mechanism dplp-list: eps per list (whatever K)")
	f.Float64Var(&o.delta, "delta", 1e-6, "delta of the (eps, delta) guarantee, in (0,1)")
	f.Float64Var(&o.target, "target-eps", 0, "find the largest eps_p per pick (dplp-list: eps per list) meeting this (eps, --delta) target")
	f.StringVar(&o.mechanism, "mechanism", accountExponential, "exponential (K picks of eps_p each) or dplp-list (one charge of --eps per list)")
	f.StringVar(&o.unitName, "unit", "party", "privacy unit: party (Definition 1) or pair (one protected pair)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
}

func (o *accountOptions) validate(cmd *cobra.Command) error {
	if o.k < 1 {
		return fmt.Errorf("--k must be >= 1, got %d", o.k)
	}
	if o.lists < 1 {
		return fmt.Errorf("--lists must be >= 1, got %d", o.lists)
	}
	if !(o.delta > 0 && o.delta < 1) {
		return fmt.Errorf("--delta must be in (0,1), got %v", o.delta)
	}
	var err error
	if o.unit, err = privunit.Parse(o.unitName); err != nil {
		return fmt.Errorf("--unit: want party or pair, got %q", o.unitName)
	}
	switch strings.ToLower(strings.TrimSpace(o.mechanism)) {
	case accountExponential:
	case accountDPLPList:
		o.list = true
	case accountGauss:
		o.list, o.gauss = true, true
	default:
		return fmt.Errorf("--mechanism: want exponential, dplp-list or dplp-list-gauss, got %q", o.mechanism)
	}
	epsFlag, other, otherMech := "eps-p", "eps", accountDPLPList+" or "+accountGauss
	if o.list {
		epsFlag, other, otherMech = "eps", "eps-p", accountExponential
	}
	if cmd.Flags().Changed(other) {
		return fmt.Errorf("--%s is for --mechanism %s; --mechanism %s takes --%s", other, otherMech, o.mechName(), epsFlag)
	}
	hasEps, hasTarget := cmd.Flags().Changed(epsFlag), cmd.Flags().Changed("target-eps")
	switch {
	case hasEps && hasTarget:
		return fmt.Errorf("give either --%s or --target-eps, not both", epsFlag)
	case !hasEps && !hasTarget && o.list:
		return fmt.Errorf("give --eps E (cost of a list) or --target-eps T (largest eps per list meeting T)")
	case !hasEps && !hasTarget:
		return fmt.Errorf("give --eps-p E (cost of a release) or --target-eps T (largest eps_p meeting T)")
	}
	o.hasTarget = hasTarget
	if hasTarget {
		return checkPos("target-eps", o.target)
	}
	if o.list {
		return checkEps("eps", o.epsList, o.lists)
	}
	return checkEps("eps-p", o.epsP, o.k)
}

// mechName is the canonical name of the accounted mechanism.
func (o *accountOptions) mechName() string {
	if o.gauss {
		return accountGauss
	}
	if o.list {
		return accountDPLPList
	}
	return accountExponential
}

// accountJSON is account's JSON object: the three accountings, the unit,
// and for dplp-list the mechanism and its eps per list; EpsP (per-pick
// targets) and UnitNote (pair unit) when they apply.
type accountJSON struct {
	EpsP *float64 `json:"eps_p,omitempty"`
	accountant.Summary
	// PureEps shadows Summary's: null for dplp-list-gauss (no pure-DP
	// bound; JSON has no infinity).
	PureEps   *float64 `json:"pure_eps"`
	Unit      string   `json:"unit"`
	Mechanism string   `json:"mechanism,omitempty"`
	EpsList   *float64 `json:"eps_list,omitempty"`
	UnitNote  string   `json:"unit_note,omitempty"`
}

func (o *accountOptions) run(out io.Writer) error {
	if o.hasTarget {
		return o.runTarget(out)
	}
	if o.list {
		s, err := listAccount(o.lists, o.epsList, o.delta, o.gauss)
		if err != nil {
			return err
		}
		if o.asJSON {
			return printJSON(out, o.json(s, nil, &o.epsList))
		}
		fmt.Fprintf(out, "%d list(s) of %s at eps %g per list (whatever K):\n", o.lists, o.mechName(), o.epsList)
		o.print(out, s)
		return nil
	}
	s, err := accountant.Account(accountant.Release{Lists: o.lists, K: o.k, EpsP: o.epsP}, o.delta)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(out, o.json(s, nil, nil))
	}
	fmt.Fprintf(out, "%d list(s) of %d picks at eps_p %g per pick:\n", o.lists, o.k, o.epsP)
	o.print(out, s)
	return nil
}

// runTarget prints the largest eps_p (dplp-list: eps per list) meeting
// --target-eps and its accounting.
func (o *accountOptions) runTarget(out io.Writer) error {
	if o.list {
		return o.runListTarget(out)
	}
	e, err := accountant.MaxEpsPerPick(o.target, o.delta, o.lists, o.k)
	if err != nil {
		return err
	}
	if err := accountant.CheckEps(e); err != nil {
		return fmt.Errorf("--target-eps %g for %d list(s) of %d picks needs eps_p = %g, outside the range every other command accepts: %w", o.target, o.lists, o.k, e, err)
	}
	s, err := accountant.Account(accountant.Release{Lists: o.lists, K: o.k, EpsP: e}, o.delta)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(out, o.json(s, &e, nil))
	}
	fmt.Fprintf(out, "largest eps_p per pick for %d list(s) of %d picks to be (%g, %g)-DP:\n", o.lists, o.k, o.target, o.delta)
	fmt.Fprintf(out, "eps_p       %.6g  (pure composition alone allows %.6g)\n", e, o.target/float64(o.lists*o.k))
	o.print(out, s)
	return nil
}

// runListTarget prints the largest eps per dplp-list list for which N lists
// are (T, delta)-DP under approx_eps: approx_eps <= T iff pure_eps = N e <= T
// or the conversion of N e^2/2 is <= T, i.e. N e^2/2 <= MaxRho(T, delta), so
// e = max(T/N, sqrt(2 MaxRho(T, delta)/N)).
func (o *accountOptions) runListTarget(out io.Writer) error {
	rho, err := accountant.MaxRho(o.target, o.delta)
	if err != nil {
		return err
	}
	n := float64(o.lists)
	e := math.Sqrt(2 * rho / n)
	if !o.gauss {
		e = max(o.target/n, e)
	}
	if err := accountant.CheckEps(e); err != nil {
		return fmt.Errorf("--target-eps %g for %d dplp-list list(s) needs eps = %g per list, outside the range every other command accepts: %w", o.target, o.lists, e, err)
	}
	s, err := listAccount(o.lists, e, o.delta, o.gauss)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(out, o.json(s, nil, &e))
	}
	fmt.Fprintf(out, "largest eps per list for %d list(s) of %s (whatever K) to be (%g, %g)-DP:\n", o.lists, o.mechName(), o.target, o.delta)
	if o.gauss {
		fmt.Fprintf(out, "eps_list    %.6g  (rho = eps^2/2 per list)\n", e)
	} else {
		fmt.Fprintf(out, "eps_list    %.6g  (pure composition alone allows %.6g)\n", e, o.target/n)
	}
	o.print(out, s)
	return nil
}

// listAccount is the accounting of n dplp-list lists at eps each: every
// list is one eps-DP release (accountant.PureList: eps pure, eps^2/2 zCDP),
// composed over n lists; approx_eps is the better of pure and the tight
// conversion of the summed rho. With gauss, each list is the Gaussian
// release at rho = eps^2/2 and no pure bound (PureEps +Inf).
func listAccount(n int, eps, delta float64, gauss bool) (accountant.Summary, error) {
	ch := accountant.PureList(eps)
	if gauss {
		ch.Eps = math.Inf(1)
	}
	s := accountant.Summary{PureEps: float64(n) * ch.Eps, Rho: float64(n) * ch.Rho}
	z, err := accountant.ZCDPToApprox(s.Rho, delta)
	if err != nil {
		return accountant.Summary{}, err
	}
	s.ApproxEps = min(s.PureEps, z)
	return s, nil
}

// json is the JSON object of summary s (eps_p for per-pick targets,
// eps_list for dplp-list).
func (o *accountOptions) json(s accountant.Summary, epsP, epsList *float64) accountJSON {
	j := accountJSON{EpsP: epsP, Summary: s, Unit: o.unit.String(), UnitNote: o.unitNote(s)}
	if !math.IsInf(s.PureEps, 1) {
		j.PureEps = &s.PureEps
	}
	if o.list {
		j.Mechanism, j.EpsList = o.mechName(), epsList
	}
	return j
}

// unitNote states what the figures mean for a whole party under the pair
// unit ("" under the party unit): group privacy for dplp-list (pure eps
// scales by m, zCDP rho by m^2: Bun and Steinke 2016), the party-unit
// calibration for the per-pick mechanisms.
func (o *accountOptions) unitNote(s accountant.Summary) string {
	switch {
	case o.unit != privunit.Pair:
		return ""
	case o.gauss:
		return fmt.Sprintf("a party with m protected pairs gets at most m^2 x %.6g zCDP rho", s.Rho)
	case o.list:
		return fmt.Sprintf("a party with m protected pairs gets at most m x %.6g pure eps and m^2 x %.6g zCDP rho", s.PureEps, s.Rho)
	}
	return "the per-pick mechanisms are calibrated to the party unit: these figures hold for a whole party, hence for one pair"
}

func (o *accountOptions) print(out io.Writer, s accountant.Summary) {
	switch {
	case o.gauss:
		fmt.Fprintf(out, "pure_eps    none  (the Gaussian release is not pure DP)\n")
		fmt.Fprintf(out, "zcdp_rho    %.6g  (zCDP, each list eps^2/2)\n", s.Rho)
	case o.list:
		fmt.Fprintf(out, "pure_eps    %.6g  (pure DP, basic composition: eps per list)\n", s.PureEps)
		fmt.Fprintf(out, "zcdp_rho    %.6g  (zCDP, each list eps^2/2)\n", s.Rho)
	default:
		fmt.Fprintf(out, "pure_eps    %.6g  (pure DP, basic composition)\n", s.PureEps)
		fmt.Fprintf(out, "zcdp_rho    %.6g  (zCDP, each pick eps_p^2/8)\n", s.Rho)
	}
	fmt.Fprintf(out, "approx_eps  %.6g  ((eps, %g)-DP: better of pure and the tight zCDP conversion)\n", s.ApproxEps, o.delta)
	desc := "Definition 1: any subset of one party's protected pairs"
	if o.unit == privunit.Pair {
		desc = "one protected pair; " + o.unitNote(s)
	}
	fmt.Fprintf(out, "unit        %s  (%s)\n", o.unit, desc)
}
