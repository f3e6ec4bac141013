package cli

import (
	"fmt"
	"io"

	"github.com/dplp/dplp/accountant"
	"github.com/spf13/cobra"
)

// accountOptions holds the flag values of the account command.
type accountOptions struct {
	k, lists    int
	epsP, delta float64
	target      float64
	asJSON      bool

	hasTarget bool // set by validate: --target-eps was given
}

func newAccountCmd() *cobra.Command {
	o := &accountOptions{}
	cmd := &cobra.Command{
		Use:   "account --k K (--eps-p E | --target-eps T) [--lists N] [--delta D] [--json]",
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
that eps_p. --json prints one object with keys pure_eps, zcdp_rho, approx_eps
(and eps_p with --target-eps). See docs/ACCOUNTING.md.`,
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
	f.Float64Var(&o.delta, "delta", 1e-6, "delta of the (eps, delta) guarantee, in (0,1)")
	f.Float64Var(&o.target, "target-eps", 0, "find the largest eps_p per pick meeting this (eps, --delta) target")
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
	hasEps, hasTarget := cmd.Flags().Changed("eps-p"), cmd.Flags().Changed("target-eps")
	switch {
	case hasEps && hasTarget:
		return fmt.Errorf("give either --eps-p or --target-eps, not both")
	case !hasEps && !hasTarget:
		return fmt.Errorf("give --eps-p E (cost of a release) or --target-eps T (largest eps_p meeting T)")
	}
	o.hasTarget = hasTarget
	if hasTarget {
		return checkPos("target-eps", o.target)
	}
	return checkEps("eps-p", o.epsP, o.k)
}

func (o *accountOptions) run(out io.Writer) error {
	if o.hasTarget {
		return o.runTarget(out)
	}
	s, err := accountant.Account(accountant.Release{Lists: o.lists, K: o.k, EpsP: o.epsP}, o.delta)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(out, s)
	}
	fmt.Fprintf(out, "%d list(s) of %d picks at eps_p %g per pick:\n", o.lists, o.k, o.epsP)
	printAccount(out, s, o.delta)
	return nil
}

// runTarget prints the largest eps_p meeting --target-eps and its accounting.
func (o *accountOptions) runTarget(out io.Writer) error {
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
		return printJSON(out, struct {
			EpsP float64 `json:"eps_p"`
			accountant.Summary
		}{e, s})
	}
	fmt.Fprintf(out, "largest eps_p per pick for %d list(s) of %d picks to be (%g, %g)-DP:\n", o.lists, o.k, o.target, o.delta)
	fmt.Fprintf(out, "eps_p       %.6g  (pure composition alone allows %.6g)\n", e, o.target/float64(o.lists*o.k))
	printAccount(out, s, o.delta)
	return nil
}

func printAccount(out io.Writer, s accountant.Summary, delta float64) {
	fmt.Fprintf(out, "pure_eps    %.6g  (pure DP, basic composition)\n", s.PureEps)
	fmt.Fprintf(out, "zcdp_rho    %.6g  (zCDP, each pick eps_p^2/8)\n", s.Rho)
	fmt.Fprintf(out, "approx_eps  %.6g  ((eps, %g)-DP: better of pure and the tight zCDP conversion)\n", s.ApproxEps, delta)
}
