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
func Execute() int { return execute(os.Args[1:], os.Stdout, os.Stderr) }

// execute runs args with the given streams. Standard output goes through a
// writer that remembers its first error, so a command whose output could not
// be written (a full disk, "> /dev/full", a closed pipe) never exits 0, even
// if the command itself ignored the error.
func execute(args []string, stdout, stderr io.Writer) int {
	out := &errWriter{w: stdout}
	root := NewRoot(out, stderr)
	root.SetArgs(args)
	code := 0
	if err := root.Execute(); err != nil {
		if ec, ok := err.(exitCode); ok {
			code = int(ec)
		} else {
			fmt.Fprintln(stderr, "dplp:", err)
			code = 2
		}
	}
	if out.err != nil {
		fmt.Fprintln(stderr, "dplp: writing standard output failed:", out.err)
		if code == 0 {
			code = 2
		}
	}
	return code
}

// errWriter passes writes through and remembers the first error; after it,
// every write fails with that error (output after a gap would be corrupt).
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		e.err = err
	}
	return n, err
}

// checked is the RunE of a command built around an options struct: it
// validates the flags, then makes the command's run (one library call).
func checked(validate func() error, run func(*cobra.Command) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := validate(); err != nil {
			return err
		}
		return run(cmd)
	}
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
	rec, srv := newRecommendCmd(), newServeCmd()
	for _, c := range []*cobra.Command{rec, srv} {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[deploymentAnnotation] = "true"
	}
	root.AddCommand(newStatsCmd(), newGenCmd(), newScoreCmd(), newBenchCmd(), newAuditCmd(), newTrainCmd(), rec, newDemoCmd(), newEvalLPCmd(), newExperimentCmd(), newAttackCmd(), newConvertCmd(), srv, newLedgerCmd(), newAccountCmd(), newVersionCmd())
	return root
}
