package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/research/experiment"
	"github.com/spf13/pflag"
)

// parseExpFlags binds the experiment flags on a fresh flag set, parses args
// and builds the configuration.
func parseExpFlags(t *testing.T, args ...string) (*expFlags, experiment.Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	f := addExpFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f, experiment.Config{}, err
	}
	cfg, err := f.config()
	return f, cfg, err
}

// expGraph writes a small edge list named name into dir.
func expGraph(t *testing.T, dir, name string) string {
	t.Helper()
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "n%d n%d\nn%d n%d\n", i, (i+1)%40, i, (i+7)%40)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExperimentFlagsOverConfig: a preset or configuration file first, then
// every flag given explicitly on top of it; the predictor flags are the
// commands' own.
func TestExperimentFlagsOverConfig(t *testing.T) {
	dir := t.TempDir()
	expGraph(t, dir, "g.txt")
	// The table1 preset's graphs are missing from dir.
	_, _, err := parseExpFlags(t, "--preset", "table1", "--data-dir", dir, "--eps", "0.1,0.3", "--seeds", "1", "--method", "nonprivate", "--method", "dplp")
	if err == nil || !strings.Contains(err.Error(), "facebook.txt") {
		t.Fatalf("missing preset graphs not reported: %v", err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"graphs": ["g.txt"], "methods": ["exponential"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c, err := parseExpFlags(t, "--config", ok, "--k", "5")
	if err != nil {
		t.Fatal(err)
	}
	if c.K[0] != 5 || c.Methods[0] != "exponential" || c.Eps[0] != 0.1 {
		t.Fatalf("flags over config: %+v", c)
	}
	_, c, err = parseExpFlags(t, "--config", ok, "--score", "gcn,cn", "--dim", "16", "--emb-epochs", "5", "--feature", "hadamard")
	if err != nil {
		t.Fatal(err)
	}
	if want := (experiment.PredictorOptions{Feature: "hadamard", Dim: 16, Epochs: 5}); c.Predictor != want || !slices.Equal(c.Scores, []string{"gcn", "cn"}) {
		t.Fatalf("predictor flags: %+v %v", c.Predictor, c.Scores)
	}
	if _, _, err := parseExpFlags(t, "--config", ok, "--preset", "table1"); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("--preset with --config: %v", err)
	}
}

// TestExperimentFloatsFlag: the list flags print as "floats" with shortest
// defaults (not pflag's "float64Slice" and "[0.100000]"), replace the
// default on first use and append afterwards; the method help names the
// variant aliases.
func TestExperimentFloatsFlag(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	f := addExpFlags(fs)
	usage := fs.FlagUsages()
	for _, bad := range []string{"float64Slice", "NaN", "0.100000"} {
		if strings.Contains(usage, bad) {
			t.Errorf("help contains %q:\n%s", bad, usage)
		}
	}
	for _, want := range []string{"--eps floats", "(default 0.1)", "(default 0.3)", "dplp-lin (or lin)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("help lacks %q:\n%s", want, usage)
		}
	}
	if err := fs.Parse([]string{"--eps", "0.5, 1", "--eps", "2", "--sigma", "0.1"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.cfg.Eps, []float64{0.5, 1, 2}) || !slices.Equal(f.cfg.Sigma, []float64{0.1}) {
		t.Fatalf("eps %v sigma %v", f.cfg.Eps, f.cfg.Sigma)
	}
	if err := fs.Parse([]string{"--eps", "x"}); err == nil {
		t.Fatal("--eps x accepted")
	}
	if _, _, err := parseExpFlags(t, "--graph", "g.txt", "--eps", "nan"); err == nil || !strings.Contains(err.Error(), "eps NaN") {
		t.Fatalf("--eps nan: %v", err)
	}
}

// TestExperimentUnitFlag: --unit reaches the configuration; the default is
// party.
func TestExperimentUnitFlag(t *testing.T) {
	g := expGraph(t, t.TempDir(), "g.txt")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--graph", g}, []string{"party"}},
		{[]string{"--graph", g, "--unit", "pair,party", "--method", "public-only,dplp-list"}, []string{"pair", "party"}},
	} {
		_, cfg, err := parseExpFlags(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Units, tc.want) {
			t.Errorf("%v: units %v, want %v", tc.args, cfg.Units, tc.want)
		}
	}
}

// TestExperimentBudgetFlag: --budget is comma-separated and repeatable
// (approx:EPS,DELTA keeps its comma), each budget checked when set, and
// replaces the eps axis; --eps on the command line replaces a file's
// budgets.
func TestExperimentBudgetFlag(t *testing.T) {
	graphArg := "testdata-none.txt"
	parse := func(args ...string) (experiment.Config, error) {
		_, cfg, err := parseExpFlags(t, append([]string{"--graph", graphArg}, args...)...)
		return cfg, err
	}
	cfg, err := parse("--budget", "pure:1,pure:3,approx:1,1e-6", "--budget", "approx:3,1e-6")
	if err == nil || !strings.Contains(err.Error(), "testdata-none.txt") {
		t.Fatalf("want only the missing-graph error, got %v", err)
	}
	if strings.Join(cfg.Budgets, " ") != "pure:1 pure:3 approx:1,1e-6 approx:3,1e-6" || len(cfg.Eps) != 0 {
		t.Fatalf("budgets %q eps %v", cfg.Budgets, cfg.Eps)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--budget", "1e-6"}, "want pure:EPS"},
		{[]string{"--budget", "gauss:1"}, "unknown kind"},
		{[]string{"--budget", "approx:1,2"}, "must be in (0, 1)"},
		{[]string{"--budget", "pure:1", "--eps", "0.1"}, "not both"},
		{[]string{"--budget", "pure:1,PURE:1"}, "same budget"},
		{[]string{"--budget", "pure:1e-9"}, "budget pure:1e-09 at k 30"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%v: error %v, want one containing %q", c.args, err, c.msg)
		}
	}
	dir := t.TempDir()
	graphArg = expGraph(t, dir, "alpha.txt")
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte(`{"graphs": ["alpha.txt"], "budgets": ["pure:3"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err = parse("--config", path, "--eps", "0.2"); err != nil || len(cfg.Budgets) != 0 || cfg.Eps[0] != 0.2 {
		t.Fatalf("--eps over a file's budgets: %+v %v", cfg, err)
	}
}
