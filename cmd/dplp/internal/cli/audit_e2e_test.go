package cli

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/audit/endtoend"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// e2eSmall are flags that keep an end-to-end audit to a few seconds.
var e2eSmall = []string{"audit", "--end-to-end", "--graphs", "1", "--toggles", "2", "--k", "2", "--epochs", "1"}

func e2eJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, stderr, err := run(t, append(append(cloneArgs(e2eSmall), args...), "--json")...)
	if err != nil {
		t.Fatalf("%v: %v\n%s\n%s", args, err, out, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return m
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

// The JSON report has the new keys; the checks ran and passed; --sampler
// selects whose probabilities are computed (default: the deployed exact
// sampler); the default covers dplp and dplp-pub.
func TestAuditEndToEndJSON(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		sampler  string
		variants string
	}{
		{"default", []string{"--score", "cn"}, "exact", "dplp,dplp-pub"},
		{"float", []string{"--score", "aa", "--variant", "dplp-pub", "--sampler", "float"}, "float", "dplp-pub"},
		{"exact", []string{"--score", "pa", "--variant", "lin", "--sampler", "exact"}, "exact", "lin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := e2eJSON(t, tc.args...)
			for _, k := range []string{"representation_checks", "representation_violations", "reserve_checks", "reserve_violations", "neighbour_loads", "training_invariance", "sampler", "variants"} {
				if _, ok := m[k]; !ok {
					t.Fatalf("JSON lacks %q: %v", k, m)
				}
			}
			if m["representation_checks"].(float64) == 0 || m["representation_violations"].(float64) != 0 ||
				m["reserve_checks"].(float64) == 0 || m["reserve_violations"].(float64) != 0 || m["training_invariance"] != "checked" {
				t.Fatalf("%v", m)
			}
			if m["sampler"] != tc.sampler || m["variant"] != tc.variants {
				t.Fatalf("sampler %v, variants %v; want %s, %s", m["sampler"], m["variant"], tc.sampler, tc.variants)
			}
		})
	}
}

// The human summary names the new checks.
func TestAuditEndToEndSummary(t *testing.T) {
	out, stderr, err := run(t, append(cloneArgs(e2eSmall), "--score", "jc", "--variant", "dplp")...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	for _, want := range []string{"representation checks", "re-serve checks", "exact base-2 sampler", "snapshot.Read", "PASS"} {
		if !strings.Contains(out, want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
}

// saveModel trains a small model the deployment way and writes it.
func saveModel(t *testing.T, kind score.Kind, variant string, eps float64) string {
	t.Helper()
	var edges, prot []graph.Edge
	r := rand.New(rand.NewPCG(3, 4))
	for a := 0; a < 18; a++ {
		for b := a + 1; b < 18; b++ {
			if r.Float64() < 0.35 {
				edges = append(edges, graph.Edge{U: int32(a), V: int32(b)})
				if r.Float64() < 0.25 {
					prot = append(prot, graph.Edge{U: int32(a), V: int32(b)})
				}
			}
		}
	}
	g, _, err := graph.FromEdges(18, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(18, prot)
	if err != nil {
		t.Fatal(err)
	}
	m, err := endtoend.DeployTrain(kind, variant, eps, 2, 5)(g, p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := model.Save(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// --model FILE audits that model (score, variant, eps_p), reports training
// invariance as not run, and is refused when it cannot be audited.
func TestAuditEndToEndModel(t *testing.T) {
	mp := saveModel(t, score.RA, "dplp-pub", 0.3)
	m := e2eJSON(t, "--model", mp)
	if m["variant"] != "dplp-pub" || m["eps"].(float64) != 0.3 || m["model"] == "" || m["trainings"].(float64) != 0 ||
		m["training_invariance"] == "checked" || m["lex_cases"].(float64) == 0 || m["representation_checks"].(float64) == 0 {
		t.Fatalf("--model not audited: %v", m)
	}
	out, _, err := run(t, append(cloneArgs(e2eSmall), "--model", mp)...)
	if err != nil || !strings.Contains(out, "training invariance: not run") || !strings.Contains(out, mp) {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	// Refusals: each must fail with a message naming the problem.
	emb, err := model.Load(mp)
	if err != nil {
		t.Fatal(err)
	}
	emb.Score = "deepwalk"
	embPath := filepath.Join(t.TempDir(), "emb.json")
	if err := model.Save(embPath, emb); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", mp, "--variant", "dplp"}, "either --variant or --model"},
		{[]string{"--model", mp, "--eps", "0.5"}, "eps_p 0.3"},
		{[]string{"--model", mp, "--score", "cn"}, "--score cn does not select it"},
		{[]string{"--model", mp, "--calibration", "reference"}, "reference"},
		{[]string{"--model", embPath}, "not a triad score"},
		{[]string{"--model", filepath.Join(t.TempDir(), "missing.json")}, "missing.json"},
		{[]string{"--sampler", "gumbel"}, "--sampler"},
		{[]string{"--k", "4"}, "--k"},
		{[]string{"--toggles", "-1"}, "--toggles"},
	} {
		_, _, err := run(t, append(cloneArgs(e2eSmall), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
