package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestBenchServeRun runs `dplp bench serve` with the arguments in
// DPLP_BENCH_SERVE_ARGS (space-separated) and prints its report; skipped
// when unset. Example:
//
//	DPLP_BENCH_SERVE_ARGS="--graph /work/shared/datasets/facebook.txt --k 30" go test -run TestBenchServeRun -v ./internal/cli/
func TestBenchServeRun(t *testing.T) {
	args := os.Getenv("DPLP_BENCH_SERVE_ARGS")
	if args == "" {
		t.Skip("set DPLP_BENCH_SERVE_ARGS to run the service benchmark")
	}
	var out, errb bytes.Buffer
	cmd := newBenchServeCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(strings.Fields(args))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	t.Logf("\n%s", out.String())
}
