// Package cli holds the cobra commands of the dplp tool; cmd/dplp only calls
// Execute. Commands parse and validate flags, then call the library packages.
package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Execute runs the command line and returns the process exit code.
func Execute() int {
	root := NewRoot(os.Stdout, os.Stderr)
	if err := root.Execute(); err != nil {
		if ec, ok := err.(exitCode); ok {
			return int(ec)
		}
		fmt.Fprintln(os.Stderr, "dplp:", err)
		return 2
	}
	return 0
}

// exitCode lets a command end with a chosen status after printing its output.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// NewRoot builds the command tree writing to the given streams (tests use buffers).
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "dplp",
		Short: "Differentially private link prediction with protected connections",
		Long: `dplp ranks link-prediction candidates while keeping users' protected
connections private (protected-pair differential privacy). It reads edge lists,
scores candidate pairs (CN, AA, RA, JC, PA, six embedding methods, or your own
scores), trains DPLP's monotone transforms on public data, releases private
top-K lists with an accounted budget, audits the guarantee exactly, and runs
the paper's experiments. Start with: dplp demo`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newStatsCmd(), newGenCmd(), newScoreCmd(), newBenchCmd(), newAuditCmd(), newTrainCmd(), newRecommendCmd(), newDemoCmd(), newEvalLPCmd(), newExperimentCmd())
	return root
}
